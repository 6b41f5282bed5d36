"""eriklindernoren/PyTorch-GAN's loops, each as its ``implementations/...`` file is
(the file and commit named in each docstring)."""

from __future__ import annotations

import random

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .common import Batches, Latent, Pairs, _as_floats, _Losses, _one_hot


def pytorch_gan_g_first(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """eriklindernoren/PyTorch-GAN's loop: G steps, then D steps on the same ``gen_imgs``.

    Both gradients are taken at (g_t, d_t): this is ``simultaneous``. It forwards D on
    the fake batch twice and computes D's weight gradients in G's step for nothing.
    """
    loss = _Losses(objective)
    for real_imgs in batches:
        # Train Generator
        opt_g.zero_grad()
        gen_imgs = G(latent(real_imgs.size(0)))
        real_out = D(real_imgs) if loss.g_needs_real else None
        g_loss = loss.g(gen_imgs, D(gen_imgs), real_out)
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        d_loss = loss.d(D, real_imgs, gen_imgs.detach(), D(real_imgs), D(gen_imgs.detach()))
        d_loss.backward()
        opt_d.step()
        loss.end_iteration()
    return loss.history


def pytorch_gan_cgan(G, D, opt_g, opt_d, batches: Pairs, latent: Latent, labels: Latent):
    """eriklindernoren/PyTorch-GAN ``implementations/cgan/cgan.py``: ``G(z, gen_labels)``
    with sampled labels, G steps, then D on ``gen_imgs.detach()`` with ``gen_labels``.

    Least squares losses (``MSELoss``) with G's halved as ganstep's ``lsgan`` defines it
    (a loss scale is not the update order). Both gradients at (g_t, d_t): ganstep's
    ``simultaneous()`` with ``condition=labels``.
    """
    history = []
    for imgs, real_labels in batches:
        n = imgs.size(0)
        # Train Generator
        opt_g.zero_grad()
        z, gen_labels = latent(n), labels(n)
        gen_imgs = G(z, gen_labels)
        validity = D(gen_imgs, gen_labels)
        g_loss = 0.5 * F.mse_loss(validity, torch.ones_like(validity))
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        validity_real = D(imgs, real_labels)
        d_real_loss = F.mse_loss(validity_real, torch.ones_like(validity_real))
        validity_fake = D(gen_imgs.detach(), gen_labels)
        d_fake_loss = F.mse_loss(validity_fake, torch.zeros_like(validity_fake))
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_acgan(G, D, opt_g, opt_d, batches: Pairs, rng: np.random.RandomState,
                      latent_dim: int, n_classes: int):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/acgan/acgan.py`` (commit e0a8f3c) as
    written: ``rng`` stands for ``np.random``, drawn in the script's order (z by
    ``normal(0, 1, (n, latent_dim))``, then labels by ``randint(0, n_classes, n)``);
    ``G(z, labels)``; ``D(x)`` (no label) ends in a ``Sigmoid`` and a ``Softmax`` and
    returns (validity, class probabilities); ``BCELoss`` on the validity, and
    ``CrossEntropyLoss`` on the softmax's output, read as logits, as the script does.
    G's step ``0.5 * (adv + aux)``, then D's on the real batch and ``gen_imgs.detach()``:
    ``((adv_real + aux_real) / 2 + (adv_fake + aux_fake) / 2) / 2``.
    ganstep: ``simultaneous()``, ``objective=ns(probabilities=True)``,
    ``condition=labels``, ``d_conditional=False``, ``g_scale=0.5`` with a G term of
    weight 0.5, ``d_scale=0.25`` with D terms of weight 0.25 on each batch's class
    output. (Its D has Dropout2d: ganstep forwards D as the loop does.)"""
    adversarial_loss, auxiliary_loss = nn.BCELoss(), nn.CrossEntropyLoss()
    history = []
    for imgs, labels in batches:
        batch_size = imgs.shape[0]
        valid = torch.ones(batch_size, 1, dtype=imgs.dtype)
        fake = torch.zeros(batch_size, 1, dtype=imgs.dtype)
        real_imgs = imgs
        # Train Generator
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (batch_size, latent_dim)), imgs)
        gen_labels = torch.from_numpy(rng.randint(0, n_classes, batch_size)).long()
        gen_imgs = G(z, gen_labels)
        validity, pred_label = D(gen_imgs)
        g_loss = 0.5 * (adversarial_loss(validity, valid) + auxiliary_loss(pred_label, gen_labels))
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_pred, real_aux = D(real_imgs)
        d_real_loss = (adversarial_loss(real_pred, valid) + auxiliary_loss(real_aux, labels)) / 2
        fake_pred, fake_aux = D(gen_imgs.detach())
        d_fake_loss = (adversarial_loss(fake_pred, fake) + auxiliary_loss(fake_aux, gen_labels)) / 2
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_sgan(G, D, opt_g, opt_d, batches: Pairs, rng: np.random.RandomState,
                     latent_dim: int, num_classes: int):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/sgan/sgan.py`` (commit c5d6be1) as
    written: the semi-supervised GAN, an unconditional ``G(z)`` (z from
    ``np.random.normal(0, 1, (n, latent_dim))``; ``rng`` stands for ``np.random``) and a
    ``D(x)`` returning (validity through a ``Sigmoid``, ``num_classes + 1`` class
    probabilities through a ``Softmax``); ``BCELoss`` on the validity and
    ``CrossEntropyLoss`` on the softmax's output, read as logits, as the script does. G's
    step on the validity alone, then D's on the real batch with its labels and on
    ``gen_imgs.detach()`` with the extra class ``num_classes`` (``fake_aux_gt``):
    ``((adv_real + aux_real) / 2 + (adv_fake + aux_fake) / 2) / 2``.
    ganstep: ``simultaneous()``, ``objective=ns(probabilities=True)``, unconditional,
    ``d_scale=0.25`` with D terms of weight 0.25 on each batch's class output, the real
    labels given as an extra target of a dict batch ``{"x": imgs, "label": labels}``."""
    adversarial_loss, auxiliary_loss = nn.BCELoss(), nn.CrossEntropyLoss()
    history = []
    for imgs, labels in batches:
        batch_size = imgs.shape[0]
        valid = torch.ones(batch_size, 1, dtype=imgs.dtype)
        fake = torch.zeros(batch_size, 1, dtype=imgs.dtype)
        fake_aux_gt = torch.full((batch_size,), num_classes, dtype=torch.long)
        real_imgs = imgs
        # Train Generator
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (batch_size, latent_dim)), imgs)
        gen_imgs = G(z)
        validity, _ = D(gen_imgs)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_pred, real_aux = D(real_imgs)
        d_real_loss = (adversarial_loss(real_pred, valid) + auxiliary_loss(real_aux, labels)) / 2
        fake_pred, fake_aux = D(gen_imgs.detach())
        d_fake_loss = (
            adversarial_loss(fake_pred, fake) + auxiliary_loss(fake_aux, fake_aux_gt)
        ) / 2
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_context_encoder(G, D, opt_g, opt_d, batches: list[tuple[Tensor, ...]]):
    """eriklindernoren/PyTorch-GAN ``implementations/context_encoder/context_encoder.py``
    (commit 23d54a3) as written: each batch is its ``ImageDataset``'s ``(imgs,
    masked_imgs, masked_parts)`` (a random square of each image set to 1, with numpy, and
    that square's pixels); ``G(masked_imgs)`` inpaints the parts, a PatchGAN ``D`` judges
    parts against maps of ones and zeros shaped like its output (``MSELoss``). G's step on
    ``0.001 * adv + 0.999 * L1(gen_parts, masked_parts)``, then D's on the real parts and
    ``gen_parts.detach()``, ``0.5 * (real + fake)``.
    ganstep: ``simultaneous()``, ``lsgan`` with ``g_scale=0.002``, ``latent=None``,
    ``condition="real"`` with ``d_conditional=False`` on batches ``(masked_parts,
    masked_imgs)``, an L1 term of weight 0.999."""
    adversarial_loss, pixelwise_loss = nn.MSELoss(), nn.L1Loss()
    history = []
    for _imgs, masked_imgs, masked_parts in batches:
        # Train Generator
        opt_g.zero_grad()
        gen_parts = G(masked_imgs)
        d_fake = D(gen_parts)
        valid, fake = torch.ones_like(d_fake), torch.zeros_like(d_fake)
        g_adv = adversarial_loss(d_fake, valid)
        g_pixel = pixelwise_loss(gen_parts, masked_parts)
        g_loss = 0.001 * g_adv + 0.999 * g_pixel
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_loss = adversarial_loss(D(masked_parts), valid)
        fake_loss = adversarial_loss(D(gen_parts.detach()), fake)
        d_loss = 0.5 * (real_loss + fake_loss)
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item(), "l1": g_pixel.item()})
    return history


def pytorch_gan_ccgan(G, D, opt_g, opt_d, batches: list[dict[str, Tensor]],
                      rng: np.random.RandomState, mask_size: int):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/ccgan/ccgan.py`` (commit ce0e5b5) as
    written: each batch its ``ImageDataset``'s ``{"x": imgs, "x_lr": imgs_lr}``; the
    script's ``apply_random_mask`` sets a random square of each image to -1 (``rng``
    stands for ``np.random``: ``randint(0, size - mask_size, (n, 2))``); G inpaints from
    the masked image and the low-resolution one, ``G(masked_imgs, imgs_lr)``; a PatchGAN
    ``D(x)`` judges images against maps of ones and zeros shaped like its output
    (``MSELoss``). G's step on the adversarial loss alone, then D's on the real images and
    ``gen_imgs.detach()``, ``0.5 * (real + fake)``.
    ganstep: ``simultaneous()``, ``lsgan`` with ``g_scale=2``, ``latent=None``,
    ``condition="real"`` with ``d_conditional=False`` on batches ``(imgs, (masked_imgs,
    imgs_lr))``, the masks drawn before each call as the script draws them."""
    adversarial_loss = nn.MSELoss()
    history = []
    for batch in batches:
        imgs, imgs_lr = batch["x"], batch["x_lr"]
        idx = rng.randint(0, imgs.shape[-1] - mask_size, (imgs.shape[0], 2))
        masked_imgs = imgs.clone()
        for i, (y1, x1) in enumerate(idx):
            masked_imgs[i, :, y1 : y1 + mask_size, x1 : x1 + mask_size] = -1
        # Train Generator
        opt_g.zero_grad()
        gen_imgs = G(masked_imgs, imgs_lr)
        d_fake = D(gen_imgs)
        valid, fake = torch.ones_like(d_fake), torch.zeros_like(d_fake)
        g_loss = adversarial_loss(d_fake, valid)
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_loss = adversarial_loss(D(imgs), valid)
        fake_loss = adversarial_loss(D(gen_imgs.detach()), fake)
        d_loss = 0.5 * (real_loss + fake_loss)
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_wgan(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                     latent_dim: int, n_critic: int = 5, clip_value: float = 0.01):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/wgan/wgan.py`` (commit c5d6be1), one
    epoch of it (``i`` counts its batches): per batch, z from numpy's generator
    (``np.random.normal(0, 1, (n, latent_dim))``; ``rng`` stands for ``np.random``), a
    D step on ``generator(z).detach()`` (G forwarded with a graph it throws away), D's
    weights clamped to ``clip_value`` after it; every ``n_critic``-th batch (``i %
    n_critic == 0``) a G step on ``generator(z)``, G forwarded again on the same z (D
    not frozen). ganstep: ``d_first(g_every=n_critic, reuse_fake=False,
    reuse_z=True)`` with ``wgan(clip=clip_value)``."""
    history = []
    for i, imgs in enumerate(batches):
        real_imgs = imgs
        # Train Discriminator
        opt_d.zero_grad()
        z = _as_floats(rng.normal(0, 1, (imgs.shape[0], latent_dim)), imgs)
        fake_imgs = G(z).detach()
        loss_D = -torch.mean(D(real_imgs)) + torch.mean(D(fake_imgs))
        loss_D.backward()
        opt_d.step()
        for p in D.parameters():
            p.data.clamp_(-clip_value, clip_value)
        row = {"loss_d": loss_D.item()}
        # Train the generator every n_critic iterations
        if i % n_critic == 0:
            opt_g.zero_grad()
            gen_imgs = G(z)
            loss_G = -torch.mean(D(gen_imgs))
            loss_G.backward()
            opt_g.step()
            row["loss_g"] = loss_G.item()
        history.append(row)
    return history


def pytorch_gan_bgan(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                     latent_dim: int):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/bgan/bgan.py``, one epoch of it: per
    batch G's step first, on ``generator(z)`` with z from numpy's generator (``rng``
    stands for ``np.random``), its loss ``boundary_seeking_loss(discriminator(gen_imgs),
    valid)`` = 0.5 mean((log p - log(1 - p))^2) on D's Sigmoid output (D not frozen);
    then D's step on the real batch and ``gen_imgs.detach()``, ``(BCELoss(real, 1) +
    BCELoss(fake, 0)) / 2``. ganstep: ``simultaneous()`` with
    ``BGAN(probabilities=True)`` and ``d_scale=0.5``."""

    def boundary_seeking_loss(y_pred, y_true):
        return 0.5 * torch.mean((torch.log(y_pred) - torch.log(1 - y_pred)) ** 2)

    discriminator_loss = torch.nn.BCELoss()
    history = []
    for imgs in batches:
        valid = torch.ones(imgs.shape[0], 1, dtype=imgs.dtype)
        fake = torch.zeros(imgs.shape[0], 1, dtype=imgs.dtype)
        real_imgs = imgs
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (imgs.shape[0], latent_dim)), imgs)
        gen_imgs = G(z)
        g_loss = boundary_seeking_loss(D(gen_imgs), valid)
        g_loss.backward()
        opt_g.step()
        opt_d.zero_grad()
        real_loss = discriminator_loss(D(real_imgs), valid)
        fake_loss = discriminator_loss(D(gen_imgs.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_ebgan(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                      latent_dim: int, lambda_pt: float = 0.1,
                      batch_size: int = 64):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/ebgan/ebgan.py`` (commit a354923),
    one epoch of it. D is an autoencoder returning ``(reconstruction, embedding)``. Per
    batch G's step first, z from numpy's generator (``rng`` stands for ``np.random``):
    ``pixelwise_loss(recon_imgs, gen_imgs.detach()) + lambda_pt *
    pullaway_loss(img_embeddings)`` (``MSELoss``; D not frozen); then D's step on the
    real batch and ``gen_imgs.detach()``: ``d_loss = d_loss_real``, and ``d_loss +=
    margin - d_loss_fake`` where ``(margin - d_loss_fake.data).item() > 0``, with
    ``margin = max(1, opt.batch_size / 64.)`` from the script's flag (``batch_size``, its
    default 64), not from each batch's rows. ganstep: ``simultaneous()``,
    ``EBGAN(margin, detach_target=True)`` and ``g_terms={"pt": (lambda_pt,
    views.pull_away())}``."""

    def pullaway_loss(embeddings):
        norm = torch.sqrt(torch.sum(embeddings**2, -1, keepdim=True))
        normalized_emb = embeddings / norm
        similarity = torch.matmul(normalized_emb, normalized_emb.transpose(1, 0))
        batch_size = embeddings.size(0)
        loss_pt = (torch.sum(similarity) - batch_size) / (batch_size * (batch_size - 1))
        return loss_pt

    pixelwise_loss = nn.MSELoss()
    margin = max(1, batch_size / 64.0)
    history = []
    for imgs in batches:
        real_imgs = imgs
        # Train Generator
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (imgs.shape[0], latent_dim)), imgs)
        gen_imgs = G(z)
        recon_imgs, img_embeddings = D(gen_imgs)
        g_loss = pixelwise_loss(recon_imgs, gen_imgs.detach()) + \
            lambda_pt * pullaway_loss(img_embeddings)  # fmt: skip
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_recon, _ = D(real_imgs)
        fake_recon, _ = D(gen_imgs.detach())
        d_loss_real = pixelwise_loss(real_recon, real_imgs)
        d_loss_fake = pixelwise_loss(fake_recon, gen_imgs.detach())
        d_loss = d_loss_real
        if (margin - d_loss_fake.data).item() > 0:
            d_loss += margin - d_loss_fake
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_wgan_div(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                         latent_dim: int, n_critic: int = 5, k: float = 2,
                         p: float = 6):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/wgan_div/wgan_div.py`` (commit
    2281f6d), one epoch of it: per batch, the real images require grad (``Variable(...,
    requires_grad=True)``), z from numpy's generator (``rng`` stands for ``np.random``),
    ``fake_imgs = generator(z)`` kept in G's graph, D on both; the W-div penalty from
    those two forwards (D's gradient at the real and at the fake images, ``grad_outputs``
    ones, ``|grad|^p`` per sample, ``k / 2 * mean(real + fake)``), ``d_loss =
    -mean(D(real)) + mean(D(fake)) + div_gp`` backpropagated (into G's weights too,
    which ``optimizer_G.zero_grad()`` then clears) and D's step; every ``n_critic``-th
    batch a G step on ``generator(z)`` forwarded again on the same z. ganstep:
    ``d_first(g_every=n_critic, reuse_fake=False, reuse_z=True)`` with ``wgan`` whose
    penalty reads the loss forwards (``penalty_at = "loss_forwards"``,
    docs/guide/objectives.md)."""
    history = []
    for i, imgs in enumerate(batches):
        real_imgs = imgs.clone().requires_grad_(True)
        # Train Discriminator
        opt_d.zero_grad()
        z = _as_floats(rng.normal(0, 1, (imgs.shape[0], latent_dim)), imgs)
        fake_imgs = G(z)
        real_validity = D(real_imgs)
        fake_validity = D(fake_imgs)
        real_grad = torch.autograd.grad(real_validity, real_imgs, torch.ones_like(real_validity),
                                        create_graph=True, retain_graph=True,
                                        only_inputs=True)[0]  # fmt: skip
        real_grad_norm = real_grad.view(real_grad.size(0), -1).pow(2).sum(1) ** (p / 2)
        fake_grad = torch.autograd.grad(fake_validity, fake_imgs, torch.ones_like(fake_validity),
                                        create_graph=True, retain_graph=True,
                                        only_inputs=True)[0]  # fmt: skip
        fake_grad_norm = fake_grad.view(fake_grad.size(0), -1).pow(2).sum(1) ** (p / 2)
        div_gp = torch.mean(real_grad_norm + fake_grad_norm) * k / 2
        d_loss = -torch.mean(real_validity) + torch.mean(fake_validity) + div_gp
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        row = {"loss_d": d_loss.item(), "gp": div_gp.item()}
        # Train the generator every n_critic steps
        if i % n_critic == 0:
            fake_imgs = G(z)
            g_loss = -torch.mean(D(fake_imgs))
            g_loss.backward()
            opt_g.step()
            row["loss_g"] = g_loss.item()
        history.append(row)
    return history


def pytorch_gan_relativistic(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                             latent_dim: int, rel_avg_gan: bool = False):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/relativistic_gan/relativistic_gan.py``
    (commit 9372efe), one epoch of it. G's step first: z from numpy's generator (``rng``
    stands for ``np.random``), ``gen_imgs = generator(z)``, D on the real batch
    (``.detach()``) and on ``gen_imgs``, a relativistic G loss from them that the next
    line overwrites with ``BCEWithLogits(discriminator(gen_imgs), valid)``: D runs three
    times, and G trains on the plain non-saturating loss of the third forward. Then D's
    step on the real batch and ``gen_imgs.detach()`` with the relativistic D loss
    (paired, or averaged with ``--rel_avg_gan``), halved. ganstep: ``simultaneous()``,
    an ``rsgan`` (``rasgan``) whose L_G is ``ns``'s, ``g_forwards=("real", "fake",
    "fake")``."""
    adversarial_loss = nn.BCEWithLogitsLoss()
    history = []
    for imgs in batches:
        valid = torch.ones(imgs.shape[0], 1, dtype=imgs.dtype)
        fake = torch.zeros(imgs.shape[0], 1, dtype=imgs.dtype)
        real_imgs = imgs
        # Train Generator
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (imgs.shape[0], latent_dim)), imgs)
        gen_imgs = G(z)
        real_pred = D(real_imgs).detach()
        fake_pred = D(gen_imgs)
        if rel_avg_gan:
            g_loss = adversarial_loss(fake_pred - real_pred.mean(0, keepdim=True), valid)
        else:
            g_loss = adversarial_loss(fake_pred - real_pred, valid)
        # Loss measures generator's ability to fool the discriminator
        g_loss = adversarial_loss(D(gen_imgs), valid)
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_pred = D(real_imgs)
        fake_pred = D(gen_imgs.detach())
        if rel_avg_gan:
            real_loss = adversarial_loss(real_pred - fake_pred.mean(0, keepdim=True), valid)
            fake_loss = adversarial_loss(fake_pred - real_pred.mean(0, keepdim=True), fake)
        else:
            real_loss = adversarial_loss(real_pred - fake_pred, valid)
            fake_loss = adversarial_loss(fake_pred - real_pred, fake)
        d_loss = (real_loss + fake_loss) / 2
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_stargan(G, D, opt_g, opt_d, batches: Pairs, rng: np.random.RandomState,
                        c_dim: int, n_critic: int = 5, lambda_cls: float = 1.0,
                        lambda_rec: float = 10.0, lambda_gp: float = 10.0):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/stargan/stargan.py`` (commit
    ce0e5b5; its ``models.py`` at e0a8f3c: ``D(x)`` returns a PatchGAN map and the
    class logits), one epoch of it on ``(imgs, labels)`` batches (float attribute
    labels). Per batch: target labels ``sampled_c = np.random.randint(0, 2, (n,
    c_dim))`` (``rng`` stands for ``np.random``), ``fake_imgs = generator(imgs,
    sampled_c)``; D's step on the real images and ``fake_imgs.detach()``: ``-mean(real)
    + mean(fake)``, the gradient penalty after both forwards (numpy's alpha per sample,
    ``lambda_gp`` times), and ``criterion_cls(pred_cls, labels)`` (BCE with logits
    summed, over n: the script's ``size_average=False``, written ``reduction="sum"``).
    Every ``n_critic``-th batch (``i % n_critic == 0``) G's step: ``generator(imgs,
    sampled_c)`` again, the reconstruction ``generator(gen_imgs, labels)``, D on the
    translation, ``-mean(validity) + lambda_cls * cls(pred, sampled_c) + lambda_rec *
    L1(recov, imgs)``. ganstep: ``d_first(g_every=n_critic, reuse_fake=False,
    reuse_z=True)``, ``latent=None``, the condition ``(imgs, sampled_c)`` unpacked into
    G, ``d_conditional=False``, ``WGANGP(alpha=...)`` on the same numpy stream, a D
    term and two G terms (docs/loops.md)."""

    def criterion_cls(logit, target):
        return F.binary_cross_entropy_with_logits(logit, target, reduction="sum") / logit.size(0)

    history = []
    for i, (imgs, labels) in enumerate(batches):
        # Sample labels as generator inputs
        sampled_c = _as_floats(rng.randint(0, 2, (imgs.size(0), c_dim)), imgs)
        fake_imgs = G(imgs, sampled_c)
        # Train Discriminator
        opt_d.zero_grad()
        real_validity, pred_cls = D(imgs)
        fake_validity, _ = D(fake_imgs.detach())
        # compute_gradient_penalty(discriminator, imgs.data, fake_imgs.data)
        real_samples, fake_samples = imgs.detach(), fake_imgs.detach()
        alpha = _as_floats(rng.random((real_samples.size(0), 1, 1, 1)), imgs)
        interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
        d_interpolates, _ = D(interpolates)
        gradients = torch.autograd.grad(outputs=d_interpolates, inputs=interpolates,
                                        grad_outputs=torch.ones_like(d_interpolates),
                                        create_graph=True, retain_graph=True,
                                        only_inputs=True)[0]  # fmt: skip
        gradients = gradients.view(gradients.size(0), -1)
        gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
        loss_D_adv = (-torch.mean(real_validity) + torch.mean(fake_validity)
                      + lambda_gp * gradient_penalty)  # fmt: skip
        loss_D_cls = criterion_cls(pred_cls, labels)
        loss_D = loss_D_adv + lambda_cls * loss_D_cls
        loss_D.backward()
        opt_d.step()
        opt_g.zero_grad()
        row = {"loss_d": loss_D.item(), "gp": lambda_gp * gradient_penalty.item(),
               "d_cls": loss_D_cls.item()}  # fmt: skip
        # Every n_critic times update generator
        if i % n_critic == 0:
            gen_imgs = G(imgs, sampled_c)
            recov_imgs = G(gen_imgs, labels)
            fake_validity, pred_cls = D(gen_imgs)
            loss_G_adv = -torch.mean(fake_validity)
            loss_G_cls = criterion_cls(pred_cls, sampled_c)
            loss_G_rec = F.l1_loss(recov_imgs, imgs)
            loss_G = loss_G_adv + lambda_cls * loss_G_cls + lambda_rec * loss_G_rec
            loss_G.backward()
            opt_g.step()
            row.update(
                loss_g=loss_G.item(), g_cls=loss_G_cls.item(), rec=lambda_rec * loss_G_rec.item()
            )
        history.append(row)
    return history


def pytorch_gan_discogan(G_AB, G_BA, D_A, D_B, opt_g, opt_d_a, opt_d_b, batches: Pairs):
    """eriklindernoren/PyTorch-GAN ``implementations/discogan/discogan.py`` (commit
    e0a8f3c), one epoch of it on ``(real_A, real_B)`` batches. G's step first (one Adam
    over G_AB and G_BA): ``fake_B = G_AB(real_A)`` judged by D_B, ``fake_A =
    G_BA(real_B)`` by D_A (``MSELoss`` against ones, the two averaged), the pixelwise L1
    of each fake against the other domain's real batch (averaged), the cycle L1 of
    ``G_BA(fake_B)`` and ``G_AB(fake_A)`` (averaged). Then D_A's step on ``real_A`` and
    ``fake_A.detach()``, then D_B's (each its own Adam), ``(MSE(real, 1) + MSE(fake,
    0)) / 2``. ganstep: ``CycleStep`` (its D_A judges domain B: DiscoGAN's D_B) with
    ``lsgan``, ``g_scale=1``, ``cycle=0.5``, ``identity=0``, no pool, DiscoGAN's
    ``g_order`` and ``discriminator_order`` and the pixelwise term."""
    adversarial_loss, cycle_loss, pixelwise_loss = nn.MSELoss(), nn.L1Loss(), nn.L1Loss()
    history = []
    for real_A, real_B in batches:
        # Train Generators
        G_AB.train()
        G_BA.train()
        opt_g.zero_grad()
        fake_B = G_AB(real_A)
        pred = D_B(fake_B)
        valid, fake = torch.ones_like(pred), torch.zeros_like(pred)
        loss_GAN_AB = adversarial_loss(pred, valid)
        fake_A = G_BA(real_B)
        loss_GAN_BA = adversarial_loss(D_A(fake_A), valid)
        loss_GAN = (loss_GAN_AB + loss_GAN_BA) / 2
        loss_pixelwise = (pixelwise_loss(fake_A, real_A) + pixelwise_loss(fake_B, real_B)) / 2
        loss_cycle_A = cycle_loss(G_BA(fake_B), real_A)
        loss_cycle_B = cycle_loss(G_AB(fake_A), real_B)
        loss_cycle = (loss_cycle_A + loss_cycle_B) / 2
        loss_G = loss_GAN + loss_cycle + loss_pixelwise
        loss_G.backward()
        opt_g.step()
        # Train Discriminator A
        opt_d_a.zero_grad()
        loss_real = adversarial_loss(D_A(real_A), valid)
        loss_fake = adversarial_loss(D_A(fake_A.detach()), fake)
        loss_D_A = (loss_real + loss_fake) / 2
        loss_D_A.backward()
        opt_d_a.step()
        # Train Discriminator B
        opt_d_b.zero_grad()
        loss_real = adversarial_loss(D_B(real_B), valid)
        loss_fake = adversarial_loss(D_B(fake_B.detach()), fake)
        loss_D_B = (loss_real + loss_fake) / 2
        loss_D_B.backward()
        opt_d_b.step()
        history.append({"loss_G": loss_G.item(), "pixel": loss_pixelwise.item(),
                        "loss_D_A": loss_D_A.item(), "loss_D_B": loss_D_B.item()})  # fmt: skip
    return history


class ReplayBuffer:
    """PyTorch-GAN ``implementations/cyclegan/utils.py``'s buffer of past fakes (50 by
    default): each image of ``push_and_pop``'s batch is returned as it is while the
    buffer fills; then, where ``random.uniform(0, 1) > 0.5``, a stored image drawn by
    ``random.randint`` is returned and the new one takes its place, else the new one
    is returned. ganstep: ``CycleStep(fake_pool=50)``, which draws so too."""

    def __init__(self, max_size: int = 50) -> None:
        assert max_size > 0, "Empty buffer or trying to create a black hole. Be careful."
        self.max_size = max_size
        self.data: list[torch.Tensor] = []

    def push_and_pop(self, data: torch.Tensor) -> torch.Tensor:
        to_return = []
        for element in data.data:
            element = torch.unsqueeze(element, 0)
            if len(self.data) < self.max_size:
                self.data.append(element)
                to_return.append(element)
            elif random.uniform(0, 1) > 0.5:
                i = random.randint(0, self.max_size - 1)
                to_return.append(self.data[i].clone())
                self.data[i] = element
            else:
                to_return.append(element)
        return torch.cat(to_return)


def pytorch_gan_cyclegan(G_AB, G_BA, D_A, D_B, opt_g, opt_d_a, opt_d_b, batches: Pairs,
                         lambda_cyc: float = 10.0, lambda_id: float = 5.0,
                         buffer_size: int = 50):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/cyclegan/cyclegan.py`` (commit
    ce0e5b5), one epoch of it on ``(real_A, real_B)`` batches. G's step first (one Adam
    over G_AB and G_BA, both Ds trained on along: their gradients of G's loss are
    zeroed before their own steps): the identity L1s of ``G_BA(real_A)`` and
    ``G_AB(real_B)`` (averaged), ``fake_B = G_AB(real_A)`` judged by D_B, ``fake_A =
    G_BA(real_B)`` by D_A (``MSELoss`` against ones, averaged), the cycle L1s of
    ``G_BA(fake_B)`` and ``G_AB(fake_A)`` (averaged); ``loss_GAN + lambda_cyc *
    loss_cycle + lambda_id * loss_identity``. Then D_A's step (its own Adam) on
    ``real_A`` and ``fake_A_buffer.push_and_pop(fake_A)``, then D_B's on ``real_B`` and
    the pooled ``fake_B``, each ``(MSE(real, 1) + MSE(fake, 0)) / 2``. ganstep:
    ``CycleStep`` (its D_A judges domain B: this script's D_B) with ``lsgan``,
    ``g_scale=1``, ``cycle=lambda_cyc / 2``, ``identity=lambda_id / lambda_cyc``,
    ``fake_pool=50``, ``discriminator_order=("D_B", "D_A")`` and the identity forwards
    first: ``g_order=("idt_B", "idt_A", "fake_B", "fake_A", "rec_A", "rec_B")``."""
    criterion_GAN, criterion_cycle, criterion_identity = nn.MSELoss(), nn.L1Loss(), nn.L1Loss()
    fake_A_buffer, fake_B_buffer = ReplayBuffer(buffer_size), ReplayBuffer(buffer_size)
    history = []
    for real_A, real_B in batches:
        # Train Generators
        G_AB.train()
        G_BA.train()
        opt_g.zero_grad()
        loss_id_A = criterion_identity(G_BA(real_A), real_A)
        loss_id_B = criterion_identity(G_AB(real_B), real_B)
        loss_identity = (loss_id_A + loss_id_B) / 2
        fake_B = G_AB(real_A)
        pred = D_B(fake_B)  # (the script's targets: ones and zeros of D's output shape)
        valid, fake = torch.ones_like(pred), torch.zeros_like(pred)
        loss_GAN_AB = criterion_GAN(pred, valid)
        fake_A = G_BA(real_B)
        loss_GAN_BA = criterion_GAN(D_A(fake_A), valid)
        loss_GAN = (loss_GAN_AB + loss_GAN_BA) / 2
        recov_A = G_BA(fake_B)
        loss_cycle_A = criterion_cycle(recov_A, real_A)
        recov_B = G_AB(fake_A)
        loss_cycle_B = criterion_cycle(recov_B, real_B)
        loss_cycle = (loss_cycle_A + loss_cycle_B) / 2
        loss_G = loss_GAN + lambda_cyc * loss_cycle + lambda_id * loss_identity
        loss_G.backward()
        opt_g.step()
        # Train Discriminator A
        opt_d_a.zero_grad()
        loss_real = criterion_GAN(D_A(real_A), valid)
        fake_A_ = fake_A_buffer.push_and_pop(fake_A)
        loss_fake = criterion_GAN(D_A(fake_A_.detach()), fake)
        loss_D_A = (loss_real + loss_fake) / 2
        loss_D_A.backward()
        opt_d_a.step()
        # Train Discriminator B
        opt_d_b.zero_grad()
        loss_real = criterion_GAN(D_B(real_B), valid)
        fake_B_ = fake_B_buffer.push_and_pop(fake_B)
        loss_fake = criterion_GAN(D_B(fake_B_.detach()), fake)
        loss_D_B = (loss_real + loss_fake) / 2
        loss_D_B.backward()
        opt_d_b.step()
        history.append({"loss_G": loss_G.item(), "loss_GAN": loss_GAN.item(),
                        "loss_cycle": loss_cycle.item(), "loss_identity": loss_identity.item(),
                        "loss_D_A": loss_D_A.item(), "loss_D_B": loss_D_B.item()})  # fmt: skip
    return history


def pytorch_gan_dualgan(G_AB, G_BA, D_A, D_B, opt_g, opt_d_a, opt_d_b, batches: Pairs,
                        rng: np.random.RandomState, n_critic: int = 5, lambda_adv: float = 1.0,
                        lambda_cycle: float = 100.0, lambda_gp: float = 10.0):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/dualgan/dualgan.py`` (commit
    06c59c1), one epoch of it on ``(imgs_A, imgs_B)`` batches. D's step first (each D
    its Adam): ``fake_A = G_BA(imgs_B)``, ``fake_B = G_AB(imgs_A)`` (in G's graph, which
    ``optimizer_G.zero_grad()`` later clears); domain A: the gradient penalty first
    (numpy's alpha per sample, ``rng`` standing for ``np.random``), then ``-mean(D_A(
    imgs_A)) + mean(D_A(fake_A)) + lambda_gp * gp_A``; domain B likewise; both backward,
    both step. Every ``n_critic``-th batch (``i % n_critic == 0``) G's step: G's four
    forwards anew (``fake_A``, ``fake_B``, ``recov_A``, ``recov_B``), ``-mean(D_A(fake_A))
    - mean(D_B(fake_B))`` plus ``lambda_cycle`` times the two cycle L1s. ganstep:
    ``CycleStep(order="d_first", g_every=n_critic)`` with ``WGANGP(alpha=...)`` whose
    penalty runs before the loss forwards (``penalty_at = "before"``), DualGAN's
    ``g_order`` and ``discriminator_order``, ``cycle=lambda_cycle``, ``identity=0``."""
    cycle_loss = nn.L1Loss()

    def compute_gradient_penalty(D, real_samples, fake_samples):
        alpha = _as_floats(rng.random((real_samples.size(0), 1, 1, 1)), real_samples)
        interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
        d_interpolates = D(interpolates)
        gradients = torch.autograd.grad(outputs=d_interpolates, inputs=interpolates,
                                        grad_outputs=torch.ones_like(d_interpolates),
                                        create_graph=True, retain_graph=True,
                                        only_inputs=True)[0]  # fmt: skip
        gradients = gradients.view(gradients.size(0), -1)
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()

    history = []
    for i, (imgs_A, imgs_B) in enumerate(batches):
        # Train Discriminators
        opt_d_a.zero_grad()
        opt_d_b.zero_grad()
        fake_A = G_BA(imgs_B)
        fake_B = G_AB(imgs_A)
        gp_A = compute_gradient_penalty(D_A, imgs_A.data, fake_A.data)
        D_A_loss = -torch.mean(D_A(imgs_A)) + torch.mean(D_A(fake_A)) + lambda_gp * gp_A
        gp_B = compute_gradient_penalty(D_B, imgs_B.data, fake_B.data)
        D_B_loss = -torch.mean(D_B(imgs_B)) + torch.mean(D_B(fake_B)) + lambda_gp * gp_B
        D_A_loss.backward()
        D_B_loss.backward()
        opt_d_a.step()
        opt_d_b.step()
        row = {"D_A_loss": D_A_loss.item(), "D_B_loss": D_B_loss.item(),
               "gp_A": lambda_gp * gp_A.item(), "gp_B": lambda_gp * gp_B.item()}  # fmt: skip
        if i % n_critic == 0:
            # Train Generators
            opt_g.zero_grad()
            fake_A = G_BA(imgs_B)
            fake_B = G_AB(imgs_A)
            recov_A = G_BA(fake_B)
            recov_B = G_AB(fake_A)
            G_adv = -torch.mean(D_A(fake_A)) - torch.mean(D_B(fake_B))
            G_cycle = cycle_loss(recov_B, imgs_B) + cycle_loss(recov_A, imgs_A)
            G_loss = lambda_adv * G_adv + lambda_cycle * G_cycle
            G_loss.backward()
            opt_g.step()
            row["G_loss"] = G_loss.item()
        history.append(row)
    return history


def pytorch_gan_bicyclegan(generator, encoder, D_VAE, D_LR, opt_e, opt_g, opt_d_vae, opt_d_lr,
                           batches: Pairs, rng: np.random.RandomState, latent_dim: int,
                           lambda_pixel: float = 10.0, lambda_latent: float = 0.5,
                           lambda_kl: float = 0.01):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/bicyclegan/bicyclegan.py`` (commit
    2786f1a), one epoch of it on ``(real_A, real_B)`` batches; ``rng`` stands for
    ``np.random``, ``D.compute_loss(x, gt)`` is ``models.py``'s (the sum over the
    multi-scale D's outputs of ``mean((out - gt)^2)``). Generator and encoder: the
    cVAE-GAN's ``fake_B`` from the reparameterized encoding of ``real_B`` (the noise
    from numpy), its pixel L1, KL and D_VAE loss; the cLR-GAN's ``_fake_B`` from a numpy
    code and its D_LR loss; ``loss_GE.backward(retain_graph=True)``, **E steps**; then
    the latent L1 of ``encoder(_fake_B)`` (the updated E) against the code, backward,
    G steps. Then D_VAE's step on ``real_B`` and ``fake_B.detach()``, D_LR's on
    ``real_B`` and ``_fake_B.detach()``, each its own Adam. ganstep: ``BicycleStep``."""

    def compute_loss(D, x, gt):
        return sum([torch.mean((out - gt) ** 2) for out in D(x)])

    def reparameterization(mu, logvar):
        std = torch.exp(logvar / 2)
        sampled_z = _as_floats(rng.normal(0, 1, (mu.size(0), latent_dim)), mu)
        return sampled_z * std + mu

    mae_loss = nn.L1Loss()
    valid, fake = 1, 0
    history = []
    for real_A, real_B in batches:
        # Train Generator and Encoder
        opt_e.zero_grad()
        opt_g.zero_grad()
        mu, logvar = encoder(real_B)
        encoded_z = reparameterization(mu, logvar)
        fake_B = generator(real_A, encoded_z)
        loss_pixel = mae_loss(fake_B, real_B)
        loss_kl = 0.5 * torch.sum(torch.exp(logvar) + mu**2 - logvar - 1)
        loss_VAE_GAN = compute_loss(D_VAE, fake_B, valid)
        sampled_z = _as_floats(rng.normal(0, 1, (real_A.size(0), latent_dim)), real_A)
        _fake_B = generator(real_A, sampled_z)
        loss_LR_GAN = compute_loss(D_LR, _fake_B, valid)
        loss_GE = loss_VAE_GAN + loss_LR_GAN + lambda_pixel * loss_pixel + lambda_kl * loss_kl
        loss_GE.backward(retain_graph=True)
        opt_e.step()
        # Generator Only Loss
        _mu, _ = encoder(_fake_B)
        loss_latent = lambda_latent * mae_loss(_mu, sampled_z)
        loss_latent.backward()
        opt_g.step()
        # Train Discriminator (cVAE-GAN)
        opt_d_vae.zero_grad()
        loss_D_VAE = compute_loss(D_VAE, real_B, valid) + compute_loss(D_VAE, fake_B.detach(), fake)
        loss_D_VAE.backward()
        opt_d_vae.step()
        # Train Discriminator (cLR-GAN)
        opt_d_lr.zero_grad()
        loss_D_LR = compute_loss(D_LR, real_B, valid) + compute_loss(D_LR, _fake_B.detach(), fake)
        loss_D_LR.backward()
        opt_d_lr.step()
        row = {"loss_GE": loss_GE, "loss_pixel": loss_pixel, "loss_kl": loss_kl,
               "loss_latent": loss_latent, "loss_D_VAE": loss_D_VAE,
               "loss_D_LR": loss_D_LR}  # fmt: skip
        history.append({key: value.item() for key, value in row.items()})
    return history


def pytorch_gan_esrgan(G, D, opt_g, opt_d, batches: Pairs, feature_extractor: nn.Module,
                       lambda_adv: float = 5e-3, lambda_pixel: float = 1e-2,
                       warmup_batches: int = 500):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/esrgan/esrgan.py`` (commit fd9f071),
    one epoch of it (``batches_done`` counts its batches). ``batches`` are (imgs_hr,
    imgs_lr) pairs; ``G(imgs_lr)`` super-resolves; D returns a map of logits per image.
    Before ``warmup_batches`` batches, a G step on the pixel L1 alone and no D step.
    After: G's step on ``loss_content + lambda_adv * loss_GAN + lambda_pixel *
    loss_pixel``, where the content loss is the L1 between ``feature_extractor``'s
    features of the fake and of the real batch (VGG19's there) and the relativistic
    loss is one term, ``BCE(pred_fake - pred_real.mean(0, keepdim=True), valid)``, with
    ``pred_real = D(imgs_hr).detach()`` forwarded first; then D's step on ``D(imgs_hr)``
    and ``D(gen_hr.detach())``, ``(BCE(real - fake.mean(0), 1) + BCE(fake -
    real.mean(0), 0)) / 2``, each mean per location of the map. D is not frozen in G's
    step (its gradients are cleared before its own).
    ganstep: ``simultaneous()``, ``latent=None``, ``condition="real"``,
    ``d_conditional=False``, ``RaSGAN(g_real_term=False, per_location=True)``,
    ``g_scale=lambda_adv``, content and pixel terms, ``d_forwards="loop"`` (its D has
    BatchNorm: the loop's forwards give the loop's running statistics too); the
    warm-up is a plain L1 loop before the Step's iterations."""
    criterion_gan, criterion_content, criterion_pixel = (
        nn.BCEWithLogitsLoss(),
        nn.L1Loss(),
        nn.L1Loss(),
    )
    history = []
    for batches_done, (imgs_hr, imgs_lr) in enumerate(batches):
        # Train Generators
        opt_g.zero_grad()
        gen_hr = G(imgs_lr)
        loss_pixel = criterion_pixel(gen_hr, imgs_hr)
        if batches_done < warmup_batches:
            loss_pixel.backward()
            opt_g.step()
            history.append({"l1": loss_pixel.item()})
            continue
        pred_real = D(imgs_hr).detach()
        pred_fake = D(gen_hr)
        valid, fake = torch.ones_like(pred_fake), torch.zeros_like(pred_fake)
        loss_gan = criterion_gan(pred_fake - pred_real.mean(0, keepdim=True), valid)
        gen_features = feature_extractor(gen_hr)
        real_features = feature_extractor(imgs_hr).detach()
        loss_content = criterion_content(gen_features, real_features)
        loss_G = loss_content + lambda_adv * loss_gan + lambda_pixel * loss_pixel
        loss_G.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        pred_real = D(imgs_hr)
        pred_fake = D(gen_hr.detach())
        loss_real = criterion_gan(pred_real - pred_fake.mean(0, keepdim=True), valid)
        loss_fake = criterion_gan(pred_fake - pred_real.mean(0, keepdim=True), fake)
        loss_D = (loss_real + loss_fake) / 2
        loss_D.backward()
        opt_d.step()
        history.append({"loss_d": loss_D.item(), "loss_g": loss_G.item(),
                        "content": loss_content.item(), "l1": loss_pixel.item()})  # fmt: skip
    return history


def pytorch_gan_srgan(G, D, opt_g, opt_d, batches: Pairs, feature_extractor: nn.Module):
    """eriklindernoren/PyTorch-GAN ``implementations/srgan/srgan.py`` (commit ce0e5b5),
    one epoch of it. ``batches`` are (imgs_hr, imgs_lr) pairs; ``G(imgs_lr)``
    super-resolves; D returns a map of scores per image (its PatchGAN, with BatchNorm).
    G's step first: ``loss_content + 1e-3 * MSE(D(gen_hr), valid)``, the content loss
    the L1 between ``feature_extractor``'s features of the fake and of the real batch
    (VGG19's there, in eval mode), the real features detached; then D's step on
    ``D(imgs_hr)`` and ``D(gen_hr.detach())``: ``(MSE(real, valid) + MSE(fake, fake)) / 2``.
    (``valid`` and ``fake`` are ones and zeros of D's output shape, made there with
    ``Tensor(np.ones(...))``: float32 there, D's dtype here.) D's step runs at the D that
    took G's loss, on the fakes of the G before its step: both gradients at (g_t, d_t).
    ganstep: ``simultaneous()``, ``objective="lsgan"`` (0.5 (s - 1)^2: ``g_scale=2e-3``
    is the file's 1e-3 MSE; its halved D loss is lsgan's), ``latent=None``,
    ``condition="real"``, ``d_conditional=False``, the content term, and
    ``d_forwards="loop"``: D forwarded three times as the loop does, so that its
    BatchNorm's running statistics are the loop's too (its parameters equal without)."""
    criterion_gan, criterion_content = nn.MSELoss(), nn.L1Loss()
    history = []
    for imgs_hr, imgs_lr in batches:
        # Train Generators
        opt_g.zero_grad()
        gen_hr = G(imgs_lr)
        pred_fake = D(gen_hr)
        valid, fake = torch.ones_like(pred_fake), torch.zeros_like(pred_fake)
        loss_gan = criterion_gan(pred_fake, valid)
        gen_features = feature_extractor(gen_hr)
        real_features = feature_extractor(imgs_hr)
        loss_content = criterion_content(gen_features, real_features.detach())
        loss_G = loss_content + 1e-3 * loss_gan
        loss_G.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        loss_real = criterion_gan(D(imgs_hr), valid)
        loss_fake = criterion_gan(D(gen_hr.detach()), fake)
        loss_D = (loss_real + loss_fake) / 2
        loss_D.backward()
        opt_d.step()
        history.append({"loss_d": loss_D.item(), "loss_g": loss_G.item(),
                        "content": loss_content.item()})  # fmt: skip
    return history


def pytorch_gan_dragan(G, D, opt_g, opt_d, batches: Batches, rng: np.random.RandomState,
                       latent_dim: int, lambda_gp: float = 10.0):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/dragan/dragan.py`` (commit c5d6be1),
    one epoch of it. D ends in a Sigmoid (``BCELoss``) and has Dropout2d and BatchNorm.
    G's step first, on ``BCE(D(G(z)), valid)`` with z from numpy's generator (``rng``
    stands for ``np.random``); then D's step: it forwards D on the real batch and on
    the fakes of the G before its step and computes ``d_loss = (real_loss +
    fake_loss) / 2``, but backpropagates the gradient penalty alone
    (``gradient_penalty.backward()``; ``d_loss`` is only printed). The penalty, on the
    real batch: ``alpha = np.random.random(size=X.shape)`` per element, the
    interpolates ``alpha X + (1 - alpha)(X + 0.5 X.std() torch.rand(X.size()))``, D's
    gradient there (``grad_outputs`` ones), and ``lambda_gp * mean((|grad|_2 over dim
    1 - 1)^2)``. ganstep: ``simultaneous()``, ``ns(probabilities=True)`` subclassed
    with this ``penalty`` (docs/guide/objectives.md), ``d_scale=0`` (D's step on the
    penalty alone), z from the same numpy stream."""
    criterion = nn.BCELoss()
    history = []
    for imgs in batches:
        real_imgs = imgs
        # Train Generator
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (imgs.shape[0], latent_dim)), imgs)
        gen_imgs = G(z)
        pred = D(gen_imgs)
        valid, fake = torch.ones_like(pred), torch.zeros_like(pred)
        g_loss = criterion(pred, valid)
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_loss = criterion(D(real_imgs), valid)
        fake_loss = criterion(D(gen_imgs.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        # the gradient penalty, as compute_gradient_penalty(D, real_imgs.data) does
        X = real_imgs.data
        alpha = _as_floats(rng.random(size=X.shape), X)
        interpolates = alpha * X + ((1 - alpha) * (X + 0.5 * X.std() * torch.rand(X.size())))
        interpolates = interpolates.requires_grad_(True)
        d_interpolates = D(interpolates)
        (gradients,) = torch.autograd.grad(d_interpolates, interpolates,
                                           torch.ones_like(d_interpolates),
                                           create_graph=True, retain_graph=True)  # fmt: skip
        gradient_penalty = lambda_gp * ((gradients.norm(2, dim=1) - 1) ** 2).mean()
        gradient_penalty.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item(),
                        "gp": gradient_penalty.item()})  # fmt: skip
    return history


def pytorch_gan_infogan(G, D, opt_g, opt_d, opt_info, batches: Batches,
                        rng: np.random.RandomState, latent_dim: int, n_classes: int,
                        code_dim: int, lambda_cat: float = 1.0,
                        lambda_con: float = 0.1):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/infogan/infogan.py`` (commit
    1e35104) as written; ``rng`` stands for ``np.random``. G is ``generator(z,
    label_input, code_input)`` (labels one-hot) and D returns ``(validity, label,
    code)``. G's step draws z (``normal(0, 1)``), then labels (``randint``), then the
    code (``uniform(-1, 1)``), and steps on ``MSE(validity, 1)``; D's step on the real
    batch and ``gen_imgs.detach()``, ``(d_real_loss + d_fake_loss) / 2``; then the
    information loss draws labels first, then z, then the code from ``normal(-1, 1)``
    (the script's own, not the G step's uniform), ``lambda_cat * CrossEntropy(pred_label,
    gt_labels) + lambda_con * MSE(pred_code, code_input)``, stepped by
    ``optimizer_info`` over G's and D's parameters (the script's D ends its label head
    in a ``Softmax``, which the cross-entropy reads as logits).
    ganstep: ``simultaneous()``, ``lsgan`` with ``g_scale=2``, ``info_optimizer``,
    ``info_terms`` and ``info_latent`` drawing in the info step's order."""
    adversarial_loss, categorical_loss, continuous_loss = (
        nn.MSELoss(),
        nn.CrossEntropyLoss(),
        nn.MSELoss(),
    )
    history = []
    for real_imgs in batches:
        batch_size = real_imgs.shape[0]
        valid = torch.ones(batch_size, 1, dtype=real_imgs.dtype)
        fake = torch.zeros(batch_size, 1, dtype=real_imgs.dtype)
        # Train Generator
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (batch_size, latent_dim)), real_imgs)
        label_input = _one_hot(rng.randint(0, n_classes, batch_size), n_classes, real_imgs)
        code_input = _as_floats(rng.uniform(-1, 1, (batch_size, code_dim)), real_imgs)
        gen_imgs = G(z, label_input, code_input)
        validity, _, _ = D(gen_imgs)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_pred, _, _ = D(real_imgs)
        d_real_loss = adversarial_loss(real_pred, valid)
        fake_pred, _, _ = D(gen_imgs.detach())
        d_fake_loss = adversarial_loss(fake_pred, fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        opt_d.step()
        # Information Loss
        opt_info.zero_grad()
        sampled_labels = rng.randint(0, n_classes, batch_size)
        gt_labels = torch.from_numpy(sampled_labels).long()
        z = _as_floats(rng.normal(0, 1, (batch_size, latent_dim)), real_imgs)
        label_input = _one_hot(sampled_labels, n_classes, real_imgs)
        code_input = _as_floats(rng.normal(-1, 1, (batch_size, code_dim)), real_imgs)
        gen_imgs = G(z, label_input, code_input)
        _, pred_label, pred_code = D(gen_imgs)
        info_loss = lambda_cat * categorical_loss(
            pred_label, gt_labels
        ) + lambda_con * continuous_loss(pred_code, code_input)
        info_loss.backward()
        opt_info.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item(),
                        "loss_info": info_loss.item()})  # fmt: skip
    return history


def pytorch_gan_aae(encoder, decoder, D, opt_g, opt_d, batches: Batches,
                    rng: np.random.RandomState, latent_dim: int):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/aae/aae.py`` (commit c5d6be1), one
    epoch of it: an adversarial autoencoder. ``optimizer_G`` holds the encoder's and the
    decoder's parameters (``itertools.chain``); D judges codes. The encoder draws its
    reparameterization noise from ``np.random`` in its forward (``rng`` stands for it:
    the caller's encoder draws from the same stream). G's step first:
    ``0.001 * BCE(D(encoded), 1) + 0.999 * L1(decoder(encoded), real_imgs)`` (D ends in
    a Sigmoid); then D's step on a prior sample ``z`` drawn then (``np.random.normal(0,
    1, (n, latent_dim))``, after the encoder's draw) as its real batch and
    ``encoded_imgs.detach()`` as its fakes, ``0.5 * (real_loss + fake_loss)``: both
    gradients at (g_t, d_t). ganstep: G is the encoder, ``simultaneous()``,
    ``NS(probabilities=True)``, ``latent=None``, ``condition="real"`` (each real batch
    ``(z, real_imgs)``), ``d_conditional=False``, ``g_scale=0.001``, ``d_scale=0.5`` and
    the reconstruction as a G term of weight 0.999 calling the decoder, which G's
    optimizer holds too."""
    adversarial_loss, pixelwise_loss = nn.BCELoss(), nn.L1Loss()
    history = []
    for imgs in batches:
        valid = torch.ones(imgs.shape[0], 1, dtype=imgs.dtype)
        fake = torch.zeros(imgs.shape[0], 1, dtype=imgs.dtype)
        real_imgs = imgs
        # Train Generator
        opt_g.zero_grad()
        encoded_imgs = encoder(real_imgs)
        decoded_imgs = decoder(encoded_imgs)
        g_loss = 0.001 * adversarial_loss(D(encoded_imgs), valid) + 0.999 * pixelwise_loss(
            decoded_imgs, real_imgs
        )
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        z = _as_floats(rng.normal(0, 1, (imgs.shape[0], latent_dim)), imgs)
        real_loss = adversarial_loss(D(z), valid)
        fake_loss = adversarial_loss(D(encoded_imgs.detach()), fake)
        d_loss = 0.5 * (real_loss + fake_loss)
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_cogan(G, D, opt_g, opt_d, batches: Pairs, rng: np.random.RandomState,
                      latent_dim: int):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/cogan/cogan.py`` (commit e0a8f3c),
    one epoch of it: coupled GANs over two domains (MNIST and MNIST-M there). G is
    ``coupled_generators(z)``, returning an image of each domain from shared layers; D is
    ``coupled_discriminators(img1, img2)``, scoring each through its shared convolutions
    (BatchNorm, Dropout2d) and a head per domain. ``batches`` are (imgs1, imgs2) pairs,
    imgs1 grey and expanded to three channels as the script does; ``rng`` stands for
    ``np.random``. G's step first, on the mean of the two domains' MSE against ones; then
    D's on both real images and both fakes detached, the mean of its four MSEs: both
    gradients at (g_t, d_t). ganstep: ``simultaneous()``, ``lsgan`` with ``g_scale=2``
    (its MSE is twice lsgan's 0.5 (s - 1)^2; its D loss is lsgan's), G and D through
    modules joining the two domains along the channels and D's two scores per sample
    (``d_map=True``), ``d_forwards="loop"`` (D's draws and statistics as its three
    forwards make them)."""
    adversarial_loss = nn.MSELoss()
    history = []
    for imgs1, imgs2 in batches:
        batch_size = imgs1.shape[0]
        valid = torch.ones(batch_size, 1, dtype=imgs2.dtype)
        fake = torch.zeros(batch_size, 1, dtype=imgs2.dtype)
        imgs1 = imgs1.expand(imgs1.size(0), 3, *imgs1.shape[2:])
        # Train Generators
        opt_g.zero_grad()
        z = _as_floats(rng.normal(0, 1, (batch_size, latent_dim)), imgs2)
        gen_imgs1, gen_imgs2 = G(z)
        validity1, validity2 = D(gen_imgs1, gen_imgs2)
        g_loss = (adversarial_loss(validity1, valid) + adversarial_loss(validity2, valid)) / 2
        g_loss.backward()
        opt_g.step()
        # Train Discriminators
        opt_d.zero_grad()
        validity1_real, validity2_real = D(imgs1, imgs2)
        validity1_fake, validity2_fake = D(gen_imgs1.detach(), gen_imgs2.detach())
        d_loss = (
            adversarial_loss(validity1_real, valid)
            + adversarial_loss(validity1_fake, fake)
            + adversarial_loss(validity2_real, valid)
            + adversarial_loss(validity2_fake, fake)
        ) / 4
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history


def pytorch_gan_pixelda(generator, classifier, D, opt_g, opt_d, batches, rng: np.random.RandomState,
                        latent_dim: int, patch: tuple[int, ...]):  # fmt: skip
    """eriklindernoren/PyTorch-GAN ``implementations/pixelda/pixelda.py`` (commit e0a8f3c),
    one epoch of it: pixel-level domain adaptation (MNIST to MNIST-M there). ``batches``
    are ``((imgs_A, labels_A), (imgs_B, labels_B))``, the two loaders zipped: source images
    (grey, expanded to three channels as the script does) with their labels, and target
    images. ``generator(imgs_A, z)`` translates a source image, z drawn from
    ``np.random.uniform(-1, 1, ...)`` (``rng`` stands for it); ``optimizer_G`` holds the
    generator's and the classifier's parameters (``itertools.chain``). G's step first, on
    ``MSE(D(fake_B), 1) + 0.1 * (CE(classifier(fake_B), labels_A) + CE(classifier(imgs_A),
    labels_A)) / 2`` (D a PatchGAN, its targets of shape ``(n, *patch)``); then D's on the
    target images and ``fake_B.detach()``, ``(MSE(D(imgs_B), 1) + MSE(D(fake_B), 0)) / 2``:
    both gradients at (g_t, d_t). The script's accuracy on the target images (a classifier
    forward after D's step) changes nothing and is left out. ganstep: ``simultaneous()``,
    ``lsgan`` with ``g_scale=2``, ``latent=None``, ``condition="real"`` with each condition
    ``(imgs_A, z)``, ``d_conditional=False`` and the task loss as a G term of 0.1 calling the
    classifier, which G's optimizer holds too."""
    adversarial_loss, task_loss = nn.MSELoss(), nn.CrossEntropyLoss()
    lambda_adv, lambda_task = 1, 0.1
    history = []
    for (imgs_A, labels_A), (imgs_B, _) in batches:
        batch_size = imgs_A.size(0)
        valid = torch.ones(batch_size, *patch, dtype=imgs_B.dtype)
        fake = torch.zeros(batch_size, *patch, dtype=imgs_B.dtype)
        imgs_A = imgs_A.expand(batch_size, 3, *imgs_A.shape[2:])
        # Train Generator
        opt_g.zero_grad()
        z = _as_floats(rng.uniform(-1, 1, (batch_size, latent_dim)), imgs_B)
        fake_B = generator(imgs_A, z)
        label_pred = classifier(fake_B)
        task_loss_ = (task_loss(label_pred, labels_A) + task_loss(classifier(imgs_A), labels_A)) / 2
        g_loss = lambda_adv * adversarial_loss(D(fake_B), valid) + lambda_task * task_loss_
        g_loss.backward()
        opt_g.step()
        # Train Discriminator
        opt_d.zero_grad()
        real_loss = adversarial_loss(D(imgs_B), valid)
        fake_loss = adversarial_loss(D(fake_B.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        d_loss.backward()
        opt_d.step()
        history.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return history
