"""PyTorch-GAN's implementations/context_encoder/context_encoder.py loop (commit 23d54a3)
on random data, as the script writes it: module-level argparse and loop, no main guard;
its datasets.py's ImageDataset in the script, masking a random square of each image with
numpy's generator in __getitem__ and returning (img, masked_img, masked_part); its
models.py's G (downsampling convolutions with BatchNorm(eps 0.8), a 1x1 bottleneck,
transposed convolutions, Tanh) inpainting the masked part from the masked image, and its
PatchGAN D (InstanceNorm) judging parts; MSELoss against patch maps of ones and zeros and
L1Loss; G first on 0.001 * adversarial + 0.999 * pixelwise, then D on the real parts and
gen_parts.detach(), 0.5 * (real + fake); a sample from a validation loader (center masks)
every sample_interval batches. Small sizes (32-pixel images, 16-pixel masks, few
channels) and num_workers=0, as the audit runs one process; no image files."""

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
parser.add_argument("--img_size", type=int, default=32, help="size of each image dimension")
parser.add_argument("--mask_size", type=int, default=16, help="size of random mask")
parser.add_argument("--channels", type=int, default=1, help="number of image channels")
parser.add_argument("--sample_interval", type=int, default=500, help="interval between samples")
opt = parser.parse_args()
print(opt)

# Calculate output of image discriminator (PatchGAN)
patch_h, patch_w = int(opt.mask_size / 2**3), int(opt.mask_size / 2**3)
patch = (1, patch_h, patch_w)


class ImageDataset(Dataset):
    def __init__(self, images, img_size=32, mask_size=16, mode="train"):
        self.images = images
        self.img_size = img_size
        self.mask_size = mask_size
        self.mode = mode

    def apply_random_mask(self, img):
        """Randomly masks image"""
        y1, x1 = np.random.randint(0, self.img_size - self.mask_size, 2)
        y2, x2 = y1 + self.mask_size, x1 + self.mask_size
        masked_part = img[:, y1:y2, x1:x2]
        masked_img = img.clone()
        masked_img[:, y1:y2, x1:x2] = 1
        return masked_img, masked_part

    def apply_center_mask(self, img):
        """Mask center part of image"""
        i = (self.img_size - self.mask_size) // 2
        masked_img = img.clone()
        masked_img[:, i : i + self.mask_size, i : i + self.mask_size] = 1
        return masked_img, i

    def __getitem__(self, index):
        img = self.images[index % len(self.images)]
        if self.mode == "train":
            masked_img, aux = self.apply_random_mask(img)
        else:
            masked_img, aux = self.apply_center_mask(img)
        return img, masked_img, aux

    def __len__(self):
        return len(self.images)


class Generator(nn.Module):
    def __init__(self, channels=3):
        super().__init__()

        def downsample(in_feat, out_feat, normalize=True):
            layers = [nn.Conv2d(in_feat, out_feat, 4, stride=2, padding=1)]
            if normalize:
                layers.append(nn.BatchNorm2d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2))
            return layers

        def upsample(in_feat, out_feat, normalize=True):
            layers = [nn.ConvTranspose2d(in_feat, out_feat, 4, stride=2, padding=1)]
            if normalize:
                layers.append(nn.BatchNorm2d(out_feat, 0.8))
            layers.append(nn.ReLU())
            return layers

        self.model = nn.Sequential(
            *downsample(channels, 8, normalize=False),
            *downsample(8, 16),
            nn.Conv2d(16, 32, 1),
            *upsample(32, 8),
            nn.Conv2d(8, channels, 3, 1, 1),
            nn.Tanh(),
        )

    def forward(self, x):
        return self.model(x)


class Discriminator(nn.Module):
    def __init__(self, channels=3):
        super().__init__()

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
pixelwise_loss = torch.nn.L1Loss()

# Initialize generator and discriminator
generator = Generator(channels=opt.channels)
discriminator = Discriminator(channels=opt.channels)

# Initialize weights
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)

images = torch.rand(opt.batch_size * 10, opt.channels, opt.img_size, opt.img_size) * 2 - 1
dataloader = DataLoader(
    ImageDataset(images, img_size=opt.img_size, mask_size=opt.mask_size),
    batch_size=opt.batch_size,
    shuffle=True,
    num_workers=0,
)
test_dataloader = DataLoader(
    ImageDataset(images[:24], img_size=opt.img_size, mask_size=opt.mask_size, mode="val"),
    batch_size=12,
    shuffle=True,
    num_workers=0,
)

# Optimizers
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))

Tensor = torch.FloatTensor


def save_sample(batches_done):
    samples, masked_samples, i = next(iter(test_dataloader))
    samples = samples.type(Tensor)
    masked_samples = masked_samples.type(Tensor)
    i = i[0].item()  # Upper-left coordinate of mask
    # Generate inpainted image
    gen_mask = generator(masked_samples)
    filled_samples = masked_samples.clone()
    filled_samples[:, :, i : i + opt.mask_size, i : i + opt.mask_size] = gen_mask
    sample = torch.cat((masked_samples.data, filled_samples.data, samples.data), -2)
    torch.save(sample, "images_%d.pt" % batches_done)  # noqa: UP031 (as the script writes it)


for epoch in range(opt.n_epochs):
    for i, (imgs, masked_imgs, masked_parts) in enumerate(dataloader):
        # Adversarial ground truths
        valid = Tensor(imgs.shape[0], *patch).fill_(1.0)
        fake = Tensor(imgs.shape[0], *patch).fill_(0.0)

        # Configure input
        imgs = imgs.type(Tensor)
        masked_imgs = masked_imgs.type(Tensor)
        masked_parts = masked_parts.type(Tensor)

        #  Train Generator
        optimizer_G.zero_grad()
        gen_parts = generator(masked_imgs)
        g_adv = adversarial_loss(discriminator(gen_parts), valid)
        g_pixel = pixelwise_loss(gen_parts, masked_parts)
        g_loss = 0.001 * g_adv + 0.999 * g_pixel
        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        real_loss = adversarial_loss(discriminator(masked_parts), valid)
        fake_loss = adversarial_loss(discriminator(gen_parts.detach()), fake)
        d_loss = 0.5 * (real_loss + fake_loss)
        d_loss.backward()
        optimizer_D.step()

        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G adv: %f, pixel: %f]"  # noqa: UP031
            % (epoch, opt.n_epochs, i, len(dataloader), d_loss.item(), g_adv.item(), g_pixel.item())
        )

        # Generate sample at sample interval
        batches_done = epoch * len(dataloader) + i
        if batches_done % opt.sample_interval == 0:
            save_sample(batches_done)
