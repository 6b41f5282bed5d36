"""PyTorch-GAN's loops of issue 52 (eriklindernoren/PyTorch-GAN, implementations/...), each
as its file is written (ganstep.reference.pytorch_gan_*), against the Step the docs show
for it, in float64: parameters, buffers and both Adams' states to 1e-12."""

from __future__ import annotations

import torch.nn.functional as F
from helpers.wild import assert_losses, assert_same_sides, build, run_step
from test_relativistic import UpG, features, hr_lr_pairs
from torch import nn

from ganstep import Step, reference, simultaneous


def srgan_d() -> nn.Module:
    """srgan.py's Discriminator in small: conv blocks with BatchNorm, a 1x4x4 map of
    scores per image (its convs before BatchNorm have no bias here: their gradients are
    rounding noise under BatchNorm, see helpers.wild.TOLERANCE)."""
    return nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 4, 3, 2, 1, bias=False), nn.BatchNorm2d(4), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 1, 3, 1, 1))  # fmt: skip


def srgan_step(side, fe) -> Step:
    """The documented options that make srgan.py (docs/loops.md, SRGAN); d_forwards="loop"
    for its BatchNorm D's running statistics (the parameters equal without it)."""
    content = lambda v: F.l1_loss(fe(v.fake.x), fe(v.real.x).detach())  # noqa: E731
    return Step(*side, objective="lsgan", schedule=simultaneous(), latent=None,
                condition="real", d_conditional=False, g_scale=2e-3,
                g_terms={"content": content}, d_forwards="loop")  # fmt: skip


def test_pytorch_gan_srgan_as_written_equals_simultaneous_lsgan():
    """srgan.py: G first (content + 1e-3 MSE against ones), then D on the real batch and
    the fakes of the G before its step, (MSE(real, 1) + MSE(fake, 0)) / 2: both at
    (g_t, d_t), a BatchNorm D forwarded three times as the loop does."""
    theirs, ours = build(UpG, srgan_d)
    pairs = hr_lr_pairs(4)
    fe = features()
    expected = reference.pytorch_gan_srgan(*theirs, pairs, fe)
    got = run_step(srgan_step(ours, fe), pairs)
    assert_losses(got, expected, ("loss_d", "loss_g", "content"))
    assert_same_sides(ours, theirs)  # parameters, BatchNorm statistics, Adam states


def test_srgan_is_not_the_d_first_order():
    """The check can fail: D stepping before G's loss (d_first) is another update."""
    import pytest
    import torch

    from ganstep import d_first

    theirs, ours = build(UpG, srgan_d)
    pairs = hr_lr_pairs(3)
    fe = features()
    reference.pytorch_gan_srgan(*theirs, pairs, fe)
    step = srgan_step(ours, fe)
    step = Step(*ours, objective="lsgan", schedule=d_first(), latent=None, condition="real",
                d_conditional=False, g_scale=2e-3, g_terms=step.game.options.g_terms)  # fmt: skip
    run_step(step, pairs)
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)
    assert torch.isfinite(ours[0].net[1].weight).all()
