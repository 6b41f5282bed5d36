"""D's outputs, as the objective and the loss terms read them.

A phase forwards D (:func:`d_outputs`, in the Step's ``d_order``, once on both batches
with ``concat``), puts what it computed in one :class:`~ganstep.engine.views.View` per
micro-batch, and asks for L_D (:func:`d_loss`) and L_G (:func:`g_loss`) from it. The
objective reads the adversarial output's scores; each loss term reads the view.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .batch import Batch, cat, split
from .game import Game
from .objectives import Logs, Objective
from .precision import REDUCED
from .views import View, add_terms, adversarial, check_adversarial, check_logits


def d_call(game: Game, batch: Batch, eager: bool = False) -> object:
    """D's whole output on ``batch``: ``D(x)``, or ``D(x, c)`` for a conditional batch
    (unless the Step's D is not conditional: ACGAN's D(x)). With augmentation D sees
    ``augment(x)``, and gradients flow back through it to ``x``. ``eager``: the user's
    D even where the Step compiles it (a penalty's forward: its double backward)."""
    D = game.d.eager if eager else game.d.module
    x = batch.x if game.options.augment is None else game.options.augment(batch.x)
    return D(x) if batch.c is None or not game.options.d_conditional else D(x, batch.c)


def d_outputs(game: Game, real: Batch, fake: Batch) -> tuple[object, object]:
    """D's outputs on the real and the fake batch, forwarded in ``game.options.d_order`` (one D
    call on both, concatenated in that order, where ``concat`` says so). Under compile,
    R1 on every step reads the real batch's forward from the user's D (uncompiled), and
    the fake batch's is uncompiled too where D's forward changes its buffers
    (``Game.real_forward_eager``, ``fake_forward_eager``)."""
    fake_first = game.options.d_order == "fake_first"
    eager = game.real_forward_eager()  # R1's double backward: the user's D, uncompiled
    if game.concat_d_calls():  # (concat=True then: one uncompiled call)
        first = fake if fake_first else real
        both = d_call(game, cat(first, real if fake_first else fake), eager)
        _check_rows(both, real.n + fake.n)
        out_first, out_second = split(both, first.n)
        return (out_second, out_first) if fake_first else (out_first, out_second)
    eager_fake = game.fake_forward_eager()
    if fake_first:
        out_fake = d_call(game, fake, eager_fake)
        return d_call(game, real, eager), out_fake
    return d_call(game, real, eager), d_call(game, fake, eager_fake)


def _check_rows(out: object, n: int) -> None:
    """Refuse one number for the joined batch of ``n`` rows: a D that returns its scores'
    batch mean (which WGAN reads alone) has no rows to split into real and fake."""
    found = adversarial(out)
    if n > 1 and any(isinstance(o, Tensor) and o.numel() == 1 for o in found):
        raise ValueError(
            f"D returned one number for the {n} rows of the real and the fake batch joined "
            "(concat): a D that returns its scores' batch mean is called on each batch "
            "apart; use concat=False"
        )


def scores(game: Game, out: object, inp: Tensor) -> list[Tensor]:
    """The objective's scores of each adversarial output of D's ``out`` on ``inp``.

    Under autocast the scores are cast to float32: the losses are computed in full
    precision whatever D ran in.
    """
    objective = game.options.objective
    if objective.reads_scores:
        check_adversarial(out, inp.shape[0], game.options.d_map)
    outputs = adversarial(out)
    game.most_d_outputs = max(game.most_d_outputs, len(outputs))
    for o in outputs:
        if not o.is_floating_point():
            raise TypeError(
                f"D returned {o.dtype} scores; its adversarial output must be floating point "
                "(logits, or a map of them): drop the cast to an integer type"
            )
    if objective.applies_sigmoid:
        for o in outputs:
            check_logits(o, objective.name)
    found = [objective.score(o, inp) for o in outputs]
    if game.precision.dtype is None:  # the scores in the dtype D gave them
        return found
    return [s.float() if s.dtype in REDUCED else s for s in found]


def summed(parts: list[tuple[Tensor, Logs]]) -> tuple[Tensor, Logs]:
    """A multi-scale D's losses: summed, and so are their logs. Each must be a scalar."""
    for part, _ in parts:
        if not isinstance(part, Tensor) or part.numel() != 1:
            shape = tuple(part.shape) if isinstance(part, Tensor) else type(part).__name__
            raise ValueError(
                f"the objective returned a loss of shape {shape}, not a scalar: its losses "
                "are means over samples (a per-sample loss needs .mean())"
            )
    loss, logs = parts[0]
    for more, more_logs in parts[1:]:
        loss = loss + more
        logs = {k: v + more_logs[k] for k, v in logs.items()}
    return loss, logs


def _penalty(game: Game, real: Batch, fake_x: Tensor) -> Tensor | None:
    """The objective's penalty on D at the real condition (an interpolate mixes x only),
    on D's forwards of its own, eager (compiled code has no double backward)."""
    call = lambda x: d_call(game, real.with_x(x), eager=True)  # noqa: E731
    return penalty_of(game.options.objective, call, real.x, fake_x)


def own_step_penalty(game: Game, real: Batch, fake: Batch) -> Tensor | None:
    """The objective's penalty where it runs in a D step of its own (``penalty_at =
    "own_step"``, SAGAN's): on D's forwards of its own at ``real`` and ``fake``."""
    return _penalty(game, real, fake.x.detach())


def early_penalty(game: Game, real: Batch, fake: Batch) -> Tensor | None:
    """The objective's penalty where it runs before D's loss forwards (``penalty_at =
    "before"``, DualGAN's); ``None`` elsewhere. Pass it to :func:`d_loss`."""
    if game.options.objective.penalty_at != "before":
        return None
    return _penalty(game, real, fake.x.detach())


def joined(out: object, n: int) -> Tensor:
    """D's adversarial output in ``out``: a multi-scale D's side by side, one row per
    sample (what a penalty reads)."""
    found = adversarial(out)
    if len(found) == 1:
        return found[0]
    return torch.cat([o.reshape(n, -1) for o in found], 1)


def penalty_of(objective: Objective, call: Callable[[Tensor], object], real_x: Tensor,
               fake_x: Tensor) -> Tensor | None:  # fmt: skip
    """``objective``'s penalty on the D that ``call(x)`` forwards (its whole output; the
    penalty reads the adversarial one, a multi-scale D's side by side)."""
    return objective.penalty(lambda x: joined(call(x), x.shape[0]), real_x, fake_x)


def loss_penalty(game: Game, view: View, s_real: list[Tensor],
                 early: Tensor | None) -> Tensor | None:  # fmt: skip
    """L_D's penalties, in the order they run: R1 from the D(real) forward when it is
    due there, then the objective's own (``early``, read from the loss forwards, or on
    D forwards of its own after them). ``None`` when there is none."""
    objective = game.options.objective
    real, fake = view.real, view.fake
    found = []
    regularizer = objective.regularizer
    if regularizer is not None and regularizer.in_loss():
        found.append(regularizer.penalty(real.x, sum(s.sum() for s in s_real)))
    if objective.penalty_at == "before":
        found.append(early)
    elif objective.penalty_at == "loss_forwards":
        outputs = joined(view.d_real_out, real.n), joined(view.d_fake_out, fake.n)
        found.append(objective.penalty_on_outputs(real.x, outputs[0], fake.x, outputs[1]))
    elif objective.penalty_at == "after":  # ("own_step": phases.penalty_phase runs it)
        found.append(_penalty(game, real, fake.x.detach()))  # a penalty trains D only
    found = [p for p in found if p is not None]
    return sum(found[1:], found[0]) if found else None


def d_loss(game: Game, view: View, early: Tensor | None = None
           ) -> tuple[Tensor, Logs, list[Tensor], list[Tensor]]:  # fmt: skip
    """L_D from the view: the scaled adversarial loss, the penalties
    (:func:`loss_penalty`; ``early`` is the one :func:`early_penalty` ran before the
    loss forwards) and D's terms; its logs; and the scores on real and fake, which L_G
    may reuse."""
    real, fake = view.real, view.fake
    s_real = scores(game, view.d_real_out, real.x)
    s_fake = scores(game, view.d_fake_out, fake.x)
    game.observe_real(s_real)
    objective = game.options.objective
    loss, logs = summed([objective.d_loss(r, f) for r, f in zip(s_real, s_fake, strict=True)])
    d_scale = game.d_weight()
    if d_scale != 1.0:
        loss = d_scale * loss
    penalty = loss_penalty(game, view, s_real, early)
    if penalty is not None:
        logs["gp"] = penalty.detach()
        loss = loss + penalty
    loss, term_logs = add_terms(loss, game.options.d_terms, view)
    logs.update(term_logs)
    logs["loss_d"] = loss.detach()
    if game.options.log_scores:
        logs.update(score_logs(s_real, s_fake))
    return loss, logs, s_real, s_fake


def score_logs(s_real: list[Tensor], s_fake: list[Tensor]) -> Logs:
    """D's mean adversarial score on each batch and the mean of its signs (all scales
    together), detached: what StyleGAN2-ADA logs as Loss/scores and Loss/signs."""
    logs = {}
    for name, parts in (("real", s_real), ("fake", s_fake)):
        flat = torch.cat([s.detach().float().reshape(-1) for s in parts])
        logs[f"score_{name}"] = flat.mean()
        logs[f"sign_{name}"] = flat.sign().mean()
    return logs


def g_loss(game: Game, view: View, s_real, s_fake) -> tuple[Tensor, Logs]:
    """L_G from the view and the scores on it: the adversarial loss, scaled by
    ``g_scale`` (reading D's real scores as constants where the objective needs them),
    and G's terms; its logs."""
    objective = game.options.objective
    if objective.g_needs_real:
        parts = [objective.g_loss(f, r.detach()) for f, r in zip(s_fake, s_real, strict=True)]
    else:
        parts = [objective.g_loss(f) for f in s_fake]
    loss, logs = summed(parts)
    g_scale = game.g_weight()
    if g_scale != 1.0:
        loss = g_scale * loss
    loss, term_logs = add_terms(loss, game.options.g_terms, view)
    logs.update(term_logs)
    return loss, logs
