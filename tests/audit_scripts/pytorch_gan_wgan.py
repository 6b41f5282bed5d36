"""PyTorch-GAN's implementations/wgan/wgan.py loop (commit c5d6be1) on random data: a D
step on every batch on generator(z).detach() with RMSprop, D's weights clamped to
clip_value after it, a G step on batch 0 and then every n_critic-th batch on
generator(z) forwarded again from the same z; linear layers, module-level argparse
and loop, no main guard."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=64, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.00005, help="learning rate")
parser.add_argument("--latent_dim", type=int, default=8, help="dimensionality of the latent space")
parser.add_argument("--n_critic", type=int, default=5, help="training steps of D per G step")
parser.add_argument("--clip_value", type=float, default=0.01, help="lower and upper clip value")
opt = parser.parse_args()

nx, nh = 16, 32


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(opt.latent_dim, nh), nn.ReLU(), nn.Linear(nh, nx))

    def forward(self, z):
        return self.model(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(nx, nh), nn.LeakyReLU(0.2), nn.Linear(nh, 1))

    def forward(self, img):
        return self.model(img)


generator = Generator()
discriminator = Discriminator()
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.rand(opt.batch_size * 20, nx)),
    batch_size=opt.batch_size,
    shuffle=True,
)
optimizer_G = torch.optim.RMSprop(generator.parameters(), lr=opt.lr)
optimizer_D = torch.optim.RMSprop(discriminator.parameters(), lr=opt.lr)

batches_done = 0
for epoch in range(opt.n_epochs):
    for i, (imgs,) in enumerate(dataloader):
        real_imgs = Variable(imgs)

        #  Train Discriminator
        optimizer_D.zero_grad()
        z = Variable(torch.FloatTensor(np.random.normal(0, 1, (imgs.shape[0], opt.latent_dim))))
        fake_imgs = generator(z).detach()
        loss_D = -torch.mean(discriminator(real_imgs)) + torch.mean(discriminator(fake_imgs))
        loss_D.backward()
        optimizer_D.step()

        # Clip weights of discriminator
        for p in discriminator.parameters():
            p.data.clamp_(-opt.clip_value, opt.clip_value)

        # Train the generator every n_critic iterations
        if i % opt.n_critic == 0:
            optimizer_G.zero_grad()
            gen_imgs = generator(z)
            loss_G = -torch.mean(discriminator(gen_imgs))
            loss_G.backward()
            optimizer_G.step()
            print(
                f"[Epoch {epoch}/{opt.n_epochs}] [Batch {i}/{len(dataloader)}] "
                f"[D loss: {loss_D.item()}] [G loss: {loss_G.item()}]"
            )
        batches_done += 1
