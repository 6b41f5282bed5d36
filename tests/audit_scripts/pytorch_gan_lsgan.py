"""PyTorch-GAN's implementations/lsgan/lsgan.py loop (G first, then D on the same
gen_imgs.detach()), with linear layers on random data: module-level argparse and
loop, no main guard; a D without Sigmoid and MSELoss against 1 and 0, D's loss
0.5 * (real_loss + fake_loss)."""

import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=64, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--b1", type=float, default=0.5, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
parser.add_argument("--latent_dim", type=int, default=8, help="dimensionality of the latent space")
parser.add_argument("--sample_interval", type=int, default=400, help="interval between samples")
opt = parser.parse_args()
print(opt)

nx, nh = 16, 32


class Generator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = torch.nn.Sequential(
            torch.nn.Linear(opt.latent_dim, nh),
            torch.nn.ReLU(),
            torch.nn.Linear(nh, nx),
            torch.nn.Tanh(),
        )

    def forward(self, z):
        return self.model(z)


class Discriminator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = torch.nn.Sequential(
            torch.nn.Linear(nx, nh),
            torch.nn.LeakyReLU(0.2),
            torch.nn.Linear(nh, 1),
        )

    def forward(self, img):
        return self.model(img)


adversarial_loss = torch.nn.MSELoss()
generator = Generator()
discriminator = Discriminator()
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.rand(opt.batch_size * 10, nx)),
    batch_size=opt.batch_size,
    shuffle=True,
)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))

for epoch in range(opt.n_epochs):
    for i, (imgs,) in enumerate(dataloader):
        valid = torch.ones(imgs.shape[0], 1)
        fake = torch.zeros(imgs.shape[0], 1)
        real_imgs = imgs

        #  Train Generator
        optimizer_G.zero_grad()
        z = torch.randn(imgs.shape[0], opt.latent_dim)
        gen_imgs = generator(z)
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
            f"[Epoch {epoch}/{opt.n_epochs}] [Batch {i}/{len(dataloader)}] "
            f"[D loss: {d_loss.item()}] [G loss: {g_loss.item()}]"
        )
        batches_done = epoch * len(dataloader) + i
        if batches_done % opt.sample_interval == 0:
            torch.save(gen_imgs.data[:25], "images_%d.pt" % batches_done)  # noqa: UP031 (as the script writes it)
