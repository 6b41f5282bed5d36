"""Augmentation of every D input: the transforms, DiffAugment's loop and StyleGAN2-ADA's
adaptive p, exact against the loops as they are written (float64)."""

from __future__ import annotations

import pytest
import torch
from helpers import latent_stream
from helpers.wild import assert_losses, assert_same, assert_same_sides, run_step
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.augment import (
    Adaptive,
    DiffAugment,
    brightness,
    contrast,
    cutout,
    get_augment,
    saturation,
    translation,
)
from ganstep.engine.objectives import NS

Z, N, SIDE = 3, 6, 8


def image_sides(dropout: bool = False):
    """Two identical float64 (G, D, opt_g, opt_d): G(z) is a 1x8x8 image, D a small conv."""
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(Z, SIDE * SIDE), nn.Tanh(), nn.Unflatten(1, (1, SIDE, SIDE)))
        D = nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1), nn.LeakyReLU(0.2),
                          nn.Dropout(0.3) if dropout else nn.Identity(), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 1), nn.Flatten(0))  # fmt: skip
        G, D = G.double(), D.double()
        sides.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.5, 0.9)),
                      torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.9))))  # fmt: skip
    return sides


def images(count: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(5)
    return [torch.rand(N, 1, SIDE, SIDE, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


# -- the transforms ----------------------------------------------------------------------


def test_translation_moves_each_sample_by_whole_pixels_and_fills_zeros():
    x = torch.zeros(64, 1, SIDE, SIDE, dtype=torch.float64)
    x[:, 0, 3, 4] = 1.0
    torch.manual_seed(0)
    moved = translation(x)
    for sample in moved:
        found = sample.nonzero()
        assert sample.sum() == 1 and found.shape[0] == 1  # the pixel moved, nothing else
        dy, dx = found[0, 1] - 3, found[0, 2] - 4
        assert -1 <= dy <= 1 and -1 <= dx <= 1  # 0.125 of 8 pixels
    shifts = {tuple((s.nonzero()[0, 1:] - torch.tensor([3, 4])).tolist()) for s in moved}
    assert len(shifts) > 4  # every sample draws its own shift
    edge = torch.zeros(256, 1, SIDE, SIDE, dtype=torch.float64)
    edge[:, 0, 0, :] = 1.0
    assert (translation(edge).sum((1, 2, 3)) == 0).any()  # shifted out: zeros came in


def test_cutout_zeroes_one_square_per_sample():
    torch.manual_seed(0)
    out = cutout(torch.ones(200, 1, SIDE, SIDE, dtype=torch.float64))
    holes = (out == 0).sum((1, 2, 3))
    assert holes.max() == 16 and holes.min() >= 4  # a 4x4 square, maybe off the edge
    assert (holes < 16).any()
    for sample in out:
        rows, cols = (sample[0] == 0).nonzero().unbind(1)
        h, w = rows.max() - rows.min() + 1, cols.max() - cols.min() + 1
        assert h * w == (sample == 0).sum()  # one rectangle


def test_color_transforms_are_per_sample_and_differentiable():
    torch.manual_seed(0)
    x = torch.rand(5, 3, 4, 4, dtype=torch.float64, requires_grad=True)
    shifted = brightness(x) - x
    assert torch.allclose(shifted, shifted[:, :1, :1, :1].expand_as(shifted))
    assert shifted.flatten(1)[:, 0].unique().numel() == 5
    gray = torch.rand(2, 1, 4, 4, dtype=torch.float64)
    assert torch.allclose(saturation(gray.expand(2, 3, 4, 4)), gray.expand(2, 3, 4, 4))
    means = contrast(x).mean((1, 2, 3))
    assert torch.allclose(means, x.mean((1, 2, 3)))  # contrast keeps each sample's mean
    (grad,) = torch.autograd.grad(DiffAugment()(x).sum(), x)
    assert grad.abs().sum() > 0


def test_adaptive_applies_each_transform_with_probability_p():
    x = torch.ones(4000, 1, SIDE, SIDE, dtype=torch.float64)
    torch.manual_seed(0)
    assert torch.equal(Adaptive("cutout", p=0.0)(x), x)
    assert ((Adaptive("cutout", p=1.0)(x) == 0).sum((1, 2, 3)) > 0).all()
    cut = (Adaptive("cutout", p=0.3)(x) == 0).sum((1, 2, 3)) > 0
    assert cut.double().mean().item() == pytest.approx(0.3, abs=0.03)


@pytest.mark.parametrize(
    "policy",
    [
        "color",
        "translation",
        "cutout",
        "translation,cutout",
        "color,translation,cutout",
        "cutout,color",
    ],
)
@pytest.mark.parametrize("shape", [(5, 3, 8, 8), (4, 1, 12, 9), (3, 2, 7, 16)])
def test_diffaugment_equals_the_sources_draw_for_draw(policy, shape):
    """ganstep's transforms against ``reference.diff_augment``, DiffAugment_pytorch.py's
    semantics (its draws, its padded gather for translation, its clamped mask for cutout)
    written apart: equal to the bit on odd, non-square and non-multiple-of-8 sides, and
    so are the input gradients up to the order of their sums."""
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(7)
    ours = DiffAugment(policy)(x)
    torch.manual_seed(7)
    theirs = reference.diff_augment(x, policy)
    assert torch.equal(ours, theirs)
    (g_ours,) = torch.autograd.grad(ours.square().sum(), x)
    (g_theirs,) = torch.autograd.grad(theirs.square().sum(), x)
    torch.testing.assert_close(g_ours, g_theirs, rtol=0, atol=1e-12)  # sums in other orders


def test_translation_moves_pixels_the_way_the_source_does():
    """A sample shifted by +1 row reads the input's next row (x[i + 1]), as
    ``rand_translation`` indexes it: the bright row moves up, not down."""
    x = torch.zeros(64, 1, SIDE, SIDE, dtype=torch.float64)
    x[:, 0, 3, :] = 1.0
    torch.manual_seed(0)
    dy = torch.randint(-1, 2, (64,))
    torch.manual_seed(0)
    moved = translation(x)
    rows = moved[:, 0, :, 4].argmax(1)  # a middle column: an edge one may be shifted out
    assert torch.equal(rows, 3 - dy)


@given(st.one_of(st.text(max_size=12), st.none(), st.integers(), st.floats()))
def test_policies_and_names_are_checked(spec):
    policy = isinstance(spec, str) and all(
        p.strip() in ("color", "translation", "cutout") for p in spec.split(",")
    )
    if spec in {None, "none", "diffaugment", "ada"} or policy:
        made = get_augment(spec)
        assert made is None or callable(made)
        return
    with pytest.raises((ValueError, TypeError), match="augment"):
        get_augment(spec)
    if isinstance(spec, str):
        valid = all(p.strip() in ("color", "translation", "cutout") for p in spec.split(","))
        if not (valid and any(p.strip() for p in spec.split(","))):
            with pytest.raises(ValueError, match="unknown augmentation"):
                DiffAugment(spec)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"target": 1.5}, "target"), ({"interval": 0}, "interval"), ({"kimg": 0}, "kimg"),
     ({"p": -0.1}, "p"), ({"policy": "color,flip"}, "unknown augmentation")],
)  # fmt: skip
def test_adaptive_arguments_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Adaptive(**kwargs)


def test_adaptive_moves_p_in_place_and_keeps_it_where_nothing_was_observed():
    """p and the sums since the last update change in place (a CUDA graph replays the
    update on the tensors it captured), and p stays where no sign was observed."""
    ada = Adaptive(p=0.5, interval=2, kimg=0.001, target=0.0)
    ada(torch.zeros(4, 1, 4, 4, dtype=torch.float64))
    p, totals = ada.p, ada.totals
    assert ada.end_iteration(2)["augment_p"].item() == 0.5  # nothing observed: p stays
    ada.observe(torch.tensor([1.0, 1.0, -1.0, 0.5]))  # signs sum to 2
    ada.observe(torch.tensor([1.0, 1.0]), d_step=False)  # a lazy R1 step: no rows
    assert ada.totals.tolist() == [4.0, 6.0, 4.0]
    assert not ada.moves_after(3) and ada.end_iteration(3)["augment_p"].item() == 0.5
    assert ada.moves_after(4) and ada.end_iteration(4)["augment_p"].item() == 0.5 + 4 / 1.0
    assert ada.p is p and ada.totals is totals and totals.tolist() == [0.0, 0.0, 0.0]


def test_an_adaptive_state_of_the_signs_themselves_loads_as_their_sums():
    """Checkpoints written before the sums (2026-11-28 and earlier) kept each sign."""
    signs = [torch.tensor([1.0, -1.0, 1.0]), torch.tensor([0.0, 1.0])]
    old = {"p": torch.tensor(0.25, dtype=torch.float64), "signs": signs, "rows": 3}
    ada = Adaptive()
    ada.load_state_dict(old)
    assert ada.p.item() == 0.25 and ada.totals.tolist() == [2.0, 5.0, 3.0]
    empty = Adaptive()
    empty.load_state_dict({"p": 0.5, "signs": [], "rows": 0})
    assert empty.totals.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="needs the keys 'p' and 'totals'"):
        Adaptive().load_state_dict({"p": 0.1})
    with pytest.raises(ValueError, match=r"shape \(2,\), not \(3,\)"):
        Adaptive().load_state_dict({"p": 0.1, "totals": torch.zeros(2)})


def test_augmentation_needs_images():
    with pytest.raises(ValueError, match="images"):
        DiffAugment()(torch.zeros(3, 4))


# -- exact against the loops -------------------------------------------------------------


@pytest.mark.parametrize(
    "objective, policy",
    [
        ("ns", "color,translation,cutout"),
        ("lsgan", "translation,cutout"),
        ("hinge", "color,translation,cutout"),
    ],
)
def test_diffaugment_equals_its_readme_loop(objective, policy):
    """The README loop of data-efficient-gans with the source's DiffAugment
    (``reference.diff_augment``), against ``Step(augment=policy)``."""
    theirs, ours = image_sides()
    reals = images(4)
    torch.manual_seed(11)
    expected = reference.diffaugment(*theirs, reals, latent_stream(Z), policy, objective)
    step = Step(*ours, objective=objective, schedule=d_first(reuse_fake=False),
                latent=latent_stream(Z), augment=policy)  # fmt: skip
    torch.manual_seed(11)
    assert_losses(run_step(step, reals), expected)
    assert_same_sides(ours, theirs)


@pytest.mark.parametrize("every", [1, 3])
def test_ada_equals_stylegan2_ada(every):
    """SG2-ADA's Gmain, Dmain (fake first), lazy Dreg, and its ADA heuristic: p moves
    after every 2nd iteration from the signs of Dmain's and Dreg's real logits."""
    theirs, ours = image_sides()
    reals = images(8)
    pipe = Adaptive(p=0.3, interval=2, kimg=0.1)
    torch.manual_seed(3)
    expected = reference.stylegan2_r1(*theirs, reals, latent_stream(Z), r1=2.0, r1_every=every,
                                      augment_pipe=pipe, ada_target=0.6, ada_interval=2,
                                      ada_kimg=0.1)  # fmt: skip
    step = Step(*ours, objective=NS(r1=2.0, r1_every=every), schedule=g_first(),
                latent=latent_stream(Z), d_order="fake_first",
                augment=Adaptive(p=0.3, target=0.6, interval=2, kimg=0.1))  # fmt: skip
    torch.manual_seed(3)
    got = run_step(step, reals)
    assert_losses(got, expected, keys=("loss_d", "loss_g", "augment_p"))
    p = [0.3] + [row["augment_p"] for row in expected]
    assert sum(a != b for a, b in zip(p[:-1], p[1:], strict=True)) >= 2  # moved twice
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_simultaneous_with_augmentation_forwards_d_as_the_loop():
    _, ours = image_sides()
    step = Step(*ours, objective="ns", schedule=simultaneous(), latent=latent_stream(Z),
                augment="diffaugment")  # fmt: skip
    step(images(1)[0])
    assert "D forwards as the loop's" in repr(step)
    with pytest.raises(ValueError, match="augmentation stands between"):
        Step(*ours, objective="ns", schedule=simultaneous(fused=True), latent=latent_stream(Z),
             augment="diffaugment")  # fmt: skip


def test_every_d_input_is_augmented_once():
    """A D step of wgan_gp augments real, fake and the interpolates; G's step its fake."""
    seen = []

    def counting(x):
        seen.append(x.shape[0])
        return x

    _, ours = image_sides()
    step = Step(*ours, objective="wgan_gp", schedule=d_first(), latent=latent_stream(Z),
                augment=counting)  # fmt: skip
    step.observe_d(images(1)[0])
    step(images(1)[0])
    assert seen == [N, N, N, N]  # real, fake, interpolates (D step), fake (G step)


def test_ada_state_resumes_exactly():
    def make(ours, latent):
        return Step(*ours, objective=NS(r1=1.0, r1_every=2), schedule=g_first(), latent=latent,
                    augment=Adaptive(p=0.2, interval=3, kimg=0.1))  # fmt: skip

    straight, split = image_sides()
    reals = images(7)
    torch.manual_seed(4)
    first = make(straight, latent_stream(Z))
    expected = run_step(first, reals)
    torch.manual_seed(4)
    latent = latent_stream(Z)  # z and the optimizers go on; the Step is rebuilt
    second = make(split, latent)
    run_step(second, reals[:4])  # mid-interval: the signs of iteration 4 are pending
    state, rng = second.state_dict(), torch.get_rng_state()
    assert set(state["augment"]) == {"p", "totals"} and state["augment"]["totals"][1] > 0
    resumed = make(split, latent)
    resumed.load_state_dict(state)
    torch.set_rng_state(rng)
    assert_losses(run_step(resumed, reals[4:]), expected[4:], keys=("loss_d", "augment_p"))
    assert_same(straight[0], split[0])
    assert_same(straight[1], split[1])
    plain = Step(*split, objective="ns", schedule=g_first(), latent=latent_stream(Z))
    with pytest.raises(ValueError, match=r"differ in augment: .* \(this Step has none of"):
        plain.load_state_dict(state)
    with pytest.raises(ValueError, match=r"differ in augment: .* the state none\)"):
        resumed.load_state_dict(plain.state_dict())
