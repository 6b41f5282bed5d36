"""What D may return: one score per sample, a PatchGAN map, a tuple with extra heads, a
multi-scale list; and the shapes refused (G's rows, a 2-D output not declared a map, a
tuple whose first element is not the score)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import latent_stream
from helpers.wild import (
    ITERATIONS,
    N,
    PairD,
    Pix2PixG,
    X,
    Z,
    assert_same,
    build,
    image_pairs,
    patch_net,
    run_step,
)
from torch import nn
from torch.testing import assert_close

from ganstep import Step, simultaneous


class MultiScaleD(nn.Module):
    """A list of two maps (pix2pixHD's multi-scale D), plus nothing else."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 1, 4, 2, 1)
        self.b = nn.Conv2d(2, 1, 3, 1, 1)

    def forward(self, x, c):
        both = torch.cat((c, x), 1)
        return [self.a(both), self.b(F.avg_pool2d(both, 2))]


def test_multi_scale_d_sums_its_adversarial_losses():
    (G, D, opt_g, opt_d), _ = build(Pix2PixG, MultiScaleD)
    target, source = image_pairs(1)[0]
    step = Step(G, D, opt_g, opt_d, objective="lsgan", schedule=simultaneous(), latent=None,
                condition="real")  # fmt: skip
    with torch.no_grad():
        fake = G(source)
        maps_real, maps_fake = D(target, source), D(fake, source)
    expected = sum(0.5 * (r - 1).square().mean() + 0.5 * f.square().mean()
                   for r, f in zip(maps_real, maps_fake, strict=True))  # fmt: skip
    logs = step((target, source))
    assert_close(logs["loss_d"], expected)
    with pytest.raises(ValueError, match="needs one adversarial output; D returned 2"):
        (G, D, opt_g, opt_d), _ = build(Pix2PixG, MultiScaleD)
        Step(G, D, opt_g, opt_d, objective="minimax", schedule=simultaneous(fused=True),
             latent=None, condition="real")((target, source))  # fmt: skip


@pytest.mark.parametrize("objective", ["minimax", "hinge", "wgan_gp"])
def test_fused_step_on_a_patch_map_equals_unfused(objective):
    pairs = image_pairs(ITERATIONS)
    sides = build(Pix2PixG, lambda: PairD(patch_net(batchnorm=False)))
    for side, fused in zip(sides, (False, True), strict=True):
        side[0].eval()  # G's BatchNorm in eval mode: both sides run G the same way
        torch.manual_seed(5)  # wgan_gp's interpolation draws
        step = Step(*side, objective=objective, schedule=simultaneous(fused=fused), latent=None,
                    condition="real")  # fmt: skip
        run_step(step, pairs)
    assert_same(sides[0][0], sides[1][0])
    assert_same(sides[0][1], sides[1][1])


@pytest.mark.parametrize("objective", ["ns", "lsgan"])
def test_fused_step_refuses_a_map_where_the_ratio_varies(objective):
    (G, D, opt_g, opt_d), _ = build(Pix2PixG, lambda: PairD(patch_net(batchnorm=False)))
    step = Step(G, D, opt_g, opt_d, objective=objective, schedule=simultaneous(fused=True),
                latent=None, condition="real")  # fmt: skip
    with pytest.raises(ValueError, match=f"{objective!r} varies per element"):
        step(image_pairs(1)[0])


def one_real_batch() -> torch.Tensor:
    gen = torch.Generator().manual_seed(2)
    return torch.randn(N, X, generator=gen, dtype=torch.float64) + 1


def tiny_step(D, G=None, **kwargs):
    G = G if G is not None else nn.Linear(Z, X).double()
    return Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                objective="ns", schedule="d_first", latent=latent_stream(Z), **kwargs)  # fmt: skip


class TwoRowsG(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(Z, 2 * X)

    def forward(self, z):
        return self.net(z).view(-1, X)  # the classic wrong reshape: 2n samples


class FeaturesFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Linear(X, 8), nn.Linear(8, 1)

    def forward(self, x):
        h = self.body(x)
        return h, self.head(h)


def test_shape_refusals_name_the_fix():
    real = one_real_batch()
    with pytest.raises(ValueError, match="G returned 12 samples for 6 z"):
        tiny_step(nn.Linear(X, 1).double(), G=TwoRowsG().double())(real)
    with pytest.raises(ValueError, match=r"shape \(6, 2\): 2 numbers per sample.*d_map=True"):
        tiny_step(nn.Linear(X, 2).double())(real)
    assert "loss_d" in tiny_step(nn.Linear(X, 2).double(), d_map=True)(real)
    with pytest.raises(ValueError, match="first element of D's tuple has shape") as e:
        tiny_step(FeaturesFirst().double())(real)
    assert "return (score, *extras), the score first" in str(e.value)


def test_the_missing_d_map_message_puts_the_fix_before_what_d_returned():
    """Before: about 1,000 characters describing every output of a many-headed D before
    the one-line fix; now the fix comes first and what D returned is cut short."""

    class ManyHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(X, 3)

        def forward(self, x):
            return self.net(x), *[self.net(x) for _ in range(40)]

    with pytest.raises(ValueError) as e:
        tiny_step(ManyHeads().double())(one_real_batch())
    message = str(e.value)
    assert len(message) < 400 and message.index("d_map=True") < 150


def test_the_view_keeps_what_d_returned_for_terms():
    """A (score, features) D is fine, and a feature term reads the features."""

    class ScoreFirst(FeaturesFirst):
        def forward(self, x):
            h = self.body(x)
            return self.head(h), h

    step = tiny_step(
        ScoreFirst().double(),
        g_terms={
            "features": lambda v: F.mse_loss(v.d_fake[1].mean(0), v.d_fake[1].mean(0).detach())
        },
    )
    logs = step(one_real_batch())
    assert_close(logs["features"], torch.tensor(0.0, dtype=torch.float64))
