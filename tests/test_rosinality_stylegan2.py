"""rosinality/stylegan2-pytorch (``train.py``, commit 0ecf8ff; its models after
``model.py``, as the audit's fixture has them), the StyleGAN2 most PyTorch users train:
style mixing chosen by Python's ``random`` with the inject index drawn in G's forward,
noise inputs drawn in G's forward, lazy R1 and lazy path length in steps of their own,
the path length on a z of ``batch // path_batch_shrink`` rows drawn for it and
differentiated at the latents G returns. Equal to the Step in float64; a Step that draws
a batch's z for the path length (StyleGAN2-ADA's way) is not."""

from __future__ import annotations

import random
import runpy
from pathlib import Path

import pytest
import torch
from helpers.wild import assert_same_sides
from torch import nn

from ganstep import Step, d_first, reference
from ganstep.engine.objectives import NS
from ganstep.engine.regularizers import PathLength, lazy_regularization

# the models of the audit's fixture (rosinality's train.py as written), after its
# model.py: a mapping network, the w broadcast or two mixed at random.randint's layer,
# noise drawn in each styled layer; a D with its minibatch standard deviation
MODELS = runpy.run_path(str(Path(__file__).parent / "audit_scripts" / "rosinality_stylegan2.py"))
Generator, Discriminator = MODELS["Generator"], MODELS["Discriminator"]

STYLE, SIZE, BATCH = 6, 8, 8


class Styled(nn.Module):
    """G as the Step calls it, ``G(*styles)``: the source's ``generator(noise)[0]``, its
    styles in a list."""

    def __init__(self, generator: nn.Module):
        super().__init__()
        self.generator = generator

    def forward(self, *styles):
        return self.generator(list(styles))[0]


D_REG, G_REG = 4, 4


def sides():
    """Two identical (generator, discriminator, g_optim, d_optim), the source's Adam with
    its lazy-regularization ratio."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G = Generator(SIZE, STYLE, 2, channel=4).double()
        D = Discriminator(SIZE, channel=4).double()
        g_lr, g_betas = lazy_regularization(0.002, (0.0, 0.99), G_REG)
        d_lr, d_betas = lazy_regularization(0.002, (0.0, 0.99), D_REG)
        made.append((G, D, torch.optim.Adam(G.parameters(), lr=g_lr, betas=g_betas),
                     torch.optim.Adam(D.parameters(), lr=d_lr, betas=d_betas)))  # fmt: skip
    return made


def images(count: int, batch: int = BATCH) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    return [torch.rand(batch, 3, SIZE, SIZE, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


def step_of(side, mixing: float, shrink: int = 2, z_draw: str = "shrunk") -> Step:
    generator, discriminator, g_optim, d_optim = side
    return Step(
        Styled(generator), discriminator, g_optim, d_optim,
        objective=NS(r1=10.0, r1_every=D_REG), schedule=d_first(reuse_fake=False),
        d_order="fake_first",
        latent=lambda n: reference.mixing_noise(n, STYLE, mixing, "cpu"),
        g_regularizer=PathLength(
            2.0, every=G_REG, shrink=shrink, z_draw=z_draw,
            images_and_latents=lambda *styles: generator(list(styles), return_latents=True),
        ),
    )  # fmt: skip


def run(mixing: float, iterations: int = 9, batch: int = BATCH, shrink: int = 2,
        z_draw: str = "shrunk"):  # fmt: skip
    """The source's loop and the Step from the same seeds (torch's and Python's), z in
    float64 (the source draws z in torch's default dtype). Each gets its own copy of the
    real batches: the source sets ``requires_grad`` on its batch for R1."""
    theirs, ours = sides()
    reals = images(iterations, batch)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(9)
        random.seed(4)
        expected = reference.rosinality_stylegan2(
            *theirs, [x.clone() for x in reals], STYLE, mixing=mixing, r1=10.0,
            path_regularize=2.0, path_batch_shrink=shrink, d_reg_every=D_REG, g_reg_every=G_REG,
        )  # fmt: skip
        step = step_of(ours, mixing, shrink, z_draw)
        torch.manual_seed(9)
        random.seed(4)
        got = [step([x.clone()]) for x in reals]
    finally:
        torch.set_default_dtype(before)
    return theirs, ours, expected, got, step


@pytest.mark.parametrize("mixing", [0.0, 0.9])
def test_rosinalitys_loop_equals_the_step(mixing):
    """Parameters, Adam's states, D's and G's losses, R1 and the path length penalty (and
    its running mean) equal in float64 over 9 iterations, R1 and path length run at
    iterations 0, 4 and 8; with the source's default mixing 0.9 both of mixing_noise's
    branches are taken."""
    theirs, ours, expected, got, step = run(mixing)
    assert_same_sides(ours, theirs)
    for mine, row in zip(got, expected, strict=True):
        assert mine["loss_d"].item() == pytest.approx(row["loss_d"], rel=1e-12)
        assert mine["loss_g"].item() == pytest.approx(row["loss_g"], rel=1e-12)
        assert ("gp" in mine) == ("r1" in row) and ("pl" in mine) == ("path" in row)
        if "r1" in row:  # ganstep logs R1 weighted, as the loss it adds
            assert mine["gp"].item() == pytest.approx(5.0 * row["r1"], rel=1e-12)
        if "path" in row:
            assert mine["pl"].item() == pytest.approx(2.0 * row["path"], rel=1e-12)
    assert [("path" in row) for row in expected] == [i % G_REG == 0 for i in range(9)]
    mean = step.game.options.g_regularizer.mean.item()
    assert mean == pytest.approx(expected[-1]["mean_path_length"], rel=1e-12) and mean > 0


def test_both_mixing_branches_are_taken():
    """The check above is not vacuous about style mixing: with Python's seed 4 and
    probability 0.9, mixing_noise returns two z on most calls and one on some."""
    random.seed(4)
    draws = [random.random() < 0.9 for _ in range(4 * 9)]
    assert 0 < draws.count(False) < len(draws)


def test_stylegan2_adas_z_draw_parts_from_rosinalitys():
    """The same Step with ``z_draw="batch"`` (a batch's z for the path length, its first
    rows: StyleGAN2-ADA's Greg) draws more numbers than the source's
    ``mixing_noise(batch // 2)``: from the first path length on, everything parts."""
    theirs, ours, _, _, _ = run(0.0, iterations=2, z_draw="batch")
    (g_theirs, *_), (g_ours, *_) = theirs, ours
    pairs = zip(g_theirs.parameters(), g_ours.parameters(), strict=True)
    apart = max((a - b).abs().max().item() for a, b in pairs)
    assert apart > 1e-6


def test_path_batch_shrink_rounds_down_to_at_least_one_row():
    """``max(1, batch // path_batch_shrink)`` rows (D's groups of 4 take a batch of 4): all
    rows with shrink 1, one with shrink 3 (4 // 3) and with shrink 8 (at least one)."""
    for shrink in (1, 3, 8):
        theirs, ours, expected, got, _ = run(0.9, iterations=5, batch=4, shrink=shrink)
        assert_same_sides(ours, theirs)
        assert got[-1]["pl"].item() == pytest.approx(2.0 * expected[-1]["path"], rel=1e-12)


def test_float32_stays_within_rounding():
    """In float32 (the source's dtype) the Step and the loop differ by rounding alone:
    the Step's forwards and reductions are the same, so within 1e-5 after 5 iterations."""
    theirs, ours = sides()
    for side in (theirs, ours):
        side[0].float(), side[1].float()
    reals = [x.float() for x in images(5)]
    torch.manual_seed(9)
    random.seed(4)
    reference.rosinality_stylegan2(*theirs, [x.clone() for x in reals], STYLE, mixing=0.9,
                                   d_reg_every=D_REG, g_reg_every=G_REG)  # fmt: skip
    step = step_of(ours, 0.9)
    torch.manual_seed(9)
    random.seed(4)
    for x in reals:
        step([x.clone()])
    for a, b in zip(theirs[0].parameters(), ours[0].parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
