"""CycleStep against CycleGAN's optimize_parameters as junyanz writes it (float64):
two generators and two discriminators, lsgan or vanilla, cycle and identity terms,
the pool of 50 (here 3) past fakes per domain."""

from __future__ import annotations

import copy
import random

import pytest
import torch
from helpers.wild import assert_losses, assert_same
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import spectral_norm
from torch.testing import assert_close

from ganstep import reference
from ganstep.engine.cycle import CycleStep
from ganstep.engine.objectives import WGANGP, get_objective

N = 2  # CycleGAN trains with batch 1; 2 rows exercise the pool's per-image draws


def generator(channels_in: int, channels_out: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(channels_in, 4, 3, 1, 1), nn.InstanceNorm2d(4), nn.ReLU(),
                         nn.Conv2d(4, channels_out, 3, 1, 1), nn.Tanh())  # fmt: skip


def patch_d(channels: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(channels, 4, 4, 2, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 1, 2, 1, 0))  # fmt: skip


def models(channels_a: int, channels_b: int):
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G_A, G_B = (
            generator(channels_a, channels_b).double(),
            generator(channels_b, channels_a).double(),
        )
        D_A, D_B = patch_d(channels_b).double(), patch_d(channels_a).double()
        opt_g = torch.optim.Adam([*G_A.parameters(), *G_B.parameters()], 0.01, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam([*D_A.parameters(), *D_B.parameters()], 0.01, betas=(0.5, 0.999))
        out.append((G_A, G_B, D_A, D_B, opt_g, opt_d))
    return out


def domains(count: int, channels_a: int, channels_b: int):
    gen = torch.Generator().manual_seed(4)
    shape = lambda c: (N, c, 8, 8)  # noqa: E731
    return [(torch.rand(shape(channels_a), generator=gen, dtype=torch.float64) * 2 - 1,
             torch.rand(shape(channels_b), generator=gen, dtype=torch.float64) * 2 - 1)
            for _ in range(count)]  # fmt: skip


@pytest.mark.parametrize(
    "gan_mode, options",
    [("lsgan", {}), ("vanilla", {"objective": "ns", "g_scale": 1.0, "d_scale": 0.5})],
)
@pytest.mark.parametrize("identity", [0.5, 0.0])
def test_cycle_step_equals_optimize_parameters(gan_mode, options, identity):
    channels = (1, 1) if identity else (1, 2)  # identity needs as many channels each way
    theirs, ours = models(*channels)
    batches = domains(6, *channels)
    random.seed(7)
    expected = reference.cyclegan(*theirs, batches, gan_mode=gan_mode, lambda_identity=identity,
                                  pool_size=3)  # fmt: skip
    step = CycleStep(*ours, identity=identity, fake_pool=3, **options)
    random.seed(7)
    got = [{k: v.item() for k, v in step(a, b).items()} for a, b in batches]
    assert_losses(got, expected, keys=("loss_g", "loss_d", "loss_d_a", "cycle_a"))
    for mine, theirs_module in zip(ours[:4], theirs[:4], strict=True):
        assert_same(mine, theirs_module)
    assert len(step.state_dict()["fake_pools"][0]["images"]) == 3


class OwnPenalty(type(get_objective("hinge"))):
    """A user's objective whose penalty is its own (D's mean squared score on the real
    batch): CycleStep applies it as it applies WGAN-GP's."""

    name = "hinge_with_penalty"

    def penalty(self, D, real, fake):
        return 0.1 * D(real).square().mean()


@pytest.mark.parametrize("weight", [10.0, 1.0])
def test_cycle_step_applies_wgan_gp_as_a_loop_that_adds_it(weight):
    """CycleStep took wgan_gp and dropped its penalty (weights 10 and 0 gave the same
    bits, no gp logged): it is now in each D's loss and logged, as the loop adds it."""
    theirs, ours = models(1, 1)
    batches = domains(4, 1, 1)
    random.seed(7)
    torch.manual_seed(5)  # the penalty's interpolation weights
    expected = reference.cyclegan(*theirs, batches, gan_mode="wgangp", pool_size=3,
                                  lambda_gp=weight)  # fmt: skip
    step = CycleStep(*ours, objective=WGANGP(weight), g_scale=1.0, d_scale=0.5, fake_pool=3)
    random.seed(7)
    torch.manual_seed(5)
    got = [step(a, b) for a, b in batches]
    assert_losses([{k: v.item() for k, v in g.items()} for g in got], expected,
                  keys=("loss_g", "loss_d", "loss_d_a", "cycle_a"))  # fmt: skip
    for mine, theirs_module in zip(ours[:4], theirs[:4], strict=True):
        assert_same(mine, theirs_module)
    assert all(torch.equal(g["gp"], g["gp_a"] + g["gp_b"]) and g["gp"] > 0 for g in got)


def test_cycle_step_applies_a_users_own_penalty():
    with_penalty, without = models(1, 1)
    batches = domains(3, 1, 1)
    logs = {}
    for side, objective in ((with_penalty, OwnPenalty()), (without, "hinge")):
        random.seed(7)
        step = CycleStep(*side, objective=objective, fake_pool=3)
        logs[objective if isinstance(objective, str) else "own"] = [step(a, b) for a, b in batches]
    assert all(g["gp"] > 0 for g in logs["own"]) and "gp" not in logs["hinge"][-1]
    d_a, plain_d_a = with_penalty[2].parameters(), without[2].parameters()
    assert any(not torch.equal(p, q) for p, q in zip(d_a, plain_d_a, strict=True))


def test_cycle_step_resumes_with_its_pools():
    straight, split = models(1, 1)
    batches = domains(5, 1, 1)
    random.seed(1)
    first = CycleStep(*straight, fake_pool=3)
    for a, b in batches:
        first(a, b)
    random.seed(1)
    second = CycleStep(*split, fake_pool=3)
    for a, b in batches[:3]:
        second(a, b)
    resumed, state = CycleStep(*split, fake_pool=3), second.state_dict()
    resumed.load_state_dict(state)
    for a, b in batches[3:]:
        resumed(a, b)
    for x, y in zip(straight[:4], split[:4], strict=True):
        assert_same(x, y)
    with pytest.raises(ValueError, match="CycleStep state needs the keys"):
        CycleStep(*split, fake_pool=None).load_state_dict(state)


def test_cycle_step_arguments_are_checked():
    (G_A, G_B, D_A, D_B, opt_g, opt_d), _ = models(1, 1)
    with pytest.raises(ValueError, match="D_B must be 4 different modules"):
        CycleStep(G_A, G_A, D_A, D_B, opt_g, opt_d)
    with pytest.raises(ValueError, match="opt_g must hold the parameters of G_A and G_B"):
        CycleStep(G_A, G_B, D_A, D_B, torch.optim.SGD(G_A.parameters(), 0.1), opt_d)
    for objective in ("rasgan", "began", "ebgan"):  # real scores, autoencoder Ds: refused
        with pytest.raises(ValueError, match=f"objective '{objective}' needs more"):
            CycleStep(G_A, G_B, D_A, D_B, opt_g, opt_d, objective=objective)
    with pytest.raises(ValueError, match="cycle must be a number >= 0"):
        CycleStep(G_A, G_B, D_A, D_B, opt_g, opt_d, cycle=-1)
    step = CycleStep(G_A, G_B, D_A, D_B, opt_g, opt_d)
    with pytest.raises(ValueError, match="the same size"):
        step(
            torch.zeros(2, 1, 8, 8, dtype=torch.float64),
            torch.zeros(3, 1, 8, 8, dtype=torch.float64),
        )
    before = copy.deepcopy([m.state_dict() for m in (G_A, G_B, D_A, D_B)])
    with torch.inference_mode(), pytest.raises(RuntimeError, match="a CycleStep was called with"):
        step(*domains(1, 1, 1)[0])
    with (
        torch.autocast("cpu", dtype=torch.bfloat16),
        pytest.raises(RuntimeError, match=r"a CycleStep was called inside torch.autocast"),
    ):
        step(*domains(1, 1, 1)[0])
    assert_close([m.state_dict() for m in (G_A, G_B, D_A, D_B)], before, rtol=0, atol=0)
    spectral_norm(D_B[0])  # a parametrization: computed once per parametrize.cached() block
    with parametrize.cached(), pytest.raises(RuntimeError, match=r"inside torch.nn.utils.param"):
        step(*domains(1, 1, 1)[0])
    assert step.iteration == 0


def test_cycle_step_hooks_may_read_the_iteration():
    _, ours = models(1, 1)
    seen = []
    step = CycleStep(*ours, after_step={"d": lambda D, t: seen.append(t)})
    for a, b in domains(3, 1, 1):
        step(a, b)
    assert seen == [0, 1, 2]


class GradientNorms(WGANGP):
    """A penalty on D's squared gradient norms at the real and the fake samples, which
    can run on forwards of its own (before or after the loss forwards) or read the loss
    forwards: for a pure D the three give the same numbers."""

    def __init__(self, penalty_at: str) -> None:
        super().__init__(1.0)
        self.penalty_at = penalty_at

    def penalty_on_outputs(self, real, real_out, fake, fake_out):
        grads = torch.autograd.grad((real_out.sum(), fake_out.sum()), (real, fake),
                                    create_graph=True)  # fmt: skip
        return sum(g.square().sum() for g in grads) / real.shape[0]

    def penalty(self, D, real, fake):
        real = real.detach().requires_grad_(True)
        fake = fake.detach().requires_grad_(True)
        return self.penalty_on_outputs(real, D(real), fake, D(fake))


def test_cycle_step_runs_a_penalty_where_penalty_at_says():
    """Read from the loss forwards, or on forwards of its own before or after them: the
    same parameters for a pure D (each D's gradients at the same points), all logged."""
    batches = domains(3, 1, 1)
    runs = []
    for at in ("after", "before", "loss_forwards"):
        side = models(1, 1)[0]
        random.seed(7)
        step = CycleStep(*side, objective=GradientNorms(at), fake_pool=3)
        runs.append((side, [step(a, b) for a, b in batches]))
    (first, first_logs), *others = runs
    for side, logs in others:
        assert_losses(logs, first_logs, keys=("gp_a", "gp_b", "loss_d"))
        for mine, theirs in zip(side[:4], first[:4], strict=True):
            assert_same(mine, theirs)


def test_a_penalty_at_no_known_place_is_refused():
    from ganstep import Step, d_first

    objective = GradientNorms("sometimes")
    with pytest.raises(ValueError, match="penalty_at='sometimes'; choose one of after, before"):
        CycleStep(*models(1, 1)[0], objective=objective)
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    with pytest.raises(ValueError, match="penalty_at='sometimes'"):
        Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
             objective=objective, schedule=d_first(), latent=torch.randn)  # fmt: skip
