"""PyTorch-GAN's implementations/esrgan/esrgan.py loop (commit 04c9ab1) on random data, as
the script writes it: module-level argparse and loop, no main guard; a dataset of dicts
({"lr": low resolution, "hr": high resolution}); G(imgs_lr) alone, D(img) a PatchGAN map
of logits with BatchNorm; a feature network in eval mode (its parameters requiring grad,
no optimizer holding them); G's pixel L1 alone for --warmup_batches batches, then G on
the content loss (L1 of the features on the fakes and on the real batch, detached) plus
lambda_adv times the relativistic average loss, both terms, each batch's mean taken per
location (mean(0, keepdim=True)), with D's real scores forwarded first and detached, plus
lambda_pixel times the pixel L1; then D on imgs_hr and gen_hr.detach(), (real + fake) / 2.
Small convolutions stand for its RRDB G and its VGG19 features."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--epoch", type=int, default=0, help="epoch to start training from")
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=4, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--b1", type=float, default=0.9, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
parser.add_argument("--hr_height", type=int, default=16, help="high res. image height")
parser.add_argument("--hr_width", type=int, default=16, help="high res. image width")
parser.add_argument("--channels", type=int, default=1, help="number of image channels")
parser.add_argument("--sample_interval", type=int, default=100, help="interval between samples")
parser.add_argument("--warmup_batches", type=int, default=500, help="batches of pixel loss only")
parser.add_argument("--lambda_adv", type=float, default=5e-3, help="adversarial loss weight")
parser.add_argument("--lambda_pixel", type=float, default=1e-2, help="pixel-wise loss weight")
opt = parser.parse_args()
print(opt)

device = torch.device("cpu")
hr_shape = (opt.hr_height, opt.hr_width)


class GeneratorRRDB(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 8, 3, 1, 1)
        self.upsampling = nn.Sequential(
            nn.Conv2d(8, 32, 3, 1, 1), nn.LeakyReLU(), nn.PixelShuffle(upscale_factor=4)
        )
        self.conv3 = nn.Conv2d(2, channels, 3, 1, 1)

    def forward(self, x):
        return self.conv3(self.upsampling(self.conv1(x)))


class Discriminator(nn.Module):
    def __init__(self, input_shape):
        super().__init__()
        in_channels, in_height, in_width = input_shape
        self.output_shape = (1, in_height // 2, in_width // 2)
        self.model = nn.Sequential(
            nn.Conv2d(in_channels, 4, 3, 1, 1),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(4, 4, 3, 2, 1),
            nn.BatchNorm2d(4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(4, 1, 3, 1, 1),
        )

    def forward(self, img):
        return self.model(img)


class FeatureExtractor(nn.Module):
    def __init__(self):
        super().__init__()
        self.vgg19_54 = nn.Sequential(nn.Conv2d(opt.channels, 4, 3, 1, 1), nn.ReLU())

    def forward(self, img):
        return self.vgg19_54(img)


class ImageDataset(Dataset):
    def __init__(self, count):
        self.hr = torch.rand(count, opt.channels, *hr_shape) * 2 - 1
        self.lr = torch.nn.functional.avg_pool2d(self.hr, 4)

    def __getitem__(self, index):
        return {"lr": self.lr[index], "hr": self.hr[index]}

    def __len__(self):
        return len(self.hr)


generator = GeneratorRRDB(opt.channels).to(device)
discriminator = Discriminator(input_shape=(opt.channels, *hr_shape)).to(device)
feature_extractor = FeatureExtractor().to(device)
feature_extractor.eval()
criterion_GAN = torch.nn.BCEWithLogitsLoss().to(device)
criterion_content = torch.nn.L1Loss().to(device)
criterion_pixel = torch.nn.L1Loss().to(device)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
Tensor = torch.Tensor
dataloader = DataLoader(ImageDataset(opt.batch_size * 10), batch_size=opt.batch_size, shuffle=True)

for epoch in range(opt.epoch, opt.n_epochs):
    for i, imgs in enumerate(dataloader):
        batches_done = epoch * len(dataloader) + i
        imgs_lr = imgs["lr"].type(Tensor)
        imgs_hr = imgs["hr"].type(Tensor)
        valid = Tensor(np.ones((imgs_lr.size(0), *discriminator.output_shape)))
        fake = Tensor(np.zeros((imgs_lr.size(0), *discriminator.output_shape)))

        #  Train Generators
        optimizer_G.zero_grad()
        gen_hr = generator(imgs_lr)
        loss_pixel = criterion_pixel(gen_hr, imgs_hr)
        if batches_done < opt.warmup_batches:
            loss_pixel.backward()
            optimizer_G.step()
            print("[Epoch %d/%d] [Batch %d/%d] [G pixel: %f]"  # noqa: UP031
                  % (epoch, opt.n_epochs, i, len(dataloader), loss_pixel.item()))  # fmt: skip
            continue
        pred_real = discriminator(imgs_hr).detach()
        pred_fake = discriminator(gen_hr)
        loss_GAN = (
            criterion_GAN(pred_fake - pred_real.mean(0, keepdim=True), valid)
            + criterion_GAN(pred_real - pred_fake.mean(0, keepdim=True), fake)
        ) / 2
        gen_features = feature_extractor(gen_hr)
        real_features = feature_extractor(imgs_hr).detach()
        loss_content = criterion_content(gen_features, real_features)
        loss_G = loss_content + opt.lambda_adv * loss_GAN + opt.lambda_pixel * loss_pixel
        loss_G.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        pred_real = discriminator(imgs_hr)
        pred_fake = discriminator(gen_hr.detach())
        loss_real = criterion_GAN(pred_real - pred_fake.mean(0, keepdim=True), valid)
        loss_fake = criterion_GAN(pred_fake - pred_real.mean(0, keepdim=True), fake)
        loss_D = (loss_real + loss_fake) / 2
        loss_D.backward()
        optimizer_D.step()

        losses = (loss_D.item(), loss_G.item(), loss_content.item(), loss_GAN.item())
        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f, content: %f, adv: %f, "  # noqa: UP031
            "pixel: %f]" % (epoch, opt.n_epochs, i, len(dataloader), *losses, loss_pixel.item())
        )
