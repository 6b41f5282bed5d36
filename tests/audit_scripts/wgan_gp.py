"""PyTorch-GAN's implementations/wgan_gp/wgan_gp.py loop: a D step on every batch with
a gradient penalty (torch.autograd.grad on interpolates, create_graph=True), a G
step after batch 0 and then every n_critic-th batch, G regenerating its fakes from
the same z; linear layers on random data, module-level argparse and loop, no main
guard."""

import argparse

import torch
import torch.autograd as autograd
import torch.nn as nn
from torch.autograd import Variable

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=64, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--latent_dim", type=int, default=8, help="dimensionality of the latent space")
parser.add_argument("--n_critic", type=int, default=5, help="training steps of D per G step")
opt = parser.parse_args()

nx, nh = 16, 32
lambda_gp = 10


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
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(0.5, 0.999))


def compute_gradient_penalty(D, real_samples, fake_samples):
    """Calculates the gradient penalty loss for WGAN GP"""
    alpha = torch.rand(real_samples.size(0), 1)
    interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
    d_interpolates = D(interpolates)
    fake = Variable(torch.ones(real_samples.shape[0], 1), requires_grad=False)
    gradients = autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=fake,
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


batches_done = 0
for epoch in range(opt.n_epochs):
    for i, (imgs,) in enumerate(dataloader):
        real_imgs = Variable(imgs)

        #  Train Discriminator
        optimizer_D.zero_grad()
        z = Variable(torch.randn(imgs.shape[0], opt.latent_dim))
        fake_imgs = generator(z)
        real_validity = discriminator(real_imgs)
        fake_validity = discriminator(fake_imgs)
        gradient_penalty = compute_gradient_penalty(discriminator, real_imgs.data, fake_imgs.data)
        d_loss = (
            -torch.mean(real_validity) + torch.mean(fake_validity) + lambda_gp * gradient_penalty
        )
        d_loss.backward()
        optimizer_D.step()

        optimizer_G.zero_grad()
        # Train the generator every n_critic steps
        if i % opt.n_critic == 0:
            fake_imgs = generator(z)
            fake_validity = discriminator(fake_imgs)
            g_loss = -torch.mean(fake_validity)
            g_loss.backward()
            optimizer_G.step()
            print(
                f"[Epoch {epoch}/{opt.n_epochs}] [Batch {i}/{len(dataloader)}] "
                f"[D loss: {d_loss.item()}] [G loss: {g_loss.item()}]"
            )
            batches_done += opt.n_critic
