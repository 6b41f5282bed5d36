"""Host work per steady-state iteration, counted: the Python calls a Step makes next to
those of the hand-written loop of the same order.

Where a GPU waits for its host (DCGAN sizes on an H100), an iteration's time is set by
the Python it runs, not its FLOPs. Python calls are counted with ``sys.setprofile``:
every Python frame entered (a function call, or a generator resumed: a parameter walk
resumes one per submodule), not calls of C functions. The count is deterministic: the
same on any machine and on CPU or CUDA, so it can be measured and tested without a GPU.

Each case pairs a Step with the loop it replaces, on the same models (DCGAN, one
thread): ``d_first`` with a minimal hand-written loop of the same passes (the
non-saturating loss; the DCGAN example for the others), ``g_first`` with Lightning's
manual-optimization loop, ``simultaneous`` with PyTorch-GAN's, R1 with the DCGAN
example plus R1 as tutorials add it, lazy R1 with StyleGAN2-ADA's loop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..engine.objectives import NS, get_objective
from ..engine.schedules import d_first, g_first
from ..engine.step import Step
from . import bench, reference

ORDERS = ("d_first", "g_first", "simultaneous")
OBJECTIVES = ("ns", "minimax", "lsgan", "hinge", "wgan_gp", "began", "softmax")
# regularized cases: (name, Step's objective and options, its reference loop and arguments)
R1_CASES = ("r1", "r1_lazy")


@dataclass
class Count:
    """Python calls per iteration: all of them (``calls``) and those of ganstep's engine
    (``engine``: frames in ``ganstep/engine``, the Step's own share)."""

    calls: float
    engine: float


def python_calls(fn: Callable[[], object], iterations: int = 8, warmup: int = 3) -> Count:
    """The Python calls of one call of ``fn``, averaged over ``iterations`` calls after
    ``warmup`` calls (a Step's first call checks and plans; it is not steady)."""
    for _ in range(warmup):
        fn()
    counts = [0, 0]

    def profile(frame, event, _arg) -> None:
        if event == "call":
            counts[0] += 1
            if "ganstep" in frame.f_code.co_filename and "engine" in frame.f_code.co_filename:
                counts[1] += 1

    sys.setprofile(profile)
    try:
        for _ in range(iterations):
            fn()
    finally:
        sys.setprofile(None)
    return Count(counts[0] / iterations, counts[1] / iterations)


def _pair(objective: str, batch: int, width: int):
    model = "began" if objective == "began" else "dcgan"
    return bench.make_pair(model, objective, batch, width, "cpu")


def case(order: str, objective: str, regularizer: str | None = None, batch: int = 8,
         width: int = 16, d_order: str = "real_first",
         ) -> tuple[Callable[[], object], Callable[[], object], str]:  # fmt: skip
    """A Step's iteration and its reference loop's, on fresh models, and the reference's
    name. ``regularizer``: ``None``, ``"r1"`` (d_first, R1 weight 0.1 every step) or
    ``"r1_lazy"`` (g_first as StyleGAN2-ADA orders it, R1 every 4th step). ``d_order``:
    the Step's (``"real_g_fake"``: d_first against the DCGAN example's loop, whose lines
    run in that order)."""
    if regularizer == "r1":
        options = {"objective": NS(r1=0.1), "schedule": d_first()}
        ref_name, ref_options = "dcgan_r1", {"r1": 0.1}
    elif regularizer == "r1_lazy":
        options = {"objective": NS(r1=0.1, r1_every=4), "schedule": g_first(),
                   "d_order": "fake_first"}  # fmt: skip
        ref_name, ref_options = "stylegan2_r1", {"r1": 0.1, "r1_every": 4}
    else:
        schedule, ref_name = bench.PAIRS[order]
        options = {"objective": get_objective(objective), "schedule": schedule}
        ref_options = {"objective": objective}
    if d_order != "real_first":
        options["d_order"] = d_order
    G, D, opt_g, opt_d, latent, real = _pair(objective, batch, width)
    step = Step(G, D, opt_g, opt_d, latent=latent, **options)
    G2, D2, og2, od2, latent2, real2 = _pair(objective, batch, width)  # the reference's own
    minimal = regularizer is None and order == "d_first" and d_order == "real_first"
    if minimal and objective == "ns":
        ref_name = "hand_minimal_d_first"
        ref = lambda: bench.hand_minimal_d_first(G2, D2, og2, od2, real2, latent2)  # noqa: E731
    else:
        loop = getattr(reference, ref_name)
        ref = lambda: loop(G2, D2, og2, od2, [real2], latent2, **ref_options)  # noqa: E731
    return (lambda: step(real)), ref, ref_name


def measure(order: str, objective: str, regularizer: str | None = None,
            iterations: int = 8, d_order: str = "real_first", **sizes: int) -> dict:  # fmt: skip
    """One row: the Step's and its reference's calls per iteration, and their ratio."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        step, ref, ref_name = case(order, objective, regularizer, d_order=d_order, **sizes)
        ours, theirs = python_calls(step, iterations), python_calls(ref, iterations)
    finally:
        torch.set_num_threads(threads)
    return {
        "order": order, "objective": objective, "regularizer": regularizer or "-",
        "d_order": d_order,
        "reference": ref_name, "step_calls": ours.calls, "engine_calls": ours.engine,
        "reference_calls": theirs.calls, "ratio": ours.calls / theirs.calls,
    }  # fmt: skip


__all__ = [
    "Count",
    "python_calls",
    "case",
    "measure",
    "ORDERS",
    "OBJECTIVES",
    "R1_CASES",
]
