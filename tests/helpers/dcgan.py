"""A DCGAN-shaped pair at 32x32 for counting passes in FLOPs, and what one D forward and
D's weight gradients cost on it."""

from __future__ import annotations

import torch

from ganstep.trainer.models import DCGANDiscriminator, DCGANGenerator

from . import pass_costs

N, Z = 8, 16


def dcgan_pair(batchnorm: bool = True):
    torch.manual_seed(0)
    G = DCGANGenerator(z_dim=Z, width=8)
    D = DCGANDiscriminator(width=8, batchnorm=batchnorm)
    opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
    return G, D, opt_g, opt_d


def latent(n: int) -> torch.Tensor:
    return torch.randn(n, Z)


def d_costs(real: torch.Tensor) -> tuple[int, int]:
    """(one D forward on a fake batch, D's weight gradients in one backward through it)."""
    _, D, _, _ = dcgan_pair()
    return pass_costs(D, torch.randn_like(real))
