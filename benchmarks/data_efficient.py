"""MNIST on 1,000 training images, with and without augmentation of D's inputs, next to
the whole training set: FID against the same floor, per seed and as mean/std (a
benchmark, not a test).

    python benchmarks/data_efficient.py --data-dir ../shared/data --seeds 3
    python benchmarks/data_efficient.py --data-dir ../shared/data --seeds 1 --only ada
    python benchmarks/data_efficient.py --data-dir ../shared/data --seeds 1 --steps 20000 \
        --only none diffaugment
    python benchmarks/data_efficient.py --data-dir ../shared/data --set width=32 lr_g=1e-4

Every run is ``ganstep train --data mnist --model dcgan`` with the image defaults (batch
64, 5,000 ``d_first`` steps, ``ns``, EMA 0.999), so the only differences are the
training images and the augmentation: ``--limit 1000`` (a fixed subset of the 60,000)
with ``--augment none``, ``diffaugment`` (color, translation, cutout on every D input)
or ``ada`` (those with ADA's adaptive p, target 0.6), and the whole set without
augmentation. FID is measured on 2,500 samples of G's EMA against 2,500 images of the
whole training set in every case (``--limit`` never changes the metrics), with
ganstep's cached feature network; ``fid_floor`` is real-vs-real (test images).

The DiffAugment paper's claim is that augmentation closes most of the gap that
limited data opens; ``gap closed`` below is ``(FID none - FID augmented) / (FID none
- FID whole set)`` on the means, printed only when there is a gap (FID none above FID
whole set). Results and times: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from quality import parse_overrides, print_stats, run_seeds

COMMON = {"data": "mnist", "model": "dcgan", "steps": 5000, "ckpt_every": 10**9}
RUNS = {
    "whole": {**COMMON},
    "none": {**COMMON, "limit": 1000},
    "diffaugment": {**COMMON, "limit": 1000, "augment": "diffaugment"},
    "ada": {**COMMON, "limit": 1000, "augment": "ada"},
}
SHOWN = ("fid", "kid", "augment_p", "seconds", "fid_floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="folder with the MNIST files")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--steps", type=int, default=COMMON["steps"], help="steps of every run")
    parser.add_argument("--json", type=Path, help="write every run's last record here")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="config overrides for every run")  # fmt: skip
    args = parser.parse_args()
    shared = parse_overrides(args.set)
    if {"limit", "augment"} & set(shared):  # what the runs differ in is theirs to set
        parser.error("--set cannot change limit or augment: the runs differ in those")
    found: dict[str, list[dict]] = {}
    for name in args.only:
        overrides = {**RUNS[name], "steps": args.steps, **shared}
        if args.data_dir:
            overrides["data_dir"] = args.data_dir
        print(f"== {name}: {overrides}", flush=True)
        found[name] = run_seeds(overrides, args.seeds, args.first_seed)
        if args.json:
            args.json.write_text(json.dumps(found, indent=1))
    means = {}
    for name, rows in found.items():
        print(f"\n{name}")
        print_stats(rows, SHOWN)
        means[name] = statistics.mean(r["fid"] for r in rows)
    if {"whole", "none"} <= set(means):
        gap = means["none"] - means["whole"]
        if gap <= 0:  # nothing to close: the ratio below would mean nothing
            print(f"no gap: 1,000 images scored FID {means['none']:.4f}, the whole set "
                  f"{means['whole']:.4f}")  # fmt: skip
        for name in ("diffaugment", "ada"):
            if name in means and gap > 0:
                print(f"gap closed by {name}: {(means['none'] - means[name]) / gap:.2f}")


if __name__ == "__main__":
    main()
