"""Data parallel cases shared by the torchrun worker and the single-process check."""

from __future__ import annotations

import torch

from ganstep import Step, d_first, g_first, objectives, simultaneous
from ganstep.models import MLP

Z_DIM, X_DIM, GLOBAL_BATCH, ITERATIONS = 3, 2, 8, 4

# name -> (objective, schedule, its options, D with BatchNorm)
CASES = {
    "d_first-ns": ("ns", d_first, {}, False),
    "d_first2-lsgan_r1": ("lsgan_r1", d_first, {"d_steps": 2}, False),
    "g_first-hinge": ("hinge", g_first, {"reuse_z": True}, False),
    "simultaneous-minimax": ("minimax", simultaneous, {}, False),
    "fused-hinge": ("hinge", simultaneous, {"fused": True}, False),
    "d_first-began": ("began", d_first, {}, False),
    # Ranks agree, but one process on the concatenated batch differs: BatchNorm's
    # statistics, SoftmaxGAN's partition function and WGAN-GP's interpolation weights
    # are per process.
    "d_first-ns-batchnorm": ("ns", d_first, {}, True),
    "simultaneous2-softmax": ("softmax", simultaneous, {"d_every": 2}, False),
    "d_first-wgan_gp": ("wgan_gp", d_first, {}, False),
}


def has_single_process_twin(name: str) -> bool:
    objective, _, _, batchnorm = CASES[name]
    return not batchnorm and objective not in ("softmax", "wgan_gp")


def run_case(name: str, rank: int, world: int):
    """Train one case on this process's share of each global batch (one process of
    ``world``); return (parameters, logs per iteration)."""
    objective, schedule, options, batchnorm = CASES[name]
    if objective == "lsgan_r1":
        objective = objectives.LSGAN(r1=0.3)
    d_out = X_DIM if objective == "began" else 1
    # Rank 0's initial parameters win: the others start elsewhere on purpose.
    torch.manual_seed(0 if rank == 0 else 100 + rank)
    G = MLP(Z_DIM, X_DIM, (8,), batchnorm=batchnorm).double()
    D = MLP(X_DIM, d_out, (8, 4), activation=torch.nn.LeakyReLU, batchnorm=batchnorm).double()
    opt_g = torch.optim.Adam(G.parameters(), lr=0.02, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(D.parameters(), lr=0.02, betas=(0.5, 0.9))
    z_gen = torch.Generator().manual_seed(1)

    def latent(n: int) -> torch.Tensor:  # this process's rows of a global draw
        z = torch.randn(n * world, Z_DIM, generator=z_gen, dtype=torch.float64)
        return z[rank * n : (rank + 1) * n]

    share = GLOBAL_BATCH // world

    step = Step(G, D, opt_g, opt_d, objective=objective, schedule=schedule(**options),
                latent=latent, distributed=world > 1)  # fmt: skip
    data_gen = torch.Generator().manual_seed(2)
    logs = []
    for _ in range(ITERATIONS):
        reals = []
        for _ in range(step.real_batches):
            glob = torch.randn(GLOBAL_BATCH, X_DIM, generator=data_gen, dtype=torch.float64)
            reals.append(glob[rank * share : (rank + 1) * share] * 0.5 + 1)
        out = step(reals if len(reals) > 1 else reals[0])
        logs.append({k: float(v) for k, v in out.items()})
    params = [p.detach().clone() for p in (*G.parameters(), *D.parameters())]
    return params, logs
