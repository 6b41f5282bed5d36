"""StyleGAN2's path length on G as a lazy phase of the Step, exact against SG2-ADA's
Greg phase (float64), sharing the lazy phase with R1."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import latent_stream
from helpers.wild import assert_losses, assert_same, assert_same_sides, run_step
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Adaptive, Step, g_first, reference
from ganstep.engine.objectives import NS
from ganstep.engine.regularizers import PathLength

Z, N, W = 3, 6, 4


class StyleG(nn.Module):
    """G(z) = synthesis(mapping(z)); mapping gives 2 ws of width W per sample."""

    def __init__(self):
        super().__init__()
        self.mapping = nn.Sequential(nn.Linear(Z, 2 * W), nn.LeakyReLU(0.2),
                                     nn.Unflatten(1, (2, W)))  # fmt: skip
        self.synthesis = nn.Sequential(nn.Flatten(), nn.Linear(2 * W, 16), nn.Tanh(),
                                       nn.Unflatten(1, (1, 4, 4)))  # fmt: skip

    def forward(self, z):
        return self.synthesis(self.mapping(z))


def sides(make_g=None):
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G = (make_g or StyleG)().double()
        D = nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.LeakyReLU(0.2), nn.Flatten(),
                          nn.Linear(64, 1), nn.Flatten(0)).double()  # fmt: skip
        out.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.0, 0.9)),
                    torch.optim.Adam(D.parameters(), 0.01, betas=(0.0, 0.9))))  # fmt: skip
    return out


def images(count: int):
    gen = torch.Generator().manual_seed(6)
    return [torch.rand(N, 1, 4, 4, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


@pytest.mark.parametrize("ada", [False, True])
@pytest.mark.parametrize("r1_every", [1, 3])
def test_path_length_equals_stylegan2_ada(r1_every, ada):
    """Gmain, Greg (every 2nd), Dmain (fake first), Dreg: SG2-ADA's phases, with its
    augment pipe and ADA heuristic when ``ada``."""
    theirs, ours = sides()
    reals = images(5)
    pipe = dict(p=0.3, interval=2, kimg=0.1)
    extra = dict(augment_pipe=Adaptive(**pipe), ada_target=0.6, ada_interval=2, ada_kimg=0.1)
    torch.manual_seed(9)
    expected = reference.stylegan2_r1(*theirs, reals, latent_stream(Z), r1=2.0, r1_every=r1_every,
                                      pl_weight=2.0, G_reg_interval=2,
                                      **(extra if ada else {}))  # fmt: skip
    G = ours[0]
    regs = []
    step = Step(*ours, objective=NS(r1=2.0, r1_every=r1_every), schedule=g_first(),
                latent=latent_stream(Z), d_order="fake_first",
                g_regularizer=PathLength(2.0, every=2, mapping=G.mapping, synthesis=G.synthesis),
                augment=Adaptive(**pipe, target=0.6) if ada else None,
                after_step={"g_reg": lambda m: regs.append(m)})  # fmt: skip
    torch.manual_seed(9)
    got = run_step(step, reals)
    assert_losses(got, expected, keys=("loss_d", "loss_g", *(("augment_p",) if ada else ())))
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])
    assert ["pl" in row for row in got] == [True, False, True, False, True]
    assert regs == [G] * 3  # the "g_reg" hook sees each path length step
    state = step.state_dict()
    assert state["g_updates"] == 5 and state["g_regularizer"]["mean"] > 0


class MixingG(StyleG):
    """StyleG with SG2-ADA's style mixing in training (StyleGAN2Loss.run_G): what a user
    puts in G's forward, and gives PathLength as its mapping."""

    def mixed(self, z):
        ws = self.mapping(z)
        if self.training:
            cutoff = torch.empty([], dtype=torch.int64).random_(1, ws.shape[1])
            cutoff = torch.where(torch.rand([]) < 0.9, cutoff, torch.full_like(cutoff, ws.shape[1]))
            ws[:, cutoff:] = self.mapping(torch.randn_like(z))[:, cutoff:]
        return ws

    def forward(self, z):
        return self.synthesis(self.mixed(z))


def test_path_length_with_style_mixing_equals_stylegan2_ada():
    """run_G's style mixing in Gmain, Greg and Dmain (its draws among the path length
    noise's): equal when G's forward mixes and PathLength's mapping is the mixing one.
    Before: the README's mapping=G.mapping was 2.3e-2 off SG2-ADA."""
    theirs, ours = sides(MixingG)
    reals = images(5)
    torch.manual_seed(9)
    expected = reference.stylegan2_r1(*theirs, reals, latent_stream(Z), r1=2.0, r1_every=3,
                                      pl_weight=2.0, G_reg_interval=2,
                                      style_mixing_prob=0.9)  # fmt: skip
    G = ours[0]
    step = Step(*ours, objective=NS(r1=2.0, r1_every=3), schedule=g_first(),
                latent=latent_stream(Z), d_order="fake_first",
                g_regularizer=PathLength(2.0, every=2, mapping=G.mixed,
                                         synthesis=G.synthesis))  # fmt: skip
    torch.manual_seed(9)
    got = run_step(step, reals)
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)


def test_path_length_without_mapping_takes_the_gradient_at_z():
    """G(z) = A z: the path lengths are |A^T y| for the phase's noise y."""
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(Z, 16, bias=False), nn.Unflatten(1, (1, 4, 4))).double()
    D = nn.Sequential(nn.Flatten(), nn.Linear(16, 1), nn.Flatten(0)).double()
    opt_g = torch.optim.SGD(G.parameters(), 0.1)
    opt_d = torch.optim.SGD(D.parameters(), 0.1)
    seen = {}

    def keep(m):
        seen.setdefault("A", m[0].weight.detach().clone())

    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=g_first(), latent=latent_stream(Z),
                g_regularizer=PathLength(3.0, every=2, decay=0.5, shrink=1),
                after_step={"g": keep})  # fmt: skip
    torch.manual_seed(5)
    logs = step(images(1)[0])
    torch.manual_seed(5)
    noise = torch.randn(N, 1, 4, 4, dtype=torch.float64) / math.sqrt(16)
    lengths = (noise.flatten(1) @ seen["A"]).norm(dim=1)  # the weight Greg differentiated
    mean = 0.5 * lengths.mean()
    assert logs["pl"].item() == pytest.approx(3.0 * (lengths - mean).square().mean().item())
    assert step.game.options.g_regularizer.mean.item() == pytest.approx(mean.item())


def test_path_length_arguments_and_state_are_checked():
    with pytest.raises(ValueError, match="every must be at least 2"):
        PathLength(every=1)
    with pytest.raises(ValueError, match="mapping and synthesis together"):
        PathLength(mapping=nn.Identity())
    with pytest.raises(ValueError, match="decay must be in"):
        PathLength(decay=0)
    _, (G, D, opt_g, opt_d) = sides()
    with pytest.raises(TypeError, match="G-side regularizer"):
        Step(G, D, opt_g, opt_d, objective="ns", schedule="g_first", latent=latent_stream(Z),
             g_regularizer=NS(r1=1.0).regularizer)  # fmt: skip
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule="g_first", latent=latent_stream(Z),
                g_regularizer=PathLength())  # fmt: skip
    with pytest.raises(ValueError, match="differ in g_regularizer"):
        step.load_state_dict({"iteration": 0, "objective": {}})


@given(z_draw=st.text(max_size=8).filter(lambda s: s not in PathLength.z_draws))
def test_a_z_draw_other_than_batch_or_shrunk_is_refused(z_draw):
    with pytest.raises(ValueError, match="z_draw must be 'batch'"):
        PathLength(z_draw=z_draw)


def test_images_and_latents_is_checked():
    """Given with mapping, not callable, returning other than two tensors, or latents
    outside the images' graph: each refused with a message naming images_and_latents."""
    with pytest.raises(ValueError, match="not both"):
        PathLength(images_and_latents=lambda z: (z, z), mapping=nn.Identity(),
                   synthesis=nn.Identity())  # fmt: skip
    with pytest.raises(TypeError, match="images_and_latents must be callable"):
        PathLength(images_and_latents="G")
    _, (G, D, opt_g, opt_d) = sides()
    answers = {
        "two tensors": lambda z: G(z),
        "outside the images' graph": lambda z: (G(z), z),
    }
    for match, call in answers.items():
        step = Step(G, D, opt_g, opt_d, objective="ns", schedule="g_first",
                    latent=latent_stream(Z),
                    g_regularizer=PathLength(every=2, images_and_latents=call))  # fmt: skip
        with pytest.raises((TypeError, ValueError), match=match):
            step(images(1)[0])


def test_images_and_latents_takes_the_gradient_at_the_latents_it_returns():
    """``images_and_latents=lambda z: (G.synthesis(ws := G.mapping(z)), ws)`` is the
    mapping/synthesis split written as one call: the same run, bit for bit."""
    logs = []
    for one_call in (False, True):
        _, (G, D, opt_g, opt_d) = sides()

        def both(z, G=G):
            ws = G.mapping(z)
            return G.synthesis(ws), ws

        split = dict(mapping=G.mapping, synthesis=G.synthesis)
        step = Step(G, D, opt_g, opt_d, objective="ns", schedule="g_first",
                    latent=latent_stream(Z),
                    g_regularizer=PathLength(every=2, **({"images_and_latents": both}
                                                         if one_call else split)))  # fmt: skip
        torch.manual_seed(2)
        pls = [row["pl"].item() for row in map(step, images(3)) if "pl" in row]
        logs.append((pls, [p.detach().clone() for p in G.parameters()]))
    assert logs[0][0] == logs[1][0] and len(logs[0][0]) == 2
    for a, b in zip(logs[0][1], logs[1][1], strict=True):
        assert torch.equal(a, b)
