"""pytorch/examples ``dcgan/main.py``: the DCGAN example, as written and as the
posts quote it, and with R1 added as tutorials add it."""

from __future__ import annotations

import torch
from torch import nn

from .common import Batches, Latent, _Losses


def dcgan_example(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns",
                  r1: float = 0.0):  # fmt: skip
    """pytorch/examples ``dcgan/main.py``: D first on ``fake.detach()``, then G on the same fake.

    G's step runs ``D(fake)`` with D's weights still requiring grad, so D's weight
    gradients are computed there and thrown away by the next ``netD.zero_grad()``.
    ``r1 > 0`` adds R1 as :func:`dcgan_r1` says.
    """
    loss = _Losses(objective)
    for real in batches:
        # (1) Update D
        D.zero_grad()
        output_real = D(real)
        fake = G(latent(real.size(0)))
        output_fake = D(fake.detach())
        err_d = loss.d(D, real, fake.detach(), output_real, output_fake)
        if r1 > 0:
            x = real.detach().requires_grad_(True).view_as(real)  # a view: FlopCounter-safe
            (grad,) = torch.autograd.grad(D(x).sum(), x, create_graph=True)
            err_d = err_d + r1 / 2 * grad.reshape(grad.size(0), -1).square().sum(1).mean()
        err_d.backward()
        opt_d.step()
        # (2) Update G
        G.zero_grad()
        output_real = D(real) if loss.g_needs_real else None
        err_g = loss.g(fake, D(fake), output_real)
        err_g.backward()
        opt_g.step()
        loss.end_iteration()
    return loss.history


def pytorch_examples_dcgan(G, D, opt_g, opt_d, batches: Batches, nz: int,
                           sample_every: int = 100, real_label: float = 1,
                           fake_label: float = 0):  # fmt: skip
    """pytorch/examples ``dcgan/main.py`` (commit 13caa07) as written, one epoch: netD
    ends in a ``Sigmoid`` (``output.view(-1, 1).squeeze(1)``) and ``nn.BCELoss`` reads
    it; ``fixed_noise = torch.randn(batch, nz, 1, 1)`` before the loop; per batch
    ``errD_real.backward()`` on the real batch, noise from ``torch.randn`` (the global
    generator), ``errD_fake.backward()`` on ``fake.detach()``, D's step; G's step on the
    same ``fake`` (D not frozen); and every ``sample_every``-th batch a sample grid from
    ``netG(fixed_noise)`` (G in training mode: its BatchNorm statistics move).
    ganstep: ``d_first()`` with ``ns(probabilities=True)`` and
    ``latent=lambda n: torch.randn(n, nz, 1, 1)``, the sample forward in the user's loop.
    ``real_label`` and ``fake_label`` are the file's label convention (``real_label = 1``,
    ``fake_label = 0``), which its forks (and the DCGAN tutorial's, which writes them
    ``1.`` and ``0.``) set to 0.9 and 0.1 for two-sided label smoothing; its G step fills
    ``real_label`` too: ``NS(probabilities=True, real_label=0.9, fake_label=0.1,
    g_label=0.9)``.
    """
    criterion = nn.BCELoss()
    history = []
    fixed_noise = torch.randn(batches[0].size(0), nz, 1, 1, dtype=batches[0].dtype)
    for i, real_cpu in enumerate(batches):
        D.zero_grad()
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype)
        output = D(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        noise = torch.randn(batch_size, nz, 1, 1, dtype=real_cpu.dtype)
        fake = G(noise)
        label.fill_(fake_label)
        output = D(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        opt_d.step()
        G.zero_grad()
        label.fill_(real_label)
        output = D(fake)
        errG = criterion(output, label)
        errG.backward()
        opt_g.step()
        history.append({"loss_d": errD.item(), "loss_g": errG.item()})
        if i % sample_every == 0:
            G(fixed_noise)
    return history


def dcgan_r1(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns",
             r1: float = 0.1):  # fmt: skip
    """The DCGAN example with R1 added as tutorials add it: after the loss, a second
    forward of D on the real batch (requiring grad) for the penalty's gradient.
    ganstep takes the penalty from the first forward (``ns(r1=...)``)."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective, r1=r1)
