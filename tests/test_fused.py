"""The fused simultaneous step equals the unfused one, and refuses where it would not."""

from __future__ import annotations

import copy

import pytest
import torch
from helpers import Run, real_batches
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.testing import assert_close

from ganstep import Step, objectives, simultaneous

FUSABLE = ["minimax", "ns", "lsgan", "hinge", "wgan_gp", "bgan"]
ITERATIONS = 6


def run(objective, schedule, concat=False, iterations=ITERATIONS):
    side = Run(objective if isinstance(objective, str) else objective.name, batchnorm=False)
    step = Step(*side.models(), objective=objective, schedule=schedule, latent=side.latent,
                concat=concat)  # fmt: skip
    torch.manual_seed(7)  # WGAN-GP's interpolation weights
    logs = [step(real) for real in real_batches(iterations)]
    return side, logs


def assert_same_runs(a, b):
    (side_a, logs_a), (side_b, logs_b) = a, b
    for module_a, module_b in ((side_a.G, side_b.G), (side_a.D, side_b.D)):
        for (name, p), q in zip(module_a.named_parameters(), module_b.parameters(), strict=True):
            assert_close(p, q, msg=lambda m, name=name: f"parameter {name}: {m}")
    for it, (x, y) in enumerate(zip(logs_a, logs_b, strict=True)):
        assert x.keys() == y.keys()
        for key in x:
            assert_close(x[key], y[key], msg=lambda m, k=key, i=it: f"{k} at {i}: {m}")


@pytest.mark.parametrize("concat", [False, True], ids=["separate", "concat"])
@pytest.mark.parametrize("objective", FUSABLE)
def test_fused_equals_unfused(objective, concat):
    fused = run(objective, simultaneous(fused=True), concat)
    assert_same_runs(fused, run(objective, simultaneous(), concat))


@pytest.mark.parametrize("objective", ["ns", "hinge", "lsgan"])
def test_fused_equals_unfused_with_r1(objective):
    def make():
        return objectives.OBJECTIVES[objective](r1=0.5)

    assert_same_runs(run(make(), simultaneous(fused=True)), run(make(), simultaneous()))


@pytest.mark.parametrize("sign", [1, -1])
def test_fused_equals_unfused_on_wasserstein_losses_of_either_sign(sign):
    """WGAN's clipping (after D's step) and the WGAN authors' critic scoring real samples
    low (sign=-1, clamped before the iteration's forwards): G's slope is -1 times D's."""
    for clamp_at in ("after", "before"):

        def make(clamp_at=clamp_at):
            return objectives.WGAN(0.05, sign=sign, clamp_at=clamp_at)

        assert_same_runs(run(make(), simultaneous(fused=True)), run(make(), simultaneous()))


@pytest.mark.parametrize("options", [{"d_every": 2}, {"g_every": 3}])
def test_fused_with_intermittent_updates(options):
    fused = run("ns", simultaneous(fused=True, **options), iterations=7)
    assert_same_runs(fused, run("ns", simultaneous(**options), iterations=7))


def test_fused_differs_from_a_sequential_step():
    """The comparison can fail: D stepping before G's gradient is taken is not the same."""
    from ganstep import d_first

    fused_side, _ = run("ns", simultaneous(fused=True))
    other_side, _ = run("ns", d_first(reuse_fake=False))
    with pytest.raises(AssertionError):
        assert_close(next(fused_side.G.parameters()), next(other_side.G.parameters()))


# --- the numerically hard case: D's slope at a fake sample is 0 or underflows ---------


class Scaled(nn.Module):
    """D(x) = a * x[:, 0] + b: scores spread as far as a test needs."""

    def __init__(self, a: float, b: float = 0.0):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([a, 0.3]))
        self.bias = nn.Parameter(torch.tensor(b))

    def forward(self, x):
        return x @ self.weight + self.bias


def one_step(objective, schedule, G, D, z, real, dtype, precision="fp32"):
    G, D = copy.deepcopy(G).to(dtype), copy.deepcopy(D).to(dtype)
    opt_g = torch.optim.SGD(G.parameters(), lr=1.0)
    opt_d = torch.optim.SGD(D.parameters(), lr=1.0)
    step = Step(G, D, opt_g, opt_d, objective=objective, schedule=schedule,
                latent=lambda n: z.to(dtype), precision=precision)  # fmt: skip
    if precision == "fp16":  # small enough that G's float16 gradients do not overflow
        step.precision.scalers = {w: torch.amp.GradScaler("cpu", init_scale=2.0**8) for w in "dg"}
    step(real.to(dtype))
    return [p.detach().double() for p in (*G.parameters(), *D.parameters())]


def identity_g() -> nn.Linear:
    """G(z) = z[:, :2], so the fake scores are what a test picks."""
    G = nn.Linear(3, 2, bias=False)
    with torch.no_grad():
        G.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    return G


def hard_case(objective, a, b, z_rows):
    torch.manual_seed(0)
    G = identity_g()
    z = torch.tensor(z_rows)
    real = torch.randn(len(z_rows), 2)
    D = Scaled(a, b)
    # The truth: the unfused step in float64, where nothing underflows.
    want = one_step(objective, simultaneous(), G, D, z, real, torch.float64)
    got = one_step(objective, simultaneous(fused=True), G, D, z, real, torch.float32)
    scores = D.double()(G.double()(z.double()))
    return want, got, scores


def test_ns_saturated_fake_scores_keep_g_gradient():
    # Scores -180, -120, -42 (kept in the fused pass: sigmoid is 6e-19), -30, 0, 24:
    # sigmoid underflows in float32 below about -103, where G's gradient is -1/n.
    rows = [[-3.0, 0, 0], [-2.0, 0, 0], [-0.7, 0, 0], [-0.5, 0, 1], [0.0, 0, 0], [0.4, 1, 1]]
    want, got, scores = hard_case("ns", 60.0, 0.0, rows)
    assert scores.min() < -110 and scores.max() > 0  # the case is really there
    for w, g in zip(want, got, strict=True):
        assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_fp16_backward_underflow_is_caught_by_the_dtype_d_runs_in():
    # ns score -25: sigmoid is 1.4e-11, times the loss scale 256 / n = 64 leaves 9e-10,
    # below float16's smallest subnormal: that row is recomputed.
    torch.manual_seed(0)
    G, D = identity_g(), Scaled(10.0, 0.0)
    z = torch.tensor([[-2.5, 0, 0], [-0.3, 1, 0], [0.2, 0, 1], [0.5, 1, 1]])
    real = torch.randn(4, 2)
    want = one_step("ns", simultaneous(), G, D, z, real, torch.float32, "fp16")
    got = one_step("ns", simultaneous(fused=True), G, D, z, real, torch.float32, "fp16")
    assert not torch.equal(want[0], G.weight.double())  # the step was taken
    for w, g in zip(want, got, strict=True):
        assert_close(g, w, rtol=2e-3, atol=2e-3)


def test_hinge_fakes_below_minus_one_keep_g_gradient():
    rows = [[-3.0, 0, 0], [-2.0, 1, 0], [0.5, 0, 1], [1.0, 0, 0]]
    want, got, scores = hard_case("hinge", 2.0, 0.0, rows)
    assert (scores <= -1).any() and (scores > -1).any()
    for w, g in zip(want, got, strict=True):
        assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_lsgan_fake_score_exactly_zero_keeps_g_gradient():
    G = identity_g()
    D = Scaled(1.0, 0.0)
    with torch.no_grad():
        D.weight.copy_(torch.tensor([1.0, 0.0]))
    z = torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 2.0], [-2.0, 1.0, 0.0]])  # first score is 0
    real = torch.randn(3, 2)
    assert D(G(z))[0] == 0
    want = one_step("lsgan", simultaneous(), G, D, z, real, torch.float64)
    got = one_step("lsgan", simultaneous(fused=True), G, D, z, real, torch.float64)
    assert_close(got, want)
    assert got[0][0, 0] != G.weight[0, 0]  # the zero-score sample moved G


# --- refusals ----------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["began", "softmax"])
def test_fused_refuses_objectives_where_it_is_not_exact(objective):
    side = Run(objective, batchnorm=False)
    with pytest.raises(ValueError, match=f"fused=True.*{objective}"):
        Step(*side.models(), objective=objective, schedule=simultaneous(fused=True),
             latent=side.latent)  # fmt: skip


def test_fused_refuses_a_user_objective_without_slopes():
    class Custom(objectives.NS):
        name = "custom"
        not_fusable = "no slopes given"

    side = Run("ns", batchnorm=False)
    with pytest.raises(ValueError, match="custom.*no slopes given"):
        Step(*side.models(), objective=Custom(), schedule=simultaneous(fused=True),
             latent=side.latent)  # fmt: skip


def test_fused_refuses_batchnorm_in_training_mode_even_when_switched_on_later():
    side = Run("ns", batchnorm=True)
    with pytest.raises(ValueError, match="BatchNorm"):
        Step(*side.models(), objective="ns", schedule=simultaneous(fused=True),
             latent=side.latent)  # fmt: skip
    side.D.eval()  # BatchNorm with running statistics does not mix samples: allowed
    step = Step(*side.models(), objective="ns", schedule=simultaneous(fused=True),
                latent=side.latent)  # fmt: skip
    step(real_batches(1)[0])
    side.D.train()
    with pytest.raises(ValueError, match="BatchNorm"):
        step(real_batches(1)[0])


@given(st.one_of(st.integers(), st.text(max_size=3), st.none()))
def test_fused_flag_must_be_a_bool(value):
    with pytest.raises(ValueError, match="fused must be True or False"):
        simultaneous(fused=value)


# --- host syncs ----------------------------------------------------------------------

HOST_READS = {"nonzero", "_local_scalar_dense", "is_nonzero", "item"}


class _OpNames(torch.utils._python_dispatch.TorchDispatchMode):
    """The names of the ATen ops run inside it (what a GPU would launch or sync on)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def host_reads(objective):
    side = Run(objective, batchnorm=False)
    # SGD: torch's CPU Adam reads its step count on the host (capturable Adam does not)
    opt_g, opt_d = (torch.optim.SGD(m.parameters(), 0.01) for m in (side.G, side.D))
    step = Step(side.G, side.D, opt_g, opt_d, objective=objective,
                schedule=simultaneous(fused=True), latent=side.latent)  # fmt: skip
    first, second = real_batches(2)
    step(first)
    with _OpNames() as ops:
        step(second)
    return HOST_READS & set(ops.names)


def test_fused_wgan_gp_reads_nothing_on_the_host():
    """WGAN's slope is one constant: the fused step decides on the host, no sync (a
    CUDA graph can hold it). ns may have hard samples: it reads one flag."""
    assert host_reads("wgan_gp") == set()
    assert host_reads("ns") == {"_local_scalar_dense"}  # hard.any()


@pytest.mark.parametrize("d_scale", [0.0, 1e-30, 0.5])
def test_fused_wgan_gp_with_a_vanishing_d_weight_equals_unfused(d_scale):
    """d_scale 0 (or below float32's sqrt(tiny) per score) sends every sample through
    D's extra pass, decided on the host; the result is the unfused step's."""

    def go(fused):
        side = Run("wgan_gp", batchnorm=False)
        step = Step(*side.models(), objective="wgan_gp", latent=side.latent, d_scale=d_scale,
                    schedule=simultaneous(fused=fused))  # fmt: skip
        torch.manual_seed(7)
        return side, [step(real) for real in real_batches(3)]

    assert_same_runs(go(True), go(False))
