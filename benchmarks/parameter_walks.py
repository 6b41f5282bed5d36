"""What listing G's and D's parameters once saves on the default run's iteration,
against walking the modules at each ask (the Step before commit a1acedc):

    python benchmarks/parameter_walks.py [--reps 40] [--iterations 100]

Each side keeps its parameters in a ``ParameterList``, walked again only after some
module registered a parameter or submodule (a1acedc listed them once a call; since
23b87ab the steady iteration reads lists made when it was planned, so only the
general path, a Step's first call or one after a change, asks). One ``Trainee``
built as ``ganstep train`` builds the default run's; blocks of ``--iterations``
iterations (Step and EMA update) alternate between the two ways, in one process, so
a noisy machine slows both alike. Prints the median ms per iteration of each and the
median of the paired ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from ganstep.engine.autograd_calls import ParameterList
from ganstep.trainer.config import Config
from ganstep.trainer.data import load_dataset
from ganstep.trainer.trainee import Trainee


def walk_at_each_ask(self: ParameterList) -> list[nn.Parameter]:
    """A list that keeps nothing: each ask walks the module again."""
    return list(self.module.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    data = load_dataset("grid")
    trainee = Trainee(Config().resolved(data), data, torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    reals = [data.batch(256, gen) for _ in range(args.iterations)]
    kept = ParameterList.__call__
    ways = {"listed after a registration": kept, "walked at each ask": walk_at_each_ask}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for real in reals[:50]:  # warm-up
        trainee.step(real)
        trainee.update_ema()
    for rep in range(args.reps):
        order = list(ways) if rep % 2 else list(reversed(ways))
        for name in order:
            ParameterList.__call__ = ways[name]
            start = time.perf_counter()
            for real in reals:
                trainee.step(real)
                trainee.update_ema()
            times[name].append((time.perf_counter() - start) / len(reals))
    ParameterList.__call__ = kept
    print(f"threads: {torch.get_num_threads()}, {args.reps} blocks of {args.iterations}")
    for name, values in times.items():
        print(f"{name:>28}: {statistics.median(values) * 1e3:.3f} ms/iteration")
    paired = [a / b for a, b in zip(*times.values(), strict=True)]
    print(f"listed / walked: {statistics.median(paired):.3f}")


if __name__ == "__main__":
    main()
