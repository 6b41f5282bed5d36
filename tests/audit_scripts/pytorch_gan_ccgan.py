"""PyTorch-GAN's implementations/ccgan/ccgan.py loop (commit ce0e5b5) on random data, as
the script writes it: module-level argparse and loop, no main guard; a dict dataset of
images and their quarter-size copies ({"x": ..., "x_lr": ...}); the script's own
apply_random_mask, which masks a random square of each image (numpy's draw) to -1; its
models.py's U-Net G(masked_imgs, imgs_lr) (BatchNorm(eps 0.8), Dropout, the low-res
image joined after the second downsampling) and PatchGAN D (InstanceNorm) with its
output_shape; MSELoss against maps of ones and zeros; G first on the adversarial loss
alone, then D on the real images and gen_imgs.detach(), 0.5 * (real + fake); its first
ten samples kept and a grid of them every sample_interval batches. Small sizes (16-pixel
images, 4-pixel masks, few channels) and no workers, as the audit runs one process."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=8, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--b1", type=float, default=0.5, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
parser.add_argument("--img_size", type=int, default=16, help="size of each image dimension")
parser.add_argument("--mask_size", type=int, default=4, help="size of random mask")
parser.add_argument("--channels", type=int, default=1, help="number of image channels")
parser.add_argument("--sample_interval", type=int, default=500, help="interval between samples")
opt = parser.parse_args()
print(opt)

input_shape = (opt.channels, opt.img_size, opt.img_size)


class ImageDataset(Dataset):
    def __init__(self, images):
        self.images = images

    def __getitem__(self, index):
        img = self.images[index % len(self.images)]
        img_lr = nn.functional.avg_pool2d(img, 4)
        return {"x": img, "x_lr": img_lr}

    def __len__(self):
        return len(self.images)


class UNetDown(nn.Module):
    def __init__(self, in_size, out_size, normalize=True, dropout=0.0):
        super().__init__()
        model = [nn.Conv2d(in_size, out_size, 4, stride=2, padding=1, bias=False)]
        if normalize:
            model.append(nn.BatchNorm2d(out_size, 0.8))
        model.append(nn.LeakyReLU(0.2))
        if dropout:
            model.append(nn.Dropout(dropout))
        self.model = nn.Sequential(*model)

    def forward(self, x):
        return self.model(x)


class UNetUp(nn.Module):
    def __init__(self, in_size, out_size, dropout=0.0):
        super().__init__()
        model = [
            nn.ConvTranspose2d(in_size, out_size, 4, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(out_size, 0.8),
            nn.ReLU(inplace=True),
        ]
        if dropout:
            model.append(nn.Dropout(dropout))
        self.model = nn.Sequential(*model)

    def forward(self, x, skip_input):
        x = self.model(x)
        return torch.cat((x, skip_input), 1)


class Generator(nn.Module):
    def __init__(self, input_shape):
        super().__init__()
        channels, _, _ = input_shape
        self.down1 = UNetDown(channels, 8, normalize=False)
        self.down2 = UNetDown(8, 8)
        self.down3 = UNetDown(8 + channels, 16, dropout=0.5)
        self.up1 = UNetUp(16, 8, dropout=0.5)
        self.up2 = UNetUp(8 + 8 + channels, 8)
        final = [nn.Upsample(scale_factor=2), nn.Conv2d(16, channels, 3, 1, 1), nn.Tanh()]
        self.final = nn.Sequential(*final)

    def forward(self, x, x_lr):
        # U-Net generator with skip connections from encoder to decoder
        d1 = self.down1(x)
        d2 = self.down2(d1)
        d2 = torch.cat((d2, x_lr), 1)
        d3 = self.down3(d2)
        u1 = self.up1(d3, d2)
        u2 = self.up2(u1, d1)
        return self.final(u2)


class Discriminator(nn.Module):
    def __init__(self, input_shape):
        super().__init__()
        channels, height, width = input_shape
        # Calculate output of image discriminator (PatchGAN)
        patch_h, patch_w = int(height / 2**3), int(width / 2**3)
        self.output_shape = (1, patch_h, patch_w)

        def discriminator_block(in_filters, out_filters, stride, normalize):
            """Returns layers of each discriminator block"""
            layers = [nn.Conv2d(in_filters, out_filters, 3, stride, 1)]
            if normalize:
                layers.append(nn.InstanceNorm2d(out_filters))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        layers = []
        in_filters = channels
        blocks = [(8, 2, False), (8, 2, True), (16, 2, True), (16, 1, True)]
        for out_filters, stride, normalize in blocks:
            layers.extend(discriminator_block(in_filters, out_filters, stride, normalize))
            in_filters = out_filters
        layers.append(nn.Conv2d(out_filters, 1, 3, 1, 1))
        self.model = nn.Sequential(*layers)

    def forward(self, img):
        return self.model(img)


def weights_init_normal(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm2d") != -1:
        torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
        torch.nn.init.constant_(m.bias.data, 0.0)


# Loss function
adversarial_loss = torch.nn.MSELoss()

# Initialize generator and discriminator
generator = Generator(input_shape)
discriminator = Discriminator(input_shape)

# Initialize weights
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)

images = torch.rand(opt.batch_size * 10, *input_shape) * 2 - 1
dataloader = DataLoader(
    ImageDataset(images),
    batch_size=opt.batch_size,
    shuffle=True,
    num_workers=0,
)

# Optimizers
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))

Tensor = torch.FloatTensor


def apply_random_mask(imgs):
    idx = np.random.randint(0, opt.img_size - opt.mask_size, (imgs.shape[0], 2))

    masked_imgs = imgs.clone()
    for i, (y1, x1) in enumerate(idx):
        y2, x2 = y1 + opt.mask_size, x1 + opt.mask_size
        masked_imgs[i, :, y1:y2, x1:x2] = -1

    return masked_imgs


def save_sample(saved_samples):
    # Generate inpainted image
    gen_imgs = generator(saved_samples["masked"], saved_samples["lowres"])
    sample = torch.cat(
        (saved_samples["masked"].data, gen_imgs.data, saved_samples["imgs"].data), -2
    )
    torch.save(sample, "images_%d.pt" % batches_done)  # noqa: UP031 (as the script writes it)


saved_samples = {}
for epoch in range(opt.n_epochs):
    for i, batch in enumerate(dataloader):
        imgs = batch["x"]
        imgs_lr = batch["x_lr"]

        masked_imgs = apply_random_mask(imgs)

        # Adversarial ground truths
        valid = Tensor(imgs.shape[0], *discriminator.output_shape).fill_(1.0)
        fake = Tensor(imgs.shape[0], *discriminator.output_shape).fill_(0.0)

        real_imgs = imgs
        imgs_lr = imgs_lr
        masked_imgs = masked_imgs

        #  Train Generator
        optimizer_G.zero_grad()
        gen_imgs = generator(masked_imgs, imgs_lr)
        g_loss = adversarial_loss(discriminator(gen_imgs), valid)
        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        real_loss = adversarial_loss(discriminator(real_imgs), valid)
        fake_loss = adversarial_loss(discriminator(gen_imgs.detach()), fake)
        d_loss = 0.5 * (real_loss + fake_loss)
        d_loss.backward()
        optimizer_D.step()

        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f]"  # noqa: UP031
            % (epoch, opt.n_epochs, i, len(dataloader), d_loss.item(), g_loss.item())
        )

        # Save first ten samples
        if not saved_samples:
            saved_samples["imgs"] = real_imgs[:1].clone()
            saved_samples["masked"] = masked_imgs[:1].clone()
            saved_samples["lowres"] = imgs_lr[:1].clone()
        elif saved_samples["imgs"].size(0) < 10:
            saved_samples["imgs"] = torch.cat((saved_samples["imgs"], real_imgs[:1]), 0)
            saved_samples["masked"] = torch.cat((saved_samples["masked"], masked_imgs[:1]), 0)
            saved_samples["lowres"] = torch.cat((saved_samples["lowres"], imgs_lr[:1]), 0)

        batches_done = epoch * len(dataloader) + i
        if batches_done % opt.sample_interval == 0:
            save_sample(saved_samples)
