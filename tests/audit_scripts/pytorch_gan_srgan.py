"""PyTorch-GAN's implementations/srgan/srgan.py loop (commit 1e35104) on random data, as
the script writes it: module-level argparse and loop, no main guard; a dataset of dicts
({"lr": low resolution, "hr": high resolution}), each batch copied into tensors made
once (input_lr.copy_(imgs['lr'])); G(imgs_lr) alone, D(img) a PatchGAN map with
BatchNorm; G first on the content loss (L1 of a feature network's outputs on the fakes
and on the real batch, the real ones taken from .data) plus 1e-3 MSE of D's map to ones,
then D on imgs_hr and gen_hr.detach(), (real + fake) / 2. Small convolutions stand for
its ResNet G and its VGG19 features (whose parameters require grad and no optimizer
holds, as the script's)."""

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
parser.add_argument("--b1", type=float, default=0.5, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
parser.add_argument("--hr_height", type=int, default=16, help="size of high res. image height")
parser.add_argument("--hr_width", type=int, default=16, help="size of high res. image width")
parser.add_argument("--channels", type=int, default=1, help="number of image channels")
parser.add_argument("--sample_interval", type=int, default=100, help="interval between samples")
opt = parser.parse_args()
print(opt)


def weights_init_normal(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
        torch.nn.init.constant_(m.bias.data, 0.0)


class GeneratorResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(opt.channels, 8, 3, 1, 1), nn.PReLU())
        self.upsampling = nn.Sequential(
            nn.Conv2d(8, 32, 3, 1, 1),
            nn.BatchNorm2d(32),
            nn.PixelShuffle(upscale_factor=4),
            nn.PReLU(),
        )
        self.conv3 = nn.Sequential(nn.Conv2d(2, opt.channels, 3, 1, 1), nn.Tanh())

    def forward(self, x):
        return self.conv3(self.upsampling(self.conv1(x)))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(opt.channels, 4, 3, 1, 1),
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
        self.feature_extractor = nn.Sequential(nn.Conv2d(opt.channels, 4, 3, 1, 1), nn.ReLU())

    def forward(self, img):
        return self.feature_extractor(img)


class ImageDataset(Dataset):
    def __init__(self, count):
        self.hr = torch.rand(count, opt.channels, opt.hr_height, opt.hr_width) * 2 - 1
        self.lr = torch.nn.functional.avg_pool2d(self.hr, 4)

    def __getitem__(self, index):
        return {"lr": self.lr[index], "hr": self.hr[index]}

    def __len__(self):
        return len(self.hr)


patch_h, patch_w = int(opt.hr_height / 2), int(opt.hr_width / 2)
patch = (opt.batch_size, 1, patch_h, patch_w)
generator = GeneratorResNet()
discriminator = Discriminator()
feature_extractor = FeatureExtractor()
criterion_GAN = torch.nn.MSELoss()
criterion_content = torch.nn.L1Loss()
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
Tensor = torch.Tensor
input_lr = Tensor(opt.batch_size, opt.channels, opt.hr_height // 4, opt.hr_width // 4)
input_hr = Tensor(opt.batch_size, opt.channels, opt.hr_height, opt.hr_width)
valid = Tensor(np.ones(patch))
fake = Tensor(np.zeros(patch))
dataloader = DataLoader(ImageDataset(opt.batch_size * 10), batch_size=opt.batch_size, shuffle=True)

for epoch in range(opt.epoch, opt.n_epochs):
    for i, imgs in enumerate(dataloader):
        imgs_lr = input_lr.copy_(imgs["lr"])
        imgs_hr = input_hr.copy_(imgs["hr"])

        #  Train Generators
        optimizer_G.zero_grad()
        gen_hr = generator(imgs_lr)
        gen_validity = discriminator(gen_hr)
        loss_GAN = criterion_GAN(gen_validity, valid)
        gen_features = feature_extractor(gen_hr)
        real_features = feature_extractor(imgs_hr).data
        loss_content = criterion_content(gen_features, real_features)
        loss_G = loss_content + 1e-3 * loss_GAN
        loss_G.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        loss_real = criterion_GAN(discriminator(imgs_hr), valid)
        loss_fake = criterion_GAN(discriminator(gen_hr.detach()), fake)
        loss_D = (loss_real + loss_fake) / 2
        loss_D.backward()
        optimizer_D.step()

        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f]"  # noqa: UP031
            % (epoch, opt.n_epochs, i, len(dataloader), loss_D.item(), loss_G.item())
        )
        batches_done = epoch * len(dataloader) + i
        if batches_done % opt.sample_interval == 0:
            torch.save(torch.cat((gen_hr.data, imgs_hr.data), -2), "%d.pt" % batches_done)  # noqa: UP031
