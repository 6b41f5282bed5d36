"""Self-Attention-GAN's loop (heykeetae/Self-Attention-GAN ``trainer.py``, commit e78f98c):
its WGAN-GP takes the gradient penalty in a D step of its own after D's step on its
losses (``WGANGP(penalty_at="own_step")``), its hinge loop is a plain ``d_first``; G and D
return attention maps beside their outputs. Both equal the Step in float64."""

from __future__ import annotations

import pytest
import torch
from helpers.wild import assert_same_sides
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.cuda_graph import GraphedStep
from ganstep.engine.cycle import CycleStep
from ganstep.engine.objectives import WGANGP

Z = 3


class AttnG(nn.Module):
    """G(z) -> (image, two attention maps), as Self-Attention-GAN's Generator returns."""

    def __init__(self):
        super().__init__()
        self.fc, self.out = nn.Linear(Z, 8), nn.Linear(8, 4)

    def forward(self, z):
        h = torch.relu(self.fc(z))
        p1 = torch.softmax(h.unsqueeze(2) * h.unsqueeze(1), dim=-1)  # (n, 8, 8)
        return torch.tanh(self.out(h)).view(-1, 1, 2, 2), p1, p1.transpose(1, 2)


class AttnD(nn.Module):
    """D(x) -> (scores squeezed, two attention maps), as its Discriminator returns."""

    def __init__(self):
        super().__init__()
        self.fc, self.last = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x):
        h = nn.functional.leaky_relu(self.fc(x.view(x.size(0), -1)), 0.1)
        p1 = torch.softmax(h.unsqueeze(2) * h.unsqueeze(1), dim=-1)
        return self.last(h).squeeze(), p1, p1


def sides():
    """Two identical float64 (G, D, Adam, Adam), its betas (0.0, 0.9)."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = AttnG().double(), AttnD().double()
        made.append((G, D, torch.optim.Adam(G.parameters(), 1e-3, (0.0, 0.9)),
                     torch.optim.Adam(D.parameters(), 4e-3, (0.0, 0.9))))  # fmt: skip
    return made


def run(adv_loss: str, objective, steps: int = 6):
    theirs, ours = sides()
    torch.manual_seed(5)
    batches = [torch.rand(4, 1, 2, 2, dtype=torch.float64) * 2 - 1 for _ in range(steps)]
    latent = lambda n: torch.randn(n, Z, dtype=torch.float64)  # noqa: E731
    torch.manual_seed(9)
    expected = reference.sagan(*theirs, batches, latent, adv_loss=adv_loss)
    step = Step(*ours, objective=objective, schedule=d_first(reuse_fake=False), latent=latent)
    torch.manual_seed(9)
    got = [{k: v.item() for k, v in step(b).items()} for b in batches]
    return ours, theirs, got, expected


# its alpha: torch.rand(n, 1, 1, 1), float32 whatever the batch
FLOAT32_ALPHA = lambda shape: torch.rand(shape)  # noqa: E731


def test_sagans_wgan_gp_in_a_d_step_of_its_own_equals_the_step():
    """D's step on its losses, then a second D step on the penalty alone at D's updated
    weights, on the same real and fake batches: parameters, Adam's states and the
    logged losses (the penalty as gp) equal in float64."""
    ours, theirs, got, expected = run("wgan-gp", WGANGP(10.0, alpha=FLOAT32_ALPHA,
                                                        penalty_at="own_step"))  # fmt: skip
    assert_same_sides(ours, theirs)
    for mine, source in zip(got, expected, strict=True):
        assert sorted(mine) == sorted(source)
        for key in source:
            assert mine[key] == pytest.approx(source[key], rel=1e-12, abs=1e-14), key
    # two D steps an iteration: Adam counted both
    assert ours[3].state_dict()["state"][0]["step"].item() == 2 * len(got)


def test_the_penalty_in_d_s_step_parts_from_sagans():
    ours, theirs, *_ = run("wgan-gp", WGANGP(10.0, alpha=FLOAT32_ALPHA))
    pairs = zip(ours[1].parameters(), theirs[1].parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-6


def test_sagans_hinge_loop_equals_d_first_with_fresh_z():
    ours, theirs, got, expected = run("hinge", "hinge")
    assert_same_sides(ours, theirs)
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"] == pytest.approx(source["loss_d"], rel=1e-12)
        assert mine["loss_g"] == pytest.approx(source["loss_g"], rel=1e-12)


@given(st.one_of(st.text(max_size=12).filter(lambda v: v not in ("after", "before", "own_step")),
                 st.integers(), st.booleans()))  # fmt: skip
def test_wgan_gp_penalty_at_is_after_before_or_own_step(penalty_at):
    with pytest.raises(ValueError, match="wgan_gp penalty_at must be 'after' or 'before' .* or "
                       "'own_step'"):  # fmt: skip
        WGANGP(penalty_at=penalty_at)


def test_a_penalty_step_of_its_own_is_refused_where_it_is_not_run():
    """CycleStep runs its Ds' penalties in their steps, and CUDA graphs do not hold the
    extra step: both say so rather than drop it."""
    own = WGANGP(penalty_at="own_step")
    G_A, G_B, D_A, D_B = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 1), nn.Linear(4, 1)
    opt_g = torch.optim.SGD([*G_A.parameters(), *G_B.parameters()], 0.1)
    opt_d = torch.optim.SGD([*D_A.parameters(), *D_B.parameters()], 0.1)
    with pytest.raises(ValueError, match="CycleStep runs each D's penalty in its step"):
        CycleStep(G_A, G_B, D_A, D_B, opt_g, opt_d, objective=own)
    G, D, opt_g, opt_d = sides()[0]
    step = Step(G, D, opt_g, opt_d, objective=own, schedule=d_first(), latent=torch.randn)
    with pytest.raises(ValueError, match=r"penalty in a D step of its own \(penalty_at="):
        GraphedStep(step, torch.zeros(4, 1, 2, 2, dtype=torch.float64))
    assert repr(own) == "WGANGP(weight=10.0, penalty_at='own_step')"


def _own_step_run(schedule, **options):
    G, D, opt_g, opt_d = sides()[0]
    gen = torch.Generator().manual_seed(1)
    step = Step(G, D, opt_g, opt_d, objective=WGANGP(penalty_at="own_step"), schedule=schedule,
                latent=lambda n: torch.randn(n, Z, dtype=torch.float64, generator=gen),
                **options)  # fmt: skip
    torch.manual_seed(4)  # the penalty's interpolation weights
    batches = [torch.rand(4, 1, 2, 2, dtype=torch.float64, generator=gen) for _ in range(4)]
    logs = [step(b) for b in batches]
    return [*G.parameters(), *D.parameters()], logs, opt_d


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # D forwarded once on the fakes for both losses, or as the loop does: the same
        (
            dict(schedule=simultaneous(), d_forwards="merged"),
            dict(schedule=simultaneous(), d_forwards="loop"),
        ),
        # D's step's fakes made after its real forward: the same for a D that draws nothing
        (dict(schedule=d_first(), d_order="real_g_fake"), dict(schedule=d_first())),
        # two micro-batches: each's penalty half the step's
        (dict(schedule=d_first(), accumulate=2), dict(schedule=d_first())),
    ],
    ids=["simultaneous", "real_g_fake", "accumulate"],
)
def test_the_penalty_step_of_its_own_runs_after_every_kind_of_d_step(a, b):
    params_a, logs_a, opt_a = _own_step_run(**a)
    params_b, logs_b, _ = _own_step_run(**b)
    for p, q in zip(params_a, params_b, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-12)
    assert all("gp" in logs for logs in logs_a)
    assert opt_a.state_dict()["state"][0]["step"].item() == 8  # two D steps an iteration
