"""The distance of a mode histogram to the uniform one: the reverse KL of PacGAN's
mode counts, shared by the toy mixtures and Stacked MNIST."""

from __future__ import annotations

from torch import Tensor


def kl_to_uniform(counts: Tensor) -> float:
    """KL(p || uniform) in nats of the histogram ``counts`` over its len(counts) bins."""
    p = counts[counts > 0].double() / counts.sum()
    return float((p * (p * len(counts)).log()).sum())
