"""Python calls per steady-state iteration: each Step next to the hand-written loop of the
same order (see ganstep.tools.host_calls for what is counted and which loop is which).
A benchmark, not a test; the count is deterministic, the same on any machine:

    python benchmarks/host_calls.py [--objectives ns wgan_gp ...] [--json out.json]

Prints, per order and objective (and R1, lazy R1, and d_first with
``d_order="real_g_fake"`` against the DCGAN example's loop), the Step's calls, the
engine's own share of them, the reference loop's calls and their ratio (the goal: at
most 1.05).
"""

from __future__ import annotations

import argparse
import json

from ganstep.tools.host_calls import OBJECTIVES, ORDERS, R1_CASES, measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objectives", nargs="+", default=list(OBJECTIVES))
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    rows = [measure(order, objective, iterations=args.iterations)
            for order in ORDERS for objective in args.objectives]  # fmt: skip
    rows += [measure("d_first" if r == "r1" else "g_first", "ns", r, iterations=args.iterations)
             for r in R1_CASES]  # fmt: skip
    rows += [measure("d_first", objective, iterations=args.iterations, d_order="real_g_fake")
             for objective in args.objectives]  # the DCGAN example's lines' order  # fmt: skip
    print(f"{'order':<13} {'objective':<9} {'reg':<8} {'d_order':<11} {'Step':>7} {'engine':>7} "
          f"{'reference':>10} {'ratio':>6}  reference loop")  # fmt: skip
    for r in rows:
        print(f"{r['order']:<13} {r['objective']:<9} {r['regularizer']:<8} {r['d_order']:<11} "
              f"{r['step_calls']:>7.0f} {r['engine_calls']:>7.0f} {r['reference_calls']:>10.0f} "
              f"{r['ratio']:>6.3f}  {r['reference']}")  # fmt: skip
    print(
        f"largest ratio {max(r['ratio'] for r in rows):.3f}; "
        f"largest engine share {max(r['engine_calls'] for r in rows):.0f} calls"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
