"""PyTorch-GAN's implementations/cogan/cogan.py loop (commit e0a8f3c) on random data, as the
script writes it: module-level argparse and loop, no main guard; coupled_generators(z)
returns an image of each domain from shared layers, coupled_discriminators(img1, img2)
scores each through shared convolutions (BatchNorm, Dropout2d) and a head per domain.
Two loaders zipped (grey images expanded to three channels, and three-channel ones); G
first on the mean of the two domains' MSE to ones, then D on both real images and both
fakes detached, the mean of its four MSEs. Smaller layers than its 128 channels, 8x8
images; no sample grid."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200)
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--b1", type=float, default=0.5)
parser.add_argument("--b2", type=float, default=0.999)
parser.add_argument("--latent_dim", type=int, default=4)
parser.add_argument("--img_size", type=int, default=8)
parser.add_argument("--channels", type=int, default=3)
opt = parser.parse_args()
cuda = False


def weights_init_normal(m):
    classname = m.__class__.__name__
    if classname.find("Linear") != -1:
        torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
        torch.nn.init.constant_(m.bias.data, 0.0)


class CoupledGenerators(nn.Module):
    def __init__(self):
        super().__init__()
        self.init_size = opt.img_size // 4
        self.fc = nn.Sequential(nn.Linear(opt.latent_dim, 16 * self.init_size**2))
        self.shared_conv = nn.Sequential(
            nn.BatchNorm2d(16),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(16, 16, 3, stride=1, padding=1),
            nn.BatchNorm2d(16, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Upsample(scale_factor=2),
        )
        self.G1 = nn.Sequential(
            nn.Conv2d(16, 8, 3, stride=1, padding=1),
            nn.BatchNorm2d(8, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(8, opt.channels, 3, stride=1, padding=1),
            nn.Tanh(),
        )
        self.G2 = nn.Sequential(
            nn.Conv2d(16, 8, 3, stride=1, padding=1),
            nn.BatchNorm2d(8, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(8, opt.channels, 3, stride=1, padding=1),
            nn.Tanh(),
        )

    def forward(self, noise):
        out = self.fc(noise)
        out = out.view(out.shape[0], 16, self.init_size, self.init_size)
        img_emb = self.shared_conv(out)
        return self.G1(img_emb), self.G2(img_emb)


class CoupledDiscriminators(nn.Module):
    def __init__(self):
        super().__init__()

        def discriminator_block(in_filters, out_filters, bn=True):
            block = [nn.Conv2d(in_filters, out_filters, 3, 2, 1)]
            if bn:
                block.append(nn.BatchNorm2d(out_filters, 0.8))
            block.extend([nn.LeakyReLU(0.2, inplace=True), nn.Dropout2d(0.25)])
            return block

        self.shared_conv = nn.Sequential(
            *discriminator_block(opt.channels, 8, bn=False), *discriminator_block(8, 16)
        )
        ds_size = opt.img_size // 2**2
        self.D1 = nn.Linear(16 * ds_size**2, 1)
        self.D2 = nn.Linear(16 * ds_size**2, 1)

    def forward(self, img1, img2):
        out = self.shared_conv(img1)
        out = out.view(out.shape[0], -1)
        validity1 = self.D1(out)
        out = self.shared_conv(img2)
        out = out.view(out.shape[0], -1)
        validity2 = self.D2(out)
        return validity1, validity2


adversarial_loss = torch.nn.MSELoss()
coupled_generators = CoupledGenerators()
coupled_discriminators = CoupledDiscriminators()
coupled_generators.apply(weights_init_normal)
coupled_discriminators.apply(weights_init_normal)
d1 = torch.rand(80, 1, opt.img_size, opt.img_size) * 2 - 1
d2 = torch.rand(80, 3, opt.img_size, opt.img_size) * 2 - 1
dataloader1 = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(d1, torch.zeros(80)), batch_size=opt.batch_size, shuffle=True
)
dataloader2 = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(d2, torch.zeros(80)), batch_size=opt.batch_size, shuffle=True
)
optimizer_G = torch.optim.Adam(coupled_generators.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(
    coupled_discriminators.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2)
)
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor

for epoch in range(opt.n_epochs):
    for i, ((imgs1, _), (imgs2, _)) in enumerate(zip(dataloader1, dataloader2)):  # noqa: B905
        batch_size = imgs1.shape[0]
        valid = Variable(Tensor(batch_size, 1).fill_(1.0), requires_grad=False)
        fake = Variable(Tensor(batch_size, 1).fill_(0.0), requires_grad=False)
        imgs1 = Variable(imgs1.type(Tensor).expand(imgs1.size(0), 3, opt.img_size, opt.img_size))
        imgs2 = Variable(imgs2.type(Tensor))
        optimizer_G.zero_grad()
        z = Variable(Tensor(np.random.normal(0, 1, (batch_size, opt.latent_dim))))
        gen_imgs1, gen_imgs2 = coupled_generators(z)
        validity1, validity2 = coupled_discriminators(gen_imgs1, gen_imgs2)
        g_loss = (adversarial_loss(validity1, valid) + adversarial_loss(validity2, valid)) / 2
        g_loss.backward()
        optimizer_G.step()
        optimizer_D.zero_grad()
        validity1_real, validity2_real = coupled_discriminators(imgs1, imgs2)
        validity1_fake, validity2_fake = coupled_discriminators(
            gen_imgs1.detach(), gen_imgs2.detach()
        )
        d_loss = (
            adversarial_loss(validity1_real, valid)
            + adversarial_loss(validity1_fake, fake)
            + adversarial_loss(validity2_real, valid)
            + adversarial_loss(validity2_fake, fake)
        ) / 4
        d_loss.backward()
        optimizer_D.step()
        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f]"  # noqa: UP031 (as written)
            % (epoch, opt.n_epochs, i, len(dataloader1), d_loss.item(), g_loss.item())
        )
