"""``NS(bce_with_logits=True)``: the non-saturating losses computed as
``BCEWithLogitsLoss`` computes them, as Lightning's GAN example writes them. Equal to
the softplus form in exact arithmetic; in float32 they round apart, and for a G whose
Linear bias sits before a BatchNorm (the example's G blocks) that bias's gradient is
rounding alone, which Adam makes steps of: only the same form equals the example."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import X_DIM, real_batches
from helpers.wild import assert_losses, run_step
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, g_first, reference
from ganstep.engine.objectives import NS, Minimax

Z = 4


def sides(dtype: torch.dtype) -> list:
    """Two identical (G, D, opt_g, opt_d): the example's G blocks (Linear, then
    ``BatchNorm1d(out, 0.8)``, then LeakyReLU) and D, narrow."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(Z, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 16),
                          nn.BatchNorm1d(16, 0.8), nn.LeakyReLU(0.2, inplace=True),
                          nn.Linear(16, X_DIM), nn.Tanh()).to(dtype)  # fmt: skip
        D = nn.Sequential(nn.Linear(X_DIM, 16), nn.LeakyReLU(0.2, inplace=True),
                          nn.Linear(16, 1)).to(dtype)  # fmt: skip
        made.append((G, D, torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999)),
                     torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))))  # fmt: skip
    return made


def example_and_step(objective: NS, dtype: torch.dtype) -> tuple[list, list, list, list]:
    """The example's loop and the Step on the same batches and z (drawn from torch's
    generator, seeded alike): each one's sides and losses."""
    theirs, ours = sides(dtype)
    reals = real_batches(6, dtype=dtype)
    torch.manual_seed(3)
    latent = lambda n: torch.randn(n, Z, dtype=dtype)  # noqa: E731
    expected = reference.lightning_gan_example(*theirs, reals, latent)
    step = Step(*ours, objective=objective, schedule=g_first(reuse_z=True), latent=latent,
                d_scale=0.5)  # fmt: skip
    torch.manual_seed(3)
    return ours, theirs, run_step(step, reals), expected


def states(side) -> list[torch.Tensor]:
    G, D, opt_g, opt_d = side
    out = [*G.state_dict().values(), *D.state_dict().values()]
    for opt in (opt_g, opt_d):
        out += [v for s in opt.state_dict()["state"].values() for v in s.values()]
    return out


def test_equals_lightnings_example_bit_for_bit_in_float32():
    ours, theirs, got, expected = example_and_step(NS(bce_with_logits=True), torch.float32)
    assert all(torch.equal(a, b) for a, b in zip(states(ours), states(theirs), strict=True))
    assert [(g["loss_d"], g["loss_g"]) for g in got] == [
        (e["loss_d"], e["loss_g"]) for e in expected]  # fmt: skip


def test_the_softplus_form_equals_it_in_float64_only():
    """Equal math: in float64 the softplus form equals the example to 1e-12; in float32
    it rounds apart, most in the bias before BatchNorm."""
    ours, theirs, got, expected = example_and_step(NS(), torch.float64)
    for a, b in zip(states(ours), states(theirs), strict=True):
        assert torch.allclose(a, b, rtol=0, atol=1e-12)
    assert_losses(got, expected)
    ours, theirs, _, _ = example_and_step(NS(), torch.float32)
    gaps = [float((a - b).abs().max()) for a, b in zip(states(ours), states(theirs), strict=True)]
    assert max(gaps) > 0


def test_its_losses_are_the_functional_bce_with_logits():
    torch.manual_seed(0)
    real, fake = torch.randn(8, 1), torch.randn(8, 1)
    ones, zeros = torch.ones(8, 1), torch.zeros(8, 1)
    bce = F.binary_cross_entropy_with_logits
    d_loss, _ = NS(bce_with_logits=True).d_loss(real, fake)
    assert torch.equal(d_loss, bce(real, ones) + bce(fake, zeros))
    assert torch.equal(NS(bce_with_logits=True).g_loss(fake)[0], bce(fake, ones))
    assert torch.equal(Minimax(bce_with_logits=True).g_loss(fake)[0], -bce(fake, zeros))
    smoothed, _ = NS(real_label=0.9, bce_with_logits=True).d_loss(real, fake)
    assert torch.equal(smoothed, bce(real, torch.full_like(real, 0.9)) + bce(fake, zeros))
    assert torch.allclose(d_loss, NS().d_loss(real, fake)[0], rtol=1e-6)
    assert repr(NS(bce_with_logits=True)).endswith("bce_with_logits=True)")


@given(st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=3)))
def test_a_flag_that_is_not_a_bool_is_refused(value):
    with pytest.raises(ValueError, match="bce_with_logits must be True or False"):
        NS(bce_with_logits=value)


def test_with_probabilities_it_is_refused():
    with pytest.raises(ValueError, match="choose one"):
        NS(probabilities=True, bce_with_logits=True)
