"""Shared fixtures: tiny float64 G/D pairs built identically for ganstep and a reference."""

from __future__ import annotations

import pytest
import torch
from hypothesis import settings

from ganstep.models import MLP

# Tiny models: intra-op threads cost more than they give, and CI has 2 cores.
torch.set_num_threads(1)
# Examples run real training steps: on a loaded 2-core machine a per-example deadline
# would measure the machine, not the code.
settings.register_profile("ganstep", deadline=None, max_examples=40)
settings.load_profile("ganstep")

Z_DIM, X_DIM, BATCH = 3, 2, 6
OBJECTIVES = ["minimax", "ns", "lsgan", "hinge", "wgan_gp", "began", "softmax"]


class Run:
    """One G, D, their Adam optimizers and a seeded latent, for one side of a comparison."""

    def __init__(self, objective: str, batchnorm: bool, dtype=torch.float64, device="cpu"):
        torch.manual_seed(0)
        self.G = MLP(Z_DIM, X_DIM, (8,), activation=torch.nn.LeakyReLU, batchnorm=batchnorm)
        d_out = X_DIM if objective == "began" else 1  # BEGAN's D is an autoencoder
        self.D = MLP(X_DIM, d_out, (8, 4), activation=torch.nn.LeakyReLU, batchnorm=batchnorm)
        self.G.to(device, dtype)
        self.D.to(device, dtype)
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=0.02, betas=(0.5, 0.9))
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=0.02, betas=(0.5, 0.9))
        self.gen = gen = torch.Generator(device=device).manual_seed(1)
        self.latent = lambda n: torch.randn(n, Z_DIM, generator=gen, dtype=dtype, device=device)

    def models(self):
        return self.G, self.D, self.opt_g, self.opt_d


def real_batches(count: int, dtype=torch.float64, device="cpu") -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(2)
    return [
        (torch.randn(BATCH, X_DIM, generator=gen, dtype=dtype) * 0.5 + 1.0).to(device)
        for _ in range(count)
    ]


@pytest.fixture(params=[False, True], ids=["plainD", "batchnormD"])
def batchnorm(request):
    return request.param


@pytest.fixture
def cache(tmp_path):
    """A fresh GANSTEP_CACHE for a test (downloads and feature extractors)."""
    return tmp_path / "cache"
