"""A CUDA graph replays one fixed piece of work, so ``iteration_kind`` must sort
iterations exactly: two iterations of one kind run the same ATen ops on the same
shapes and move the step's counters alike. Checked here, on the CPU, for every
cadence a graph holds (lazy R1, path length, d_steps, g_every, d_every, the fused step,
ADA's update)."""

from __future__ import annotations

import pytest
import torch
from helpers import Run, real_batches
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from ganstep import Step, d_first, g_first, objectives, simultaneous
from ganstep.engine.augment import Adaptive
from ganstep.engine.cuda_graph import iteration_kind
from ganstep.engine.regularizers import PathLength
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
    "path_length": (d_first(), "ns", {"g_regularizer": PathLength(every=3)}),
    "path_length_two_g_steps": (g_first(g_steps=2), "ns", {"g_regularizer": PathLength(every=3)}),
}
KINDS = {"lazy_r1": 2, "lazy_r1_two_d_steps": 3, "g_every": 2, "g_first_lazy_r1": 3,
         "simultaneous_d_every": 2, "simultaneous_g_every": 2, "path_length": 2,
         "path_length_two_g_steps": 3}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_one_kind_one_piece_of_work(case):
    schedule, objective, options = CASES[case]
    side = Run(objective if isinstance(objective, str) else objective.name, batchnorm=False)
    step = Step(*side.models(), objective=objective, schedule=schedule, latent=side.latent,
                **options)  # fmt: skip
    assert kinds_of(step, real_batches(20 * step.real_batches)) == KINDS.get(case, 1)


def test_ada_moving_its_p_is_a_kind_of_its_own():
    """ADA's update after every 3rd iteration, beside lazy R1 every 2nd D step: four
    kinds, each its own work."""
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(3, 64), nn.Tanh(), nn.Unflatten(1, (1, 8, 8))).double()
    D = nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(),
                      nn.Linear(64, 1)).double()  # fmt: skip
    latent = lambda n: torch.randn(n, 3, dtype=torch.float64)  # noqa: E731
    ada = Adaptive(interval=3, p=0.5)
    opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    step = Step(G, D, opt_g, opt_d, objective=lazy("ns", 2), schedule=d_first(), latent=latent,
                augment=ada)  # fmt: skip
    batches = [torch.rand(6, 1, 8, 8, dtype=torch.float64) * 2 - 1 for _ in range(20)]
    assert kinds_of(step, batches) == 4
    assert ada.p.item() != 0.5  # p moved: the update kinds ran it


def kinds_of(step: Step, batches: list, iterations: int = 20) -> int:
    """Run ``iterations`` of ``step`` on ``batches``, checking that two iterations of one
    kind do the same work and two kinds different work; return how many kinds ran."""
    seen: dict[tuple, tuple] = {}
    first: dict[tuple, int] = {}
    for i in range(iterations):
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
    distinct = {work for work in seen.values()}
    assert len(first) == len(seen) == len(distinct)  # each kind its own work (no needless graphs)
    return len(seen)


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
