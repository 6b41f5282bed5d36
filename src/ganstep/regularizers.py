"""Regularizers and their lazy rhythm: R1 today, a G-side one (path length) next.

A regularizer has a weight and an interval ``every``. With ``every == 1`` its penalty
is part of its side's loss, taken from the forward that loss runs anyway (R1 from
D(real), as StyleGAN2-ADA's phase Dboth). With ``every = k > 1`` it is *lazy*
(StyleGAN2): every k-th step of its side (the 1st, the (k+1)-th, ...) is followed by a
phase of its own, the penalty weighted k and one more optimizer step, and that
side's Adam is built with :func:`lazy_regularization`. The phases run it
(:func:`ganstep.phases.lazy_phase`); this module says what and when.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .checks import non_negative, positive_int


def lazy_regularization(lr: float, betas: tuple[float, float], every: int):
    """Adam's ``lr`` and ``betas`` for a side regularized every ``every`` steps, as
    StyleGAN2-ADA sets them: with ``ratio = every / (every + 1)``, ``lr * ratio`` and
    ``betas ** ratio`` (the regularization phase is one more optimizer step every
    ``every``)."""
    ratio = every / (every + 1)
    return lr * ratio, (betas[0] ** ratio, betas[1] ** ratio)


class Regularizer:
    """A penalty of weight ``weight`` on one side (``"D"`` or ``"G"``), every ``every``
    steps of that side. ``owner`` names it in messages (the objective's name)."""

    side = "D"

    def __init__(self, owner: str, name: str, weight: float, every: int) -> None:
        self.weight = non_negative(weight, f"{owner} {name}")
        self.every = positive_int(every, f"{owner} {name}_every")

    def in_loss(self) -> bool:
        """Whether the penalty is part of its side's loss on every step (not lazy)."""
        return self.weight > 0 and self.every == 1

    def due(self, steps_taken: int) -> bool:
        """Whether a lazy phase follows the side's step, ``steps_taken`` steps before it."""
        return self.weight > 0 and self.every > 1 and steps_taken % self.every == 0


class R1(Regularizer):
    """R1 (Mescheder et al., 2018): weight/2 mean(||grad D(x)||^2) on the real batch."""

    def __init__(self, owner: str, weight: float = 0.0, every: int = 1) -> None:
        super().__init__(owner, "r1", weight, every)

    def penalty(self, x: Tensor, score_sum: Tensor) -> Tensor:
        """From the graph of a D forward on the real batch: ``x`` required grad there and
        ``score_sum`` is the sum of D's scores on it (StyleGAN2-ADA's way)."""
        (grad,) = torch.autograd.grad(score_sum, x, create_graph=True)
        return 0.5 * self.weight * grad.reshape(grad.shape[0], -1).square().sum(1).mean()


class WithR1:
    """What an objective with R1 inherits: ``r1`` and ``r1_every`` arguments, kept as
    its D-side :class:`R1` regularizer, and its ``repr``."""

    name = ""

    def __init__(self, r1: float = 0.0, r1_every: int = 1) -> None:
        self.regularizer = R1(self.name, r1, r1_every)

    @property
    def r1(self) -> float:
        return self.regularizer.weight

    @property
    def r1_every(self) -> int:
        return self.regularizer.every

    def real_penalty(self, x: Tensor, score_sum: Tensor) -> Tensor:
        """R1 from the graph of the D forward on the real batch (see :meth:`R1.penalty`)."""
        return self.regularizer.penalty(x, score_sum)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(r1={self.r1}, r1_every={self.r1_every})"
