"""PyTorch-GAN's loops of issue 52 (eriklindernoren/PyTorch-GAN, implementations/...), each
as its file is written (ganstep.reference.pytorch_gan_*), against the Step the docs show
for it, in float64: parameters, buffers and both Adams' states to 1e-12."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.wild import assert_losses, assert_same, assert_same_sides, build, run_step
from hypothesis import given
from hypothesis import strategies as st
from test_relativistic import UpG, features, hr_lr_pairs
from torch import nn

from ganstep import Step, objectives, reference, simultaneous
from ganstep.engine import views
from ganstep.tools import port


def images(count: int, n: int = 6):
    gen = torch.Generator().manual_seed(5)
    return [torch.rand(n, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


def srgan_d() -> nn.Module:
    """srgan.py's Discriminator in small: conv blocks with BatchNorm, a 1x4x4 map of
    scores per image (its convs before BatchNorm have no bias here: their gradients are
    rounding noise under BatchNorm, see helpers.wild.TOLERANCE)."""
    return nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 4, 3, 2, 1, bias=False), nn.BatchNorm2d(4), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 1, 3, 1, 1))  # fmt: skip


def srgan_step(side, fe) -> Step:
    """The documented options that make srgan.py (docs/loops.md, SRGAN); d_forwards="loop"
    for its BatchNorm D's running statistics (the parameters equal without it)."""
    content = lambda v: F.l1_loss(fe(v.fake.x), fe(v.real.x).detach())  # noqa: E731
    return Step(*side, objective="lsgan", schedule=simultaneous(), latent=None,
                condition="real", d_conditional=False, g_scale=2e-3,
                g_terms={"content": content}, d_forwards="loop")  # fmt: skip


def test_pytorch_gan_srgan_as_written_equals_simultaneous_lsgan():
    """srgan.py: G first (content + 1e-3 MSE against ones), then D on the real batch and
    the fakes of the G before its step, (MSE(real, 1) + MSE(fake, 0)) / 2: both at
    (g_t, d_t), a BatchNorm D forwarded three times as the loop does."""
    theirs, ours = build(UpG, srgan_d)
    pairs = hr_lr_pairs(4)
    fe = features()
    expected = reference.pytorch_gan_srgan(*theirs, pairs, fe)
    got = run_step(srgan_step(ours, fe), pairs)
    assert_losses(got, expected, ("loss_d", "loss_g", "content"))
    assert_same_sides(ours, theirs)  # parameters, BatchNorm statistics, Adam states


def test_srgan_is_not_the_d_first_order():
    """The check can fail: D stepping before G's loss (d_first) is another update."""

    from ganstep import d_first

    theirs, ours = build(UpG, srgan_d)
    pairs = hr_lr_pairs(3)
    fe = features()
    reference.pytorch_gan_srgan(*theirs, pairs, fe)
    step = srgan_step(ours, fe)
    step = Step(*ours, objective="lsgan", schedule=d_first(), latent=None, condition="real",
                d_conditional=False, g_scale=2e-3, g_terms=step.game.options.g_terms)  # fmt: skip
    run_step(step, pairs)
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)
    assert torch.isfinite(ours[0].net[1].weight).all()


# --- DRAGAN: a penalty of the user's own, D's step on it alone ---------------------------


class DraganG(nn.Module):
    """dragan.py's Generator in small: Linear, BatchNorm, upsampling convs, Tanh."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(4, 8 * 4 * 4)
        self.conv = nn.Sequential(nn.BatchNorm2d(8), nn.Upsample(scale_factor=2),
                                  nn.Conv2d(8, 1, 3, 1, 1), nn.Tanh())  # fmt: skip

    def forward(self, z):
        return self.conv(self.l1(z).view(z.shape[0], 8, 4, 4))


class DraganD(nn.Module):
    """dragan.py's Discriminator in small: strided convs, LeakyReLU, Dropout2d(0.25),
    BatchNorm after the first block, a Linear and a Sigmoid."""

    def __init__(self) -> None:
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(1, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Dropout2d(0.25),
            nn.Conv2d(4, 8, 3, 2, 1), nn.LeakyReLU(0.2), nn.Dropout2d(0.25),
            nn.BatchNorm2d(8, 0.8),
        )  # fmt: skip
        self.adv_layer = nn.Sequential(nn.Linear(8 * 2 * 2, 1), nn.Sigmoid())

    def forward(self, img):
        return self.adv_layer(self.model(img).view(img.shape[0], -1))


class DRAGAN(objectives.NS):
    """ns on D's probabilities with dragan.py's penalty: what docs/guide/objectives.md
    shows for a penalty of one's own (its draws from the caller's numpy stream)."""

    def __init__(self, rng, weight: float = 10.0) -> None:
        super().__init__(probabilities=True)
        self.rng, self.weight = rng, weight

    def penalty(self, D, real, fake):
        X = real.detach()
        alpha = torch.from_numpy(self.rng.random(size=X.shape)).to(X)
        noise = 0.5 * X.std() * torch.rand(X.size())
        x = (alpha * X + (1 - alpha) * (X + noise)).requires_grad_(True)
        out = D(x)
        (grad,) = torch.autograd.grad(out, x, torch.ones_like(out), create_graph=True)
        return self.weight * ((grad.norm(2, dim=1) - 1) ** 2).mean()


def test_pytorch_gan_dragan_as_written_equals_simultaneous_with_its_penalty_alone():
    """dragan.py: G first; D forwarded on the real batch and the old fakes (Dropout2d's
    draws and BatchNorm's statistics advance), its step on the penalty alone
    (d_scale=0); z and alpha from one numpy stream, the penalty's noise and the
    dropout masks from torch's."""
    theirs, ours = build(DraganG, DraganD)
    batches = images(4)
    torch.manual_seed(11)
    expected = reference.pytorch_gan_dragan(*theirs, batches, np.random.RandomState(3),
                                            latent_dim=4)  # fmt: skip
    ours_rng = np.random.RandomState(3)  # the Step's numpy stream: z, then alpha
    latent = lambda n: torch.from_numpy(ours_rng.normal(0, 1, (n, 4)))  # noqa: E731
    step = Step(*ours, objective=DRAGAN(ours_rng), schedule=simultaneous(), latent=latent,
                d_scale=0.0)  # fmt: skip
    torch.manual_seed(11)
    got = run_step(step, batches)
    assert_losses(got, expected, ("loss_g", "gp"))
    assert_same_sides(ours, theirs)
    assert all(row["loss_d"] == row["gp"] for row in got)  # L_D is the penalty alone


# --- WGAN-div: a penalty read from D's loss forwards --------------------------------------


class WGANDiv(objectives.Wasserstein):
    """wgan_div.py's objective as docs/guide/objectives.md writes it: the Wasserstein
    losses and the W-div penalty on D's gradients at the real and fake samples, read
    from the loss forwards (no D forward of its own)."""

    name = "wgan_div"
    penalty_at = "loss_forwards"

    def __init__(self, k: float = 2.0, p: float = 6.0) -> None:
        self.k, self.p = k, p

    def penalty_on_outputs(self, real, real_out, fake, fake_out):
        norms = []
        for x, out in ((real, real_out), (fake, fake_out)):
            (grad,) = torch.autograd.grad(out, x, torch.ones_like(out), create_graph=True)
            norms.append(grad.reshape(grad.shape[0], -1).pow(2).sum(1) ** (self.p / 2))
        return torch.mean(norms[0] + norms[1]) * self.k / 2


def wgan_div_d(dropout: bool) -> nn.Module:
    """wgan_div.py's Discriminator in small (an MLP); with ``dropout`` an impure one, to
    show the penalty reads the very forwards of the loss."""
    drop = nn.Dropout(0.3) if dropout else nn.Identity()
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.LeakyReLU(0.2), drop, nn.Linear(8, 1))


class WganDivG(nn.Module):
    """wgan_div.py's Generator in small: Linear blocks with BatchNorm1d(0.8), Tanh."""

    def __init__(self) -> None:
        super().__init__()
        self.model = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8),
                                   nn.BatchNorm1d(8, 0.8), nn.LeakyReLU(0.2), nn.Linear(8, 16),
                                   nn.Tanh())  # fmt: skip

    def forward(self, z):
        return self.model(z).view(z.shape[0], 1, 4, 4)


def small_images(count: int, n: int = 6):
    gen = torch.Generator().manual_seed(7)
    return [torch.rand(n, 1, 4, 4, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


def wgan_div_run(dropout: bool, objective, batches):
    from helpers.wild import numpy_normal

    from ganstep import d_first

    theirs, ours = build(WganDivG, lambda: wgan_div_d(dropout))
    latent, rng = numpy_normal(6, 4)
    torch.manual_seed(12)
    expected = reference.pytorch_gan_wgan_div(*theirs, batches, rng, latent_dim=4, n_critic=2)
    step = Step(*ours, objective=objective, latent=latent,
                schedule=d_first(g_every=2, reuse_fake=False, reuse_z=True))  # fmt: skip
    torch.manual_seed(12)
    return theirs, ours, expected, run_step(step, batches)


# the objective as the docs write it, and as `ganstep audit --port` prints it
WGAN_DIVS = {"docs": WGANDiv, "port": lambda: port.printed_objective("WGANDiv")(k=2, p=6)}


@pytest.mark.parametrize("written", ["docs", "port"])
@pytest.mark.parametrize("dropout", [False, True], ids=["pure_d", "dropout_d"])
def test_pytorch_gan_wgan_div_as_written_equals_d_first_with_a_penalty_on_its_forwards(
    dropout, written
):
    """wgan_div.py: D's step reads its W-div penalty off the D(real) and D(fake) forwards
    of its loss (the fakes in G's graph, the reals requiring grad); G every n_critic-th
    batch on the same z, forwarded again. Equal for a D with Dropout too: the penalty
    reads the very forwards whose masks the loss used. The same for the class the
    audit's port prints."""
    theirs, ours, expected, got = wgan_div_run(dropout, WGAN_DIVS[written](), small_images(5))
    assert [sorted(r) for r in got] == [sorted(r) for r in expected]
    assert_losses(got[::2], expected[::2], ("loss_d", "loss_g", "gp"))
    assert_same_sides(ours, theirs)  # G's BatchNorm statistics: forwarded twice on G steps


def test_wgan_div_penalty_on_forwards_of_its_own_is_another_update():
    """The check can fail: the same penalty on D forwards of its own (penalty_at
    "after") draws other Dropout masks than the loss forwards did."""

    class OwnForwards(WGANDiv):
        penalty_at = "after"

        def penalty(self, D, real, fake):
            real, fake = real.detach().requires_grad_(True), fake.requires_grad_(True)
            return self.penalty_on_outputs(real, D(real), fake, D(fake))

    theirs, ours, _, got = wgan_div_run(True, OwnForwards(), small_images(3))
    assert "gp" in got[0]
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)


# --- relativistic_gan: G's phase as written (D three times, the last loss kept) -----------


class RelativisticD(DraganD):
    """relativistic_gan.py's Discriminator in small: dragan.py's blocks (a strided conv,
    LeakyReLU, Dropout2d(0.25), BatchNorm2d(eps=0.8)), then a Linear with no Sigmoid.
    A relativistic D loss reads score differences, so a bias added to every score has a
    gradient that is zero in arithmetic and rounding noise in floating point, which Adam
    turns into steps of size lr (helpers.wild.TOLERANCE: 9e-11 on the BatchNorm's shift
    with --rel_avg_gan): here the Linear has no bias and the last BatchNorm's shift does
    not train."""

    def __init__(self) -> None:
        super().__init__()
        self.model[6].bias.requires_grad_(False)
        self.adv_layer = nn.Linear(8 * 2 * 2, 1, bias=False)


def plain_g(relativistic: type) -> objectives.Objective:
    """The script's objective: a relativistic D loss, and ns's L_G (the line that
    overwrites the relativistic one), so L_G reads no real scores."""

    class PlainG(relativistic):
        g_needs_real = False

        def g_loss(self, fake, real=None):
            return F.softplus(-fake).mean(), {}

    return PlainG()


@pytest.mark.parametrize("printed", [False, True], ids=["docs", "port"])
@pytest.mark.parametrize("rel_avg_gan, relativistic",
                         [(False, objectives.RSGAN), (True, objectives.RaSGAN)],
                         ids=["rsgan", "rel_avg_gan"])  # fmt: skip
def test_pytorch_gan_relativistic_as_written_equals_simultaneous_with_its_g_forwards(
    rel_avg_gan, relativistic, printed
):
    """relativistic_gan.py: G's step forwards D on the real batch, on the fakes, and on
    the fakes again for the loss it keeps (Dropout2d masks and BatchNorm statistics
    advance three times); D's step on the real batch and the fakes of the G before its
    step, relativistic. The same for the class the audit's port prints."""
    objective = plain_g(relativistic)
    if printed:
        objective = port.printed_objective(f"{relativistic.__name__}PlainG")()
    theirs, ours = build(DraganG, RelativisticD)
    batches = images(4)
    torch.manual_seed(11)
    rng = np.random.RandomState(3)
    expected = reference.pytorch_gan_relativistic(*theirs, batches, rng, latent_dim=4,
                                                  rel_avg_gan=rel_avg_gan)  # fmt: skip
    rng = np.random.RandomState(3)
    latent = lambda n: torch.from_numpy(rng.normal(0, 1, (n, 4)))  # noqa: E731
    step = Step(*ours, objective=objective, schedule=simultaneous(), latent=latent,
                g_forwards=("real", "fake", "fake"))  # fmt: skip
    torch.manual_seed(11)
    got = run_step(step, batches)
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)
    assert ours[1].model[6].num_batches_tracked.item() == 5 * len(batches)


def test_relativistic_gan_without_its_thrown_away_forwards_is_another_update():
    """The check can fail: G's phase with D on the fakes alone (what L_G reads) draws
    other Dropout2d masks for every later forward."""
    theirs, ours = build(DraganG, RelativisticD)
    batches = images(3)
    torch.manual_seed(11)
    reference.pytorch_gan_relativistic(*theirs, batches, np.random.RandomState(3), latent_dim=4)
    rng = np.random.RandomState(3)
    latent = lambda n: torch.from_numpy(rng.normal(0, 1, (n, 4)))  # noqa: E731
    step = Step(*ours, objective=plain_g(objectives.RSGAN), schedule=simultaneous(),
                latent=latent)  # fmt: skip
    torch.manual_seed(11)
    run_step(step, batches)
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)


def test_g_forwards_is_checked():
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    opts = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    for bad, error in ((("real",), 'needs a "fake"'), (("fake", "twice"), "only, got 'twice'"),
                       ("fake", "must be a tuple"), ((), 'needs a "fake"')):  # fmt: skip
        with pytest.raises((ValueError, TypeError), match=error):
            Step(G, D, *opts, objective="ns", schedule="d_first", latent=torch.randn,
                 g_forwards=bad)  # fmt: skip
    with pytest.raises(ValueError, match='needs a "real" forward'):
        Step(G, D, *opts, objective="rsgan", schedule="d_first", latent=torch.randn,
             g_forwards=("fake",))  # fmt: skip
    with pytest.raises(ValueError, match="fused"):
        fused = Step(G, D, *opts, objective="ns", schedule=simultaneous(fused=True),
                     latent=lambda n: torch.randn(n, 2), g_forwards=("fake", "fake"))  # fmt: skip
        fused(torch.randn(4, 2))


# --- StarGAN: a tuple condition into G, numpy's alpha, terms on D's class head -----------

C_DIM = 3


class StarG(nn.Module):
    """stargan's GeneratorResNet in small: the target labels tiled next to the image,
    a conv, InstanceNorm2d(affine, track_running_stats), ReLU, a conv, Tanh. The conv
    before the InstanceNorm has no bias (its gradient is zero in arithmetic)."""

    def __init__(self) -> None:
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(1 + C_DIM, 4, 3, 1, 1, bias=False),
                                   nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
                                   nn.ReLU(), nn.Conv2d(4, 1, 3, 1, 1), nn.Tanh())  # fmt: skip

    def forward(self, x, c):
        c = c.view(c.size(0), c.size(1), 1, 1).repeat(1, 1, x.size(2), x.size(3))
        return self.model(torch.cat((x, c), 1))


class StarD(nn.Module):
    """stargan's Discriminator in small: strided convs with LeakyReLU(0.01), a PatchGAN
    map (out1) and the class logits (out2, flattened), both without bias."""

    def __init__(self) -> None:
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1), nn.LeakyReLU(0.01),
                                   nn.Conv2d(4, 8, 4, 2, 1), nn.LeakyReLU(0.01))  # fmt: skip
        self.out1 = nn.Conv2d(8, 1, 3, padding=1, bias=False)
        self.out2 = nn.Conv2d(8, C_DIM, 2, bias=False)

    def forward(self, img):
        h = self.model(img)
        out_cls = self.out2(h)
        return self.out1(h), out_cls.view(out_cls.size(0), -1)


def criterion_cls(logit, target):
    return F.binary_cross_entropy_with_logits(logit, target, reduction="sum") / logit.size(0)


def stargan_step(side, rng, n_critic: int) -> Step:
    """What docs/loops.md shows for stargan.py: the condition (imgs, sampled_c)
    unpacked into G, the real labels an extra of the batch, numpy's alpha."""
    from ganstep import d_first

    G = side[0]
    alpha = lambda shape: torch.from_numpy(rng.random(shape))  # noqa: E731
    rec = lambda v: F.l1_loss(G(v.fake.x, v.real.extra["labels"]), v.real.x)  # noqa: E731
    return Step(*side, objective=objectives.WGANGP(10.0, alpha=alpha), latent=None,
                schedule=d_first(g_every=n_critic, reuse_fake=False, reuse_z=True),
                condition="real", d_conditional=False,
                d_terms={"d_cls": lambda v: criterion_cls(v.d_real[1], v.real.extra["labels"])},
                g_terms={"g_cls": lambda v: criterion_cls(v.d_fake[1], v.fake.c[1]),
                         "rec": (10.0, rec)})  # fmt: skip


def attribute_batches(count: int, n: int = 6):
    gen = torch.Generator().manual_seed(9)
    return [(torch.rand(n, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1,
             torch.randint(0, 2, (n, C_DIM), generator=gen).double())
            for _ in range(count)]  # fmt: skip


def test_pytorch_gan_stargan_as_written_equals_d_first_with_a_tuple_condition():
    """stargan.py: target labels from numpy, G(imgs, sampled_c) forwarded for D's step
    and again for G's (InstanceNorm's running statistics advance each time), WGAN-GP
    with numpy's alpha after D's two forwards, the class terms on D's second head, the
    reconstruction G(gen_imgs, labels); G every n_critic-th batch."""
    theirs, ours = build(StarG, StarD)
    batches = attribute_batches(5)
    expected = reference.pytorch_gan_stargan(*theirs, batches, np.random.RandomState(4),
                                             c_dim=C_DIM, n_critic=2)  # fmt: skip
    rng = np.random.RandomState(4)  # the script's np.random: sampled_c, then alpha
    step = stargan_step(ours, rng, n_critic=2)
    got = []
    for imgs, labels in batches:
        sampled_c = torch.from_numpy(rng.randint(0, 2, (imgs.size(0), C_DIM))).double()
        logs = step({"x": imgs, "c": (imgs, sampled_c), "labels": labels})
        got.append({k: v.item() for k, v in logs.items()})
    assert_losses(got, expected, ("loss_d", "gp", "d_cls"))
    assert_losses(got[::2], expected[::2], ("loss_g", "g_cls", "rec"))
    assert_same_sides(ours, theirs)  # G's InstanceNorm statistics too


# --- BGAN: the boundary-seeking G loss --------------------------------------------------


def bgan_sides():
    """bgan.py's Generator and Discriminator in small: Linear blocks, a Sigmoid out."""
    return build(lambda: nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 64),
                                       nn.Tanh(), nn.Unflatten(1, (1, 8, 8))),
                 lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.LeakyReLU(0.2),
                                       nn.Linear(16, 1), nn.Sigmoid()))  # fmt: skip


def test_bgan_py_equals_simultaneous_with_bgan():
    theirs, ours = bgan_sides()
    batches = images(4)
    expected = reference.pytorch_gan_bgan(*theirs, batches, np.random.RandomState(0),
                                          latent_dim=4)  # fmt: skip
    rng = np.random.RandomState(0)
    latent = lambda n: torch.from_numpy(rng.normal(0, 1, (n, 4)))  # noqa: E731
    step = Step(*ours, objective=objectives.BGAN(probabilities=True), schedule=simultaneous(),
                latent=latent, d_scale=0.5)  # fmt: skip
    got = run_step(step, batches)
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)


def test_bgans_g_loss_on_logits_is_half_the_mean_square():
    """log sigmoid(s) - log(1 - sigmoid(s)) = s: on logits L_G is 0.5 mean(s^2), the
    probabilities' form to rounding; L_D is NS's."""
    s = torch.linspace(-6, 6, 25, dtype=torch.float64)
    on_logits, _ = objectives.BGAN().g_loss(s)
    on_probabilities, _ = objectives.BGAN(probabilities=True).g_loss(torch.sigmoid(s))
    assert on_logits.item() == pytest.approx(0.5 * (s**2).mean().item(), rel=1e-15)
    assert on_probabilities.item() == pytest.approx(on_logits.item(), rel=1e-9)
    r = torch.randn(7, dtype=torch.float64)
    assert torch.equal(objectives.BGAN().d_loss(r, s[:7])[0], objectives.NS().d_loss(r, s[:7])[0])


def test_bgans_fused_slopes_are_its_losses_derivatives():
    """The fused step rescales D's gradient at each fake by h_G'(s) / h_D'(s)."""
    s = torch.linspace(-5, 5, 11, dtype=torch.float64, requires_grad=True)
    objective = objectives.BGAN()
    (h_g,) = torch.autograd.grad(objective.g_loss(s)[0] * s.numel(), s)
    (h_d,) = torch.autograd.grad(torch.nn.functional.softplus(s).sum(), s)
    d_slope, ratio = objective.fake_slopes(s.detach())
    torch.testing.assert_close(d_slope, h_d)
    torch.testing.assert_close(ratio, h_g / h_d)


# --- EBGAN: an autoencoder D, a hinge on the fakes' mean energy, the pulling-away term --


class EbganG(nn.Module):
    """ebgan.py's Generator in small: a Linear, upsampling convs with BatchNorm, Tanh."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(4, 8 * 4 * 4)
        self.conv_blocks = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(8, 8, 3, 1, 1),
                                         nn.BatchNorm2d(8, 0.8), nn.LeakyReLU(0.2),
                                         nn.Conv2d(8, 1, 3, 1, 1), nn.Tanh())  # fmt: skip

    def forward(self, noise):
        return self.conv_blocks(self.l1(noise).view(noise.shape[0], 8, 4, 4))


class EbganD(nn.Module):
    """ebgan.py's Discriminator in small: a strided conv down, a Linear embedding, fully
    connected layers with BatchNorm1d, a conv up; it returns ``(out, embedding)``."""

    def __init__(self, up_bias: float | None = None) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1), nn.ReLU())
        self.embedding = nn.Linear(4 * 4 * 4, 8)
        self.fc = nn.Sequential(nn.BatchNorm1d(8, 0.8), nn.ReLU(), nn.Linear(8, 64),
                                nn.BatchNorm1d(64), nn.ReLU())  # fmt: skip
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(4, 1, 3, 1, 1))
        if up_bias is not None:  # reconstructions far off: the fakes' energy above the margin
            nn.init.constant_(self.up[1].bias, up_bias)

    def forward(self, img):
        out = self.down(img)
        embedding = self.embedding(out.view(out.size(0), -1))
        out = self.fc(embedding)
        out = self.up(out.view(out.size(0), 4, 4, 4))
        return out, embedding


def ebgan_step(side, rng, **options) -> Step:
    """The Step docs/guide/objectives.md shows for ebgan.py (margin max(1, opt.batch_size
    / 64) = 1 at its default 64); d_forwards="loop" for its BatchNorm D's running
    statistics (the parameters equal without it)."""
    latent = lambda n: torch.from_numpy(rng.normal(0, 1, (n, 4)))  # noqa: E731
    return Step(*side, objective=objectives.EBGAN(1.0, detach_target=True),
                schedule=simultaneous(), latent=latent,
                g_terms={"pt": (0.1, views.pull_away())}, d_forwards="loop",
                **options)  # fmt: skip


@pytest.mark.parametrize("up_bias", [None, 3.0], ids=["hinge_on", "hinge_off"])
def test_ebgan_py_equals_simultaneous_ebgan_with_the_pulling_away_term(up_bias):
    """ebgan.py: G's step on the reconstruction of its fakes (their target detached) and
    0.1 times the pulling-away term on D's embeddings; then D's on the real batch and
    gen_imgs.detach(), the hinge added where the fakes' energy is under the margin (with
    D's reconstructions far off, as an up-conv bias of 3 makes them, it is not)."""
    theirs, ours = build(EbganG, lambda: EbganD(up_bias))
    batches = images(4)
    expected = reference.pytorch_gan_ebgan(*theirs, batches, np.random.RandomState(0),
                                           latent_dim=4)  # fmt: skip
    got = run_step(ebgan_step(ours, np.random.RandomState(0)), batches)
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)  # BatchNorm statistics of both too
    energy_fake = got[0]["loss_g"] - got[0]["pt"]
    assert (energy_fake < 1.0) == (up_bias is None), energy_fake


def test_ebgan_with_the_fakes_as_the_targets_of_g_is_another_update():
    """The check can fail: without detach_target G's gradient also flows through the
    reconstruction's target (the paper's math, not ebgan.py's)."""
    theirs, ours = build(EbganG, EbganD)
    batches = images(1)
    reference.pytorch_gan_ebgan(*theirs, batches, np.random.RandomState(0), latent_dim=4)
    rng = np.random.RandomState(0)
    step = Step(*ours, objective=objectives.EBGAN(1.0), schedule=simultaneous(),
                latent=lambda n: torch.from_numpy(rng.normal(0, 1, (n, 4))),
                g_terms={"pt": (0.1, views.pull_away())}, d_forwards="loop")  # fmt: skip
    run_step(step, batches)
    assert_same(ours[1], theirs[1], exact=True)  # D's first step does not read G's gradient
    with pytest.raises(AssertionError):
        assert_same(ours[0], theirs[0], exact=True)


def test_ebgan_losses_and_pulling_away_term_by_hand():
    """L_D = mean E(x) + max(0, m - mean E(G(z))) with E the per-sample mean square error
    of D's reconstruction; the pulling-away term is the mean cosine of distinct pairs."""
    objective = objectives.EBGAN(margin=0.5)
    x = torch.randn(4, 1, 3, 3, dtype=torch.float64)
    recon = x + 0.1
    energy = objective.score(recon, x)
    assert torch.allclose(energy, torch.full((4,), 0.01, dtype=torch.float64))
    low, _ = objective.d_loss(energy, energy)
    assert low.item() == pytest.approx(0.01 + 0.49)
    high, _ = objective.d_loss(energy, energy + 1.0)
    assert high.item() == pytest.approx(0.01)
    with pytest.raises(ValueError, match="'ebgan' needs D to be an autoencoder"):
        objective.score(torch.zeros(4, 1), x)
    e = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], dtype=torch.float64)
    cosines = [0.0, 2**-0.5, 2**-0.5]  # the pairs (0, 1), (0, 2), (1, 2)
    view = views.View("g", None, None, d_fake_out=(None, e))
    assert views.pull_away()(view).item() == pytest.approx(2 * sum(cosines) / 6)
    with pytest.raises(ValueError, match="two fakes or more"):
        views.pull_away()(views.View("g", None, None, d_fake_out=(None, e[:1])))


@given(margin=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                        st.booleans(), st.none(), st.text(max_size=3)),
       detach=st.one_of(st.booleans(), st.integers(), st.none(), st.text(max_size=3)))  # fmt: skip
def test_ebgan_takes_a_finite_margin_from_0_and_a_bool_detach_target_only(margin, detach):
    number = isinstance(margin, int | float) and not isinstance(margin, bool)
    margin_ok = number and math.isfinite(margin) and margin >= 0
    if margin_ok and isinstance(detach, bool):
        objective = objectives.EBGAN(margin, detach_target=detach)
        assert objective.margin == float(margin) and objective.detach_target is detach
        return
    # the margin is checked first: not a number at all is a TypeError, a bad number and a
    # detach_target that is no bool are ValueErrors, each naming what it refuses
    expected, what = ((TypeError, "margin must be a number") if not number
                      else (ValueError, "margin must be") if not margin_ok
                      else (ValueError, "detach_target must be True or False"))  # fmt: skip
    with pytest.raises(expected, match=f"ebgan {what}"):
        objectives.EBGAN(margin, detach_target=detach)


def test_ebgan_refuses_micro_batches_and_the_fused_step():
    """Its hinge takes the fake batch's mean: micro-batches' hinges are not the batch's."""
    theirs, ours = build(EbganG, EbganD)
    with pytest.raises(ValueError, match="fake batch's mean energy"):
        ebgan_step(ours, np.random.RandomState(0), accumulate=2)
    with pytest.raises(ValueError, match="fake batch's mean energy"):
        Step(*ours, objective="ebgan", schedule=simultaneous(fused=True),
             latent=lambda n: torch.randn(n, 4, dtype=torch.float64))  # fmt: skip


# --- AAE: G an encoder, D's real batch a prior sample, the decoder in a G term ------------

AAE_LATENT = 3


def _reparameterization(rng: np.random.RandomState, mu, logvar):
    """aae.py's, its noise from ``rng`` (the script's ``np.random``) in mu's dtype."""
    std = torch.exp(logvar / 2)
    sampled_z = torch.from_numpy(rng.normal(0, 1, (mu.size(0), AAE_LATENT))).to(mu)
    return sampled_z * std + mu


class AaeEncoder(nn.Module):
    """aae.py's Encoder in small: Linear, LeakyReLU, Linear, BatchNorm1d, LeakyReLU, then
    mu and logvar heads and the reparameterization, drawing from ``rng``."""

    def __init__(self, rng: np.random.RandomState) -> None:
        super().__init__()
        self.rng = rng
        self.model = nn.Sequential(nn.Linear(16, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8),
                                   nn.BatchNorm1d(8), nn.LeakyReLU(0.2))  # fmt: skip
        self.mu, self.logvar = nn.Linear(8, AAE_LATENT), nn.Linear(8, AAE_LATENT)

    def forward(self, img):
        x = self.model(img.view(img.shape[0], -1))
        return _reparameterization(self.rng, self.mu(x), self.logvar(x))


def aae_decoder() -> nn.Module:
    """aae.py's Decoder in small: Linear blocks with BatchNorm1d, Tanh, 1x4x4 images."""
    return nn.Sequential(nn.Linear(AAE_LATENT, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8),
                         nn.BatchNorm1d(8), nn.LeakyReLU(0.2), nn.Linear(8, 16), nn.Tanh(),
                         nn.Unflatten(1, (1, 4, 4)))  # fmt: skip


def aae_d() -> nn.Module:
    """aae.py's Discriminator in small: an MLP on codes ending in a Sigmoid."""
    return nn.Sequential(nn.Linear(AAE_LATENT, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8),
                         nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())  # fmt: skip


def aae_sides(seed: int):
    """Two identical (encoder, decoder, D, optimizer_G, optimizer_D), in float64, each
    encoder drawing from a numpy stream of its own seeded ``seed``; optimizer_G holds
    the encoder's and the decoder's parameters, as aae.py's ``itertools.chain``."""
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        encoder = AaeEncoder(np.random.RandomState(seed)).double()
        decoder, D = aae_decoder().double(), aae_d().double()
        g_params = [*encoder.parameters(), *decoder.parameters()]
        sides.append((encoder, decoder, D, torch.optim.Adam(g_params, 0.01, betas=(0.5, 0.9)),
                      torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.9))))  # fmt: skip
    return sides


def aae_step(side, schedule=None) -> Step:
    """The documented Step of aae.py (docs/loops.md, AAE): G is the encoder, each real
    batch ``(prior sample, images)``, the decoder called in G's reconstruction term."""
    encoder, decoder, D, opt_g, opt_d = side
    recon = lambda v: F.l1_loss(decoder(v.fake.x), v.fake.c)  # noqa: E731
    return Step(encoder, D, opt_g, opt_d, objective=objectives.NS(probabilities=True),
                schedule=schedule or simultaneous(), latent=None, condition="real",
                d_conditional=False, g_scale=0.001, d_scale=0.5,
                g_terms={"reconstruction": (0.999, recon)})  # fmt: skip


def aae_prior(rng: np.random.RandomState, n: int):
    """The prior sample aae.py draws in D's step, made before the Step's call: the stream
    drawn past the encoder's noise (same shape, drawn first in G's step), the prior drawn,
    and the stream put back for the encoder's own draw; with the state to leave it in
    after the call, where the script's two draws leave it."""
    start = rng.get_state()
    rng.normal(0, 1, (n, AAE_LATENT))  # the encoder's noise, drawn again in its forward
    prior = torch.from_numpy(rng.normal(0, 1, (n, AAE_LATENT)))
    after = rng.get_state()
    rng.set_state(start)
    return prior, after


def aae_run(step: Step, rng: np.random.RandomState, batches) -> list[dict]:
    rows = []
    for imgs in batches:
        prior, after = aae_prior(rng, imgs.shape[0])
        rows.append({k: v.item() for k, v in step((prior, imgs)).items()})
        rng.set_state(after)
    return rows


def test_pytorch_gan_aae_as_written_equals_simultaneous_with_its_decoder_in_a_g_term():
    """aae.py: G's step on 0.001 BCE(D(codes), 1) + 0.999 L1(decoder(codes), images), its
    optimizer over the encoder and the decoder; then D on a prior sample and the codes
    detached, 0.5 (real + fake): both at (g_t, d_t), the numpy draws in the script's
    order (the encoder's noise, then the prior), BatchNorm in both G modules."""
    theirs, ours = aae_sides(seed=4)
    batches = small_images(4)
    expected = reference.pytorch_gan_aae(*theirs, batches, theirs[0].rng, AAE_LATENT)
    got = aae_run(aae_step(ours), ours[0].rng, batches)
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)  # encoder, decoder (and their BatchNorm), D, both Adams
    assert ours[0].rng.normal() == theirs[0].rng.normal()  # the streams drew alike
    torch.manual_seed(0)
    untrained = aae_decoder().double()
    assert not torch.equal(ours[1][0].weight, untrained[0].weight)  # the term stepped it


def test_aae_is_not_the_d_first_order():
    """The check can fail: D stepping before G's loss (d_first) is another update."""
    from ganstep import d_first

    theirs, ours = aae_sides(seed=4)
    batches = small_images(3)
    reference.pytorch_gan_aae(*theirs, batches, theirs[0].rng, AAE_LATENT)
    aae_run(aae_step(ours, d_first()), ours[0].rng, batches)
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)
    assert torch.isfinite(ours[0].mu.weight).all()


# --- CoGAN: coupled G and D over two domains, through modules that join them ------------

COGAN_LATENT = 4


class CoupledGenerators(nn.Module):
    """cogan.py's CoupledGenerators in small: a Linear and shared upsampling convolutions
    with BatchNorm, then a head per domain, three-channel images of 8x8."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(COGAN_LATENT, 8 * 2 * 2)
        self.shared_conv = nn.Sequential(
            nn.BatchNorm2d(8), nn.Upsample(scale_factor=2), nn.Conv2d(8, 8, 3, 1, 1),
            nn.BatchNorm2d(8, 0.8), nn.LeakyReLU(0.2), nn.Upsample(scale_factor=2),
        )  # fmt: skip

        def head() -> nn.Module:
            layers = (nn.Conv2d(8, 4, 3, 1, 1), nn.BatchNorm2d(4, 0.8), nn.LeakyReLU(0.2),
                      nn.Conv2d(4, 3, 3, 1, 1), nn.Tanh())  # fmt: skip
            return nn.Sequential(*layers)

        self.G1, self.G2 = head(), head()

    def forward(self, noise):
        img_emb = self.shared_conv(self.fc(noise).view(noise.shape[0], 8, 2, 2))
        return self.G1(img_emb), self.G2(img_emb)


class CoupledDiscriminators(nn.Module):
    """cogan.py's CoupledDiscriminators in small: shared strided convolutions (BatchNorm
    after the first, LeakyReLU and Dropout2d(0.25) after each) run on each domain's
    image in turn, then a Linear head per domain."""

    def __init__(self) -> None:
        super().__init__()
        self.shared_conv = nn.Sequential(
            nn.Conv2d(3, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Dropout2d(0.25),
            nn.Conv2d(4, 8, 3, 2, 1), nn.BatchNorm2d(8, 0.8), nn.LeakyReLU(0.2),
            nn.Dropout2d(0.25),
        )  # fmt: skip
        self.D1, self.D2 = nn.Linear(8 * 2 * 2, 1), nn.Linear(8 * 2 * 2, 1)

    def forward(self, img1, img2):
        validity1 = self.D1(self.shared_conv(img1).view(img1.shape[0], -1))
        return validity1, self.D2(self.shared_conv(img2).view(img2.shape[0], -1))


class BothDomains(nn.Module):
    """The Step's G: the coupled generators' two images joined along the channels."""

    def __init__(self, coupled: nn.Module) -> None:
        super().__init__()
        self.coupled = coupled

    def forward(self, z):
        return torch.cat(self.coupled(z), 1)


class EachDomain(nn.Module):
    """The Step's D: the coupled discriminators on each domain's channels, in the
    script's order, their two scores per sample side by side (a map: ``d_map=True``)."""

    def __init__(self, coupled: nn.Module) -> None:
        super().__init__()
        self.coupled = coupled

    def forward(self, x):
        return torch.cat(self.coupled(x[:, :3], x[:, 3:]), 1)


def domain_pairs(count: int):
    """(imgs1, imgs2) pairs: grey 1x8x8 images (MNIST's, expanded by the script) and
    three-channel ones (MNIST-M's)."""
    gen = torch.Generator().manual_seed(9)
    return [(torch.rand(6, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1,
             torch.rand(6, 3, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1)
            for _ in range(count)]  # fmt: skip


def cogan_run(d_forwards: str = "loop"):
    """cogan.py and its Step from identical sides, torch's generator (D's Dropout2d) and
    numpy's (z) seeded alike for each: both sides, the Step's logs and the script's."""
    theirs, ours = build(CoupledGenerators, CoupledDiscriminators)
    pairs = domain_pairs(4)
    torch.manual_seed(13)
    expected = reference.pytorch_gan_cogan(*theirs, pairs, np.random.RandomState(2),
                                           COGAN_LATENT)  # fmt: skip
    rng = np.random.RandomState(2)
    G, D, opt_g, opt_d = ours
    step = Step(BothDomains(G), EachDomain(D), opt_g, opt_d, objective="lsgan",
                schedule=simultaneous(), d_map=True, g_scale=2.0, d_forwards=d_forwards,
                latent=lambda n: torch.from_numpy(rng.normal(0, 1, (n, COGAN_LATENT))))  # fmt: skip
    torch.manual_seed(13)
    joined = [torch.cat((imgs1.expand(-1, 3, -1, -1), imgs2), 1) for imgs1, imgs2 in pairs]
    return theirs, ours, expected, run_step(step, joined)


def test_pytorch_gan_cogan_as_written_equals_simultaneous_lsgan_over_both_domains():
    """cogan.py: G first on (MSE(D1, 1) + MSE(D2, 1)) / 2 of the coupled fakes, then D on
    both real images and both fakes detached, its four MSEs' mean: both at (g_t, d_t). D's
    shared convolutions (BatchNorm, Dropout2d) run on each domain in turn in each of its
    three calls, as the script's: statistics and masks alike with d_forwards="loop"."""
    theirs, ours, expected, got = cogan_run()
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)  # parameters, BatchNorm statistics, Adam states


def test_cogan_with_ds_forwards_merged_is_another_update():
    """The check can fail: merged, D's forwards draw other Dropout2d masks (and move its
    statistics otherwise) than the script's three calls."""
    theirs, ours, _, _ = cogan_run(d_forwards="merged")
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)


def test_aae_with_its_prior_drawn_before_the_encoders_noise_parts():
    """Why aae_prior hands the encoder's draw back: the script draws the encoder's noise,
    then the prior, from one stream; a Step given a prior drawn first (other values for
    both) does not equal it."""
    theirs, ours = aae_sides(seed=4)
    batches = small_images(3)
    reference.pytorch_gan_aae(*theirs, batches, theirs[0].rng, AAE_LATENT)
    step = aae_step(ours)
    for imgs in batches:
        step((torch.from_numpy(ours[0].rng.normal(0, 1, (imgs.shape[0], AAE_LATENT))), imgs))
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)


# --- PixelDA: a source image and noise in, the task classifier trained beside G ---------

PIXELDA_LATENT, PIXELDA_CLASSES, PIXELDA_PATCH = 3, 4, (1, 2, 2)


class PixeldaG(nn.Module):
    """pixelda.py's Generator in small: noise through a Linear to an image's shape, joined
    to the source image along the channels, a convolution, a residual block with
    BatchNorm, a convolution and Tanh; called ``generator(img, z)``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(PIXELDA_LATENT, 3 * 8 * 8)
        self.l1 = nn.Sequential(nn.Conv2d(6, 4, 3, 1, 1), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(4, 4, 3, 1, 1), nn.BatchNorm2d(4), nn.ReLU(),
                                   nn.Conv2d(4, 4, 3, 1, 1), nn.BatchNorm2d(4))  # fmt: skip
        self.l2 = nn.Sequential(nn.Conv2d(4, 3, 3, 1, 1), nn.Tanh())

    def forward(self, img, z):
        out = self.l1(torch.cat((img, self.fc(z).view(*img.shape)), 1))
        return self.l2(out + self.block(out))


def pixelda_convs() -> list[nn.Module]:
    """pixelda.py's blocks of D and of the classifier in small: strided convolutions,
    LeakyReLU, InstanceNorm after all but the first; 8x8 to 2x2."""
    return [nn.Conv2d(3, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(4, 8, 3, 2, 1),
            nn.LeakyReLU(0.2), nn.InstanceNorm2d(8)]  # fmt: skip


def pixelda_d() -> nn.Module:
    """pixelda.py's PatchGAN Discriminator in small: a 1x2x2 map per image."""
    return nn.Sequential(*pixelda_convs(), nn.Conv2d(8, 1, 3, 1, 1))


def pixelda_classifier() -> nn.Module:
    """pixelda.py's Classifier in small: its blocks, a Linear and a Softmax, whose output
    the script gives CrossEntropyLoss (softmax twice, as written; its implicit dim is 1)."""
    return nn.Sequential(*pixelda_convs(), nn.Flatten(), nn.Linear(8 * 2 * 2, PIXELDA_CLASSES),
                         nn.Softmax(dim=1))  # fmt: skip


def pixelda_sides():
    """Two identical (generator, classifier, D, optimizer_G, optimizer_D) in float64;
    optimizer_G holds the generator's and the classifier's parameters, as pixelda.py's
    ``itertools.chain``."""
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        G, classifier, D = PixeldaG().double(), pixelda_classifier().double(), pixelda_d().double()
        g_params = [*G.parameters(), *classifier.parameters()]
        sides.append((G, classifier, D, torch.optim.Adam(g_params, 0.01, betas=(0.5, 0.9)),
                      torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.9))))  # fmt: skip
    return sides


def pixelda_batches(count: int):
    """The two loaders zipped: ((grey source images, their labels), (target images, labels))."""
    gen = torch.Generator().manual_seed(11)

    def labelled(channels: int):
        x = torch.rand(6, channels, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1
        return x, torch.randint(PIXELDA_CLASSES, (6,), generator=gen)

    return [(labelled(1), labelled(3)) for _ in range(count)]


def pixelda_step(side, schedule=None) -> Step:
    """The documented Step of pixelda.py (docs/loops.md, PixelDA): each condition the
    source image and z, D's real batch the target images, the task loss a G term."""
    G, classifier, D, opt_g, opt_d = side

    def task(v):  # the script's task_loss_: the translated image's and the source's
        labels = v.real.extra["label"]
        return (F.cross_entropy(classifier(v.fake.x), labels)
                + F.cross_entropy(classifier(v.fake.c[0]), labels)) / 2  # fmt: skip

    return Step(G, D, opt_g, opt_d, objective="lsgan", schedule=schedule or simultaneous(),
                latent=None, condition="real", d_conditional=False, g_scale=2.0,
                g_terms={"task": (0.1, task)})  # fmt: skip


def pixelda_run(step: Step, rng: np.random.RandomState, batches) -> list[dict]:
    rows = []
    for (imgs_A, labels_A), (imgs_B, _) in batches:
        imgs_A = imgs_A.expand(-1, 3, -1, -1)
        z = torch.from_numpy(rng.uniform(-1, 1, (imgs_A.shape[0], PIXELDA_LATENT)))
        logs = step({"x": imgs_B, "c": (imgs_A, z), "label": labels_A})
        rows.append({k: v.item() for k, v in logs.items()})
    return rows


def test_pytorch_gan_pixelda_as_written_equals_simultaneous_with_its_task_term():
    """pixelda.py: G's step on MSE(D(G(imgs_A, z)), 1) + 0.1 (CE(classifier(fake), y_A) +
    CE(classifier(imgs_A), y_A)) / 2, its optimizer over G and the classifier; then D on
    the target images and the fakes detached, its two MSEs' mean: both at (g_t, d_t), z
    from numpy's uniform, BatchNorm in G, InstanceNorm in D and the classifier."""
    theirs, ours = pixelda_sides()
    batches = pixelda_batches(4)
    expected = reference.pytorch_gan_pixelda(*theirs, batches, np.random.RandomState(3),
                                             PIXELDA_LATENT, PIXELDA_PATCH)  # fmt: skip
    got = pixelda_run(pixelda_step(ours), np.random.RandomState(3), batches)
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)  # G (and its BatchNorm), the classifier, D, both Adams
    torch.manual_seed(0)
    PixeldaG()
    untrained = pixelda_classifier().double()
    assert not torch.equal(ours[1][0].weight, untrained[0].weight)  # the term stepped it


def test_pixelda_is_not_the_d_first_order():
    """The check can fail: D stepping before G's loss (d_first) is another update."""
    from ganstep import d_first

    theirs, ours = pixelda_sides()
    batches = pixelda_batches(3)
    reference.pytorch_gan_pixelda(*theirs, batches, np.random.RandomState(3), PIXELDA_LATENT,
                                  PIXELDA_PATCH)  # fmt: skip
    pixelda_run(pixelda_step(ours, d_first()), np.random.RandomState(3), batches)
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)
    assert torch.isfinite(ours[0].fc.weight).all()


def test_a_g_taking_its_condition_first_is_named_in_gs_shape_error():
    """A user giving PixelDA's G a latent and the source images as the condition: ganstep
    calls G(z, c), so z reaches G's ``img``; the shape error says so and how to give z
    (the documented Step). A G(z, c) failing on its z's width keeps the plain question."""
    G, classifier, D, opt_g, opt_d = pixelda_sides()[0]
    noise = lambda n: torch.rand(n, PIXELDA_LATENT, dtype=torch.float64)  # noqa: E731
    step = Step(G, D, opt_g, opt_d, objective="lsgan", schedule=simultaneous(), latent=noise,
                condition="real", d_conditional=False)  # fmt: skip
    (imgs_A, _), (imgs_B, _) = pixelda_batches(1)[0]
    with pytest.raises(ValueError) as raised:
        step((imgs_B, imgs_A.expand(-1, 3, -1, -1)))
    said = str(raised.value)
    assert said.startswith("G failed on z of shape (6, 3) from latent(6)")
    assert ("G's forward(img, z) names its noise 'z' after 'img', so z went to 'img'" in said
            and "condition (c, z)" in said and "docs/loops.md#pixelda" in said)  # fmt: skip
    assert "Does latent(n)" not in said

    class ZFirst(nn.Module):  # G(z, c) whose first layer expects another z width
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(5, 3 * 8 * 8)

        def forward(self, z, img):
            return torch.tanh(self.fc(z).view(*img.shape) + img)

    G2 = ZFirst().double()
    step = Step(G2, D, torch.optim.Adam(G2.parameters()), opt_d, objective="lsgan",
                schedule=simultaneous(), latent=noise, condition="real",
                d_conditional=False)  # fmt: skip
    with pytest.raises(ValueError, match=r"Does latent\(n\) return the input G takes\?"):
        step((imgs_B, imgs_A.expand(-1, 3, -1, -1)))
