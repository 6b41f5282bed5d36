"""The port's candidate objectives are ones a Step can be built with: R1 is added only
to objectives that take it, and the rounding variants keep their options; and how the
port reads G's path length calls and style mixing from what the script did, and G's
terms' weights from its first gradient."""

from __future__ import annotations

import argparse
import copy

import pytest
import torch

from ganstep.engine.objectives import NS, Minimax, Objective
from ganstep.tools.port import (
    Capture,
    _lazy_form,
    _mixing_probability,
    _moments,
    _read_weight,
    _rows_cut,
    candidates,
    rounding_variants,
    with_r1,
)
from ganstep.tools.port import _weight_text as weight_text


@pytest.mark.parametrize("every", [1, 4])
@pytest.mark.parametrize("output", ["logits", "probabilities"])
def test_every_candidate_with_r1_builds(every, output):
    """The relativistic objectives (RaSGAN(detach_mean=True), a partial) take no r1:
    each was given one, and every Step made of it raised TypeError, which the port then
    reported as the error of every candidate."""
    scores = torch.randn(8, 1, requires_grad=True)  # (a Sigmoid read from the graph)
    made = with_r1(candidates(scores.sigmoid() if output == "probabilities" else scores,
                              "r1", None), every, rounds=1)  # fmt: skip
    assert made and all(isinstance(c.make(), Objective) for c in made)
    assert not any(c.objective.startswith(("Ra", "RS")) for c in made)


def test_rounding_variants_compute_as_bce_with_logits_and_keep_the_label():
    logits = candidates(torch.randn(8, 1), None, None)
    by_code = {c.objective: c for c in logits}
    ((ns,),) = [rounding_variants(by_code["NS()"])]
    assert ns.objective == "NS(bce_with_logits=True)"
    assert ns.make().bce_with_logits and isinstance(ns.make(), NS)
    ((smoothed,),) = [rounding_variants(by_code["NS(real_label=0.9)"])]
    assert smoothed.objective == "NS(real_label=0.9, bce_with_logits=True)"
    assert smoothed.make().real_label == 0.9 and smoothed.make().bce_with_logits
    ((minimax,),) = [rounding_variants(by_code["Minimax()"])]
    assert type(minimax.make()) is Minimax and minimax.make().bce_with_logits
    assert rounding_variants(by_code["LSGAN()"]) == []
    probabilities = candidates(torch.randn(8, 1, requires_grad=True).sigmoid(), None, None)
    assert all("probabilities=True" in c.objective for c in probabilities)
    assert all(rounding_variants(c) == [] for c in probabilities)


def _capture_of_g_calls(keywords: list[dict], cut: set[int] = frozenset()) -> Capture:
    capture = Capture()
    capture.keywords = {seq: k for seq, k in enumerate(keywords) if k}
    capture.cut = set(cut)
    return capture


def test_the_keywords_that_make_g_return_its_latents_are_its_path_length_calls_own():
    """G's calls: D's fakes, G's step, then its path length call (lazy). A keyword only the
    lazy call took (rosinality's return_latents=True) is read as what makes G return its
    latents; one the lazy call shares with G's step (StyleGAN3's update_emas=False, D's
    fakes taking True) is not; nor any where the script calls G's parts itself."""
    zs = [((torch.zeros(8, 2),), []), ((torch.zeros(8, 2),), []), ((torch.zeros(4, 2),), [])]
    lazy = [False, False, True]
    rosinality = _capture_of_g_calls([{}, {}, {"return_latents": True}])
    form = _lazy_form(rosinality, zs, [0, 1, 2], lazy, None)
    assert form == {"g_latents": {"return_latents": True}, "lazy_drawn": True, "lazy_shrink": 2}
    stylegan3 = _capture_of_g_calls([{"update_emas": True}, {"update_emas": False},
                                     {"update_emas": False}], cut={2})  # fmt: skip
    form = _lazy_form(stylegan3, zs, [0, 1, 2], lazy, None)
    assert form == {"g_latents": None, "lazy_drawn": False, "lazy_shrink": 2}
    assert (
        _lazy_form(rosinality, zs, [0, 1, 2], lazy, ("mapping", "synthesis"))["g_latents"] is None
    )
    quarter = [*zs[:2], ((torch.zeros(2, 2),), [])]
    assert _lazy_form(rosinality, quarter, [0, 1, 2], lazy, None)["lazy_shrink"] == 4


def test_rows_cut_from_a_bigger_z_are_told_from_a_z_drawn_whole():
    """StyleGAN2-ADA's Greg z is gen_z[:batch_size], rows of a round's; rosinality's is a
    draw of its own, or one of two unbound from a (2, n, d) draw."""
    z = torch.randn(8, 3)
    assert _rows_cut(z[:4]) and _rows_cut(z.split(4)[1])
    assert not _rows_cut(torch.randn(4, 3)) and not _rows_cut(torch.randn(2, 4, 3).unbind(0)[0])
    assert not _rows_cut(z[:, :2])  # columns, all the rows


def test_the_style_mixing_probability_is_read_from_the_scripts_names():
    """rosinality's ``args.mixing``, or a global named for it; not a number outside [0, 1]
    nor one of another name (then the port prints the share of G's calls seen mixing)."""
    assert _mixing_probability({"args": argparse.Namespace(mixing=0.9, lr=0.002)}) == (
        "args.mixing", 0.9)  # fmt: skip
    assert _mixing_probability({"style_mixing_prob": 0.5}) == ("style_mixing_prob", 0.5)
    assert _mixing_probability({"mixing": 2.0, "p": 0.9}) is None
    assert _mixing_probability({"args": argparse.Namespace(mixing=1)}) is None  # not a float


@pytest.mark.parametrize(
    ("fitted", "read", "shown"),
    [
        (5.0000003, 5.0, "5.0"),  # pix2pixHD's 1 / 2 * 4 / 4 * 10
        (10 / 3 * (1 + 3e-6), 10 / 3, "10 / 3"),  # its 1 / num_D with 3 scales
        (20 / 3 * (1 - 2e-6), 20 / 3, "20 / 3"),
        (0.1234567, 0.1235, "0.1235"),  # no fraction of a small denominator: 4 digits
        (100.00001, 100.0, "100.0"),
    ],
)  # fmt: skip
def test_a_fitted_weight_is_read_as_the_scripts(fitted, read, shown):
    """A least squares fit gives the script's weight to about 6 digits: it is read as
    the fraction of a small denominator it is (printed so where its repr is long), else
    to 4 digits, and verification decides."""
    assert _read_weight(fitted) == read and weight_text(read) == shown


def test_the_first_moment_is_adams_or_sgds_after_one_step_only():
    """G's first gradient is read from its optimizer's state after one step: Adam's
    exp_avg, SGD's momentum buffer; not after two steps, nor from plain SGD's (none)."""
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.full((3,), 2.0)
    states = {}
    for name, opt in (("adam", torch.optim.Adam([p], betas=(0.5, 0.9))),
                      ("momentum", torch.optim.SGD([p], lr=0.1, momentum=0.9)),
                      ("sgd", torch.optim.SGD([p], lr=0.1))):  # fmt: skip
        opt.step()
        states[name] = copy.deepcopy(opt.state_dict()["state"])
        opt.step()
        states[f"{name} twice"] = copy.deepcopy(opt.state_dict()["state"])
    assert torch.equal(_moments(states["adam"])[0], torch.full((3,), 1.0))  # (1 - 0.5) * 2
    assert torch.equal(_moments(states["momentum"])[0], torch.full((3,), 2.0))
    assert _moments(states["adam twice"]) is None and _moments(states["sgd"]) is None
