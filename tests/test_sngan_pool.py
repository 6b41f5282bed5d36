"""SNGAN's G step on twice the batch (pytorch-gan-collections) and CycleGAN's pool of
past fakes, as Step options (float64)."""

from __future__ import annotations

import random

import pytest
import torch
from helpers import X_DIM, Z_DIM, latent_stream, real_batches
from helpers.wild import assert_losses, assert_same, run_step
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.pool import FakePool
from ganstep.engine.views import feature_matching


def sngan_sides():
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(Z_DIM, 8), nn.ReLU(), nn.Linear(8, X_DIM)).double()
        D = nn.Sequential(spectral_norm(nn.Linear(X_DIM, 8)), nn.LeakyReLU(0.1),
                          spectral_norm(nn.Linear(8, 1)), nn.Flatten(0)).double()  # fmt: skip
        sides.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.0, 0.9)),
                      torch.optim.Adam(D.parameters(), 0.01, betas=(0.0, 0.9))))  # fmt: skip
    return sides


@pytest.mark.parametrize("loss, objective", [("hinge", "hinge"), ("bce", "ns")])
def test_g_batch_equals_pytorch_gan_collections(loss, objective):
    theirs, ours = sngan_sides()
    reals = real_batches(6, dtype=torch.float64)  # 3 steps of n_dis = 2
    expected = reference.sngan_collections(*theirs, reals, latent_stream(Z_DIM), n_dis=2,
                                           loss=loss)  # fmt: skip
    step = Step(*ours, objective=objective, latent=latent_stream(Z_DIM),
                schedule=d_first(d_steps=2, reuse_fake=False, g_batch=2))  # fmt: skip
    got = run_step(step, [reals[i : i + 2] for i in range(0, 6, 2)])
    assert_losses(got, expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])  # parameters and spectral norm's u and v


def test_g_batch_makes_g_batch_times_the_fakes():
    sizes = []
    _, (G, D, opt_g, opt_d) = sngan_sides()
    G.register_forward_hook(lambda m, i, out: sizes.append(out.shape[0]))
    step = Step(G, D, opt_g, opt_d, objective="hinge", latent=latent_stream(Z_DIM),
                schedule=d_first(reuse_fake=False, g_batch=3), accumulate=2)  # fmt: skip
    step(real_batches(1, dtype=torch.float64)[0])
    n = real_batches(1)[0].shape[0]
    assert sizes == [n // 2, n // 2, 3 * n // 2, 3 * n // 2]  # D step, then G step, 2 micro


@pytest.mark.parametrize(
    "kwargs, message",
    [({"objective": "rasgan"}, "compares fakes with the real batch"),
     ({"objective": "softmax"}, "compares fakes with the real batch"),
     ({"condition": "real"}, "condition='real'"),
     ({"g_terms": {"fm": feature_matching(lambda out: out.unsqueeze(1))}},
      "a G term reads D's output on the real batch")],
)  # fmt: skip
def test_g_batch_refuses_what_pairs_fakes_with_real_rows(kwargs, message):
    _, (G, D, opt_g, opt_d) = sngan_sides()
    kwargs = {"objective": "hinge", "latent": latent_stream(Z_DIM), **kwargs}
    with pytest.raises(ValueError, match=message):
        Step(G, D, opt_g, opt_d, schedule=d_first(reuse_fake=False, g_batch=2), **kwargs)
    with pytest.raises(ValueError, match="use reuse_fake=False"):
        d_first(g_batch=2)


def test_fake_pool_draws_as_cyclegan_image_pool():
    theirs, ours = reference.ImagePool(5), FakePool(5)
    gen = torch.Generator().manual_seed(0)
    random.seed(3)
    expected = [theirs.query(torch.randn(3, 2, generator=gen)) for _ in range(8)]
    gen = torch.Generator().manual_seed(0)
    random.seed(3)
    got = [ours.query(torch.randn(3, 2, generator=gen)) for _ in range(8)]
    for a, b in zip(got, expected, strict=True):
        assert torch.equal(a, b)
    kept = FakePool(5)
    kept.load_state_dict(ours.state_dict())
    random.seed(4)
    after = ours.query(torch.ones(4, 2))
    random.seed(4)
    assert torch.equal(kept.query(torch.ones(4, 2)), after)
    with pytest.raises(ValueError, match="holds up to 5 fakes, this Step's 3"):
        FakePool(3).load_state_dict(ours.state_dict())


def test_fake_pool_is_refused_where_it_cannot_be_exact():
    _, (G, D, opt_g, opt_d) = sngan_sides()
    with pytest.raises(ValueError, match="a fake pool stands between"):
        Step(G, D, opt_g, opt_d, objective="ns", schedule=simultaneous(fused=True),
             latent=latent_stream(Z_DIM), fake_pool=4)  # fmt: skip
    with pytest.raises(ValueError, match="unconditional batches"):
        Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", fake_pool=4,
             latent=latent_stream(Z_DIM), condition=lambda n: torch.zeros(n, 1))  # fmt: skip
    with pytest.raises(ValueError, match="fake_pool must be a positive integer"):
        Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first",
             latent=latent_stream(Z_DIM), fake_pool=0)  # fmt: skip


@pytest.mark.parametrize("d_forwards", ["auto", "merged"])
def test_fake_pool_feeds_every_d_step_even_when_merging_was_asked(d_forwards):
    _, (G, D, opt_g, opt_d) = sngan_sides()
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=simultaneous(), fake_pool=20,
                latent=latent_stream(Z_DIM), d_forwards=d_forwards)  # fmt: skip
    step(real_batches(1, dtype=torch.float64)[0])
    assert len(step.game.options.fake_pool.images) == real_batches(1)[0].shape[0]
    assert "fake_pool=FakePool(20, holding 6)" in repr(step)
    assert "D forwards as the loop's" in repr(step)
