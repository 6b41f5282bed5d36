"""What one iteration of the default run costs, by batch size: a part paid per
iteration whatever the batch (Python, op dispatch, autograd's engine, Adam's
bookkeeping) and a part paid per sample (the MLPs' arithmetic). A benchmark, not a test:

    python benchmarks/iteration_cost.py [--batch-sizes 8 128 256 512 1024] [--reps 100]

Each batch size gets its own ``Trainee``, built as ``ganstep train`` builds it for the
default config; the sizes run one iteration each in turn (the Step on a real batch,
then the EMA update), so a noisy machine slows them alike. Prints the median ms per
iteration, its ratio to batch 256's, ms per 1,000 samples, and the least-squares line
ms = fixed + per_sample * batch over the sizes from 128 up.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from ganstep.trainer.config import Config
from ganstep.trainer.data import load_dataset
from ganstep.trainer.trainee import Trainee


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 128, 256, 512, 1024])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    data = load_dataset("grid")
    runs = {b: Trainee(Config(batch_size=b).resolved(data), data, torch.device("cpu"))
            for b in args.batch_sizes}  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    times: dict[int, list[float]] = {b: [] for b in runs}
    for rep in range(args.warmup + args.reps):
        for batch, trainee in runs.items():
            real = data.batch(batch, gen)
            start = time.perf_counter()
            trainee.step(real)
            trainee.update_ema()
            if rep >= args.warmup:
                times[batch].append(time.perf_counter() - start)
    ms = {b: statistics.median(v) * 1e3 for b, v in times.items()}
    print(f"threads: {torch.get_num_threads()}, {args.reps} iterations each, interleaved")
    base = ms.get(256)
    for batch, value in ms.items():
        ratio = f"  {value / base:.3f}x batch 256's" if base else ""
        print(f"batch {batch:>5}: {value:7.2f} ms, {value / batch * 1e3:7.2f} ms per 1,000 "
              f"samples{ratio}")  # fmt: skip
    sizes = [b for b in ms if b >= 128]
    if len(sizes) >= 2:
        per_sample, fixed = statistics.linear_regression(sizes, [ms[b] for b in sizes])
        print(f"fit over batch {sizes}: {fixed:.2f} ms per iteration + "
              f"{per_sample * 1e3:.2f} ms per 1,000 samples")  # fmt: skip


if __name__ == "__main__":
    main()
