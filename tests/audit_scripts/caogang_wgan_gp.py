# ruff: noqa: B007, UP008  (written as caogang/wgan-gp writes it)
"""caogang/wgan-gp's gan_mnist.py (commit 02ec5e2) as written, in Python 3 (range for
xrange, next(data) for data.next(), print calls), its model dimensionality DIM 4 (its own:
64) and BATCH_SIZE 8 (its own: 50), without its GPU moves (use_cuda), sample grids and
tflib plots; its tflib MNIST loader replaced by seeded random images in [0, 1], flat as
tflib gives them. Each G iteration trains D CRITIC_ITERS times, each D step on the next
real batch: D(real).mean().backward(mone), D(G(noise).data).mean().backward(one), and the
gradient penalty's own backward (alpha = torch.rand(BATCH_SIZE, 1) over the flat
images), then one optimizer step; G's step on fresh noise with D's parameters switched
off, D(G(noise)).mean().backward(mone).

Its one = torch.FloatTensor([1]) was written for PyTorch 0.3, where a mean had shape
(1,): since 0.4 a mean has shape (), and backward(mone) fails ("Mismatch in shape").
--one_as_scalar makes it torch.tensor(1.0), the fix its users apply (the fixture's flag)."""

import argparse

import numpy as np
import torch
import torch.autograd as autograd
import torch.nn as nn
import torch.optim as optim

parser = argparse.ArgumentParser()
parser.add_argument("--one_as_scalar", action="store_true")  # the fixture's, see above
args = parser.parse_args()

torch.manual_seed(1)

DIM = 4  # Model dimensionality
BATCH_SIZE = 8  # Batch size
CRITIC_ITERS = 5  # For WGAN and WGAN-GP, number of critic iters per gen iter
LAMBDA = 10  # Gradient penalty lambda hyperparameter
ITERS = 200000  # How many generator iterations to train for
OUTPUT_DIM = 784  # Number of pixels in MNIST (28*28)


# ==================Definition Start======================
class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()

        preprocess = nn.Sequential(
            nn.Linear(128, 4 * 4 * 4 * DIM),
            nn.ReLU(True),
        )
        block1 = nn.Sequential(
            nn.ConvTranspose2d(4 * DIM, 2 * DIM, 5),
            nn.ReLU(True),
        )
        block2 = nn.Sequential(
            nn.ConvTranspose2d(2 * DIM, DIM, 5),
            nn.ReLU(True),
        )
        deconv_out = nn.ConvTranspose2d(DIM, 1, 8, stride=2)

        self.block1 = block1
        self.block2 = block2
        self.deconv_out = deconv_out
        self.preprocess = preprocess
        self.sigmoid = nn.Sigmoid()

    def forward(self, input):
        output = self.preprocess(input)
        output = output.view(-1, 4 * DIM, 4, 4)
        output = self.block1(output)
        output = output[:, :, :7, :7]
        output = self.block2(output)
        output = self.deconv_out(output)
        output = self.sigmoid(output)
        return output.view(-1, OUTPUT_DIM)


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()

        main = nn.Sequential(
            nn.Conv2d(1, DIM, 5, stride=2, padding=2),
            nn.ReLU(True),
            nn.Conv2d(DIM, 2 * DIM, 5, stride=2, padding=2),
            nn.ReLU(True),
            nn.Conv2d(2 * DIM, 4 * DIM, 5, stride=2, padding=2),
            nn.ReLU(True),
        )
        self.main = main
        self.output = nn.Linear(4 * 4 * 4 * DIM, 1)

    def forward(self, input):
        input = input.view(-1, 1, 28, 28)
        out = self.main(input)
        out = out.view(-1, 4 * 4 * 4 * DIM)
        out = self.output(out)
        return out.view(-1)


def train_gen():  # (in place of tflib.mnist.load's: flat images, their labels)
    rng = np.random.RandomState(0)
    for _ in range(100):
        yield rng.rand(BATCH_SIZE, OUTPUT_DIM).astype("float32"), rng.randint(0, 10, BATCH_SIZE)


# Dataset iterator
def inf_train_gen():
    while True:
        for images, targets in train_gen():
            yield images


def calc_gradient_penalty(netD, real_data, fake_data):
    alpha = torch.rand(BATCH_SIZE, 1)
    alpha = alpha.expand(real_data.size())

    interpolates = alpha * real_data + ((1 - alpha) * fake_data)

    interpolates = autograd.Variable(interpolates, requires_grad=True)

    disc_interpolates = netD(interpolates)

    gradients = autograd.grad(
        outputs=disc_interpolates,
        inputs=interpolates,
        grad_outputs=torch.ones(disc_interpolates.size()),
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]

    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA
    return gradient_penalty


# ==================Definition End======================

netG = Generator()
netD = Discriminator()
print(netG)
print(netD)

optimizerD = optim.Adam(netD.parameters(), lr=1e-4, betas=(0.5, 0.9))
optimizerG = optim.Adam(netG.parameters(), lr=1e-4, betas=(0.5, 0.9))

one = torch.tensor(1.0) if args.one_as_scalar else torch.FloatTensor([1])
mone = one * -1

data = inf_train_gen()

for iteration in range(ITERS):
    ############################
    # (1) Update D network
    ###########################
    for p in netD.parameters():  # reset requires_grad
        p.requires_grad = True  # they are set to False below in netG update

    for iter_d in range(CRITIC_ITERS):
        _data = next(data)
        real_data = torch.Tensor(_data)
        real_data_v = autograd.Variable(real_data)

        netD.zero_grad()

        # train with real
        D_real = netD(real_data_v)
        D_real = D_real.mean()
        D_real.backward(mone)

        # train with fake
        noise = torch.randn(BATCH_SIZE, 128)
        noisev = autograd.Variable(noise, volatile=True)  # totally freeze netG
        fake = autograd.Variable(netG(noisev).data)
        inputv = fake
        D_fake = netD(inputv)
        D_fake = D_fake.mean()
        D_fake.backward(one)

        # train with gradient penalty
        gradient_penalty = calc_gradient_penalty(netD, real_data_v.data, fake.data)
        gradient_penalty.backward()

        D_cost = D_fake - D_real + gradient_penalty
        Wasserstein_D = D_real - D_fake
        optimizerD.step()

    ############################
    # (2) Update G network
    ###########################
    for p in netD.parameters():
        p.requires_grad = False  # to avoid computation
    netG.zero_grad()

    noise = torch.randn(BATCH_SIZE, 128)
    noisev = autograd.Variable(noise)
    fake = netG(noisev)
    G = netD(fake)
    G = G.mean()
    G.backward(mone)
    G_cost = -G
    optimizerG.step()

    print(iteration, D_cost.item(), G_cost.item(), Wasserstein_D.item())
