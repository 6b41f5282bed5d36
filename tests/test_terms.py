"""Loss terms and d_scale: named, weighted terms of L_G and L_D read from the phase's
View (pix2pix's L1, ACGAN's auxiliary cross-entropy), equal to those loops in float64,
and never a D forward of their own."""

from __future__ import annotations

import pytest
import torch.nn.functional as F
from helpers import flops
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

from ganstep import Step, reference, simultaneous


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
                  d_scale=0.25, d_terms={"aux_real": (0.25, aux("real")),
                                         "aux_fake": (0.25, aux("fake"))},
                  g_terms={"aux": aux("fake")})  # fmt: skip
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
