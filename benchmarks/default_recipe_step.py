"""The default run's iteration, issue 10's recipe against issue 31's, measured
interleaved in one process (a benchmark, not a test):

    python benchmarks/default_recipe_step.py [--reps 300]

Each recipe is built as ``ganstep train`` builds it (``Trainee``: models, Adam, lazy
R1, the Step) and runs one iteration at a time: the Step on a real batch, then the
EMA update. ``issue 31, for-loop Adam`` swaps in torch's CPU default Adam to show
what the fused kernel is worth on its own. Prints the median ms per iteration and
the ratio of each to issue 10's.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from ganstep.trainer.config import Config
from ganstep.trainer.data import load_dataset
from ganstep.trainer.trainee import Trainee

ISSUE_10 = {"width": 256, "lr_g": 1e-3, "lr_d": 1e-3, "lr_decay": "linear", "beta2": 0.999,
            "ema": 0.999}  # fmt: skip


def build(data, overrides: dict, fused_adam: bool = True) -> Trainee:
    cfg = Config(**overrides).resolved(data)
    trainee = Trainee(cfg, data, torch.device("cpu"))
    if not fused_adam:  # torch's CPU default: a Python loop over the parameters
        for opt in (trainee.opt_g, trainee.opt_d):
            for group in opt.param_groups:
                group["fused"] = None
    return trainee


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    data = load_dataset("grid")
    runs = {
        "issue 10 (256 wide)": build(data, ISSUE_10, fused_adam=False),
        "issue 31, for-loop Adam": build(data, {}, fused_adam=False),
        "issue 31 (128 wide, fused Adam)": build(data, {}),
    }
    gen = torch.Generator().manual_seed(0)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for rep in range(args.warmup + args.reps):
        real = data.batch(256, gen)
        for name, trainee in runs.items():
            start = time.perf_counter()
            trainee.step(real)
            trainee.update_ema()
            if rep >= args.warmup:
                times[name].append(time.perf_counter() - start)
    base = statistics.median(times["issue 10 (256 wide)"])
    print(f"threads: {torch.get_num_threads()}, {args.reps} iterations each, interleaved")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:>32}: {median * 1e3:7.2f} ms  {median / base:.3f}x")


if __name__ == "__main__":
    main()
