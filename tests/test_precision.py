"""Mixed precision on Step: bf16 and fp16 autocast, a loss scaler per optimizer."""

from __future__ import annotations

import contextlib

import pytest
import torch
from helpers import Run, real_batches
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

from ganstep import Step, d_first, simultaneous
from ganstep.engine.precision import Precision


def make(objective="ns", schedule="d_first", precision="fp32", dtype=torch.float32, **kw):
    side = Run(objective, batchnorm=False, dtype=dtype, device=kw.pop("device", "cpu"))
    step = Step(*side.models(), objective=objective, schedule=schedule, latent=side.latent,
                precision=precision, **kw)  # fmt: skip
    return side, step


def batches(n, dtype=torch.float32):
    return [b.to(dtype) for b in real_batches(n)]


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("schedule", [d_first(), simultaneous(), simultaneous(fused=True)])
def test_low_precision_runs_the_forwards_in_it_and_the_losses_in_float32(precision, schedule):
    side, step = make(schedule=schedule, precision=precision)
    seen = []
    side.G.register_forward_hook(lambda m, a, out: seen.append(out.dtype))
    side32, step32 = make(schedule=schedule)
    before = [p.clone() for p in side.G.parameters()]
    for real in batches(3):
        logs, logs32 = step(real), step32(real)
        assert all(v.dtype == torch.float32 and torch.isfinite(v) for v in logs.values())
        # Low precision changes the numbers a little, not the training.
        assert_close(logs["loss_d"], logs32["loss_d"], rtol=0.05, atol=0.02)
    assert set(seen) == {Precision(precision).dtype}
    assert any(not torch.equal(a, b) for a, b in zip(before, side.G.parameters(), strict=True))


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
@pytest.mark.parametrize("block", ["cpu", "cuda"])
def test_low_precision_inside_a_callers_autocast_block_that_is_off(schedule, block):
    """torch keeps autocast's weight casts until the outermost block ends, and a block
    with enabled=False (``autocast(enabled=args.amp)`` with amp off), or one for another
    device, counts: a bf16 Step inside one read G's or D's casts from before their
    optimizer step, in every order. Each of the Step's own blocks now ends its casts:
    the same bits as outside."""
    trained = []
    for inside in (False, True):
        side, step = make(schedule=schedule, precision="bf16")
        with torch.autocast(block, enabled=False) if inside else contextlib.nullcontext():
            for real in batches(4):
                step(real)
        trained.append([p.detach().clone() for p in (*side.G.parameters(), *side.D.parameters())])
    assert_close(trained[1], trained[0], rtol=0, atol=0)


@pytest.mark.parametrize(
    "schedule",
    [d_first(d_steps=3, g_steps=2), simultaneous(), simultaneous(fused=True)],
    ids=["d3g2", "simultaneous", "fused"],
)
def test_fp16_loss_scaling_is_exact_with_two_scales_and_many_steps(schedule):
    """In float64 autocast leaves the math alone, so only the scalers act: with different
    power-of-two scales for D and G and several steps of one optimizer per iteration,
    the run equals the unscaled one."""
    side, step = make("ns", schedule, "fp16", torch.float64)
    step.precision.scalers["d"] = torch.amp.GradScaler("cpu", init_scale=2.0**12)
    step.precision.scalers["g"] = torch.amp.GradScaler("cpu", init_scale=2.0**3)
    plain, plain_step = make("ns", schedule, "fp32", torch.float64)
    k = step.real_batches
    data = batches(4 * k, torch.float64)
    for i in range(4):
        real = data[i * k : (i + 1) * k] if k > 1 else data[i]
        step(real)
        plain_step(real)
    for p, q in zip([*side.G.parameters(), *side.D.parameters()],
                    [*plain.G.parameters(), *plain.D.parameters()], strict=True):  # fmt: skip
        assert_close(p, q)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_float64_models_train_to_the_same_bits_at_any_precision(precision, schedule):
    """autocast leaves float64 tensors alone (a script's float64 repeat runs so), and so
    does the Step: D's scores are taken to float32 only from bfloat16 or float16. They
    were taken from float64 to float32 too, about 2e-10 off a float64 loop."""
    trained = []
    for name in ("fp32", precision):
        side, step = make("ns", schedule, name, torch.float64)
        for real in batches(3, torch.float64):
            logs = step(real)
        assert logs["loss_d"].dtype == torch.float64
        trained.append([p.detach().clone() for p in (*side.G.parameters(), *side.D.parameters())])
    assert_close(trained[1], trained[0], rtol=0, atol=0)


def test_fp16_overflow_skips_only_that_optimizer_and_backs_off():
    side, step = make("ns", "d_first", "fp16")
    # D's float16 backward overflows at this scale; G's does not at the default one.
    step.precision.scalers["d"] = torch.amp.GradScaler("cpu", init_scale=2.0**100)
    d_before = [p.clone() for p in side.D.parameters()]
    g_before = [p.clone() for p in side.G.parameters()]
    step(batches(1)[0])
    assert all(torch.equal(a, b) for a, b in zip(d_before, side.D.parameters(), strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(g_before, side.G.parameters(), strict=True))
    assert step.precision.scalers["d"].get_scale() == 2.0**99


def test_scaler_state_is_saved_and_restored():
    side, step = make("ns", "d_first", "fp16")
    step(batches(1)[0])
    state = step.state_dict()
    assert set(state["precision"]) == {"d", "g"}
    _, other = make("ns", "d_first", "fp16")
    other.load_state_dict(state)
    assert other.precision.state_dict() == state["precision"]
    _, fp32 = make("ns", "d_first", "fp32")
    fp32.load_state_dict({"iteration": 3, "objective": {}})  # older states had no scalers
    with pytest.raises(ValueError, match="scaler states"):
        fp32.load_state_dict(state)


@given(st.text(max_size=6).filter(lambda s: s not in ("fp32", "bf16", "fp16")))
def test_unknown_precision_is_refused(name):
    with pytest.raises(ValueError, match="precision"):
        Precision(name)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_cuda_low_precision_step(precision):
    side, step = make("ns", simultaneous(fused=True), precision, device="cuda")
    for real in batches(2):
        logs = step(real.cuda())
    assert all(torch.isfinite(v) for v in logs.values())
