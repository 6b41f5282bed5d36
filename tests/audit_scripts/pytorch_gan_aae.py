"""PyTorch-GAN's implementations/aae/aae.py loop (commit c5d6be1) on random data, as the
script writes it: module-level argparse and loop, no main guard; an encoder whose forward
draws its reparameterization noise from np.random, a decoder, both under one Adam
(itertools.chain of their parameters), D judging codes and ending in a Sigmoid. G's
step first on 0.001 * BCE(D(encoded), 1) + 0.999 * L1(decoded, real_imgs); then D on a
prior sample z drawn then by numpy as its real batch and on the codes detached, 0.5 *
(real + fake). Smaller layers than its 512, images 4x4; no sample grid."""

import argparse
import itertools

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=8, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--b1", type=float, default=0.5, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
parser.add_argument("--latent_dim", type=int, default=4, help="dimensionality of the latent space")
parser.add_argument("--img_size", type=int, default=4, help="size of each image dimension")
parser.add_argument("--channels", type=int, default=1, help="number of image channels")
opt = parser.parse_args()
print(opt)

img_shape = (opt.channels, opt.img_size, opt.img_size)

cuda = True if torch.cuda.is_available() else False
nh = 16


def reparameterization(mu, logvar):
    std = torch.exp(logvar / 2)
    sampled_z = Variable(Tensor(np.random.normal(0, 1, (mu.size(0), opt.latent_dim))))
    z = sampled_z * std + mu
    return z


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(int(np.prod(img_shape)), nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nh),
            nn.BatchNorm1d(nh),
            nn.LeakyReLU(0.2, inplace=True),
        )

        self.mu = nn.Linear(nh, opt.latent_dim)
        self.logvar = nn.Linear(nh, opt.latent_dim)

    def forward(self, img):
        img_flat = img.view(img.shape[0], -1)
        x = self.model(img_flat)
        mu = self.mu(x)
        logvar = self.logvar(x)
        z = reparameterization(mu, logvar)
        return z


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(opt.latent_dim, nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nh),
            nn.BatchNorm1d(nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, int(np.prod(img_shape))),
            nn.Tanh(),
        )

    def forward(self, z):
        img_flat = self.model(z)
        img = img_flat.view(img_flat.shape[0], *img_shape)
        return img


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(opt.latent_dim, nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, 1),
            nn.Sigmoid(),
        )

    def forward(self, z):
        validity = self.model(z)
        return validity


adversarial_loss = torch.nn.BCELoss()
pixelwise_loss = torch.nn.L1Loss()

encoder = Encoder()
decoder = Decoder()
discriminator = Discriminator()

data = torch.rand(opt.batch_size * 10, opt.channels, opt.img_size, opt.img_size) * 2 - 1
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(data, torch.zeros(len(data))),
    batch_size=opt.batch_size,
    shuffle=True,
)

optimizer_G = torch.optim.Adam(
    itertools.chain(encoder.parameters(), decoder.parameters()), lr=opt.lr, betas=(opt.b1, opt.b2)
)
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))

Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor

for epoch in range(opt.n_epochs):
    for i, (imgs, _) in enumerate(dataloader):
        valid = Variable(Tensor(imgs.shape[0], 1).fill_(1.0), requires_grad=False)
        fake = Variable(Tensor(imgs.shape[0], 1).fill_(0.0), requires_grad=False)

        real_imgs = Variable(imgs.type(Tensor))

        #  Train Generator
        optimizer_G.zero_grad()

        encoded_imgs = encoder(real_imgs)
        decoded_imgs = decoder(encoded_imgs)

        g_loss = 0.001 * adversarial_loss(
            discriminator(encoded_imgs), valid
        ) + 0.999 * pixelwise_loss(decoded_imgs, real_imgs)

        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()

        z = Variable(Tensor(np.random.normal(0, 1, (imgs.shape[0], opt.latent_dim))))

        real_loss = adversarial_loss(discriminator(z), valid)
        fake_loss = adversarial_loss(discriminator(encoded_imgs.detach()), fake)
        d_loss = 0.5 * (real_loss + fake_loss)

        d_loss.backward()
        optimizer_D.step()

        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f]"  # noqa: UP031 (as written)
            % (epoch, opt.n_epochs, i, len(dataloader), d_loss.item(), g_loss.item())
        )
