"""R1 from the D(real) forward the D step runs anyway; lazy R1 as StyleGAN2 runs it."""

from __future__ import annotations

import pytest
import torch
from helpers import flops, latent_stream, lazy_r1_sides
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm
from torch.testing import assert_close

from ganstep import Step, g_first, reference
from ganstep.engine.objectives import NS, lazy_regularization
from ganstep.trainer.models import DCGANDiscriminator, DCGANGenerator

N, Z, X = 6, 3, 4


def make_d(kind: str) -> nn.Module:
    first = nn.Linear(X, 8)
    if kind == "spectral":
        first = spectral_norm(first)
    norm = nn.BatchNorm1d(8) if kind == "batchnorm" else nn.Identity()
    return nn.Sequential(first, norm, nn.Tanh(), nn.Linear(8, 1))


def sides(kind: str, every: int):
    return lazy_r1_sides(lambda: nn.Sequential(nn.Linear(Z, 8), nn.Tanh(), nn.Linear(8, X)),
                         lambda: make_d(kind), every)  # fmt: skip


def batches(count: int):
    gen = torch.Generator().manual_seed(2)
    return [torch.randn(N, X, generator=gen, dtype=torch.float64) + 1 for _ in range(count)]


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.parametrize("kind", ["plain", "batchnorm", "spectral"])
def test_r1_equals_stylegan2_single_forward_loop(kind, every):
    theirs, ours = sides(kind, every)
    reals = batches(7)
    expected = reference.stylegan2_r1(*theirs, reals, latent_stream(Z), r1=2.0, r1_every=every)
    step = Step(*ours, objective=NS(r1=2.0, r1_every=every), schedule=g_first(),
                latent=latent_stream(Z), d_order="fake_first")  # fmt: skip
    for real, row in zip(reals, expected, strict=True):
        logs = step(real)
        assert logs["loss_g"].item() == pytest.approx(row["loss_g"], rel=1e-10)
        assert logs["loss_d"].item() == pytest.approx(row["loss_d"], rel=1e-10)
    for module in (0, 1):
        for a, b in zip(ours[module].state_dict().values(), theirs[module].state_dict().values(),
                        strict=True):  # fmt: skip
            assert_close(a, b)  # parameters, BatchNorm statistics, spectral norm's u and v
    assert step.state_dict()["d_updates"] == 7


@pytest.mark.parametrize("every", [1, 3])
def test_r1_on_one_d_call_over_fake_and_real_equals_stylegan2(every):
    """``concat``, as the trainer runs a D that treats each sample alone: one D forward on
    cat(fake, real), R1's gradient taken at the real rows, and every update is still
    StyleGAN2's loop's, which forwards D on each batch apart."""
    theirs, ours = sides("plain", every)
    reals = batches(7)
    expected = reference.stylegan2_r1(*theirs, reals, latent_stream(Z), r1=2.0, r1_every=every)
    step = Step(*ours, objective=NS(r1=2.0, r1_every=every), schedule=g_first(),
                latent=latent_stream(Z), d_order="fake_first", concat=True)  # fmt: skip
    for real, row in zip(reals, expected, strict=True):
        logs = step(real)
        assert logs["loss_g"].item() == pytest.approx(row["loss_g"], rel=1e-10)
        assert logs["loss_d"].item() == pytest.approx(row["loss_d"], rel=1e-10)
    for module in (0, 1):
        for a, b in zip(ours[module].parameters(), theirs[module].parameters(), strict=True):
            assert_close(a, b)


# -- passes ---------------------------------------------------------------------------


class TwoForwardR1(NS):
    """R1 as ganstep took it before: a second D forward on the real batch."""

    def __init__(self, r1: float):
        super().__init__()
        self.weight = r1

    def penalty(self, D, real, fake):
        x = real.detach().requires_grad_(True).view_as(real)
        (grad,) = torch.autograd.grad(self.score(D(x), x).sum(), x, create_graph=True)
        return 0.5 * self.weight * grad.reshape(grad.shape[0], -1).square().sum(1).mean()


def dcgan_step(objective, every: int = 1) -> Step:
    torch.manual_seed(0)
    G, D = DCGANGenerator(z_dim=16, width=8), DCGANDiscriminator(width=8, batchnorm=False)
    return Step(
        G,
        D,
        torch.optim.Adam(G.parameters()),
        torch.optim.Adam(D.parameters()),
        objective=objective,
        schedule="d_first",
        latent=lambda n: torch.randn(n, 16),
    )


def d_costs(real: torch.Tensor) -> tuple[int, int]:
    """(D's forward on ``real``, the backward through every layer of D but the last).

    R1 reaches the last layer's weight through the penalty's own graph (the gradient
    at the input starts there), so only the layers below share D(real)'s backward
    with the loss when both come from one forward."""
    D = DCGANDiscriminator(width=8, batchnorm=False)
    body, last = D.net[:-1], D.net[-1]
    forward = flops(lambda: D(real))
    h = body(real).detach()
    below = flops(lambda: body(real).sum().backward()) - flops(lambda: body(real))
    assert flops(lambda: last(h)) > 0 and below > 0
    return forward, below


def test_r1_costs_no_second_d_forward():
    real = torch.randn(8, 3, 32, 32)
    d_forward, below = d_costs(real)
    same_forward = flops(lambda: dcgan_step(NS(r1=1.0))(real))
    two_forwards = flops(lambda: dcgan_step(TwoForwardR1(1.0))(real))
    # the second forward, and the backward through it that the loss's backward now shares
    assert two_forwards - same_forward == d_forward + below


def test_lazy_r1_costs_the_penalty_every_kth_d_step_only():
    real = torch.randn(8, 3, 32, 32)
    d_forward, below = d_costs(real)
    plain, every_step, lazy = dcgan_step(NS()), dcgan_step(NS(r1=1.0)), dcgan_step(NS(1.0, 4))
    cost_plain = [flops(lambda: plain(real)) for _ in range(8)]
    cost_every = [flops(lambda: every_step(real)) for _ in range(8)]
    cost_lazy = [flops(lambda: lazy(real)) for _ in range(8)]
    penalty = cost_every[0] - cost_plain[0]  # the double backward, on the same forward
    assert penalty > 0
    # its own phase: a D forward on the real batch, the penalty, the backward through both
    regularization = penalty + d_forward + below
    assert [c - p for c, p in zip(cost_lazy, cost_plain, strict=True)] == [
        regularization if i % 4 == 0 else 0 for i in range(8)
    ]


def test_lazy_regularization_scales_lr_and_betas_as_stylegan2():
    lr, betas = lazy_regularization(0.002, (0.0, 0.99), 16)
    assert lr == pytest.approx(0.002 * 16 / 17) and betas == (0.0, pytest.approx(0.99 ** (16 / 17)))


def test_lazy_r1_is_held_by_cuda_graphs_and_needs_r1_in_the_trainer():
    from ganstep.engine.cuda_graph import check_capturable
    from ganstep.trainer.config import Config

    step = Step(*sides("plain", 2)[0], objective=NS(r1=1.0, r1_every=2), schedule="d_first",
                latent=latent_stream(Z))  # fmt: skip
    with pytest.raises(ValueError, match="capturable=True") as refused:  # not for lazy R1:
        check_capturable(step)  # it gets a graph with its phase and one without
    assert "lazy" not in str(refused.value)
    with pytest.raises(ValueError, match="r1_every applies to R1: give r1 > 0"):
        Config(r1=0.0, r1_every=4).validate()
    with pytest.raises(ValueError, match="r1_every must be a positive integer"):
        Config(r1=1.0, r1_every=0).validate()


class R1AndOwn(NS):
    """R1 from the objective, and a penalty of the subclass's own: a constant 0.5 on
    D's graph (so the parameters are R1's alone and the log tells both apart)."""

    def penalty(self, D, real, fake):
        return 0.5 + 0 * D(real).sum()


@pytest.mark.parametrize("schedule", ["d_first", "simultaneous"])
def test_r1_in_the_loss_and_an_objectives_own_penalty_both_apply(schedule):
    """Before, R1 due in D's loss replaced the objective's own penalty in silence."""
    runs = []
    for objective in (NS(r1=1.0), R1AndOwn(r1=1.0)):
        torch.manual_seed(0)
        G, D = nn.Linear(3, 2).double(), nn.Linear(2, 1).double()
        opts = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
        step = Step(G, D, *opts, objective=objective, schedule=schedule,
                    latent=latent_stream(3, seed=1))  # fmt: skip
        gen = torch.Generator().manual_seed(2)
        logs = [step(torch.randn(4, 2, generator=gen, dtype=torch.float64)) for _ in range(3)]
        runs.append((logs, [p.detach().clone() for p in (*G.parameters(), *D.parameters())]))
    (r1_logs, r1_params), (both_logs, both_params) = runs
    for r1, both in zip(r1_logs, both_logs, strict=True):  # the general path, then the steady one
        assert_close(both["gp"], r1["gp"] + 0.5)
    for p, q in zip(r1_params, both_params, strict=True):
        assert_close(p, q, rtol=0, atol=1e-15)
