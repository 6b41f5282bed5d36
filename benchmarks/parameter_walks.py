"""What listing G's and D's parameters once a Step call saves on the default run's
iteration, against walking the modules at each ask (the Step before commit a1acedc):

    python benchmarks/parameter_walks.py [--reps 40] [--iterations 100]

One ``Trainee`` built as ``ganstep train`` builds the default run's; blocks of
``--iterations`` iterations (Step and EMA update) alternate between the two ways, in
one process, so a noisy machine slows both alike. Prints the median ms per
iteration of each and the median of the paired ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager

import torch

from ganstep.engine.sides import Side
from ganstep.trainer.config import Config
from ganstep.trainer.data import load_dataset
from ganstep.trainer.trainee import Trainee


@contextmanager
def walk_at_each_ask(side: Side):
    """A listing that lists nothing: each ask inside the call walks the module again."""
    yield list(side.module.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    data = load_dataset("grid")
    trainee = Trainee(Config().resolved(data), data, torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    reals = [data.batch(256, gen) for _ in range(args.iterations)]
    ways = {"listed once a call": Side.listing, "walked at each ask": walk_at_each_ask}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for real in reals[:50]:  # warm-up
        trainee.step(real)
        trainee.update_ema()
    for rep in range(args.reps):
        order = list(ways) if rep % 2 else list(reversed(ways))
        for name in order:
            Side.listing = ways[name]
            start = time.perf_counter()
            for real in reals:
                trainee.step(real)
                trainee.update_ema()
            times[name].append((time.perf_counter() - start) / len(reals))
    Side.listing = ways["listed once a call"]
    print(f"threads: {torch.get_num_threads()}, {args.reps} blocks of {args.iterations}")
    for name, values in times.items():
        print(f"{name:>20}: {statistics.median(values) * 1e3:.3f} ms/iteration")
    paired = [a / b for a, b in zip(*times.values(), strict=True)]
    print(f"listed / walked: {statistics.median(paired):.3f}")


if __name__ == "__main__":
    main()
