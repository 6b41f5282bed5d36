"""Stacked MNIST over seeds: modes covered (of 1,000), reverse KL, FID against its
floor, and wall time, per seed and as mean/std (a benchmark, not a test).

    python benchmarks/stacked_mnist.py --data-dir ../shared/data --seeds 3
    python benchmarks/stacked_mnist.py --data-dir ../shared/data --seeds 3 --baseline
    python benchmarks/stacked_mnist.py --data-dir ../shared/data --set steps=20000

Modes and reverse KL are counted on 26,000 samples, as VEEGAN and PacGAN count them,
by a digit classifier trained once on MNIST's training digits (its test accuracy is
printed as ``digit_accuracy``; below 0.98 the counts are not to be trusted);
``channel_kl`` and ``unclear_digits`` say whether an excess reverse KL is G favouring
some digits or drawing digits the classifier cannot read. The ``*_floor`` values are
the same metrics on real stacked samples.

RECIPE is ganstep's: the DCGAN of ``--model dcgan`` at 32 x 32 (28 x 28 padded) at
``--width 80`` (G 320-160-80 channels, D 80-160-320, z of 64: G 1,356,640 parameters, D
1,033,920, about 4.2 times fewer than the 4.3 million of the D in PacGAN's "VEEGAN
experiment"), batch 64, 20,000 ``d_first`` steps in fp32, ``ns`` with lazy R1 (0.1,
every 16th D step), G's EMA (0.999) and Adam at lr 4e-4 decayed linearly to 0. Issue
31's sweep: 1000 modes and reverse KL 0.037-0.039 (mean 0.038) on each of seeds 0-4, FID
0.004-0.009; at ``--set width=64`` 0.032-0.043 (mean 0.037; seeds 3 and 4 above 0.04),
at the default width 32 (``--set width=32``) 0.044-0.051, and issue 13's constant 2e-4
(``--set width=32 lr_g=2e-4 lr_d=2e-4 lr_decay=none``) 0.046-0.063. Width 80 has about
1.56 times width 64's arithmetic: about 65 min a seed alone on two threads of the 2-core
machine of 2026-11-27.
BASELINE is the plain DCGAN under issue 13's budget: ``ns`` at a constant 2e-4, no R1,
no EMA. Results and times: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse

from quality import parse_overrides, print_stats, run_seeds

from ganstep.trainer.data import load_stacked_mnist
from ganstep.trainer.metrics.stacked import SAMPLES
from ganstep.trainer.models import build_models, image_size
from ganstep.trainer.train import Config

COMMON = {"data": "stacked-mnist", "model": "dcgan", "batch_size": 64, "steps": 20000,
          "eval_samples": SAMPLES, "ckpt_every": 10**9}  # fmt: skip
RECIPE = {**COMMON, "objective": "ns", "r1": 0.1, "r1_every": 16, "ema": 0.999,
          "lr_g": 4e-4, "lr_d": 4e-4, "lr_decay": "linear", "width": 80}  # fmt: skip
BASELINE = {**COMMON, "objective": "ns", "r1": 0.0, "ema": 0.0}
SHOWN = ("modes", "reverse_kl", "channel_kl", "unclear_digits", "fid", "seconds", "modes_floor",
         "reverse_kl_floor", "channel_kl_floor", "unclear_digits_floor", "fid_floor",
         "digit_accuracy")  # fmt: skip


def sizes(overrides: dict) -> str:
    """G's and D's parameter counts for this config, on stacked MNIST's sample shape."""
    data = load_stacked_mnist(overrides.get("data_dir"), train_size=2, test_size=2)
    cfg = Config.from_dict(overrides).resolved(data)
    shape = (3, image_size(data.sample_shape), image_size(data.sample_shape))
    G, D = build_models(cfg.model, shape, cfg.objective, cfg.z_dim, cfg.width)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    return f"G {count(G):,} parameters, D {count(D):,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="folder with the MNIST files")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--baseline", action="store_true", help="the plain DCGAN")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="further config overrides")  # fmt: skip
    args = parser.parse_args()
    overrides = {**(BASELINE if args.baseline else RECIPE), **parse_overrides(args.set)}
    if args.data_dir:
        overrides["data_dir"] = args.data_dir
    print(f"{'baseline' if args.baseline else 'recipe'}: {overrides}; {sizes(overrides)}")
    rows = run_seeds(overrides, args.seeds, args.first_seed)
    print_stats(rows, SHOWN, width=16)
    if any(r.get("digit_accuracy", 1.0) < 0.98 for r in rows):
        print("warning: the digit classifier is below 0.98 on MNIST's test digits: "
              "the mode counts are not trustworthy")  # fmt: skip


if __name__ == "__main__":
    main()
