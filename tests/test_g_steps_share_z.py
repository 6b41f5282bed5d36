"""``d_first(g_steps=k, g_steps_share_z=True)``: every G step on the last D step's z, as
carpedm20's DCGAN-tensorflow runs G's optimizer twice on one ``batch_z`` (float64,
against ``reference.dcgan_tensorflow``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import X_DIM, real_batches
from helpers.wild import assert_losses, assert_same, run_step
from torch import nn

from ganstep import Step, d_first, reference

Z_DIM = 4


def twins():
    """Two identical (G, D, opt_g, opt_d) in float64, BatchNorm in G as the DCGAN's."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        # no bias before the BatchNorm (as the DCGAN's): its gradient is 0 but for rounding
        G = nn.Sequential(nn.Linear(Z_DIM, 8, bias=False), nn.BatchNorm1d(8), nn.ReLU(),
                          nn.Linear(8, X_DIM)).double()  # fmt: skip
        D = nn.Sequential(nn.Linear(X_DIM, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)).double()
        made.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.5, 0.999)),
                     torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.999))))  # fmt: skip
    return made


def run(schedule):
    theirs, ours = twins()
    reals = real_batches(5, dtype=torch.float64)
    expected = reference.dcgan_tensorflow(*theirs, reals, np.random.RandomState(3), Z_DIM)
    rng = np.random.RandomState(3)
    latent = lambda n: torch.from_numpy(rng.uniform(-1, 1, [n, Z_DIM]))  # noqa: E731
    step = Step(*ours, objective="ns", schedule=schedule, latent=latent)
    got = run_step(step, reals)
    return ours, theirs, got, expected, step


def test_g_steps_on_the_d_steps_z_equal_dcgan_tensorflow():
    """G forwarded for D's step and anew in each G step, as the graph runs: parameters,
    BatchNorm statistics and Adam's moments equal."""
    ours, theirs, got, expected, step = run(d_first(g_steps=2, reuse_fake=False,
                                                    g_steps_share_z=True))  # fmt: skip
    assert step._steady is not None
    for a, b in zip(ours[:2], theirs[:2], strict=True):
        assert_same(a, b, exact=True)
    assert_losses(got, expected)


def test_reusing_the_d_steps_fakes_equals_its_parameters_with_one_g_forward_fewer():
    """With reuse_fake (the default) the first G step takes the D step's fakes: the same
    parameters, G's BatchNorm statistics moved once less."""
    ours, theirs, got, expected, _ = run(d_first(g_steps=2, g_steps_share_z=True))
    for a, b in zip(ours[:2], theirs[:2], strict=True):
        assert_same(a, b, buffers=False, exact=True)
    assert_losses(got, expected)
    running = [m.running_mean for m in (ours[0][1], theirs[0][1])]
    assert not torch.equal(*running)


def test_without_it_the_second_g_step_draws_a_z_of_its_own():
    ours, theirs, *_ = run(d_first(g_steps=2, reuse_fake=False))
    pairs = zip(ours[0].parameters(), theirs[0].parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-6


@pytest.mark.parametrize("options", [dict(fresh_real=True, reuse_fake=False),
                                     dict(g_batch=2, reuse_fake=False)])  # fmt: skip
def test_what_cannot_share_the_d_steps_z_is_refused(options):
    with pytest.raises(ValueError, match="g_steps_share_z makes every G step's fakes"):
        d_first(g_steps=2, g_steps_share_z=True, **options)
