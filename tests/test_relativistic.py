"""The relativistic family (rsgan, rasgan, ralsgan, rahinge) against the loops that made
it known: AlexiaJM's (G's step on a fresh real batch), BasicSR's ESRGAN (D's cross means
read as constants, a weighted GAN loss beside L1) and PyTorch-GAN's esrgan.py (one G
term, means per location of a PatchGAN map, content and pixel terms, a warm-up). The
objectives under every schedule are in test_equivalence (the reference's generic loops)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from helpers import Run, flops, real_batches
from helpers.wild import (
    assert_losses,
    assert_same,
    assert_same_sides,
    build,
    run_step,
)
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.objectives import RSGAN, RaSGAN, get_objective

RELATIVISTIC = ["rsgan", "rasgan", "ralsgan", "rahinge"]


@pytest.mark.parametrize("objective", RELATIVISTIC)
@pytest.mark.parametrize("d_iters", [1, 2])
def test_alexiajm_loop_equals_d_first_with_a_fresh_real_batch_for_g(objective, d_iters):
    theirs, ours = Run(objective, batchnorm=False), Run(objective, batchnorm=False)
    batches = real_batches(3 * (d_iters + 1))
    expected = reference.alexiajm_relativistic(*theirs.models(), batches, theirs.latent,
                                               objective, d_iters=d_iters)  # fmt: skip
    step = Step(*ours.models(), objective=objective, latent=ours.latent,
                schedule=d_first(d_steps=d_iters, reuse_fake=False, fresh_real=True))  # fmt: skip
    assert step.real_batches == d_iters + 1
    per = d_iters + 1
    got = run_step(step, [batches[i : i + per] for i in range(0, len(batches), per)])
    assert_losses(got, expected)
    assert_same(ours.G, theirs.G)
    assert_same(ours.D, theirs.D)


def test_fresh_real_matters_for_relativistic_g():
    """The comparison can fail: G reading the D step's batch gives other numbers."""
    theirs, ours = Run("rasgan", batchnorm=False), Run("rasgan", batchnorm=False)
    batches = real_batches(4)
    reference.alexiajm_relativistic(*theirs.models(), batches, theirs.latent, "rasgan")
    step = Step(*ours.models(), objective="rasgan", latent=ours.latent,
                schedule=d_first(reuse_fake=False))  # fmt: skip
    run_step(step, [batches[0], batches[2]])
    assert not torch.allclose(ours.G.net[0].weight, theirs.G.net[0].weight)


def test_fresh_real_refuses_reusing_the_d_step_fake():
    with pytest.raises(ValueError, match="use reuse_fake=False with it"):
        d_first(fresh_real=True)


class SRG(nn.Module):
    """G(lq) -> an 'upscaled' sample (a linear map; ESRGAN's RRDBNet in spirit)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 4))

    def forward(self, lq):
        return self.net(lq)


def sr_pairs(count: int):
    gen = torch.Generator().manual_seed(5)
    out = []
    for _ in range(count):
        gt = torch.randn(6, 4, generator=gen, dtype=torch.float64)
        out.append((gt, gt * 0.5 + 0.1 * torch.randn(6, 4, generator=gen, dtype=torch.float64)))
    return out


def esrgan_step(side, **kwargs) -> Step:
    return Step(*side, objective=RaSGAN(detach_mean=True), schedule=simultaneous(),
                latent=None, condition="real", d_conditional=False, g_scale=0.005,
                g_terms={"l1": (0.01, lambda v: F.l1_loss(v.fake.x, v.real.x))},
                d_order="fake_first", **kwargs)  # fmt: skip


def sr_d():
    return nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))


def test_esrgan_equals_simultaneous_rasgan_with_detached_means():
    theirs, ours = build(SRG, sr_d)
    pairs = sr_pairs(4)
    expected = reference.basicsr_esrgan(*theirs, pairs)
    got = run_step(esrgan_step(ours), pairs)
    assert_losses(got, expected, ("loss_d", "loss_g", "l1"))
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_esrgan_detached_means_change_d_gradient():
    """Without detach_mean D's gradient runs through the means too: other numbers."""
    theirs, ours = build(SRG, sr_d)
    pairs = sr_pairs(2)
    reference.basicsr_esrgan(*theirs, pairs)
    step = esrgan_step(ours)
    step.objective.detach_mean = False
    run_step(step, pairs)
    assert not torch.allclose(ours[1][0].weight, theirs[1][0].weight)


def test_esrgan_in_ganstep_forwards_d_twice_where_basicsr_forwards_it_five_times():
    theirs, ours = build(SRG, sr_d)
    pairs = sr_pairs(1)
    ref = flops(lambda: reference.basicsr_esrgan(*theirs, pairs))
    step = esrgan_step(ours)
    step.observe_d(pairs[0])
    got = flops(lambda: step(pairs[0]))
    assert got < ref


def test_relativistic_losses_by_hand():
    r = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    f = torch.tensor([-1.0, 0.0, 0.25], dtype=torch.float64)
    sp = F.softplus
    ra_d = (sp(-(r - f.mean())).mean() + sp(f - r.mean()).mean()) / 2
    assert get_objective("rasgan").d_loss(r, f)[0].item() == pytest.approx(ra_d.item())
    ra_g = (sp(-(f - r.mean())).mean() + sp(r - f.mean()).mean()) / 2
    assert get_objective("rasgan").g_loss(f, r)[0].item() == pytest.approx(ra_g.item())
    assert RSGAN().d_loss(r, f)[0].item() == pytest.approx(sp(-(r - f)).mean().item())
    ls = ((r - f.mean() - 1) ** 2).mean() + ((f - r.mean() + 1) ** 2).mean()
    assert get_objective("ralsgan").d_loss(r, f)[0].item() == pytest.approx(ls.item() / 2)
    hinge = F.relu(1 - (r - f.mean())).mean() + F.relu(1 + (f - r.mean())).mean()
    assert get_objective("rahinge").d_loss(r, f)[0].item() == pytest.approx(hinge.item() / 2)


def test_relativistic_refusals():
    with pytest.raises(ValueError, match="pairs samples"):
        RSGAN(detach_mean=True)
    with pytest.raises(ValueError, match="shapes must match"):
        RSGAN().d_loss(torch.zeros(3), torch.zeros(4))
    run = Run("rasgan", batchnorm=False)
    with pytest.raises(ValueError, match="cannot use objective 'rasgan'"):
        Step(*run.models(), objective="rasgan", latent=run.latent,
             schedule=simultaneous(fused=True))  # fmt: skip


# -- ESRGAN as PyTorch-GAN's esrgan.py writes it --------------------------------------------


class UpG(nn.Module):
    """G(imgs_lr): a 1x4x4 image to 1x8x8 (ESRGAN's GeneratorRRDB in small)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(1, 4, 3, 1, 1),
                                 nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3, 1, 1))  # fmt: skip

    def forward(self, lr):
        return self.net(lr)


def patch_d():
    """esrgan.py's Discriminator in small: conv blocks with BatchNorm, a 1x4x4 map of
    logits per image. (esrgan.py's convs before BatchNorm and its last one have biases;
    their gradients are rounding noise, BatchNorm and the relativistic loss cancelling
    them: left out, see helpers.wild.TOLERANCE.)"""
    return nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 4, 3, 2, 1, bias=False), nn.BatchNorm2d(4), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 1, 3, 1, 1, bias=False))  # fmt: skip


def features() -> nn.Module:
    """A fixed network in place of esrgan.py's VGG19 feature extractor (eval mode)."""
    torch.manual_seed(9)
    net = nn.Sequential(nn.Conv2d(1, 3, 3, 1, 1), nn.ReLU()).double().eval()
    return net.requires_grad_(False)


def hr_lr_pairs(count: int):
    gen = torch.Generator().manual_seed(6)
    out = []
    for _ in range(count):
        hr = torch.rand(6, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1
        out.append((hr, F.avg_pool2d(hr, 2)))  # (imgs_hr, imgs_lr)
    return out


def pytorch_gan_esrgan_step(side, fe, lambda_adv=5e-3, lambda_pixel=1e-2, **kwargs) -> Step:
    """What equals esrgan.py: its relativistic loss (one G term, means per location), its
    content and pixel terms, D forwarded as the loop does (its BatchNorm statistics)."""
    content = lambda v: F.l1_loss(fe(v.fake.x), fe(v.real.x).detach())  # noqa: E731
    pixel = lambda v: F.l1_loss(v.fake.x, v.real.x)  # noqa: E731
    return Step(*side, objective=RaSGAN(g_real_term=False, per_location=True),
                schedule=simultaneous(), latent=None, condition="real", d_conditional=False,
                g_scale=lambda_adv, g_terms={"content": content, "l1": (lambda_pixel, pixel)},
                d_forwards="loop", **kwargs)  # fmt: skip


@pytest.mark.parametrize("warmup", [0, 2])
def test_pytorch_gan_esrgan_as_written_equals_simultaneous_after_its_warm_up(warmup):
    """esrgan.py (one G term, the other batch's mean per location of D's map, content and
    pixel terms, pixel-only warm-up batches without D) against a plain L1 loop for the
    warm-up and the Step after it: parameters, D's BatchNorm statistics and both Adams'
    states equal."""
    theirs, ours = build(UpG, patch_d)
    pairs = hr_lr_pairs(5)
    fe = features()
    expected = reference.pytorch_gan_esrgan(*theirs, pairs, fe, warmup_batches=warmup)
    G, D, opt_g, opt_d = ours
    for hr, lr in pairs[:warmup]:  # the warm-up: G on the pixel loss alone, no D
        opt_g.zero_grad()
        F.l1_loss(G(lr), hr).backward()
        opt_g.step()
    got = run_step(pytorch_gan_esrgan_step(ours, fe), pairs[warmup:])
    assert_losses(got, expected[warmup:], ("loss_d", "loss_g", "content"))
    for mine, source in zip(got, expected[warmup:], strict=True):  # ganstep logs it weighted
        assert mine["l1"] == pytest.approx(1e-2 * source["l1"], rel=1e-10)
    assert_same_sides(ours, theirs)


def test_esrgan_forms_differ_where_the_issue_measured_them():
    """The two-term L_G and the mean over the whole map are other losses: each moves G
    off esrgan.py's parameters."""
    pairs = hr_lr_pairs(3)
    fe = features()
    theirs = build(UpG, patch_d)[0]
    reference.pytorch_gan_esrgan(*theirs, pairs, fe, warmup_batches=0)
    for objective in (RaSGAN(per_location=True), RaSGAN(g_real_term=False)):
        ours = build(UpG, patch_d)[1]
        step = pytorch_gan_esrgan_step(ours, fe)
        step.game.options = replace(step.game.options, objective=objective)
        run_step(step, pairs)
        assert not torch.allclose(ours[0].net[1].weight, theirs[0].net[1].weight, atol=1e-9)


def test_per_location_means_by_hand():
    r = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)  # 2 samples, 2 places
    f = torch.tensor([[0.0, 1.0], [-2.0, 0.5]], dtype=torch.float64)
    sp = F.softplus
    loss_d = (sp(-(r - f.mean(0))).mean() + sp(f - r.mean(0)).mean()) / 2
    per = RaSGAN(per_location=True)
    assert per.d_loss(r, f)[0].item() == pytest.approx(loss_d.item(), rel=1e-15)
    single = RaSGAN(g_real_term=False, per_location=True)
    assert single.g_loss(f, r)[0].item() == pytest.approx(sp(-(f - r.mean(0))).mean().item())
    with pytest.raises(ValueError, match="no mean, so g_real_term, per_location"):
        RSGAN(g_real_term=False, per_location=True)
    assert "g_real_term=False" in repr(single)


@pytest.mark.parametrize("objective", RELATIVISTIC)
def test_each_loss_is_bit_equal_to_alexiajms_in_float32(objective):
    """L_D and L_G equal AlexiaJM's losses to the bit in float32 (BCEWithLogitsLoss for
    the BCE pair): a softplus rounds differently, and Adam makes such rounding a step of
    its own where a gradient is 0 or nearly, so `ganstep audit --port` saw those loops
    part from every Step."""
    gen = torch.Generator().manual_seed(0)
    r, f = torch.randn(64, generator=gen), torch.randn(64, generator=gen)
    ours = get_objective(objective)
    assert torch.equal(ours.d_loss(r, f)[0], reference.relativistic_loss(objective, r, f))
    assert torch.equal(ours.g_loss(f, r)[0], reference.relativistic_loss(objective, f, r))
