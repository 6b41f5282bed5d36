"""The loops of the five blog posts that started ganstep, and the textbook loop,
named after their posts (see :mod:`ganstep.tools.reference`)."""

from __future__ import annotations

from .common import Batches, Latent, _Losses
from .pytorch_examples import dcgan_example
from .pytorch_gan import pytorch_gan_g_first


def _backward_memo_d_step(loss, G, D, opt_d, real_img, latent_z):
    """The backward memo, ways 1 and 2: D trains on ``gene_img`` without ``detach``.

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


def backward_memo_way1(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """The backward memo, way 1: D trains on one z, then G on a new z and a new ``gene_img``."""
    loss = _Losses(objective)
    for real_img in batches:
        n = real_img.size(0)
        _backward_memo_d_step(loss, G, D, opt_d, real_img, latent(n))
        _g_step(loss, D, opt_g, real_img, G(latent(n)))
        loss.end_iteration()
    return loss.history


def backward_memo_way2(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """The backward memo, way 2: as way 1, but G's step regenerates ``G(latent_z)`` from the same z.

    Same numbers as ``d_first()``; G runs forward twice per iteration.
    """
    loss = _Losses(objective)
    for real_img in batches:
        latent_z = latent(real_img.size(0))
        _backward_memo_d_step(loss, G, D, opt_d, real_img, latent_z)
        _g_step(loss, D, opt_g, real_img, G(latent_z))
        loss.end_iteration()
    return loss.history


def backward_memo_way3(G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"):
    """The backward memo, way 3 ("the standard way", ``detach``): the DCGAN example's loop."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def backward_memo_way4(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns", *, retain_graph=True
):
    """The backward memo, way 4: no ``detach``; D's ``backward(retain_graph=True)`` keeps G's graph.

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


def detach_or_retain_strategy1(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"
):
    """The detach-or-retain post, strategy 1: ``d_loss.backward(retain_graph=True)``,
    ``optimizer_D.step()``, then ``g_loss.backward()`` on the same ``pred_gen``. Raises
    since PyTorch 1.5."""
    return _retain_graph_then_step(G, D, opt_g, opt_d, batches, latent, objective)


def detach_or_retain_strategy2(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"
):
    """The detach-or-retain post, strategy 2, as its text intends: G's loss on
    ``D(gen_imgs)`` without ``detach`` (the post's code reuses the detached ``pred_gen``,
    whose graph is freed). It is the DCGAN example's loop."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def detach_or_retain_strategy3(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="ns"
):
    """The detach-or-retain post, strategy 3 (G first, ``gen_imgs.detach()`` for D):
    PyTorch-GAN's loop."""
    return pytorch_gan_g_first(G, D, opt_g, opt_d, batches, latent, objective)


def softmaxgan_graph_original(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="softmax"
):
    """The SoftmaxGAN graph post's first SoftmaxGAN loop: one forward, D's backward with
    ``retain_graph``, D's step, then G's backward on the same logits. Raises PyTorch's
    in-place error."""
    return _retain_graph_then_step(G, D, opt_g, opt_d, batches, latent, objective)


def softmaxgan_graph_fix1(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="softmax"
):
    """The SoftmaxGAN graph post, fix 1, as its text intends: D on ``gene_img.detach()``,
    then G on new logits ``D(img)``, ``D(gene_img)`` and a recomputed Z_B (the post's code
    reuses the old Z_B, whose graph the D step freed). It is the DCGAN example's loop."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def softmaxgan_graph_fix2(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="softmax"
):
    """The SoftmaxGAN graph post, fix 2: no ``detach``, D's ``backward(retain_graph=True)``,
    then G on new logits and a recomputed Z_B. It is the backward memo's way 4."""
    return backward_memo_way4(G, D, opt_g, opt_d, batches, latent, objective)


def softmaxgan_graph_fix3(
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
    """The SoftmaxGAN graph post, fix 3, as its text intends: both losses from one forward;
    G steps every iteration and D on odd ones (D:G = 1:2), both from the same parameters.

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


def which_first_post_d_first(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="began"
):
    """The which-first post's "slow" BEGAN loop (D first on ``gene_img.detach()``, then G on
    ``D(gene_img)``), with the paper's L_D = L(x) - k_t L(G(z)) and k_t update."""
    return dcgan_example(G, D, opt_g, opt_d, batches, latent, objective)


def which_first_post_g_first(
    G, D, opt_g, opt_d, batches: Batches, latent: Latent, objective="began"
):
    """The which-first post's "fast" BEGAN loop: G steps, then D on the old ``gene_img.detach()``,
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
