"""WGAN with weight clipping, as PyTorch-GAN's wgan.py trains it (clip after each D
step, a G step every n_critic-th batch on the same z), and the hooks around optimizer
steps that tell a D step from a regularization step from a G step."""

from __future__ import annotations

import pytest
import torch
from helpers import X_DIM, Z_DIM, Run, real_batches
from helpers.wild import BatchMeanD, assert_same, assert_same_sides, numpy_normal
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.objectives import WGAN, WGANGP, Wasserstein, ns
from ganstep.trainer.models import MLP


def wgan_sides():
    """Two identical float64 sides as wgan.py builds them: G with BatchNorm, D without,
    RMSprop for both."""
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        G = MLP(Z_DIM, X_DIM, (8,), activation=nn.LeakyReLU, batchnorm=True).double()
        D = MLP(X_DIM, 1, (8, 4), activation=nn.LeakyReLU).double()
        sides.append((G, D, torch.optim.RMSprop(G.parameters(), lr=0.05),
                      torch.optim.RMSprop(D.parameters(), lr=0.05)))  # fmt: skip
    return sides


@pytest.mark.parametrize("n_critic", [5, 2])
def test_pytorch_gan_wgan_as_written_equals_d_first_reuse_z(n_critic):
    """wgan.py with its numpy draws and its two G forwards on G-step batches: parameters,
    G's BatchNorm statistics (and their batch count) and RMSprop's state all equal."""
    theirs, ours = wgan_sides()
    batches = real_batches(11)
    latent, rng = numpy_normal(4, Z_DIM)
    expected = reference.pytorch_gan_wgan(*theirs, batches, rng, Z_DIM, n_critic=n_critic)
    step = Step(*ours, objective="wgan", latent=latent,
                schedule=d_first(g_every=n_critic, reuse_fake=False, reuse_z=True))  # fmt: skip
    got = [{k: v.item() for k, v in step(b).items()} for b in batches]
    assert [sorted(r) for r in got] == [sorted(r) for r in expected]
    for a, b in zip(got, expected, strict=True):
        for key in b:
            assert a[key] == pytest.approx(b[key], rel=1e-10, abs=1e-12)
    assert_same_sides(ours, theirs)
    assert max(p.abs().max().item() for p in ours[1].parameters()) <= 0.01
    bn = ours[0].net[1]
    assert bn.num_batches_tracked.item() == 11 + len(range(0, 11, n_critic))


def test_reusing_the_fake_batch_differs_from_wgan_py_in_gs_batchnorm_only():
    """``reuse_fake=True`` forwards G once where wgan.py forwards it twice: the same
    parameters (BatchNorm in training mode normalizes by the batch either way) but other
    running statistics; ``reuse_z`` is what makes the buffers equal."""
    theirs, ours = wgan_sides()
    batches = real_batches(6)
    latent, rng = numpy_normal(4, Z_DIM)
    reference.pytorch_gan_wgan(*theirs, batches, rng, Z_DIM)
    step = Step(*ours, objective="wgan", latent=latent, schedule=d_first(g_every=5))
    for b in batches:
        step(b)
    assert_same(ours[0], theirs[0], buffers=False)
    assert ours[0].net[1].num_batches_tracked.item() == 6
    assert theirs[0].net[1].num_batches_tracked.item() == 8
    with pytest.raises(ValueError, match="reuse_z makes G's first fakes anew"):
        d_first(reuse_z=True)


def test_wgan_clips_after_every_d_step_in_every_schedule():
    for schedule in (d_first(d_steps=2), simultaneous(), simultaneous(fused=True)):
        run = Run("wgan", batchnorm=False)
        step = Step(*run.models(), objective=WGAN(clip=0.05), latent=run.latent,
                    schedule=schedule)  # fmt: skip
        batches = real_batches(schedule.real_batches)
        step(batches if schedule.real_batches > 1 else batches[0])
        assert max(p.abs().max().item() for p in run.D.parameters()) <= 0.05
        assert max(p.abs().max().item() for p in run.G.parameters()) > 0.05


def test_hooks_tell_each_phase_apart_and_see_the_gradients_of_their_step():
    run = Run("ns", batchnorm=False)
    seen = []

    def before(tag):
        def hook(module):
            grads = [p.grad for p in module.parameters()]
            seen.append((f"before_{tag}", module, all(g is not None for g in grads)))

        return hook

    def after(tag):
        return lambda module: seen.append((f"after_{tag}", module, None))

    phases = ("d", "g", "d_reg")
    step = Step(*run.models(), objective=ns(r1=1.0, r1_every=2), latent=run.latent,
                schedule=d_first(), before_step={p: before(p) for p in phases},
                after_step={p: after(p) for p in phases})  # fmt: skip
    step(real_batches(1)[0])
    names = [s[0] for s in seen]
    assert names == ["before_d", "after_d", "before_d_reg", "after_d_reg", "before_g", "after_g"]
    assert all(s[1] is run.D for s in seen[:4]) and all(s[1] is run.G for s in seen[4:])
    assert all(s[2] for s in seen if s[2] is not None)
    seen.clear()
    step(real_batches(2)[1])  # r1_every=2: no regularization step this time
    assert [s[0] for s in seen] == ["before_d", "after_d", "before_g", "after_g"]


def test_gradient_clipping_on_d_leaves_the_lazy_r1_step_alone():
    """The issue's 1.5e-3: a clip on D's step only, written as a hook, must not touch
    the regularization step; equal to a loop that clips D's adversarial step only."""
    runs = [Run("ns", batchnorm=False) for _ in range(2)]
    clip = lambda D: torch.nn.utils.clip_grad_norm_(D.parameters(), 0.01)  # noqa: E731
    batches = real_batches(3)
    hooked = Step(*runs[0].models(), objective=ns(r1=1.0, r1_every=2), latent=runs[0].latent,
                  schedule=d_first(), before_step={"d": clip})  # fmt: skip
    for b in batches:
        hooked(b)
    # the same by hand: the optimizer's step wrapped for D's adversarial phase only
    plain = Step(*runs[1].models(), objective=ns(r1=1.0, r1_every=2), latent=runs[1].latent,
                 schedule=d_first())  # fmt: skip
    opt_d = runs[1].opt_d
    original = opt_d.step
    for b in batches:
        calls = iter([True, False, False])  # D's step, its R1 step (when due), none more

        def step_once(*a, calls=calls, **k):
            if next(calls):
                torch.nn.utils.clip_grad_norm_(runs[1].D.parameters(), 0.01)
            return original(*a, **k)

        opt_d.step = step_once
        plain(b)
    opt_d.step = original
    assert_same(runs[0].D, runs[1].D)
    assert_same(runs[0].G, runs[1].G)


@given(st.sampled_from(["e", "D", "gen", "d_lazy", 3]))
def test_hooks_name_a_known_phase(phase):
    run = Run("ns", batchnorm=False)
    with pytest.raises(ValueError, match="unknown phase"):
        Step(*run.models(), objective="ns", schedule="d_first", latent=run.latent,
             after_step={phase: lambda m: None})  # fmt: skip


def test_hooks_are_callables_in_a_dict():
    run = Run("ns", batchnorm=False)
    with pytest.raises(TypeError, match="must be a dict"):
        Step(*run.models(), objective="ns", schedule="d_first", latent=run.latent,
             before_step=lambda m: None)  # fmt: skip
    with pytest.raises(TypeError, match="must be callable"):
        Step(*run.models(), objective="ns", schedule="d_first", latent=run.latent,
             before_step={"d": 1})  # fmt: skip
    with pytest.raises(ValueError, match="wgan clip must be a number >= 0"):
        WGAN(clip=-1)


def _wgan_gp_run(objective, dtype=torch.float32):
    side = Run("wgan_gp", batchnorm=False, dtype=dtype)
    step = Step(*side.models(), objective=objective, schedule=d_first(), latent=side.latent)
    torch.manual_seed(7)
    for real in real_batches(3, dtype=dtype):
        step(real)
    return [p.detach().clone() for p in [*side.G.parameters(), *side.D.parameters()]]


def test_wgan_gp_takes_its_interpolation_weights_from_the_callers_draw():
    """alpha(shape) replaces torch.rand: given torch.rand itself it is the default run to
    the bit; given numpy's draw (PyTorch-GAN's scripts, StarGAN) it uses those weights,
    one per sample, once per D step."""
    import numpy as np

    default = _wgan_gp_run(WGANGP())
    same = _wgan_gp_run(WGANGP(alpha=lambda shape: torch.rand(shape)))
    assert all(torch.equal(p, q) for p, q in zip(default, same, strict=True))
    shapes, rng = [], np.random.RandomState(0)

    def numpy_alpha(shape):
        shapes.append(shape)
        return torch.from_numpy(rng.random(shape))

    drawn = _wgan_gp_run(WGANGP(alpha=numpy_alpha))
    assert shapes == [(6, 1)] * 3  # one weight per sample of each D step's batch
    assert not all(torch.equal(p, q) for p, q in zip(drawn, default, strict=True))
    with pytest.raises(ValueError, match=r"alpha\(shape\) must return weights of shape \(6, 1\)"):
        _wgan_gp_run(WGANGP(alpha=lambda shape: torch.rand(6)))
    with pytest.raises(TypeError, match="alpha must be callable"):
        WGANGP(alpha=0.5)


def _emilien_dupont(eps: float, critic_iterations: int = 3):
    """EmilienDupont/wgan-gp's Trainer and the Step, float64, over 2 of its G steps."""
    theirs, ours = (Run("wgan_gp", batchnorm=False) for _ in range(2))
    batches = real_batches(2 * critic_iterations, dtype=torch.float64)
    torch.manual_seed(7)  # alpha's torch.rand
    expected = reference.emilien_dupont_wgan_gp(*theirs.models(), batches, theirs.latent,
                                                critic_iterations=critic_iterations)  # fmt: skip
    step = Step(*ours.models(), objective=WGANGP(10.0, eps=eps),
                schedule=d_first(d_steps=critic_iterations, reuse_fake=False),
                latent=ours.latent)  # fmt: skip
    torch.manual_seed(7)
    k = critic_iterations
    got = [step(batches[i * k : (i + 1) * k]) for i in range(2)]
    return ours, theirs, got, expected


def test_wgan_gp_with_eps_equals_emilien_duponts_trainer():
    """Its penalty's norm is sqrt(sum(grad ** 2) + 1e-12): WGANGP(eps=1e-12) equals it in
    float64 (parameters, Adam's moments, the losses)."""
    ours, theirs, got, expected = _emilien_dupont(1e-12)
    assert_same_sides(ours.models(), theirs.models())
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"].item() == pytest.approx(source["loss_d"], rel=1e-12)
        assert mine["loss_g"].item() == pytest.approx(source["loss_g"], rel=1e-12)


def test_wgan_gp_without_eps_differs_from_it_in_float64():
    ours, theirs, *_ = _emilien_dupont(0.0)
    pairs = zip(ours.D.parameters(), theirs.D.parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-15


@given(st.one_of(st.floats(max_value=-1e-300), st.just(float("nan")), st.booleans(),
                 st.text(max_size=3)))  # fmt: skip
def test_wgan_gp_eps_is_a_number_at_least_0(eps):
    with pytest.raises(ValueError, match="wgan_gp eps must be a number >= 0"):
        WGANGP(eps=eps)


def test_wgan_gp_eps_0_computes_the_norm_as_before():
    """The default takes norm(2), the very ops it took before eps existed."""
    default = _wgan_gp_run(WGANGP())
    zero = _wgan_gp_run(WGANGP(eps=0.0))
    assert all(torch.equal(p, q) for p, q in zip(default, zero, strict=True))
    assert repr(WGANGP(eps=1e-12)) == "WGANGP(weight=10.0, eps=1e-12)"
    assert repr(WGANGP()) == "WGANGP(weight=10.0)"


def _lynnho(interpolate: str, n_d: int, gp_mode: str = "1-gp", d_gain: float = 1.0, **form):
    """LynnHo's train.py (wgan, ``gp_mode``, line) and the Step (WGANGP with ``form``),
    float64, over 2 of its G steps; D's weights times ``d_gain`` in both first."""
    theirs, ours = (Run("wgan_gp", batchnorm=False) for _ in range(2))
    with torch.no_grad():
        for p in (*theirs.D.parameters(), *ours.D.parameters()):
            p.mul_(d_gain)
    batches = real_batches(2 * n_d, dtype=torch.float64)
    torch.manual_seed(7)  # alpha's torch.rand
    expected = reference.lynnho_wgan_gp(*theirs.models(), batches, theirs.latent, n_d=n_d,
                                        gp_mode=gp_mode)  # fmt: skip
    step = Step(*ours.models(), objective=WGANGP(10.0, interpolate=interpolate, **form),
                schedule=d_first(d_steps=n_d, reuse_fake=False), latent=ours.latent)  # fmt: skip
    torch.manual_seed(7)
    got = [step(batches[i * n_d : (i + 1) * n_d] if n_d > 1 else batches[i]) for i in range(2)]
    return ours, theirs, got, expected


@pytest.mark.parametrize("n_d", [1, 3])
def test_wgan_gp_interpolating_from_the_real_batch_equals_lynnhos_loop(n_d):
    """LynnHo's penalty samples real + alpha * (fake - real), as the WGAN-GP authors'
    code does: WGANGP(interpolate="difference") equals it in float64 (parameters,
    Adam's moments, the losses), G stepping after every n_d-th D step."""
    ours, theirs, got, expected = _lynnho("difference", n_d)
    assert_same_sides(ours.models(), theirs.models())
    assert len(got) == len(expected) == 2
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"].item() == pytest.approx(source["loss_d"], rel=1e-12)
        assert mine["loss_g"].item() == pytest.approx(source["loss_g"], rel=1e-12)


@pytest.mark.parametrize(("gp_mode", "form"), [("lp", {"one_sided": True}),
                                              ("0-gp", {"center": 0.0})])  # fmt: skip
def test_lynnhos_lipschitz_and_zero_centered_penalties_equal_wgan_gps_forms(gp_mode, form):
    """LynnHo's wgan-lp (``max(0, norm - 1)**2``) and 0-gp (``norm**2``) at its line
    samples: WGANGP(one_sided=True) and WGANGP(center=0) equal them in float64 over 3 D
    steps a G step; the two-sided penalty parts from each. D's weights are scaled so
    that its gradient's norm is above 1 at some samples and below at others (the
    one-sided penalty neither 0 nor the two-sided one)."""
    ours, theirs, got, expected = _lynnho("difference", 3, gp_mode, d_gain=2.0, **form)
    assert_same_sides(ours.models(), theirs.models())
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"].item() == pytest.approx(source["loss_d"], rel=1e-12)
        assert mine["gp"].item() > 0
    two_sided, theirs, *_ = _lynnho("difference", 3, gp_mode, d_gain=2.0)
    pairs = zip(two_sided.D.parameters(), theirs.D.parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-6


def test_wgan_gp_forms_compute_their_penalties():
    """The penalty at one point whose gradient norm is known: D(x) = w . x, norm |w|."""
    D = nn.Linear(3, 1, bias=False).double()
    with torch.no_grad():
        D.weight.copy_(torch.tensor([[0.3, 0.0, 0.4]], dtype=torch.float64))  # |w| = 0.5
    real = fake = torch.zeros(2, 3, dtype=torch.float64)
    for objective, want in ((WGANGP(2.0), 2 * 0.25), (WGANGP(2.0, one_sided=True), 0.0),
                            (WGANGP(2.0, center=0.0), 2 * 0.25),
                            (WGANGP(2.0, center=0.2, one_sided=True), 2 * 0.09)):  # fmt: skip
        got = objective.penalty(D, real, fake).item()
        assert got == pytest.approx(want, rel=1e-12), objective
    assert repr(WGANGP(one_sided=True, center=0.0)) == (
        "WGANGP(weight=10.0, one_sided=True, center=0.0)")  # fmt: skip


@given(st.one_of(st.floats(max_value=-1e-300), st.just(float("nan")), st.just(float("inf")),
                 st.booleans(), st.text(max_size=3)))  # fmt: skip
def test_wgan_gp_center_is_a_finite_number_at_least_0(center):
    with pytest.raises(ValueError, match="wgan_gp center must be a number >= 0"):
        WGANGP(center=center)


@given(st.one_of(st.integers(), st.none(), st.text(max_size=3)))
def test_wgan_gp_one_sided_is_true_or_false(one_sided):
    with pytest.raises(ValueError, match="wgan_gp one_sided must be True or False"):
        WGANGP(one_sided=one_sided)


def test_wgan_gp_mixing_parts_from_lynnhos_loop():
    """The default's e * x + (1 - e) * G(z) on the same draws: other points, another
    penalty, other parameters."""
    ours, theirs, *_ = _lynnho("mix", 1)
    pairs = zip(ours.D.parameters(), theirs.D.parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-6


@given(st.one_of(st.text(max_size=12).filter(lambda s: s not in ("mix", "difference")),
                 st.integers(), st.none()))  # fmt: skip
def test_wgan_gp_interpolate_is_one_of_two(interpolate):
    with pytest.raises(ValueError, match="wgan_gp interpolate must be one of"):
        WGANGP(interpolate=interpolate)


def test_wgan_gp_interpolate_is_shown_when_not_the_default():
    assert repr(WGANGP(interpolate="difference")) == (
        "WGANGP(weight=10.0, interpolate='difference')"
    )
    assert "interpolate" not in repr(WGANGP(interpolate="mix"))


def _image_models():
    torch.manual_seed(3)
    G = nn.Sequential(nn.Linear(4, 3 * 4 * 4), nn.Tanh(), nn.Unflatten(1, (3, 4, 4))).double()
    D = nn.Sequential(nn.Conv2d(3, 4, 3, 1, 1), nn.LeakyReLU(0.2), nn.Flatten(),
                      nn.Linear(4 * 16, 1)).double()  # fmt: skip
    opts = (torch.optim.Adam(G.parameters(), 1e-3, betas=(0.5, 0.999)),
            torch.optim.Adam(D.parameters(), 1e-3, betas=(0.5, 0.999)))  # fmt: skip
    return G, D, *opts


def _zeleni9(flatten: bool, critic_iter: int = 3):
    """Zeleni9/pytorch-wgan's train() and the Step, float64 images, over 2 G steps."""
    torch.manual_seed(11)
    batches = [torch.rand(6, 3, 4, 4, dtype=torch.float64) * 2 - 1 for _ in range(2 * critic_iter)]
    theirs, ours = _image_models(), _image_models()
    torch.manual_seed(7)
    expected = reference.zeleni9_wgan_gp(
        *theirs, batches, lambda n: torch.randn(n, 4, dtype=torch.float64), z_shape=(4,),
        critic_iter=critic_iter)  # fmt: skip
    calls = []

    def latent(n):  # its critic steps draw a z they never use, then theirs; G's step not
        calls.append(n)
        if len(calls) % (critic_iter + 1):
            torch.rand((n, 4))
        return torch.randn(n, 4, dtype=torch.float64)

    objective = WGANGP(10.0, alpha=lambda shape: torch.FloatTensor(*shape).uniform_(0, 1),
                       flatten=flatten)  # fmt: skip
    step = Step(ours[0], ours[1], ours[2], ours[3], objective=objective,
                schedule=d_first(d_steps=critic_iter, reuse_fake=False), latent=latent)  # fmt: skip
    torch.manual_seed(7)
    got = [step(batches[i * critic_iter : (i + 1) * critic_iter]) for i in range(2)]
    return ours, theirs, got, expected


def test_wgan_gp_with_the_norm_over_channels_equals_zeleni9s_loop():
    """Zeleni9's penalty takes gradients.norm(2, dim=1) of an image gradient, a norm over
    channels at each pixel: WGANGP(flatten=False) equals its loop in float64 (its
    float32 eta, drawn as it draws it, given as alpha)."""
    ours, theirs, got, expected = _zeleni9(flatten=False)
    assert_same_sides(ours, theirs)
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"].item() == pytest.approx(source["loss_d"], rel=1e-12)
        assert mine["loss_g"].item() == pytest.approx(source["loss_g"], rel=1e-12)


def test_wgan_gp_flattened_parts_from_zeleni9s_loop():
    ours, theirs, *_ = _zeleni9(flatten=True)
    pairs = zip(ours[1].parameters(), theirs[1].parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-6


@given(st.one_of(st.integers(), st.none(), st.text(max_size=3), st.floats()))
def test_wgan_gp_flatten_is_true_or_false(flatten):
    with pytest.raises(ValueError, match="wgan_gp flatten must be True or False"):
        WGANGP(flatten=flatten)


# The WGAN authors' main.py (martinarjovsky/WassersteinGAN, commit 2cf43ba) and its two
# model files, as they write them (nn.Module for the gone nn.Container, the main
# Sequential called where data_parallel hands it one device's batch, and ':' in its
# layers' names for the '.' that torch refuses since 0.4).


class MLP_G(nn.Module):
    """models/mlp.py's MLP_G."""

    def __init__(self, isize, nz, nc, ngf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nz, ngf), nn.ReLU(True), nn.Linear(ngf, ngf), nn.ReLU(True),
            nn.Linear(ngf, ngf), nn.ReLU(True), nn.Linear(ngf, nc * isize * isize),
        )  # fmt: skip
        self.nc, self.isize, self.nz = nc, isize, nz

    def forward(self, input):
        input = input.view(input.size(0), input.size(1))
        out = self.main(input)
        return out.view(out.size(0), self.nc, self.isize, self.isize)


class MLP_D(nn.Module):
    """models/mlp.py's MLP_D: its scores' batch mean, one number."""

    def __init__(self, isize, nz, nc, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nc * isize * isize, ndf), nn.ReLU(True), nn.Linear(ndf, ndf),
            nn.ReLU(True), nn.Linear(ndf, ndf), nn.ReLU(True), nn.Linear(ndf, 1),
        )  # fmt: skip
        self.nc, self.isize, self.nz = nc, isize, nz

    def forward(self, input):
        input = input.view(input.size(0), input.size(1) * input.size(2) * input.size(3))
        output = self.main(input)
        output = output.mean(0)
        return output.view(1)


class DCGAN_D(nn.Module):
    """models/dcgan.py's DCGAN_D (BatchNorm, the batch mean), n_extra_layers=0."""

    def __init__(self, isize, nz, nc, ndf):
        super().__init__()
        main = nn.Sequential()
        main.add_module(f"initial:conv:{nc}-{ndf}", nn.Conv2d(nc, ndf, 4, 2, 1, bias=False))
        main.add_module(f"initial:relu:{ndf}", nn.LeakyReLU(0.2, inplace=True))
        csize, cndf = isize / 2, ndf
        while csize > 4:
            in_feat, out_feat = cndf, cndf * 2
            main.add_module(f"pyramid:{in_feat}-{out_feat}:conv",
                            nn.Conv2d(in_feat, out_feat, 4, 2, 1, bias=False))  # fmt: skip
            main.add_module(f"pyramid:{out_feat}:batchnorm", nn.BatchNorm2d(out_feat))
            main.add_module(f"pyramid:{out_feat}:relu", nn.LeakyReLU(0.2, inplace=True))
            cndf, csize = cndf * 2, csize / 2
        main.add_module(f"final:{cndf}-1", nn.Conv2d(cndf, 1, 4, 1, 0, bias=False))
        self.main = main

    def forward(self, input):
        output = self.main(input)
        output = output.mean(0)
        return output.view(1)


class DCGAN_G(nn.Module):
    """models/dcgan.py's DCGAN_G, n_extra_layers=0."""

    def __init__(self, isize, nz, nc, ngf):
        super().__init__()
        cngf, tisize = ngf // 2, 4
        while tisize != isize:
            cngf, tisize = cngf * 2, tisize * 2
        main = nn.Sequential()
        main.add_module(f"initial:{nz}-{cngf}:convt",
                        nn.ConvTranspose2d(nz, cngf, 4, 1, 0, bias=False))  # fmt: skip
        main.add_module(f"initial:{cngf}:batchnorm", nn.BatchNorm2d(cngf))
        main.add_module(f"initial:{cngf}:relu", nn.ReLU(True))
        csize = 4
        while csize < isize // 2:
            main.add_module(f"pyramid:{cngf}-{cngf // 2}:convt",
                            nn.ConvTranspose2d(cngf, cngf // 2, 4, 2, 1, bias=False))  # fmt: skip
            main.add_module(f"pyramid:{cngf // 2}:batchnorm", nn.BatchNorm2d(cngf // 2))
            main.add_module(f"pyramid:{cngf // 2}:relu", nn.ReLU(True))
            cngf, csize = cngf // 2, csize * 2
        main.add_module(f"final:{cngf}-{nc}:convt",
                        nn.ConvTranspose2d(cngf, nc, 4, 2, 1, bias=False))  # fmt: skip
        main.add_module(f"final:{nc}:tanh", nn.Tanh())
        self.main = main

    def forward(self, input):
        return self.main(input)


def weights_init(m):
    """main.py's custom weights initialization."""
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


def _authors_sides(dcgan: bool, lr: float, dtype: torch.dtype):
    """Two identical (G, D, RMSprop, RMSprop) as main.py builds them (its --mlp_G
    --mlp_D, or its DCGAN models with weights_init on both)."""
    sides = []
    for _ in range(2):
        torch.manual_seed(3)
        if dcgan:
            G, D = DCGAN_G(16, 4, 1, 4).to(dtype), DCGAN_D(16, 4, 1, 4).to(dtype)
            D.apply(weights_init)
        else:
            G, D = MLP_G(2, 3, 1, 8).to(dtype), MLP_D(2, 3, 1, 8).to(dtype)
        G.apply(weights_init)
        sides.append((G, D, torch.optim.RMSprop(G.parameters(), lr=lr),
                      torch.optim.RMSprop(D.parameters(), lr=lr)))  # fmt: skip
    return sides


def _authors_loop(step, batches, niter, diters=5):
    """main.py's loop around a Step: the same Diters and the same count of the epoch's
    batches, each iteration's batches handed over in one call."""
    got, gen_iterations = [], 0
    for _epoch in range(niter):
        data_iter, i = iter(batches), 0
        while i < len(batches):
            Diters = 100 if gen_iterations < 25 or gen_iterations % 500 == 0 else diters
            reals = [next(data_iter) for _ in range(min(Diters, len(batches) - i))]
            i += len(reals)
            got.append({**{k: v.item() for k, v in step(reals).items()}, "d_steps": len(reals)})
            gen_iterations += 1
    return got


def _authors_run(dcgan: bool, n_batches: int, niter: int, objective, lr: float = 1e-3,
                 dtype: torch.dtype = torch.float64):  # fmt: skip
    theirs, ours = _authors_sides(dcgan, lr, dtype)
    nz, shape = (4, (1, 16, 16)) if dcgan else (3, (1, 2, 2))
    torch.manual_seed(5)
    batches = [torch.rand(4, *shape, dtype=dtype) * 2 - 1 for _ in range(n_batches)]
    z_shape = (nz, 1, 1)  # main.py's noise, (batchSize, nz, 1, 1)
    latent = lambda n: torch.randn(n, *z_shape, dtype=dtype)  # noqa: E731
    torch.manual_seed(9)
    expected = reference.martinarjovsky_wgan(*theirs, batches, latent, niter=niter,
                                             batch_size=4)  # fmt: skip
    step = Step(*ours, objective=objective, latent=latent,
                schedule=d_first(d_steps="each_batch", reuse_fake=False))  # fmt: skip
    torch.manual_seed(9)
    return ours, theirs, _authors_loop(step, batches, niter), expected


AUTHORS = WGAN(0.01, sign=-1, clamp_at="before")


def test_the_wgan_authors_main_py_with_its_mlps_equals_the_step():
    """main.py --mlp_G --mlp_D over 2,522 batches: 25 G iterations of 100 D steps, four of
    Diters = 5, one cut short to the epoch's last 2 batches; its D returns the batch
    mean, scores real samples low, is clamped before each D step. Parameters, RMSprop's
    state and the logged losses equal in float64."""
    ours, theirs, got, expected = _authors_run(False, 2522, 1, AUTHORS)
    assert [r["d_steps"] for r in expected] == [100] * 25 + [5] * 4 + [2]
    assert [r["d_steps"] for r in got] == [r["d_steps"] for r in expected]
    assert_same_sides(ours, theirs)
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"] == pytest.approx(source["loss_d"], rel=1e-12, abs=1e-15)
        assert mine["loss_g"] == pytest.approx(source["loss_g"], rel=1e-12, abs=1e-15)
    # G's step read D unclamped (as its last D step left it), as main.py's does
    assert max(p.abs().max().item() for p in ours[1].parameters()) > 0.01


def test_the_wgan_authors_main_py_with_its_batchnorm_dcgan_equals_the_step():
    """main.py's DCGAN models (BatchNorm in both, weights_init), three epochs of 5 batches
    (each G iteration's 100 D steps cut to the epoch's 5): parameters, both BatchNorms'
    statistics and RMSprop's state equal in float64."""
    ours, theirs, got, expected = _authors_run(True, 5, 3, AUTHORS)
    assert [r["d_steps"] for r in got] == [r["d_steps"] for r in expected] == [5, 5, 5]
    assert_same_sides(ours, theirs)
    for mine, source in zip(got, expected, strict=True):
        assert mine["loss_d"] == pytest.approx(source["loss_d"], rel=1e-12, abs=1e-15)


def test_the_wgan_authors_main_py_equals_the_step_to_the_bit_in_float32():
    """Its two backward calls (real, then fake) and the Step's one backward of L_D add
    the same two gradients: float32 parameters, statistics and states equal exactly."""
    ours, theirs, got, expected = _authors_run(True, 7, 3, AUTHORS, dtype=torch.float32)
    for mine, source in zip(ours, theirs, strict=True):
        if isinstance(mine, nn.Module):
            pairs = [(mine.state_dict(), source.state_dict())]
        else:
            pairs = zip(mine.state_dict()["state"].values(),
                        source.state_dict()["state"].values(), strict=True)  # fmt: skip
        for a, b in pairs:
            assert all(torch.equal(a[k], b[k]) for k in a)
    assert [r["loss_d"] for r in got] == [r["loss_d"] for r in expected]


@pytest.mark.parametrize("objective", [WGAN(0.01, sign=-1), WGAN(0.01, clamp_at="before")],
                         ids=["clamp_after", "sign_1"])  # fmt: skip
def test_the_wgan_authors_loop_parts_from_the_other_options(objective):
    """Clamping after each D step (G then reads a clamped D), or the usual sign: other
    parameters than main.py's."""
    ours, theirs, *_ = _authors_run(False, 30, 1, objective, lr=1e-2)
    pairs = zip(ours[0].parameters(), theirs[0].parameters(), strict=True)
    assert max((p - q).abs().max().item() for p, q in pairs) > 1e-6


@given(st.one_of(st.integers().filter(lambda v: v not in (1, -1)), st.booleans(), st.none(),
                 st.text(max_size=3), st.floats()))  # fmt: skip
def test_wgan_sign_is_1_or_minus_1(sign):
    if isinstance(sign, float) and sign in (1.0, -1.0):
        assert WGAN(sign=sign).sign == int(sign)
        return
    with pytest.raises(ValueError, match="wgan sign must be 1 .* or -1"):
        WGAN(sign=sign)


@given(st.one_of(st.text(max_size=8).filter(lambda v: v not in ("after", "before")),
                 st.none(), st.integers(), st.booleans()))  # fmt: skip
def test_wgan_clamp_at_is_after_or_before(clamp_at):
    with pytest.raises(ValueError, match=r"wgan clamp_at must be one of \('after', 'before'\)"):
        WGAN(clamp_at=clamp_at)


def test_wgans_repr_names_the_authors_options():
    assert repr(AUTHORS) == "WGAN(clip=0.01, sign=-1, clamp_at='before')"
    assert repr(WGAN()) == "WGAN(clip=0.01)"


def _batch_mean_step(objective, **options):
    torch.manual_seed(0)
    G, D = nn.Linear(Z_DIM, X_DIM).double(), BatchMeanD(nn.Linear(X_DIM, 1).double())
    opts = torch.optim.SGD(G.parameters(), lr=0.1), torch.optim.SGD(D.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(1)
    latent = lambda n: torch.randn(n, Z_DIM, dtype=torch.float64, generator=gen)  # noqa: E731
    return Step(G, D, *opts, objective=objective, latent=latent, **options)


class PenalizedWasserstein(Wasserstein):
    """The Wasserstein losses with a penalty of a user's own on D's loss forwards."""

    name = "penalized"
    penalty_at = "loss_forwards"

    def penalty_on_outputs(self, real, real_out, fake, fake_out):
        return real_out.sum() * 0


@pytest.mark.parametrize(
    ("objective", "options", "match"),
    [
        (WGANGP(), {"schedule": "d_first"}, "one number for the whole batch: return D's scores"),
        (PenalizedWasserstein(), {"schedule": "d_first"}, "one number for the whole batch"),
        ("hinge", {"schedule": "d_first"}, "one number for the whole batch: return D's scores"),
        ("wgan", {"schedule": "d_first", "concat": True}, "D returns a number for the whole"),
        ("wgan", {"schedule": "d_first", "concat": "joint"}, "batch mean is called on each"),
        ("wgan", {"schedule": simultaneous(fused=True)}, "D returns a number for the whole"),
        (
            "wgan",
            {"schedule": simultaneous(fused=True), "d_profile": {"mixing": False}},
            "rescales G's gradient per fake sample",
        ),
    ],
)
def test_a_d_returning_its_batch_mean_is_refused_where_its_mean_is_not_enough(
    objective, options, match
):
    step = _batch_mean_step(objective, **options)
    with pytest.raises(ValueError, match=match):
        step(real_batches(1)[0])


def test_a_d_returning_its_batch_mean_equals_the_mean_of_its_scores():
    """WGAN reads a batch-mean D's one number as the mean of the scores it averaged:
    the same step as on the D that returns them (concat="auto" keeps its calls apart)."""
    a = _batch_mean_step("wgan", schedule="d_first", concat="auto")
    b = _batch_mean_step("wgan", schedule="d_first")
    b.game.d.module.forward = lambda x: b.game.d.module.d(x).view(-1)
    for real in real_batches(4):
        la, lb = a(real), b(real)
        assert la["loss_d"].item() == pytest.approx(lb["loss_d"].item(), rel=1e-12)
    assert a.d_profile.mixing and "whole batch" in dict(a.d_profile.why)["mixing"]
    for p, q in zip(a.game.d.module.parameters(), b.game.d.module.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-14)
