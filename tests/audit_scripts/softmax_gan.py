"""PyTorch-GAN's implementations/softmax_gan/softmax_gan.py loop: one forward of both
D logits, D's backward(retain_graph=True), D's step, then G's backward through the
kept graph, which PyTorch (>= 1.5) refuses with its in-place error. The fake batch
is not detached, so D's loss also reaches G's gradients, which nothing clears before
G's backward. Linear layers on random data, module-level loop, no main guard."""

import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200)
parser.add_argument("--batch_size", type=int, default=64)
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--latent_dim", type=int, default=8)
opt = parser.parse_args()

nx, nh = 16, 32
generator = nn.Sequential(nn.Linear(opt.latent_dim, nh), nn.ReLU(), nn.Linear(nh, nx))
discriminator = nn.Sequential(nn.Linear(nx, nh), nn.LeakyReLU(0.2), nn.Linear(nh, 1))
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(0.5, 0.999))
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.rand(opt.batch_size * 10, nx)),
    batch_size=opt.batch_size,
)


def log(x):
    return torch.log(x + 1e-8)


for _epoch in range(opt.n_epochs):
    for _i, (imgs,) in enumerate(dataloader):
        batch_size = imgs.shape[0]
        g_target = 1 / (batch_size * 2)
        d_target = 1 / batch_size
        real_imgs = imgs
        z = torch.randn(batch_size, opt.latent_dim)

        optimizer_G.zero_grad()
        optimizer_D.zero_grad()
        gen_imgs = generator(z)
        d_real = discriminator(real_imgs)
        d_fake = discriminator(gen_imgs)

        # Partition function
        Z = torch.sum(torch.exp(-d_real)) + torch.sum(torch.exp(-d_fake))

        # Calculate loss of discriminator and update
        d_loss = d_target * torch.sum(d_real) + log(Z)
        d_loss.backward(retain_graph=True)
        optimizer_D.step()

        # Calculate loss of generator and update
        g_loss = g_target * (torch.sum(d_real) + torch.sum(d_fake)) + log(Z)
        g_loss.backward()
        optimizer_G.step()
