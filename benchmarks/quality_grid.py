"""The 2D grid over several seeds: modes, hq_fraction and reverse_kl as mean and spread.

    python benchmarks/quality_grid.py                      # the benchmark budget, 10 seeds
    python benchmarks/quality_grid.py --default-run        # plain `ganstep train` settings
    python benchmarks/quality_grid.py --seeds 5 --first-seed 5 --set steps=20000

The benchmark budget (BENCHMARK below) is issue 10's default run (mlp 256 wide, ns
with lazy R1 0.1 every 16th D step, d_first, batch 256, Adam 1e-3 with betas (0.5,
0.999) decayed linearly to 0, EMA 0.999) trained for 20,000 steps instead of 8,000:
the recipe of benchmarks/RESULTS.md's ten-seed table, named here in full since the
default run changed (issue 31: half as wide, lr 4e-3 decayed linearly, beta2 0.9, EMA
0.99; `--default-run` trains that). Seeds run one after another; split them over processes
with --first-seed.
"""

from __future__ import annotations

import argparse

from quality import parse_overrides, run_seeds, summarize

BENCHMARK = {"data": "grid", "steps": 20000, "width": 256, "lr_g": 1e-3, "lr_d": 1e-3,
             "lr_decay": "linear", "beta2": 0.999, "ema": 0.999}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--default-run", action="store_true",
                        help="the plain `ganstep train` defaults")  # fmt: skip
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="further config overrides")  # fmt: skip
    args = parser.parse_args()
    base = {"data": "grid"} if args.default_run else dict(BENCHMARK)
    overrides = {**base, **parse_overrides(args.set)}
    summarize(run_seeds(overrides, args.seeds, args.first_seed), overrides)


if __name__ == "__main__":
    main()
