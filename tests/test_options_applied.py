"""Every option of Step and CycleStep is applied or refused, never ignored (issue 52).

Each keyword of their signatures has a row here: a value other than its default and
what that value must change in a short run (parameters, logs, D's calls, the module
G or D runs as) or that it is refused. A new option without a row fails the walk."""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass

import pytest
import torch
from helpers import BATCH, X_DIM, Z_DIM, Run, real_batches
from torch import nn

from ganstep import Step
from ganstep.engine.cycle import CycleStep
from ganstep.engine.errors import NonFiniteError
from ganstep.engine.regularizers import PathLength

K = 3  # classes of the conditional rows


@dataclass
class Seen:
    """What a short run did: parameters after it, its logs, D's calls (rows and whether
    each input was the real batch), G's argument counts, the modules it ran."""

    params: list[torch.Tensor]
    log_keys: set[str]
    d_calls: list[tuple[int, bool]]
    g_arity: set[int]
    step: object


class CondG(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(Z_DIM + K, X_DIM)

    def forward(self, z, c=None):
        c = torch.zeros(len(z), dtype=torch.long) if c is None else c
        return self.fc(torch.cat([z, nn.functional.one_hot(c, K).to(z)], 1))


class CondD(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(X_DIM + K, 1)

    def forward(self, x, c=None):
        c = torch.zeros(len(x), dtype=torch.long) if c is None else c
        return self.fc(torch.cat([x, nn.functional.one_hot(c, K).to(x)], 1))


def run(options: dict, *, schedule="d_first", conditional=False, nan=False, map_d=False,
        dtype=torch.float64) -> Seen:  # fmt: skip
    side = Run("ns", batchnorm=False, dtype=dtype)
    if map_d:  # D gives two scores per sample
        side.D = nn.Linear(X_DIM, 2).double()
        side.opt_d = torch.optim.Adam(side.D.parameters(), 0.02)
    if conditional:
        torch.manual_seed(0)
        side.G, side.D = CondG().double(), CondD().double()
        side.opt_g = torch.optim.Adam(side.G.parameters(), 0.02)
        side.opt_d = torch.optim.Adam(side.D.parameters(), 0.02)
    reals = real_batches(3, dtype)
    if nan:
        reals[0][0, 0] = float("nan")
    labels = torch.Generator().manual_seed(3)
    paired = options.get("condition") is not None
    feeds = [(x, torch.randint(K, (BATCH,), generator=labels)) if paired else x
             for x in reals]  # fmt: skip
    d_calls, g_arity = [], set()
    side.D.register_forward_pre_hook(
        lambda m, args: d_calls.append((len(args[0]), any(torch.equal(args[0], r) for r in reals)))
    )
    side.G.register_forward_pre_hook(lambda m, args: g_arity.add(len(args)))
    options = {"objective": "ns", "schedule": schedule, "latent": side.latent, **options}
    if callable(options.get("info_optimizer")):
        options["info_optimizer"] = options["info_optimizer"](side)
    step = Step(*side.models(), **options)
    torch.manual_seed(5)
    logs = [step(feed) for feed in feeds]
    params = [p.detach().clone() for p in [*side.G.parameters(), *side.D.parameters()]]
    return Seen(params, set().union(*logs), d_calls, g_arity, step)


def params_differ(a: Seen, b: Seen) -> bool:
    return any(not torch.equal(p, q) for p, q in zip(a.params, b.params, strict=True))


def info(side) -> torch.optim.Optimizer:
    return torch.optim.SGD(side.G.parameters(), 0.1)


INFO_TERMS = {"size": (1.0, lambda v: v.fake.x.square().mean())}
# option -> (value, how the run differs from the default's: a check on both runs, and
# the run's own settings)
STEP_OPTIONS: dict[str, tuple] = {
    "objective": ("lsgan", params_differ),
    "schedule": ("g_first", params_differ),
    "latent": (lambda n: torch.ones(n, Z_DIM, dtype=torch.float64), params_differ),
    "condition": ("real", lambda a, b: a.g_arity == {2} and b.g_arity == {1}, {"conditional"}),
    "g_terms": ({"l1": lambda v: v.fake.x.abs().mean()}, params_differ),
    "d_terms": ({"size": lambda v: v.d_real.square().mean()}, params_differ),
    "d_scale": (0.5, params_differ),
    "g_scale": (0.5, params_differ),
    "d_conditional": (
        False,
        lambda a, b: a.d_calls != b.d_calls or params_differ(a, b),
        {"conditional", "condition"},
    ),
    "concat": (True, lambda a, b: len(a.d_calls) < len(b.d_calls)),
    "precision": ("bf16", params_differ, {"float32"}),  # (autocast leaves float64 alone)
    "distributed": (True, "refused"),
    "compile": ("eager", lambda a, b: type(a.step.game.d.module).__name__ == "OptimizedModule"),
    "check_finite": (True, "raises on NaN"),
    "accumulate": (
        2,
        lambda a, b: BATCH // 2 in {n for n, _ in a.d_calls} - {n for n, _ in b.d_calls},
    ),
    "d_order": ("fake_first", lambda a, b: a.d_calls != b.d_calls),
    "d_forwards": ("loop", lambda a, b: len(a.d_calls) > len(b.d_calls), {"simultaneous"}),
    "g_forwards": (("real", "fake", "fake"), lambda a, b: len(a.d_calls) > len(b.d_calls)),
    "d_profile": (
        {"stochastic": True},
        lambda a, b: len(a.d_calls) > len(b.d_calls),
        {"simultaneous"},
    ),
    "d_map": (True, "enables", {"map_d"}),  # a D of two scores per sample: refused without
    "augment": (lambda x: x + 0.25, params_differ),
    "fake_pool": (2, params_differ),
    "g_regularizer": (PathLength(weight=5.0, every=2), params_differ),
    "info_optimizer": (info, params_differ, set(), {"info_terms": INFO_TERMS}),
    "info_terms": (INFO_TERMS, params_differ, set(), {"info_optimizer": info}),
    "info_latent": (
        lambda n: torch.ones(n, Z_DIM, dtype=torch.float64),
        params_differ,
        {"info_optimizer", "info_terms"},
    ),
    "before_step": ({"d": lambda D: [p.grad.mul_(0) for p in D.parameters()]}, params_differ),
    "after_step": ({"g": lambda G: [p.data.mul_(0.5) for p in G.parameters()]}, params_differ),
    "log_scores": (True, lambda a, b: a.log_keys > b.log_keys),
    "d_step_if": (lambda v: False, lambda a, b: "d_step" in a.log_keys and params_differ(a, b)),
}
WITH = {"conditional": {}, "condition": {"condition": "real"}, "simultaneous": {},
        "map_d": {}, "float32": {}, "info_terms": {"info_terms": INFO_TERMS},
        "info_optimizer": {"info_optimizer": info}}  # fmt: skip


def keywords(cls) -> set[str]:
    signature = inspect.signature(cls.__init__)
    return {n for n, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY}


def test_every_step_option_has_a_row():
    assert keywords(Step) == set(STEP_OPTIONS)


@pytest.mark.parametrize("option", list(STEP_OPTIONS))
def test_each_step_option_is_applied_or_refused(option):
    value, check, *rest = STEP_OPTIONS[option]
    needs = rest[0] if rest else set()
    base: dict = {}
    for need in needs:
        base.update(WITH[need])
    settings = {"conditional": "conditional" in needs, "map_d": "map_d" in needs,
                "schedule": "simultaneous" if "simultaneous" in needs else "d_first",
                "dtype": torch.float32 if "float32" in needs else torch.float64}  # fmt: skip
    changed = {**base, **(rest[1] if len(rest) > 1 else {}), option: value}
    if check == "refused":
        with pytest.raises((ValueError, TypeError)):
            run(changed, **settings)
        return
    if check == "enables":  # refused without it, runs with it
        with pytest.raises(ValueError):
            run(base, **settings)
        run(changed, **settings)
        return
    if check == "raises on NaN":
        run(base, nan=True, **settings)  # the default goes on
        with pytest.raises(NonFiniteError):
            run(changed, nan=True, **settings)
        return
    default = run(base, **settings)
    assert check(run(changed, **settings), default), option


# --- CycleStep ---------------------------------------------------------------------------


def cycle_run(options: dict, dtype=torch.float64) -> list[torch.Tensor]:
    """A short CycleStep run; its Gs and Ds draw Dropout masks, so the order of their
    forwards shows in the parameters."""
    torch.manual_seed(0)
    G_A, G_B = (nn.Sequential(nn.Linear(X_DIM, X_DIM), nn.Dropout(0.3)).to(dtype)
                for _ in range(2))  # fmt: skip
    D_A, D_B = (nn.Sequential(nn.Dropout(0.3), nn.Linear(X_DIM, 1)).to(dtype) for _ in range(2))
    opt_g = torch.optim.Adam([*G_A.parameters(), *G_B.parameters()], 0.02)
    opt_d = torch.optim.Adam([*D_A.parameters(), *D_B.parameters()], 0.02)
    step = CycleStep(G_A, G_B, D_A, D_B, opt_g, opt_d, **options)
    random.seed(7)
    torch.manual_seed(7)
    batches = real_batches(8, dtype)
    for a, b in zip(batches[:4], batches[4:], strict=True):
        step(a, b)
    return [p.detach().clone() for m in (G_A, G_B, D_A, D_B) for p in m.parameters()]


CYCLE_OPTIONS: dict[str, object] = {
    "objective": "wgan_gp",
    "g_scale": 1.0,
    "d_scale": 0.5,
    "cycle": 2.0,
    "identity": 0.0,
    "fake_pool": 1,  # (None would equal 50 here: a pool returns new fakes until it is full)
    "precision": "bf16",
    "before_step": {"d": lambda D: [p.grad.mul_(0) for p in D.parameters()]},
    "after_step": {"g": lambda G: [p.data.mul_(0.5) for p in G.parameters()]},
    "order": "d_first",
    "g_every": 2,  # with order="d_first" (refused with "simultaneous", in words)
    "g_order": ("fake_A", "fake_B", "rec_A", "rec_B"),
    "discriminator_order": ("D_B", "D_A"),
    "g_terms": {"size": lambda v: v.fake_A.square().mean()},
    "d_terms": {"size": lambda v: v.d_real.square().mean()},
}


def test_every_cycle_step_option_has_a_row():
    assert keywords(CycleStep) == set(CYCLE_OPTIONS)


@pytest.mark.parametrize("option", list(CYCLE_OPTIONS))
def test_each_cycle_step_option_is_applied_or_refused(option):
    base = {"order": "d_first"} if option == "g_every" else {}  # where it is taken
    # (autocast leaves float64 alone: a precision shows in float32 models)
    dtype = torch.float32 if option == "precision" else torch.float64
    default = cycle_run(base, dtype)
    try:
        changed = cycle_run({**base, option: CYCLE_OPTIONS[option]}, dtype)
    except (ValueError, TypeError):
        return  # refused, in words
    assert any(not torch.equal(p, q) for p, q in zip(changed, default, strict=True)), option


def test_the_checks_can_fail():
    """A row's check is not trivially true: the default run against itself fails them."""
    default = run({})
    assert not params_differ(default, run({}))
    _, check = STEP_OPTIONS["concat"]
    assert not check(default, run({}))
