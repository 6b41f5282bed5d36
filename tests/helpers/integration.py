"""What the integration tests (Lightning, Accelerate) share: small float64 models, data,
and the plain Step in one process that a data parallel run must equal."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DistributedSampler

from ganstep import Step, get_schedule
from ganstep.engine.distributed import SEED_STRIDE
from ganstep.engine.objectives import NS

Z, X, N, BATCH = 3, 2, 24, 6


def models(batchnorm: bool, dropout: bool = False):
    torch.manual_seed(0)
    norm = nn.BatchNorm1d(8) if batchnorm else nn.Identity()
    G = nn.Sequential(nn.Linear(Z, 8), norm, nn.ReLU(), nn.Linear(8, X)).double()
    drop = nn.Dropout(0.3) if dropout else nn.Identity()
    D = nn.Sequential(nn.Linear(X, 8), nn.LeakyReLU(0.2), drop, nn.Linear(8, 1)).double()
    return G, D


def optimizers(G, D):
    return (torch.optim.Adam(G.parameters(), 0.01, betas=(0.5, 0.9)),
            torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.9)))  # fmt: skip


def options(schedule: str, r1: float) -> dict:
    return {"objective": NS(r1=r1) if r1 else "ns", "schedule": get_schedule(schedule)}


def data() -> torch.Tensor:
    gen = torch.Generator().manual_seed(2)
    return torch.randn(N, X, generator=gen, dtype=torch.float64) + 1


def lightning_order(world: int, epoch: int) -> list[list[int]]:
    """The rows each process trains on in ``epoch``: Lightning's DistributedSampler for
    training (shuffled, seed 0)."""
    samplers = [DistributedSampler(data(), world, r, shuffle=True, seed=0) for r in range(world)]
    for sampler in samplers:
        sampler.set_epoch(epoch)
    return [list(sampler) for sampler in samplers]


def accelerate_order(world: int, epoch: int) -> list[list[int]]:
    """Accelerate's sharding of a loader without shuffling: process r gets the batches
    r, r + world, ..."""
    batches = [list(range(b, b + BATCH)) for b in range(0, N, BATCH)]
    return [[i for b in batches[r::world] for i in b] for r in range(world)]


def plain_step(schedule: str, r1: float, batchnorm: bool, epochs: int, world: int = 1,
               sharding=lightning_order, **step_extra) -> list[torch.Tensor]:  # fmt: skip
    """The same training as a plain Step in one process: each iteration on the batches
    every rank saw, concatenated (rank by rank, as ``accumulate=world`` micro-batches,
    so that a BatchNorm in G normalises each rank's rows as that rank did), z drawn
    from each rank's generator."""
    G, D = models(batchnorm)
    opt_g, opt_d = optimizers(G, D)
    gens = [torch.Generator().manual_seed(SEED_STRIDE * r + 1) for r in range(world)]

    def latent(n: int) -> torch.Tensor:
        rows = n // world
        return torch.cat([torch.randn(rows, Z, generator=g, dtype=torch.float64) for g in gens])

    step = Step(G, D, opt_g, opt_d, latent=latent, accumulate=world,
                **{**options(schedule, r1), **step_extra})  # fmt: skip
    x = data()
    for epoch in range(epochs):
        order = sharding(world, epoch) if world > 1 else [list(range(N))]
        for start in range(0, len(order[0]), BATCH):
            step(torch.cat([x[rows[start : start + BATCH]] for rows in order]))
    return [p.detach().clone() for p in [*G.parameters(), *D.parameters()]]
