"""PyTorch-GAN's implementations/pix2pix/pix2pix.py loop (commit e0a8f3c) on random
paired data, as the script writes it: module-level argparse and loop, no main guard;
real_A = batch "B" and real_B = batch "A" (the script's swap); G(real_A) with no z and
Dropout in G; D(img_A, img_B) on the pair, a map of scores; MSELoss against ones and
zeros; loss_G = loss_GAN + lambda_pixel * L1(fake_B, real_B); then D on the real pair
and on fake_B.detach(), 0.5 * (real + fake)."""

import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=16, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--b1", type=float, default=0.5, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
opt = parser.parse_args()
print(opt)

nx, nh = 16, 32
lambda_pixel = 100


class GeneratorUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(nn.Linear(nx, nh), nn.LeakyReLU(0.2), nn.Dropout(0.5))
        self.up = nn.Sequential(nn.Linear(nh + nx, nx), nn.Tanh())

    def forward(self, x):
        return self.up(torch.cat((self.down(x), x), 1))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(2 * nx, nh), nn.LeakyReLU(0.2), nn.Linear(nh, 4))

    def forward(self, img_A, img_B):
        # Concatenate image and condition image by channels to produce input
        img_input = torch.cat((img_A, img_B), 1)
        return self.model(img_input).view(-1, 1, 2, 2)  # a PatchGAN's map of scores


criterion_GAN = torch.nn.MSELoss()
criterion_pixelwise = torch.nn.L1Loss()
generator = GeneratorUNet()
discriminator = Discriminator()
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
images_A = torch.rand(opt.batch_size * 10, nx) * 2 - 1
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(images_A, images_A.flip(1) * 0.8),
    batch_size=opt.batch_size,
    shuffle=True,
)

for epoch in range(opt.n_epochs):
    for i, (batch_A, batch_B) in enumerate(dataloader):
        # Model inputs
        real_A = batch_B
        real_B = batch_A

        # Adversarial ground truths
        valid = torch.ones((real_A.size(0), 1, 2, 2))
        fake = torch.zeros((real_A.size(0), 1, 2, 2))

        #  Train Generators
        optimizer_G.zero_grad()
        fake_B = generator(real_A)
        pred_fake = discriminator(fake_B, real_A)
        loss_GAN = criterion_GAN(pred_fake, valid)
        loss_pixel = criterion_pixelwise(fake_B, real_B)
        loss_G = loss_GAN + lambda_pixel * loss_pixel
        loss_G.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        pred_real = discriminator(real_B, real_A)
        loss_real = criterion_GAN(pred_real, valid)
        pred_fake = discriminator(fake_B.detach(), real_A)
        loss_fake = criterion_GAN(pred_fake, fake)
        loss_D = 0.5 * (loss_real + loss_fake)
        loss_D.backward()
        optimizer_D.step()

        print(
            f"[Epoch {epoch}/{opt.n_epochs}] [Batch {i}/{len(dataloader)}] "
            f"[D loss: {loss_D.item()}] [G loss: {loss_G.item()}, pixel: {loss_pixel.item()}]"
        )
