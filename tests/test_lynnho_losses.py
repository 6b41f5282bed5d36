"""LynnHo/DCGAN-LSGAN-WGAN-GP-DRAGAN-Pytorch's adversarial losses (its
``torchprob/gan/loss.py``, run by its ``train.py`` without a penalty): each equals a Step
in float64, its G loss included (``hinge_v1``'s hinge on G: ``Hinge(g_hinge=True)``)."""

from __future__ import annotations

import pytest
import torch
from helpers import Run, real_batches
from helpers.wild import assert_same_sides
from hypothesis import given
from hypothesis import strategies as st

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.objectives import LSGAN, NS, Hinge, Wasserstein

# each mode's Step: its objective and scales (MSELoss is twice ganstep's halved squares)
MODES = {
    "gan": (lambda: NS(bce_with_logits=True), {}),
    "hinge_v1": (lambda: Hinge(g_hinge=True), {}),
    "hinge_v2": (lambda: Hinge(), {}),
    "lsgan": (lambda: LSGAN(), {"d_scale": 2.0, "g_scale": 2.0}),
    "wgan": (lambda: Wasserstein(), {}),
}


def lynnho_run(mode: str, objective, n_d: int = 1, d_gain: float = 3.0, **scales):
    """LynnHo's loop in ``mode`` and ``objective``'s Step, float64, over 3 of its G
    steps; D's weights times ``d_gain`` in both first (scores past the hinges' margins)."""
    theirs, ours = (Run("hinge", batchnorm=False) for _ in range(2))
    with torch.no_grad():
        for p in (*theirs.D.parameters(), *ours.D.parameters()):
            p.mul_(d_gain)
    batches = real_batches(3 * n_d, dtype=torch.float64)
    torch.manual_seed(3)
    expected = reference.lynnho_gan(*theirs.models(), batches, theirs.latent, mode, n_d=n_d)
    step = Step(*ours.models(), objective=objective, schedule=d_first(d_steps=n_d,
                reuse_fake=False), latent=ours.latent, **scales)  # fmt: skip
    torch.manual_seed(3)
    got = [step(batches[i * n_d : (i + 1) * n_d] if n_d > 1 else batches[i]) for i in range(3)]
    return ours, theirs, got, expected


@pytest.mark.parametrize("n_d", [1, 2])
@pytest.mark.parametrize("mode", list(MODES))
def test_each_adversarial_loss_of_lynnhos_equals_its_step(mode, n_d):
    make, scales = MODES[mode]
    ours, theirs, got, expected = lynnho_run(mode, make(), n_d, **scales)
    assert_same_sides(ours.models(), theirs.models())
    assert len(got) == len(expected) == 3
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"].item() == pytest.approx(source["loss_d"], rel=1e-12)
        assert mine["loss_g"].item() == pytest.approx(source["loss_g"], rel=1e-12)


def test_gs_hinge_is_what_tells_hinge_v1_from_v2():
    """The comparison can fail: hinge_v1's loop parts from Hinge() where D scores fakes
    above 1 (G's hinge is flat there), which D's gain makes it do."""
    ours, theirs, got, expected = lynnho_run("hinge_v1", Hinge())
    pairs = zip(ours.G.parameters(), theirs.G.parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-6


def test_g_hinge_loss_and_its_slope():
    fake = torch.tensor([-2.0, 0.0, 0.5, 1.0, 3.0], dtype=torch.float64, requires_grad=True)
    loss, _ = Hinge(g_hinge=True).g_loss(fake)
    assert loss.item() == pytest.approx((3 + 1 + 0.5) / 5, rel=1e-15)
    (grad,) = torch.autograd.grad(loss, fake)
    d_slope, ratio = Hinge(g_hinge=True).fake_slopes(fake.detach())
    assert torch.equal(grad * 5, -(fake < 1).double())  # autograd's slope, 0 from 1 on
    assert torch.equal(ratio, -(fake < 1).double()) and torch.equal(d_slope, (fake > -1).double())
    assert repr(Hinge(g_hinge=True)) == "Hinge(r1=0.0, r1_every=1, g_hinge=True)"
    assert repr(Hinge()) == "Hinge(r1=0.0, r1_every=1)"


def test_fused_step_takes_g_hinges_slope():
    """The fused simultaneous step scales D's gradient at each fake by G's slope ratio:
    with G's hinge it equals the unfused step (scores past 1 included), and parts from
    Hinge()'s."""
    from test_fused import assert_same_runs

    def run(objective, fused):
        side = Run("hinge", batchnorm=False)
        with torch.no_grad():
            for p in side.D.parameters():
                p.mul_(3.0)
        step = Step(*side.models(), objective=objective, schedule=simultaneous(fused=fused),
                    latent=side.latent)  # fmt: skip
        return side, [step(real) for real in real_batches(4)]

    fused = run(Hinge(g_hinge=True), True)
    assert_same_runs(fused, run(Hinge(g_hinge=True), False))
    with pytest.raises(AssertionError):
        assert_same_runs(fused, run(Hinge(), False))


@given(st.one_of(st.integers(), st.none(), st.text(max_size=3), st.floats()))
def test_g_hinge_is_true_or_false(value):
    with pytest.raises(ValueError, match="hinge g_hinge must be True or False"):
        Hinge(g_hinge=value)


def test_hinge_with_r1_keeps_g_hinge():
    made = Hinge(r1=0.5, g_hinge=True)
    assert made.r1 == 0.5 and made.g_hinge and not made.constant_ratio
    assert isinstance(made, Hinge) and Hinge().constant_ratio
