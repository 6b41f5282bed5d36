"""heykeetae/Self-Attention-GAN: its trainer.py Trainer.train (commit e78f98c) as written,
with small models in the form of its sagan_models.py (a Self_Attn layer with its gamma,
G and D returning their output and two attention maps, D's scores squeezed) without its
SpectralNorm wrapper, GPU moves (.cuda(), tensor2var), logging and saving; its data
loader replaced by random images in [-1, 1). With --adv_loss wgan-gp (its default) D's
optimizer steps twice an iteration: on D's losses, then on the gradient penalty alone.
G's transposed convolutions before BatchNorm and the attention's g_ have no bias here
unless --own_biases (its own have one): the softmax over each row and the BatchNorm take
such a bias out, so its gradient is rounding noise alone, which Adam turns into steps of
up to a learning rate: no computation in another order equals that in float32 (the port
decides such a script on its float64 repeat)."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

parser = argparse.ArgumentParser()
parser.add_argument("--adv_loss", type=str, default="wgan-gp", choices=["wgan-gp", "hinge"])
parser.add_argument("--total_step", type=int, default=1000000)
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--z_dim", type=int, default=8)
parser.add_argument("--lambda_gp", type=float, default=10)
parser.add_argument("--g_lr", type=float, default=0.0001)
parser.add_argument("--d_lr", type=float, default=0.0004)
parser.add_argument("--beta1", type=float, default=0.0)
parser.add_argument("--beta2", type=float, default=0.9)
parser.add_argument("--own_biases", action="store_true")  # the fixture's: sagan_models.py's
config = parser.parse_args()


class Self_Attn(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.f_ = nn.Conv2d(in_dim, in_dim, 1)
        self.g_ = nn.Conv2d(in_dim, in_dim, 1, bias=config.own_biases)
        self.h_ = nn.Conv2d(in_dim, in_dim, 1)
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        b_size, f_size = x.size(0), x.size(-1)
        f_x = self.f_(x).view(b_size, -1, f_size**2)
        g_x = self.g_(x).view(b_size, -1, f_size**2)
        attn_score = F.softmax(torch.bmm(f_x.permute(0, 2, 1), g_x), dim=-1)
        h_x = self.h_(x).view(b_size, -1, f_size**2)
        self_attn_map = torch.bmm(h_x, attn_score.permute(0, 2, 1)).view(b_size, -1, f_size, f_size)
        self_attn_map = self.gamma * self_attn_map + x
        return self_attn_map, attn_score


class Generator(nn.Module):
    def __init__(self, z_dim, conv_dim=8):
        super().__init__()
        self.l1 = nn.Sequential(
            nn.ConvTranspose2d(z_dim, conv_dim, 4, bias=config.own_biases),
            nn.BatchNorm2d(conv_dim),
            nn.ReLU(),
        )
        self.attn1 = Self_Attn(conv_dim)
        self.l2 = nn.Sequential(
            nn.ConvTranspose2d(conv_dim, 4, 4, 2, 1, bias=config.own_biases),
            nn.BatchNorm2d(4),
            nn.ReLU(),
        )
        self.attn2 = Self_Attn(4)
        self.last = nn.Sequential(nn.Conv2d(4, 1, 3, 1, 1), nn.Tanh())

    def forward(self, z):
        z = z.view(z.size(0), z.size(1), 1, 1)
        out = self.l1(z)
        out, p1 = self.attn1(out)
        out = self.l2(out)
        out, p2 = self.attn2(out)
        out = self.last(out)
        return out, p1, p2


class Discriminator(nn.Module):
    def __init__(self, conv_dim=4):
        super().__init__()
        self.l1 = nn.Sequential(nn.Conv2d(1, conv_dim, 4, 2, 1), nn.LeakyReLU(0.1))
        self.attn1 = Self_Attn(conv_dim)
        self.l2 = nn.Sequential(nn.Conv2d(conv_dim, conv_dim * 2, 4, 2, 1), nn.LeakyReLU(0.1))
        self.attn2 = Self_Attn(conv_dim * 2)
        self.last = nn.Sequential(nn.Conv2d(conv_dim * 2, 1, 2))

    def forward(self, x):
        out = self.l1(x)
        out, p1 = self.attn1(out)
        out = self.l2(out)
        out, p2 = self.attn2(out)
        out = self.last(out)
        return out.squeeze(), p1, p2


def tensor2var(x, grad=False):
    return Variable(x, requires_grad=grad)


class Trainer:
    def __init__(self, data_loader, config):
        self.data_loader = data_loader
        self.adv_loss = config.adv_loss
        self.z_dim = config.z_dim
        self.lambda_gp = config.lambda_gp
        self.total_step = config.total_step
        self.batch_size = config.batch_size
        self.g_lr, self.d_lr = config.g_lr, config.d_lr
        self.beta1, self.beta2 = config.beta1, config.beta2
        self.build_model()

    def train(self):
        # Data iterator
        data_iter = iter(self.data_loader)
        start = 0
        for step in range(start, self.total_step):
            # ================== Train D ================== #
            self.D.train()
            self.G.train()

            try:
                real_images, _ = next(data_iter)
            except StopIteration:
                data_iter = iter(self.data_loader)
                real_images, _ = next(data_iter)

            # Compute loss with real images
            # dr1, dr2, df1, df2, gf1, gf2 are attention scores
            real_images = tensor2var(real_images)
            d_out_real, dr1, dr2 = self.D(real_images)
            if self.adv_loss == "wgan-gp":
                d_loss_real = -torch.mean(d_out_real)
            elif self.adv_loss == "hinge":
                d_loss_real = torch.nn.ReLU()(1.0 - d_out_real).mean()

            # apply Gumbel Softmax
            z = tensor2var(torch.randn(real_images.size(0), self.z_dim))
            fake_images, gf1, gf2 = self.G(z)
            d_out_fake, df1, df2 = self.D(fake_images)

            if self.adv_loss == "wgan-gp":
                d_loss_fake = d_out_fake.mean()
            elif self.adv_loss == "hinge":
                d_loss_fake = torch.nn.ReLU()(1.0 + d_out_fake).mean()

            # Backward + Optimize
            d_loss = d_loss_real + d_loss_fake
            self.reset_grad()
            d_loss.backward()
            self.d_optimizer.step()

            if self.adv_loss == "wgan-gp":
                # Compute gradient penalty
                alpha = torch.rand(real_images.size(0), 1, 1, 1).expand_as(real_images)
                interpolated = Variable(
                    alpha * real_images.data + (1 - alpha) * fake_images.data, requires_grad=True
                )
                out, _, _ = self.D(interpolated)

                grad = torch.autograd.grad(
                    outputs=out,
                    inputs=interpolated,
                    grad_outputs=torch.ones(out.size()),
                    retain_graph=True,
                    create_graph=True,
                    only_inputs=True,
                )[0]

                grad = grad.view(grad.size(0), -1)
                grad_l2norm = torch.sqrt(torch.sum(grad**2, dim=1))
                d_loss_gp = torch.mean((grad_l2norm - 1) ** 2)

                # Backward + Optimize
                d_loss = self.lambda_gp * d_loss_gp

                self.reset_grad()
                d_loss.backward()
                self.d_optimizer.step()

            # ================== Train G and gumbel ================== #
            # Create random noise
            z = tensor2var(torch.randn(real_images.size(0), self.z_dim))
            fake_images, _, _ = self.G(z)

            # Compute loss with fake images
            g_out_fake, _, _ = self.D(fake_images)  # batch x n
            if self.adv_loss == "wgan-gp":
                g_loss_fake = -g_out_fake.mean()
            elif self.adv_loss == "hinge":
                g_loss_fake = -g_out_fake.mean()

            self.reset_grad()
            g_loss_fake.backward()
            self.g_optimizer.step()

            print(f"G_step [{step + 1}/{self.total_step}], d_out_real: {d_loss_real.item():.4f}")

    def build_model(self):
        self.G = Generator(self.z_dim)
        self.D = Discriminator()
        self.g_optimizer = torch.optim.Adam(
            filter(lambda p: p.requires_grad, self.G.parameters()),
            self.g_lr,
            [self.beta1, self.beta2],
        )
        self.d_optimizer = torch.optim.Adam(
            filter(lambda p: p.requires_grad, self.D.parameters()),
            self.d_lr,
            [self.beta1, self.beta2],
        )

    def reset_grad(self):
        self.d_optimizer.zero_grad()
        self.g_optimizer.zero_grad()


torch.manual_seed(0)  # (the fixture's: one run of the test is the next one)
dataset = torch.utils.data.TensorDataset(
    torch.rand(config.batch_size * 10, 1, 8, 8) * 2 - 1, torch.zeros(config.batch_size * 10)
)
data_loader = torch.utils.data.DataLoader(dataset, batch_size=config.batch_size, shuffle=True)
Trainer(data_loader, config).train()
