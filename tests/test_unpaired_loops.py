"""PyTorch-GAN's unpaired translation loops of issue 52, DiscoGAN and DualGAN, each as
its file is written (ganstep.reference.pytorch_gan_discogan, _dualgan), against the
CycleStep the docs show for it, in float64: parameters, buffers and the Adam states
(theirs one Adam per D, ours one over both: compared parameter by parameter) to 1e-12.
Their Gs have Dropout (and DualGAN's BatchNorm), so the order of G's forwards counts."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.wild import TOLERANCE, assert_losses, assert_same
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import spectral_norm
from torch.testing import assert_close

from ganstep import reference
from ganstep.engine.cycle import CycleStep
from ganstep.engine.objectives import WGANGP

N = 4


class DiscoG(nn.Module):
    """discogan's GeneratorUNet in small: a strided conv, InstanceNorm, LeakyReLU,
    Dropout(0.5), a skip connection, a transposed conv, Tanh. The conv before the
    InstanceNorm has no bias (its gradient is zero in arithmetic)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1, bias=False), nn.InstanceNorm2d(4),
                                  nn.LeakyReLU(0.2), nn.Dropout(0.5))  # fmt: skip
        self.up = nn.Sequential(nn.ConvTranspose2d(4, 1, 4, 2, 1), nn.Tanh())

    def forward(self, x):
        return self.up(self.down(x)) + 0.1 * x


def disco_d() -> nn.Module:
    """discogan's PatchGAN Discriminator in small (InstanceNorm, LeakyReLU)."""
    return nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 8, 4, 2, 1, bias=False), nn.InstanceNorm2d(8),
                         nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3, 1, 1))  # fmt: skip


class DualG(nn.Module):
    """dualgan's U-Net Generator in small: BatchNorm2d(eps=0.8) and Dropout(0.5)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1, bias=False), nn.BatchNorm2d(4, 0.8),
                                  nn.LeakyReLU(0.2), nn.Dropout(0.5))  # fmt: skip
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(4, 1, 3, 1, 1), nn.Tanh())

    def forward(self, x):
        return self.up(self.down(x))


def dual_d() -> nn.Module:
    """dualgan's Discriminator in small: BatchNorm2d(eps=0.8) in training mode, a map
    of scores without bias (a WGAN critic's last bias has a zero gradient)."""
    return nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8, 0.8),
                         nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3, 1, 1, bias=False))  # fmt: skip


def models(make_g, make_d):
    """Theirs (G_AB, G_BA, D_A, D_B, opt_g, opt_d_a, opt_d_b) and ours as CycleStep names
    them (G_A = G_AB, G_B = G_BA, its D_A = their D_B, which judges domain B, its D_B =
    their D_A, one Adam over both Ds), from identical float64 weights."""
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        G_AB, G_BA, D_A, D_B = (
            make_g().double(),
            make_g().double(),
            make_d().double(),
            make_d().double(),
        )
        adam = lambda params: torch.optim.Adam(params, 0.01, betas=(0.5, 0.999))  # noqa: E731
        sides.append((G_AB, G_BA, D_A, D_B, adam([*G_AB.parameters(), *G_BA.parameters()]),
                      adam(D_A.parameters()), adam(D_B.parameters()),
                      adam([*D_B.parameters(), *D_A.parameters()])))  # fmt: skip
    theirs, (G_AB, G_BA, D_A, D_B, opt_g, _, _, opt_d) = sides
    return theirs[:7], (G_AB, G_BA, D_B, D_A, opt_g, opt_d)


def domains(count: int):
    gen = torch.Generator().manual_seed(4)
    return [(torch.rand(N, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1,
             torch.rand(N, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1)
            for _ in range(count)]  # fmt: skip


def assert_same_runs(theirs, ours) -> None:
    """Modules equal (buffers too), and each parameter's Adam state equal to theirs."""
    G_AB, G_BA, D_A, D_B, opt_g, opt_d_a, opt_d_b = theirs
    mine = dict(zip(("G_AB", "G_BA", "D_B", "D_A"), ours[:4], strict=True))
    for name, module in (("G_AB", G_AB), ("G_BA", G_BA), ("D_A", D_A), ("D_B", D_B)):
        assert_same(mine[name], module, exact=True)
    both = lambda a, b: [*a.parameters(), *b.parameters()]  # noqa: E731
    pairs = [(opt_g, ours[4], both(G_AB, G_BA), both(ours[0], ours[1])),
             (opt_d_a, ours[5], list(D_A.parameters()), list(ours[3].parameters())),
             (opt_d_b, ours[5], list(D_B.parameters()), list(ours[2].parameters()))]  # fmt: skip
    for opt_theirs, opt_ours, params_theirs, params_ours in pairs:
        for p, q in zip(params_theirs, params_ours, strict=True):
            for key, value in opt_theirs.state[p].items():
                assert_close(opt_ours.state[q][key], value, **TOLERANCE)


DISCO_ORDER = {"g_order": ("fake_B", "fake_A", "rec_A", "rec_B"),
               "discriminator_order": ("D_B", "D_A")}  # fmt: skip


def pixelwise(v) -> torch.Tensor:
    """DiscoGAN's pixelwise translation loss: each fake against the other domain's
    real batch, averaged."""
    return (F.l1_loss(v.fake_A, v.real_A) + F.l1_loss(v.fake_B, v.real_B)) / 2


def disco_step(ours, **order) -> CycleStep:
    return CycleStep(*ours, objective="lsgan", g_scale=1.0, cycle=0.5, identity=0.0,
                     fake_pool=None, g_terms={"pixel": pixelwise}, **order)  # fmt: skip


def test_pytorch_gan_discogan_as_written_equals_cycle_step_in_its_order():
    """discogan.py: G's forwards fake_B, fake_A, then the two reconstructions (Dropout's
    masks in that order), the pixelwise term, then each D on the fakes of the G before
    its step; both gradients at the iteration's parameters."""
    theirs, ours = models(DiscoG, disco_d)
    batches = domains(4)
    torch.manual_seed(3)
    expected = reference.pytorch_gan_discogan(*theirs, batches)
    step = disco_step(ours, **DISCO_ORDER)
    torch.manual_seed(3)
    got = [{k: v.item() for k, v in step(a, b).items()} for a, b in batches]
    renamed = [{"loss_g": e["loss_G"], "pixel": e["pixel"], "loss_d_a": e["loss_D_B"],
                "loss_d_b": e["loss_D_A"]} for e in expected]  # fmt: skip
    assert_losses(got, renamed, ("loss_g", "pixel", "loss_d_a", "loss_d_b"))
    assert_same_runs(theirs, ours)


def test_discogan_in_cyclegans_forward_order_is_another_update():
    """The check can fail: CycleGAN's order of G's forwards draws other Dropout masks."""
    theirs, ours = models(DiscoG, disco_d)
    batches = domains(3)
    torch.manual_seed(3)
    reference.pytorch_gan_discogan(*theirs, batches)
    step = disco_step(ours)
    torch.manual_seed(3)
    for a, b in batches:
        step(a, b)
    with pytest.raises(AssertionError):
        assert_same_runs(theirs, ours)


class GPFirst(WGANGP):
    """WGAN-GP whose penalty runs before D's loss forwards, as dualgan.py computes it."""

    penalty_at = "before"


def dual_step(ours, rng, n_critic: int) -> CycleStep:
    alpha = lambda shape: torch.from_numpy(rng.random(shape))  # noqa: E731
    return CycleStep(*ours, objective=GPFirst(10.0, alpha=alpha), g_scale=1.0, cycle=100.0,
                     identity=0.0, fake_pool=None, order="d_first", g_every=n_critic,
                     g_order=("fake_A", "fake_B", "rec_A", "rec_B"),
                     discriminator_order=("D_B", "D_A"))  # fmt: skip


def test_pytorch_gan_dualgan_as_written_equals_cycle_step_d_first():
    """dualgan.py: D's phase first on fakes of the iteration's G, each domain's penalty
    before its D(real), D(fake) (numpy's alpha; BatchNorm in D sees the interpolates
    first), G every n_critic-th batch with its four forwards anew."""
    theirs, ours = models(DualG, dual_d)
    batches = domains(5)
    torch.manual_seed(3)
    expected = reference.pytorch_gan_dualgan(*theirs, batches, np.random.RandomState(2),
                                             n_critic=2)  # fmt: skip
    step = dual_step(ours, np.random.RandomState(2), n_critic=2)
    torch.manual_seed(3)
    got = [{k: v.item() for k, v in step(a, b).items()} for a, b in batches]
    renamed = [{"loss_d_a": e["D_B_loss"], "loss_d_b": e["D_A_loss"], "gp_a": e["gp_B"],
                "gp_b": e["gp_A"], **({"loss_g": e["G_loss"]} if "G_loss" in e else {})}
               for e in expected]  # fmt: skip
    assert all(set(r) <= set(g) for g, r in zip(got, renamed, strict=True))
    assert_losses(got, renamed, ("loss_d_a", "loss_d_b", "gp_a", "gp_b"))
    assert_losses(got[::2], renamed[::2], ("loss_g",))
    assert "loss_g" not in got[1]
    assert_same_runs(theirs, ours)


def test_dualgan_with_its_penalty_after_the_loss_forwards_is_another_update():
    """The check can fail: WGAN-GP's penalty after D(real), D(fake) (the default) runs
    BatchNorm on the interpolates last, so its running statistics differ."""
    theirs, ours = models(DualG, dual_d)
    batches = domains(3)
    torch.manual_seed(3)
    reference.pytorch_gan_dualgan(*theirs, batches, np.random.RandomState(2), n_critic=2)
    rng = np.random.RandomState(2)
    step = dual_step(ours, rng, n_critic=2)
    step.game.options.objective.penalty_at = "after"
    torch.manual_seed(3)
    for a, b in batches:
        step(a, b)
    with pytest.raises(AssertionError):
        assert_same_runs(theirs, ours)


class ResNetG(nn.Module):
    """cyclegan.py's GeneratorResNet in small: reflection padding, a conv, InstanceNorm,
    ReLU, a strided conv down, one residual block, an upsampling conv, Tanh. No random
    draws and no running statistics: the order of G's six forwards does not count. The
    convs before an InstanceNorm have no bias (its gradient is zero in arithmetic, and
    Adam would step its rounding)."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(1, 4, 3, bias=False),
                                  nn.InstanceNorm2d(4), nn.ReLU(),
                                  nn.Conv2d(4, 4, 3, 2, 1, bias=False), nn.InstanceNorm2d(4),
                                  nn.ReLU())  # fmt: skip
        self.block = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(4, 4, 3, bias=False),
                                   nn.InstanceNorm2d(4))  # fmt: skip
        self.tail = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(4, 1, 3, 1, 1), nn.Tanh())

    def forward(self, x):
        x = self.head(x)
        return self.tail(x + self.block(x))


def patch_d() -> nn.Module:
    """cyclegan.py's PatchGAN Discriminator in small: strided convs, InstanceNorm,
    LeakyReLU, ``ZeroPad2d((1, 0, 1, 0))`` and a last conv to a map of scores (no bias
    before the InstanceNorm)."""
    return nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 8, 4, 2, 1, bias=False), nn.InstanceNorm2d(8),
                         nn.LeakyReLU(0.2),
                         nn.ZeroPad2d((1, 0, 1, 0)), nn.Conv2d(8, 1, 4, padding=1))  # fmt: skip


PYTORCH_GAN_G_ORDER = ("idt_B", "idt_A", "fake_B", "fake_A", "rec_A", "rec_B")


def cyclegan_step(ours, **order) -> CycleStep:
    """cyclegan.py's update: its GAN losses averaged (``g_scale=1``), its cycle L1s
    averaged and weighted 10 (``cycle=5``), its identity L1s averaged and weighted 5
    (``identity=0.5`` of the cycle weight), a pool of 3 past fakes per domain (its 50
    in small), domain A's D first."""
    return CycleStep(*ours, objective="lsgan", g_scale=1.0, cycle=5.0, identity=0.5,
                     fake_pool=3, **order)  # fmt: skip


def test_pytorch_gan_cyclegan_as_written_equals_cycle_step():
    """cyclegan.py: G's step (the identity forwards first; D's gradients of G's loss
    taken and zeroed before D's steps), then D_A's step on its buffer's fakes, then
    D_B's: Python's draws of the two buffers in that order."""
    theirs, ours = models(ResNetG, patch_d)
    batches = domains(4)  # 4 rows a batch: the buffers of 3 fill, then draw
    random.seed(7)
    expected = reference.pytorch_gan_cyclegan(*theirs, batches, buffer_size=3)
    step = cyclegan_step(ours, discriminator_order=("D_B", "D_A"), g_order=PYTORCH_GAN_G_ORDER)
    random.seed(7)
    got = []
    for a, b in batches:
        logs = {k: v.item() for k, v in step(a, b).items()}
        got.append({**logs, "cycle": logs["cycle_a"] + logs["cycle_b"],
                    "identity": logs["idt_a"] + logs["idt_b"]})  # fmt: skip
    renamed = [{"loss_g": e["loss_G"], "loss_d_a": e["loss_D_B"], "loss_d_b": e["loss_D_A"],
                "cycle": 10 * e["loss_cycle"], "identity": 5 * e["loss_identity"]}
               for e in expected]  # fmt: skip
    assert_losses(got, renamed, tuple(renamed[0]))
    assert_same_runs(theirs, ours)


def test_cyclegan_with_its_buffers_drawn_in_the_other_order_is_another_update():
    """The check can fail: domain B's D first (CycleStep's default, junyanz's order)
    draws the two pools' numbers in the other order, so D is shown other past fakes."""
    theirs, ours = models(ResNetG, patch_d)
    batches = domains(4)
    random.seed(7)
    reference.pytorch_gan_cyclegan(*theirs, batches, buffer_size=3)
    step = cyclegan_step(ours)
    random.seed(7)
    for a, b in batches:
        step(a, b)
    with pytest.raises(AssertionError):
        assert_same_runs(theirs, ours)


def noisy_g() -> nn.Module:
    """A G that tells its forwards' order apart: BatchNorm's running statistics and
    Dropout's masks (cyclegan.py's ResNet has neither; a user's G may)."""
    return nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Dropout(0.5), nn.Conv2d(4, 1, 3, 1, 1), nn.Tanh())  # fmt: skip


@pytest.mark.parametrize("g_order, equal", [(PYTORCH_GAN_G_ORDER, True), (None, False)])
def test_cyclegans_identity_forwards_first_with_a_g_of_state_and_draws(g_order, equal):
    """cyclegan.py runs G's identity forwards before the others; with a G whose forwards
    draw numbers and move statistics, CycleStep equals it where its g_order places them
    so, and parts from it with CycleGAN's order (identity last)."""
    theirs, ours = models(noisy_g, patch_d)
    batches = domains(3)
    random.seed(7)
    torch.manual_seed(3)
    reference.pytorch_gan_cyclegan(*theirs, batches, buffer_size=3)
    order = {} if g_order is None else {"g_order": g_order}
    step = cyclegan_step(ours, discriminator_order=("D_B", "D_A"), **order)
    random.seed(7)
    torch.manual_seed(3)
    for a, b in batches:
        step(a, b)
    if equal:
        assert_same_runs(theirs, ours)
    else:
        with pytest.raises(AssertionError):
            assert_same_runs(theirs, ours)


def test_cycle_step_orders_are_checked():
    _, ours = models(DiscoG, disco_d)
    for options, error in (({"g_every": 2}, "order='d_first'"),
                           ({"order": "g_first"}, "order must be one of"),
                           ({"g_order": ("rec_A", "fake_B", "fake_A", "rec_B")}, "after it"),
                           ({"g_order": ("fake_B", "fake_A")}, "permutation"),
                           ({"discriminator_order": ("D_A", "D_A")}, "discriminator_order"),
                           ({"g_every": 0, "order": "d_first"}, "g_every"),
                           ({"g_order": PYTORCH_GAN_G_ORDER, "identity": 0.0}, "identity=0"),
                           ({"g_order": PYTORCH_GAN_G_ORDER[1:]}, "permutation"),
                           ({"g_order": ("idt_B", "idt_A", "rec_A", "fake_B", "fake_A",
                                         "rec_B")}, "after it")):  # fmt: skip
        with pytest.raises(ValueError, match=error):
            CycleStep(*ours, **options)


# --- BicycleGAN: E steps between G's two backward passes ---------------------------------

LATENT = 3


class BicycleG(nn.Module):
    """bicyclegan's Generator in small: the code through a Linear to an image-sized map
    next to the source, a conv, BatchNorm2d(eps=0.8), LeakyReLU, a conv, Tanh."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(LATENT, 64)
        self.net = nn.Sequential(nn.Conv2d(2, 4, 3, 1, 1, bias=False),
                                 nn.BatchNorm2d(4, 0.8), nn.LeakyReLU(0.2),
                                 nn.Conv2d(4, 1, 3, 1, 1), nn.Tanh())  # fmt: skip

    def forward(self, x, z):
        return self.net(torch.cat((x, self.fc(z).view(z.size(0), 1, 8, 8)), 1))


class Encoder(nn.Module):
    """bicyclegan's Encoder in small: features, average pooling, (mu, logvar) heads."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1), nn.ReLU(), nn.AvgPool2d(4))
        self.fc_mu, self.fc_logvar = nn.Linear(4, LATENT), nn.Linear(4, LATENT)

    def forward(self, img):
        out = self.features(img).view(img.size(0), -1)
        return self.fc_mu(out), self.fc_logvar(out)


class MultiD(nn.Module):
    """bicyclegan's MultiDiscriminator in small: two scales, each a PatchGAN with
    BatchNorm2d(eps=0.8), the input average-pooled between them; a list of maps."""

    def __init__(self) -> None:
        super().__init__()
        self.models = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(1, 4, 4, 2, 1),
                nn.LeakyReLU(0.2),
                nn.Conv2d(4, 4, 3, 1, 1, bias=False),
                nn.BatchNorm2d(4, 0.8),
                nn.LeakyReLU(0.2),
                nn.Conv2d(4, 1, 3, padding=1),
            )  # fmt: skip
            for _ in range(2)
        )
        self.downsample = nn.AvgPool2d(3, stride=2, padding=[1, 1], count_include_pad=False)

    def forward(self, x):
        outputs = []
        for m in self.models:
            outputs.append(m(x))
            x = self.downsample(x)
        return outputs


def bicycle_models():
    """Theirs as bicyclegan.py builds them (four Adams) and ours for BicycleStep (one
    Adam over both Ds), from identical float64 weights."""
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        G, E, D_VAE, D_LR = (
            BicycleG().double(),
            Encoder().double(),
            MultiD().double(),
            MultiD().double(),
        )
        adam = lambda params: torch.optim.Adam(params, 0.01, betas=(0.5, 0.999))  # noqa: E731
        sides.append((G, E, D_VAE, D_LR, adam(E.parameters()), adam(G.parameters()),
                      adam(D_VAE.parameters()), adam(D_LR.parameters()),
                      adam([*D_VAE.parameters(), *D_LR.parameters()])))  # fmt: skip
    G, E, D_VAE, D_LR, opt_e, opt_g, _, _, opt_d = sides[1]
    return sides[0][:8], (G, E, D_VAE, D_LR, opt_g, opt_e, opt_d)


def test_pytorch_gan_bicyclegan_as_written_equals_bicycle_step():
    """bicyclegan.py: G and E's loss, E's step, the latent regression through the
    updated E into G's gradient, G's step; then each multi-scale D (BatchNorm) on the
    fakes of the G before its step. numpy draws the reparameterization's noise, then
    the cLR-GAN's code."""
    from ganstep.engine.bicycle import BicycleStep

    theirs, ours = bicycle_models()
    batches = domains(4)
    expected = reference.pytorch_gan_bicyclegan(*theirs, batches, np.random.RandomState(5),
                                                latent_dim=LATENT)  # fmt: skip
    rng = np.random.RandomState(5)
    step = BicycleStep(*ours, latent=lambda n: torch.from_numpy(rng.normal(0, 1, (n, LATENT))))
    got = [{k: v.item() for k, v in step(a, b).items()} for a, b in batches]
    renamed = [{"loss_g": e["loss_GE"], "pixel": 10 * e["loss_pixel"], "kl": 0.01 * e["loss_kl"],
                "latent": e["loss_latent"], "loss_d_vae": e["loss_D_VAE"],
                "loss_d_lr": e["loss_D_LR"]} for e in expected]  # fmt: skip
    assert_losses(got, renamed, tuple(renamed[0]))
    G, E, D_VAE, D_LR, opt_e, opt_g, opt_d_vae, opt_d_lr = theirs
    for mine, module in zip(ours[:4], (G, E, D_VAE, D_LR), strict=True):
        assert_same(mine, module, exact=True)
    pairs = [(opt_g, ours[4], G, ours[0]), (opt_e, ours[5], E, ours[1]),
             (opt_d_vae, ours[6], D_VAE, ours[2]), (opt_d_lr, ours[6], D_LR, ours[3])]  # fmt: skip
    for opt_theirs, opt_ours, module_theirs, module_ours in pairs:
        for p, q in zip(module_theirs.parameters(), module_ours.parameters(), strict=True):
            for key, value in opt_theirs.state[p].items():
                assert_close(opt_ours.state[q][key], value, **TOLERANCE)


def test_bicyclegan_with_the_latent_loss_through_the_old_encoder_is_another_update():
    """The check can fail: G's latent regression through E before E's step (both
    backward passes first, then both steps) is another update of G."""
    from ganstep.engine.bicycle import BicycleStep

    theirs, ours = bicycle_models()
    batches = domains(3)
    reference.pytorch_gan_bicyclegan(*theirs, batches, np.random.RandomState(5), latent_dim=LATENT)
    rng = np.random.RandomState(5)
    step = BicycleStep(*ours, latent=lambda n: torch.from_numpy(rng.normal(0, 1, (n, LATENT))))
    opt_e = ours[5]
    real_step = opt_e.step
    held = []
    opt_e.step = lambda: held.append(1)  # E's step deferred to after G's latent loss
    ours[4].register_step_pre_hook(lambda *_: real_step() if held and not held.clear() else None)
    for a, b in batches:
        step(a, b)
    with pytest.raises(AssertionError):
        assert_same(ours[0], theirs[0], exact=True)


def test_bicycle_step_arguments_are_checked():
    from ganstep.engine.bicycle import BicycleStep

    _, (G, E, D_VAE, D_LR, opt_g, opt_e, opt_d) = bicycle_models()
    latent = lambda n: torch.randn(n, LATENT, dtype=torch.float64)  # noqa: E731
    with pytest.raises(ValueError, match="opt_e must hold the parameters of E"):
        BicycleStep(G, E, D_VAE, D_LR, opt_g, opt_g, opt_d, latent=latent)
    with pytest.raises(ValueError, match="D_LR must be 4 different modules"):
        BicycleStep(G, E, D_VAE, D_VAE, opt_g, opt_e, opt_d, latent=latent)
    with pytest.raises(ValueError, match="no penalty"):
        BicycleStep(G, E, D_VAE, D_LR, opt_g, opt_e, opt_d, latent=latent, objective="wgan_gp")
    for objective in ("rsgan", "ebgan"):
        with pytest.raises(ValueError, match="reads D on the fakes alone"):
            BicycleStep(G, E, D_VAE, D_LR, opt_g, opt_e, opt_d, latent=latent,
                        objective=objective)  # fmt: skip
    with pytest.raises(TypeError, match="latent must be callable"):
        BicycleStep(G, E, D_VAE, D_LR, opt_g, opt_e, opt_d, latent=3)
    step = BicycleStep(G, E, D_VAE, D_LR, opt_g, opt_e, opt_d, latent=latent)
    a, b = domains(1)[0]
    with pytest.raises(ValueError, match="pairs each source with its target"):
        step(a, b[:2])
    with torch.no_grad(), pytest.raises(RuntimeError, match="a BicycleStep was called with "):
        step(a, b)
    with (
        torch.autocast("cpu", dtype=torch.bfloat16),
        pytest.raises(RuntimeError, match=r"a BicycleStep was called inside torch.autocast"),
    ):
        step(a, b)
    step(a, b)
    spectral_norm(next(m for m in E.modules() if isinstance(m, nn.Linear | nn.Conv2d)))
    with parametrize.cached(), pytest.raises(RuntimeError, match=r"inside torch.nn.utils.param"):
        step(a, b)  # E's weight computed once for the block, read again after E's step
    assert step.state_dict() == {"iteration": 1}


BICYCLE_OPTIONS = {"objective": "ns", "g_scale": 1.0, "d_scale": 1.0, "pixel": 1.0,
                   "latent_l1": 2.0, "kl": 0.5}  # fmt: skip


def bicycle_run(options: dict) -> list[torch.Tensor]:
    from ganstep.engine.bicycle import BicycleStep

    _, ours = bicycle_models()
    gen = torch.Generator().manual_seed(6)
    latent = lambda n: torch.randn(n, LATENT, generator=gen, dtype=torch.float64)  # noqa: E731
    step = BicycleStep(*ours, latent=latent, **options)
    for a, b in domains(2):
        step(a, b)
    return [p.detach().clone() for m in ours[:4] for p in m.parameters()]


def test_every_bicycle_step_option_has_a_row():
    import inspect

    from ganstep.engine.bicycle import BicycleStep

    signature = inspect.signature(BicycleStep.__init__).parameters.values()
    keywords = {p.name for p in signature if p.kind is p.KEYWORD_ONLY}
    assert keywords == {"latent", *BICYCLE_OPTIONS}  # latent: every run draws through it


@pytest.mark.parametrize("option", list(BICYCLE_OPTIONS))
def test_each_bicycle_step_option_is_applied(option):
    default, changed = bicycle_run({}), bicycle_run({option: BICYCLE_OPTIONS[option]})
    assert any(not torch.equal(p, q) for p, q in zip(changed, default, strict=True)), option
