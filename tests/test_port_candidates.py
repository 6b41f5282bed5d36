"""The port's candidate objectives are ones a Step can be built with: R1 is added only
to objectives that take it, and the rounding variants keep their options; and how the
port reads G's path length calls and style mixing from what the script did, and G's
terms' weights from its first gradient (and where a probe of them ends a candidate)."""

from __future__ import annotations

import argparse
import copy
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import environment
from helpers.launcher import LAUNCHER

from ganstep.engine.objectives import NS, Hinge, Minimax, Objective
from ganstep.tools.port import (
    Candidate,
    Capture,
    Replay,
    _condition_line,
    _d_parted,
    _draw,
    _latent_line,
    _lazy_form,
    _mixing_probability,
    _moments,
    _Parted,
    _parted_at_step,
    _read_weight,
    _rows_cut,
    _Script,
    candidates,
    parted_line,
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
    ((both,),) = [rounding_variants(by_code["NS(real_label=0.9, g_label=0.9)"])]
    assert both.objective == "NS(real_label=0.9, g_label=0.9, bce_with_logits=True)"
    made = both.make()
    assert (made.real_label, made.g_label, made.bce_with_logits) == (0.9, 0.9, True)
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
        (0.0099985, 0.01, "0.01"),  # a small term beside a large one: about 3 digits
        (0.0050012, 0.005, "0.005"),
        (0.0099, 0.0099, "0.0099"),
    ],
)  # fmt: skip
def test_a_fitted_weight_is_read_as_the_scripts(fitted, read, shown):
    """A least squares fit gives the script's weight to about 6 digits (3 for a small
    term beside a large one): it is read as the fraction of a small denominator it is
    (printed so where its repr is long), else to 2 digits where it is so to 1e-3, else to
    4 digits, and verification decides."""
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


def stepped(D: torch.nn.Module, sign: float) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """A copy of ``D`` after one Adam step (lr 0.01) on a gradient of ``sign`` everywhere."""
    D = copy.deepcopy(D)
    opt = torch.optim.Adam(D.parameters(), lr=0.01)
    for p in D.parameters():
        p.grad = torch.full_like(p, sign)
    opt.step()
    return D, opt


@pytest.mark.parametrize(
    ("steps", "parts"),
    [(["D", "G"], True), (["D", "D", "G"], True), (["D"], True), (["G", "D"], False),
     (["D", "G", "D"], False), (["G"], False), ([], False)],
)  # fmt: skip
def test_a_probe_ends_a_candidate_only_where_ds_steps_came_before_gs(steps, parts):
    """A probe of G's terms (their weights 0) tells a candidate apart by D alone only
    where every D step of its first iteration came before G's first: later ones took
    fakes or gradients of the G its terms moved. Past ROUNDING_GAP in D's parameters or
    its optimizer's state (Adam's first moment on opposite gradients), not within it."""
    torch.manual_seed(0)
    D = torch.nn.Linear(3, 1)
    theirs, their_opt = stepped(D, 1.0)
    script = _Script(torch.nn.Linear(1, 1), theirs, None, their_opt,
                     {"G": "netG", "D": "netD", "opt_g": "optG", "opt_d": "optD"})  # fmt: skip
    ends = {id(theirs): copy.deepcopy(theirs.state_dict()),
            id(their_opt): copy.deepcopy(their_opt.state_dict())}  # fmt: skip
    moved, moved_opt = stepped(D, 1.0)
    opposite, opposite_opt = stepped(D, -1.0)
    near, near_opt = stepped(D, 1.0)
    with torch.no_grad():
        moved.weight[0, 1] += 0.25
        near.bias += 1e-3 / 2
    said = [
        _d_parted(script, ends, [None, d, None, opt], steps)
        for d, opt in ((moved, moved_opt), (opposite, opposite_opt), (near, near_opt))
    ]
    if parts:
        assert said == [
            "they part at iteration 0, most in netD.weight (0.25)",
            "they part at iteration 0, most in optD.1.exp_avg (0.2)",
            "",
        ]
    else:
        assert said == ["", "", ""]


def watched(tmp_path: Path, code: str, script: str) -> tuple[dict, dict]:
    """``code`` (an audit of the script named SCRIPT in it, its JSON written to r.json,
    then what it saw printed as the last line of JSON) run in a process of its own on
    the audit script ``script``: what it saw, and the port."""
    path = Path(__file__).parent / "audit_scripts" / f"{script}.py"
    code = code.replace("SCRIPT", repr(str(path)))
    proc = LAUNCHER.run([sys.executable, "-c", code], env=environment(tmp_path), cwd=tmp_path,
                        timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    return seen, json.loads((tmp_path / "r.json").read_text())["port"]


PROBED = """
import json, sys
from dataclasses import replace

import torch
from ganstep.cli import run
from ganstep.tools import port

searched, runs = [], []
their_run, their_search = port._run, port._search

def counted(*args, **kwargs):
    runs.append("probe" if kwargs.get("steps") is not None else "run")
    return their_run(*args, **kwargs)

def search(script, capture, data, report, n, tried, *args, **kwargs):
    searched.append((script, capture, data, list(tried)))
    return their_search(script, capture, data, report, n, tried, *args, **kwargs)

port._run, port._search = counted, search
sys.argv = ["ganstep", "audit", SCRIPT, "--iterations", "2", "--port", "--json", "r.json",
            "--", "--epochs", "1"]
try:
    run()
except SystemExit:
    pass
script, capture, data, tried = searched[0]
searched_runs = runs.count("run")
parted, checked = [(s, c) for s, c in tried if c.parted], []
for schedule, candidate in parted:  # D's state alike at any weight, and the run parts
    key = port._keys_for([port.FEATURES], schedule[0], data)[0]
    found = []
    for weight in (40 / 9, 100.0):
        twins = []
        try:
            gap, _ = port._run(script, capture, data, schedule,
                               replace(candidate, parted="", g_fit=((key, weight),)), 1,
                               twins=twins)
        except ValueError as e:  # (the Step refuses the term with this objective)
            found.append((str(e), None))
            continue
        found.append((gap, [p.detach().clone() for p in twins[1].parameters()]))
    if found[0][1] is None or found[1][1] is None:
        checked.append({"raised": [gap for gap, d in found if d is None]})
        continue
    same = all(torch.equal(a, b) for a, b in zip(found[0][1], found[1][1]))
    checked.append({"same_d": same, "gaps": [gap for gap, _ in found]})
print(json.dumps({"tried": len(tried), "parted": len(parted), "checked": checked,
                  "searched_runs": searched_runs, "tolerance": port.TOLERANCE}))
"""


def test_candidates_whose_d_parts_in_the_first_probe_are_not_fitted_nor_run_again(tmp_path):
    """MelGAN's multi-scale D: G's feature matching is weighted as G's first gradient
    says, from a probe run of each candidate without the term and one with it. Where
    the first probe's D steps (all before G's) part from the script's, no weight of G's
    terms can bring D back: the candidate ends there, its line the search's. Each
    candidate so ended, run with its term at the script's weight or another, has the
    same D after that iteration and parts from the script; the search runs only the
    others (of 38 candidates, 32 end in their first probe: 57 runs, not 153)."""
    seen, port = watched(tmp_path, PROBED, "descript_melgan")
    assert port["max_difference"] == 0 and "objective=Hinge()," in port["code"]
    assert seen["parted"] >= seen["tried"] / 2, seen
    ran = [c for c in seen["checked"] if "raised" not in c]
    assert len(ran) >= seen["parted"] / 2, seen  # the others: a Step refuses the term
    assert all(c["same_d"] and min(c["gaps"]) > seen["tolerance"] for c in ran), seen
    assert all(len(c["raised"]) == 2 for c in seen["checked"] if "raised" in c), seen
    assert seen["searched_runs"] == seen["tried"] - seen["parted"]


def test_where_the_chosen_step_parted_is_found_with_or_without_its_fitted_terms():
    """The float64 search's Step (its G terms fitted there) is looked up among the
    float32 search's lines: by its own label, else by the label it had unfitted (a
    probe ended it there before any weight was read)."""
    hinge = Candidate("Hinge()", Hinge, 1.0, 1.0, "hinge")
    fitted = (("d_first()", False), replace(hinge, g_fit=(("features", 40 / 9),)))
    unfitted = "d_first(), Hinge() d_scale=1.0 g_scale=1.0: they part at iteration 0, most in a"
    fitted_line = ("d_first(), Hinge() d_scale=1.0 g_scale=1.0 features=40 / 9: they part at "
                   "iteration 1, most in b")  # fmt: skip
    assert parted_line([unfitted], fitted) == "they part at iteration 0, most in a"
    assert parted_line([unfitted, fitted_line], fitted) == "they part at iteration 1, most in b"
    assert parted_line([fitted_line], (fitted[0], hinge)) is None
    assert parted_line([unfitted], (("g_first()", False), hinge)) is None


def test_a_run_ends_at_the_first_step_that_parts_while_the_steps_are_the_scripts():
    """A copy's optimizer step is compared with the script's same step (Capture.history's
    key k: its k-th) only while the copies stepped G and D in the order the script did:
    past ROUNDING_GAP it ends the run; within it, or at an infinite tolerance (a probe),
    or once the order differs, not."""
    torch.manual_seed(0)
    D = torch.nn.Linear(3, 1)
    theirs, their_opt = stepped(D, 1.0)
    G, opt_g = torch.nn.Linear(1, 1), torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], 0.1)
    script = _Script(G, theirs, opt_g, their_opt,
                     {"G": "netG", "D": "netD", "opt_g": "optG", "opt_d": "optD"})  # fmt: skip
    capture = Capture()
    capture.history[1] = {id(theirs): copy.deepcopy(theirs.state_dict()),
                          id(their_opt): copy.deepcopy(their_opt.state_dict())}  # fmt: skip
    data = Replay([], [], stepped=["D", "G"])
    moved, moved_opt = stepped(D, 1.0)
    with torch.no_grad():
        moved.weight[0, 0] -= 0.125

    def check(steps: list[str], beyond: float = 1e-3, module=moved) -> list[str]:
        _parted_at_step(script, capture, data, steps, "D", module, moved_opt, beyond)
        return steps

    with pytest.raises(_Parted) as parted:
        check([])
    assert parted.value.args == (pytest.approx(0.125, rel=1e-6), "netD.weight")
    assert check([], beyond=0.2) == ["D"]  # within: on
    assert check([], beyond=float("inf")) == ["D"]
    assert check(["G"]) == ["G", "D"]  # the script's first step was D's
    assert check(["D"]) == ["D", "D"]  # no history of a second step: nothing to compare
    same, _ = stepped(D, 1.0)
    assert check([], module=same) == ["D"]


PARTED_EARLY = """
import json, sys

from ganstep.cli import run
from ganstep.tools import port

runs = []  # each search run: (its arguments, the steps it took, what it returned)
their_run, their_check = port._run, port._parted_at_step

def counted(*args, **kwargs):
    if "steps" in kwargs:  # a probe of G's terms
        return their_run(*args, **kwargs)
    taken = []
    found = their_run(*args, **kwargs, steps=taken)
    runs.append((args, len(taken), found))
    return found

port._run = counted
sys.argv = ["ganstep", "audit", SCRIPT, "--iterations", "3", "--port", "--json", "r.json"]
try:
    run()
except SystemExit:
    pass
port._run = their_run
port._parted_at_step = lambda script, capture, data, steps, *_: steps.append("")
checked = []
for args, taken, (gap, where) in runs:
    if not where.startswith("they part"):
        continue
    whole = []
    full_gap, full_where = their_run(*args, steps=whole)  # to the iteration's end, unchecked
    checked.append({"where": where, "taken": taken, "gap": gap, "whole": len(whole),
                    "full_gap": full_gap, "full_where": full_where})
print(json.dumps({"runs": len(runs), "checked": checked, "tolerance": port.TOLERANCE}))
"""


def test_candidates_part_at_their_first_step_apart_and_would_at_their_iterations_end(tmp_path):
    """Persson's WGAN-GP: five critic steps, then G's, an iteration. A candidate whose
    critic step parts from the script's past ROUNDING_GAP ends there (before, it ran
    the iteration's five critic steps and G's step); run to the end of that iteration
    without the check, each such candidate parts there too: the verdicts are the same."""
    seen, port = watched(tmp_path, PARTED_EARLY, "persson_wgan_gp")
    assert port["max_difference"] <= 1e-6 and "d_first(d_steps=5)" in port["code"]
    early = [c for c in seen["checked"] if c["taken"] < c["whole"]]
    assert len(early) >= len(seen["checked"]) / 2 and all(c["taken"] == 1 for c in early), seen
    for c in seen["checked"]:  # the same iteration, and past the tolerance at its end
        assert c["full_where"].startswith(c["where"].split(", most in")[0]), c
        assert c["full_gap"] > seen["tolerance"] and (c not in early or c["gap"] > 1e-3), c


@pytest.mark.parametrize(
    ("draw", "code", "law"),
    [(lambda: torch.rand(64, 8), "torch.rand(n, 8)", "uniform on [0, 1)"),
     (lambda: torch.rand(64, 8) * 2 - 1, "torch.rand(n, 8) * 2 - 1", "uniform on [-1, 1)"),
     (lambda: torch.randn(64, 8), "torch.randn(n, 8)", "normal"),
     # infogan.py's info code, np.random.normal(-1, 1): about a mean of its own
     (lambda: torch.randn(64, 8) - 1, "torch.randn(n, 8) - 1", "normal about -1"),
     # a batch of 4 from normal(0, 1) may sit 0.4 off 0: not 5 standard errors
     (lambda: torch.randn(4, 8) * 0.9 + 0.4, "torch.randn(n, 8)", "normal")],
)  # fmt: skip
def test_the_printed_latent_says_its_law_was_read_from_the_scripts_z(draw, code, law):
    """The port sees the script's z, not how it drew them (numpy's np.random.normal in
    PyTorch-GAN's scripts): the line says which law it read from their range, not that
    the script drew with the torch call it prints."""
    torch.manual_seed(0)
    line = _latent_line(draw())
    assert line.startswith(f"    latent=lambda n: {code},  # G's input: shape (n, 8), ")
    assert f", {law} as read from the script's z (mean " in line and "drew" not in line
    labels = _condition_line(torch.tensor([0, 3, 1, 2]))
    assert labels.endswith("# G's second input: labels from 0 to 3 (those the script drew), "
                           "torch.int64")  # fmt: skip
    maps = torch.nn.functional.one_hot(torch.tensor([0, 2, 1]), 3).float().reshape(3, 3, 1, 1)
    assert "one-hot labels of 3 classes (0 to 2 seen" in _condition_line(maps)
    # one of G's several inputs (infogan.py's labels), a one-hot of floats
    assert _draw(torch.nn.functional.one_hot(torch.tensor([0, 3, 1]), 4).double()) == (
        "torch.nn.functional.one_hot(torch.randint(0, 4, (n,)), 4).to(torch.float64)",
        "one-hot labels of 4 classes")  # fmt: skip


@pytest.mark.parametrize(("made", "shown"), [
    (lambda x: x * 2 - 1, "x * 2 - 1"),
    (lambda x: (x - 0.5) * 2.0, "x * 2 - 1"),
    (lambda x: x / 255, "x / 255"),
    (lambda x: x * 0.3 + 0.2, "x * 0.3 + 0.2"),
    (lambda x: x.view(len(x), -1), "x.reshape(len(x), -1)"),
    (lambda x: (x * 2 - 1).view(len(x), -1), "(x * 2 - 1).reshape(len(x), -1)"),
    (lambda x: x.view(len(x), 4, 4), "x.reshape(len(x), 4, 4)"),
    (lambda x: x.view(-1), "x.reshape(96)"),
    (lambda x: x.clone(), None),  # the batch as it came
    (lambda x: x + 0.1 * torch.randn_like(x), None),  # noise: no rescaling of x
    (lambda x: x.flip(0), None),  # other samples' values
])  # fmt: skip
def test_a_real_batch_made_is_read_from_its_values(made, shown):
    """Where the script made D's real batch in lines the audit cannot read it from (a
    function of its own calling D), the batch is read from its values as the
    DataLoader's rescaled or reshaped; anything else is not named so."""
    from ganstep.tools.port import _made_from

    torch.manual_seed(0)
    x = torch.rand(6, 1, 4, 4)
    assert _made_from(made(x), x) == shown
    assert _made_from(made(x), torch.rand(5, 1, 4, 4)) is None  # another batch size
    assert _made_from(made(x), torch.ones(6, 1, 4, 4)) is None  # a constant: nothing to fit


def test_penalty_forms_are_each_wgan_gp_candidates_one_sided_and_zero_centered():
    """Tried where no candidate equals: every WGAN-GP candidate's two other forms (its
    weight, interpolation and alpha kept) and itself with ProGAN's drift term; the
    Wasserstein losses alone with the drift term; none for other objectives or a form
    already chosen."""
    from ganstep.tools.port import DRIFT, penalty_forms

    found = candidates(torch.randn(8, 1), "gp", None, images=True, numpy_alpha=True)
    assert len(found) == 12  # 3 weights: mix, difference, channel norms, numpy's alpha
    for c in found:
        one_sided, zero, drifted = penalty_forms(c)
        assert one_sided.objective == c.objective[:-1] + ", one_sided=True)"
        assert zero.objective == c.objective[:-1] + ", center=0.0)"
        made, plain = one_sided.make(), c.make()
        assert made.one_sided and made.center == 1.0 and not zero.make().one_sided
        assert zero.make().center == 0.0
        assert (made.weight, made.interpolate, made.flatten, made.alpha) == (
            plain.weight, plain.interpolate, plain.flatten, plain.alpha)  # fmt: skip
        assert (drifted.objective, drifted.make, drifted.drift) == (c.objective, c.make, 0.001)
        assert c.drift is None and one_sided.drift is None and zero.drift is None
        assert penalty_forms(one_sided) == penalty_forms(zero) == penalty_forms(drifted) == []
    plain = candidates(torch.randn(8, 1), None, None)
    for c in plain:
        forms = penalty_forms(c)
        if c.objective == "Wasserstein()":
            assert [(f.objective, f.drift) for f in forms] == [("Wasserstein()", DRIFT)]
        else:
            assert forms == [], c.objective
    assert any(c.objective == "Wasserstein()" for c in plain)
