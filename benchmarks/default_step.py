"""Milliseconds per iteration of issue 10's default run's Step (2D grid: MLP 256 wide,
batch 256, ns, d_first) with R1 taken four ways, measured interleaved in one process:

    python benchmarks/default_step.py [--reps 300]

- ``no_r1``: ns without R1;
- ``r1_two_forwards``: R1 0.1 from a second D forward on the real batch (ganstep before);
- ``r1``: R1 0.1 from the D(real) forward the D step runs anyway (ganstep now);
- ``r1_every_16``: lazy R1, 16 x 0.1 every 16th D step (StyleGAN2).

Prints the median and the ratio of each to ``no_r1``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from ganstep import Step
from ganstep.engine.objectives import NS
from ganstep.trainer.data import load_dataset
from ganstep.trainer.models import MLP


class TwoForwardR1(NS):
    """R1 as ganstep took it before: a second D forward on the real batch."""

    def __init__(self, r1: float):
        super().__init__()
        self.weight = r1

    def penalty(self, D, real, fake):
        x = real.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(self.score(D(x), x).sum(), x, create_graph=True)
        return 0.5 * self.weight * grad.reshape(grad.shape[0], -1).square().sum(1).mean()


def build(objective) -> Step:
    torch.manual_seed(0)
    G = MLP(2, 2, (256, 256, 256))
    D = MLP(2, 1, (256, 256, 256), activation=torch.nn.LeakyReLU)
    return Step(
        G,
        D,
        torch.optim.Adam(G.parameters(), 5e-4, betas=(0.5, 0.999)),
        torch.optim.Adam(D.parameters(), 5e-4, betas=(0.5, 0.999)),
        objective=objective,
        schedule="d_first",
        latent=lambda n: torch.randn(n, 2),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    steps = {
        "no_r1": build(NS()),
        "r1_two_forwards": build(TwoForwardR1(0.1)),
        "r1": build(NS(r1=0.1)),
        "r1_every_16": build(NS(r1=0.1, r1_every=16)),
    }
    grid, gen = load_dataset("grid"), torch.Generator().manual_seed(0)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for rep in range(args.warmup + args.reps):
        real = grid.batch(256, gen)
        for name, step in steps.items():
            t0 = time.perf_counter()
            step(real)
            if rep >= args.warmup:
                times[name].append((time.perf_counter() - t0) * 1e3)
    base = statistics.median(times["no_r1"])
    for name, ms in times.items():
        median = statistics.median(ms)
        print(f"{name:16} {median:7.2f} ms  ({median / base:.3f} x no_r1)")


if __name__ == "__main__":
    main()
