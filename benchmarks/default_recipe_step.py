"""The default run's iteration, issue 10's recipe against issue 31's, measured
interleaved in one process (a benchmark, not a test):

    python benchmarks/default_recipe_step.py [--reps 300]

Each recipe is built as ``ganstep train`` builds it (``Trainee``: models, Adam, lazy
R1, the Step) and runs one iteration at a time: the Step on a real batch, then the
EMA update. ``for-loop Adam`` swaps in torch's CPU default Adam to show what the
fused kernel is worth on its own, ``torch.optim's fused Adam`` the same kernel as
torch.optim calls it (the trainer's ``LeanAdam`` calls it directly); ``D called
twice`` forwards D on the real and the fake batch apart, as the trainer did before
it ran D once on both. Prints the median
ms per iteration, its ratio to issue 10's, and what the run's iterations cost (ms
times the recipe's steps) against the 128-wide recipe's 8,000.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from ganstep.trainer.config import Config
from ganstep.trainer.data import load_dataset
from ganstep.trainer.trainee import Trainee

ISSUE_10 = {"width": 256, "steps": 8000, "lr_g": 1e-3, "lr_d": 1e-3, "lr_decay": "linear",
            "beta2": 0.999, "ema": 0.999}  # fmt: skip
WIDTH_128 = {"width": 128, "steps": 8000}  # issue 31's second recipe, the default before


def build(data, overrides: dict, adam: str = "lean", one_d_call: bool = True) -> Trainee:
    """The trainer's Trainee; ``adam``: "lean" (the trainer's), "torch fused"
    (torch.optim.Adam(fused=True), the same state) or "for-loop" (torch's CPU default)."""
    cfg = Config(**overrides).resolved(data)
    trainee = Trainee(cfg, data, torch.device("cpu"))
    game = trainee.step.game
    if not one_d_call:  # the trainer's Step runs D once where D is pure (concat="auto")
        game.options = replace(game.options, concat=False)
    if adam == "torch fused":  # the same groups (rates, betas, fused) under torch's class
        for side, attr in ((game.g, "opt_g"), (game.d, "opt_d")):
            side.optimizer = torch.optim.Adam([dict(g) for g in side.optimizer.param_groups])
            setattr(trainee, attr, side.optimizer)
    if adam == "for-loop":  # torch's CPU default: a Python loop over the parameters
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
        "issue 10 (256 wide)": build(data, ISSUE_10, adam="for-loop"),
        "128 wide, for-loop Adam": build(data, WIDTH_128, adam="for-loop", one_d_call=False),
        "128 wide, D called twice": build(data, WIDTH_128, one_d_call=False),
        "128 wide": build(data, WIDTH_128),
        "96 wide, torch.optim's fused Adam": build(data, {}, adam="torch fused"),
        "96 wide (the default)": build(data, {}),
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
    run_base = statistics.median(times["128 wide, D called twice"]) * WIDTH_128["steps"]
    print(f"threads: {torch.get_num_threads()}, {args.reps} iterations each, interleaved")
    print(f"{'':>34}  ms/iteration  vs issue 10  steps  run's iterations vs 128 wide")
    for name, values in times.items():
        median = statistics.median(values)
        steps = runs[name].cfg.steps
        print(
            f"{name:>34}: {median * 1e3:9.2f}  {median / base:10.3f}x  {steps:5d}  "
            f"{median * steps / run_base:.3f}x"
        )


if __name__ == "__main__":
    main()
