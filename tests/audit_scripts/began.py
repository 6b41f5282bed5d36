"""PyTorch-GAN's implementations/began/began.py loop as of commit c5d6be1 (G first; D,
an autoencoder, on the same gen_imgs.detach(); then the k update with ``diff.item()``):
its convergence metric ``M = (...).data[0]``, written for PyTorch 0.3, raises IndexError
on today's 0-dimensional tensors after both steps and k's update of the first batch.
Linear layers on random data, module-level loop, no main guard."""

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
discriminator = nn.Sequential(nn.Linear(nx, nh), nn.ReLU(), nn.Linear(nh, nx))
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(0.5, 0.999))
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.rand(opt.batch_size * 10, nx)),
    batch_size=opt.batch_size,
)

# BEGAN hyper parameters
gamma = 0.75
lambda_k = 0.001
k = 0.0

for _epoch in range(opt.n_epochs):
    for _i, (imgs,) in enumerate(dataloader):
        real_imgs = imgs

        #  Train Generator
        optimizer_G.zero_grad()
        z = torch.randn(imgs.shape[0], opt.latent_dim)
        gen_imgs = generator(z)
        g_loss = torch.mean(torch.abs(discriminator(gen_imgs) - gen_imgs))
        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        d_real = discriminator(real_imgs)
        d_fake = discriminator(gen_imgs.detach())
        d_loss_real = torch.mean(torch.abs(d_real - real_imgs))
        d_loss_fake = torch.mean(torch.abs(d_fake - gen_imgs.detach()))
        d_loss = d_loss_real - k * d_loss_fake
        d_loss.backward()
        optimizer_D.step()

        #  Update weights
        diff = torch.mean(gamma * d_loss_real - d_loss_fake)

        # Update weight term for fake samples
        k = k + lambda_k * diff.item()
        k = min(max(k, 0), 1)  # Constraint to interval [0, 1]

        # Update convergence metric
        M = (d_loss_real + torch.abs(diff)).data[0]
