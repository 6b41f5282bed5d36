"""Gradient accumulation: k micro-batches per phase, one optimizer step, equal to the
whole batch in float64 wherever losses are batch means and D does not mix samples."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from helpers import latent_stream
from torch import nn
from torch.testing import assert_close

from ganstep import Step, d_first, g_first, simultaneous
from ganstep.engine.objectives import NS

Z, X, N = 3, 4, 6
SCHEDULES = {
    "d_first": d_first(),
    "d_first_k2": d_first(d_steps=2, g_steps=2),
    "d_first_fresh": d_first(reuse_fake=False),
    "g_first": g_first(reuse_z=True),
    "simultaneous": simultaneous(),
    "fused": simultaneous(fused=True),
}
OBJECTIVES = ["minimax", "ns", "lsgan", "hinge", "wgan_gp", "began"]  # softmax: not a mean


def pair(objective: str, batchnorm: bool = False):
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(Z, 8), nn.Tanh(), nn.Linear(8, X)).double()
    width = X if objective == "began" else 1
    norm = nn.BatchNorm1d(8) if batchnorm else nn.Identity()
    D = nn.Sequential(nn.Linear(X, 8), norm, nn.LeakyReLU(0.2), nn.Linear(8, width)).double()
    return G, D, torch.optim.Adam(G.parameters(), 0.01), torch.optim.Adam(D.parameters(), 0.01)


def real_batches(count: int, n: int = N):
    gen = torch.Generator().manual_seed(2)
    return [torch.randn(n, X, generator=gen, dtype=torch.float64) + 1 for _ in range(count)]


def train(objective, schedule, accumulate: int, iterations: int = 4, **kwargs):
    side = pair(objective)
    step = Step(*side, objective=objective, schedule=schedule, latent=latent_stream(Z),
                accumulate=accumulate, **kwargs)  # fmt: skip
    torch.manual_seed(5)  # wgan_gp's interpolation draws
    reals = real_batches(iterations * step.real_batches)
    logs = []
    for i in range(iterations):
        part = reals[i * step.real_batches : (i + 1) * step.real_batches]
        logs.append(step(part if len(part) > 1 else part[0]))
    return side, logs


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_accumulation_equals_the_whole_batch(objective, schedule):
    if schedule == "fused" and objective == "began":
        pytest.skip("the fused step refuses began")
    whole, whole_logs = train(objective, SCHEDULES[schedule], accumulate=1)
    micro, micro_logs = train(objective, SCHEDULES[schedule], accumulate=3)
    for module in (0, 1):
        for a, b in zip(whole[module].parameters(), micro[module].parameters(), strict=True):
            assert_close(a, b)
    for a, b in zip(whole_logs, micro_logs, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert_close(a[key], b[key])


def test_accumulation_with_labels_equals_the_whole_batch():
    class CondD(nn.Module):
        def __init__(self):
            super().__init__()
            self.net, self.embed = nn.Linear(X, 1), nn.Embedding(3, X)

        def forward(self, x, y):
            return (self.net(x).squeeze(1) + (self.embed(y) * x).sum(1)).double()

    class CondG(nn.Module):
        def __init__(self):
            super().__init__()
            self.net, self.embed = nn.Linear(Z + 2, X), nn.Embedding(3, 2)

        def forward(self, z, y):
            return self.net(torch.cat([z, self.embed(y)], 1))

    results = []
    for k in (1, 2):
        torch.manual_seed(0)
        G, D = CondG().double(), CondD().double()
        gen = torch.Generator().manual_seed(3)
        step = Step(G, D, torch.optim.Adam(G.parameters(), 0.01),
                    torch.optim.Adam(D.parameters(), 0.01), objective="hinge",
                    schedule=simultaneous(), latent=latent_stream(Z),
                    condition=lambda n, gen=gen: torch.randint(3, (n,), generator=gen),
                    accumulate=k)  # fmt: skip
        labels = torch.Generator().manual_seed(4)
        for real in real_batches(4):
            step((real, torch.randint(3, (N,), generator=labels)))
        results.append([p.detach().clone() for p in (*G.parameters(), *D.parameters())])
    for a, b in zip(*results, strict=True):
        assert_close(a, b)


def test_one_optimizer_step_one_scaler_update_one_sync_per_phase():
    G, D, opt_g, opt_d = pair("ns")
    step = Step(G, D, opt_g, opt_d, objective=NS(r1=1.0, r1_every=2), schedule="d_first",
                latent=latent_stream(Z), accumulate=3)  # fmt: skip
    synced = []
    step.game.options = replace(step.game.options, sync=lambda params: synced.append(len(params)))
    for real in real_batches(2):
        step(real)
    # iteration 0: D, lazy R1, G; iteration 1: D, G
    assert len(synced) == 5
    assert (
        opt_d.state_dict()["state"][0]["step"] == 3 and opt_g.state_dict()["state"][0]["step"] == 2
    )
    if torch.amp.is_autocast_available("cpu"):
        G, D, _, _ = pair("ns")
        G, D = G.float(), D.float()
        fp16 = Step(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()),
                    objective="ns", schedule="simultaneous", latent=lambda n: torch.randn(n, Z),
                    precision="fp16", accumulate=3)  # fmt: skip
        for real in real_batches(2):
            fp16(real.float())
        trackers = {who: s._growth_tracker for who, s in fp16.precision.scalers.items()}
        assert {who: int(t) for who, t in trackers.items()} == {"d": 2, "g": 2}


def test_batchnorm_normalizes_each_micro_batch_by_its_own_statistics():
    G, D, opt_g, opt_d = pair("ns", batchnorm=True)
    G0, D0 = copy.deepcopy(G), copy.deepcopy(D)
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent_stream(Z),
                accumulate=2)  # fmt: skip
    (real,) = real_batches(1)
    logs = step(real)
    z = latent_stream(Z)(N)
    with torch.no_grad():
        fake = G0(z)
        parts = [F.softplus(-D0(r)).mean() + F.softplus(D0(f)).mean()
                 for r, f in zip(real.split(3), fake.split(3), strict=True)]  # fmt: skip
        whole = F.softplus(-D0(real)).mean() + F.softplus(D0(fake)).mean()
    assert_close(logs["loss_d"], sum(parts) / 2)
    assert not torch.allclose(logs["loss_d"], whole)  # not the whole batch's statistics


def test_bad_accumulation_is_a_clear_error():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="accumulate must be a positive integer"):
            Step(*pair("ns"), objective="ns", schedule="d_first", latent=latent_stream(Z),
                 accumulate=bad)  # fmt: skip
    step = Step(*pair("ns"), objective="ns", schedule="d_first", latent=latent_stream(Z),
                accumulate=4)  # fmt: skip
    with pytest.raises(ValueError, match="a batch of 6 rows does not divide by 4"):
        step(real_batches(1)[0])


@pytest.mark.parametrize("objective", ["softmax", "rasgan", "ralsgan", "rahinge"])
def test_objectives_that_are_not_batch_means_refuse_accumulation(objective):
    G, D = nn.Linear(3, 2), nn.Linear(2, 1)
    opts = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    kwargs = dict(schedule="d_first", latent=lambda n: torch.randn(n, 3), accumulate=2)
    with pytest.raises(ValueError, match=f"objective '{objective}' is not"):
        Step(G, D, *opts, objective=objective, **kwargs)
    Step(G, D, *opts, objective="rsgan", **kwargs)  # pairs sample i with sample i: a mean
