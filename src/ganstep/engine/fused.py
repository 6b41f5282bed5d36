"""The fused simultaneous step (FusedProp, arXiv 2004.03335): G's gradient taken from
D's one backward pass, rescaled per sample, where the math makes that exact."""

from __future__ import annotations

from functools import partial

import torch
from torch import Tensor

from .batch import Batch
from .fakes import MicroBatches
from .game import Game
from .losses import d_call, d_loss, d_outputs, scores
from .objectives import Logs
from .phases import guard, micro_batch_share, real_for_d, run_phase
from .views import View


def check_fusable(game: Game) -> None:
    """Refuse the fused step where it would not be exact (say why)."""
    objective = game.options.objective
    if objective.not_fusable is not None:
        raise ValueError(
            f"simultaneous(fused=True) cannot use objective {objective.name!r}: "
            f"{objective.not_fusable}. Use simultaneous() without fused."
        )
    if objective.penalty_at != "after":
        raise ValueError(
            f"simultaneous(fused=True) runs the objective's penalty after D's loss forwards; "
            f"this one's penalty_at is {objective.penalty_at!r}: use simultaneous() without fused"
        )
    if game.options.g_forwards is not None:
        raise ValueError(
            "simultaneous(fused=True) takes G's gradient from D's one backward; g_forwards "
            "lists D forwards of a G phase of its own: use simultaneous() without fused"
        )
    if game.options.g_terms or game.options.d_terms:
        raise ValueError(
            "simultaneous(fused=True) rescales D's gradient at the fake batch into G's, which "
            "extra loss terms would break; use simultaneous() without fused"
        )
    if game.options.augment is not None or game.options.fake_pool is not None:
        between = "a fake pool stands" if game.options.augment is None else "augmentation stands"
        raise ValueError(
            "simultaneous(fused=True) rescales D's gradient at its input into G's, and "
            f"{between} between G's output and D's input; use simultaneous() without fused"
        )
    if game.mixes_samples():
        raise ValueError(
            "simultaneous(fused=True) rescales D's gradient per sample, which is exact only "
            f"when D does not mix samples; D does: {game.mixing_reason()}. Use "
            "simultaneous() without fused."
        )
    if not game.merge_d_forwards():
        profile = game.d_profile
        what = "the loop's forwards were asked for (d_forwards='loop')"
        if profile is not None and game.options.d_forwards == "auto":
            what = f"D is {profile.describe()}"
        raise ValueError(
            "simultaneous(fused=True) shares one D forward on the fake batch between D's "
            f"and G's losses, where the loop runs two; {what}, so they differ. Use "
            "simultaneous() without fused (exact), or d_forwards='merged' to merge anyway "
            "(then D's random draws or state advance once where the loop's advance twice)."
        )


def _rows(values: Tensor, like: Tensor) -> Tensor:
    """``values`` (n,) shaped to broadcast over the samples of ``like``."""
    return values.reshape((-1,) + (1,) * (like.dim() - 1))


def _fusable_scores(game: Game, s_fake: list[Tensor], n: int) -> Tensor:
    """The one adversarial output the fused step can rescale exactly, or a clear refusal."""
    if len(s_fake) != 1:
        raise ValueError(
            f"simultaneous(fused=True) needs one adversarial output; D returned {len(s_fake)} "
            "(a multi-scale D). Use simultaneous() without fused."
        )
    (s,) = s_fake
    if s.numel() == 1 and n > 1:  # the objective took D's batch mean (WGAN)
        raise ValueError(
            f"simultaneous(fused=True) rescales G's gradient per fake sample; D returned one "
            f"number for the batch of {n} (its scores' mean). Use simultaneous() without fused."
        )
    if s.numel() != n and not game.options.objective.constant_ratio:
        raise ValueError(
            f"simultaneous(fused=True) with a map of scores per sample (D gave "
            f"{tuple(s.shape)}) is exact only when L_G's slope is a constant multiple of "
            f"L_D's (minimax, hinge, wgan_gp); {game.options.objective.name!r} varies per element. "
            "Use simultaneous() without fused."
        )
    return s


def fused_joint_phase(game: Game, real: MicroBatches, fake: MicroBatches) -> Logs:
    """:func:`joint_phase` with one backward pass through D instead of two.

    With L_D = ... + mean(h_D(s_i)) and L_G = mean(h_G(s_i)) over the fake scores s_i,
    G's gradient at fake sample i is h_G'(s_i) / h_D'(s_i) times D's (FusedProp,
    arXiv 2004.03335). So one backward of L_D, taking the gradient at the fake batch
    on the way, gives D's weight gradients and, rescaled per sample, G's gradient at
    its output; G's backward starts from there. With a map of scores per sample the
    ratio must be one number per sample: objectives with a constant ratio only.

    Where D's slope h_D'(s_i) is 0 or too small for the product to keep its precision
    (hinge below -1, a saturated ns logit, LSGAN at 0), the rescaled gradient would be
    lost. Those samples alone go through D once more for G's gradient; that check
    reads one flag on the host (a device sync each iteration on a GPU), except where
    D's slope is one constant (WGAN-GP: ``Objective.constant_slopes``), where every
    sample is hard or none is and the host knows which from the loss weights.
    """
    check_fusable(game)
    return run_phase(game, [game.d, game.g], real, fake, partial(_fused_micro, game))


def _fused_micro(game: Game, real: Batch, fake: Batch, k: int) -> Logs:
    """The fused step's gradients of one of k micro-batches (summed into .grad)."""
    objective = game.options.objective
    precision = game.precision
    n = fake.n
    real = real_for_d(game, real)
    fake_in = fake.with_x(fake.x.detach().requires_grad_(True))
    with precision.autocast():
        out_real, out_fake = d_outputs(game, real, fake_in)
        view = View("joint", real, fake_in, out_real, out_fake, game.progress.iteration)
        loss_d, logs, _, s_fake = d_loss(game, view)
    s = _fusable_scores(game, s_fake, n)
    guard(game, loss_d=loss_d)
    game.d.backward(micro_batch_share(loss_d, k), also=[fake_in.x])
    s = s.detach()
    loss_g, g_logs = objective.g_loss(s)
    d_scale, g_scale = game.d_weight(), game.g_weight()
    loss_g = g_scale * loss_g
    guard(game, loss_g=loss_g)
    d_slope, ratio = objective.fake_slopes(s)
    # D's backward carries weight h_D'(s) / (elements * k) (times D's loss scale and
    # d_scale) per score; below sqrt(tiny) of the dtype it runs in, it may underflow.
    scale_d = game.d.factor(fake.x) * d_scale
    floor = torch.finfo(fake_in.x.dtype).tiny ** 0.5
    if objective.constant_slopes and precision.name != "fp16":
        # h_D' is one nonzero constant (WGAN's 1) and the loss scale is 1: every sample
        # is hard or none is, which the host knows without reading the device.
        idx, ratio = None, ratio.reshape(n, -1)[:, 0]
        if not abs(d_scale) / (s.numel() * k) >= floor:
            idx, ratio = torch.arange(n, device=s.device), torch.zeros_like(ratio)
    else:
        weight = d_slope.abs() * scale_d / (s.numel() * k)
        hard = (~torch.isfinite(ratio) | (weight < floor)).reshape(n, -1).any(1)
        ratio = torch.where(hard, hard.new_zeros((), dtype=ratio.dtype), ratio.reshape(n, -1)[:, 0])
        idx = hard.nonzero().squeeze(1) if hard.any() else None  # the one host sync
    # fake_in's gradient carries D's loss scale and d_scale; G's backward must carry G's
    # (and g_scale). With d_scale 0 at this iteration every sample went the hard way.
    rescale = game.g.factor(fake.x) * g_scale / scale_d if d_scale else 0.0
    grad_in = fake_in.x.grad if fake_in.x.grad is not None else torch.zeros_like(fake_in.x)
    roots, grads = [fake.x], [(grad_in * _rows(ratio * rescale, grad_in)).to(fake.x.dtype)]
    if idx is not None:
        rows = fake.rows(idx)
        with game.d.frozen(), precision.autocast():
            (s_hard,) = scores(game, d_call(game, rows), rows.x)
        # L_G is a mean over the n fakes: the hard ones carry weight len(idx) / n.
        loss_hard = g_scale * objective.g_loss(s_hard)[0]
        roots.append(precision.scale(loss_hard, game.g.key))
        grads.append(torch.full_like(roots[-1], idx.numel() / (n * k)))
    torch.autograd.backward(roots, grads, inputs=game.g.params())
    logs.update(g_logs)
    logs["loss_g"] = loss_g.detach()
    return logs
