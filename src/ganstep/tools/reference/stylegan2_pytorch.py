"""rosinality/stylegan2-pytorch's training loop (``train.py``, commit 0ecf8ff), as written:
the StyleGAN2 most PyTorch users train, with its style mixing drawn by Python's
``random``, its lazy R1 and lazy path length each in a step of their own, and its
``g_ema``."""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F
from torch import autograd, nn

from .common import Batches


def requires_grad(model: nn.Module, flag: bool = True) -> None:
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1: nn.Module, model2: nn.Module, decay: float = 0.999) -> None:
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())

    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


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
    """G's styles for a batch: two z with probability ``prob`` (Python's ``random``), else
    one, in a list or tuple; z in torch's default dtype, as the source draws it."""
    if prob > 0 and random.random() < prob:
        return make_noise(batch, latent_dim, 2, device)

    else:
        return [make_noise(batch, latent_dim, 1, device)]


def rosinality_stylegan2(generator, discriminator, g_optim, d_optim, batches: Batches,
                         latent: int, mixing: float = 0.9, r1: float = 10.0,
                         path_regularize: float = 2.0, path_batch_shrink: int = 2,
                         d_reg_every: int = 16, g_reg_every: int = 4,
                         g_ema: nn.Module | None = None) -> list[dict[str, float]]:  # fmt: skip
    """``train()`` of rosinality/stylegan2-pytorch ``train.py`` (commit 0ecf8ff), one
    iteration per batch (its ``args.batch`` read as the batch's rows: its loader drops
    the last short batch), without ``--augment`` (its default) and its logging. The
    generator is called as the source's ``Generator``: ``generator(styles,
    return_latents=False) -> (image, latent or None)``, ``styles`` a list of one or two z
    (``mixing_noise``, with probability ``mixing`` for two), its inject index and its
    noise inputs drawn in its forward. Per iteration ``i``:

    - D's step on ``d_logistic_loss``: D on G's fakes first, then on the real batch;
    - every ``d_reg_every``-th (``i % d_reg_every == 0``) a step of its own on
      ``r1 / 2 * d_r1_loss * d_reg_every + 0 * real_pred[0]``, D forwarded again on the
      real batch made to require grad;
    - G's step on ``g_nonsaturating_loss``, on fresh ``mixing_noise``;
    - every ``g_reg_every``-th a step of its own on ``path_regularize * g_reg_every *
      path_loss + 0 * fake_img[0, 0, 0, 0]``: ``mixing_noise(batch // path_batch_shrink)``,
      ``generator(noise, return_latents=True)``, ``g_path_regularize`` (its noise, the
      gradient at the broadcast latents, the running mean starting at 0 and carrying
      the gradient within the step);
    - ``accumulate(g_ema, generator, 0.5 ** (32 / (10 * 1000)))`` when ``g_ema`` is given.

    The optimizers are the caller's (the source's Adam with ``lr * ratio`` and ``betas **
    ratio``, ``ratio = every / (every + 1)``). Rows: ``loss_d``, ``loss_g``, and where the
    iteration ran them ``r1``, ``path`` (the unweighted penalties), ``mean_path_length``.
    ganstep: ``d_first(reuse_fake=False)``, ``NS(r1=r1, r1_every=d_reg_every)``,
    ``d_order="fake_first"``, ``latent=lambda n: mixing_noise(n, latent, mixing, device)``,
    G called ``generator(list(styles))[0]``, and ``g_regularizer=PathLength(
    path_regularize, g_reg_every, shrink=path_batch_shrink, z_draw="shrunk",
    images_and_latents=...)``."""
    mean_path_length = 0
    accum = 0.5 ** (32 / (10 * 1000))
    history = []
    for i, real_img in enumerate(batches):
        device = real_img.device
        batch = real_img.shape[0]
        row = {}

        requires_grad(generator, False)
        requires_grad(discriminator, True)

        noise = mixing_noise(batch, latent, mixing, device)
        fake_img, _ = generator(noise)
        real_img_aug = real_img

        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img_aug)
        d_loss = d_logistic_loss(real_pred, fake_pred)

        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()
        row["loss_d"] = d_loss.item()

        d_regularize = i % d_reg_every == 0

        if d_regularize:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)
            r1_loss = d_r1_loss(real_pred, real_img)

            discriminator.zero_grad()
            (r1 / 2 * r1_loss * d_reg_every + 0 * real_pred[0]).backward()

            d_optim.step()
            row["r1"] = r1_loss.item()

        requires_grad(generator, True)
        requires_grad(discriminator, False)

        noise = mixing_noise(batch, latent, mixing, device)
        fake_img, _ = generator(noise)

        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)

        generator.zero_grad()
        g_loss.backward()
        g_optim.step()
        row["loss_g"] = g_loss.item()

        g_regularize = i % g_reg_every == 0

        if g_regularize:
            path_batch_size = max(1, batch // path_batch_shrink)
            noise = mixing_noise(path_batch_size, latent, mixing, device)
            fake_img, latents = generator(noise, return_latents=True)

            path_loss, mean_path_length, path_lengths = g_path_regularize(
                fake_img, latents, mean_path_length
            )

            generator.zero_grad()
            weighted_path_loss = path_regularize * g_reg_every * path_loss

            if path_batch_shrink:
                weighted_path_loss += 0 * fake_img[0, 0, 0, 0]

            weighted_path_loss.backward()

            g_optim.step()
            row["path"] = path_loss.item()
            row["mean_path_length"] = mean_path_length.item()

        if g_ema is not None:
            accumulate(g_ema, generator, accum)
        history.append(row)
    return history
