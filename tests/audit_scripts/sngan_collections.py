# ruff: noqa: B007, UP031  (written as pytorch-gan-collections writes it)
"""w86763777/pytorch-gan-collections' gans/sngan.py training loop (its train(), commit
78dabb3), with the cnn32 models of its gans/models/sngan.py made small (narrow layers,
8x8 images) and its gans/common/losses.py and infiniteloop, on random images in place of
CIFAR-10 (its transform kept: Normalize to [-1, 1] and uniform dequantization noise).
Per step: n_dis D steps, each on net_G(z).detach() made under no_grad and a real batch
of its own; then G's step on batch_size * 2 fresh z; both optimizers' LambdaLR, decaying
linearly over total_steps, stepped after G's step; at step 1 a sample of G in training
mode (it moves BatchNorm's statistics) and a checkpoint. D's layers use the hook-based
torch.nn.utils.spectral_norm, whose forward leaves ``weight`` on each layer as a tensor
of its graph. Its absl flags are argparse here (absl is not installed), with the same
names and defaults save ``record`` (off: the FID statistics cache is not here), and
what it writes for tensorboard and the image files is left out (it only reads)."""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim
from torch.nn.utils.spectral_norm import spectral_norm
from tqdm import trange

parser = argparse.ArgumentParser()
parser.add_argument("--total_steps", type=int, default=100000)
parser.add_argument("--batch_size", type=int, default=64)
parser.add_argument("--lr_G", type=float, default=2e-4)
parser.add_argument("--lr_D", type=float, default=2e-4)
parser.add_argument("--betas", type=float, nargs=2, default=[0.0, 0.9])
parser.add_argument("--n_dis", type=int, default=5)
parser.add_argument("--z_dim", type=int, default=128)
parser.add_argument("--eval_step", type=int, default=5000)
parser.add_argument("--sample_step", type=int, default=500)
parser.add_argument("--sample_size", type=int, default=64)
parser.add_argument("--logdir", default="./logs/SNGAN_CIFAR10_CNN")
parser.add_argument("--record", action="store_true")
FLAGS = parser.parse_args()

device = torch.device("cpu")


class Hinge(nn.Module):  # gans/common/losses.py
    def forward(self, pred_real, pred_fake=None):
        if pred_fake is not None:
            loss_real = F.relu(1 - pred_real).mean()
            loss_fake = F.relu(1 + pred_fake).mean()
            loss = loss_real + loss_fake
            return loss, loss_real, loss_fake
        else:
            loss = -pred_real.mean()
            return loss


class Generator(nn.Module):  # gans/models/sngan.py, channels 512..64 as 16..4
    def __init__(self, z_dim, M=1):
        super().__init__()
        self.z_dim = z_dim
        self.M = M
        self.linear = nn.Linear(self.z_dim, M * M * 16)
        self.main = nn.Sequential(
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.ConvTranspose2d(16, 8, kernel_size=4, stride=2, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(True),
            nn.ConvTranspose2d(8, 8, kernel_size=4, stride=2, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(True),
            nn.ConvTranspose2d(8, 4, kernel_size=4, stride=2, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(True),
            nn.Conv2d(4, 3, kernel_size=3, stride=1, padding=1),
            nn.Tanh(),
        )
        dcgan_weights_init(self)

    def forward(self, z):
        x = self.linear(z)
        x = x.view(x.size(0), -1, self.M, self.M)
        x = self.main(x)
        return x


class Discriminator(nn.Module):  # gans/models/sngan.py, channels 512..64 as 16..4
    def __init__(self, M=8):
        super().__init__()
        self.M = M

        self.main = nn.Sequential(
            # M
            spectral_norm(nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1)),
            nn.LeakyReLU(0.1, inplace=True),
            spectral_norm(nn.Conv2d(4, 8, kernel_size=4, stride=2, padding=1)),
            nn.LeakyReLU(0.1, inplace=True),
            # M / 2
            spectral_norm(nn.Conv2d(8, 8, kernel_size=3, stride=1, padding=1)),
            nn.LeakyReLU(0.1, inplace=True),
            spectral_norm(nn.Conv2d(8, 8, kernel_size=4, stride=2, padding=1)),
            nn.LeakyReLU(0.1, inplace=True),
            # M / 4
            spectral_norm(nn.Conv2d(8, 8, kernel_size=3, stride=1, padding=1)),
            nn.LeakyReLU(0.1, inplace=True),
            spectral_norm(nn.Conv2d(8, 16, kernel_size=4, stride=2, padding=1)),
            nn.LeakyReLU(0.1, inplace=True),
            # M / 8
            spectral_norm(nn.Conv2d(16, 16, kernel_size=3, stride=1, padding=1)),
            nn.LeakyReLU(0.1, inplace=True),
        )

        self.linear = spectral_norm(nn.Linear(M // 8 * M // 8 * 16, 1, bias=False))
        dcgan_weights_init(self)

    def forward(self, x):
        x = self.main(x)
        x = torch.flatten(x, start_dim=1)
        x = self.linear(x)
        return x


def dcgan_weights_init(model):
    for name, module in model.named_modules():
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
            init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                init.zeros_(module.bias)


def infiniteloop(dataloader):  # gans/common/utils.py
    while True:
        for x, _ in iter(dataloader):
            yield x


class RandomImages(torch.utils.data.Dataset):
    """Stands in for datasets.CIFAR10 with its transform (ToTensor's [0, 1] images)."""

    def __init__(self, n, transform):
        self.images, self.transform = torch.rand(n, 3, 8, 8), transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i]), 0


def transform(x):  # Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)), then the Lambda
    x = (x - 0.5) / 0.5
    return x + torch.rand_like(x) / 128


def train():
    dataset = RandomImages(FLAGS.batch_size * 8, transform)

    dataloader = torch.utils.data.DataLoader(
        dataset, batch_size=FLAGS.batch_size, shuffle=True, num_workers=4, drop_last=True
    )

    net_G = Generator(FLAGS.z_dim).to(device)
    net_D = Discriminator().to(device)
    loss_fn = Hinge()

    optim_G = optim.Adam(net_G.parameters(), lr=FLAGS.lr_G, betas=FLAGS.betas)
    optim_D = optim.Adam(net_D.parameters(), lr=FLAGS.lr_D, betas=FLAGS.betas)
    sched_G = optim.lr_scheduler.LambdaLR(optim_G, lambda step: 1 - step / FLAGS.total_steps)
    sched_D = optim.lr_scheduler.LambdaLR(optim_D, lambda step: 1 - step / FLAGS.total_steps)

    os.makedirs(os.path.join(FLAGS.logdir, "sample"))
    sample_z = torch.randn(FLAGS.sample_size, FLAGS.z_dim).to(device)

    looper = infiniteloop(dataloader)
    with trange(1, FLAGS.total_steps + 1, dynamic_ncols=True) as pbar:
        for step in pbar:
            # Discriminator
            for _ in range(FLAGS.n_dis):
                with torch.no_grad():
                    z = torch.randn(FLAGS.batch_size, FLAGS.z_dim).to(device)
                    fake = net_G(z).detach()
                real = next(looper).to(device)
                net_D_real = net_D(real)
                net_D_fake = net_D(fake)
                loss, _, _ = loss_fn(net_D_real, net_D_fake)

                optim_D.zero_grad()
                loss.backward()
                optim_D.step()

                pbar.set_postfix(loss="%.4f" % loss)

            # Generator
            z = torch.randn(FLAGS.batch_size * 2, FLAGS.z_dim).to(device)
            loss = loss_fn(net_D(net_G(z)))

            optim_G.zero_grad()
            loss.backward()
            optim_G.step()

            sched_G.step()
            sched_D.step()
            pbar.update(1)

            if step == 1 or step % FLAGS.sample_step == 0:
                fake = net_G(sample_z).cpu()

            if step == 1 or step % FLAGS.eval_step == 0:
                torch.save(
                    {
                        "net_G": net_G.state_dict(),
                        "net_D": net_D.state_dict(),
                        "optim_G": optim_G.state_dict(),
                        "optim_D": optim_D.state_dict(),
                        "sched_G": sched_G.state_dict(),
                        "sched_D": sched_D.state_dict(),
                    },
                    os.path.join(FLAGS.logdir, "model.pt"),
                )


if __name__ == "__main__":
    torch.manual_seed(0)  # its set_seed(FLAGS.seed)
    train()
