"""The PyTorch DCGAN example's loop (pytorch/examples dcgan/main.py), with linear
layers on random 16-dimensional data so that its FLOPs can be worked out by hand:
module-level argparse and loop, no main guard, netG/netD, D first on fake.detach(),
G on D(fake), a sample forward on fixed noise every 100 batches."""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim

parser = argparse.ArgumentParser()
parser.add_argument("--batchSize", type=int, default=64, help="input batch size")
parser.add_argument("--nz", type=int, default=8, help="size of the latent z vector")
parser.add_argument("--niter", type=int, default=25, help="number of epochs to train for")
parser.add_argument("--lr", type=float, default=0.0002, help="learning rate")
parser.add_argument("--beta1", type=float, default=0.5, help="beta1 for adam")
parser.add_argument("--outf", default=".", help="folder to output samples and checkpoints")
opt = parser.parse_args()
print(opt)

torch.manual_seed(0)
nz, nx, nh = opt.nz, 16, 32


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, nh), nn.ReLU(True), nn.Linear(nh, nx), nn.Tanh())

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nx, nh), nn.LeakyReLU(0.2, inplace=True), nn.Linear(nh, 1), nn.Sigmoid()
        )

    def forward(self, input):
        return self.main(input)


netG = Generator()
netD = Discriminator()
criterion = nn.BCELoss()
fixed_noise = torch.randn(opt.batchSize, nz)
real_label = 1.0
fake_label = 0.0
optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

dataset = torch.utils.data.TensorDataset(torch.rand(opt.batchSize * 10, nx) * 2 - 1)
dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)

for epoch in range(opt.niter):
    for i, data in enumerate(dataloader, 0):
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = data[0]
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label)
        output = netD(real_cpu).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        noise = torch.randn(batch_size, nz)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        optimizerD.step()
        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        print(
            f"[{epoch}/{opt.niter}][{i}/{len(dataloader)}] Loss_D: "
            f"{(errD_real + errD_fake).item():.4f} Loss_G: {errG.item():.4f}"
        )
        if i % 100 == 0:
            fake = netG(fixed_noise)
            torch.save(fake.detach(), f"{opt.outf}/fake_samples_epoch_{epoch:03d}.pt")
    torch.save(netG.state_dict(), f"{opt.outf}/netG_epoch_{epoch}.pth")
