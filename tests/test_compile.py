"""torch.compile of G and D inside Step: same updates as eager."""

from __future__ import annotations

import copy
import shutil
import sysconfig
from pathlib import Path

import pytest
import torch
from helpers import Run, real_batches
from torch.testing import assert_close

from ganstep import Step, d_first, g_first, simultaneous
from ganstep.engine.objectives import NS, OBJECTIVES
from ganstep.engine.regularizers import PathLength


def run(schedule, compile, objective="ns", **options):
    side = Run("ns", batchnorm=False)
    step = Step(*side.models(), objective=objective, schedule=schedule, latent=side.latent,
                compile=compile, **options)  # fmt: skip
    for real in real_batches(3):
        step(real)
    return [*side.G.parameters(), *side.D.parameters()]


@pytest.mark.parametrize("schedule", [d_first(), simultaneous(fused=True)], ids=["d", "fused"])
def test_compiled_step_equals_eager(schedule):
    # aot_eager traces forward and backward like inductor does, without generating code:
    # the plumbing (frozen modules, no_grad, the fused input gradient) is what is tested.
    torch._dynamo.reset()
    for p, q in zip(run(schedule, "aot_eager"), run(schedule, False), strict=True):
        assert_close(p, q)


# inductor on the CPU builds C++ against Python's headers
INDUCTOR_BUILDS = (
    any(map(shutil.which, ("c++", "g++", "clang++")))
    and (Path(sysconfig.get_paths()["include"]) / "Python.h").exists()
)


@pytest.mark.skipif(not INDUCTOR_BUILDS, reason="no C++ compiler or Python headers")
def test_default_backend_runs_simultaneous_after_a_compiled_d_first_step():
    # Inductor (compile=True) lets a compiled backward reuse what its forward saved
    # ("donated buffers") and refuses a second backward through one forward, which the
    # simultaneous order takes through D's forward on the fake batch (L_D's, then L_G's).
    # The d_first Step first leaves its compiled code for these classes in Dynamo's cache
    # (as benchmarks/gpu.py's compile rows did), and G and D share one class (MLP), so D
    # is compiled again for dynamic shapes: both ways to the refusal, before the fix.
    torch._dynamo.reset()
    run(d_first(), True)
    for p, q in zip(run(simultaneous(), True), run(simultaneous(), False), strict=True):
        assert_close(p, q)


@pytest.mark.parametrize("value", [1, "", None, 2.0])
def test_compile_takes_a_bool_or_a_backend_name(value):
    side = Run("ns", batchnorm=False)
    with pytest.raises((TypeError, ValueError), match="compile"):
        Step(*side.models(), objective="ns", schedule="d_first", latent=side.latent,
             compile=value)  # fmt: skip


def test_a_compiled_d_is_named_by_its_own_layers_in_messages():
    # the refusal names D's BatchNorm layers as the user wrote them, not torch.compile's
    # wrapper's paths (_orig_mod.net.1)
    side = Run("ns", batchnorm=True)
    names = [n for n, m in side.D.named_modules() if isinstance(m, torch.nn.BatchNorm1d)]
    with pytest.raises(ValueError, match="BatchNorm in training mode") as refused:
        Step(*side.models(), objective="ns", schedule=simultaneous(fused=True),
             latent=side.latent, compile="aot_eager")  # fmt: skip
    assert f"({', '.join(names)})" in str(refused.value)
    assert "_orig_mod" not in str(refused.value)


@pytest.mark.parametrize("schedule", [d_first(), simultaneous()], ids=["d_first", "simult"])
@pytest.mark.parametrize(
    "objective, options",
    [("wgan_gp", {}), (NS(r1=1.0, r1_every=2), {}),
     ("ns", {"g_regularizer": PathLength(3.0, every=2, shrink=1)})],
    ids=["wgan_gp", "lazy_r1", "path_length"],
)  # fmt: skip
def test_a_penalty_on_forwards_of_its_own_runs_them_uncompiled(schedule, objective, options):
    # compiled code has no double backward: WGAN-GP's interpolates, lazy R1's real batch
    # and path length's G forward go through the user's own modules (on the general
    # path, and on the steady one where it runs: not with path length); everything
    # else stays compiled
    torch._dynamo.reset()
    compiled = run(schedule, "aot_eager", copy.deepcopy(objective), **copy.deepcopy(options))
    eager = run(schedule, False, copy.deepcopy(objective), **copy.deepcopy(options))
    for p, q in zip(compiled, eager, strict=True):
        assert_close(p, q)


R1_CASES = [(False, concat) for concat in (False, True, "auto")] + [(True, False), (True, "auto")]


@pytest.mark.parametrize(
    ("batchnorm", "concat"),
    R1_CASES,
    ids=["two_calls", "concat", "auto", "batchnorm", "batchnorm-auto"],
)
@pytest.mark.parametrize(
    "schedule", [d_first(), g_first(), simultaneous(), simultaneous(fused=True)], ids=str
)  # fmt: skip
def test_r1_on_every_step_reads_an_uncompiled_real_forward(schedule, batchnorm, concat):
    # R1 is read from D's loss forward on the real batch: that forward runs on the
    # user's D (compiled code has no double backward), the fake batch's stays compiled
    # (concat="auto" calls D twice for it; concat=True makes one uncompiled call) but
    # where D's forward changes its buffers (BatchNorm's running statistics: a compiled
    # forward's write-back would invalidate what the uncompiled one saved). The first
    # iteration takes the general path, the next two the steady one.
    if batchnorm and getattr(schedule, "fused", False):
        pytest.skip("the fused step refuses a D with BatchNorm in training mode")
    torch._dynamo.reset()
    runs = []
    for compile in ("aot_eager", False):
        side = Run("ns", batchnorm=batchnorm)
        step = Step(*side.models(), objective=NS(r1=1.0), schedule=schedule,
                    latent=side.latent, compile=compile, concat=concat)  # fmt: skip
        logs = [step(real) for real in real_batches(3)]
        if not getattr(schedule, "fused", False):  # (the fused step: the general path)
            assert step._steady is not None  # the steady path ran its two iterations
        runs.append(([*side.G.state_dict().values(), *side.D.state_dict().values()], logs))
    (compiled, compiled_logs), (eager, eager_logs) = runs
    for p, q in zip(compiled, eager, strict=True):
        assert_close(p, q)
    assert compiled_logs[-1]["gp"] > 0
    assert_close(compiled_logs[-1]["gp"], eager_logs[-1]["gp"])


@pytest.mark.parametrize("schedule", [d_first(), simultaneous()], ids=["d_first", "simult"])
def test_a_penalty_before_the_loss_forwards_of_a_batchnorm_d_runs_them_uncompiled(schedule):
    # its own uncompiled forward comes first and saves D's running statistics; the
    # compiled loss forwards' write-back of them broke its backward (version mismatch)
    torch._dynamo.reset()
    params = []
    for compile in ("aot_eager", False):
        side = Run("wgan_gp", batchnorm=True)
        objective = OBJECTIVES["wgan_gp"]()
        objective.penalty_at = "before"
        step = Step(*side.models(), objective=objective, schedule=schedule,
                    latent=side.latent, compile=compile)  # fmt: skip
        for real in real_batches(3):
            step(real)
        params.append([*side.G.state_dict().values(), *side.D.state_dict().values()])
    for p, q in zip(*params, strict=True):
        assert_close(p, q)


def test_a_penalty_read_from_both_loss_forwards_is_refused_under_compile():
    # it would leave nothing of D's step compiled
    class Div(NS):
        penalty_at = "loss_forwards"

        def penalty_on_outputs(self, x_real, out_real, x_fake, out_fake):
            return out_real.sum() * 0

    side = Run("ns", batchnorm=False)
    with pytest.raises(ValueError, match="penalty on D's loss forwards"):
        Step(*side.models(), objective=Div(), schedule="d_first", latent=side.latent,
             compile="aot_eager")  # fmt: skip
