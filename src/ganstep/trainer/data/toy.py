"""Toy 2D mixtures as PacGAN defines them (Lin et al., 2018).

ring: 8 Gaussians on the unit circle, standard deviation 0.01.
grid: 25 Gaussians at {-4, -2, 0, 2, 4}^2, standard deviation 0.05.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def ring_modes() -> Tensor:
    angles = torch.arange(8, dtype=torch.float64) * (2 * math.pi / 8)
    return torch.stack([angles.cos(), angles.sin()], 1).float()


def grid_modes() -> Tensor:
    axis = torch.tensor([-4.0, -2.0, 0.0, 2.0, 4.0])
    return torch.cartesian_prod(axis, axis)


TOY = {"ring": (ring_modes, 0.01), "grid": (grid_modes, 0.05)}


def sample_mixture(modes: Tensor, std: float, n: int, generator: torch.Generator) -> Tensor:
    """n points from the equal-weight mixture of Gaussians at ``modes``."""
    index = torch.randint(len(modes), (n,), generator=generator, device=modes.device)
    noise = torch.randn(n, modes.shape[1], generator=generator, device=modes.device)
    return modes[index] + std * noise
