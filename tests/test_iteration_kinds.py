"""A CUDA graph replays one fixed piece of work, so ``iteration_kind`` must sort
iterations exactly: two iterations of one kind run the same ATen ops on the same
shapes and move the step's counters alike. Checked here, on the CPU, for every
cadence a graph holds (lazy R1, d_steps, g_every, d_every, the fused step)."""

from __future__ import annotations

import pytest
import torch
from helpers import Run, real_batches
from torch.utils._python_dispatch import TorchDispatchMode

from ganstep import Step, d_first, g_first, objectives, simultaneous
from ganstep.engine.cuda_graph import iteration_kind
from ganstep.engine.schedules import Schedule


class _Ops(TorchDispatchMode):
    """Each ATen op run inside it, with the shapes of its tensor arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        shapes = tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor))
        self.ops.append((str(func), shapes))
        return func(*args, **(kwargs or {}))


def lazy(name: str, every: int):
    return objectives.OBJECTIVES[name](r1=1.0, r1_every=every)


CASES = {
    "d_first": (d_first(), "ns", {}),
    "lazy_r1": (d_first(), lazy("ns", 4), {}),
    "lazy_r1_two_d_steps": (d_first(d_steps=2), lazy("ns", 3), {}),
    "g_every": (d_first(d_steps=2, g_every=3), "wgan_gp", {}),
    "g_first_lazy_r1": (g_first(d_steps=2), lazy("hinge", 3), {}),
    "simultaneous_d_every": (simultaneous(d_every=2), "ns", {}),
    "simultaneous_g_every": (simultaneous(g_every=3), "lsgan", {}),
    "fused_wgan_gp": (simultaneous(fused=True), "wgan_gp", {}),
    "g_term": (d_first(), "ns", {"g_terms": {"l1": lambda v: v.fake.x.abs().mean()}}),
}
KINDS = {"lazy_r1": 2, "lazy_r1_two_d_steps": 3, "g_every": 2, "g_first_lazy_r1": 3,
         "simultaneous_d_every": 2, "simultaneous_g_every": 2}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_one_kind_one_piece_of_work(case):
    schedule, objective, options = CASES[case]
    side = Run(objective if isinstance(objective, str) else objective.name, batchnorm=False)
    step = Step(*side.models(), objective=objective, schedule=schedule, latent=side.latent,
                **options)  # fmt: skip
    seen: dict[tuple, tuple] = {}
    first: dict[tuple, int] = {}
    batches = real_batches(20 * step.real_batches)
    for i in range(20):
        kind = iteration_kind(step)
        progress = step.progress
        before = (progress.iteration, progress.d_updates)
        reals = batches[i * step.real_batches : (i + 1) * step.real_batches]
        with _Ops() as ops:
            step(reals if len(reals) > 1 else reals[0])
        moved = (progress.iteration - before[0], progress.d_updates - before[1])
        assert moved == (1, kind[0]), f"iteration {i} of kind {kind} moved {moved}"
        # A kind's first iteration is never captured (warmup >= 1): it observes D, or
        # makes an optimizer's moments, the first time.
        if first.setdefault(kind, i) == i:
            continue
        work = (tuple(ops.ops), moved)
        assert seen.setdefault(kind, work) == work, f"iteration {i}: kind {kind} did other work"
    assert len(first) == len(seen) == KINDS.get(case, 1)
    distinct = {work for work in seen.values()}
    assert len(distinct) == len(seen)  # each kind is its own work (no needless graphs)


def test_a_schedule_that_does_not_say_its_updates_is_refused():
    class Mine(Schedule):
        name = "mine"

        def run(self, game, reals, iteration):
            return {}

    from ganstep.engine.cuda_graph import check_capturable

    side = Run("ns", batchnorm=False)
    step = Step(*side.models(), objective="ns", schedule=Mine(), latent=side.latent)
    with pytest.raises(ValueError, match="Schedule.updates"):
        check_capturable(step)
