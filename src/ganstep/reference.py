"""The hand-written GAN loops of the wild, kept as written, as oracles for ganstep.

Each loop is a plain function ``loop(G, D, opt_g, opt_d, batches, latent, objective)``
that trains for ``len(batches)`` iterations (``len(batches) // d_steps`` where a loop
takes several batches per iteration), draws z only through ``latent(n)``, and returns
one dict of Python floats per iteration (``loss_d``, ``loss_g``, and ``k`` for BEGAN).
They waste passes on purpose: that is what ganstep is measured against.

Losses are written here the way tutorials write them (BCE against ones and zeros,
``L1Loss``, ``log(sum(exp))``), independently of :mod:`ganstep.objectives`, so the
equivalence tests compare two implementations. Where a post divides D's loss by 2,
the loops here use the definitions of :mod:`ganstep.objectives` instead (a loss
scale is not the update order), and a single ``backward`` for D's loss (the DCGAN
example's two ``backward`` calls sum to the same gradient for separable losses,
and softmax and WGAN-GP are not separable).

========================= ======================================== ===================
loop                      source                                   ganstep schedule
========================= ======================================== ===================
``dcgan_example``         pytorch/examples dcgan; seeds 001 way 3, ``d_first()``
                          003 strategy 2, 004
``pytorch_gan_g_first``   PyTorch-GAN's scripts; seed 003 strat. 3 ``simultaneous()``
``lightning_g_first``     Lightning's GAN example                  ``g_first(reuse_z=True)``
``seed001_way1``          seed 001, way 1 (fresh z for G)          ``d_first(reuse_fake=False)``
``seed001_way2``          seed 001, way 2 (G forwarded twice)      ``d_first()``
``seed001_way3``          seed 001, way 3 (``detach``)             ``d_first()``
``seed001_way4``          seed 001, way 4 (``retain_graph``)       ``d_first()``
``seed002_original``      seed 002's first SoftmaxGAN loop         raises (in-place)
``seed002_fix1/2``        seed 002, fixes 1 and 2                  ``d_first()``
``seed002_fix3``          seed 002, fix 3 (D:G = 1:2)              ``simultaneous(d_every=2)``
``seed003_strategy1``     seed 003, strategy 1 (``retain_graph``)  raises (in-place)
``seed003_strategy2/3``   seed 003, strategies 2 and 3             ``d_first()``, ``simultaneous()``
``seed000_d_first``       seed 000's "slow" BEGAN loop             ``d_first()``
``seed000_g_first``       seed 000's "fast" BEGAN loop             ``simultaneous()``
``textbook_loop``         any D or G step counts, naive passes     ``d_first``, ``g_first``
                                                                   with options
========================= ======================================== ===================

Why the retain_graph loops raise: ``backward(retain_graph=True)`` keeps D's graph,
which saved D's weights for the input gradient; ``optimizer_D.step()`` then changes
those weights in place, bumping their version counter, and the second ``backward``
through the kept graph finds them changed: "one of the variables needed for gradient
computation has been modified by an inplace operation" (an error since PyTorch 1.5,
silently wrong gradients before). What those loops meant is ``simultaneous``: both
gradients at the old parameters, from one D forward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Batches = Sequence[Tensor]
Latent = Callable[[int], Tensor]


class _Losses:
    """Each objective as tutorials write it, on D's raw outputs; BEGAN's k_t as the paper."""

    def __init__(self, name: str, gamma: float = 0.5, lambda_k: float = 0.001) -> None:
        known = ("minimax", "ns", "lsgan", "hinge", "wgan_gp", "began", "softmax")
        if name not in known:
            raise ValueError(f"unknown objective {name!r}; choose one of: {', '.join(known)}")
        self.name, self.gamma, self.lambda_k = name, gamma, lambda_k
        self.g_needs_real = name == "softmax"
        self.kt = 0.0
        self.d_loss1: Tensor | None = None  # BEGAN's L(x) of this iteration's D step
        self.g_loss: Tensor | None = None  # BEGAN's L(G(z)) of this iteration's G step
        self.history: list[dict[str, float]] = []
        self.row: dict[str, float] = {}

    def d(self, D: nn.Module, real: Tensor, fake: Tensor, real_out: Tensor, fake_out: Tensor):
        """D's loss; ``fake`` is the fake batch cut from G (for WGAN-GP's interpolates)."""
        ones, zeros = torch.ones_like(real_out), torch.zeros_like(fake_out)
        if self.name in ("ns", "minimax"):
            loss = F.binary_cross_entropy_with_logits(
                real_out, ones
            ) + F.binary_cross_entropy_with_logits(fake_out, zeros)
        elif self.name == "lsgan":
            loss = 0.5 * F.mse_loss(real_out, ones) + 0.5 * F.mse_loss(fake_out, zeros)
        elif self.name == "hinge":
            loss = torch.relu(1.0 - real_out).mean() + torch.relu(1.0 + fake_out).mean()
        elif self.name == "wgan_gp":
            alpha = torch.rand(
                real.size(0), *[1] * (real.dim() - 1), dtype=real.dtype, device=real.device
            )
            interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
            d_interpolates = D(interpolates)
            gradients = torch.autograd.grad(
                outputs=d_interpolates,
                inputs=interpolates,
                grad_outputs=torch.ones_like(d_interpolates),
                create_graph=True,
                retain_graph=True,
            )[0]
            gradients = gradients.view(gradients.size(0), -1)
            gp = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
            loss = torch.mean(fake_out) - torch.mean(real_out) + 10 * gp
        elif self.name == "began":
            self.d_loss1 = F.l1_loss(real_out, real)
            loss = self.d_loss1 - self.kt * F.l1_loss(fake_out, fake)
        else:  # softmax
            z_b = torch.sum(torch.exp(-real_out)) + torch.sum(torch.exp(-fake_out))
            loss = torch.mean(real_out) + torch.log(z_b)
        self.row["loss_d"] = loss.item()
        return loss

    def g(self, fake: Tensor, fake_out: Tensor, real_out: Tensor | None = None):
        """G's loss; ``real_out`` is D's output on the real batch (softmax only)."""
        if self.name == "ns":
            loss = F.binary_cross_entropy_with_logits(fake_out, torch.ones_like(fake_out))
        elif self.name == "minimax":
            loss = -F.binary_cross_entropy_with_logits(fake_out, torch.zeros_like(fake_out))
        elif self.name == "lsgan":
            loss = 0.5 * F.mse_loss(fake_out, torch.ones_like(fake_out))
        elif self.name in ("hinge", "wgan_gp"):
            loss = -torch.mean(fake_out)
        elif self.name == "began":
            loss = self.g_loss = F.l1_loss(fake_out, fake)
        else:  # softmax
            b = 1 / (2 * fake_out.size(0))
            z_b = torch.sum(torch.exp(-real_out)) + torch.sum(torch.exp(-fake_out))
            loss = torch.sum(real_out) * b + torch.sum(fake_out) * b + torch.log(z_b)
        self.row["loss_g"] = loss.item()
        return loss

    def end_iteration(self) -> None:
        """Record the iteration; update BEGAN's k_t as the paper does (not seed 000's typos)."""
        if self.name == "began":
            if self.d_loss1 is not None and self.g_loss is not None:
                diff = self.gamma * self.d_loss1.item() - self.g_loss.item()
                self.kt = min(max(self.kt + self.lambda_k * diff, 0.0), 1.0)
            self.row["k"] = self.kt
            self.d_loss1 = self.g_loss = None
        self.history.append(self.row)
        self.row = {}


def _set_requires_grad(module: nn.Module, flag: bool) -> None:
    for p in module.parameters():
        p.requires_grad_(flag)


def dcgan_example(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """pytorch/examples ``dcgan/main.py``: D first on ``fake.detach()``, then G on the same fake.

    G's step runs ``D(fake)`` with D's weights still requiring grad, so D's weight
    gradients are computed there and thrown away by the next ``netD.zero_grad()``.
    """
    loss = _Losses(objective)
    for real in batches:
        # (1) Update D
        D.zero_grad()
        output_real = D(real)
        fake = G(latent(real.size(0)))
        output_fake = D(fake.detach())
        err_d = loss.d(D, real, fake.detach(), output_real, output_fake)
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


def _seed001_d_step(loss, G, D, opt_d, real_img, latent_z):
    """Seed 001, ways 1 and 2: D trains on ``gene_img`` without ``detach``.

    Its backward therefore also runs through G, computing G's weight gradients
    that G's ``zero_grad`` discards later.
    """
    gene_img = G(latent_z)
    d_loss = loss.d(D, real_img, gene_img.detach(), D(real_img), D(gene_img))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()


def _g_step(loss, D, opt_g, real_img, gene_img):
    real_logit = D(real_img) if loss.g_needs_real else None
    g_loss = loss.g(gene_img, D(gene_img), real_logit)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()


def seed001_way1(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """Seed 001, way 1: D trains on one z, then G on a new z and a new ``gene_img``."""
    loss = _Losses(objective)
    for real_img in batches:
        n = real_img.size(0)
        _seed001_d_step(loss, G, D, opt_d, real_img, latent(n))
        _g_step(loss, D, opt_g, real_img, G(latent(n)))
        loss.end_iteration()
    return loss.history


def seed001_way2(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """Seed 001, way 2: as way 1, but G's step regenerates ``G(latent_z)`` from the same z.

    Same numbers as ``d_first()``; G runs forward twice per iteration.
    """
    loss = _Losses(objective)
    for real_img in batches:
        latent_z = latent(real_img.size(0))
        _seed001_d_step(loss, G, D, opt_d, real_img, latent_z)
        _g_step(loss, D, opt_g, real_img, G(latent_z))
        loss.end_iteration()
    return loss.history


def seed001_way3(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """Seed 001, way 3 ("the standard way", ``detach``): the DCGAN example's loop."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def seed001_way4(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns", *, retain_graph=True
):
    """Seed 001, way 4: no ``detach``; D's ``backward(retain_graph=True)`` keeps G's graph.

    G's step forwards D again on ``gene_img`` and backpropagates through the kept
    graph of G. With ``retain_graph=False`` this is the post's "example that does not
    work": the second backward through G raises "Trying to backward through the graph
    a second time".
    """
    loss = _Losses(objective)
    for real_img in batches:
        gene_img = G(latent(real_img.size(0)))
        d_loss = loss.d(D, real_img, gene_img.detach(), D(real_img), D(gene_img))
        opt_d.zero_grad()
        d_loss.backward(retain_graph=retain_graph)
        opt_d.step()
        _g_step(loss, D, opt_g, real_img, gene_img)
        loss.end_iteration()
    return loss.history


def _retain_graph_then_step(G, D, opt_g, opt_d, batches, latent, objective):
    """One forward, D's backward with ``retain_graph=True``, D's step, then G's backward
    through the kept graph: raises PyTorch's in-place error (see the module docstring)."""
    loss = _Losses(objective)
    for real in batches:
        gen = G(latent(real.size(0)))
        pred_real, pred_gen = D(real), D(gen)
        d_loss = loss.d(D, real, gen.detach(), pred_real, pred_gen)
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
        g_loss = loss.g(gen, pred_gen, pred_real)
        opt_g.zero_grad()
        g_loss.backward()  # raises: opt_d.step() changed D's saved weights in place
        opt_g.step()
        loss.end_iteration()
    return loss.history


def seed003_strategy1(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """Seed 003, strategy 1: ``d_loss.backward(retain_graph=True)``, ``optimizer_D.step()``,
    then ``g_loss.backward()`` on the same ``pred_gen``. Raises since PyTorch 1.5."""
    return _retain_graph_then_step(G, D, opt_g, opt_d, batches, latent, objective)


def seed003_strategy2(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """Seed 003, strategy 2, as its text intends: G's loss on ``D(gen_imgs)`` without
    ``detach`` (the post's code reuses the detached ``pred_gen``, whose graph is freed).
    It is the DCGAN example's loop."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def seed003_strategy3(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """Seed 003, strategy 3 (G first, ``gen_imgs.detach()`` for D): PyTorch-GAN's loop."""
    return pytorch_gan_g_first(G, D, opt_g, opt_d, batches, latent, objective)


def seed002_original(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="softmax"):
    """Seed 002's first SoftmaxGAN loop: one forward, D's backward with ``retain_graph``,
    D's step, then G's backward on the same logits. Raises PyTorch's in-place error."""
    return _retain_graph_then_step(G, D, opt_g, opt_d, batches, latent, objective)


def seed002_fix1(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="softmax"):
    """Seed 002, fix 1, as its text intends: D on ``gene_img.detach()``, then G on new
    logits ``D(img)``, ``D(gene_img)`` and a recomputed Z_B (the post's code reuses the
    old Z_B, whose graph the D step freed). It is the DCGAN example's loop."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def seed002_fix2(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="softmax"):
    """Seed 002, fix 2: no ``detach``, D's ``backward(retain_graph=True)``, then G on new
    logits and a recomputed Z_B. It is seed 001's way 4."""
    return seed001_way4(G, D, opt_g, opt_d, batches, latent, objective)


def seed002_fix3(
    G,
    D,
    opt_g,
    opt_d,
    batches: Batches,
    latent: Latent,
    objective="softmax",
    *,
    d_every: int = 2,
    g_every: int = 1,
):
    """Seed 002, fix 3, as its text intends: both losses from one forward; G steps every
    iteration and D on odd ones (D:G = 1:2), both from the same parameters.

    The post's code calls ``G_loss_.backward()`` twice on odd iterations (the second
    through a freed graph) and lets each loss's gradient into the other module's step;
    ``backward(inputs=...)`` gives each optimizer its own loss's gradient. ``d_every`` and
    ``g_every`` generalise the 1:2 pattern: D steps when ``(idx + 1) % d_every == 0``.
    """
    loss = _Losses(objective)
    for idx, img in enumerate(batches):
        gene_img = G(latent(img.size(0)))
        real_logit, gene_logit = D(img), D(gene_img)
        update_d, update_g = (idx + 1) % d_every == 0, (idx + 1) % g_every == 0
        opt_d.zero_grad()
        opt_g.zero_grad()
        if update_d:
            d_loss = loss.d(D, img, gene_img.detach(), real_logit, gene_logit)
            d_loss.backward(retain_graph=update_g, inputs=list(D.parameters()))
        if update_g:
            g_loss = loss.g(gene_img, gene_logit, real_logit)
            g_loss.backward(inputs=list(G.parameters()))
        if update_d:
            opt_d.step()
        if update_g:
            opt_g.step()
        loss.end_iteration()
    return loss.history


def seed000_d_first(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="began"):
    """Seed 000's "slow" BEGAN loop (D first on ``gene_img.detach()``, then G on
    ``D(gene_img)``), with the paper's L_D = L(x) - k_t L(G(z)) and k_t update."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def seed000_g_first(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="began"):
    """Seed 000's "fast" BEGAN loop: G steps, then D on the old ``gene_img.detach()``,
    which is PyTorch-GAN's order (``simultaneous``), with the paper's k_t update."""
    return pytorch_gan_g_first(G, D, opt_g, opt_d, batches, latent, objective)


def textbook_loop(
    G,
    D,
    opt_g,
    opt_d,
    batches: Batches,
    latent: Latent,
    objective="ns",
    *,
    order: str = "d_first",
    d_steps: int = 1,
    g_steps: int = 1,
    reuse: bool = False,
):
    """The naive loop with step counts (WGAN's n_critic and the like), in either order.

    ``d_first``: ``d_steps`` D steps, each on its own batch and z, then ``g_steps`` G
    steps; with ``reuse`` the first G step reuses the last D step's fake batch.
    ``g_first``: ``g_steps`` G steps, then ``d_steps`` D steps on fakes of the updated
    G; with ``reuse`` the first D step regenerates from the last G step's z.
    Every G runs with a graph and D's weights always require grad.
    """
    if order not in ("d_first", "g_first"):
        raise ValueError(f"order must be 'd_first' or 'g_first', got {order!r}")
    loss = _Losses(objective)
    for start in range(0, len(batches) - d_steps + 1, d_steps):
        reals = batches[start : start + d_steps]
        n = reals[0].size(0)
        if order == "d_first":
            for real in reals:
                fake = G(latent(n))
                opt_d.zero_grad()
                loss.d(D, real, fake.detach(), D(real), D(fake.detach())).backward()
                opt_d.step()
            for j in range(g_steps):
                if not (reuse and j == 0):
                    fake = G(latent(n))
                _g_step(loss, D, opt_g, reals[-1], fake)
        else:
            for _ in range(g_steps):
                z = latent(n)
                _g_step(loss, D, opt_g, reals[0], G(z))
            for i, real in enumerate(reals):
                if not (reuse and i == 0):
                    z = latent(n)
                fake = G(z).detach()
                opt_d.zero_grad()
                loss.d(D, real, fake, D(real), D(fake)).backward()
                opt_d.step()
        loss.end_iteration()
    return loss.history
