"""The relativistic family (rsgan, rasgan, ralsgan, rahinge) against the loops that made
it known: AlexiaJM's (G's step on a fresh real batch) and ESRGAN's (BasicSR: D's cross
means read as constants, a weighted GAN loss beside L1). The objectives under every
schedule are in test_equivalence (the reference's generic loops)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import Run, flops, real_batches
from helpers.wild import assert_losses, assert_same, build, run_step
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.objectives import RSGAN, RaSGAN, get_objective

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
    expected = reference.esrgan(*theirs, pairs)
    got = run_step(esrgan_step(ours), pairs)
    assert_losses(got, expected, ("loss_d", "loss_g", "l1"))
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_esrgan_detached_means_change_d_gradient():
    """Without detach_mean D's gradient runs through the means too: other numbers."""
    theirs, ours = build(SRG, sr_d)
    pairs = sr_pairs(2)
    reference.esrgan(*theirs, pairs)
    step = esrgan_step(ours)
    step.objective.detach_mean = False
    run_step(step, pairs)
    assert not torch.allclose(ours[1][0].weight, theirs[1][0].weight)


def test_esrgan_in_ganstep_forwards_d_twice_where_basicsr_forwards_it_five_times():
    theirs, ours = build(SRG, sr_d)
    pairs = sr_pairs(1)
    ref = flops(lambda: reference.esrgan(*theirs, pairs))
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
