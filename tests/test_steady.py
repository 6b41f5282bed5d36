"""The steady iteration (engine/steady.py) computes what the general path computes, bit
for bit, and gives every call it does not fit back to the general path."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from helpers import OBJECTIVES, Z_DIM, Run, real_batches
from helpers.wild import (
    ACGAND,
    CondG,
    PairD,
    Pix2PixG,
    ProjectionD,
    image_pairs,
    labelled_batches,
    patch_net,
    streams,
)
from helpers.wild import build as wild_build

import ganstep.engine.step as step_module
from ganstep import Step
from ganstep.engine.autograd_calls import backward_into
from ganstep.engine.objectives import NS, WGAN, get_objective
from ganstep.engine.schedules import d_first, g_first, simultaneous
from ganstep.trainer.models import MLP

SCHEDULES = [
    d_first(), d_first(d_steps=2, g_steps=2), d_first(reuse_fake=False, reuse_z=True),
    d_first(g_steps=2, g_steps_share_z=True),
    d_first(g_every=2), g_first(), g_first(reuse_z=True, d_steps=2, g_steps=2),
    simultaneous(), simultaneous(d_every=2), simultaneous(g_every=2),
]  # fmt: skip


def build(objective, schedule, batchnorm=False, dropout=False, **options):
    run = Run(objective if isinstance(objective, str) else "ns", batchnorm)
    if dropout:  # an impure D: simultaneous forwards it as the loop does
        run.D.net.insert(1, torch.nn.Dropout(0.3))
    step = Step(*run.models(), objective=objective, schedule=schedule, latent=run.latent,
                **options)  # fmt: skip
    return run, step


def state(run: Run, step: Step) -> list[torch.Tensor]:
    tensors = [*run.G.state_dict().values(), *run.D.state_dict().values()]
    for opt in (run.opt_g, run.opt_d):
        for per_param in opt.state_dict()["state"].values():
            tensors += [v for v in per_param.values() if isinstance(v, torch.Tensor)]
    tensors += [v for v in step.objective.state_dict().values() if isinstance(v, torch.Tensor)]
    return tensors


def both_ways(make, calls, monkeypatch, between=None):
    """Run ``calls`` (each the real input of one call) on a Step from ``make()`` as it is,
    and on one whose every call takes the general path; return what each computed."""
    results = []
    for steady in (True, False):
        with monkeypatch.context() as m:
            if not steady:
                m.setattr(step_module, "steady_for", lambda *a, **k: None)
            torch.manual_seed(3)  # Dropout's and WGAN-GP's draws
            run, step = make()
            logs = []
            for i, real in enumerate(calls):
                if between is not None:
                    between(i, run)
                logs.append(step(real))
            results.append((run, step, logs))
    return results


def assert_same(results) -> None:
    (run_a, step_a, logs_a), (run_b, step_b, logs_b) = results
    for a, b in zip(state(run_a, step_a), state(run_b, step_b), strict=True):
        assert torch.equal(a, b)
    for la, lb in zip(logs_a, logs_b, strict=True):
        assert list(la) == list(lb)  # the same keys, in the same order
        assert all(torch.equal(la[k], lb[k]) for k in la)
    assert step_a.state_dict()["iteration"] == step_b.state_dict()["iteration"]
    assert step_a.progress == step_b.progress


def calls_for(step: Step, n: int) -> list:
    k = step.real_batches
    batches = real_batches(n * k)
    return [batches[i * k] if k == 1 else batches[i * k : (i + 1) * k] for i in range(n)]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=repr)
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_steady_iteration_equals_the_general_path(objective, schedule, monkeypatch):
    probe = build(objective, schedule)[1]
    results = both_ways(lambda: build(objective, schedule), calls_for(probe, 5), monkeypatch)
    assert results[0][1]._steady is not None  # the steady path ran the calls after the first
    assert results[1][1]._steady is None
    assert_same(results)


OPTIONS = {
    "r1": dict(objective=NS(r1=0.5)),
    "lazy_r1": dict(objective=NS(r1=0.5, r1_every=2)),
    "fake_first": dict(d_order="fake_first"),
    "concat": dict(concat=True),
    "concat_auto": dict(concat="auto"),
    "log_scores": dict(log_scores=True),
    "scales": dict(d_scale=0.5, g_scale=2.0),
    "batchnorm": dict(batchnorm=True),
    "batchnorm_loop_forwards": dict(batchnorm=True, d_forwards="loop"),
    "dropout": dict(dropout=True),
    "dropout_merged": dict(dropout=True, d_forwards="merged"),
    "wgan_clipping": dict(objective=WGAN(0.05)),
    "wgan_authors": dict(objective=WGAN(0.05, sign=-1, clamp_at="before")),
    "bf16": dict(precision="bf16"),
}


@pytest.mark.parametrize("schedule", [d_first(), g_first(reuse_z=True), simultaneous()], ids=repr)
@pytest.mark.parametrize("name", list(OPTIONS))
def test_steady_iteration_with_options_equals_the_general_path(name, schedule, monkeypatch):
    options = dict(OPTIONS[name])
    options.setdefault("objective", "ns")
    calls = calls_for(build(schedule=schedule, **options)[1], 6)
    results = both_ways(lambda: build(schedule=schedule, **options), calls, monkeypatch)
    assert results[0][1]._steady is not None
    assert_same(results)


REAL_G_FAKE = {
    "plain": dict(),
    "r1": dict(objective=NS(r1=0.5)),
    "lazy_r1": dict(objective=NS(r1=0.5, r1_every=2)),
    "wgan_gp": dict(objective="wgan_gp"),
    "bf16": dict(precision="bf16"),
}


@pytest.mark.parametrize("schedule", SCHEDULES, ids=repr)
@pytest.mark.parametrize("name", list(REAL_G_FAKE))
def test_steady_real_g_fake_equals_the_general_path(name, schedule, monkeypatch):
    """d_order="real_g_fake" with a Dropout D and z from torch's global generator: a z
    drawn before D's real forward would take other numbers than the general path's."""
    options = {"objective": "ns", **REAL_G_FAKE[name]}

    def make():
        run = Run("ns", False)
        run.D.net.insert(1, torch.nn.Dropout(0.3))
        latent = lambda n: torch.randn(n, Z_DIM, dtype=torch.float64)  # noqa: E731
        return run, Step(*run.models(), schedule=schedule, latent=latent,
                         d_order="real_g_fake", **options)  # fmt: skip

    results = both_ways(make, calls_for(make()[1], 5), monkeypatch)
    assert results[0][1]._steady is not None
    assert results[0][1]._steady.g_between
    assert_same(results)


def test_a_call_that_does_not_fit_takes_the_general_path(monkeypatch):
    """A smaller last batch, D switched to eval and back, another dtype of batch: each
    such call takes the general path (which checks it and plans again), bit for bit."""
    batches = real_batches(8)
    calls = [batches[0], batches[1], batches[2][:4], batches[3], batches[4], batches[5],
             batches[6], batches[7]]  # fmt: skip

    def between(i: int, run: Run) -> None:
        if i == 4:
            run.D.eval()
        if i == 6:
            run.D.train()

    results = both_ways(lambda: build("ns", d_first(), batchnorm=True, concat="auto"), calls,
                        monkeypatch, between)  # fmt: skip
    assert_same(results)
    step = build("ns", d_first())[1]
    step(batches[0])
    assert step._steady is not None
    assert step._steady(batches[0].float()) is None  # a float32 batch: not the plan's


def test_a_tuple_of_batches_is_refused_as_on_the_first_call():
    """d_steps=2 takes a list of two batches; a tuple is refused by the general path, so
    the steady one must not take it either."""
    step = build("ns", d_first(d_steps=2))[1]
    batches = real_batches(4)
    step(batches[:2])
    assert step._steady is not None
    with pytest.raises(ValueError, match="takes 2 real batch"):
        step(tuple(batches[2:]))


def test_a_layer_replaced_after_steady_calls_is_named():
    run, step = build("ns", d_first())
    for real in real_batches(3):
        step(real)
    run.G.net[0] = torch.nn.Linear(3, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match="changed after the Step was built"):
        step(real_batches(1)[0])


def test_a_latent_that_changes_is_refused_as_on_the_first_call():
    run = Run("ns", False)
    dtype = [torch.float64]  # what the latent draws; switched after two steady calls
    latent = lambda n: torch.randn(n, 3, generator=run.gen, dtype=dtype[0])  # noqa: E731
    step = Step(*run.models(), objective="ns", schedule=d_first(), latent=latent)
    batches = real_batches(3)
    step(batches[0])
    step(batches[1])
    assert step._steady is not None
    dtype[0] = torch.float32
    with pytest.raises(TypeError, match=r"latent\(6\) returned z of dtype torch.float32"):
        step(batches[2])


class Narrowing(torch.nn.Module):
    """G's layers, whose output loses a column when ``narrow`` is set (no registration)."""

    def __init__(self, g: torch.nn.Module) -> None:
        super().__init__()
        self.g, self.narrow = g, False

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        out = self.g(z)
        return out[:, :1] if self.narrow else out


@pytest.mark.parametrize("schedule", [d_first(), g_first(), simultaneous()], ids=repr)
def test_a_g_whose_output_changes_is_refused_as_on_the_first_call(schedule):
    run = Run("ns", False)
    G = Narrowing(run.G)
    step = Step(G, run.D, run.opt_g, run.opt_d, objective="ns", schedule=schedule,
                latent=run.latent)  # fmt: skip
    batches = real_batches(3)
    step(batches[0])
    step(batches[1])
    G.narrow = True
    with pytest.raises(ValueError, match="the real batch does not match G's output"):
        step(batches[2])


@pytest.mark.parametrize("retain", [False, True])
def test_backward_into_adds_what_torch_autograd_backward_adds(retain):
    torch.manual_seed(0)
    net = MLP(3, 1, (5,)).double()
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    inputs = list(net.parameters())[:2]
    grads = []
    for backward in (backward_into, None):
        for p in net.parameters():
            p.grad = None
        loss = net(x).square().mean()
        if backward is None:
            torch.autograd.backward(loss, inputs=inputs, retain_graph=retain)
        else:
            backward(loss, inputs, retain, True)
        grads.append([p.grad for p in net.parameters()])
        if retain:  # the graph is still there to backpropagate again
            loss.backward()
    (ours, theirs) = grads
    assert x.grad is None or retain
    for a, b in zip(ours, theirs, strict=True):
        assert (a is None and b is None) or torch.equal(a, b)
    assert ours[2] is None or retain  # only the inputs named received a gradient


def test_backward_into_goes_through_a_wrapped_torch_autograd_backward(monkeypatch):
    """ganstep audit wraps torch.autograd.backward to see every backward call."""
    seen = []
    original = torch.autograd.backward

    def wrapped(*args, **kwargs):
        seen.append(kwargs.get("inputs"))
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.autograd, "backward", wrapped)
    p = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))
    backward_into((p * 3).sum(), [p], plain=True)
    assert len(seen) == 1 and torch.equal(p.grad, torch.full((2,), 3.0, dtype=torch.float64))


def test_user_objectives_take_the_steady_path(monkeypatch):
    """An Objective subclass of the user's (a penalty and a hook after D's step) is
    called as the general path calls it."""

    class Clipped(type(get_objective("hinge"))):
        name = "clipped_hinge"

        def after_d_step(self, D):
            for p in D.parameters():
                p.data.clamp_(-0.3, 0.3)

        def penalty(self, D, real, fake):
            return 0.1 * D(real).square().mean()

    make = lambda: build(Clipped(), d_first())  # noqa: E731
    results = both_ways(make, calls_for(make()[1], 5), monkeypatch)
    assert results[0][1]._steady is not None
    assert_same(results)


# Conditional Steps (condition="real"): each fake is made for its real batch's condition.
CONDITIONAL = {
    "cgan_projection": (lambda: CondG(False), lambda: ProjectionD(False), {}),
    "cgan_batchnorm_concat": (
        lambda: CondG(True),
        lambda: ProjectionD(True),
        {"concat": "auto"},
    ),  # fmt: skip
    "cgan_r1": (lambda: CondG(False), lambda: ProjectionD(False), {"objective": NS(r1=0.5)}),
    "cgan_lazy_r1_concat": (
        lambda: CondG(False),
        lambda: ProjectionD(False),
        {"objective": NS(r1=0.5, r1_every=2), "concat": True},
    ),  # fmt: skip
    "cgan_wgan_gp_scores": (
        lambda: CondG(False),
        lambda: ProjectionD(False),
        {"objective": "wgan_gp", "log_scores": True},
    ),  # fmt: skip
    "cgan_softmax": (lambda: CondG(False), lambda: ProjectionD(False), {"objective": "softmax"}),
    "acgan_d_of_x": (lambda: CondG(False), lambda: ACGAND(False), {"d_conditional": False}),
}


@pytest.mark.parametrize("schedule", [d_first(), d_first(d_steps=2, reuse_fake=False,
                                                          reuse_z=True),
                                      g_first(reuse_z=True, d_steps=2), simultaneous()],
                         ids=repr)  # fmt: skip
@pytest.mark.parametrize("name", list(CONDITIONAL))
def test_conditional_steady_iteration_equals_the_general_path(name, schedule, monkeypatch):
    make_g, make_d, options = CONDITIONAL[name]
    options = {"objective": "ns", **options}
    batches = labelled_batches(10)
    k = schedule.real_batches
    calls = [batches[i * k] if k == 1 else batches[i * k : (i + 1) * k] for i in range(5)]

    def make():
        (G, D, opt_g, opt_d), _ = wild_build(make_g, make_d)
        latent, _ = streams()
        step = Step(G, D, opt_g, opt_d, schedule=schedule, latent=latent, condition="real",
                    **options)  # fmt: skip
        return SimpleNamespace(G=G, D=D, opt_g=opt_g, opt_d=opt_d), step

    results = both_ways(make, calls, monkeypatch)
    assert results[0][1]._steady is not None
    assert_same(results)


@pytest.mark.parametrize("order", ["real_first", "fake_first"])
def test_image_to_image_steady_iteration_equals_the_general_path(order, monkeypatch):
    """pix2pix's shape: G(c) without z, a PatchGAN map from D(x, c), concatenated."""
    calls = image_pairs(5)

    def make():
        (G, D, opt_g, opt_d), _ = wild_build(Pix2PixG, lambda: PairD(patch_net(False)))
        step = Step(G, D, opt_g, opt_d, objective="lsgan", schedule=d_first(), latent=None,
                    condition="real", d_order=order, concat=True, d_scale=0.5)  # fmt: skip
        return SimpleNamespace(G=G, D=D, opt_g=opt_g, opt_d=opt_d), step

    results = both_ways(make, calls, monkeypatch)
    assert results[0][1]._steady is not None
    assert_same(results)


def test_a_condition_of_another_kind_takes_the_general_path():
    (G, D, opt_g, opt_d), _ = wild_build(lambda: CondG(False), lambda: ProjectionD(False))
    latent, _ = streams()
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(), latent=latent,
                condition="real")  # fmt: skip
    x, y = labelled_batches(1)[0]
    step((x, y))
    assert step._steady is not None
    assert step._steady((x, y[:3])) is None  # another number of labels: checked in full
    with pytest.raises(ValueError, match="the condition has shape"):
        step((x, y[:3]))


class Extras(torch.nn.Module):
    """A module returning a tuple: its own output first, then an extra (features, an
    auxiliary loss), as Ds with feature heads and Gs with codebook losses do."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor):
        out = self.net(x)
        return out, out.square().mean()


class MultiScale(torch.nn.Module):
    """D returning a list of two adversarial outputs (pix2pixHD's multi-scale D)."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor):
        out = self.net(x)
        return [out, 2 * out]


@pytest.mark.parametrize("schedule", [d_first(), simultaneous()], ids=repr)
@pytest.mark.parametrize("which", ["D", "G"])
def test_tuple_outputs_take_the_steady_path(which, schedule, monkeypatch):
    """D's (score, *extras) and G's (samples, *extras), no term reading the extras."""

    def make():
        run, _ = build("ns", schedule)
        setattr(run, which, Extras(getattr(run, which)))
        step = Step(*run.models(), objective="ns", schedule=schedule, latent=run.latent)
        return run, step

    results = both_ways(make, calls_for(make()[1], 5), monkeypatch)
    assert results[0][1]._steady is not None
    assert_same(results)


def test_a_multi_scale_d_takes_the_general_path():
    run, _ = build("ns", d_first())
    run.D = MultiScale(run.D)
    step = Step(*run.models(), objective="ns", schedule=d_first(), latent=run.latent)
    for real in real_batches(2):
        step(real)
    assert step._steady is None and step.game.most_d_outputs == 2


EACH_BATCH = [d_first(d_steps="each_batch"), d_first(d_steps="each_batch", reuse_fake=False),
              g_first(d_steps="each_batch", reuse_z=True)]  # fmt: skip


@pytest.mark.parametrize("schedule", EACH_BATCH, ids=repr)
def test_each_batch_takes_one_d_step_per_batch_given_on_both_paths(schedule, monkeypatch):
    """d_steps="each_batch" called with 3, 1, 5, 2 and 1 batches: the steady path and the
    general path compute the same bits, and D steps once per batch."""
    batches = real_batches(12)
    calls = [batches[0:3], batches[3:4], batches[4:9], batches[9:11], batches[11:12]]
    objective = WGAN(0.05, sign=-1, clamp_at="before")
    results = both_ways(lambda: build(objective, schedule), calls, monkeypatch)
    assert results[0][1]._steady is not None
    assert_same(results)
    assert results[0][1].progress.d_updates == 12


@pytest.mark.parametrize("schedule", EACH_BATCH, ids=repr)
def test_each_batch_given_k_batches_equals_d_steps_k(schedule):
    """Called with 3 batches each time, "each_batch" is d_steps=3, to the bit."""
    fixed = type(schedule)(**{**schedule.__dict__, "d_steps": 3})
    batches = real_batches(9)
    calls = [batches[i : i + 3] for i in (0, 3, 6)]
    (run_a, step_a), (run_b, step_b) = build("ns", schedule), build("ns", fixed)
    logs_a, logs_b = [step_a(c) for c in calls], [step_b(c) for c in calls]
    for a, b in zip(state(run_a, step_a), state(run_b, step_b), strict=True):
        assert torch.equal(a, b)
    for la, lb in zip(logs_a, logs_b, strict=True):
        assert all(torch.equal(la[k], lb[k]) for k in la)
