"""Regularizers and their lazy rhythm: R1 on D, path length on G.

A regularizer has a weight and an interval ``every``. With ``every == 1`` its penalty
is part of its side's loss, taken from the forward that loss runs anyway (R1 from
D(real), as StyleGAN2-ADA's phase Dboth). With ``every = k > 1`` it is *lazy*
(StyleGAN2): every k-th step of its side (the 1st, the (k+1)-th, ...) is followed by a
phase of its own, the penalty weighted k and one more optimizer step, and that
side's Adam is built with :func:`lazy_regularization`. The phases run it
(:func:`ganstep.engine.phases.lazy_phase`, after the side's step: :func:`ganstep.engine.phases.
regularize_after`); this module says what and when.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

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
    steps of that side; ``names`` name the two in messages. Its lazy phase logs the
    penalty as ``log_key``."""

    side = "D"
    log_key = "gp"

    def __init__(self, weight: float, every: int, names: tuple[str, str]) -> None:
        self.weight = non_negative(weight, names[0])
        self.every = positive_int(every, names[1])

    def state_dict(self) -> dict:
        """What the regularizer carries from step to step (nothing, for R1)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state != {}:
            raise ValueError(f"{type(self).__name__} keeps no state; got {sorted(state)}")

    def in_loss(self) -> bool:
        """Whether the penalty is part of its side's loss on every step (not lazy)."""
        return self.weight > 0 and self.every == 1

    def due(self, steps_taken: int) -> bool:
        """Whether a lazy phase follows the side's step, ``steps_taken`` steps before it."""
        return self.weight > 0 and self.every > 1 and steps_taken % self.every == 0


class R1(Regularizer):
    """R1 (Mescheder et al., 2018): weight/2 mean(||grad D(x)||^2) on the real batch."""

    def __init__(self, owner: str, weight: float = 0.0, every: int = 1) -> None:
        super().__init__(weight, every, (f"{owner} r1", f"{owner} r1_every"))

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


class PathLength(Regularizer):
    """StyleGAN2's path length regularization of G, lazily: after every ``every``-th G
    step (the 1st, the (k+1)-th, ...), a phase of its own on a fresh z, weighted
    ``weight * every``, as StyleGAN2-ADA's phase Greg.

    On the first ``n // shrink`` rows of the phase's z: ``ws = mapping(z)`` and
    ``img = synthesis(ws)`` when both are given (a StyleGAN G: the gradient is taken at
    the intermediate latents ``ws``, shaped (n, num_ws, w_dim) or (n, w_dim)), else
    ``img = G(z)`` and ``ws = z``. With noise ``y ~ N(0, 1) / sqrt(H * W)`` (torch's
    global generator), ``lengths = |d(img . y) / d ws|`` (summed over w's last
    dimension, averaged over the others), ``mean`` moves by ``decay`` towards their
    mean (and carries the gradient, as SG2-ADA's ``pl_mean``), and the penalty is
    ``weight * mean((lengths - mean)^2)``. ``mean`` is kept in ``Step.state_dict()``.

    ``images_and_latents`` instead of ``mapping`` and ``synthesis`` is one call on the
    phase's z that returns ``(img, ws)``, the latents in img's graph (rosinality's
    ``generator(noise, return_latents=True)``, its w broadcast to every layer).
    ``z_draw`` says which z the phase makes its images from: ``"batch"`` draws a
    batch's z and keeps its first ``n // shrink`` rows (StyleGAN2-ADA's Greg, whose z
    is drawn with the iteration's); ``"shrunk"`` draws ``n // shrink`` rows
    (rosinality's ``mixing_noise(path_batch_size, ...)``). The two draw different
    numbers from torch's generator.

    Build G's Adam with :func:`lazy_regularization` (``every``), as for lazy R1.
    """

    z_draws = ("batch", "shrunk")

    side = "G"
    log_key = "pl"
    capturable = True  # its running mean changes in place, on the device (see cuda_graph)

    def __init__(
        self,
        weight: float = 2.0,
        every: int = 4,
        decay: float = 0.01,
        shrink: int = 2,
        mapping: Callable[..., Tensor] | nn.Module | None = None,
        synthesis: Callable[[Tensor], Tensor] | nn.Module | None = None,
        *,
        images_and_latents: Callable[..., tuple[Tensor, Tensor]] | None = None,
        z_draw: str = "batch",
    ) -> None:
        super().__init__(weight, every, ("PathLength weight", "PathLength every"))
        if self.every < 2:
            raise ValueError(
                "PathLength runs in a phase of its own after every k-th G step (StyleGAN2: "
                f"k = 4): every must be at least 2, got {every!r}"
            )
        self.decay = non_negative(decay, "PathLength decay")
        if not 0 < self.decay <= 1:
            raise ValueError(f"PathLength decay must be in (0, 1], got {decay!r}")
        self.shrink = positive_int(shrink, "PathLength shrink")
        if (mapping is None) != (synthesis is None):
            raise ValueError("PathLength takes mapping and synthesis together, or neither")
        if images_and_latents is not None and mapping is not None:
            raise ValueError(
                "PathLength takes images_and_latents (one call giving (images, latents)) or "
                "mapping and synthesis, not both"
            )
        named = (("mapping", mapping), ("synthesis", synthesis),
                 ("images_and_latents", images_and_latents))  # fmt: skip
        for name, fn in named:
            if fn is not None and not callable(fn):
                raise TypeError(f"PathLength {name} must be callable, got {fn!r}")
        if z_draw not in self.z_draws:
            raise ValueError(
                f"PathLength z_draw must be 'batch' (a batch's z, its first n // shrink rows: "
                f"StyleGAN2-ADA) or 'shrunk' (n // shrink rows drawn: rosinality's "
                f"stylegan2-pytorch), got {z_draw!r}"
            )
        self.mapping, self.synthesis = mapping, synthesis
        self.images_and_latents, self.z_draw = images_and_latents, z_draw
        self.mean = torch.zeros([], dtype=torch.float64)

    def due(self, steps_taken: int) -> bool:
        return self.weight > 0 and steps_taken % self.every == 0

    def rows(self, n: int) -> int:
        """The rows of a batch of ``n`` the phase differentiates: ``n // shrink``, at least 1."""
        return max(1, n // self.shrink)

    def penalty(self, img: Tensor, ws: Tensor) -> Tensor:
        """From the graph of ``img`` made from ``ws`` (which requires grad)."""
        pixels = math.prod(img.shape[2:]) if img.dim() > 2 else 1
        noise = torch.randn_like(img) / math.sqrt(pixels)
        (grads,) = torch.autograd.grad((img * noise).sum(), ws, create_graph=True)
        lengths = grads.square().sum(-1).reshape(grads.shape[0], -1).mean(1).sqrt()
        if self.mean.device != lengths.device:  # once: from then on updated where it is
            self.mean = self.mean.to(lengths.device)
        mean = self.mean.to(lengths.dtype).lerp(lengths.mean(), self.decay)
        # in place, so a CUDA graph's replay updates the mean it captured; float64 holds
        # the lengths' dtype exactly, so the next phase reads the same number
        self.mean.copy_(mean.detach())
        return self.weight * (lengths - mean).square().mean()

    def state_dict(self) -> dict:
        return {"mean": self.mean.detach().cpu().clone()}

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state, dict) or set(state) != {"mean"}:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"PathLength state needs the key 'mean'; got {got}")
        self.mean = torch.as_tensor(state["mean"], dtype=torch.float64).clone()

    def __repr__(self) -> str:
        return (f"PathLength(weight={self.weight}, every={self.every}, decay={self.decay}, "
                f"shrink={self.shrink}, z_draw={self.z_draw!r}, "
                f"mean={float(self.mean):.4g})")  # fmt: skip
