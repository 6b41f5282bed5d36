"""PyTorch-GAN's implementations/cgan/cgan.py loop (commit e0a8f3c) on random data, as
the script writes it: module-level argparse and loop, no main guard; z and the fakes'
labels drawn with numpy; G(noise, labels) and D(img, labels) with label embeddings; D
with Dropout(0.4); MSELoss; G first, then D on the real batch with its labels and on
gen_imgs.detach() with gen_labels, (real + fake) / 2."""

import argparse

import numpy as np
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=64, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--b1", type=float, default=0.5, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
parser.add_argument("--latent_dim", type=int, default=8, help="dimensionality of the latent space")
parser.add_argument("--n_classes", type=int, default=4, help="number of classes for dataset")
opt = parser.parse_args()
print(opt)

nx, nh = 16, 32


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.label_emb = nn.Embedding(opt.n_classes, opt.n_classes)
        self.model = nn.Sequential(
            nn.Linear(opt.latent_dim + opt.n_classes, nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nx),
            nn.Tanh(),
        )

    def forward(self, noise, labels):
        gen_input = torch.cat((self.label_emb(labels), noise), -1)
        return self.model(gen_input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.label_embedding = nn.Embedding(opt.n_classes, opt.n_classes)
        self.model = nn.Sequential(
            nn.Linear(opt.n_classes + nx, nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nh),
            nn.Dropout(0.4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, 1),
        )

    def forward(self, img, labels):
        d_in = torch.cat((img.view(img.size(0), -1), self.label_embedding(labels)), -1)
        return self.model(d_in)


adversarial_loss = torch.nn.MSELoss()
generator = Generator()
discriminator = Discriminator()
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(
        torch.rand(opt.batch_size * 10, nx), torch.randint(opt.n_classes, (opt.batch_size * 10,))
    ),
    batch_size=opt.batch_size,
    shuffle=True,
)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))

for epoch in range(opt.n_epochs):
    for i, (imgs, labels) in enumerate(dataloader):
        batch_size = imgs.shape[0]
        valid = torch.ones(batch_size, 1)
        fake = torch.zeros(batch_size, 1)
        real_imgs = imgs.type(torch.FloatTensor)
        labels = labels.type(torch.LongTensor)

        #  Train Generator
        optimizer_G.zero_grad()
        z = torch.FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim)))
        gen_labels = torch.LongTensor(np.random.randint(0, opt.n_classes, batch_size))
        gen_imgs = generator(z, gen_labels)
        validity = discriminator(gen_imgs, gen_labels)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        validity_real = discriminator(real_imgs, labels)
        d_real_loss = adversarial_loss(validity_real, valid)
        validity_fake = discriminator(gen_imgs.detach(), gen_labels)
        d_fake_loss = adversarial_loss(validity_fake, fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()

        print(
            f"[Epoch {epoch}/{opt.n_epochs}] [Batch {i}/{len(dataloader)}] "
            f"[D loss: {d_loss.item()}] [G loss: {g_loss.item()}]"
        )
