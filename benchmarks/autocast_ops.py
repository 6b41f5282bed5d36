"""What bf16 autocast adds to an iteration's host work: ATen ops per steady iteration of
each order, fp32 against bf16, and which ops the difference is (a benchmark, not a test):

    python benchmarks/autocast_ops.py [--model dcgan] [--batch 4] [--width 8]

The counts do not depend on the batch or the width, nor on the device: on a GPU each op
is a kernel launch and its dispatch on the host, which sets an iteration's time where
the host is the bound (DCGAN-32 at batch 128 on an H200, where bf16 ran 1.24x slower
than fp32). A CUDA graph replays the same kernels without the host's part (the
benchmark's ``graph_bf16`` rows).
"""

from __future__ import annotations

import argparse
from collections import Counter

from torch.utils._python_dispatch import TorchDispatchMode

from ganstep import Step
from ganstep.tools.bench import PAIRS, make_pair


class _Count(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def ops_per_iteration(model: str, order: str, precision: str, batch: int, width: int) -> Counter:
    """The ATen ops of one steady iteration (the fourth) of ``order`` on ``model``."""
    G, D, opt_g, opt_d, latent, real = make_pair(model, "ns", batch, width, "cpu")
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=PAIRS[order][0], latent=latent,
                precision=precision)  # fmt: skip
    for _ in range(3):
        step(real)
    with _Count() as count:
        step(real)
    return count.ops


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="dcgan")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--width", type=int, default=8)
    args = parser.parse_args(argv)
    print(f"{'order':14s} {'fp32 ops':>9s} {'bf16 ops':>9s} {'ratio':>6s}  what bf16 adds")
    for order in PAIRS:
        fp32, bf16 = (ops_per_iteration(args.model, order, p, args.batch, args.width)
                      for p in ("fp32", "bf16"))  # fmt: skip
        added = {op: bf16[op] - fp32[op] for op in fp32 | bf16 if bf16[op] != fp32[op]}
        shown = ", ".join(f"{op} {n:+d}" for op, n in sorted(added.items(), key=lambda kv: -kv[1]))
        total32, total16 = sum(fp32.values()), sum(bf16.values())
        print(f"{order:14s} {total32:9d} {total16:9d} {total16 / total32:6.3f}  {shown}")


if __name__ == "__main__":
    main()
