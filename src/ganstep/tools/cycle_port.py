"""``ganstep audit --port`` for CycleGAN's loops: the CycleStep that equals the script.

The audit reads such a script as two sides (:mod:`.sides`) and names the CycleStep of
its update order, its Ds' order and its G forwards' order. What the order does not say
is in the losses: the objective and its scales, the cycle weight, the identity weight
and the pool. Each objective a CycleGAN codebase writes (least squares with G's loss
as MSE or halved, BCE with D's loss halved or not, hinge, the Wasserstein losses alone:
junyanz's ``--gan_mode wgangp``, whose CycleGAN adds no penalty), with and without
DiscoGAN's pixelwise translation L1 where G ran no identity maps, is tried (where D's
steps took a double backward, WGAN-GP's forms: DualGAN's); the cycle weight is
read from the value of the script's first G loss, less that objective's adversarial
part, over the sum of the cycle L1s and the identity L1s at their weight, the terms a
CycleStep logs on the script's first batches. Where G ran its identity maps, that
weight over the cycle weight is read from G's first gradient, which is linear in both
(the script's Adam moment after its first step against three CycleSteps'); where that
moment is not there, both codebases' default, half. The pool is the one the script's
D was given past fakes through (CycleGAN's 50), or none. Each candidate then runs the audited
iterations on copies of the script's four modules from their first states, one
optimizer over both Gs and one over both Ds (the script's own, or one over its two D
optimizers' parameters with their settings), on the batches the script gave its Gs,
with torch's, Python's and numpy's generators as the script's were (Dropout's masks,
the pool's draws, a penalty's alpha), and is compared with the script's states after
each of its iterations' steps. The one within tolerance is printed; nothing printed is
unverified.
"""

from __future__ import annotations

import itertools
import random
import sys
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor, nn

from ..engine.cycle import CycleStep
from ..engine.objectives import WGANGP, Objective, Wasserstein
from .audit import held_ids, stepped_through
from .port import (
    GP_WEIGHTS,
    NUMPY_ALPHA,
    TOLERANCE,
    Capture,
    Port,
    Printed,
    _copy,
    _parts,
    _set_numpy_state,
    _set_rng,
    difference,
    first_g_moments,
    global_names,
    path_to,
)
from .sides import Cycle, first_step, step_call

# (objective, g_scale) as CycleGAN codebases write their G losses: junyanz's lsgan (MSE:
# twice ganstep's G loss), PyTorch-GAN's (its two MSEs averaged), BCE (junyanz's
# vanilla), hinge, junyanz's wgangp (-mean(D(fake)); its CycleGAN never calls the
# penalty it names, so D is unbounded: Wasserstein, not WGAN-GP); D's scale is read from
# the script's D losses
OBJECTIVES = (("lsgan", 2.0), ("lsgan", 1.0), ("ns", 1.0), ("hinge", 1.0),
              (Wasserstein(), 1.0))  # fmt: skip
IDENTITY = 0.5  # the identity maps' weight, of the cycle weight (both codebases' default),
# where the script's first G gradient cannot be read (see _identity_ratio)
# DiscoGAN's pixelwise translation term (PyTorch-GAN's discogan.py: each fake against the
# other domain's real batch, averaged, added with weight 1), as the printed code defines
# it; tried where G ran no identity maps (no CycleGAN codebase writes both)
PIXELWISE = """def pixelwise(v):  # discogan.py's loss_pixelwise: each fake vs the other real batch
    return (F.l1_loss(v.fake_A, v.real_A) + F.l1_loss(v.fake_B, v.real_B)) / 2
"""
POOL = 50  # CycleGAN's pool of past fakes per domain
# where D's steps took a double backward (a gradient penalty): WGAN-GP, with the weights
# the Step's port tries, its penalty before D's loss forwards (DualGAN's) or after them,
# its interpolation weights drawn by torch or by numpy's global generator in float32
# (PyTorch-GAN's FloatTensor(np.random.random(...)): the Step port's NUMPY_ALPHA)
PENALTY_AT = ("before", "after")


def _penalized() -> list[tuple[Objective, float]]:
    """The WGAN-GP candidates (objective, g_scale) of a script whose D steps took a
    double backward."""
    alphas = [None] + ([Printed(NUMPY_ALPHA)] if "numpy" in sys.modules else [])
    return [(WGANGP(w, alpha=alpha, penalty_at=at), 1.0)
            for w in GP_WEIGHTS for at in PENALTY_AT for alpha in alphas]  # fmt: skip


@dataclass
class _Iteration:
    """What one audited iteration gave the script's update: the two real batches, torch's
    generator state at its first module call (numpy's too), Python's before D's pool
    draws, and its last step's place."""

    real_A: Tensor
    real_B: Tensor
    rng: list[Tensor]
    py_state: object
    end: int
    np_state: object = None  # numpy's global generator at its first module call


def cycle_port(rec, report, capture: Capture, n: int,
               tolerance: float = TOLERANCE,
               ignore: frozenset[str] = frozenset()) -> Port:  # fmt: skip
    """The verified CycleStep of a script read as CycleGAN's (``report.cycle``), over its
    first ``n`` iterations; or why none is printed. ``ignore``: entries not compared
    (``"G_A.1.bias"``, by CycleStep's names: with their optimizer states)."""
    cycle: Cycle = report.cycle
    modules = cycle_modules(rec, cycle)
    found = _optimizers(rec, modules)
    if isinstance(found, str):
        return Port(None, n, notes=[found])
    opt_g, opts_d = found
    iterations = _iterations(rec, capture, cycle, n)
    if isinstance(iterations, str):
        return Port(None, n, notes=[iterations])
    calls = len(iterations)  # the script's iterations: a D-first cycle's G period holds several
    values = _first_loss(rec, "G"), _first_loss(rec, "D")
    if None in values:
        return Port(None, n, notes=["the script's first G or D loss is not one number the "
                                    "audit read, so its weights cannot be read"])  # fmt: skip
    identity, options = cycle.identity_maps, cycle.options
    pool = POOL if _pooled(rec) else None
    drew = pool is not None and _pool_drew(rec, capture, n)
    twins = lambda: _twins(modules, opt_g, opts_d, capture)  # noqa: E731
    notes, equal = [], []
    # where the script's pool drew, a pool that draws as its own does: CycleGAN's 50
    # first (a pool as large as the rows seen never draws), then each smaller size
    rows = sum(len(it.real_A) for it in iterations)
    pools = [pool, *range(1, rows)] if drew else [pool]
    verify = partial(_verify, iterations=iterations, capture=capture, modules=modules,
                     opt_g=opt_g, opts_d=opts_d, tolerance=tolerance, ignore=ignore)  # fmt: skip
    terms = [{}] if identity else [{}, {"g_terms": {"pixelwise": Printed(PIXELWISE)}}]
    objectives = _penalized() if report.double_backwards.get("D", 0) > 0 else OBJECTIVES
    first_m = _first_g_moments(rec, capture, opt_g) if identity else None
    for (objective, g_scale), term in itertools.product(objectives, terms):
        kind = {"objective": objective, "g_scale": g_scale}
        for size in pools:  # (the pool moves D's first loss, which D's scale is read from)
            settings, tried = {**options, "fake_pool": size}, {**kind, **term}
            # the terms each weighted 1 on the script's first batches, and that run's copies
            unit = _probe(twins(), tried, settings, iterations[0], 1.0, float(identity))
            ratio = IDENTITY if identity else 0.0
            if unit is not None and first_m is not None:  # what G's first gradient says
                ratio = _identity_ratio(unit, twins, tried, settings, iterations[0], first_m,
                                        modules) or IDENTITY  # fmt: skip
            weights = None if unit is None else _weights(unit[0], tried, ratio, values)
            if weights is None:
                where = (f"{said({**kind, **term})}: no positive weights give the script's "
                         "first losses")  # fmt: skip
                break
            candidate = {**kind, "d_scale": weights[1], "cycle": weights[0],
                         "identity": ratio, "fake_pool": size, **options, **term}  # fmt: skip
            gap, parted, maybe_pool = verify(twins(), candidate)
            where = f"{said(candidate)}: {parted}" if parted else ""
            if not parted or not maybe_pool:  # equal, or G parted at once: not the pool
                break
        if where:
            notes.append(where)
        else:
            equal.append((gap, candidate))
    if len(equal) != 1:
        head = ("no CycleStep tried equals the script" if not equal else
                f"{len(equal)} CycleSteps equal the script over {calls} iteration(s): more "
                "iterations (--verify N) tell them apart")  # fmt: skip
        return Port(None, calls, notes=[head, *notes])
    gap, candidate = equal[0]
    kept = []
    if candidate["fake_pool"] == POOL and not drew:
        kept.append(f"the script's pool of past fakes did not draw in {calls} iteration(s), so "
                    f"its size is not seen: CycleGAN's {POOL} printed")  # fmt: skip
    code = _code(cycle, candidate, opt_g, opts_d, rec)
    return Port(code, calls, gap, notes=kept, step_options=candidate)


def said(candidate: dict) -> str:
    """A candidate's label in the port's notes."""
    return "CycleStep(" + ", ".join(f"{k}={v!r}" for k, v in candidate.items()) + ")"


def cycle_modules(rec, cycle: Cycle) -> tuple[nn.Module, ...]:
    """The script's G_A, G_B, D_A, D_B, as CycleStep takes them."""
    g, d = rec.modules["G"], rec.modules["D"]
    a, b, c, e = cycle.places
    return g[a], g[b], d[c], d[e]


def _optimizers(rec, modules: tuple[nn.Module, ...]) -> tuple | str:
    """The script's optimizer over both Gs and its one or two over the Ds (D_A's first)."""
    params = [{id(p) for p in m.parameters()} for m in modules]
    g_opts = [o for o in rec.optimizers if held_ids(o) == params[0] | params[1]]
    if len(g_opts) != 1:
        return "the script's Gs are not trained by one optimizer over both"
    both = [o for o in rec.optimizers if held_ids(o) == params[2] | params[3]]
    each = [next((o for o in rec.optimizers if held_ids(o) == p), None) for p in params[2:]]
    if both:
        return g_opts[0], (both[0],)
    if None in each:
        return "the script's Ds are not trained by one optimizer over both or one each"
    a, b = each
    if type(a) is not type(b) or _settings(a) != _settings(b):
        return ("the script's two D optimizers differ in kind or settings: CycleStep's one "
                "optimizer over both cannot take them")  # fmt: skip
    return g_opts[0], (a, b)


def _settings(opt) -> list[dict]:
    return [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]


def _twins(modules, opt_g, opts_d, capture: Capture) -> tuple:
    """Copies of the four modules from their first states, and one optimizer over the
    Gs' copies and one over the Ds' in the states the script made its own in."""
    twins = [_copy(m, capture.first_state[id(m)]) for m in modules]
    twin_of = _twin_of(modules, twins)
    made = []
    for opts in ((opt_g,), opts_d):
        groups, state = [], {"state": {}, "param_groups": []}
        for opt in opts:
            saved = capture.made_state[id(opt)]
            index = sum(len(g["params"]) for g in groups)  # this optimizer's first
            for group, kept in zip(opt.param_groups, saved["param_groups"], strict=True):
                groups.append({**{k: v for k, v in group.items() if k != "params"},
                               "params": [twin_of[id(p)] for p in group["params"]]})  # fmt: skip
                moved = [index + i for i in kept["params"]]
                state["param_groups"].append({**kept, "params": moved})
            state["state"].update({index + k: v for k, v in saved["state"].items()})
        twin = type(opts[0])(groups)
        twin.load_state_dict(state)
        made.append(twin)
    for t in twins:  # trainable, whatever the script left them switched to
        t.requires_grad_(True)
    return (*twins, *made)


def _twin_of(modules, twins) -> dict[int, nn.Parameter]:
    """Each copy's parameter by the id of the script's it copies."""
    return {id(p): q for m, t in zip(modules, twins, strict=False)
            for p, q in zip(m.parameters(), t.parameters(), strict=True)}  # fmt: skip


def _iterations(rec, capture: Capture, cycle: Cycle, n: int) -> list[_Iteration] | str:
    """What each CycleStep call of the first ``n`` audited iterations is given (see
    _Iteration). An audited iteration of a D-first cycle whose G steps every
    ``g_every``-th iteration (DualGAN's) holds that many of the script's iterations, each
    a call: each D step not followed by G's ends one, as each G step does."""
    fed = {id(f.producer) for f in rec.forwards if f.producer is not None}
    g_a, g_b = cycle.places[:2]
    d_first = cycle.order == "d_first"
    steps = sorted((s for s in rec.opt_steps if s.iteration < n), key=lambda s: s.seq)

    def ends_a_call(k: int) -> bool:
        if not d_first:  # G's step, then D's
            return steps[k].label == "D"
        following = steps[k + 1].label if k + 1 < len(steps) else None
        return steps[k].label == "G" or following != "G"  # D's step, then G's or not

    ends = [s.seq for k, s in enumerate(steps) if ends_a_call(k)]
    out, after = [], -1
    for i, end in enumerate(ends):
        mine = sorted((f for f in rec.forwards if after < f.seq <= end), key=lambda f: f.seq)
        mine = [f for f in mine if f.label == "D" or id(f) in fed]  # the update's forwards
        first_step = next(s for s in steps if after < s.seq <= end)
        after, reals = end, {}
        for f in mine:  # the first call of each G on data whose output went on
            if f.label == "G" and f.producer is None:
                reals.setdefault(f.place, capture.calls[f.seq][0][0])
        if set(reals) != {g_a, g_b}:
            return f"iteration {i}: the batches each G was given are not both seen"
        before = [f for f in mine if d_first or f.seq < first_step.seq]
        py_seq = before[0].seq if d_first else before[-1].seq
        rng, py_state = capture.calls[mine[0].seq][1], capture.py_states.get(py_seq)
        out.append(_Iteration(reals[g_a], reals[g_b], rng, py_state, end,
                              capture.np_states.get(mine[0].seq)))  # fmt: skip
    return out


def _first_loss(rec, side: str) -> float | None:
    """The value of the loss the script's first step of ``side`` stepped (its backward
    passes' sum: each D's, where it takes one backward a D)."""
    step = first_step(rec, side)
    if step is None:
        return None
    values = [rec.backwards[i].value for i in sorted(step.backwards)]
    return None if not values or None in values else sum(values)


def _pooled(rec) -> bool:
    """Whether D's step was given fakes other than G's outputs themselves (a pool's)."""
    step = first_step(rec, "D")
    for f in [] if step is None else stepped_through(rec, step):
        made = f.producer
        if f.label == "D" and made is not None and made.label == "G" and f.key is not None:
            if f.key[0] != made.output.untyped_storage().data_ptr():
                return True
    return False


def _pool_drew(rec, capture: Capture, n: int) -> bool:
    """Whether Python's generator moved during D's steps of the audited iterations (the
    pool drew: it was full)."""
    for i in range(n):
        calls = sorted((f for f in rec.forwards if f.iteration == i and f.label == "D"
                        and f.seq in capture.py_states), key=lambda f: f.seq)  # fmt: skip
        states = [capture.py_states[f.seq] for f in calls]
        if any(a != b for a, b in zip(states, states[1:], strict=False)):
            return True
    return False


def _run(twins: tuple, candidate: dict, it: _Iteration) -> dict[str, float]:
    step = CycleStep(*twins, **candidate)
    return _call(step, it)


def _call(step: CycleStep, it: _Iteration) -> dict[str, float]:
    _set_rng(it.rng)
    if it.py_state is not None:
        random.setstate(it.py_state)
    _set_numpy_state(it.np_state)
    return {k: float(v) for k, v in step(it.real_A.clone(), it.real_B.clone()).items()}


def _probe(twins: tuple, kind: dict, options: dict, first: _Iteration, cycle: float,
           identity: float) -> tuple[dict[str, float], tuple] | None:  # fmt: skip
    """A CycleStep of ``kind`` with D's scale 1 and these weights, run on ``twins`` on the
    script's first batches: its logs and the copies it stepped; None where it fails or
    logs no losses of both sides. ``options`` hold the pool (D's step before G's changes
    G's loss in a D-first order)."""
    try:
        logs = _run(twins, {**kind, **options, "d_scale": 1.0, "cycle": cycle,
                            "identity": identity}, first)  # fmt: skip
    except (ValueError, RuntimeError):
        return None
    return (logs, twins) if "loss_g" in logs and logs["loss_d"] else None


def _weights(logs: dict[str, float], kind: dict, ratio: float,
             values: tuple[float, float]) -> tuple[float, float] | None:  # fmt: skip
    """The cycle weight and D's loss scale that make ``kind``'s G and D losses on the
    script's first batches the script's ``values``, each rounded to 6 digits (None where
    they are not both positive), the identity maps weighted ``ratio`` of the cycle weight
    (0: none ran): from the ``logs`` of :func:`_probe` at weights 1."""
    adversarial = logs["loss_g_a"] + logs["loss_g_b"]
    terms = sum(logs[name] for name in kind.get("g_terms", {}))  # each weighted 1
    cycle = logs["cycle_a"] + logs["cycle_b"]
    maps = logs.get("idt_a", 0.0) + logs.get("idt_b", 0.0)
    weight = (values[0] - adversarial - terms) / (cycle + ratio * maps)
    penalty = logs.get("gp", 0.0)  # in D's loss, unscaled
    d_scale = (values[1] - penalty) / (logs["loss_d"] - penalty)
    if not (weight > 0 and d_scale > 0):
        return None
    return float(f"{weight:.6g}"), float(f"{d_scale:.6g}")


def _first_g_moments(rec, capture: Capture, opt_g) -> dict[int, Tensor] | None:
    """:func:`first_g_moments` by ``id`` of each of G's parameters."""
    found = first_g_moments(rec, capture, opt_g)
    order = [p for g in opt_g.param_groups for p in g["params"]]
    return None if found is None else {id(order[i]): m for i, m in found.items()}


def _identity_ratio(unit: tuple, twins, kind: dict, options: dict, first: _Iteration,
                    theirs: dict[int, Tensor], modules) -> float | None:  # fmt: skip
    """The identity maps' weight over the cycle weight (CycleStep's ``identity``) that the
    script's first G gradient says for ``kind``, to 4 digits: G's gradient is linear in
    the cycle weight c and the identity weight k, so three CycleSteps' first moments
    (c, k = 1, 1, the copies ``unit`` :func:`_probe` stepped; 2, 2; 1, 2) give the
    adversarial part and each term's, and c and k are the least squares fit of the
    script's (``theirs``: :func:`_first_g_moments`). None where a probe fails or the fit
    gives no positive weights."""
    moments = []
    probes = [unit] + [
        _probe(twins(), kind, options, first, cycle, identity)
        for cycle, identity in ((2.0, 1.0), (1.0, 2.0))
    ]  # k = cycle * identity
    for probed in probes:
        if probed is None:
            return None
        made = probed[1]
        twin_of = _twin_of(modules, made)
        state = made[4].state
        parts = [state.get(twin_of[key], {}).get("exp_avg") for key in theirs]
        if any(m is None for m in parts):
            return None
        moments.append(torch.cat([m.double().flatten() for m in parts]))
    one, two_both, two_maps = moments
    maps = two_maps - one  # k's part
    cycles = two_both - one - maps  # c's part
    target = torch.cat([m.double().flatten() for m in theirs.values()]) - (one - cycles - maps)
    system = torch.stack([cycles, maps], dim=1)
    fit = torch.linalg.lstsq(system, target.unsqueeze(1)).solution.flatten()
    c, k = float(fit[0]), float(fit[1])
    if not (c > 0 and k > 0):
        return None
    return float(f"{k / c:.4g}")


def _verify(twins: tuple, candidate: dict, iterations: list[_Iteration], capture: Capture,
            modules, opt_g, opts_d, tolerance: float,
            ignore: frozenset[str] = frozenset()) -> tuple[float, str, bool]:  # fmt: skip
    """The largest difference from the script's states after each iteration, where they
    part ("" where they do not), and whether the pool may be what parts them: G's side
    still equal there (D's alone parted), or every earlier iteration equal (a pool of
    another size may draw as the script's at first, and D's step then moves G's next)."""
    step = CycleStep(*twins, **candidate)
    twin_of = _twin_of(modules, twins)
    worst = 0.0
    for i, it in enumerate(iterations):
        _call(step, it)
        gaps = _gaps(twins, twin_of, capture.at_step[it.end], modules, opt_g, opts_d, ignore)
        gap, key = max(gaps.values())
        worst = max(worst, gap)
        if gap > tolerance:
            return (
                gap,
                _parts(i, (gap, key)),
                gaps["G"][0] <= tolerance or i > 0,
            )
    return worst, "", True


NAMES = ("G_A", "G_B", "D_A", "D_B")  # CycleStep's names of the four modules


def _gaps(twins: tuple, twin_of: dict, states: dict, modules, opt_g, opts_d,
          ignore: frozenset[str] = frozenset()) -> dict[str, tuple[float, str]]:  # fmt: skip
    """The largest difference between the copies (``twin_of``: by the script's
    parameters) and the script's ``states`` on each side ("G", "D"), and where: each
    module's state entry, and each parameter's optimizer state; the entries ``ignore``
    names left out."""
    worst = {"G": (0.0, ""), "D": (0.0, "")}
    left_out: set[int] = set()  # the script's parameters ignored
    for name, twin, module in zip(NAMES, twins, modules, strict=False):
        theirs = states[id(module)]
        for key, value in twin.state_dict().items():
            if f"{name}.{key}" not in ignore:
                here = difference({key: value}, {key: theirs[key]}, name)
                worst[name[0]] = max(worst[name[0]], here)
        left_out |= {id(p) for key, p in module.named_parameters() if f"{name}.{key}" in ignore}
    named = [("G", "opt_g", twins[4], opt_g)]
    named += [("D", f"opt_d{k}", twins[5], o) for k, o in enumerate(opts_d)]
    for side, label, twin, opt in named:
        saved = states[id(opt)]["state"]
        order = [p for g in opt.param_groups for p in g["params"]]
        for i, p in enumerate(order):
            if id(p) not in left_out:
                mine = twin.state.get(twin_of[id(p)], {})
                here = difference(dict(mine), saved.get(i, {}), f"{label}[{i}]")
                worst[side] = max(worst[side], here)
    return worst


def _code(cycle: Cycle, candidate: dict, opt_g, opts_d, rec) -> str:
    """The CycleStep as code among the script's names."""
    scope = rec.scope
    names = global_names(scope)

    def name(obj: object, default: str) -> str:
        return names.get(id(obj)) or path_to(scope, obj) or default

    lines, objective = ["from ganstep.engine.cycle import CycleStep"], candidate["objective"]
    if isinstance(objective, Objective):  # not one of ganstep's names
        lines.append(f"from ganstep.engine.objectives import {type(objective).__name__}")
    terms = list(candidate.get("g_terms", {}).values())
    if isinstance(getattr(objective, "alpha", None), Printed):  # numpy's draws
        lines[:0] = ["import numpy as np"]
    if terms:
        lines[:0] = ["import torch.nn.functional as F"]
        lines.append("")
    lines.append("")
    for term in terms:
        lines += [*term.text.splitlines(), "", ""]
    opt_d = name(opts_d[0], "opt_d") if len(opts_d) == 1 else "opt_d"
    if len(opts_d) == 2:
        first = opts_d[0].param_groups[0]
        kept = {k: first[k] for k in ("lr", "betas", "weight_decay") if first.get(k)}
        settings = "".join(f", {k}={v!r}" for k, v in kept.items())
        d_a, d_b = cycle.discriminators
        lines.append(f"opt_d = torch.optim.{type(opts_d[0]).__name__}([*{d_a}.parameters(), "
                     f"*{d_b}.parameters()]{settings})  # one over both Ds")  # fmt: skip
    args = [*cycle.generators, *cycle.discriminators, name(opt_g, "opt_g"), opt_d]
    lines.append(f"step = {step_call(args, candidate)}")
    lines.append("# each iteration, in place of the script's update: step(real_A, real_B)")
    return "\n".join(lines)
