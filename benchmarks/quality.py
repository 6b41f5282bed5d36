"""Sample quality of training runs over several seeds (a benchmark, not a test).

    python benchmarks/quality.py ring --seeds 10
    python benchmarks/quality.py digits --seeds 3 --model dcgan
    python benchmarks/quality_grid.py                       # the 2D grid (issue 3's bar)

Trains with ``ganstep.train`` into a temporary folder and prints, for each seed, the
last evaluation, then the mean and standard deviation of each metric.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tomllib

from ganstep.trainer.train import Config, train


def parse_overrides(items: list[str]) -> dict:
    """``KEY=VALUE`` pairs: numbers and booleans as TOML reads them, else strings."""
    overrides: dict = {}
    for item in items:
        key, value = item.split("=", 1)
        try:
            overrides[key] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            overrides[key] = value
    return overrides


def run_seeds(overrides: dict, seeds: int, first_seed: int) -> list[dict]:
    """Train one run per seed; return the last metrics record of each."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(first_seed, first_seed + seeds):
            cfg = Config.from_dict({**overrides, "seed": seed, "out": f"{tmp}/s{seed}"})
            # train() always evaluates, samples and checkpoints at the last step
            cfg.eval_every = cfg.sample_every = cfg.ckpt_every = 10**9
            t0 = time.perf_counter()
            record = train(cfg, progress=False)
            record["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(record)
            shown = {k: v for k, v in record.items() if not k.startswith("loss")}
            print(f"seed {seed}: {shown}", flush=True)
    return rows


def summarize(rows: list[dict], overrides: dict) -> None:
    """Print the config and the mean, spread and range of every metric."""
    print(f"config: {Config.from_dict(overrides)}")
    keys = [k for k in rows[0] if k not in ("step", "elapsed_s") and not k.startswith("loss")]
    for key in keys:
        values = [r[key] for r in rows]
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"{key:>12}: mean {statistics.mean(values):.4f}  std {spread:.4f}  "
              f"min {min(values):.4f}  max {max(values):.4f}")  # fmt: skip


def print_stats(rows: list[dict], keys: tuple[str, ...], width: int = 12) -> None:
    """Each key's mean, spread and per-seed values over ``rows`` (keys absent: skipped)."""
    for key in keys:
        values = [r[key] for r in rows if key in r]
        if values:
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            print(f"{key:>{width}}: mean {statistics.mean(values):.4f}  std {spread:.4f}  "
                  f"per seed {', '.join(f'{v:.4g}' for v in values)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="grid, ring, digits, ...")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="Config overrides, e.g. steps=20000 objective=hinge")  # fmt: skip
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    overrides = {"data": args.data, **parse_overrides(args.set)}
    if args.model:
        overrides["model"] = args.model
    summarize(run_seeds(overrides, args.seeds, args.first_seed), overrides)


if __name__ == "__main__":
    main()
