"""The loops of other public codebases (Lightning, pytorch-CycleGAN-and-pix2pix,
BigGAN-PyTorch, StyleGAN2-ADA, RelativisticGAN, BasicSR, data-efficient-gans,
pytorch-gan-collections, taming-transformers, HiFi-GAN, Udacity's GAN notebook, the WGAN
authors' WassersteinGAN, Self-Attention-GAN, Natsu6767's InfoGAN-PyTorch), each as its
source file is."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .common import (
    Batches,
    Latent,
    Pairs,
    _as_floats,
    _bce,
    _Losses,
    _set_requires_grad,
    gradient_penalty,
    relativistic_loss,
)


def lightning_g_first(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """Lightning's GAN example with manual optimization: G steps, then D on ``G(z)``
    regenerated from the same z by the updated G.

    ``toggle_optimizer`` switches off the parameters of the module not being trained,
    so neither step computes the other module's weight gradients.
    """
    loss = _Losses(objective)
    for imgs in batches:
        z = latent(imgs.size(0))
        # train generator
        _set_requires_grad(D, False)
        fake = G(z)
        real_out = D(imgs) if loss.g_needs_real else None
        g_loss = loss.g(fake, D(fake), real_out)
        g_loss.backward()
        opt_g.step()
        opt_g.zero_grad()
        _set_requires_grad(D, True)
        # train discriminator
        _set_requires_grad(G, False)
        fake = G(z).detach()
        d_loss = loss.d(D, imgs, fake, D(imgs), D(fake))
        d_loss.backward()
        opt_d.step()
        opt_d.zero_grad()
        _set_requires_grad(G, True)
        loss.end_iteration()
    return loss.history


def lightning_gan_example(G, D, opt_g, opt_d, batches: Batches, latent: Latent):
    """Lightning's GAN example as its source writes ``GAN.training_step``
    (examples/pytorch/domain_templates/generative_adversarial_net.py): z drawn first,
    G's step on ``binary_cross_entropy_with_logits(D(G(z)), ones)`` with D toggled off,
    then D's on the real batch and on ``G(z).detach()`` from the same z (G toggled
    off), its loss the mean of the two BCEs with logits. ``zero_grad`` before each
    backward, as it writes it. ganstep: ``g_first(reuse_z=True)``,
    ``NS(bce_with_logits=True)``, ``d_scale=0.5``."""
    history = []
    for imgs in batches:
        z = latent(imgs.shape[0])
        valid = torch.ones(imgs.size(0), 1, dtype=imgs.dtype)
        _set_requires_grad(D, False)  # toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(D(G(z)), valid)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        _set_requires_grad(D, True)  # untoggle_optimizer(opt_g)
        _set_requires_grad(G, False)  # toggle_optimizer(opt_d)
        real_loss = F.binary_cross_entropy_with_logits(D(imgs), valid)
        fake = torch.zeros(imgs.size(0), 1, dtype=imgs.dtype)
        fake_loss = F.binary_cross_entropy_with_logits(D(G(z).detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        _set_requires_grad(G, True)  # untoggle_optimizer(opt_d)
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def lightning_bolts_dcgan(generator, discriminator, opt_disc, opt_gen, batches: Pairs,
                          latent_dim: int):  # fmt: skip
    """Lightning-Universe/lightning-bolts ``src/pl_bolts/models/gans/dcgan/dcgan_module.py``
    (commit 0df73ec), ``DCGAN.training_step`` under Lightning 1.x's automatic optimization
    with two optimizers (``configure_optimizers`` returns ``[opt_disc, opt_gen]``): for
    each in turn, its ``toggle_optimizer`` (the other module's parameters off), the
    closure (``training_step``, ``zero_grad``, ``backward``), its step. ``batches`` are
    ``(real, labels)``; the labels are dropped. D's step (``optimizer_idx == 0``):
    ``BCELoss(D(real), 1)``, then noise ``torch.randn(n, latent_dim)`` viewed as
    ``(n, latent_dim, 1, 1)`` (its ``forward``), ``BCELoss(D(G(noise)), 0)``, their sum
    (the fakes not detached: G's parameters are toggled off); G's step (``optimizer_idx
    == 1``) on noise drawn anew, ``BCELoss(D(G(noise)), 1)``. D ends in a Sigmoid.
    ganstep: ``d_first(reuse_fake=False)``, ``ns(probabilities=True)`` (D's forward on
    the real batch comes before the noise: ``d_order="real_g_fake"``, the same where
    nothing in D draws)."""
    criterion = nn.BCELoss()

    def fake_pred(n: int, like: Tensor) -> Tensor:  # its _get_fake_pred
        noise = torch.randn(n, latent_dim, dtype=like.dtype)  # its _get_noise
        return discriminator(generator(noise.view(*noise.shape, 1, 1)))

    history = []
    for real, _ in batches:
        # optimizer_idx 0: toggle_optimizer(opt_disc), the closure, opt_disc.step()
        _set_requires_grad(generator, False)
        real_pred = discriminator(real)
        real_loss = criterion(real_pred, torch.ones_like(real_pred))
        fake = fake_pred(len(real), real)
        disc_loss = real_loss + criterion(fake, torch.zeros_like(fake))
        opt_disc.zero_grad()
        disc_loss.backward()
        opt_disc.step()
        _set_requires_grad(generator, True)
        # optimizer_idx 1: toggle_optimizer(opt_gen), the closure, opt_gen.step()
        _set_requires_grad(discriminator, False)
        fake = fake_pred(len(real), real)
        gen_loss = criterion(fake, torch.ones_like(fake))
        opt_gen.zero_grad()
        gen_loss.backward()
        opt_gen.step()
        _set_requires_grad(discriminator, True)
        history.append({"loss_d": disc_loss.item(), "loss_g": gen_loss.item()})
    return history


def xchhuang_3dgan(G, D, D_solver, G_solver, batches: Batches, latent: Latent,
                   d_thresh: float = 0.8, soft_label: bool = False):  # fmt: skip
    """xchhuang/simple-pytorch-3dgan ``src/trainer.py`` (commit 927360a), one epoch of its
    loop: Z drawn (``generateZ``: ``latent``, ``torch.Tensor(n, z_dim).normal_(0, 0.33)``
    there), ``D(X)``, then ``D(G(Z))`` not detached; ``BCELoss`` against ones and zeros
    (D ends in a Sigmoid, its output squeezed); D's accuracy, the share of real scores
    >= 0.5 and fake scores <= 0.5, and only while it is below ``d_thresh`` (0.8, its
    ``params.py``) ``D.zero_grad()``, the backward and ``D_solver.step()``. Then G's step
    on Z drawn anew, ``BCELoss(D(G(Z)), real_labels)`` (``D.zero_grad()`` and
    ``G.zero_grad()`` before its backward, which takes D's weight gradients too). With
    ``soft_label`` (False in its ``params.py``) the labels are drawn each iteration from
    U(0.7, 1.2) and U(0, 0.3) after D's forwards, G trained against the drawn real ones:
    no Step draws labels so. ganstep: ``d_first(reuse_fake=False)``,
    ``ns(probabilities=True)``, ``d_step_if`` reading D's accuracy from the step's view."""
    criterion_D = nn.BCELoss()
    history = []
    for X in batches:
        batch = X.size()[0]
        Z = latent(batch)
        # Train the discriminator
        d_real = D(X)
        fake = G(Z)
        d_fake = D(fake)
        real_labels = torch.ones_like(d_real)
        fake_labels = torch.zeros_like(d_fake)
        if soft_label:
            real_labels = torch.Tensor(batch).uniform_(0.7, 1.2).to(X)
            fake_labels = torch.Tensor(batch).uniform_(0, 0.3).to(X)
        d_real_loss = criterion_D(d_real, real_labels)
        d_fake_loss = criterion_D(d_fake, fake_labels)
        d_loss = d_real_loss + d_fake_loss
        d_real_acu = torch.ge(d_real.squeeze(), 0.5).float()
        d_fake_acu = torch.le(d_fake.squeeze(), 0.5).float()
        d_total_acu = torch.mean(torch.cat((d_real_acu, d_fake_acu), 0))
        stepped = bool(d_total_acu < d_thresh)
        if stepped:
            D.zero_grad()
            d_loss.backward()
            D_solver.step()
        # Train the generator
        Z = latent(batch)
        fake = G(Z)
        d_fake = D(fake)
        adv_g_loss = criterion_D(d_fake, real_labels)
        D.zero_grad()
        G.zero_grad()
        adv_g_loss.backward()
        G_solver.step()
        history.append({"loss_d": d_loss.item(), "loss_g": adv_g_loss.item(),
                        "d_step": float(stepped)})  # fmt: skip
    return history


def pix2pix(G, D, opt_g, opt_d, batches: Pairs, lambda_l1: float = 100.0):
    """junyanz/pytorch-CycleGAN-and-pix2pix ``Pix2PixModel.optimize_parameters``.

    ``batches`` are (real_B, real_A): the target and the source image. G maps A to B
    (no z); D is a PatchGAN on ``cat(A, B)`` along channels, judged by ``GANLoss``
    ('vanilla': BCE with logits against a map of ones or zeros, the mean over every
    element). D steps on the fake first, then the real, with the loss halved; G steps
    with D frozen (``set_requires_grad``) on GAN + 100 L1. ganstep: ``d_first()`` with
    ``latent=None``, ``condition="real"``, ``d_scale=0.5`` and an L1 term.
    """
    history = []
    for real_B, real_A in batches:
        fake_B = G(real_A)  # forward()
        # backward_D
        _set_requires_grad(D, True)
        opt_d.zero_grad()
        pred_fake = D(torch.cat((real_A, fake_B), 1).detach())
        loss_D_fake = _bce(pred_fake, 0.0)
        pred_real = D(torch.cat((real_A, real_B), 1))
        loss_D_real = _bce(pred_real, 1.0)
        loss_D = (loss_D_fake + loss_D_real) * 0.5
        loss_D.backward()
        opt_d.step()
        # backward_G
        _set_requires_grad(D, False)
        opt_g.zero_grad()
        loss_G_GAN = _bce(D(torch.cat((real_A, fake_B), 1)), 1.0)
        loss_G_L1 = F.l1_loss(fake_B, real_B) * lambda_l1
        loss_G = loss_G_GAN + loss_G_L1
        loss_G.backward()
        opt_g.step()
        _set_requires_grad(D, True)
        history.append({"loss_d": loss_D.item(), "loss_g": loss_G.item(), "l1": loss_G_L1.item()})
    return history


def biggan_hinge(G, D, opt_g, opt_d, batches: Pairs, latent: Latent, labels: Latent,
                 d_steps: int = 2, accumulations: int = 1):  # fmt: skip
    """ajbrock/BigGAN-PyTorch ``train_fns.GAN_training_function``: ``num_D_steps`` D steps,
    each on fresh z and sampled labels with G under ``no_grad`` and one D call on
    ``cat([G_z, x])`` (fake first) split in two; then a G step on fresh z and labels.
    Hinge losses; a projection D takes ``D(x, y)``. With ``accumulations = k``
    (``num_D_accumulations`` = ``num_G_accumulations``) each step's batch is cut into k
    micro-batches, each with its own z and labels, its loss divided by k and
    backpropagated, then one optimizer step. ganstep: ``d_first(d_steps=k,
    reuse_fake=False)``, ``condition=labels`` (``concat=True, d_order="fake_first"`` for
    the single D call, ``accumulate=k``). ``batches`` has ``d_steps`` pairs per iteration.
    """
    history = []
    for start in range(0, len(batches) - d_steps + 1, d_steps):
        row = {}
        _set_requires_grad(D, True)
        _set_requires_grad(G, False)
        for x_all, y_all in batches[start : start + d_steps]:
            opt_d.zero_grad()
            xs, ys = torch.chunk(x_all, accumulations), torch.chunk(y_all, accumulations)
            D_loss_total = 0.0
            for x, y in zip(xs, ys, strict=True):
                n = x.size(0)
                z_, y_ = latent(n), labels(n)
                with torch.no_grad():
                    G_z = G(z_, y_)
                D_out = D(torch.cat([G_z, x], 0), torch.cat([y_, y], 0))
                D_fake, D_real = torch.split(D_out, [n, n])
                D_loss_real = torch.mean(F.relu(1.0 - D_real))
                D_loss_fake = torch.mean(F.relu(1.0 + D_fake))
                D_loss = (D_loss_real + D_loss_fake) / float(accumulations)
                D_loss.backward()
                D_loss_total += D_loss.item()
            opt_d.step()
            row["loss_d"] = D_loss_total
        _set_requires_grad(D, False)
        _set_requires_grad(G, True)
        opt_g.zero_grad()
        n_all = batches[start + d_steps - 1][0].size(0)
        G_loss_total = 0.0
        for _ in range(accumulations):
            n = n_all // accumulations
            z_, y_ = latent(n), labels(n)
            G_loss = -torch.mean(D(G(z_, y_), y_)) / float(accumulations)
            G_loss.backward()
            G_loss_total += G_loss.item()
        opt_g.step()
        _set_requires_grad(D, True)
        row["loss_g"] = G_loss_total
        history.append(row)
    return history


def lightning_conditional_g_first(G, D, opt_g, opt_d, batches: Pairs, latent: Latent):
    """Lightning's GAN example made conditional as its users write it: a batch is
    ``(imgs, labels)``; G steps on ``G(z, labels)`` (D toggled off), then D on the real
    batch and on ``G(z, labels)`` regenerated by the updated G from the same z.
    Non-saturating losses. ganstep: ``g_first(reuse_z=True)`` with ``condition="real"``.
    """
    history = []
    for imgs, labels in batches:
        z = latent(imgs.size(0))
        # generator (toggle_optimizer: D's weights do not require grad)
        _set_requires_grad(D, False)
        opt_g.zero_grad()
        g_loss = _bce(D(G(z, labels), labels), 1.0)
        g_loss.backward()
        opt_g.step()
        _set_requires_grad(D, True)
        # discriminator (G's weights do not require grad)
        _set_requires_grad(G, False)
        opt_d.zero_grad()
        real_loss = _bce(D(imgs, labels), 1.0)
        fake_loss = _bce(D(G(z, labels).detach(), labels), 0.0)
        d_loss = real_loss + fake_loss
        d_loss.backward()
        opt_d.step()
        _set_requires_grad(G, True)
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def stylegan2_r1(G, D, opt_g, opt_d, batches: Batches, latent: Latent, r1: float = 1.0,
                 r1_every: int = 1, augment_pipe=None, ada_target: float | None = None,
                 ada_interval: int = 4, ada_kimg: float = 500, pl_weight: float = 0.0,
                 G_reg_interval: int = 4, pl_batch_shrink: int = 2,
                 pl_decay: float = 0.01, style_mixing_prob: float = 0.0):  # fmt: skip
    """NVlabs/stylegan2-ada-pytorch's training loop and ``StyleGAN2Loss``, non-saturating,
    with R1 on the real batch, in its order: phase Gmain (fresh z), then Dmain, which
    forwards D on a fresh fake batch first and backpropagates its loss, then forwards D
    on the real batch, whose R1 comes from that same forward when ``r1_every == 1``
    (phase Dboth), and backpropagates ``(real_logits * 0 + loss_Dreal + loss_Dr1)``.
    Every ``r1_every``-th iteration a Dreg phase follows: D forward on the real batch,
    ``(real_logits * 0 + r1_penalty * r1 / 2).mean() * r1_every`` backward, its own
    optimizer step (build D's Adam with ``objectives.lazy_regularization``, as SG2-ADA
    scales lr and betas by ``mb_ratio``). The module of each phase alone requires grad.
    ganstep: ``g_first()`` with ``ns(r1=r1, r1_every=r1_every)`` and
    ``d_order="fake_first"``.

    ``augment_pipe`` is SG2-ADA's: ``run_D`` calls it on every image D sees (R1's
    gradient is taken at the image before it). With ``ada_target`` the training loop's
    ADA heuristic moves ``augment_pipe.p`` (a tensor): every real logit's sign in Dmain
    and Dreg is collected; after ``batch_idx += 1``, when ``batch_idx % ada_interval ==
    0``, ``p += sign(mean - ada_target) * batch_size * ada_interval / (ada_kimg *
    1000)``, clamped at 0. ganstep: ``augment=Adaptive(...)``.

    With ``pl_weight > 0`` a Greg phase follows Gmain every ``G_reg_interval``-th
    iteration: fresh z, its first ``n // pl_batch_shrink`` rows through
    ``G.mapping`` and ``G.synthesis``, path lengths of the gradient at ``ws`` against
    noise ``randn_like(img) / sqrt(H * W)``, ``pl_mean`` lerped by ``pl_decay``,
    ``(gen_img[:, 0, 0, 0] * 0 + pl_penalty * pl_weight).mean() * G_reg_interval``
    backward, G's own optimizer step. ganstep: ``g_regularizer=PathLength(pl_weight,
    G_reg_interval, mapping=G.mapping, synthesis=G.synthesis)``.

    ``style_mixing_prob > 0`` is ``StyleGAN2Loss.run_G``'s style mixing (training/loss.py,
    commit 375a436), in every phase that runs G: ``ws = G.mapping(z)``, a cutoff drawn by
    ``random_(1, num_ws)``, kept with probability ``style_mixing_prob`` (``torch.rand``)
    else ``num_ws``, and ``ws[:, cutoff:]`` replaced in place by the mapping of
    ``randn_like(z)``; Greg takes the gradient at the mixed ``ws``. ganstep: the same in
    G's forward and in the ``mapping`` PathLength is given.
    """

    def run_G(z):
        if style_mixing_prob == 0:
            return G(z)
        return G.synthesis(mixed_ws(z))

    def mixed_ws(z):
        ws = G.mapping(z)
        if style_mixing_prob > 0:
            cutoff = torch.empty([], dtype=torch.int64, device=ws.device).random_(1, ws.shape[1])
            cutoff = torch.where(torch.rand([], device=ws.device) < style_mixing_prob, cutoff,
                                 torch.full_like(cutoff, ws.shape[1]))  # fmt: skip
            ws[:, cutoff:] = G.mapping(torch.randn_like(z))[:, cutoff:]
        return ws

    def run_D(img):
        if augment_pipe is not None:
            img = augment_pipe(img)
        return D(img)

    history = []
    signs: list[Tensor] = []  # ada_stats' 'Loss/signs/real'
    batch_idx = 0
    pl_mean = torch.zeros([])
    for index, real in enumerate(batches):
        n = real.size(0)
        # Gmain
        _set_requires_grad(D, False)
        opt_g.zero_grad(set_to_none=True)
        loss_Gmain = F.softplus(-run_D(run_G(latent(n)))).mean()
        loss_Gmain.backward()
        opt_g.step()
        # Greg
        if pl_weight > 0 and index % G_reg_interval == 0:
            opt_g.zero_grad(set_to_none=True)
            gen_z = latent(n)
            batch_size = gen_z.shape[0] // pl_batch_shrink
            gen_ws = mixed_ws(gen_z[:batch_size])
            gen_img = G.synthesis(gen_ws)
            pl_noise = torch.randn_like(gen_img) / math.sqrt(gen_img.shape[2] * gen_img.shape[3])
            pl_grads = torch.autograd.grad(outputs=[(gen_img * pl_noise).sum()], inputs=[gen_ws],
                                           create_graph=True, only_inputs=True)[0]  # fmt: skip
            pl_lengths = pl_grads.square().sum(2).mean(1).sqrt()
            pl_mean_now = pl_mean.to(pl_lengths).lerp(pl_lengths.mean(), pl_decay)
            pl_mean = pl_mean_now.detach()
            pl_penalty = (pl_lengths - pl_mean_now).square()
            loss_Gpl = pl_penalty * pl_weight
            (gen_img[:, 0, 0, 0] * 0 + loss_Gpl).mean().mul(G_reg_interval).backward()
            opt_g.step()
        _set_requires_grad(D, True)
        # Dmain / Dboth: generated images first
        _set_requires_grad(G, False)
        opt_d.zero_grad(set_to_none=True)
        gen_logits = run_D(run_G(latent(n)))
        loss_Dgen = F.softplus(gen_logits)
        loss_Dgen.mean().backward()
        # then real images, with R1 from the same forward when it is due
        do_Dr1 = r1 > 0 and r1_every == 1
        real_img_tmp = real.detach().requires_grad_(do_Dr1)
        real_logits = run_D(real_img_tmp)
        signs.append(real_logits.detach().sign().flatten())
        loss_Dreal = F.softplus(-real_logits)
        loss_Dr1 = 0
        if do_Dr1:
            (r1_grads,) = torch.autograd.grad(real_logits.sum(), real_img_tmp, create_graph=True)
            r1_penalty = r1_grads.reshape(n, -1).square().sum(1)
            loss_Dr1 = r1_penalty * (r1 / 2)
        (real_logits * 0 + loss_Dreal + loss_Dr1).mean().backward()
        opt_d.step()
        loss_D = loss_Dgen.mean() + (loss_Dreal + loss_Dr1).mean()
        # Dreg
        if r1 > 0 and r1_every > 1 and index % r1_every == 0:
            opt_d.zero_grad(set_to_none=True)
            real_img_tmp = real.detach().requires_grad_(True)
            real_logits = run_D(real_img_tmp)
            signs.append(real_logits.detach().sign().flatten())
            (r1_grads,) = torch.autograd.grad(real_logits.sum(), real_img_tmp, create_graph=True)
            loss_Dr1 = r1_grads.reshape(n, -1).square().sum(1) * (r1 / 2)
            (real_logits.reshape(-1) * 0 + loss_Dr1).mean().mul(r1_every).backward()
            opt_d.step()
        _set_requires_grad(G, True)
        row = {"loss_d": loss_D.item(), "loss_g": loss_Gmain.item()}
        batch_idx += 1
        if ada_target is not None and batch_idx % ada_interval == 0:
            mean_sign = torch.cat(signs).double().mean().item()
            adjust = math.copysign(1.0, mean_sign - ada_target) if mean_sign != ada_target else 0
            adjust *= n * ada_interval / (ada_kimg * 1000)
            augment_pipe.p = (augment_pipe.p + adjust).clamp(min=0)
            signs = []
        if augment_pipe is not None and hasattr(augment_pipe, "p"):
            row["augment_p"] = float(augment_pipe.p)
        history.append(row)
    return history


def alexiajm_relativistic(G, D, opt_g, opt_d, batches: Batches, latent: Latent,
                          objective: str = "rasgan", d_iters: int = 1):  # fmt: skip
    """AlexiaJM/RelativisticGAN ``code/GAN_losses_iter.py``: ``Diters`` D steps, each on
    the next real batch and a fresh z (``y_pred = D(x)``, then ``D(fake.detach())``),
    then, D frozen, a G step on a fresh real batch and a fresh z, whose loss reads
    ``y_pred = D(x)``. ``batches`` has ``d_iters + 1`` batches per iteration.
    ganstep: ``d_first(d_steps=d_iters, reuse_fake=False, fresh_real=True)`` with the
    objective of the same name."""
    history = []
    source = iter(batches)
    for _ in range(len(batches) // (d_iters + 1)):
        for p in D.parameters():
            p.requires_grad = True
        for _ in range(d_iters):
            D.zero_grad()
            x = next(source)
            y_pred = D(x)
            fake = G(latent(x.size(0)))
            y_pred_fake = D(fake.detach())
            errD = relativistic_loss(objective, y_pred, y_pred_fake)
            errD.backward()
            opt_d.step()
        for p in D.parameters():
            p.requires_grad = False
        G.zero_grad()
        x = next(source)
        y_pred = D(x)
        fake = G(latent(x.size(0)))
        y_pred_fake = D(fake)
        errG = relativistic_loss(objective, y_pred_fake, y_pred)
        errG.backward()
        opt_g.step()
        history.append({"loss_d": errD.item(), "loss_g": errG.item()})
    for p in D.parameters():
        p.requires_grad = True
    return history


def basicsr_esrgan(G, D, opt_g, opt_d, batches: Pairs, gan_weight: float = 0.005,
                   pixel_weight: float = 0.01):  # fmt: skip
    """xinntao/BasicSR ``ESRGANModel.optimize_parameters`` (ESRGAN, Real-ESRGAN): D
    frozen, G steps on ``pixel_weight`` L1 plus ``gan_weight`` times the relativistic
    average loss, reading ``D(gt).detach()``; then D steps on the same ``output``,
    real then fake, each half with its own ``backward``, the other batch's mean read
    as a constant. ``batches`` are (gt, lq) pairs; G(lq) super-resolves (no z).
    ganstep: ``simultaneous()``, ``latent=None``, ``condition="real"``,
    ``d_conditional=False``, ``rasgan(detach_mean=True)``, ``g_scale=gan_weight``, an
    L1 term of weight ``pixel_weight`` and ``d_order="fake_first"``."""
    history = []
    for gt, lq in batches:
        # optimize net_g
        for p in D.parameters():
            p.requires_grad = False
        opt_g.zero_grad()
        output = G(lq)
        l_g_pix = pixel_weight * F.l1_loss(output, gt)
        real_d_pred = D(gt).detach()
        fake_g_pred = D(output)
        l_g_real = gan_weight * _bce(real_d_pred - torch.mean(fake_g_pred), 0.0)
        l_g_fake = gan_weight * _bce(fake_g_pred - torch.mean(real_d_pred), 1.0)
        l_g_gan = (l_g_real + l_g_fake) / 2
        l_g_total = l_g_pix + l_g_gan
        l_g_total.backward()
        opt_g.step()
        # optimize net_d
        for p in D.parameters():
            p.requires_grad = True
        opt_d.zero_grad()
        fake_d_pred = D(output).detach()
        real_d_pred = D(gt)
        l_d_real = _bce(real_d_pred - torch.mean(fake_d_pred), 1.0) * 0.5
        l_d_real.backward()
        fake_d_pred = D(output.detach())
        l_d_fake = _bce(fake_d_pred - torch.mean(real_d_pred.detach()), 0.0) * 0.5
        l_d_fake.backward()
        opt_d.step()
        history.append({"loss_d": (l_d_real + l_d_fake).item(), "loss_g": l_g_total.item(),
                        "l1": l_g_pix.item()})  # fmt: skip
    return history


esrgan = basicsr_esrgan  # its first name here: BasicSR's form, not PyTorch-GAN's esrgan.py


def feature_matching(G, D, opt_g, opt_d, batches: Batches, latent: Latent):
    """Feature matching as PyTorch ports of Salimans et al.'s improved-GAN write it:
    D(x) returns (logit, features); a D step on ``G(z).detach()`` (BCE), then a G step
    on a fresh z whose only loss is ``mean((mean f(G(z)) - mean f(x))^2)``.
    ganstep: ``d_first(reuse_fake=False)``, ``g_scale=0`` and the G term
    ``views.feature_matching()``."""
    history = []
    for x in batches:
        opt_d.zero_grad()
        out_real, _ = D(x)
        out_fake, _ = D(G(latent(x.size(0))).detach())
        loss_d = _bce(out_real, 1.0) + _bce(out_fake, 0.0)
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        _, mom_gen = D(G(latent(x.size(0))))
        _, mom_real = D(x)
        mom_gen, mom_real = torch.mean(mom_gen, dim=0), torch.mean(mom_real, dim=0)
        loss_fm = torch.mean((mom_gen - mom_real) ** 2)
        loss_fm.backward()
        opt_g.step()
        history.append({"loss_d": loss_d.item(), "loss_g": loss_fm.item()})
    return history


def diff_augment(x: Tensor, policy: str = "color,translation,cutout") -> Tensor:
    """``DiffAugment(x, policy)`` as mit-han-lab/data-efficient-gans writes it
    (``DiffAugment-stylegan2-pytorch/DiffAugment_pytorch.py``, commit ce71c7e; the
    top-level ``DiffAugment_pytorch.py`` sizes its shifts as ``h // 8``, the same for
    sides that are multiples of 8), kept apart from :mod:`ganstep.engine.augment` so that its
    tests compare two implementations: each function of the policy in order, each
    drawing from torch's global generator per sample, in this order:

    - color: brightness ``rand - 0.5``, saturation ``rand * 2`` around the per-pixel
      channel mean, contrast ``rand + 0.5`` around the sample mean;
    - translation: ``tx`` (rows) then ``ty`` (columns), each ``randint(-s, s + 1)``
      with ``s = int(side * 0.125 + 0.5)``; output pixel (i, j) is input pixel
      ``(i + tx, j + ty)`` of the image padded with one ring of zeros, indices clamped
      into the padded image (so a shift out of the image reads zeros);
    - cutout: a square of ``int(side * 0.5 + 0.5)``, offsets ``randint(0, side + (1 -
      size % 2))`` for rows then columns, the square's indices ``offset - size // 2 +
      k`` clamped into the image and zeroed in a mask.
    """
    for name in policy.split(","):
        for fn in _DIFF_AUGMENT[name]:
            x = fn(x)
    return x.contiguous()


def _per_sample(x: Tensor) -> Tensor:
    return torch.rand(x.size(0), 1, 1, 1, dtype=x.dtype, device=x.device)


def _brightness(x: Tensor) -> Tensor:
    return x + (_per_sample(x) - 0.5)


def _saturation(x: Tensor) -> Tensor:
    mean = x.mean(dim=1, keepdim=True)
    return (x - mean) * (_per_sample(x) * 2) + mean


def _contrast(x: Tensor) -> Tensor:
    mean = x.mean(dim=[1, 2, 3], keepdim=True)
    return (x - mean) * (_per_sample(x) + 0.5) + mean


def _grid(n: int, rows: int, cols: int, device) -> tuple[Tensor, Tensor, Tensor]:
    along = [torch.arange(k, dtype=torch.long, device=device) for k in (n, rows, cols)]
    return torch.meshgrid(*along, indexing="ij")


def _translation(x: Tensor) -> Tensor:
    n, _, h, w = x.shape
    sx, sy = int(h * 0.125 + 0.5), int(w * 0.125 + 0.5)
    tx = torch.randint(-sx, sx + 1, size=[n, 1, 1], device=x.device)
    ty = torch.randint(-sy, sy + 1, size=[n, 1, 1], device=x.device)
    b, i, j = _grid(n, h, w, x.device)
    i = torch.clamp(i + tx + 1, 0, h + 1)
    j = torch.clamp(j + ty + 1, 0, w + 1)
    padded = F.pad(x, [1, 1, 1, 1]).permute(0, 2, 3, 1)  # (n, h + 2, w + 2, channels)
    return padded[b, i, j].permute(0, 3, 1, 2)


def _cutout(x: Tensor) -> Tensor:
    n, _, h, w = x.shape
    size = int(h * 0.5 + 0.5), int(w * 0.5 + 0.5)
    ox = torch.randint(0, h + (1 - size[0] % 2), size=[n, 1, 1], device=x.device)
    oy = torch.randint(0, w + (1 - size[1] % 2), size=[n, 1, 1], device=x.device)
    b, i, j = _grid(n, size[0], size[1], x.device)
    i = torch.clamp(i + ox - size[0] // 2, min=0, max=h - 1)
    j = torch.clamp(j + oy - size[1] // 2, min=0, max=w - 1)
    mask = torch.ones(n, h, w, dtype=x.dtype, device=x.device)
    mask[b, i, j] = 0
    return x * mask.unsqueeze(1)


_DIFF_AUGMENT = {
    "color": (_brightness, _saturation, _contrast),
    "translation": (_translation,),
    "cutout": (_cutout,),
}


def diffaugment(G, D, opt_g, opt_d, batches: Batches, latent: Latent,
                policy: str = "color,translation,cutout", objective="ns"):  # fmt: skip
    """mit-han-lab/data-efficient-gans' README loop: ``DiffAugment(x, policy=policy)``
    (:func:`diff_augment`) before every D call; a D step on the real batch and
    ``G(z).detach()``, then a G step on a fresh z. ganstep: ``d_first(reuse_fake=False)``
    with ``augment=policy``."""
    loss = _Losses(objective)
    for reals in batches:
        n = reals.size(0)
        opt_d.zero_grad()
        fakes = G(latent(n))
        real_scores = D(diff_augment(reals, policy))
        fake_scores = D(diff_augment(fakes.detach(), policy))
        loss.d(D, reals, fakes.detach(), real_scores, fake_scores).backward()
        opt_d.step()
        opt_g.zero_grad()
        fakes = G(latent(n))
        real_scores = D(diff_augment(reals, policy)) if loss.g_needs_real else None
        fake_scores = D(diff_augment(fakes, policy))
        loss.g(fakes, fake_scores, real_scores).backward()
        opt_g.step()
        loss.end_iteration()
    return loss.history


def udacity_gan_mnist(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                      z_size: int):  # fmt: skip
    """udacity/deep-learning-v2-pytorch ``gan-mnist/MNIST_GAN_Solution.ipynb``'s training
    cell (and its losses cell), copied into many GAN tutorials: per batch, the images
    rescaled from [0, 1) to [-1, 1) (``real_images * 2 - 1``), D's step on
    ``D(real_images)`` with one-sided label smoothing (``real_loss(D_real,
    smooth=True)``: ``BCEWithLogitsLoss`` against 0.9, on the squeezed output) and on
    ``D(G(z))`` (not detached: its backward runs on into G, whose gradients
    ``g_optimizer.zero_grad()`` drops), then G's step on fresh z against 1
    (``real_loss(D_fake)``). z is ``np.random.uniform(-1, 1, size=(batch_size,
    z_size))`` as float (``rng`` stands for ``np.random``), drawn after D's real
    forward. ganstep: ``d_first(reuse_fake=False)``, ``NS(real_label=0.9)``, and
    ``d_order="real_g_fake"`` where D and G draw from torch's generator (the notebook's
    Dropout in both): G's masks then come after D's real forward, as here."""

    def real_loss(D_out, smooth=False):  # (its labels.cuda() where train_on_gpu: D's device)
        batch_size = D_out.size(0)
        if smooth:
            labels = torch.ones(batch_size, dtype=D_out.dtype, device=D_out.device) * 0.9
        else:
            labels = torch.ones(batch_size, dtype=D_out.dtype, device=D_out.device)
        criterion = nn.BCEWithLogitsLoss()
        return criterion(D_out.squeeze(), labels)

    def fake_loss(D_out):
        batch_size = D_out.size(0)
        labels = torch.zeros(batch_size, dtype=D_out.dtype, device=D_out.device)
        criterion = nn.BCEWithLogitsLoss()
        return criterion(D_out.squeeze(), labels)

    history = []
    for real_images in batches:
        batch_size = real_images.size(0)
        real_images = real_images * 2 - 1  # its "Important rescaling step", [0, 1) to [-1, 1)
        opt_d.zero_grad()
        D_real = D(real_images)
        d_real_loss = real_loss(D_real, smooth=True)
        z = _as_floats(rng.uniform(-1, 1, size=(batch_size, z_size)), real_images)
        fake_images = G(z)
        D_fake = D(fake_images)
        d_fake_loss = fake_loss(D_fake)
        d_loss = d_real_loss + d_fake_loss
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        z = _as_floats(rng.uniform(-1, 1, size=(batch_size, z_size)), real_images)
        fake_images = G(z)
        D_fake = D(fake_images)
        g_loss = real_loss(D_fake)
        g_loss.backward()
        opt_g.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def rasbt_gan_conv_smoothing(model, optim_gener, optim_discr, batches: Pairs,
                             latent_dim: int, img_shape: tuple[int, int, int]):  # fmt: skip
    """rasbt/deeplearning-models ``pytorch_ipynb/gan/gan-conv-smoothing.ipynb``'s training
    cell (commit 3a1262d): one ``model`` holding G and D, called through its
    ``generator_forward`` and ``discriminator_forward`` (D's logits ``.view(-1)``), each
    batch ``(features, targets)`` rescaled to [-1, 1] (``(features - 0.5)*2.``) and
    flattened, then viewed as images again for D. G's step first: z uniform in [-1, 1)
    (``torch.zeros(...).uniform_(-1.0, 1.0)``), BCE with logits of D's scores of G(z)
    against ``valid*0.9`` (G trained against the smoothed label too); then D's step on
    the real batch against ``valid*0.9`` and on G's fakes from G's step, detached,
    against 0, its loss ``0.5*(real_loss + fake_loss)``. Each ``zero_grad`` sits right
    before its backward, so G's backward leaves gradients in D that D's ``zero_grad``
    drops. Its ``valid`` and ``fake`` are ``.float()`` and its z torch's default dtype,
    that of its float32 images: made here in the batch's dtype, so float64 tests compare
    in float64. ganstep:
    ``simultaneous()`` (D's step reads the fakes of G's parameters before G's step),
    ``NS(real_label=0.9, g_label=0.9, bce_with_logits=True)``, ``d_scale=0.5``."""
    history = []
    for features, targets in batches:
        # Normalize images to [-1, 1] range
        features = (features - 0.5) * 2.0
        features = features.view(-1, math.prod(img_shape))
        valid = torch.ones(targets.size(0), dtype=features.dtype, device=features.device)
        fake = torch.zeros(targets.size(0), dtype=features.dtype, device=features.device)
        z = torch.zeros((targets.size(0), latent_dim), dtype=features.dtype).uniform_(-1.0, 1.0)
        generated_features = model.generator_forward(z.to(features.device))
        discr_pred = model.discriminator_forward(generated_features.view(targets.size(0),
                                                                         *img_shape))  # fmt: skip
        gener_loss = F.binary_cross_entropy_with_logits(discr_pred, valid * 0.9)
        optim_gener.zero_grad()
        gener_loss.backward()
        optim_gener.step()
        discr_pred_real = model.discriminator_forward(features.view(targets.size(0), *img_shape))
        real_loss = F.binary_cross_entropy_with_logits(discr_pred_real, valid * 0.9)
        discr_pred_fake = model.discriminator_forward(
            generated_features.view(targets.size(0), *img_shape).detach()
        )
        fake_loss = F.binary_cross_entropy_with_logits(discr_pred_fake, fake)
        discr_loss = 0.5 * (real_loss + fake_loss)
        optim_discr.zero_grad()
        discr_loss.backward()
        optim_discr.step()
        history.append({"loss_d": discr_loss.item(), "loss_g": gener_loss.item()})
    return history


def natsu6767_infogan(netG, discriminator, netD, netQ, optimG, optimD, batches: Batches,
                      rng: np.random.RandomState, num_z: int, num_dis_c: int, dis_c_dim: int,
                      num_con_c: int):  # fmt: skip
    """Natsu6767/InfoGAN-PyTorch's ``train.py`` loop (commit 9bd36e1) with its
    ``utils.py``'s ``noise_sample`` and ``NormalNLLLoss``: D is a body
    (``discriminator``) and two heads, ``netD`` (a probability) and ``netQ`` (the codes'
    logits, means and variances); ``optimD`` holds the body and ``netD``, ``optimG``
    holds G and ``netQ``. D's step: BCE on ``netD(discriminator(real_data))`` against 1,
    then on the detached fakes against 0, one backward each. G's step forwards the body
    again on the fakes, BCE against 1 plus the info loss in one backward: the cross
    entropy of each categorical code's logits (``q_logits[:, j*10 : j*10 + 10]``, as
    written for 10-way codes) against its drawn index, and 0.1 times the Gaussian NLL
    of the continuous codes. ``noise_sample`` draws z (``torch.randn``), each index by
    ``np.random.randint`` (``rng`` stands for ``np.random``) and the continuous codes
    (``torch.rand * 2 - 1``), on the real batch's device and dtype; the noise is
    ``(b, channels, 1, 1)``. Its labels are ``torch.full(..., real_label)`` with
    ``real_label = 1``, a float tensor in the PyTorch it was written for (an integer
    one since 1.7, which BCELoss refuses): float here, as it trained. ganstep:
    ``d_first()``, ``NS(probabilities=True)``, ``netQ`` in ``opt_g`` beside G (a module
    of neither G nor D that G's loss terms call) and the info loss as G's terms."""

    def noise_sample(batch_size, like):
        z = torch.randn(batch_size, num_z, 1, 1, dtype=like.dtype, device=like.device)
        idx = np.zeros((num_dis_c, batch_size))
        if num_dis_c != 0:
            dis_c = torch.zeros(batch_size, num_dis_c, dis_c_dim, dtype=like.dtype,
                                device=like.device)  # fmt: skip
            for i in range(num_dis_c):
                idx[i] = rng.randint(dis_c_dim, size=batch_size)
                dis_c[torch.arange(0, batch_size), i, idx[i]] = 1.0
            dis_c.squeeze_()
            if batch_size == 1:
                dis_c.unsqueeze_(0)
            dis_c = dis_c.view(batch_size, -1, 1, 1)
        if num_con_c != 0:
            con_c = torch.rand(batch_size, num_con_c, 1, 1, dtype=like.dtype,
                               device=like.device) * 2 - 1  # fmt: skip
        noise = z
        if num_dis_c != 0:
            noise = torch.cat((z, dis_c), dim=1)
        if num_con_c != 0:
            noise = torch.cat((noise, con_c), dim=1)
        return noise, idx

    def normal_nll(x, mu, var):  # its NormalNLLLoss
        logli = -0.5 * (var.mul(2 * np.pi) + 1e-6).log() - (x - mu).pow(2).div(var.mul(2.0) + 1e-6)
        return -(logli.sum(1).mean())

    criterionD, criterionQ_dis = nn.BCELoss(), nn.CrossEntropyLoss()
    real_label, fake_label = 1.0, 0.0
    history = []
    for data in batches:
        b_size = data.size(0)
        real_data = data
        optimD.zero_grad()
        label = torch.full((b_size,), real_label, dtype=data.dtype, device=data.device)
        output1 = discriminator(real_data)
        probs_real = netD(output1).view(-1)
        loss_real = criterionD(probs_real, label)
        loss_real.backward()
        label.fill_(fake_label)
        noise, idx = noise_sample(b_size, data)
        fake_data = netG(noise)
        output2 = discriminator(fake_data.detach())
        probs_fake = netD(output2).view(-1)
        loss_fake = criterionD(probs_fake, label)
        loss_fake.backward()
        D_loss = loss_real + loss_fake
        optimD.step()
        optimG.zero_grad()
        output = discriminator(fake_data)
        label.fill_(real_label)
        probs_fake = netD(output).view(-1)
        gen_loss = criterionD(probs_fake, label)
        q_logits, q_mu, q_var = netQ(output)
        target = torch.LongTensor(idx).to(data.device)
        dis_loss = 0
        for j in range(num_dis_c):
            dis_loss += criterionQ_dis(q_logits[:, j * 10 : j * 10 + 10], target[j])
        con_loss = 0
        if num_con_c != 0:
            con_loss = normal_nll(noise[:, num_z + num_dis_c * dis_c_dim :].view(-1, num_con_c),
                                  q_mu, q_var) * 0.1  # fmt: skip
        G_loss = gen_loss + dis_loss + con_loss
        G_loss.backward()
        optimG.step()
        history.append({"loss_d": D_loss.item(), "loss_g": G_loss.item()})
    return history


def emilien_dupont_wgan_gp(G, D, opt_g, opt_d, batches: Batches, latent: Latent,
                           gp_weight: float = 10.0, critic_iterations: int = 5):  # fmt: skip
    """EmilienDupont/wgan-gp ``training.py``'s ``Trainer`` (``_train_epoch``, one epoch of
    ``batches``): per batch ``num_steps += 1`` and a critic step (``sample_generator``:
    G on ``latent(n)`` with G's graph, D on the batch and on it, the penalty on
    interpolates of ``alpha = torch.rand(n, 1, ..., 1)`` with the samples' ``.data``,
    its norm as ``torch.sqrt(torch.sum(gradients ** 2, dim=1) + 1e-12)``; ``D_opt``
    steps on ``mean(D(fake)) - mean(D(x)) + gp``); every ``critic_iterations``-th batch
    (``num_steps % critic_iterations == 0``) a G step on fresh samples. ganstep:
    ``d_first(d_steps=critic_iterations, reuse_fake=False)`` with ``WGANGP(gp_weight,
    eps=1e-12)``, called with ``critic_iterations`` batches."""
    history, row, num_steps = [], {}, 0
    for data in batches:
        num_steps += 1
        batch_size = data.size()[0]
        generated_data = G(latent(batch_size))
        d_real = D(data)
        d_generated = D(generated_data)
        alpha = torch.rand(batch_size, *[1] * (data.dim() - 1), dtype=data.dtype)
        alpha = alpha.expand_as(data)
        interpolated = alpha * data.data + (1 - alpha) * generated_data.data
        interpolated.requires_grad_(True)
        prob_interpolated = D(interpolated)
        gradients = torch.autograd.grad(outputs=prob_interpolated, inputs=interpolated,
                                        grad_outputs=torch.ones_like(prob_interpolated),
                                        create_graph=True, retain_graph=True)[0]  # fmt: skip
        gradients = gradients.view(batch_size, -1)
        gradients_norm = torch.sqrt(torch.sum(gradients**2, dim=1) + 1e-12)
        gradient_penalty = gp_weight * ((gradients_norm - 1) ** 2).mean()
        opt_d.zero_grad()
        d_loss = d_generated.mean() - d_real.mean() + gradient_penalty
        d_loss.backward()
        opt_d.step()
        row["loss_d"] = d_loss.item()
        if num_steps % critic_iterations == 0:
            opt_g.zero_grad()
            d_generated = D(G(latent(batch_size)))
            g_loss = -d_generated.mean()
            g_loss.backward()
            opt_g.step()
            history.append({**row, "loss_g": g_loss.item()})
    return history


def lynnho_wgan_gp(G, D, opt_g, opt_d, batches: Batches, latent: Latent, n_d: int = 1,
                   gradient_penalty_weight: float = 10.0, gp_mode: str = "1-gp"):  # fmt: skip
    """LynnHo/DCGAN-LSGAN-WGAN-GP-DRAGAN-Pytorch's ``train.py`` with
    ``--adversarial_loss_mode wgan --gradient_penalty_mode 1-gp
    --gradient_penalty_sample_mode line``: per batch ``train_D`` (z, ``G(z).detach()``,
    D on the real batch then on the fakes, ``gan/loss.py``'s Wasserstein losses, and
    ``gan/gradient_penalty.py``'s penalty: ``_sample_line``'s ``real + alpha * (fake -
    real)`` with ``alpha = torch.rand([n, 1, ..., 1])``, the norm of
    ``grad.view(n, -1)``, ``((norm - 1) ** 2).mean()``), then ``train_G`` (a fresh z)
    where D's optimizer's step count is a multiple of ``n_d``
    (``D_optimizer.state_dict()['state'][0]['step'] % n_d == 0``). ``gp_mode`` is its
    penalty's form (``torchprob/gan/gradient_penalty.py``, commit edf855b): ``"1-gp"``
    (``_one_mean_gp``), ``"0-gp"`` (``_zero_mean_gp``: ``(norm**2).mean()``) or ``"lp"``
    (``_lipschitz_penalty``: ``(torch.max(torch.zeros_like(norm), norm - 1)**2).mean()``,
    its ``wgan-lp``). ganstep: ``d_first(d_steps=n_d, reuse_fake=False)`` with
    ``WGANGP(weight, interpolate="difference")`` (and ``center=0`` or
    ``one_sided=True``), called with ``n_d`` batches."""
    gp_fns = {
        "1-gp": lambda norm: ((norm - 1) ** 2).mean(),
        "0-gp": lambda norm: (norm**2).mean(),
        "lp": lambda norm: (torch.max(torch.zeros_like(norm), norm - 1) ** 2).mean(),
    }
    history, row = [], {}
    for x_real in batches:
        n = x_real.size(0)
        x_fake = G(latent(n)).detach()
        x_real_d_logit = D(x_real)
        x_fake_d_logit = D(x_fake)
        r_loss, f_loss = -x_real_d_logit.mean(), x_fake_d_logit.mean()
        alpha = torch.rand([n] + [1] * (x_real.dim() - 1), dtype=x_real.dtype)
        sample = x_real + alpha * (x_fake - x_real)
        sample.requires_grad = True
        pred = D(sample)
        grad = torch.autograd.grad(pred, sample, grad_outputs=torch.ones_like(pred),
                                   create_graph=True)[0]  # fmt: skip
        gp = gp_fns[gp_mode](grad.view(grad.size(0), -1).norm(p=2, dim=1))
        D_loss = (r_loss + f_loss) + gp * gradient_penalty_weight
        D.zero_grad()
        D_loss.backward()
        opt_d.step()
        row["loss_d"] = D_loss.item()
        if opt_d.state_dict()["state"][0]["step"] % n_d == 0:
            G_loss = -D(G(latent(n))).mean()
            G.zero_grad()
            G_loss.backward()
            opt_g.step()
            history.append({**row, "loss_g": G_loss.item()})
    return history


def lynnho_gan(G, D, opt_g, opt_d, batches: Batches, latent: Latent,
               adversarial_loss_mode: str = "gan", n_d: int = 1):  # fmt: skip
    """LynnHo/DCGAN-LSGAN-WGAN-GP-DRAGAN-Pytorch's ``train.py`` (commit 736f2ad) with
    ``--gradient_penalty_mode none`` and each ``--adversarial_loss_mode`` of its
    ``torchprob/gan/loss.py`` (commit 69d1bfd), as written: ``gan`` (``BCEWithLogitsLoss``
    against ones and zeros), ``hinge_v1`` (``torch.max(1 - r_logit, zeros)`` and
    ``torch.max(1 + f_logit, zeros)`` for D, ``torch.max(1 - f_logit, zeros)`` for G),
    ``hinge_v2`` (D's the same, G's ``-f_logit.mean()``), ``lsgan`` (``MSELoss`` against
    ones and zeros) and ``wgan``. Per batch ``train_D`` (z, ``G(z).detach()``, D on the
    real batch then on the fakes, ``D_loss = (r_loss + f_loss) + gp * weight`` with its
    ``gp`` the 0 tensor of mode ``none``), then ``train_G`` on a fresh z where ``it_d %
    n_d == 0``. Its z are ``args.batch_size`` rows in both steps: here the real batch's
    size, the same wherever a batch is full. ganstep: ``d_first(d_steps=n_d,
    reuse_fake=False)`` with ``NS(bce_with_logits=True)``, ``Hinge(g_hinge=True)``,
    ``Hinge()``, ``LSGAN()`` with ``d_scale=g_scale=2`` (``MSELoss`` is twice ganstep's
    halved squares) or ``Wasserstein()``, called with ``n_d`` batches."""
    bce, mse = nn.BCEWithLogitsLoss(), nn.MSELoss()

    def losses(r_logit, f_logit):  # its get_adversarial_losses_fn(mode): (d_loss_fn, g_loss_fn)
        if adversarial_loss_mode == "gan":
            return (bce(r_logit, torch.ones_like(r_logit)), bce(f_logit, torch.zeros_like(f_logit)))
        if adversarial_loss_mode in ("hinge_v1", "hinge_v2"):
            return (torch.max(1 - r_logit, torch.zeros_like(r_logit)).mean(),
                    torch.max(1 + f_logit, torch.zeros_like(f_logit)).mean())  # fmt: skip
        if adversarial_loss_mode == "lsgan":
            return (mse(r_logit, torch.ones_like(r_logit)), mse(f_logit, torch.zeros_like(f_logit)))
        return -r_logit.mean(), f_logit.mean()  # wgan

    def g_loss_fn(f_logit):
        if adversarial_loss_mode == "gan":
            return bce(f_logit, torch.ones_like(f_logit))
        if adversarial_loss_mode == "hinge_v1":
            return torch.max(1 - f_logit, torch.zeros_like(f_logit)).mean()
        if adversarial_loss_mode == "lsgan":
            return mse(f_logit, torch.ones_like(f_logit))
        return -f_logit.mean()  # hinge_v2, wgan

    history, it_d = [], 0
    for x_real in batches:
        n = x_real.size(0)
        x_fake = G(latent(n)).detach()
        x_real_d_logit = D(x_real)
        x_fake_d_logit = D(x_fake)
        x_real_d_loss, x_fake_d_loss = losses(x_real_d_logit, x_fake_d_logit)
        gp = torch.tensor(0, dtype=x_real.dtype, device=x_real.device)  # mode "none"
        D_loss = (x_real_d_loss + x_fake_d_loss) + gp * 10.0
        D.zero_grad()
        D_loss.backward()
        opt_d.step()
        it_d += 1
        if it_d % n_d == 0:
            G_loss = g_loss_fn(D(G(latent(n))))
            G.zero_grad()
            G_loss.backward()
            opt_g.step()
            history.append({"loss_d": D_loss.item(), "loss_g": G_loss.item()})
    return history


def zeleni9_wgan_gp(G, D, opt_g, opt_d, batches: Batches, latent: Latent, z_shape: tuple,
                    critic_iter: int = 5, lambda_term: float = 10.0):  # fmt: skip
    """Zeleni9/pytorch-wgan ``models/wgan_gradient_penalty.py``'s ``train`` (``batches``:
    ``critic_iter`` a G step, as its ``get_infinite_batches`` gives them): D's
    parameters switched on; per critic step ``D.zero_grad()``, a ``torch.rand`` z of
    ``z_shape`` drawn and never used, ``D(images).mean().backward(mone)``, then
    ``latent(n)`` and ``D(G(z)).mean().backward(one)``, and
    ``calculate_gradient_penalty`` on the batches' ``.data``: ``eta =
    torch.FloatTensor(n, 1, 1, 1).uniform_(0, 1)`` (float32 whatever the batch),
    ``eta * real + (1 - eta) * fake``, ``((gradients.norm(2, dim=1) - 1) ** 2).mean()
    * lambda_term`` on the unflattened gradient (a norm over channels at each pixel);
    then D switched off and a G step on a fresh z (``backward(mone)``). ganstep:
    ``d_first(d_steps=critic_iter, reuse_fake=False)`` with ``WGANGP(lambda_term,
    alpha=..., flatten=False)``, latent drawing the unused z first."""
    one = torch.tensor(1, dtype=torch.float)
    mone = one * -1
    history, it = [], iter(batches)
    for _ in range(len(batches) // critic_iter):
        for p in D.parameters():
            p.requires_grad = True
        for _ in range(critic_iter):
            D.zero_grad()
            images = next(it)
            n = images.size(0)
            torch.rand((n, *z_shape))  # z = torch.rand(...), overwritten before use
            d_loss_real = D(images).mean()
            d_loss_real.backward(mone)
            fake_images = G(latent(n))
            d_loss_fake = D(fake_images).mean()
            d_loss_fake.backward(one)
            real, fake = images.data, fake_images.data
            eta = torch.FloatTensor(n, 1, 1, 1).uniform_(0, 1)
            eta = eta.expand(n, real.size(1), real.size(2), real.size(3))
            interpolated = (eta * real + ((1 - eta) * fake)).requires_grad_(True)
            prob_interpolated = D(interpolated)
            gradients = torch.autograd.grad(
                outputs=prob_interpolated, inputs=interpolated,
                grad_outputs=torch.ones(prob_interpolated.size(), dtype=real.dtype),
                create_graph=True, retain_graph=True)[0]  # fmt: skip
            gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * lambda_term
            gradient_penalty.backward()
            d_loss = d_loss_fake - d_loss_real + gradient_penalty
            opt_d.step()
        for p in D.parameters():
            p.requires_grad = False
        G.zero_grad()
        g_loss = D(G(latent(n))).mean()
        g_loss.backward(mone)
        opt_g.step()
        history.append({"loss_d": d_loss.item(), "loss_g": -g_loss.item()})
    return history


def dcgan_tensorflow(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                     z_dim: int):  # fmt: skip
    """carpedm20/DCGAN-tensorflow ``model.py``'s ``DCGAN.train`` update (its non-MNIST
    branch), written in PyTorch as its graph computes it: per batch ``batch_z =
    np.random.uniform(-1, 1, [batch_size, z_dim])`` as float32 (``rng`` stands for
    ``np.random``; here in the batches' dtype), one ``d_optim`` run (``d_loss_real +
    d_loss_fake``: sigmoid cross-entropy with logits, each a mean, on D(images) and
    D(G(z)), only D's variables stepped), then ``g_optim`` run twice on the same
    ``batch_z`` ("to make sure that d_loss does not go to zero (different from paper)"),
    each forwarding G and D anew. ganstep: ``d_first(g_steps=2, g_steps_share_z=True)``
    with ``ns``."""
    history = []
    for images in batches:
        batch_z = _as_floats(rng.uniform(-1, 1, [images.size(0), z_dim]), images)
        opt_d.zero_grad()
        d_loss_real = _bce(D(images), 1.0)
        d_loss_fake = _bce(D(G(batch_z).detach()), 0.0)  # d_optim's var_list: D's alone
        d_loss = d_loss_real + d_loss_fake
        d_loss.backward()
        opt_d.step()
        for _ in range(2):  # g_optim, twice on one batch_z
            opt_g.zero_grad()
            g_loss = _bce(D(G(batch_z)), 1.0)
            g_loss.backward()
            opt_g.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def sngan_collections(G, D, opt_g, opt_d, batches: Batches, latent: Latent, n_dis: int = 5,
                      loss: str = "hinge"):  # fmt: skip
    """w86763777/pytorch-gan-collections' training loop (SNGAN on CIFAR-10): per step,
    ``n_dis`` D steps, each on ``net_G(z).detach()`` made under ``no_grad`` and its own
    real batch, then one G step on ``batch_size * 2`` fresh z. Its ``HingeLoss`` (or
    ``BCEWithLogits``). ``batches`` holds ``n_dis`` real batches per step.
    ganstep: ``d_first(d_steps=n_dis, reuse_fake=False, g_batch=2)``, objective
    ``hinge`` (or ``ns``)."""

    def loss_fn(pred_real, pred_fake=None):
        if loss == "hinge":
            if pred_fake is not None:
                return F.relu(1 - pred_real).mean() + F.relu(1 + pred_fake).mean()
            return -pred_real.mean()
        if pred_fake is not None:
            return _bce(pred_real, 1.0) + _bce(pred_fake, 0.0)
        return _bce(pred_real, 1.0)

    history = []
    looper = iter(batches)
    for _ in range(len(batches) // n_dis):
        for _ in range(n_dis):
            real = next(looper)
            with torch.no_grad():
                fake = G(latent(real.size(0))).detach()
            net_D_real = D(real)
            net_D_fake = D(fake)
            loss_d = loss_fn(net_D_real, net_D_fake)
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
        z = latent(real.size(0) * 2)
        loss_g = loss_fn(D(G(z)))
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        history.append({"loss_d": loss_d.item(), "loss_g": loss_g.item()})
    return history


def martinarjovsky_wgan(G, D, opt_g, opt_d, batches: Batches, latent: Latent, niter: int = 1,
                        diters: int = 5, clamp_lower: float = -0.01, clamp_upper: float = 0.01,
                        batch_size: int = 64):  # fmt: skip
    """martinarjovsky/WassersteinGAN ``main.py`` (commit 2cf43ba), the WGAN authors'
    code: ``niter`` epochs over ``batches`` (its ``dataloader``, whose real batches come
    as ``(real_cpu, _)``; here the samples). Each G iteration first trains D ``Diters``
    times (100 for G's first 25 iterations and every 500th, else ``diters``, fewer where
    the epoch runs out of batches; ``i`` counts the epoch's batches), each D step
    clamping D's parameters to ``[clamp_lower, clamp_upper]`` *before* its forwards,
    then ``D(real).backward(one)`` and ``D(G(noise)).backward(mone)``: its D scores real
    samples low and returns their batch mean (``models/dcgan.py``'s and ``mlp.py``'s
    ``output.mean(0).view(1)``). Its ``inputv.detach()`` drops its result, so D's
    backward runs on into G, whose gradients ``netG.zero_grad()`` clears before G's
    step: ``D(G(noise)).backward(one)`` on fresh noise with D's parameters switched off.
    ``noise`` has ``opt.batchSize`` rows whatever the real batch (``batch_size``,
    drawn through ``latent``). The script's ``input`` buffer (``torch.FloatTensor``,
    the dtype of its data) takes each batch's dtype here, so a float64 run stays one.
    ganstep: ``WGAN(clip, sign=-1, clamp_at="before")``, ``d_first(d_steps="each_batch",
    reuse_fake=False)``, each call given that iteration's batches."""
    input = torch.empty(0, dtype=batches[0].dtype)
    one = torch.FloatTensor([1])
    mone = one * -1
    history = []
    gen_iterations = 0
    for _epoch in range(niter):
        data_iter = iter(batches)
        i = 0
        while i < len(batches):
            for p in D.parameters():  # reset requires_grad
                p.requires_grad = True
            if gen_iterations < 25 or gen_iterations % 500 == 0:
                Diters = 100
            else:
                Diters = diters
            j = 0
            while j < Diters and i < len(batches):
                j += 1
                for p in D.parameters():  # clamp parameters to a cube
                    p.data.clamp_(clamp_lower, clamp_upper)
                real_cpu = next(data_iter)
                i += 1
                D.zero_grad()
                input.resize_as_(real_cpu).copy_(real_cpu)
                errD_real = D(input)
                errD_real.backward(one)
                noise = latent(batch_size)
                fake = G(noise)
                inputv = fake
                inputv.detach()
                errD_fake = D(inputv)
                errD_fake.backward(mone)
                errD = errD_real - errD_fake
                opt_d.step()
            for p in D.parameters():
                p.requires_grad = False  # to avoid computation
            G.zero_grad()
            noise = latent(batch_size)
            fake = G(noise)
            errG = D(fake)
            errG.backward(one)
            opt_g.step()
            gen_iterations += 1
            history.append({"loss_d": errD.item(), "loss_g": errG.item(), "d_steps": j})
    return history


def caogang_wgan_gp(G, D, opt_g, opt_d, batches: Batches, latent: Latent,
                    critic_iters: int = 5, lambda_: float = 10.0,
                    batch_size: int | None = None):  # fmt: skip
    """caogang/wgan-gp ``gan_mnist.py`` (commit 02ec5e2), the PyTorch port of the WGAN-GP
    authors' code: ``batches`` is its endless ``inf_train_gen()`` (here as many as the
    G iterations take, ``critic_iters`` each; its flat MNIST images). Each G iteration
    switches D's parameters on, then ``critic_iters`` D steps, each on the next batch:
    ``D(real).mean().backward(mone)``; ``noise = torch.randn(BATCH_SIZE, 128)``
    (``latent(batch_size)``; ``batch_size``: its ``BATCH_SIZE``, the first batch's rows
    unless given), ``fake = Variable(G(noise).data)`` (its ``volatile=True`` has no effect
    since PyTorch 0.4: G's graph is recorded and dropped), ``D(fake).mean().backward(one)``;
    ``calc_gradient_penalty``: ``alpha = torch.rand(BATCH_SIZE, 1)`` (float32, as it draws
    it) expanded over the flat images, the interpolates, D's gradient there
    (``grad_outputs`` ones), ``((norm(2, dim=1) - 1) ** 2).mean() * LAMBDA``, its own
    backward; then D's step. G's step with D's parameters switched off, on fresh noise:
    ``D(G(noise)).mean().backward(mone)``. Its ``one = torch.FloatTensor([1])``, written
    for PyTorch 0.3 (where a mean had shape (1,)), fails on a 0-dim mean since 0.4
    ("Mismatch in shape"): here ``torch.tensor(1.0)``, the fix its users apply (``ganstep
    audit`` names it). ganstep: ``WGANGP(lambda_, alpha=<that float32 draw>)``,
    ``d_first(d_steps=critic_iters, reuse_fake=False)``, each call given its iteration's
    batches."""
    batch_size = len(batches[0]) if batch_size is None else batch_size

    def calc_gradient_penalty(netD, real_data, fake_data):
        alpha = torch.rand(batch_size, 1)
        alpha = alpha.expand(real_data.size())
        interpolates = alpha * real_data + ((1 - alpha) * fake_data)
        interpolates = interpolates.requires_grad_(True)
        disc_interpolates = netD(interpolates)
        gradients = torch.autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                        grad_outputs=torch.ones(disc_interpolates.size()),
                                        create_graph=True, retain_graph=True,
                                        only_inputs=True)[0]  # fmt: skip
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * lambda_

    one = torch.tensor(1.0)
    mone = one * -1
    data = iter(batches)
    history = []
    for _iteration in range(len(batches) // critic_iters):
        for p in D.parameters():  # reset requires_grad
            p.requires_grad = True  # they are set to False below in netG update
        for _iter_d in range(critic_iters):
            real_data = next(data)
            D.zero_grad()
            D_real = D(real_data)
            D_real = D_real.mean()
            D_real.backward(mone)
            noise = latent(batch_size)
            fake = G(noise).data  # its Variable(netG(noisev).data)
            D_fake = D(fake)
            D_fake = D_fake.mean()
            D_fake.backward(one)
            gradient_penalty = calc_gradient_penalty(D, real_data.data, fake.data)
            gradient_penalty.backward()
            D_cost = D_fake - D_real + gradient_penalty
            opt_d.step()
        for p in D.parameters():
            p.requires_grad = False  # to avoid computation
        G.zero_grad()
        noise = latent(batch_size)
        fake = G(noise)
        G_cost = D(fake)
        G_cost = G_cost.mean()
        G_cost.backward(mone)
        opt_g.step()
        history.append({"loss_d": D_cost.item(), "loss_g": -G_cost.item(),
                        "gp": gradient_penalty.item()})  # fmt: skip
    return history


def sagan(G, D, opt_g, opt_d, batches: Batches, latent: Latent, adv_loss: str = "wgan-gp",
          lambda_gp: float = 10.0):  # fmt: skip
    """heykeetae/Self-Attention-GAN ``trainer.py`` (commit e78f98c), ``Trainer.train``: per
    step, D on the real batch (it returns its scores and two attention maps), z
    (``latent``: its ``torch.randn``), G(z) (its image and two maps, with G's graph:
    ``d_loss``'s backward runs on into G, whose gradients ``reset_grad`` clears), D on
    the fakes; ``wgan-gp``: ``-mean(real) + mean(fake)``, ``hinge``: ``relu(1 - real)
    .mean() + relu(1 + fake).mean()``; ``reset_grad`` (both optimizers' ``zero_grad``),
    backward, D's step. With ``wgan-gp`` then a D step of its own on the gradient
    penalty: ``alpha = torch.rand(n, 1, 1, 1)`` (float32, as it draws it; its
    ``.cuda()`` left out here) expanded, interpolates of the real and the fake batch's
    ``.data``, D's scores there, the gradient (``grad_outputs`` ones) flattened,
    ``sqrt(sum(grad ** 2, dim=1))``, ``mean((norm - 1) ** 2)`` times ``lambda_gp``;
    ``reset_grad``, backward, D's step. Then G on a fresh z: ``-mean(D(G(z)))``.
    ganstep: ``d_first(reuse_fake=False)`` with ``WGANGP(lambda_gp, alpha=<that float32
    draw>, penalty_at="own_step")``, or ``hinge``."""

    def reset_grad():
        opt_d.zero_grad()
        opt_g.zero_grad()

    history = []
    for real_images in batches:
        d_out_real, dr1, dr2 = D(real_images)
        if adv_loss == "wgan-gp":
            d_loss_real = -torch.mean(d_out_real)
        else:
            d_loss_real = torch.nn.ReLU()(1.0 - d_out_real).mean()
        z = latent(real_images.size(0))
        fake_images, gf1, gf2 = G(z)
        d_out_fake, df1, df2 = D(fake_images)
        if adv_loss == "wgan-gp":
            d_loss_fake = d_out_fake.mean()
        else:
            d_loss_fake = torch.nn.ReLU()(1.0 + d_out_fake).mean()
        d_loss = d_loss_real + d_loss_fake
        reset_grad()
        d_loss.backward()
        opt_d.step()
        row = {"loss_d": d_loss.item()}
        if adv_loss == "wgan-gp":
            alpha = torch.rand(real_images.size(0), 1, 1, 1).expand_as(real_images)
            interpolated = alpha * real_images.data + (1 - alpha) * fake_images.data
            interpolated.requires_grad_(True)
            out, _, _ = D(interpolated)
            grad = torch.autograd.grad(outputs=out, inputs=interpolated,
                                       grad_outputs=torch.ones(out.size(), dtype=out.dtype),
                                       retain_graph=True, create_graph=True,
                                       only_inputs=True)[0]  # fmt: skip
            grad = grad.view(grad.size(0), -1)
            grad_l2norm = torch.sqrt(torch.sum(grad**2, dim=1))
            d_loss_gp = torch.mean((grad_l2norm - 1) ** 2)
            d_loss = lambda_gp * d_loss_gp
            reset_grad()
            d_loss.backward()
            opt_d.step()
            row["gp"] = d_loss.item()
        z = latent(real_images.size(0))
        fake_images, _, _ = G(z)
        g_out_fake, _, _ = D(fake_images)
        g_loss_fake = -g_out_fake.mean()
        reset_grad()
        g_loss_fake.backward()
        opt_g.step()
        history.append({**row, "loss_g": g_loss_fake.item()})
    return history


class ImagePool:
    """junyanz/pytorch-CycleGAN-and-pix2pix ``util/image_pool.py``: a buffer of past
    fakes; ``query`` returns, per image, the image (pool filling, or with probability
    1/2) or a stored one that the image replaces. ganstep: ``Step(fake_pool=size)``."""

    def __init__(self, pool_size: int) -> None:
        self.pool_size = pool_size
        if self.pool_size > 0:
            self.num_imgs = 0
            self.images: list[Tensor] = []

    def query(self, images: Tensor) -> Tensor:
        if self.pool_size == 0:
            return images
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return torch.cat(return_images, 0)


class GANLoss(nn.Module):
    """CycleGAN's ``GANLoss``: ``lsgan`` (MSELoss) or ``vanilla`` (BCEWithLogitsLoss)
    against a target tensor of D's prediction's shape, 1.0 for real and 0.0 for fake;
    ``wgangp``: ``-prediction.mean()`` for real, ``prediction.mean()`` for fake."""

    def __init__(self, gan_mode: str, target_real_label=1.0, target_fake_label=0.0):
        super().__init__()
        self.register_buffer("real_label", torch.tensor(target_real_label))
        self.register_buffer("fake_label", torch.tensor(target_fake_label))
        self.gan_mode = gan_mode
        if gan_mode == "lsgan":
            self.loss = nn.MSELoss()
        elif gan_mode == "vanilla":
            self.loss = nn.BCEWithLogitsLoss()
        elif gan_mode == "wgangp":
            self.loss = None
        else:
            raise NotImplementedError(f"gan mode {gan_mode} not implemented")

    def get_target_tensor(self, prediction, target_is_real):
        target_tensor = self.real_label if target_is_real else self.fake_label
        return target_tensor.to(prediction.dtype).expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        if self.gan_mode == "wgangp":
            return -prediction.mean() if target_is_real else prediction.mean()
        return self.loss(prediction, self.get_target_tensor(prediction, target_is_real))


def cyclegan(G_A, G_B, D_A, D_B, opt_g, opt_d, batches, gan_mode: str = "lsgan",
             lambda_A: float = 10.0, lambda_B: float = 10.0, lambda_identity: float = 0.5,
             pool_size: int = 50, lambda_gp: float = 0.0):  # fmt: skip
    """junyanz/pytorch-CycleGAN-and-pix2pix ``CycleGANModel.optimize_parameters`` over
    ``batches`` of ``(real_A, real_B)``: ``forward`` (fake_B, rec_A, fake_A, rec_B), G's
    step with D_A and D_B frozen (``backward_G``: identity, GAN, cycle losses), then
    D's step: ``backward_D_A`` on ``fake_B_pool.query(fake_B)``, ``backward_D_B`` on
    ``fake_A_pool.query(fake_A)``, each ``(loss_D_real + loss_D_fake) * 0.5``.
    ``opt_g`` holds G_A and G_B, ``opt_d`` D_A and D_B. ganstep: ``CycleStep``.

    ``lambda_gp > 0`` is not in CycleGAN's model: it adds ``lambda_gp`` times
    :func:`gradient_penalty` (on the real batch and the fakes D was shown) to each D's
    loss after its two forwards, as a user training CycleGAN with ``gan_mode="wgangp"``
    adds one. ganstep: ``CycleStep(objective=WGANGP(lambda_gp), d_scale=0.5,
    g_scale=1)``."""
    criterionGAN = GANLoss(gan_mode)
    criterionCycle, criterionIdt = nn.L1Loss(), nn.L1Loss()
    fake_A_pool, fake_B_pool = ImagePool(pool_size), ImagePool(pool_size)

    def backward_D_basic(netD, real, fake):
        pred_real = netD(real)
        loss_D_real = criterionGAN(pred_real, True)
        pred_fake = netD(fake.detach())
        loss_D_fake = criterionGAN(pred_fake, False)
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        if lambda_gp > 0:
            loss_D = loss_D + lambda_gp * gradient_penalty(netD, real, fake.detach())
        loss_D.backward()
        return loss_D

    history = []
    for real_A, real_B in batches:
        # forward
        fake_B = G_A(real_A)
        rec_A = G_B(fake_B)
        fake_A = G_B(real_B)
        rec_B = G_A(fake_A)
        # G_A and G_B
        _set_requires_grad(D_A, False)
        _set_requires_grad(D_B, False)
        opt_g.zero_grad()
        if lambda_identity > 0:
            idt_A = G_A(real_B)
            loss_idt_A = criterionIdt(idt_A, real_B) * lambda_B * lambda_identity
            idt_B = G_B(real_A)
            loss_idt_B = criterionIdt(idt_B, real_A) * lambda_A * lambda_identity
        else:
            loss_idt_A = loss_idt_B = 0
        loss_G_A = criterionGAN(D_A(fake_B), True)
        loss_G_B = criterionGAN(D_B(fake_A), True)
        loss_cycle_A = criterionCycle(rec_A, real_A) * lambda_A
        loss_cycle_B = criterionCycle(rec_B, real_B) * lambda_B
        loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
        loss_G.backward()
        opt_g.step()
        # D_A and D_B
        _set_requires_grad(D_A, True)
        _set_requires_grad(D_B, True)
        opt_d.zero_grad()
        loss_D_A = backward_D_basic(D_A, real_B, fake_B_pool.query(fake_B))
        loss_D_B = backward_D_basic(D_B, real_A, fake_A_pool.query(fake_A))
        opt_d.step()
        history.append({"loss_g": loss_G.item(), "loss_d": (loss_D_A + loss_D_B).item(),
                        "loss_d_a": loss_D_A.item(), "cycle_a": loss_cycle_A.item()})  # fmt: skip
    return history


def taming_vqgan(G, D, opt_ae, opt_disc, batches: Batches, perceptual: nn.Module,
                 last_layer: Tensor, disc_start: int, codebook_weight: float = 1.0,
                 disc_factor: float = 1.0, disc_weight: float = 1.0,
                 perceptual_weight: float = 1.0):  # fmt: skip
    """CompVis/taming-transformers: ``VQModel.training_step`` (``taming/models/vqgan.py``,
    commit 04c8ad6) with ``VQLPIPSWithDiscriminator`` (``taming/modules/losses/
    vqperceptual.py``, commit 9944179, hinge loss, unconditional D), run by
    pytorch-lightning 1.0's loop over its two optimizers: per batch (``global_step`` =
    the batch's index), for each optimizer in turn ``toggle_optimizer`` (every parameter
    off, then that optimizer's on), ``training_step``, backward, step, zero_grad.

    ``G(x)`` returns ``(xrec, qloss)``; ``perceptual(x, xrec)`` stands in for LPIPS (a
    fixed network, one value per sample); ``last_layer`` is the decoder's last weight.
    The autoencoder's step: ``nll = mean(|x - xrec| + perceptual_weight * p_loss)``,
    ``g_loss = -mean(D(xrec))``, the adaptive weight ``||grad nll|| / (||grad g_loss|| +
    1e-4)`` at ``last_layer``, clamped to [0, 1e4], detached, times ``disc_weight``;
    ``nll + d_weight * factor * g_loss + codebook_weight * mean(qloss)`` with ``factor``
    ``disc_factor`` from ``disc_start`` on and 0 before (``adopt_weight``). The
    discriminator's step forwards G again (the updated G, without a graph) and steps on
    ``factor * 0.5 * (mean relu(1 - D(x)) + mean relu(1 + D(xrec)))``.
    ganstep: ``g_first()``, ``condition="real"`` (G(x)), ``d_conditional=False``,
    ``hinge`` with ``d_scale=lambda t: 0.5 * factor(t)``, ``g_scale=0`` and G terms:
    the nll, the adaptively weighted adversarial loss, the codebook loss read from G's
    extra output."""
    history = []
    every = [*G.parameters(), *D.parameters()]
    for global_step, x in enumerate(batches):
        factor = disc_factor if global_step >= disc_start else 0.0
        row = {}
        for optimizer_idx, optimizer in enumerate((opt_ae, opt_disc)):
            for p in every:  # toggle_optimizer
                p.requires_grad = False
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.requires_grad = True
            xrec, qloss = G(x)
            rec_loss = torch.abs(x.contiguous() - xrec.contiguous())
            p_loss = perceptual(x.contiguous(), xrec.contiguous())
            rec_loss = rec_loss + perceptual_weight * p_loss
            nll_loss = torch.mean(rec_loss)
            if optimizer_idx == 0:
                logits_fake = D(xrec.contiguous())
                g_loss = -torch.mean(logits_fake)
                nll_grads = torch.autograd.grad(nll_loss, last_layer, retain_graph=True)[0]
                g_grads = torch.autograd.grad(g_loss, last_layer, retain_graph=True)[0]
                d_weight = torch.norm(nll_grads) / (torch.norm(g_grads) + 1e-4)
                d_weight = torch.clamp(d_weight, 0.0, 1e4).detach() * disc_weight
                loss = nll_loss + d_weight * factor * g_loss + codebook_weight * qloss.mean()
                row["loss_g"] = loss.item()
            else:
                logits_real = D(x.contiguous().detach())
                logits_fake = D(xrec.contiguous().detach())
                loss_real = torch.mean(F.relu(1.0 - logits_real))
                loss_fake = torch.mean(F.relu(1.0 + logits_fake))
                loss = factor * (0.5 * (loss_real + loss_fake))
                row["loss_d"] = loss.item()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        for p in every:
            p.requires_grad = True
        history.append(row)
    return history


def _hifigan_discriminator_loss(real_outputs, fake_outputs):
    loss = 0
    for dr, dg in zip(real_outputs, fake_outputs, strict=True):
        loss += torch.mean((1 - dr) ** 2) + torch.mean(dg**2)
    return loss


def _hifigan_generator_loss(fake_outputs):
    loss = 0
    for dg in fake_outputs:
        loss += torch.mean((1 - dg) ** 2)
    return loss


def _hifigan_feature_loss(fmap_r, fmap_g):
    loss = 0
    for dr, dg in zip(fmap_r, fmap_g, strict=True):
        for rl, gl in zip(dr, dg, strict=True):
            loss += torch.mean(torch.abs(rl - gl))
    return loss * 2


def descript_melgan(netG, netD, optG, optD, batches, fft: Callable[[Tensor], Tensor],
                    n_layers_D: int = 4, num_D: int = 3,
                    lambda_feat: float = 10) -> list[dict[str, float]]:  # fmt: skip
    """descriptinc/melgan-neurips ``scripts/train.py`` (commit 46cbf06), its loop as
    written, per audio batch ``x_t``: ``s_t = fft(x_t).detach()``, ``x_pred_t =
    netG(s_t)``; its mel error under ``no_grad`` (a log); D's step on ``D_fake_det =
    netD(x_pred_t.detach())`` then ``D_real = netD(x_t)`` (``netD`` returns, per scale,
    each layer's output, the score last), the hinge losses of each scale's score summed;
    then G's step on ``D_fake = netD(x_pred_t)`` at D's new weights: ``-score.mean()`` a
    scale, plus ``lambda_feat`` times the L1 of each scale's features on the fakes to
    ``D_real``'s, **from D's step before its update**, detached, weighted ``(1 / num_D) *
    (4 / (n_layers_D + 1))``. ``netD.zero_grad()`` and ``netG.zero_grad()`` before each
    backward (G's reaches D's weights, zeroed before D's next step). ganstep:
    ``d_first()``, ``hinge``, ``d_order="fake_first"``, ``latent=None``,
    ``condition="real"`` with ``d_conditional=False`` (the batch ``(x_t, s_t)``), the
    scales' scores and features as D's output, and the feature matching marked
    ``reads_d_step_real``."""
    history = []
    for x_t in batches:
        s_t = fft(x_t).detach()
        x_pred_t = netG(s_t)
        with torch.no_grad():
            s_pred_t = fft(x_pred_t.detach())
            s_error = F.l1_loss(s_t, s_pred_t).item()
        D_fake_det = netD(x_pred_t.detach())
        D_real = netD(x_t)
        loss_D = 0
        for scale in D_fake_det:
            loss_D += F.relu(1 + scale[-1]).mean()
        for scale in D_real:
            loss_D += F.relu(1 - scale[-1]).mean()
        netD.zero_grad()
        loss_D.backward()
        optD.step()
        D_fake = netD(x_pred_t)
        loss_G = 0
        for scale in D_fake:
            loss_G += -scale[-1].mean()
        loss_feat = 0
        feat_weights = 4.0 / (n_layers_D + 1)
        D_weights = 1.0 / num_D
        wt = D_weights * feat_weights
        for i in range(num_D):
            for j in range(len(D_fake[i]) - 1):
                loss_feat += wt * F.l1_loss(D_fake[i][j], D_real[i][j].detach())
        netG.zero_grad()
        (loss_G + lambda_feat * loss_feat).backward()
        optG.step()
        history.append({"loss_d": loss_D.item(), "loss_g": loss_G.item(),
                        "loss_feat": loss_feat.item(), "s_error": s_error})  # fmt: skip
    return history


def hifigan(G, mpd, msd, opt_g, opt_d, batches, mel_spectrogram: Callable[[Tensor], Tensor]):
    """jik876/hifi-gan ``train.py`` (commit 3484fe6) with ``models.py``'s losses: per
    batch ``(x, y, y_mel)`` (the input mel, the audio, the audio's mel), ``y_g_hat =
    generator(x)`` once; D's step on ``mpd(y, y_g_hat.detach())`` and ``msd(...)`` (each
    sub-discriminator on the real, then the fake batch), the least-squares
    ``discriminator_loss`` summed over sub-discriminators; then G's step on the same
    ``y_g_hat``: ``45 * L1(y_mel, mel(y_g_hat))``, ``feature_loss`` (2 * the mean L1
    between D's feature maps on real and fake) and ``generator_loss`` summed. ``mpd`` and
    ``msd`` are called ``d(y, y_hat)`` and return ``(y_d_rs, y_d_gs, fmap_rs, fmap_gs)``;
    D is not frozen in G's step (the feature maps on the real batch carry a graph into
    D's weights, unused). ganstep: ``d_first()``, ``condition="real"``, a D returning
    ``(scores, feature maps)`` of every sub-discriminator, ``lsgan`` with ``d_scale=2``,
    ``g_scale=2``, ``d_map=True``, a feature-matching term marked ``reads_real`` and a
    mel term reading the batch's extra target ``y_mel``."""
    history = []
    for x, y, y_mel in batches:
        y_g_hat = G(x)
        y_g_hat_mel = mel_spectrogram(y_g_hat)
        opt_d.zero_grad()
        y_df_hat_r, y_df_hat_g, _, _ = mpd(y, y_g_hat.detach())
        loss_disc_f = _hifigan_discriminator_loss(y_df_hat_r, y_df_hat_g)
        y_ds_hat_r, y_ds_hat_g, _, _ = msd(y, y_g_hat.detach())
        loss_disc_s = _hifigan_discriminator_loss(y_ds_hat_r, y_ds_hat_g)
        loss_disc_all = loss_disc_s + loss_disc_f
        loss_disc_all.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_mel = F.l1_loss(y_mel, y_g_hat_mel) * 45
        y_df_hat_r, y_df_hat_g, fmap_f_r, fmap_f_g = mpd(y, y_g_hat)
        y_ds_hat_r, y_ds_hat_g, fmap_s_r, fmap_s_g = msd(y, y_g_hat)
        loss_fm_f = _hifigan_feature_loss(fmap_f_r, fmap_f_g)
        loss_fm_s = _hifigan_feature_loss(fmap_s_r, fmap_s_g)
        loss_gen_f = _hifigan_generator_loss(y_df_hat_g)
        loss_gen_s = _hifigan_generator_loss(y_ds_hat_g)
        loss_gen_all = loss_gen_s + loss_gen_f + loss_fm_s + loss_fm_f + loss_mel
        loss_gen_all.backward()
        opt_g.step()
        history.append({"loss_d": loss_disc_all.item(), "loss_g": loss_gen_all.item(),
                        "mel": loss_mel.item()})  # fmt: skip
    return history


def persson_progan(gen, critic, opt_gen, opt_critic, batches: Batches, latent: Latent,
                   step: int, alpha: float, dataset_size: int, progressive_epochs: int,
                   lambda_gp: float = 10.0):  # fmt: skip
    """aladdinpersson/Machine-Learning-Collection's ProGAN ``train.py`` (commit dbab15d,
    ``ML/Pytorch/GANs/ProGAN``): ``train_fn`` over ``batches`` at one resolution ``step``
    with its fade-in ``alpha``, as written. G and the critic are called ``(x, alpha,
    step)``. Per batch: z (``latent``, its ``torch.randn(n, Z_DIM, 1, 1)``), ``fake =
    gen(noise, alpha, step)``, the critic on the real batch, then on ``fake.detach()``,
    then ``utils.gradient_penalty``'s (``beta = torch.rand((n, 1, 1, 1))`` in the default
    dtype, repeated over the image, ``real * beta + fake.detach() * (1 - beta)``, the norm
    of the flattened gradient, ``mean((norm - 1) ** 2)``), and ``loss_critic =
    -(mean(critic_real) - mean(critic_fake)) + lambda_gp * gp + 0.001 *
    mean(critic_real ** 2)`` (ProGAN's drift term); then G on ``critic(fake, alpha,
    step)``, ``-mean``; then ``alpha += n / ((progressive_epochs * 0.5) * dataset_size)``,
    at most 1. Its ``torch.cuda.amp.autocast()`` and GradScalers are on where the models
    are on CUDA (as the source's, which torch disables without CUDA). Returns a row per
    batch with the ``alpha`` it was trained at. ganstep: ``d_first()``, ``WGANGP`` with
    ``d_terms={"drift": (0.001, mean of D's real scores squared)}``, G and the critic
    wrapped so that the Step calls them with the loop's ``(alpha, step)``."""
    on_cuda = next(critic.parameters()).is_cuda
    scaler_critic = torch.amp.GradScaler("cuda", enabled=on_cuda)
    scaler_gen = torch.amp.GradScaler("cuda", enabled=on_cuda)
    history = []
    for real in batches:
        cur_batch_size = real.shape[0]
        noise = latent(cur_batch_size)
        with torch.autocast("cuda", enabled=on_cuda):
            fake = gen(noise, alpha, step)
            critic_real = critic(real, alpha, step)
            critic_fake = critic(fake.detach(), alpha, step)
            n, c, h, w = real.shape
            beta = torch.rand((n, 1, 1, 1)).repeat(1, c, h, w).to(real.device)
            interpolated_images = real * beta + fake.detach() * (1 - beta)
            interpolated_images.requires_grad_(True)
            mixed_scores = critic(interpolated_images, alpha, step)
            gradient = torch.autograd.grad(
                inputs=interpolated_images, outputs=mixed_scores,
                grad_outputs=torch.ones_like(mixed_scores), create_graph=True,
                retain_graph=True,
            )[0]  # fmt: skip
            gradient = gradient.view(gradient.shape[0], -1)
            gp = torch.mean((gradient.norm(2, dim=1) - 1) ** 2)
            loss_critic = (
                -(torch.mean(critic_real) - torch.mean(critic_fake))
                + lambda_gp * gp
                + (0.001 * torch.mean(critic_real**2))
            )
        opt_critic.zero_grad()
        scaler_critic.scale(loss_critic).backward()
        scaler_critic.step(opt_critic)
        scaler_critic.update()
        with torch.autocast("cuda", enabled=on_cuda):
            gen_fake = critic(fake, alpha, step)
            loss_gen = -torch.mean(gen_fake)
        opt_gen.zero_grad()
        scaler_gen.scale(loss_gen).backward()
        scaler_gen.step(opt_gen)
        scaler_gen.update()
        history.append({"loss_d": loss_critic.item(), "loss_g": loss_gen.item(),
                        "gp": gp.item(), "alpha": alpha})  # fmt: skip
        alpha += cur_batch_size / ((progressive_epochs * 0.5) * dataset_size)
        alpha = min(alpha, 1)
    return history


def _labml_labels(n: int, r1: float, r2: float, device=None) -> Tensor:
    """labml_nn's ``_create_labels``: n smoothed labels, one column, drawn once."""
    return torch.empty(n, 1, requires_grad=False, device=device).uniform_(r1, r2)


class LabmlDiscriminatorLogitsLoss(nn.Module):
    """labml_nn/gan/original/__init__.py's ``DiscriminatorLogitsLoss`` (commit 4b85f36):
    ``BCEWithLogitsLoss`` of D's logits on the real batch against labels drawn once at
    construction from U(1 - smoothing, 1), on the fakes against U(0, smoothing), 256 of
    each (non-persistent buffers), the first n of them read for a batch of n (drawn again,
    as many as the batch, where one is larger). Returns both losses."""

    def __init__(self, smoothing: float = 0.2):
        super().__init__()
        self.loss_true = nn.BCEWithLogitsLoss()
        self.loss_false = nn.BCEWithLogitsLoss()
        self.smoothing = smoothing
        self.register_buffer("labels_true", _labml_labels(256, 1.0 - smoothing, 1.0), False)
        self.register_buffer("labels_false", _labml_labels(256, 0.0, smoothing), False)

    def forward(self, logits_true: Tensor, logits_false: Tensor):
        n_true, n_false, s = len(logits_true), len(logits_false), self.smoothing
        if n_true > len(self.labels_true):
            labels = _labml_labels(n_true, 1.0 - s, 1.0, logits_true.device)
            self.register_buffer("labels_true", labels, False)
        if n_false > len(self.labels_false):
            labels = _labml_labels(n_false, 0.0, s, logits_false.device)
            self.register_buffer("labels_false", labels, False)
        return (self.loss_true(logits_true, self.labels_true[: len(logits_true)]),
                self.loss_false(logits_false, self.labels_false[: len(logits_false)]))  # fmt: skip


class LabmlGeneratorLogitsLoss(nn.Module):
    """labml_nn/gan/original/__init__.py's ``GeneratorLogitsLoss``: ``BCEWithLogitsLoss``
    of D's logits on the fakes against labels drawn once from U(1 - smoothing, 1)."""

    def __init__(self, smoothing: float = 0.2):
        super().__init__()
        self.loss_true = nn.BCEWithLogitsLoss()
        self.smoothing = smoothing
        self.register_buffer("fake_labels", _labml_labels(256, 1.0 - smoothing, 1.0), False)

    def forward(self, logits: Tensor):
        if len(logits) > len(self.fake_labels):
            labels = _labml_labels(len(logits), 1.0 - self.smoothing, 1.0, logits.device)
            self.register_buffer("fake_labels", labels, False)
        return self.loss_true(logits, self.fake_labels[: len(logits)])


def labml_gan(G, D, opt_g, opt_d, batches: Batches, latent: Latent,
              discriminator_loss: nn.Module, generator_loss: nn.Module,
              discriminator_k: int = 1):  # fmt: skip
    """labmlai/annotated_deep_learning_paper_implementations
    ``labml_nn/gan/original/experiment.py`` (commit 1b70252), ``Configs.step`` in training
    mode over ``batches`` (its DCGAN experiment trains with the same step): D's step on
    ``calc_discriminator_loss`` (z drawn, D on the data, D on ``G(z).detach()``, the sum
    of ``discriminator_loss``'s two losses), then, every ``discriminator_k``-th batch, G's
    on ``calc_generator_loss`` (z drawn anew, ``generator_loss`` of D on ``G(z)``; D's
    gradients cleared before its next step). ``latent`` is its ``sample_z``
    (``torch.randn(n, 100)`` there). The losses are :class:`LabmlDiscriminatorLogitsLoss`
    and :class:`LabmlGeneratorLogitsLoss`: smoothed labels drawn once, one per row.
    ganstep: ``d_first(reuse_fake=False)`` with an objective of the user's calling the
    same loss modules (docs/loops.md#labml-gan); its ``discriminator_k`` (1 in the
    experiment) steps G at the epoch's last batch too, which ``g_every`` does not."""
    history = []
    for i, data in enumerate(batches):
        # calc_discriminator_loss
        z = latent(data.shape[0])
        logits_true = D(data)
        logits_false = D(G(z).detach())
        loss_true, loss_false = discriminator_loss(logits_true, logits_false)
        loss = loss_true + loss_false
        opt_d.zero_grad()
        loss.backward()
        opt_d.step()
        row = {"loss_d": loss.item()}
        # batch_idx.is_interval(discriminator_k): labml_helpers' BatchIndex, the epoch's
        # last batch too
        if i + 1 == len(batches) or (i + 1) % discriminator_k == 0:
            # calc_generator_loss
            generated_images = G(latent(data.shape[0]))
            g_loss = generator_loss(D(generated_images))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            row["loss_g"] = g_loss.item()
        history.append(row)
    return history
