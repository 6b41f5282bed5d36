"""The WGAN authors' main.py loop (martinarjovsky/WassersteinGAN, commit 2cf43ba) with
its --mlp_G --mlp_D models (models/mlp.py: D returns its scores' batch mean), on random
data (--n_batches, 6 by default): each G iteration trains D Diters times (100 for G's
first 25 iterations and every 500th, fewer where the epoch's batches run out), clamping
D's parameters at the top of each D step, D(real).backward(one), D(G(noise)).backward(mone)
through a detach() whose result is dropped, RMSprop; then G on fresh noise, D's
parameters switched off. Module-level argparse and loop, no main guard; nn.Module for the
gone nn.Container and the Sequential called where data_parallel would hand it one
device's batch."""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable

parser = argparse.ArgumentParser()
parser.add_argument("--batchSize", type=int, default=8, help="input batch size")
parser.add_argument("--imageSize", type=int, default=4, help="image side")
parser.add_argument("--nc", type=int, default=1, help="input image channels")
parser.add_argument("--nz", type=int, default=4, help="size of the latent z vector")
parser.add_argument("--ngf", type=int, default=16)
parser.add_argument("--ndf", type=int, default=16)
parser.add_argument("--niter", type=int, default=25, help="number of epochs to train for")
parser.add_argument("--lrD", type=float, default=0.00005, help="Critic's learning rate")
parser.add_argument("--lrG", type=float, default=0.00005, help="G's learning rate")
parser.add_argument("--clamp_lower", type=float, default=-0.01)
parser.add_argument("--clamp_upper", type=float, default=0.01)
parser.add_argument("--Diters", type=int, default=5, help="number of D iters per each G iter")
parser.add_argument("--n_batches", type=int, default=6, help="the random data's batches")
opt = parser.parse_args()


class MLP_G(nn.Module):
    def __init__(self, isize, nz, nc, ngf):
        super().__init__()
        main = nn.Sequential(
            # Z goes into a linear of size: ngf
            nn.Linear(nz, ngf),
            nn.ReLU(True),
            nn.Linear(ngf, ngf),
            nn.ReLU(True),
            nn.Linear(ngf, nc * isize * isize),
        )
        self.main = main
        self.nc = nc
        self.isize = isize
        self.nz = nz

    def forward(self, input):
        input = input.view(input.size(0), input.size(1))
        out = self.main(input)
        return out.view(out.size(0), self.nc, self.isize, self.isize)


class MLP_D(nn.Module):
    def __init__(self, isize, nz, nc, ndf):
        super().__init__()
        main = nn.Sequential(
            # Z goes into a linear of size: ndf
            nn.Linear(nc * isize * isize, ndf),
            nn.ReLU(True),
            nn.Linear(ndf, ndf),
            nn.ReLU(True),
            nn.Linear(ndf, 1),
        )
        self.main = main
        self.nc = nc
        self.isize = isize
        self.nz = nz

    def forward(self, input):
        input = input.view(input.size(0), input.size(1) * input.size(2) * input.size(3))
        output = self.main(input)
        output = output.mean(0)
        return output.view(1)


dataset = torch.utils.data.TensorDataset(
    torch.rand(opt.batchSize * opt.n_batches, opt.nc, opt.imageSize, opt.imageSize) * 2 - 1,
    torch.zeros(opt.batchSize * opt.n_batches),
)
dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)

nz = int(opt.nz)
netG = MLP_G(opt.imageSize, nz, opt.nc, opt.ngf)
netD = MLP_D(opt.imageSize, nz, opt.nc, opt.ndf)

input = torch.FloatTensor(opt.batchSize, opt.nc, opt.imageSize, opt.imageSize)
noise = torch.FloatTensor(opt.batchSize, nz, 1, 1)
one = torch.FloatTensor([1])
mone = one * -1

optimizerD = optim.RMSprop(netD.parameters(), lr=opt.lrD)
optimizerG = optim.RMSprop(netG.parameters(), lr=opt.lrG)

gen_iterations = 0
for epoch in range(opt.niter):
    data_iter = iter(dataloader)
    i = 0
    while i < len(dataloader):
        ############################
        # (1) Update D network
        ###########################
        for p in netD.parameters():  # reset requires_grad
            p.requires_grad = True  # they are set to False below in netG update

        # train the discriminator Diters times
        if gen_iterations < 25 or gen_iterations % 500 == 0:
            Diters = 100
        else:
            Diters = opt.Diters
        j = 0
        while j < Diters and i < len(dataloader):
            j += 1

            # clamp parameters to a cube
            for p in netD.parameters():
                p.data.clamp_(opt.clamp_lower, opt.clamp_upper)

            data = next(data_iter)
            i += 1

            # train with real
            real_cpu, _ = data
            netD.zero_grad()
            batch_size = real_cpu.size(0)

            input.resize_as_(real_cpu).copy_(real_cpu)
            inputv = Variable(input)

            errD_real = netD(inputv)
            errD_real.backward(one)

            # train with fake
            noise.resize_(opt.batchSize, nz, 1, 1).normal_(0, 1)
            noisev = Variable(noise)
            fake = netG(noisev)
            inputv = fake
            inputv.detach()
            errD_fake = netD(inputv)
            errD_fake.backward(mone)
            errD = errD_real - errD_fake
            optimizerD.step()

        ############################
        # (2) Update G network
        ###########################
        for p in netD.parameters():
            p.requires_grad = False  # to avoid computation
        netG.zero_grad()
        # in case our last batch was the tail batch of the dataloader,
        # make sure we feed a full batch of noise
        noise.resize_(opt.batchSize, nz, 1, 1).normal_(0, 1)
        noisev = Variable(noise)
        fake = netG(noisev)
        errG = netD(fake)
        errG.backward(one)
        optimizerG.step()
        gen_iterations += 1

        print(
            f"[{epoch}/{opt.niter}][{i}/{len(dataloader)}][{gen_iterations}] "
            f"Loss_D: {errD.item():f} Loss_G: {errG.item():f} "
            f"Loss_D_real: {errD_real.item():f} Loss_D_fake {errD_fake.item():f}"
        )
