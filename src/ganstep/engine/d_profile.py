"""What D is: pure, stochastic, stateful, or mixing samples, found by observing it.

Merging two D forwards into one (``simultaneous`` sharing D(fake) between D's and G's
loss, ``concat``, the fused step) and choosing their order are free only when D's
training forward is *pure*. Real Ds often are not, so before the first step D is
observed on the first real batch (three forwards without a graph, with the random
generators forked and every changed tensor restored, so training sees no trace):

- **stochastic**: the forward advances a random generator (Dropout, ``torch.rand``
  in an augmentation), or two forwards from the same state and seed differ
  (a generator of its own);
- **stateful**: the forward changes a parameter or buffer in place (its version
  counter or its values move) *and* the next training forward reads it: perturbing
  those tensors moves the output (spectral norm's power iteration);
- **eval_state**: it changes tensors in place that the next training forward does
  not read (BatchNorm's running statistics, read only in eval mode);
- **mixing**: perturbing one sample moves the outputs of the others (BatchNorm in
  training mode, minibatch standard deviation, minibatch discrimination).

Where observation cannot decide (a D whose behaviour depends on the data seen), the
user declares it: ``Step(..., d_profile={"stochastic": True})``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace

import torch
from torch import Tensor, nn

from .batch import Batch, cat

# Known sample-mixing layers, checked per call (cheap) because a user may switch
# them between train and eval mode after the observation.
KNOWN_MIXING = (nn.modules.batchnorm._BatchNorm,)

FIELDS = ("stochastic", "stateful", "eval_state", "mixing")

_OBSERVING: ContextVar[bool] = ContextVar("ganstep_observing_d", default=False)


def observing() -> bool:
    """Whether D's forwards now are ganstep's observation of D, not training (the
    audit leaves them out of the loop it reports)."""
    return _OBSERVING.get()


@contextmanager
def _observation() -> Iterator[None]:
    token = _OBSERVING.set(True)
    try:
        yield
    finally:
        _OBSERVING.reset(token)


@dataclass(frozen=True)
class DProfile:
    """What D's forward does, in the mode it was observed in (see the module docstring).

    ``why`` says, per true field, what showed it (or ``"declared"``).
    """

    stochastic: bool = False
    stateful: bool = False
    eval_state: bool = False
    mixing: bool = False
    why: tuple[tuple[str, str], ...] = ()

    @property
    def pure(self) -> bool:
        """No random numbers, no state changed, samples independent."""
        return not (self.stochastic or self.stateful or self.eval_state or self.mixing)

    @property
    def mergeable(self) -> bool:
        """Whether two D forwards may become one (or change order) with the parameters
        unchanged: D draws no random numbers and changes nothing its next training
        forward reads. Running statistics (``eval_state``) do not stop it."""
        return not (self.stochastic or self.stateful)

    def reason(self, field: str) -> str:
        return dict(self.why).get(field, "")

    def describe(self) -> str:
        """One line: ``pure``, or each property with what showed it."""
        if self.pure:
            return "pure"
        parts = [f"{name} ({self.reason(name)})" for name in FIELDS if getattr(self, name)]
        return "; ".join(parts)

    def declare(self, declared: dict[str, bool]) -> DProfile:
        """This profile with the user's declarations put over what was observed."""
        why = dict(self.why)
        for name, value in declared.items():
            if value:
                why[name] = "declared"
            else:
                why.pop(name, None)
        return replace(self, **declared, why=tuple(why.items()))


def check_declaration(spec: object) -> DProfile | dict[str, bool] | None:
    """``Step``'s ``d_profile``: ``None``, a :class:`DProfile`, or a dict of some fields."""
    if spec is None or isinstance(spec, DProfile):
        return spec
    if not isinstance(spec, dict):
        raise TypeError(
            f"d_profile must be None, a DProfile or a dict such as {{'stochastic': True}}, "
            f"got {type(spec).__name__}"
        )
    names = {f.name for f in fields(DProfile)} - {"why"}
    for key, value in spec.items():
        if key not in names:
            raise ValueError(f"d_profile: unknown key {key!r}; the keys are {sorted(names)}")
        if not isinstance(value, bool):
            raise ValueError(f"d_profile[{key!r}] must be True or False, got {value!r}")
    return dict(spec)


def known_mixing_layers(module: nn.Module) -> list[str]:
    """Names of the layers of ``module`` known to mix samples in their current mode."""
    return [
        name or type(m).__name__
        for name, m in module.named_modules()
        if isinstance(m, KNOWN_MIXING) and m.training
    ]


def _tensors(out: object) -> list[Tensor]:
    """Every tensor in D's output (a tensor, or tuples and lists of them)."""
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [t for o in out for t in _tensors(o)]
    return []


def _equal(x: Tensor, y: Tensor) -> bool:
    """Equal, NaN where NaN: a batch with an infinite value gives NaN scores, and two
    forwards that give the same NaNs are not a random D."""
    if not x.is_floating_point():
        return torch.equal(x, y)
    same_nans = torch.equal(torch.isnan(x), torch.isnan(y))
    return same_nans and torch.equal(x.nan_to_num(), y.nan_to_num())


def _same(a: object, b: object) -> bool:
    ta, tb = _tensors(a), _tensors(b)
    return len(ta) == len(tb) and all(
        x.shape == y.shape and _equal(x, y) for x, y in zip(ta, tb, strict=True)
    )


def _others_moved(a: object, b: object, n: int) -> bool:
    """Whether rows 1.. of D's outputs ``a`` and ``b`` differ (row 0 was perturbed)."""
    return any(
        x.dim() > 0 and x.shape[0] == n and not _equal(x[1:], y[1:])
        for x, y in zip(_tensors(a), _tensors(b), strict=True)
    )


def _batch_reduced(a: object, b: object, n: int) -> bool:
    """Whether an output without a row per sample moved with sample 0: D reduced over
    the batch (the WGAN authors' ``output.mean(0)``), so one call on two batches joined
    is not two calls."""
    return any(
        (x.dim() == 0 or x.shape[0] != n) and not _equal(x, y)
        for x, y in zip(_tensors(a), _tensors(b), strict=True)
    )


class _Rng:
    """The random generators D may draw from: the global CPU one, the accelerator's
    when D runs on one, and any ``torch.Generator`` that D's modules hold."""

    def __init__(self, D: nn.Module, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.index = None
        if self.cuda:
            self.index = device.index if device.index is not None else torch.cuda.current_device()
        self.own = [
            value
            for module in D.modules()
            for value in vars(module).values()
            if isinstance(value, torch.Generator)
        ]

    def devices(self) -> list[int]:
        return [self.index] if self.cuda else []

    def state(self) -> list[Tensor]:
        states = [torch.get_rng_state()] + [g.get_state() for g in self.own]
        if self.cuda:
            states.append(torch.cuda.get_rng_state(self.index))
        return states

    def seed(self, own: list[Tensor]) -> None:
        """The same draws again: the global generators seeded, D's own set to ``own``."""
        torch.manual_seed(0)  # seeds the accelerators' generators too
        for g, state in zip(self.own, own, strict=True):
            g.set_state(state)


class _Tensors:
    """D's parameters and buffers as they were: which a forward changed, and putting
    them back (their values; the version counters move)."""

    def __init__(self, D: nn.Module) -> None:
        self.named = dict(D.named_parameters(remove_duplicate=True))
        self.named.update(D.named_buffers(remove_duplicate=True))
        self.versions = {name: t._version for name, t in self.named.items()}
        self.saved = {name: t.detach().clone() for name, t in self.named.items()}

    def changed(self) -> list[str]:
        # BatchNorm's kernels update running statistics without moving the version
        # counter: the values tell
        return [
            name
            for name, t in self.named.items()
            if t._version != self.versions[name] or not torch.equal(t, self.saved[name])
        ]

    def restore(self) -> None:
        for name in self.changed():
            self.named[name].data.copy_(self.saved[name])
            self.versions[name] = self.named[name]._version

    def perturb(self, names: list[str]) -> None:
        for name in names:
            _perturb(self.named[name])


def profile_d(D: nn.Module, batch: Batch, call: Callable[[nn.Module, Batch], object]) -> DProfile:
    """Observe D's forward on ``batch`` (D's current train/eval mode) and say what it is.

    ``call(D, batch)`` runs D as the step does (``D(x)`` or ``D(x, c)``). Nothing
    observable changes: the random generators are forked, and every tensor of D that
    a forward changed in place is restored (its version counter moves, its values do
    not). Costs three forwards without a graph, once.
    """
    if batch.n < 2:  # the mixing test perturbs one sample and watches another
        batch = cat(batch, batch)
    x = batch.x.detach()
    tensors, rng = _Tensors(D), _Rng(D, x.device)
    own = [g.get_state() for g in rng.own]

    def forward(inp: Tensor, perturbed: list[str]) -> object:
        """D on ``inp`` from the seed and the state it started with, but for the
        ``perturbed`` tensors; then the state put back."""
        tensors.perturb(perturbed)
        rng.seed(own)
        out = call(D, batch.with_x(inp))
        tensors.restore()
        return out

    with _observation(), torch.no_grad(), torch.random.fork_rng(devices=rng.devices()):
        rng.seed(own)
        before = rng.state()
        first = call(D, batch.with_x(x))
        advanced = any(not torch.equal(a, b) for a, b in zip(before, rng.state(), strict=True))
        touched = tensors.changed()
        tensors.restore()
        # again with the tensors the first forward changed perturbed: if the output
        # moves, D reads them; then again with one sample changed
        second = forward(x, touched)
        one_changed = x.clone()
        one_changed[0] = 1.0 - 2.0 * one_changed[0]
        third = forward(one_changed, [])
        rng.seed(own)  # D's own generators as they were (fork_rng restores the global ones)
    why = _verdicts(advanced, touched, first, second, third, x.shape[0])
    known = known_mixing_layers(D)
    if known:
        why["mixing"] = f"BatchNorm in training mode ({', '.join(known)})"
    return DProfile(**{name: name in why for name in FIELDS}, why=tuple(why.items()))


def _verdicts(
    advanced: bool, touched: list[str], first: object, second: object, third: object, n: int
) -> dict[str, str]:
    """What the three forwards of :func:`profile_d` show, each with its reason."""
    why: dict[str, str] = {}
    if advanced:
        why["stochastic"] = "a forward draws from a random generator"
    if touched:
        shown = ", ".join(touched[:4]) + (
            f" and {len(touched) - 4} more" if len(touched) > 4 else ""
        )
        if _same(first, second):
            why["eval_state"] = f"a forward changes {shown}; the next forward does not read it"
        else:
            why["stateful"] = f"a forward changes {shown} and the next forward reads it"
    elif not _same(first, second):
        why["stochastic"] = (
            "two forwards from the same state and seed differ (a generator of its own; "
            "whether it mixes samples cannot be seen: declare d_profile={'mixing': True} "
            "if it does)"
        )
        return why  # its draws differ from call to call: the mixing test cannot tell
    if _others_moved(first, third, n):
        why["mixing"] = "changing one sample moves D's outputs on the others"
    elif _batch_reduced(first, third, n):
        why["mixing"] = "D returns a number for the whole batch (a mean over its samples)"
    return why


def _perturb(t: Tensor) -> None:
    """Change ``t`` in place, clearly (restored afterwards)."""
    if t.is_floating_point() or t.is_complex():
        noise = torch.randn(t.shape, generator=torch.Generator().manual_seed(1), dtype=t.dtype)
        t.data.add_(noise.to(t.device) * (t.detach().abs().max() + 1))
    elif t.dtype == torch.bool:
        t.data.logical_not_()
    else:
        t.data.add_(1)
