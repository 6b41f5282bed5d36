"""Loss terms and d_scale: named, weighted terms of L_G and L_D read from the phase's
View (pix2pix's L1, ACGAN's auxiliary cross-entropy), equal to those loops in float64,
and never a D forward of their own."""

from __future__ import annotations

import pytest
import torch.nn.functional as F
from helpers import X_DIM, Z_DIM, Run, flops, latent_stream, real_batches
from helpers.wild import (
    ACGAND,
    ITERATIONS,
    CondG,
    PairD,
    Pix2PixG,
    assert_losses,
    assert_same,
    build,
    image_pairs,
    labelled_batches,
    patch_net,
    pix2pix_step,
    run_step,
    streams,
)
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.models import MLP
from ganstep.views import feature_matching


@pytest.mark.parametrize("batchnorm", [True, False], ids=["batchnormD", "plainD"])
def test_pix2pix_equals_d_first_with_an_image_condition_patch_d_and_l1(batchnorm):
    theirs, ours = build(Pix2PixG, lambda: PairD(patch_net(batchnorm)))
    pairs = image_pairs(ITERATIONS)
    expected = reference.pix2pix(theirs[0], theirs[1].net, theirs[2], theirs[3], pairs)
    got = run_step(pix2pix_step(ours), pairs)
    assert_losses(got, expected, ("loss_d", "loss_g", "l1"))
    assert_same(ours[0], theirs[0])  # G's BatchNorm ran once per iteration on both sides
    assert_same(ours[1], theirs[1])  # fake first on both sides: running statistics too


@pytest.mark.parametrize("fused", [False, True])
def test_pytorch_gan_acgan_equals_simultaneous_with_auxiliary_terms(fused):
    theirs, ours = build(lambda: CondG(False), lambda: ACGAND(False))
    batches = labelled_batches(ITERATIONS)
    latent, labels = streams()
    expected = reference.pytorch_gan_acgan(*theirs, batches, latent, labels)
    latent, labels = streams()

    def aux(which):
        return lambda v: F.cross_entropy(getattr(v, f"d_{which}")[1], getattr(v, which).c)

    kwargs = dict(objective="ns", schedule=simultaneous(), latent=latent, condition=labels,
                  d_conditional=False, d_scale=0.25, g_scale=0.5,
                  d_terms={"aux_real": (0.25, aux("real")), "aux_fake": (0.25, aux("fake"))},
                  g_terms={"aux": (0.5, aux("fake"))})  # fmt: skip
    if fused:
        with pytest.raises(ValueError, match="extra loss terms would break"):
            Step(*ours, **{**kwargs, "schedule": simultaneous(fused=True)})
        return
    got = run_step(Step(*ours, **kwargs), batches)
    assert_losses(got, expected)
    assert {"aux", "aux_real", "aux_fake"} <= set(got[0])
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_pix2pix_is_already_minimal_and_terms_add_no_d_forward():
    """pix2pix freezes D for G's step itself: d_first costs exactly what it does."""
    theirs, ours = build(Pix2PixG, lambda: PairD(patch_net()))
    pairs = image_pairs(1)
    ref = flops(lambda: reference.pix2pix(theirs[0], theirs[1].net, theirs[2], theirs[3], pairs))
    step = pix2pix_step(ours)
    step.observe_d(pairs[0])  # once, outside the measured step
    ours_flops = flops(lambda: step(pairs[0]))
    assert ours_flops == ref


@pytest.mark.parametrize("objective", ["ns", "hinge", "lsgan"])
def test_g_scale_scales_g_adversarial_loss_alone_fused_or_not(objective):
    """g_scale = 2 is the loop whose L_G is twice ganstep's (plain MSE for LSGAN): the same
    as a loop written with 2 * L_G; the fused step carries the factor into G's gradient."""
    runs = [Run(objective, batchnorm=False) for _ in range(3)]
    batches = real_batches(ITERATIONS)
    scaled = [
        Step(*r.models(), objective=objective, latent=r.latent, g_scale=2.0,
             schedule=simultaneous(fused=fused))
        for r, fused in zip(runs[:2], (False, True), strict=True)
    ]  # fmt: skip
    doubled = _TwiceG(objective)
    ref = Step(*runs[2].models(), objective=doubled, latent=runs[2].latent, schedule=simultaneous())
    logs = [run_step(s, batches) for s in (*scaled, ref)]
    assert_losses(logs[0], logs[2])
    assert_losses(logs[1], logs[2])
    for r in runs[:2]:
        assert_same(r.G, runs[2].G)
        assert_same(r.D, runs[2].D)


class _TwiceG:
    """An objective whose L_G is twice the named one's, written by hand."""

    def __new__(cls, name):
        from ganstep.objectives import OBJECTIVES

        base = OBJECTIVES[name]

        class Twice(base):
            def g_loss(self, fake, real=None):
                loss, logs = super().g_loss(fake, real)
                return 2 * loss, logs

        return Twice()


@given(value=st.one_of(st.floats(max_value=0.0), st.just(float("inf")), st.just(float("nan"))))
def test_scales_must_be_positive_numbers(value):
    run = Run("ns", batchnorm=False)
    for name in ("d_scale", "g_scale"):
        if name == "g_scale" and value == 0:
            continue  # G may train on its terms alone
        with pytest.raises(ValueError, match=f"{name} must be a (positive number|number >= 0)"):
            Step(*run.models(), objective="ns", schedule="d_first", latent=run.latent,
                 **{name: value})  # fmt: skip
        with pytest.raises(TypeError, match=f"{name} must be a number"):
            Step(*run.models(), objective="ns", schedule="d_first", latent=run.latent,
                 **{name: True})  # fmt: skip


def test_began_refuses_a_g_scale():
    run = Run("began", batchnorm=False)
    with pytest.raises(ValueError, match="g_scale would change it"):
        Step(*run.models(), objective="began", schedule="d_first", latent=run.latent, g_scale=2)


def test_an_unconditional_d_is_called_without_the_condition_it_never_sees():
    """d_conditional=False: G(z, y), D(x); calling D with y would fail on this D."""
    _, ours = build(lambda: CondG(False), lambda: ACGAND(False))
    latent, labels = streams()
    aux = lambda v: F.cross_entropy(v.d_fake[1], v.fake.c)  # noqa: E731
    step = Step(*ours, objective="ns", schedule=d_first(), latent=latent, condition=labels,
                d_conditional=False, g_terms={"aux": aux})  # fmt: skip
    logs = step(labelled_batches(1)[0])
    assert set(logs) >= {"loss_d", "loss_g", "aux"}
    with pytest.raises(TypeError, match="d_conditional must be True or False"):
        Step(*ours, objective="ns", schedule=d_first(), latent=latent, condition=labels,
             d_conditional=0)  # fmt: skip


class FeatureD(nn.Module):
    """D(x) -> (logit, features): improved-GAN's D with its intermediate layer out."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X_DIM, 8), nn.LeakyReLU(0.2))
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        h = self.body(x)
        return self.out(h).squeeze(1), h


def test_feature_matching_equals_improved_gan_loop_without_a_schedule_change():
    theirs, ours = build(lambda: MLP(Z_DIM, X_DIM, (8,)), FeatureD)
    batches = real_batches(ITERATIONS)
    expected = reference.feature_matching(*theirs, batches, latent_stream(Z_DIM))
    step = Step(*ours, objective="ns", schedule=d_first(reuse_fake=False), g_scale=0,
                latent=latent_stream(Z_DIM), g_terms={"fm": feature_matching()})  # fmt: skip
    got = run_step(step, batches)
    assert_losses(got, expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_a_g_term_reading_real_without_the_mark_says_how_to_ask_for_it():
    _, ours = build(lambda: MLP(Z_DIM, X_DIM, (8,)), FeatureD)
    unmarked = lambda v: (v.d_fake[1].mean(0) - v.d_real[1].mean(0)).square().mean()  # noqa: E731
    step = Step(*ours, objective="ns", schedule=d_first(), latent=latent_stream(Z_DIM),
                g_terms={"fm": unmarked})  # fmt: skip
    with pytest.raises(ValueError, match="reads_real"):
        step(real_batches(1)[0])
