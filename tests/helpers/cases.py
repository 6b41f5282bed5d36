"""Data parallel cases shared by the torchrun worker and the single-process check."""

from __future__ import annotations

import torch

from ganstep import Adaptive, Step, d_first, g_first, objectives, simultaneous
from ganstep.trainer.models import MLP

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
    # Conditional: each fake made for its real sample's condition, or for sampled ones.
    "d_first-ns-condition_real": ("ns", d_first, {"condition": "real"}, False),
    "simultaneous-hinge-condition": ("hinge", simultaneous, {"condition": "sampled"}, False),
    # Two micro-batches per rank, summed before the all-reduce of each optimizer step.
    "d_first-ns-accumulate2": ("ns", d_first, {"accumulate": 2}, False),
    # ADA's p moves from the signs of every rank's real scores: the ranks agree on it.
    # (Each process augments with its own random draws: no single-process twin.)
    "g_first-ns-ada": ("ns", g_first, {"augment": "ada"}, False),
    # A head beside G and D in G's optimizer, which G's loss term calls (InfoGAN's Q
    # head as Natsu6767 trains it): its gradients averaged, rank 0's weights broadcast.
    "d_first-ns-head": ("ns", d_first, {"head": True}, False),
}
# Step's options in a case's options; the rest are the schedule's.
STEP_OPTIONS = ("condition", "accumulate", "augment")
COND_DIM = 2


class Conditioned(torch.nn.Module):
    """``net(cat(a, c))``: G(z, c) or D(x, c) as a cGAN writes them."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([a, c], dim=1))


def has_single_process_twin(name: str) -> bool:
    objective, _, options, batchnorm = CASES[name]
    return not batchnorm and objective not in ("softmax", "wgan_gp") and "augment" not in options


def share_of_global_draw(draw, seed: int, width: int, rank: int, world: int):
    """``f(n)``: this process's n rows of one draw of ``n * world`` rows, so that every
    world size sees the same global stream."""
    generator = torch.Generator().manual_seed(seed)

    def rows(n: int) -> torch.Tensor:
        whole = draw(n * world, width, generator=generator, dtype=torch.float64)
        return whole[rank * n : (rank + 1) * n]

    return rows


def run_case(name: str, rank: int, world: int):
    """Train one case on this process's share of each global batch (one process of
    ``world``); return (parameters, logs per iteration)."""
    objective, schedule, options, batchnorm = CASES[name]
    step_options = {k: options[k] for k in STEP_OPTIONS if k in options}
    options = {k: v for k, v in options.items() if k not in STEP_OPTIONS}
    with_head = options.pop("head", False)
    if objective == "lsgan_r1":
        objective = objectives.LSGAN(r1=0.3)
    d_out = X_DIM if objective == "began" else 1
    conditional = "condition" in step_options
    extra = COND_DIM if conditional else 0
    # Rank 0's initial parameters win: the others start elsewhere on purpose.
    torch.manual_seed(0 if rank == 0 else 100 + rank)
    G = MLP(Z_DIM + extra, X_DIM, (8,), batchnorm=batchnorm).double()
    D = MLP(X_DIM + extra, d_out, (8, 4), activation=torch.nn.LeakyReLU, batchnorm=batchnorm)
    D = D.double()
    if conditional:
        G, D = Conditioned(G), Conditioned(D)
    images = "augment" in step_options  # points as 1 x 1 x 2 images, for ADA's color ops
    if images:
        G = torch.nn.Sequential(G, torch.nn.Unflatten(1, (1, 1, X_DIM)))
        D = torch.nn.Sequential(torch.nn.Flatten(), D)
        step_options["augment"] = Adaptive("color", p=0.5, interval=2, kimg=0.16)
    head = torch.nn.Linear(X_DIM, Z_DIM).double() if with_head else torch.nn.Identity()
    if with_head:  # how well z is read back from G's samples, G's and the head's loss
        read_back = lambda v: (head(v.fake.x) - v.fake.z).pow(2).mean()  # noqa: E731
        step_options["g_terms"] = {"head": (0.5, read_back)}
    opt_g = torch.optim.Adam([*G.parameters(), *head.parameters()], lr=0.02, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(D.parameters(), lr=0.02, betas=(0.5, 0.9))
    latent = share_of_global_draw(torch.randn, 1, Z_DIM, rank, world)
    share = GLOBAL_BATCH // world
    if step_options.get("condition") == "sampled":
        step_options["condition"] = share_of_global_draw(torch.rand, 3, COND_DIM, rank, world)
    step = Step(G, D, opt_g, opt_d, objective=objective, schedule=schedule(**options),
                latent=latent, distributed=world > 1, **step_options)  # fmt: skip
    data_gen = torch.Generator().manual_seed(2)
    logs = []
    for _ in range(ITERATIONS):
        reals = []
        for _ in range(step.real_batches):
            glob = torch.randn(GLOBAL_BATCH, X_DIM, generator=data_gen, dtype=torch.float64)
            real = glob[rank * share : (rank + 1) * share] * 0.5 + 1
            if conditional:  # the condition of a real sample is a function of it
                real = (real, torch.sigmoid(real))
            if images:
                real = real.reshape(share, 1, 1, X_DIM)
            reals.append(real)
        out = step(reals if len(reals) > 1 else reals[0])
        logs.append({k: float(v) for k, v in out.items()})
    params = [p.detach().clone() for p in (*G.parameters(), *D.parameters(), *head.parameters())]
    return params, logs
