# ruff: noqa: E501, E731, B905, C408, UP028, B007  (written as rosinality writes it)
"""rosinality/stylegan2-pytorch: its train.py (commit 0ecf8ff) as written, with small
models in the form of its model.py (a mapping network, the w broadcast to every layer
or two mixed at random.randint's layer, noise drawn in each styled layer, a constant
input; a D with its minibatch standard deviation), without its CUDA ops, distributed
code, --augment, logging, sampling and checkpoints; its LMDB dataset replaced by random
images in [-1, 1). Its flags and their defaults are train.py's, but --batch 8 and
--d_reg_every 4 here, and --mixing: 0.9 is its default."""

import argparse
import math
import random

import torch
from torch import autograd, nn, optim
from torch.nn import functional as F
from torch.utils import data


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())

    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def sample_data(loader):
    while True:
        for batch in loader:
            yield batch


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)

    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    (grad_real,) = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()

    return grad_penalty


def g_nonsaturating_loss(fake_pred):
    loss = F.softplus(-fake_pred).mean()

    return loss


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
    (grad,) = autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True)
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))

    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)

    path_penalty = (path_lengths - path_mean).pow(2).mean()

    return path_penalty, path_mean.detach(), path_lengths


def make_noise(batch, latent_dim, n_noise, device):
    if n_noise == 1:
        return torch.randn(batch, latent_dim, device=device)

    noises = torch.randn(n_noise, batch, latent_dim, device=device).unbind(0)

    return noises


def mixing_noise(batch, latent_dim, prob, device):
    if prob > 0 and random.random() < prob:
        return make_noise(batch, latent_dim, 2, device)

    else:
        return [make_noise(batch, latent_dim, 1, device)]


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()

        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()

        return image + self.weight * noise


class StyledConv(nn.Module):
    """model.py's StyledConv made small: the style scales the input channels (its
    modulation without demodulation), a convolution, its noise, a biased leaky ReLU."""

    def __init__(self, in_channel, out_channel, style_dim, upsample=False):
        super().__init__()

        self.upsample = upsample
        self.modulation = nn.Linear(style_dim, in_channel)
        self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=1, bias=False)
        self.noise = NoiseInjection()
        self.bias = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input, style, noise=None):
        if self.upsample:
            input = F.interpolate(input, scale_factor=2)
        out = self.conv(input * self.modulation(style)[:, :, None, None])
        out = self.noise(out, noise=noise)
        out = F.leaky_relu(out + self.bias, 0.2) * math.sqrt(2)

        return out


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim):
        super().__init__()

        self.modulation = nn.Linear(style_dim, in_channel)
        self.conv = nn.Conv2d(in_channel, 3, 1)

    def forward(self, input, style, skip=None):
        out = self.conv(input * self.modulation(style)[:, :, None, None])

        if skip is not None:
            out = out + F.interpolate(skip, scale_factor=2)

        return out


class Generator(nn.Module):
    def __init__(self, size, style_dim, n_mlp, channel=8):
        super().__init__()

        self.size = size
        self.style_dim = style_dim

        layers = []
        for i in range(n_mlp):
            layers.append(nn.Linear(style_dim, style_dim))
            layers.append(nn.LeakyReLU(0.2))
        self.style = nn.Sequential(*layers)

        self.input = nn.Parameter(torch.randn(1, channel, 4, 4))
        self.conv1 = StyledConv(channel, channel, style_dim)
        self.to_rgb1 = ToRGB(channel, style_dim)

        self.log_size = int(math.log(size, 2))
        self.num_layers = (self.log_size - 2) * 2 + 1

        self.convs = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        for i in range(3, self.log_size + 1):
            self.convs.append(StyledConv(channel, channel, style_dim, upsample=True))
            self.convs.append(StyledConv(channel, channel, style_dim))
            self.to_rgbs.append(ToRGB(channel, style_dim))

        self.n_latent = self.log_size * 2 - 2

    def forward(
        self, styles, return_latents=False, inject_index=None, input_is_latent=False, noise=None
    ):
        if not input_is_latent:
            styles = [self.style(s) for s in styles]

        if noise is None:
            noise = [None] * self.num_layers

        if len(styles) < 2:
            inject_index = self.n_latent

            if styles[0].ndim < 3:
                latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)

            else:
                latent = styles[0]

        else:
            if inject_index is None:
                inject_index = random.randint(1, self.n_latent - 1)

            latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)

            latent = torch.cat([latent, latent2], 1)

        out = self.input.repeat(latent.shape[0], 1, 1, 1)
        out = self.conv1(out, latent[:, 0], noise=noise[0])

        skip = self.to_rgb1(out, latent[:, 1])

        i = 1
        for conv1, conv2, noise1, noise2, to_rgb in zip(
            self.convs[::2], self.convs[1::2], noise[1::2], noise[2::2], self.to_rgbs
        ):
            out = conv1(out, latent[:, i], noise=noise1)
            out = conv2(out, latent[:, i + 1], noise=noise2)
            skip = to_rgb(out, latent[:, i + 2], skip)

            i += 2

        image = skip

        if return_latents:
            return image, latent

        else:
            return image, None


class Discriminator(nn.Module):
    def __init__(self, size, channel=8):
        super().__init__()

        convs = [nn.Conv2d(3, channel, 1), nn.LeakyReLU(0.2)]
        for _ in range(int(math.log(size, 2)), 2, -1):
            convs += [nn.Conv2d(channel, channel, 3, 2, 1), nn.LeakyReLU(0.2)]
        self.convs = nn.Sequential(*convs)

        self.stddev_group = 4
        self.stddev_feat = 1

        self.final_linear = nn.Sequential(
            nn.Linear((channel + 1) * 4 * 4, channel),
            nn.LeakyReLU(0.2),
            nn.Linear(channel, 1),
        )

    def forward(self, input):
        out = self.convs(input)

        batch, channel, height, width = out.shape
        group = min(batch, self.stddev_group)
        stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat, height, width)
        stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
        stddev = stddev.mean([2, 3, 4], keepdims=True).squeeze(2)
        stddev = stddev.repeat(group, 1, height, width)
        out = torch.cat([out, stddev], 1)

        out = out.view(batch, -1)
        out = self.final_linear(out)

        return out


def train(args, loader, generator, discriminator, g_optim, d_optim, g_ema, device):
    loader = sample_data(loader)

    pbar = range(args.iter)

    mean_path_length = 0

    r1_loss = torch.tensor(0.0, device=device)
    path_loss = torch.tensor(0.0, device=device)
    path_lengths = torch.tensor(0.0, device=device)
    loss_dict = {}

    g_module = generator

    accum = 0.5 ** (32 / (10 * 1000))

    for idx in pbar:
        i = idx + args.start_iter

        if i > args.iter:
            print("Done!")

            break

        real_img = next(loader)
        real_img = real_img.to(device)

        requires_grad(generator, False)
        requires_grad(discriminator, True)

        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)

        real_img_aug = real_img

        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img_aug)
        d_loss = d_logistic_loss(real_pred, fake_pred)

        loss_dict["d"] = d_loss
        loss_dict["real_score"] = real_pred.mean()
        loss_dict["fake_score"] = fake_pred.mean()

        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()

        d_regularize = i % args.d_reg_every == 0

        if d_regularize:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)
            r1_loss = d_r1_loss(real_pred, real_img)

            discriminator.zero_grad()
            (args.r1 / 2 * r1_loss * args.d_reg_every + 0 * real_pred[0]).backward()

            d_optim.step()

        loss_dict["r1"] = r1_loss

        requires_grad(generator, True)
        requires_grad(discriminator, False)

        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)

        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)

        loss_dict["g"] = g_loss

        generator.zero_grad()
        g_loss.backward()
        g_optim.step()

        g_regularize = i % args.g_reg_every == 0

        if g_regularize:
            path_batch_size = max(1, args.batch // args.path_batch_shrink)
            noise = mixing_noise(path_batch_size, args.latent, args.mixing, device)
            fake_img, latents = generator(noise, return_latents=True)

            path_loss, mean_path_length, path_lengths = g_path_regularize(
                fake_img, latents, mean_path_length
            )

            generator.zero_grad()
            weighted_path_loss = args.path_regularize * args.g_reg_every * path_loss

            if args.path_batch_shrink:
                weighted_path_loss += 0 * fake_img[0, 0, 0, 0]

            weighted_path_loss.backward()

            g_optim.step()

        loss_dict["path"] = path_loss
        loss_dict["path_length"] = path_lengths.mean()

        accumulate(g_ema, g_module, accum)


if __name__ == "__main__":
    device = "cpu"

    parser = argparse.ArgumentParser()

    parser.add_argument("--iter", type=int, default=800000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--r1", type=float, default=10)
    parser.add_argument("--path_regularize", type=float, default=2)
    parser.add_argument("--path_batch_shrink", type=int, default=2)
    parser.add_argument("--d_reg_every", type=int, default=4)
    parser.add_argument("--g_reg_every", type=int, default=4)
    parser.add_argument("--mixing", type=float, default=0.9)
    parser.add_argument("--lr", type=float, default=0.002)

    args = parser.parse_args()

    args.latent = 16
    args.n_mlp = 2

    args.start_iter = 0

    torch.manual_seed(0)
    random.seed(0)

    generator = Generator(args.size, args.latent, args.n_mlp).to(device)
    discriminator = Discriminator(args.size).to(device)
    g_ema = Generator(args.size, args.latent, args.n_mlp).to(device)
    g_ema.eval()
    accumulate(g_ema, generator, 0)

    g_reg_ratio = args.g_reg_every / (args.g_reg_every + 1)
    d_reg_ratio = args.d_reg_every / (args.d_reg_every + 1)

    g_optim = optim.Adam(
        generator.parameters(),
        lr=args.lr * g_reg_ratio,
        betas=(0**g_reg_ratio, 0.99**g_reg_ratio),
    )
    d_optim = optim.Adam(
        discriminator.parameters(),
        lr=args.lr * d_reg_ratio,
        betas=(0**d_reg_ratio, 0.99**d_reg_ratio),
    )

    dataset = torch.rand(256, 3, args.size, args.size) * 2 - 1
    loader = data.DataLoader(
        dataset,
        batch_size=args.batch,
        sampler=data.RandomSampler(dataset),
        drop_last=True,
    )

    train(args, loader, generator, discriminator, g_optim, d_optim, g_ema, device)
