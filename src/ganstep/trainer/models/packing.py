"""PacGAN's packing (Lin et al., 2018): D judges ``m`` samples at once, stacked along
the channel axis, so a G that repeats itself or favours some modes is seen in every
pack it makes.

As PacGAN's own code does it (``stacked_MNIST_experiments/*/model.py`` of
fjxmlzn/PacGAN): G runs once per pack slot, each on its own batch of z, and the
``m`` outputs are concatenated along channels; pack ``i`` holds the ``i``-th sample of
each. D's first layer takes ``m`` times the channels; a batch counts packs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn


def packed_shape(shape: tuple[int, ...], m: int) -> tuple[int, ...]:
    """The shape of one pack of ``m`` samples of ``shape``: (m*C, H, W) or (m*d,)."""
    return (shape[0] * m, *shape[1:])


def pack(slots: Sequence[Tensor]) -> Tensor:
    """One batch per pack slot, each (n, C, ...), as ``n`` packs (n, m*C, ...): pack ``i``
    holds the ``i``-th sample of every slot, slot ``j`` in channels ``j*C`` to ``(j+1)*C``."""
    if len(slots) < 2 or len({s.shape for s in slots}) != 1:
        shapes = [tuple(s.shape) for s in slots]
        raise ValueError(f"packing takes 2 or more batches of one shape, got {shapes}")
    return torch.cat(list(slots), dim=1)


class PackedGenerator(nn.Module):
    """``G`` seen from a packing D: ``z`` (n, m, z_dim) -> ``m`` calls of ``G`` on
    ``z[:, j]`` (so BatchNorm normalizes each call's batch, as PacGAN's G does), packed.

    It owns no parameters but ``G``'s; samples and checkpoints use ``G`` itself.
    """

    def __init__(self, generator: nn.Module, m: int) -> None:
        super().__init__()
        if m < 2:
            raise ValueError(f"a pack holds at least 2 samples, got {m}")
        self.generator, self.m = generator, m

    def forward(self, z: Tensor) -> Tensor:
        if z.dim() < 2 or z.shape[1] != self.m:
            shape = tuple(z.shape)
            raise ValueError(f"a packed G takes z of shape (n, {self.m}, ...), got {shape}")
        return pack([self.generator(z[:, j]) for j in range(self.m)])
