"""NVIDIA/pix2pixHD (``train.py``, ``models/pix2pixHD_model.py``, commit 2963391; its
networks from ``models/networks.py``, as the audit's fixture has them, made small): G and
D's losses from one forward of G and three of its multi-scale D (getIntermFeat: every
layer's output returned), G stepped first, then D; LSGAN, feature matching against the
real pair's features, a perceptual (VGG) term. Equal to ``simultaneous()`` in float64."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from helpers.wild import assert_same_sides
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.views import reads_real

LABELS, SIZE, BATCH, N_LAYERS, NUM_D = 2, 8, 4, 2, 2


# the networks of the audit's fixture (pix2pixHD as written), after its networks.py
NETWORKS = runpy.run_path(str(Path(__file__).parent / "audit_scripts" / "nvidia_pix2pixhd.py"))


def multiscale_d() -> nn.Module:
    """Its MultiscaleDiscriminator as define_D makes it (instance norm, LSGAN: no
    sigmoid, getIntermFeat for the feature matching), made small."""
    norm = NETWORKS["get_norm_layer"]("instance")
    return NETWORKS["MultiscaleDiscriminator"](LABELS + 3, 4, N_LAYERS, norm, False, NUM_D, True)


class Judged(nn.Module):
    """D as the Step calls it, ``D(x, c)``: the source's ``netD(cat(label, image))``, given
    as (each scale's prediction map, its features)."""

    def __init__(self, netD: nn.Module):
        super().__init__()
        self.netD = netD

    def forward(self, x, c):
        result = self.netD(torch.cat((c, x), dim=1))
        return [scale[-1] for scale in result], [scale[:-1] for scale in result]


def generator() -> nn.Module:
    """A small stand-in for the GlobalGenerator: label map in, image out."""
    return nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(LABELS, 8, 3), nn.InstanceNorm2d(8),
                         nn.ReLU(True), nn.Conv2d(8, 3, 1), nn.Tanh())  # fmt: skip


class Features(nn.Module):
    """A frozen stand-in for the source's Vgg19 slices: five feature maps."""

    def __init__(self):
        super().__init__()
        self.slices = nn.ModuleList(nn.Sequential(nn.Conv2d(3 if i == 0 else 4, 4, 3, 1, 1),
                                                  nn.ReLU()) for i in range(5))  # fmt: skip
        self.requires_grad_(False)

    def forward(self, x):
        out = []
        for s in self.slices:
            x = s(x)
            out.append(x)
        return out


def sides():
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = generator().double(), multiscale_d().double()
        made.append([G, D, torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999)),
                     torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))])  # fmt: skip
    return made


def pairs(count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(real image, label map) batches."""
    gen = torch.Generator().manual_seed(2)
    return [(torch.rand(BATCH, 3, SIZE, SIZE, generator=gen, dtype=torch.float64) * 2 - 1,
             torch.rand(BATCH, LABELS, SIZE, SIZE, generator=gen, dtype=torch.float64))
            for _ in range(count)]  # fmt: skip


@reads_real
def feature_matching(v):
    """pix2pixHD's G_GAN_Feat on the view: each scale's features but the prediction,
    L1 to the real pair's (constants), weighted (1 / num_D) * (4 / (n_layers_D + 1)) *
    lambda_feat, in its order."""
    loss = 0
    for fake_scale, real_scale in zip(v.d_fake[1], v.d_real[1], strict=True):
        for fake, real in zip(fake_scale, real_scale, strict=True):
            loss += (1.0 / NUM_D) * (4.0 / (N_LAYERS + 1)) * F.l1_loss(fake, real.detach()) * 10.0
    return loss


def step_of(side, vgg: nn.Module | None) -> Step:
    G, D, opt_g, opt_d = side
    terms = {"fm": feature_matching}
    if vgg is not None:
        perceptual = reference.pix2pixhd.VGGLoss(vgg)
        terms["vgg"] = (10.0, lambda v: perceptual(v.fake.x, v.real.x))
    return Step(G, Judged(D), opt_g, opt_d, objective="lsgan", g_scale=2.0,
                schedule=simultaneous(), latent=None, condition="real", d_map=True,
                g_terms=terms)  # fmt: skip


@pytest.mark.parametrize("with_vgg", [True, False])
def test_pix2pixhds_step_equals_simultaneous(with_vgg):
    """Parameters, Adam's states and the logged losses equal in float64 over 4
    iterations: its D loss (halved sum over scales) is lsgan's; its G_GAN (the sum over
    scales of the MSE to 1) is lsgan's L_G doubled; its feature matching and VGG terms
    are added unscaled, as its loss_G adds them."""
    theirs, ours = sides()
    vgg = Features().double() if with_vgg else None
    data = pairs(4)
    expected = reference.nvidia_pix2pixhd(*theirs, data, vgg=vgg, n_layers_D=N_LAYERS,
                                          num_D=NUM_D)  # fmt: skip
    step = step_of(ours, vgg)
    got = [step(pair) for pair in data]
    assert_same_sides(ours, theirs)
    for mine, row in zip(got, expected, strict=True):
        assert mine["loss_d"].item() == pytest.approx(row["loss_d"], rel=1e-12)
        assert mine["loss_g"].item() == pytest.approx(row["loss_g"], rel=1e-12)
        assert mine["fm"].item() == pytest.approx(row["G_GAN_Feat"], rel=1e-12)
        if with_vgg:
            assert mine["vgg"].item() == pytest.approx(row["G_VGG"], rel=1e-12)


def test_d_first_parts_from_it():
    """The same Step on ``d_first()`` (D's step first, G's against the updated D) parts
    from the source, whose G and D both step from the iteration's parameters: the
    schedule is what the test above pins down."""
    theirs, ours = sides()
    data = pairs(2)
    reference.nvidia_pix2pixhd(*theirs, data, n_layers_D=N_LAYERS, num_D=NUM_D)
    G, D, opt_g, opt_d = ours
    step = Step(G, Judged(D), opt_g, opt_d, objective="lsgan", g_scale=2.0,
                schedule=d_first(), latent=None, condition="real", d_map=True,
                g_terms={"fm": feature_matching})  # fmt: skip
    for pair in data:
        step(pair)
    pairs_of = zip(G.parameters(), theirs[0].parameters(), strict=True)
    assert max((a - b).abs().max().item() for a, b in pairs_of) > 1e-6
