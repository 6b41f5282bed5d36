"""CUDA graphs rehearsed on the CPU: every iteration a graph would hold, in the engine
(``GraphedStep``'s cases) and in ``ganstep train`` (``Iteration``), replays as it ran.

A replay repeats the captured kernels with the arguments they had; the Python does
not run again. ``helpers.replay.Rehearsal`` records each iteration's ATen ops with
every host-side argument; from the earliest iteration a graph is captured on (a
kind's second, after ``warmup=1`` as ``ganstep bench`` and benchmarks/gpu.py capture),
all of that kind must be the same work, argument for argument, reading the tensors
alive at the capture where they are, with no host read, no copy from host memory, no
tensor made without a device and no draw from a generator the graph does not advance.
Adam is capturable here as on CUDA (its step count and bias corrections tensors). The
CUDA tests check the replays' numbers on a GPU; this checks, on any machine, what makes
them equal. The last tests show the rehearsal fails what a graph would replay wrong."""

from __future__ import annotations

import inspect

import pytest
import torch
from helpers import OBJECTIVES, build_trainee, real_batches
from helpers.graph_cases import conditioned, graph_cases, make, per_call
from helpers.replay import Rehearsal, capturable_on_cpu, live_tensors

from ganstep import Step, d_first, g_first, simultaneous
from ganstep.engine.cuda_graph import GraphedStep, StaticInput, check_capturable, iteration_kind
from ganstep.tools.bench import PAIRS, make_pair
from ganstep.trainer import trainee as trainee_module
from ganstep.trainer.iteration import WARMUP, Iteration

CAPTURED_AT = 2  # no graph is captured before a kind's second call (warmup >= 1)
CASES = graph_cases("cpu")
IMAGES = {"data": "digits", "model": "dcgan", "width": 8, "batch_size": 8}
RUNS = {
    "default": {},
    "points-lazy_r1-decay-ema": {"r1": 0.5, "r1_every": 3, "lr_decay": "linear", "ema": 0.99},
    "g_first-lazy_r1": {"objective": "lsgan", "schedule": "g_first", "r1": 1.0, "r1_every": 2},
    "images": IMAGES,
    "images-cgan-hinge": {**IMAGES, "conditional": True, "objective": "hinge"},
    "images-diffaugment": {**IMAGES, "augment": "diffaugment"},
    "images-ada-lazy_r1": {**IMAGES, "augment": "ada", "r1": 1.0, "r1_every": 2},
    "images-accumulate2": {**IMAGES, "accumulate": 2},
    "images-fp16": {**IMAGES, "precision": "fp16"},
    "images-wgan_gp": {**IMAGES, "objective": "wgan_gp"},
    "began-simultaneous": {**IMAGES, "model": "began", "objective": "began",
                           "schedule": "simultaneous"},
    "images-pack2-bf16": {**IMAGES, "pack": 2, "precision": "bf16"},
    "fused-wgan_gp": {"objective": "wgan_gp", "schedule": "simultaneous", "fused": True},
}  # fmt: skip


def rehearse(iterate, step, generators, calls: int, feed=None) -> tuple[dict, list[str]]:
    """Run ``calls`` iterations (``feed(i)`` first, outside the graph, then
    ``iterate(i)``); return how many of each kind ran and what a graph would replay
    wrong from the first captured iteration of each kind on."""
    captured: dict[tuple, list] = {}
    state: dict[tuple, tuple] = {}  # per kind: the tensors alive at its capture
    runs: dict[tuple, int] = {}
    problems: list[str] = []
    for i in range(calls):
        kind = iteration_kind(step)
        if runs.get(kind, 0) + 1 == CAPTURED_AT:
            state[kind] = live_tensors()
        if feed is not None:
            feed(i)
        with Rehearsal(generators, state.get(kind, (None, frozenset()))[1]) as seen:
            iterate(i)
        runs[kind] = runs.get(kind, 0) + 1
        if runs[kind] < CAPTURED_AT:
            continue  # eager warmup: optimizer moments made, D observed, once
        problems += [f"iteration {i}: {p}" for p in seen.problems]
        first = captured.setdefault(kind, seen.ops)
        if first != seen.ops:
            at = next(
                (j for j, (a, b) in enumerate(zip(first, seen.ops, strict=False)) if a != b), None
            )
            where = f"op {at}: {first[at]} then {seen.ops[at]}" if at is not None else "length"
            problems.append(f"iteration {i} of kind {kind} is not its capture's work ({where})")
    return runs, problems


def engine_case(name: str, **change):
    schedule, objective, options = CASES[name]
    options = {**options, **change}
    side, step = make(schedule, objective=objective, conditional="condition" in options,
                      **options)  # fmt: skip
    data = real_batches(48, dtype=torch.float32)
    if "condition" in options:  # real batches carry their labels either way
        data = conditioned(data, "cpu")
    calls = per_call(data, schedule)
    return side, step, calls


def rehearse_step(step, side, calls, count: int) -> tuple[dict, list[str]]:
    """``step`` as GraphedStep runs it: each call's batches copied into one input."""
    static = StaticInput(calls[0])
    feed = lambda i: static.fill(calls[i])  # noqa: E731
    return rehearse(lambda i: step(static.value), step, [side.gen], count, feed)


@pytest.fixture
def capturable(monkeypatch):
    capturable_on_cpu(monkeypatch)


def test_no_graph_is_captured_before_the_rehearsal_checks():
    """A graph is captured at call warmup + 1 of its kind; from there on the rehearsal
    must check each call (it starts at CAPTURED_AT)."""
    graphed_step = inspect.signature(GraphedStep).parameters["warmup"].default
    assert WARMUP + 1 >= CAPTURED_AT and graphed_step + 1 >= CAPTURED_AT


@pytest.mark.parametrize("name", list(CASES))
def test_each_graphed_step_iteration_replays_as_it_ran(capturable, name):
    side, step, calls = engine_case(name)
    runs, problems = rehearse_step(step, side, calls, 16)
    assert problems == []
    assert all(n >= CAPTURED_AT + 1 for n in runs.values()), runs  # replays were checked


def graphable_run(monkeypatch, name: str) -> tuple:
    """The Trainee of ``RUNS[name]`` with the Adam a CUDA run has, and its Iteration."""
    monkeypatch.setattr(trainee_module, "adam_for_graphs", lambda device, cfg: True)
    trainee, data = build_trainee(**RUNS[name])
    with pytest.raises(ValueError, match="needs the models on CUDA"):
        check_capturable(trainee.step)  # its one refusal on the CPU: no other reason
    return trainee, Iteration(trainee.cfg, data, trainee, writer=False)


@pytest.mark.parametrize("name", list(RUNS))
def test_each_training_iteration_replays_as_it_ran(capturable, monkeypatch, name):
    """``Iteration``'s body as its graph holds it where the data fits on the GPU:
    batches and z drawn on the device from the run's generators, the Step, G's EMA."""
    trainee, iteration = graphable_run(monkeypatch, name)
    generators = [trainee.latent_gen, trainee.data_gen]
    runs, problems = rehearse(lambda i: iteration(), trainee.step, generators, 12)
    assert problems == []
    assert max(runs.values()) >= CAPTURED_AT + 1, runs


@pytest.mark.parametrize("name", ["images-cgan-hinge", "images-pack2-bf16"])
def test_a_training_iteration_fed_from_the_host_replays_as_it_ran(capturable, monkeypatch,
                                                                  name):  # fmt: skip
    """Data too large for the GPU: each iteration's batches drawn on the host and copied
    into the graph's input before the replay, which draws z alone."""
    trainee, iteration = graphable_run(monkeypatch, name)
    iteration.static = StaticInput(iteration._draw())

    def feed(i):
        iteration.static.fill(iteration._draw())

    generators = [trainee.latent_gen]
    runs, problems = rehearse(lambda i: iteration._run(), trainee.step, generators, 6, feed)
    assert problems == []
    assert max(runs.values()) >= CAPTURED_AT + 1, runs


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("order", list(PAIRS))
def test_the_benchmarks_graphed_dcgan_steps_replay_as_they_ran(capturable, order, precision):
    """The Steps ``ganstep bench --variants graph`` and benchmarks/gpu.py's graph rows
    capture: the DCGAN (BatchNorm in D) on one fixed batch, z from the pair's generator."""
    G, D, _, _, latent, real = make_pair("dcgan", "ns", 4, 8, "cpu")
    opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999), capturable=True)
    opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999), capturable=True)
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=PAIRS[order][0], latent=latent,
                precision=precision)  # fmt: skip
    step.observe_d(real)
    runs, problems = rehearse(lambda i: step(real), step, [latent.generator], 4)
    assert problems == [] and max(runs.values()) == 4


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("schedule", [d_first(), g_first(), simultaneous()], ids=str)
def test_no_iteration_reads_the_device_on_the_host(capturable, schedule, objective):
    """The CPU's view of the CUDA tests' sync check, for every objective and order (the
    fused step's one flag is its documented exception, tested in test_fused)."""
    side, step = make(schedule, objective=objective)
    data = real_batches(3, dtype=torch.float32)
    step(data[0])
    step(data[1])
    with Rehearsal([side.gen]) as seen:
        step(data[2])
    assert seen.problems == []


# --- the rehearsal fails what a graph replays wrong ---------------------------------


def test_adam_that_is_not_capturable_is_other_work_each_step(capturable):
    """It reads its step count on the host and steps with bias corrections made
    there, new at every step: a replay would repeat the captured step's."""
    side, step, calls = engine_case("ns-d_first", capturable=False)
    _, problems = rehearse_step(step, side, calls, 5)
    assert any("_local_scalar_dense.default reads a device value" in p for p in problems)
    assert any("is not its capture's work" in p for p in problems)


OTHER = torch.Generator().manual_seed(11)
RUNNING = {}  # a running value kept in a tensor, as a regularizer keeps its mean


def read_on_host(v):
    return v.fake.x.abs().mean() * float(v.fake.x.detach().max())


def copied_from_host(v):
    return v.fake.x.abs().mean() * torch.tensor(0.5, device=v.fake.x.device)


def replaced_running_value(v):
    RUNNING["mean"] = 0.9 * RUNNING["mean"] + 0.1
    return v.fake.x.abs().mean() * RUNNING["mean"]


def running_value_in_place(v):
    RUNNING["mean"].mul_(0.9).add_(0.1)
    return v.fake.x.abs().mean() * RUNNING["mean"]


WRONG = {
    "item": ({"g_terms": {"t": read_on_host}}, "reads a device value on the host"),
    "torch.tensor": ({"g_terms": {"t": copied_from_host}}, "copied from host memory"),
    "no device": ({"augment": lambda x: x + torch.randn(x.shape)}, "without a device"),
    "other generator": ({"augment": lambda x: x + torch.randn(x.shape, generator=OTHER)},
                        "a generator the graph does not advance"),
    "host value": ({"g_terms": {"t": lambda v: v.fake.x.abs().mean() / (v.iteration + 1)}},
                   "is not its capture's work"),
    "replaced state": ({"g_terms": {"t": replaced_running_value}}, "is not its capture's work"),
}  # fmt: skip


@pytest.mark.parametrize("wrong", list(WRONG))
def test_what_a_graph_replays_wrong_is_found(capturable, wrong):
    change, found = WRONG[wrong]
    RUNNING["mean"] = torch.ones(())
    side, step, calls = engine_case("ns-d_first", **change)
    _, problems = rehearse_step(step, side, calls, 5)
    assert any(found in p for p in problems), problems


def test_state_updated_in_place_replays(capturable):
    """The running value of ``replaced state`` kept in place instead: a replay updates it."""
    RUNNING["mean"] = torch.ones(())
    side, step, calls = engine_case("ns-d_first", g_terms={"t": running_value_in_place})
    assert rehearse_step(step, side, calls, 5)[1] == []
