"""Where the default run's time goes (a benchmark, not a test):

    python benchmarks/profile_default_run.py [--steps 1000] [KEY=VALUE ...]

Trains the default run (``ganstep train``'s defaults, with any overrides) and prints
1. the wall time of each part of the trainer loop: the Step, EMA, evaluation and
   sample plots (``_report``), checkpoints, the final report, and what is left
   (setup, imports, the loop's own Python);
2. torch.profiler's table of the operators that took the most CPU time inside the
   Steps of 50 iterations after a warm-up (``aten::addmm``, Adam's kernels, ...).
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from functools import wraps

import torch
from quality import parse_overrides
from torch.profiler import ProfilerActivity, profile

from ganstep.trainer.train import Config, train
from ganstep.trainer.trainee import Trainee

train_module = importlib.import_module("ganstep.trainer.train")  # the module, not train()
SPENT: dict[str, float] = defaultdict(float)


def timed(name: str, fn):
    @wraps(fn)
    def run(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[name] += time.perf_counter() - t

    return run


def profile_ops(cfg: Config) -> str:
    """The operator table of 50 Steps of this config, after 20 unmeasured ones."""
    data, cfg = train_module.prepared_data(cfg)
    trainee = Trainee(cfg, data, torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    batches = [data.batch(cfg.batch_size, gen) for _ in range(70)]
    for real in batches[:20]:
        trainee.step(real)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for real in batches[20:]:
            trainee.step(real)
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="default: the run's own")
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE, as benchmarks/quality.py")
    args = parser.parse_args()
    overrides = parse_overrides(args.overrides)
    if args.steps is not None:
        overrides["steps"] = args.steps
    with tempfile.TemporaryDirectory() as tmp, timers():
        cfg = Config.from_dict({**overrides, "out": f"{tmp}/run"})
        t = time.perf_counter()
        record = train(cfg, progress=False)
        total = time.perf_counter() - t
    print(f"wall {total:.1f} s; last record: {record}")
    for name, spent in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"  {name:30s} {spent:7.2f} s  {100 * spent / total:5.1f}%")
    rest = total - sum(SPENT.values())
    print(f"  {'the rest (setup, loop, data)':30s} {rest:7.2f} s  {100 * rest / total:5.1f}%")
    with tempfile.TemporaryDirectory() as tmp:
        print(profile_ops(Config.from_dict({**overrides, "out": f"{tmp}/ops"})))


@contextmanager
def timers():
    """The trainer's parts timed while inside (put back after: the script also runs in
    the test suite's process)."""
    original_init = Trainee.__init__

    def init(self, *a, **k):
        original_init(self, *a, **k)
        self.step = timed_step(self.step)

    patched = [(Trainee, "update_ema", "EMA"),
               (train_module, "_report", "evaluation and sample plots"),
               (train_module.RunState, "save_checkpoint", "checkpoints"),
               (train_module.plots, "report", "final report.png")]  # fmt: skip
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
    for owner, name, label in patched:
        setattr(owner, name, timed(label, getattr(owner, name)))
    Trainee.__init__ = init
    try:
        yield
    finally:
        Trainee.__init__ = original_init
        for owner, name, value in saved:
            setattr(owner, name, value)


def timed_step(step):
    """The Step, timed per call, keeping its attributes (real_batches, state_dict)."""

    class Timed:
        def __getattr__(self, name):
            return getattr(step, name)

        def __call__(self, real):
            return timed("Step", step)(real)

    return Timed()


if __name__ == "__main__":
    main()
