"""Optimized Step == the hand-written loop it replaces, in float64, for every objective."""

from __future__ import annotations

import pytest
import torch
from helpers import OBJECTIVES, Run, real_batches
from torch.testing import assert_close

from ganstep import Step, d_first, g_first, reference, simultaneous

ITERATIONS = 4


def always(objective: str) -> bool:
    return True


def never(objective: str) -> bool:
    return False


# (id, schedule, reference loop, its options, do both sides forward G and D equally often
# (so BatchNorm running statistics must match too)?)
CASES = [
    ("dcgan_example", d_first(), reference.dcgan_example, {}, always),
    ("backward_memo_way1", d_first(reuse_fake=False), reference.backward_memo_way1, {}, always),
    ("backward_memo_way2", d_first(), reference.backward_memo_way2, {}, never),  # G forwarded twice
    ("backward_memo_way4", d_first(), reference.backward_memo_way4, {}, always),
    ("softmaxgan_graph_fix2", d_first(), reference.softmaxgan_graph_fix2, {}, always),
    ("lightning", g_first(reuse_z=True), reference.lightning_g_first, {}, always),
    ("pytorch_gan", simultaneous(), reference.pytorch_gan_g_first, {}, never),
    ("which_first_post_g_first", simultaneous(), reference.which_first_post_g_first, {}, never),
    (
        "softmaxgan_graph_fix3",
        simultaneous(d_every=2),
        reference.softmaxgan_graph_fix3,
        {},
        lambda objective: objective == "softmax",  # Step skips D(real) when G alone steps
    ),
    (
        "simultaneous_g_every3",
        simultaneous(g_every=3),
        reference.softmaxgan_graph_fix3,
        {"d_every": 1, "g_every": 3},
        never,
    ),
    (
        "n_critic3",
        d_first(d_steps=3, reuse_fake=False),
        reference.textbook_loop,
        {"d_steps": 3},
        always,
    ),
    (
        "d2_g2_reuse",
        d_first(d_steps=2, g_steps=2),
        reference.textbook_loop,
        {"d_steps": 2, "g_steps": 2, "reuse": True},
        always,
    ),
    (
        "g_first_g2_d2",
        g_first(g_steps=2, d_steps=2),
        reference.textbook_loop,
        {"order": "g_first", "d_steps": 2, "g_steps": 2},
        always,
    ),
    (
        "g_first_reuse_z_d2",
        g_first(d_steps=2, reuse_z=True),
        reference.textbook_loop,
        {"order": "g_first", "d_steps": 2, "reuse": True},
        always,
    ),
]


def run_step(objective, schedule, batchnorm, concat=False):
    side = Run(objective, batchnorm)
    step = Step(
        *side.models(), objective=objective, schedule=schedule, latent=side.latent, concat=concat
    )
    k = step.real_batches
    batches = real_batches(ITERATIONS * k)
    torch.manual_seed(7)  # WGAN-GP's interpolation weights come from the global generator
    logs = [step(batches[i * k : (i + 1) * k] if k > 1 else batches[i]) for i in range(ITERATIONS)]
    return side, logs


def run_reference(objective, loop, options, batchnorm, real_per_iteration):
    side = Run(objective, batchnorm)
    torch.manual_seed(7)
    batches = real_batches(ITERATIONS * real_per_iteration)
    history = loop(*side.models(), batches, side.latent, objective, **options)
    return side, history


def assert_same_models(a: Run, b: Run, buffers: bool) -> None:
    for module_a, module_b in ((a.G, b.G), (a.D, b.D)):
        for (name, p), q in zip(module_a.named_parameters(), module_b.parameters(), strict=True):
            assert_close(p, q, msg=lambda m, name=name: f"parameter {name}: {m}")
        if buffers:
            for (name, p), q in zip(module_a.named_buffers(), module_b.buffers(), strict=True):
                assert_close(p, q, msg=lambda m, name=name: f"buffer {name}: {m}")


def assert_same_losses(logs, history):
    assert len(logs) == len(history)
    for it, (ours, theirs) in enumerate(zip(logs, history, strict=True)):
        assert set(theirs) <= set(ours), f"iteration {it}: ganstep logs {sorted(ours)}"
        for key, value in theirs.items():
            assert_close(ours[key].item(), value, msg=lambda m, k=key, i=it: f"{k} at {i}: {m}")


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_step_equals_reference_loop(case, objective, batchnorm):
    _, schedule, loop, options, same_forwards = case
    ours, logs = run_step(objective, schedule, batchnorm)
    theirs, history = run_reference(objective, loop, options, batchnorm, schedule.real_batches)
    assert_same_losses(logs, history)
    assert_same_models(ours, theirs, buffers=same_forwards(objective))


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c[0] in ("dcgan_example", "pytorch_gan")],
    ids=["d_first", "simultaneous"],
)
def test_concat_equals_separate_calls_without_batchnorm(case, objective):
    _, schedule, loop, options, _ = case
    ours, logs = run_step(objective, schedule, batchnorm=False, concat=True)
    theirs, history = run_reference(objective, loop, options, False, 1)
    assert_same_losses(logs, history)
    assert_same_models(ours, theirs, buffers=False)


@pytest.mark.parametrize(
    "schedule, loop",
    [
        (simultaneous(), reference.dcgan_example),
        (d_first(), reference.pytorch_gan_g_first),
        (g_first(reuse_z=True), reference.dcgan_example),
    ],
    ids=["simultaneous-vs-d_first", "d_first-vs-simultaneous", "g_first-vs-d_first"],
)
def test_orders_differ_so_the_comparison_can_fail(schedule, loop):
    """The equivalence tests mean something only if different orders give different numbers."""
    ours, _ = run_step("ns", schedule, batchnorm=False)
    theirs, _ = run_reference("ns", loop, {}, False, 1)
    diff = max(
        (p - q).abs().max().item()
        for p, q in zip(ours.G.parameters(), theirs.G.parameters(), strict=True)
    )
    assert diff > 1e-4


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_retain_graph_loops_raise_pytorch_inplace_error(objective):
    for loop in (reference.detach_or_retain_strategy1, reference.softmaxgan_graph_original):
        side = Run(objective, batchnorm=False)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loop(*side.models(), real_batches(1), side.latent, objective)


def test_backward_memo_way4_without_retain_graph_raises():
    side = Run("ns", batchnorm=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        reference.backward_memo_way4(
            *side.models(), real_batches(1), side.latent, retain_graph=False
        )


def test_seed_aliases_are_the_loops_they_name():
    """Seed loops documented as "the DCGAN example's loop" run it (same numbers)."""
    runs = []
    for loop in (
        reference.dcgan_example,
        reference.backward_memo_way3,
        reference.detach_or_retain_strategy2,
    ):
        side = Run("ns", batchnorm=True)
        runs.append(loop(*side.models(), real_batches(3), side.latent, "ns"))
    assert runs[0] == runs[1] == runs[2]
