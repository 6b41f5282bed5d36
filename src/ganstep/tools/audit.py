"""ganstep audit: instrument anyone's GAN loop and report passes, waste and hazards.

``audit(fn, G=G, D=D)`` runs ``fn()`` (one training iteration, written any way)
under instrumentation; :mod:`ganstep.tools.audit_script` runs a whole training script the
same way. What is recorded:

- every forward of G and D: its FLOPs, the parameter versions (optimizer steps taken
  so far) it ran at, who made its input, whether it drew random numbers (Dropout);
  a hook on each output records the backward calls that reach it;
- ``torch.autograd.backward`` and ``torch.autograd.grad`` are wrapped for the run, so
  each backward call has a number; one taken with ``create_graph=True`` (a gradient
  penalty) is followed into the later backward that differentiates it again;
- hooks on every parameter record which backward calls fed its ``.grad`` since it
  was last cleared, and a global optimizer step hook sees which gradients each
  ``step()`` used.

From that event log it derives the update order (from the versions at which the
stepped gradients were computed) with its D:G step counts, the passes per
iteration, the FLOPs spent on gradients nobody stepped and on forwards recomputed
identically, forwards no step used (logging, sampling), and hazards. A loop that
crashes is analysed up to the crash.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn.parameter import UninitializedParameter
from torch.nn.utils import parametrize

from ..engine.batch import Batch
from ..engine.checks import positive_int
from ..engine.d_profile import DProfile, observing, profile_d
from .copies import module_copy
from .flops import TotalFlops
from .provenance import Provenance

# what the hazard of a forward reading autocast's stale cast copy says (the port reads it)
STALE_CAST = "inside a torch.autocast block after"

INPLACE = "modified by an inplace operation"
# PyTorch's error where a backward goes back through a graph an earlier one freed
FREED = "Trying to backward through the graph a second time"
_BLOCK = ("ganstep audit", "block")  # the mark of a parametrize.cached() block's cache
MODULES = ("G", "D")
# the label of one optimizer's step over G's and D's parameters together: InfoGAN's info
# step (PyTorch-GAN's optimizer_info), which the Step runs with info_optimizer=
INFO = "D+G"


@dataclass(eq=False)
class _Forward:
    label: str  # "G", "D", or a provisional name until the script's G and D are known
    seq: int
    versions: dict[str, int]  # optimizer steps of each module when it ran
    producer: _Forward | None  # the forward whose output is this one's input
    flops: int
    inputs: list[tuple[tuple[int, ...], torch.dtype]]  # tensor arguments: shape, dtype
    input_grad: bool  # whether its input required a gradient
    random: bool  # it drew random numbers (Dropout): a second run differs
    key: tuple | None  # identifies the input tensor (storage, shape, version)
    iteration: int = 0
    recomputed: bool = False
    used: bool = False  # a step's gradient went through it or through what it fed
    args: tuple | None = None  # the first forward of each module keeps its arguments
    output: Tensor | None = None  # its (first) output, detached
    # Its input held its producer's output and more rows: "fake_first" when the
    # producer's rows came first (BigGAN's D(cat([G_z, x]))), else "real_first".
    concat: str | None = None
    # the part of its module that was called, where the script calls a module's parts
    # itself (StyleGAN2-ADA's G.mapping, then G.synthesis): its dotted name; "" the whole
    part: str = ""
    autocast: torch.dtype | None = None  # the dtype autocast cast to at this call, if on
    # inside a torch.autocast block: the parameters whose cast copy the block's cache
    # keeps (float32, requiring a gradient), and which block (counted by cache clears)
    cast: frozenset[int] = frozenset()
    cast_block: int = 0
    # inside a parametrize.cached() block: the parametrized submodules whose weights the
    # block's cache keeps, and which block
    cached: frozenset[int] = frozenset()
    cached_block: int = 0
    where: str | None = None  # the audited script's line, for a call in either block
    # its input was made from its producer's output by the script's own calls (noise
    # added, an augmentation, a cast): tensors of their own, found by Provenance
    changed: bool = False
    training: bool = True  # its module's mode at the call (False: after .eval())
    # its positional arguments that are no tensors, by position, where each is a plain
    # value (ProGAN's critic(x, alpha, step)); None where one is not
    plain: tuple[tuple[int, object], ...] | None = ()
    # the call's other inputs: its further tensors (keys as ``key``) and the values it
    # was given by keyword that are no tensors; None where one of those is not plain
    rest: tuple | None = ()

    # a call of one of several modules read as one side ("G" for CycleGAN's two
    # generators): ``part`` names that module's place in the side; a pass of its own
    member: bool = False

    @property
    def continues(self) -> bool:
        """A part fed by another part of the same module: the same call of the module
        (``G.synthesis`` on what ``G.mapping`` made), not a pass of its own."""
        if self.member:
            return False
        return bool(self.part) and self.producer is not None and self.producer.label == self.label

    @property
    def place(self) -> int:
        """A member's place in its side (``rec.modules[label][place]``)."""
        return int(self.part.split(".")[0])

    @property
    def fed_by_g(self) -> bool:
        """Its input was G's output (the fake batch, or made from it by the loop)."""
        return self.producer is not None and self.producer.label == "G"

    @property
    def head(self) -> _Forward:
        """The forward that started this one's call of its module (itself, unless it is a
        later part of that call: ``G.synthesis`` after ``G.mapping``)."""
        f = self
        while f.continues:
            f = f.producer
        return f


@dataclass(eq=False)
class _Backward:
    index: int
    seq: int
    retain_graph: bool
    create_graph: bool
    roots: list[Tensor]
    through: list[_Forward] = field(default_factory=list)
    produced: set[str] = field(default_factory=set)  # modules whose weight grads it computed
    used_by: set[str] = field(default_factory=set)  # modules whose optimizer stepped them
    double: list[_Backward] = field(default_factory=list)  # create_graph calls it went back through
    iteration: int = 0
    where: str | None = None  # the audited script's line that called it ("file:line: source")
    # the loss it took: its roots' sum where each is one number and no gradient was given
    # for them (kept where the recorder's ``loss_values`` says so, for the port)
    value: float | None = None
    # its roots' floating dtypes (a script's float64 repeat may keep a loss float32: the
    # port names it where that repeat parts from the Step)
    dtypes: frozenset[torch.dtype] = frozenset()
    # a torch.autograd.grad call with create_graph (a penalty): the keys of the tensors it
    # took the gradient at (:meth:`Recorder.key`)
    inputs: list[tuple] = field(default_factory=list)


def _cast_of(out: Tensor | None, x: Tensor) -> bool:
    """Whether ``x`` holds ``out``'s values, in its dtype or another (a cast, a copy)."""
    return (out is not None and out.shape == x.shape and out.device == x.device
            and torch.equal(out.to(x.dtype), x))  # fmt: skip


def _loss_value(roots: list[Tensor], bound: dict) -> float | None:
    """The loss a backward pass took: the sum of its roots where each is one floating
    number and no gradient was given for them; else None."""
    if any(bound.get(k) is not None for k in ("gradient", "grad_tensors", "grad_outputs")):
        return None
    if not roots or any(t.numel() != 1 or not t.is_floating_point() for t in roots):
        return None
    try:
        return sum(float(t.detach()) for t in roots)
    except Exception:  # noqa: BLE001 - a tensor with no value to read (meta): the script goes on
        return None


@dataclass(eq=False)
class _Clip:
    """A call of torch's gradient clipping: on which parameters, as code to call it again
    on a module named by ``{}`` (``torch.nn.utils.clip_grad_norm_({}.parameters(),
    1.0)``), and where."""

    seq: int
    params: frozenset[int]
    code: str
    where: str | None


# torch.nn.utils' gradient clipping, which the audit records: its first argument the
# parameters, its second the norm or the value
CLIPPING = ("clip_grad_norm_", "clip_grad_value_")


def _same_value(value: object, default: object) -> bool:
    """Whether an argument is its default (a tensor never is: it is shown)."""
    return not isinstance(value, Tensor) and value == default


@dataclass(eq=False)
class _Step:
    label: str
    seq: int
    backwards: set[int]
    flops: int  # FLOPs run so far
    iteration: int = 0
    # no parameter of its optimizer held a nonzero gradient, and no closure was given
    # that would compute one: the step had nothing to step
    gradless: bool = False
    where: str | None = None  # the audited script's line that called it
    # the modules it stepped (labels): one, or several for one optimizer over several
    # modules (CycleGAN's two generators), whose step is labelled by their joined labels
    modules: frozenset[str] = frozenset()

    @property
    def joint(self) -> bool:
        return len(self.modules) > 1


NO_STEPS = "no optimizer step of G or D ran"  # a report's pattern when nothing trained

# what a Step of a loop whose D step is taken under a condition is (Report.d_steps_skipped)
GATED_D_STEP = (
    "a d_first() Step takes D's step under a condition with d_step_if=, a function of the "
    "D step's view saying whether D steps (the script's own condition, which the audit does "
    "not read; reuse_fake=False where G's step makes fakes of its own); docs/loops.md#3d-gan "
    "shows the 3D-GAN's accuracy gate so"
)


@dataclass
class Report:
    """What ``audit`` found. ``forwards``, ``backwards``, ``double_backwards`` and
    ``other_forwards`` are per iteration; ``other_forwards`` are the forwards no
    optimizer step used (sample grids, logging), not counted in ``forwards``."""

    order: str
    forwards: dict[str, float]
    backwards: dict[str, float]
    total_flops: int
    wasted_flops: int
    hazards: list[str]
    error: BaseException | None
    iterations: int
    schedule: str | None
    double_backwards: dict[str, float] = field(default_factory=lambda: dict.fromkeys(MODULES, 0.0))
    other_forwards: dict[str, float] = field(default_factory=lambda: dict.fromkeys(MODULES, 0.0))
    other_flops: int = 0
    pattern: str | None = None
    location: str | None = None  # where the loop crashed: "file:line: source"
    d_profile: DProfile | None = None  # what D was observed to be (None: not observable)
    d_order: str | None = None  # "real_first" / "fake_first" in D's first step, if seen
    # D's step forwarded it once on the fake and the real batch concatenated (BigGAN)
    d_concat: bool = False
    # D's step called G between its forwards on the real and the fake batch
    d_g_between: bool = False
    # optimizer steps on a regularizer alone (lazy R1, path length), per iteration: left
    # out of the update order and the step counts
    regularization: dict[str, float] = field(default_factory=lambda: dict.fromkeys(MODULES, 0.0))
    # the Step that equals the script, when asked for (ganstep.tools.port.Port)
    port: object = None
    # the iterations in which G's or D's regularization steps of their own ran
    regularization_at: dict[str, list[int]] = field(
        default_factory=lambda: {m: [] for m in MODULES}
    )
    # G's and D's modules by the script's names where a side is several (CycleGAN's)
    sides: dict[str, list[str]] | None = None
    # such a script read as CycleStep takes it (ganstep.tools.sides.Cycle), if it is
    cycle: object = None
    # a G side of one module D judges and heads G's loss calls on its outputs (an
    # adversarial autoencoder's encoder and decoder: ganstep.tools.sides.GAndItsHeads)
    g_and_heads: object = None
    # steps of one optimizer over G's and D's parameters (InfoGAN's info step) per
    # iteration, and the script's line of the first (:data:`INFO`)
    info_steps: float = 0.0
    info_at: str | None = None
    # G's steps on a loss through no D before any adversarial step (a warm-up: esrgan.py's
    # --warmup_batches), left out of everything above, and the script's line of the first
    warm_up: int = 0
    warm_up_at: str | None = None
    # the script's iterations whose D step was skipped: D forwarded on a real batch and on
    # G's fakes, no backward, before a G step (a D step under a condition of the script's:
    # the 3D-GAN's D stepped only while its accuracy is below 0.8)
    d_steps_skipped: int = 0

    def as_dict(self) -> dict:
        """A JSON-ready dict (the error as its message)."""
        return {
            "order": self.order,
            "forwards": self.forwards,
            "backwards": self.backwards,
            "double_backwards": self.double_backwards,
            "other_forwards": self.other_forwards,
            "total_flops": self.total_flops,
            "wasted_flops": self.wasted_flops,
            "other_flops": self.other_flops,
            "hazards": self.hazards,
            "error": None if self.error is None else _one_line(self.error),
            "location": self.location,
            "iterations": self.iterations,
            "schedule": self.schedule,
            "pattern": self.pattern,
            "d_profile": None if self.d_profile is None else self.d_profile.describe(),
            "d_order": self.d_order,
            "d_concat": self.d_concat,
            "d_g_between": self.d_g_between,
            "regularization": self.regularization,
            "regularization_at": self.regularization_at,
            "sides": self.sides,
            **({} if self.g_and_heads is None else {"g_and_heads": self.g_and_heads.as_dict()}),
            "d_steps_skipped": self.d_steps_skipped,
            "info_steps": self.info_steps,
            "warm_up": self.warm_up,
            **({} if self.port is None else {"port": self.port.as_dict()}),
        }

    def __str__(self) -> str:
        per = max(1, self.iterations)
        wasted = _gflop(self.wasted_flops / per)
        share = 100 * self.wasted_flops / self.total_flops if self.total_flops else 0.0

        def passes(m: str) -> str:
            text = f"{m} {self.forwards[m]:g} forward(s) / {self.backwards[m]:g} backward(s)"
            if self.double_backwards[m]:
                text += f" + {self.double_backwards[m]:g} double backward(s)"
            return text

        lines = [
            f"ganstep audit: {self.iterations} iteration(s), update order: {self.order}",
            "  passes per iteration: " + ", ".join(passes(m) for m in MODULES),
        ]
        if self.cycle is not None:
            lines.append(f"  sides: {self.cycle.describe()}")
        elif self.sides:
            read = "; ".join(f"{m} is {' and '.join(names)}" for m, names in self.sides.items())
            lines.append(f"  sides: {read}")
        if self.pattern:
            lines.append(f"  pattern: {self.pattern}")
        if self.warm_up:
            at = f" ({self.warm_up_at})" if self.warm_up_at else ""
            lines.append(
                f"  warm-up: G stepped {self.warm_up} time(s) on a loss through no D{at} before "
                "any adversarial step (esrgan.py's --warmup_batches), left out of the passes, "
                "FLOPs and hazards below"
            )
        if any(self.regularization.values()):
            counts = ", ".join(f"{m} {v:g}" for m, v in self.regularization.items() if v)
            lines.append(
                f"  regularization steps of their own (lazy R1, path length), not counted in "
                f"the order: {counts} per iteration"
            )
        if self.info_steps:
            at = f" ({self.info_at})" if self.info_at else ""
            lines.append(
                f"  info steps: {self.info_steps:g} per iteration{at}, one optimizer over G's "
                "and D's parameters after their steps (InfoGAN's); counted in the passes, not "
                "in the order: a Step runs them with info_optimizer= and info_terms="
            )
        if any(self.other_forwards.values()):
            counts = ", ".join(f"{m} {self.other_forwards[m]:g}" for m in MODULES)
            lines.append(
                f"  forwards no step used (logging, sampling), not counted above: {counts} "
                f"per iteration, {_gflop(self.other_flops / per)}"
            )
        lines.append(f"  FLOPs per iteration: {_gflop(self.total_flops / per)}, wasted {wasted} "
                     f"({share:.1f}%)")  # fmt: skip
        if self.error is not None:
            where = f" at {self.location}" if self.location else ""
            lines.append(f"  the loop crashed{where}: {_one_line(self.error)}")
            cause = known_cause(self.error)
            if cause is not None:
                lines.append(f"  (the crash: {cause})")
        lines.append("  hazards:" if self.hazards else "  hazards: none found")
        lines += [f"   - {h}" for h in self.hazards]
        lines += self._d_lines()[: 1 if self.sides else None]  # (Step's options: not a side's)
        if self.schedule and self.cycle is not None:
            lines.append(
                f"  ganstep: {self.schedule} (ganstep.engine.cycle) computes this update "
                "order, both Ds frozen in G's step; --port finds its options for the "
                "script's losses."
            )
        elif self.sides and self.cycle is not None:
            lines.append("  ganstep: no CycleStep matches this update order.")
        elif self.sides and self.g_and_heads is not None:
            lines.append(f"  ganstep: {self.g_and_heads.advice()}.")
        elif self.sides:
            lines.append("  ganstep: no ganstep Step trains these sides (a Step takes one G "
                         "and one D, CycleStep two of each).")  # fmt: skip
        elif self.schedule:
            lines.append(
                f"  ganstep: schedule {self.schedule} computes this update with the fewest "
                f"passes; it would save about {wasted} per iteration."
            )
        elif self.d_steps_skipped:
            lines.append(f"  ganstep: {GATED_D_STEP}.")
        else:
            lines.append("  ganstep: no single ganstep schedule matches this update order.")
        if self.port is not None:
            lines += ["", str(self.port)]
        return "\n".join(lines)

    @property
    def step_d_order(self) -> str:
        """The ``d_order`` a Step takes to forward D as this loop does: ``"real_g_fake"``
        where D's step called G between its forwards and D draws random numbers (its
        masks, then z's and G's draws, then its own again), else the order seen
        (``"real_first"`` where none was)."""
        profile = self.d_profile
        if self.d_g_between and profile is not None and profile.stochastic:
            return "real_g_fake"
        return self.d_order or "real_first"

    def _d_lines(self) -> list[str]:
        """What D is, and which ganstep options keep such a loop exact."""
        profile = self.d_profile
        if profile is None:
            return []
        seen = f"; D's step forwards it {ORDER_WORDS[self.d_order]}" if self.d_order else ""
        if self.d_concat:
            seen += " in one call on both batches concatenated"
        if self.d_g_between:
            seen += ", calling G between its forwards"
        lines = [f"  D: {profile.describe()}{seen}"]
        order = self.step_d_order
        options = f', d_order="{order}"' if order != "real_first" else ""
        if self.d_concat and not profile.mixing:
            options = f", concat=True{options}"
        if not profile.mergeable:
            lines.append(
                "  exactness: D's forward draws random numbers or advances state, so every "
                "D forward of this loop counts: ganstep keeps them all (its default "
                f'd_forwards="auto"{options}); fused=True and d_forwards="merged" '
                "would differ from this loop."
            )
        elif options:
            lines.append(f"  exactness: Step(...{options}) forwards D as this loop does.")
        if profile.mixing:
            lines.append("  D mixes samples: ganstep refuses concat=True and fused=True for it.")
        return lines


ORDER_WORDS = {"real_first": "on the real batch first", "fake_first": "on the fake batch first"}


def _gflop(flops: float) -> str:
    return f"{flops / 1e9:.4g} GFLOP"


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0]


# since PyTorch 0.4 a mean or sum is 0-dim, where 0.3 gave shape (1,): a script written for
# 0.3 gives backward() a gradient of shape (1,) (the WGAN family's one = FloatTensor([1]))
_ONE_FOR_A_SCALAR = re.compile(r"Mismatch in shape: grad_output\[\d+\] has a shape of "
                               r"torch\.Size\(\[1\]\) and output\[\d+\] has a shape of "
                               r"torch\.Size\(\[\]\)")  # fmt: skip


# BCELoss's (and BCEWithLogitsLoss's) refusal of targets shaped unlike the scores
_TARGET_SIZE = re.compile(r"[Tt]arget size \(torch\.Size\(\[([\d, ]*)\]\)\) (?:that is different "
                          r"to|must be the same as) (?:the )?input size \(torch\.Size\(\[([\d, ]*)"
                          r"\]\)\)")  # fmt: skip
_NOT_PROBABILITIES = "all elements of input should be between 0 and 1"


def known_cause(error: BaseException) -> str | None:
    """What a GAN script's crash means and how its code is fixed, where it is one of the
    common ones whose PyTorch message does not say (an old PyTorch's gradient of shape
    (1,), BCELoss given logits, targets made for another batch size); else None."""
    text = str(error)
    if _ONE_FOR_A_SCALAR.search(text):
        return (
            "backward() was given a gradient of shape (1,) for a 0-dim loss: since PyTorch "
            "0.4 a mean or a sum has shape (), where 0.3 gave (1,), as the script expects; "
            "give backward() a 0-dim one (one = torch.tensor(1.0) for one = "
            "torch.FloatTensor([1]), its mone = one * -1 follows)"
        )
    if _NOT_PROBABILITIES in text:
        return (
            "BCELoss takes probabilities and was given values outside [0, 1]: D's scores "
            "without a Sigmoid at its end (logits)? Give them to BCEWithLogitsLoss (ganstep's "
            "ns), or end D in a Sigmoid (ns(probabilities=True))"
        )
    sizes = _TARGET_SIZE.search(text)
    if sizes is not None:
        target, scores = sizes[1], sizes[2]
        rows = target.split(",")[0], scores.split(",")[0]
        if rows[0] != rows[1]:
            return (
                f"the loss's targets have {rows[0]} rows and the scores {rows[1]}: targets "
                "made for a fixed batch size met a batch of another (an epoch's shorter last "
                "one?); make them from the scores (torch.ones_like(output)), or give the "
                "DataLoader drop_last=True"
            )
        return (
            f"the scores ({scores}) and the targets ({target}) have the same rows in other "
            "shapes; the loss reads them element by element: view one as the other "
            "(output.view(-1))"
        )
    return None


def _tensors(value: object, depth: int = 3) -> Iterator[Tensor]:
    """The tensors of a module's output: a tensor, or those in tuples, lists and dicts
    nested up to ``depth`` levels (pix2pixHD's multi-scale D returns a list of lists: each
    scale's features, then its prediction), in order."""
    if isinstance(value, Tensor):
        yield value
    elif depth > 0 and isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v, depth - 1)
    elif depth > 0 and isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v, depth - 1)


def _autocast_dtype(module: nn.Module) -> torch.dtype | None:
    """The dtype torch.autocast casts to now on ``module``'s device; None outside it."""
    p = next(module.parameters(), None)
    if p is None or not torch.is_autocast_enabled(p.device.type):
        return None
    return torch.get_autocast_dtype(p.device.type)


def _cast_in_block(module: nn.Module, dtype: torch.dtype) -> frozenset[int]:
    """The parameters of ``module`` whose cast copy a call under autocast to ``dtype``
    leaves in autocast's cache for the rest of the block: float32 and requiring a
    gradient, with caching on. (Casts of frozen parameters are not kept, and a frozen
    parameter does not read a kept one.)"""
    if dtype == torch.float32 or not torch.is_autocast_cache_enabled():
        return frozenset()
    return frozenset(
        id(p) for p in module.parameters() if p.requires_grad and p.dtype == torch.float32
    )


def _is_plain(value: object) -> bool:
    """A value a call's result may be read as depending on alone (ProGAN's ``alpha``)."""
    return isinstance(value, int | float | bool | str | None)


def with_tensor_kwargs(args: tuple, kwargs: dict | None) -> tuple:
    """A call's positional arguments, then the tensors it was given by keyword
    (``D(x=real)``), in that order: what the audit reads a module's inputs from. Keywords
    of other values (``return_features=False``) stay unread."""
    if not kwargs:
        return args
    return (*args, *(v for v in kwargs.values() if isinstance(v, Tensor)))


def rng_states() -> list[Tensor]:
    states = [torch.random.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states += torch.cuda.get_rng_state_all()
    return states


class Recorder:
    """The event log of one audited run (forwards, backwards, optimizer steps)."""

    loss_values = False  # read each backward's loss value (one host read a backward)

    def __init__(self) -> None:
        self.modules: dict[str, nn.Module] = {}
        self._kept_args: set[str] = set()
        self.owner: dict[int, str] = {}  # parameter id -> label
        # a lazy module's parameters before its first forward, and their labels
        self.lazy: list[tuple[nn.Parameter, str]] = []
        self.steps: Counter[str] = Counter()
        self.seq = 0
        self.iteration = 0  # function mode: the call of fn; scripts: assigned afterwards
        self.forwards: list[_Forward] = []
        self.backwards: list[_Backward] = []
        self.opt_steps: list[_Step] = []
        self.clips: list[_Clip] = []  # the script's calls of torch's gradient clipping
        self.unowned_steps = 0  # steps of an optimizer over no module seen called
        # steps of one optimizer over several modules (G and D at once, or CycleGAN's two
        # generators), labelled by their modules' labels joined with "+": read as one
        # side's steps where the script's modules form two sides
        self.joint_opt_steps: list[_Step] = []
        self.stepping: _Step | None = None  # the step whose optimizer is stepping now
        self.events: list[tuple[str, object]] = []  # ("backward", b) / ("step", s), in order
        self.current: _Backward | None = None
        self.contrib: dict[int, set[int]] = {}  # param id -> backward indices in its .grad
        self.made_by: dict[int, _Forward] = {}  # output storage address -> its forward
        self.alive: list[Tensor] = []  # inputs and outputs kept so addresses are not reused
        self.counter = TotalFlops()
        # a readable name of each module's label beyond G and D (a script's name for it:
        # feature_extractor), for what the report says of it
        self.names: dict[str, str] = {}
        # Count FLOPs only inside module calls and backward calls (a script's recorder):
        # a dispatch mode active around the whole script gives every tensor a Python
        # object, and a tensor subclass made from one then fails (BigGAN's Distribution).
        self.scoped_flops = False
        self._counted = 0  # FLOPs of the counting spans already closed
        self._counting = 0  # nesting depth of the open counting span
        self.handles: list = []
        self.failed: _Backward | None = None
        self._saved: tuple | None = None
        self._clip_saved: list[tuple] = []
        self.autocast_block = 0  # torch.autocast's cache clears so far (blocks ended)
        self.parametrize_block = 0  # parametrize.cached() blocks seen so far
        # what G's output became on its way to D (noise added, augmented, cast)
        self.provenance = Provenance(self._output_of, self._latest_call)

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def flops(self) -> int:
        """FLOPs run so far under the recorder."""
        if self.scoped_flops and not self._counting:
            return self._counted
        return self._counted + self.counter.get_total_flops()

    def count_on(self) -> None:
        """Open a counting span (scoped counting; nested spans count once)."""
        if self.scoped_flops:
            self._counting += 1
            if self._counting == 1:
                self.counter.__enter__()

    def count_off(self) -> None:
        """Close the span :meth:`count_on` opened."""
        if self.scoped_flops:
            self._counting -= 1
            if self._counting == 0:
                self._counted += self.counter.get_total_flops()
                self.counter.__exit__(None, None, None)

    @staticmethod
    def key(t: Tensor) -> tuple:
        return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t._version)

    # -- modules ---------------------------------------------------------------------

    def add_module(self, label: str, module: nn.Module) -> None:
        """Follow ``module``'s parameters under ``label`` (its forwards are recorded by
        whoever calls :meth:`forward_start`/:meth:`forward_end`)."""
        self.modules[label] = module
        for p in module.parameters():
            if id(p) in self.owner:
                continue
            self.owner[id(p)] = label
            if isinstance(p, UninitializedParameter):  # a lazy module's, before its first
                self.lazy.append((p, label))  # forward: followed once it has values
            else:
                self._follow(p, label)

    def _follow(self, p: nn.Parameter, label: str) -> None:
        """A hook on ``p`` that tells which backward computed its gradient."""
        # a hook needs requires_grad when it is registered, and outlives its switching
        # off: StyleGAN2-ADA keeps G and D frozen between phases
        frozen = not p.requires_grad

        def on_param_grad(grad, p=p, label=label):
            b = self.current
            if b is None:
                return grad
            if p.grad is None or not bool(p.grad.any()):
                self.contrib[id(p)] = set()  # cleared since: a fresh accumulation
            self.contrib.setdefault(id(p), set()).add(b.index)
            b.produced.add(label)
            return grad

        p.requires_grad_(True)
        self.handles.append(p.register_hook(on_param_grad))
        p.requires_grad_(not frozen)

    def _follow_materialized(self) -> None:
        """Follow the lazy modules' parameters that a forward has given values since."""
        waiting = []
        for p, label in self.lazy:
            if isinstance(p, UninitializedParameter):
                waiting.append((p, label))
            else:
                self._follow(p, label)
        self.lazy = waiting

    def hook_module(self, label: str, module: nn.Module) -> None:
        """Record every call of ``module`` under ``label`` (function mode)."""
        self.add_module(label, module)
        started: list[tuple | None] = []

        def pre(m, a) -> None:  # ganstep's own observation of D is not the user's loop
            started.append(None if observing() else self.forward_start())

        def post(m, a, kwargs, out) -> None:
            start = started.pop()
            if start is not None:
                self.forward_end(label, with_tensor_kwargs(a, kwargs), out, start, m, kwargs)

        self.handles.append(module.register_forward_pre_hook(pre))
        self.handles.append(module.register_forward_hook(post, with_kwargs=True, always_call=True))

    def forward_start(self) -> tuple[int, list[Tensor]]:
        return self.flops(), rng_states()

    def forward_end(self, label: str, args: tuple, out: object, start: tuple,
                    module: nn.Module | None = None,
                    keywords: dict | None = None) -> None:  # fmt: skip
        """Record a finished call of ``module`` (by default the module under ``label``);
        ``keywords``: those it was given, where known (its tensors are in ``args`` too)."""
        if self.lazy:  # (a lazy module's first forward gives its parameters values)
            self._follow_materialized()
        flops, states = start
        tensors = [a for a in args if isinstance(a, Tensor)]
        x = tensors[0] if tensors else None
        random = any(not torch.equal(a, b) for a, b in zip(states, rng_states(), strict=False))
        producer = self._output_of(x) if x is not None else None
        concat, changed = None, False
        if producer is None and x is not None:
            producer, concat = self._inside(x)
        if producer is None and x is not None:  # G's output with noise, augmented, cast
            made = self.provenance.source(x)
            if isinstance(made, _Forward):  # a cast changes no value (bf16 fakes to fp32)
                producer, changed = made, not _cast_of(made.output, x)
            else:  # data (a real batch, z): what is made from it is data too
                self.provenance.mark_data(x)
        outputs = list(_tensors(out))
        fwd = _Forward(
            label=label,
            seq=self._next(),
            versions=dict(self.steps),
            producer=producer,
            flops=self.flops() - flops,
            inputs=[(tuple(t.shape), t.dtype) for t in tensors],
            input_grad=x is not None and x.requires_grad,
            random=random,
            key=self.key(x) if x is not None else None,
            iteration=self.iteration,
            output=outputs[0].detach() if outputs else None,
            concat=concat,
            changed=changed,
        )
        called = self.modules[label] if module is None else module
        fwd.training = called.training
        others = [(i, a) for i, a in enumerate(args) if not isinstance(a, Tensor)]
        if all(_is_plain(a) for _, a in others):
            fwd.plain = tuple(others)
        else:
            fwd.plain = None
        named = sorted((k, v) for k, v in (keywords or {}).items() if not isinstance(v, Tensor))
        if all(_is_plain(v) for _, v in named):
            fwd.rest = (tuple(self.key(t) for t in tensors[1:]), tuple(named))
        else:
            fwd.rest = None
        fwd.autocast = _autocast_dtype(called)
        if fwd.autocast is not None:
            fwd.cast = _cast_in_block(called, fwd.autocast)
            fwd.cast_block = self.autocast_block
        in_cached = getattr(parametrize, "_cache_enabled", 0)
        if in_cached:
            fwd.cached = frozenset(
                id(m) for m in called.modules() if parametrize.is_parametrized(m)
            )
            fwd.cached_block = self._parametrize_block()
        if changed or fwd.autocast is not None or in_cached or not fwd.training:  # its line
            fwd.where = self.call_site()
        if label not in self._kept_args:  # for observing what D is, after the run
            self._kept_args.add(label)
            fwd.args = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
        self.forwards.append(fwd)
        self.alive += [t.detach() for t in tensors]

        def on_grad(grad, fwd=fwd):
            b = self.current
            if b is not None and not any(f is fwd for f in b.through):
                b.through.append(fwd)

        for t in _tensors(out):
            self.made_by[t.untyped_storage().data_ptr()] = fwd
            self.alive.append(t.detach())
            if t.requires_grad:
                t.register_hook(on_grad)

    def _output_of(self, t: Tensor) -> _Forward | None:
        """The module call whose output ``t`` holds (the same storage), if any (a
        script's modules have provisional labels until its run ends: any module's)."""
        return self.made_by.get(t.untyped_storage().data_ptr())

    def _latest_call(self, f: _Forward) -> _Forward:
        """The latest call of the module ``f`` is a call of."""
        return next((g for g in reversed(self.forwards) if g.label == f.label), f)

    def _inside(self, x: Tensor) -> tuple[_Forward | None, str | None]:
        """The recent forward whose output is the first or last rows of ``x``: an input
        concatenated from another module's output and more (G's fakes beside the real
        batch), which a tensor's storage cannot tell."""
        for f in reversed(self.forwards[-8:]):
            out = f.output
            if out is None or out.dim() == 0 or out.shape[0] >= x.shape[0]:
                continue
            if out.shape[1:] != x.shape[1:] or out.dtype != x.dtype or out.device != x.device:
                continue
            n = out.shape[0]
            if torch.equal(x[:n], out):
                return f, "fake_first"
            if torch.equal(x[-n:], out):
                return f, "real_first"
        return None, None

    # -- optimizers and autograd -------------------------------------------------------

    def _labels_of(self, opt: torch.optim.Optimizer) -> set[str]:
        return {self.owner.get(id(p)) for g in opt.param_groups for p in g["params"]} - {None}

    def _step_hook(self, opt, args, kwargs) -> None:
        labels = self._labels_of(opt)
        self.unowned_steps += not labels
        self.stepping = None
        if not labels:
            return  # an optimizer of something else
        # one module's step, or one over several: a side's, once the sides are known
        label = "+".join(sorted(labels))
        used: set[int] = set()
        # (torch gives the global pre-hook the optimizer again as args[0])
        fed = any(callable(a) and a is not opt for a in args) or callable(kwargs.get("closure"))
        for g in opt.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    used |= self.contrib.get(id(p), set())
                    fed = fed or bool(p.grad.detach().ne(0).any())
        step = _Step(label, self._next(), used, self.flops(), self.iteration, gradless=not fed,
                     where=self.call_site(), modules=frozenset(labels))  # fmt: skip
        self.stepping = step  # (the step its optimizer's post-hook follows)
        self.before_step(step)  # (where a script is stopped, the step does not run)
        if step.joint:
            self.joint_opt_steps.append(step)
        else:
            self.opt_steps.append(step)
            self.events.append(("step", step))
        for b in self.backwards:
            if b.index in used:
                b.used_by.add(label)

    def before_step(self, step: _Step) -> None:
        """Called before each recorded optimizer step; the script runner stops here."""

    def call_site(self) -> str | None:
        """The audited script's line calling into the audit now (a script's recorder)."""
        return None

    def _after_step(self, opt, args, kwargs) -> None:
        for label in self._labels_of(opt):  # (one optimizer over several: each changed)
            self.steps[label] += 1

    def _clipping(self, original: Callable) -> Callable:
        """``original`` (one of :data:`CLIPPING`), recording each call's parameters and
        arguments before it runs."""
        signature = inspect.signature(original)

        def clip(parameters, *args, **kwargs):
            params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
            try:  # (a call torch refuses is left for torch to refuse)
                bound = signature.bind(params, *args, **kwargs)
                bound.apply_defaults()
                values = list(bound.arguments.items())[1:]  # after the parameters
                shown = [repr(values[0][1])]  # the norm or value, then what is not the default
                shown += [f"{k}={v!r}" for k, v in values[1:]
                          if not _same_value(v, signature.parameters[k].default)]  # fmt: skip
            except (TypeError, IndexError):
                return original(params, *args, **kwargs)
            code = f"torch.nn.utils.{original.__name__}({{}}.parameters(), {', '.join(shown)})"
            ids = frozenset(id(p) for p in params)
            self.clips.append(_Clip(self._next(), ids, code, self.call_site()))
            return original(params, *args, **kwargs)

        return clip

    def _wrap(self, original: Callable) -> Callable:
        signature = inspect.signature(original)

        def wrapped(*args, **kwargs):
            # Tensor.backward passes its arguments positionally
            bound = signature.bind(*args, **kwargs).arguments
            create = bool(bound.get("create_graph", False))
            retain = bound.get("retain_graph")
            retain = create if retain is None else bool(retain)
            roots = bound.get("tensors", bound.get("outputs"))
            roots = [roots] if isinstance(roots, Tensor) else list(roots or [])
            roots = [t for t in roots if isinstance(t, Tensor)]
            dtypes = frozenset(t.dtype for t in roots if t.is_floating_point())
            b = _Backward(len(self.backwards), self._next(), retain, create, roots,
                          iteration=self.iteration, where=self.call_site(),
                          dtypes=dtypes)  # fmt: skip
            self.backwards.append(b)
            self.events.append(("backward", b))
            outer, self.current = self.current, b
            self.count_on()
            try:
                result = original(*args, **kwargs)
            except RuntimeError:
                self.failed = b
                raise
            finally:
                self.count_off()
                self.current = outer
            if self.loss_values:
                b.value = _loss_value(roots, bound)
            b.roots = [self.key(t) for t in roots]  # keys only: keep no graph alive
            if create and "outputs" in bound:  # torch.autograd.grad: where it was taken
                b.inputs = [self.key(t) for t in _tensors(bound.get("inputs"))]
            if create and result is not None:
                for t in _tensors(result):
                    if t.requires_grad:
                        t.register_hook(lambda grad, b=b: self._through_penalty(b, grad))
            return result

        return wrapped

    def _through_penalty(self, penalty: _Backward, grad: Tensor) -> Tensor:
        b = self.current
        if b is not None and not any(d is penalty for d in b.double):
            b.double.append(penalty)
        return grad

    def _autocast_block_ended(self) -> None:
        """torch.autocast's exit from its outermost block clears the cast cache (it calls
        ``torch.clear_autocast_cache``): the next block casts afresh."""
        self.autocast_block += 1
        self._saved[2]()

    def _parametrize_block(self) -> int:
        """The number of the ``parametrize.cached()`` block open now. torch gives each
        outermost block a new cache dict (whatever name the script called ``cached`` by,
        bound before the audit or not); the first call in a block marks it."""
        cache = parametrize._cache
        if _BLOCK not in cache:  # (torch reads the cache by (module id, name) alone)
            self.parametrize_block += 1
            cache[_BLOCK] = self.parametrize_block
        return cache[_BLOCK]

    def reaches(self, roots: list) -> set[str]:
        """The modules whose parameters a backward from ``roots`` would reach."""
        seen, todo, found = set(), [t.grad_fn for t in roots if isinstance(t, Tensor)], set()
        while todo and len(seen) < 200_000:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            variable = getattr(node, "variable", None)
            if variable is not None and id(variable) in self.owner:
                found.add(self.owner[id(variable)])
            todo += [n for n, _ in node.next_functions]
        return found

    def pending(self, label: str) -> set[int]:
        """Backward calls whose gradients ``label``'s parameters still hold."""
        held: set[int] = set()
        for p in self.modules[label].parameters():
            if p.grad is not None and bool(p.grad.any()):
                held |= self.contrib.get(id(p), set())
        return held

    # -- the run -----------------------------------------------------------------------

    def __enter__(self) -> Recorder:
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        self.handles.append(register_optimizer_step_pre_hook(self._step_hook))
        self.handles.append(register_optimizer_step_post_hook(self._after_step))
        self._saved = torch.autograd.backward, torch.autograd.grad, torch.clear_autocast_cache
        torch.autograd.backward = self._wrap(self._saved[0])
        torch.autograd.grad = self._wrap(self._saved[1])
        torch.clear_autocast_cache = self._autocast_block_ended
        # where scripts reach them: torch.nn.utils.clip_grad_norm_, and the module's own
        self._clip_saved = [(home, name, getattr(home, name))
                            for home in (torch.nn.utils, torch.nn.utils.clip_grad)
                            for name in CLIPPING]  # fmt: skip
        for home, name, original in self._clip_saved:
            setattr(home, name, self._clipping(original))
        if not self.scoped_flops:
            self.counter.__enter__()
        self.provenance.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.provenance.__exit__(None, None, None)
        if not self.scoped_flops:
            self.counter.__exit__(None, None, None)
        elif self._counting:  # the script was stopped inside a module or backward call
            self._counting = 1
            self.count_off()
        torch.autograd.backward, torch.autograd.grad, torch.clear_autocast_cache = self._saved
        for home, name, original in self._clip_saved:
            setattr(home, name, original)
        for h in self.handles:
            h.remove()
        self.handles.clear()


# -- analysis --------------------------------------------------------------------------


class _Analysis:
    """The report of a finished recording whose modules are labelled "G" and "D".

    ``iterations`` is how many iterations to analyse (events of later ones, such as
    the start of the one a script was stopped in, are left out); a crash's partial
    iteration counts as one.
    """

    def __init__(self, rec: Recorder, iterations: int, error: BaseException | None) -> None:
        self.rec, self.n, self.error = rec, iterations, error
        # a warm-up's steps, and the passes before them: no part of the update analysed
        self.warm = [s for s in warm_up_steps(rec) if s.iteration < iterations]
        cut = self.warm[-1].seq if self.warm else -1
        kept = lambda e: e.iteration < iterations and e.seq > cut  # noqa: E731
        self.forwards = [f for f in rec.forwards if f.label in MODULES and kept(f)]
        self.backwards = [b for b in rec.backwards if kept(b)]
        self.steps = [s for s in rec.opt_steps if s.label in MODULES and kept(s)]
        self.info = [s for s in info_steps(rec) if s.iteration < iterations]
        self._cost: dict[tuple, int] = {}
        self._mark_recomputed_and_used()
        # the script's iterations whose D step was skipped, where order() read them so
        self.d_skipped = 0

    def _mark_recomputed_and_used(self) -> None:
        seen: set[tuple] = set()
        for f in self.forwards:
            # the same inputs at the same own parameters, within one iteration, with no
            # random numbers drawn: the same result
            key = (f.label, f.part, f.iteration, f.versions.get(f.label, 0), f.key, f.rest)
            f.recomputed = f.key is not None and f.rest is not None and key in seen and not f.random
            if f.continues:  # a later part of a call: recomputed where its start was
                f.recomputed = f.producer.recomputed and not f.random
            seen.add(key)
        for b in self.rec.backwards:
            for f in b.through:
                f.used = True
            for penalty in b.double:
                for f in penalty.through:
                    f.used = True
        changed = True
        while changed:  # a forward feeding a used one (G under no_grad, then D) is used
            changed = False
            for f in self.rec.forwards:
                if f.used and f.producer is not None and not f.producer.used:
                    f.producer.used = changed = True

    def per(self, count: float) -> float:
        return count / max(1, self.n)

    def passes(self) -> tuple[dict, dict, dict, dict]:
        calls = [f for f in self.forwards if not f.continues]  # a module's parts: one pass
        train = [f for f in calls if f.used]
        other = [f for f in calls if not f.used]
        forwards = {m: self.per(sum(f.label == m for f in train)) for m in MODULES}
        others = {m: self.per(sum(f.label == m for f in other)) for m in MODULES}
        done = [b for b in self.backwards if b is not self.rec.failed]  # not the one that raised
        backwards = {m: self.per(sum(f.label == m and not f.continues for b in done
                                     for f in b.through)) for m in MODULES}  # fmt: skip
        double = {m: self.per(sum(f.label == m and not f.continues for b in done
                                  for p in b.double for f in p.through))
                  for m in MODULES}  # fmt: skip
        return forwards, backwards, double, others

    # -- FLOPs of gradients nobody stepped --------------------------------------------

    def backward_flops(self, f: _Forward, weights: bool, input_grad: bool) -> int:
        """FLOPs of one backward through a copy of ``f``'s module at ``f``'s input shapes
        (its plain arguments as they were). Where the copy cannot be called so (an
        argument that is neither a tensor nor a plain value, a keyword argument the
        hooks do not see), a forward's FLOPs for each gradient taken, weights' and
        input's: the usual estimate of a backward."""
        key = (f.label, f.part, tuple(f.inputs), f.plain, f.autocast, weights, input_grad)
        if key not in self._cost:
            if not weights and not input_grad:
                self._cost[key] = 0
                return 0
            try:
                self._cost[key] = self._measured_backward(f, weights, input_grad)
            except Exception:  # noqa: BLE001 - the copy's call: the estimate instead
                self._cost[key] = f.flops * (int(weights) + int(input_grad))
        return self._cost[key]

    def _measured_backward(self, f: _Forward, weights: bool, input_grad: bool) -> int:
        module = module_copy(self.rec.modules[f.label]).get_submodule(f.part)
        param = next(module.parameters())
        tensors = []
        for i, (shape, dtype) in enumerate(f.inputs):
            if dtype.is_floating_point:
                t = torch.randn(shape, dtype=dtype, device=param.device)
                tensors.append(t.requires_grad_(input_grad and i == 0))
            else:
                tensors.append(torch.zeros(shape, dtype=dtype, device=param.device))
        if f.plain is None:
            raise ValueError("an argument that is neither a tensor nor a plain value")
        inputs = list(reversed(tensors))
        plain = dict(f.plain)
        args = [plain[i] if i in plain else inputs.pop() for i in range(len(tensors) + len(plain))]
        for p in module.parameters():
            p.requires_grad_(weights)
        # in the precision the call ran in (G's bfloat16 fakes need D autocast too)
        kind, dtype = param.device.type, f.autocast
        with torch.autocast(kind, dtype=dtype, enabled=dtype is not None):
            out = module(*args)
        loss = sum(t.float().sum() for t in _tensors(out))
        with TotalFlops() as counter:
            loss.backward()
        return counter.get_total_flops()

    def wasted_backward(self, f: _Forward) -> int:
        """What a backward through ``f`` cost for weight gradients nobody stepped: the
        weight gradients alone when the gradient had to pass on to ``f``'s input, the
        whole backward through the module when nothing needed its input's gradient."""
        if not f.head.input_grad:  # nothing needed the gradient at the call's input
            return self.backward_flops(f, True, f.input_grad)  # (a later part's: all of it)
        return self.backward_flops(f, True, True) - self.backward_flops(f, False, True)

    def _graded_at_output(self, b: _Backward, f: _Forward) -> bool:
        """Whether a penalty that ``b`` went back through took its gradient at ``f``'s
        output as another module was given it (WGAN-div's, at the fakes D's loss took)."""
        given = {g.key for g in self.forwards if g.producer is f and g.key is not None}
        return any(given & set(p.inputs) for p in b.double)

    def waste(self) -> tuple[int, list[str]]:
        hazards: list[str] = []
        wasted = 0
        unstepped: dict[tuple[str, str, bool], dict[tuple, int]] = {}
        untrained: dict[tuple[str, str], dict[tuple, int]] = {}  # (module, phase): costs
        stepping = {s.label for s in [*self.rec.opt_steps, *self.rec.joint_opt_steps]}
        held = {m: self.rec.pending(m) for m in MODULES} if self.error is not None else {}
        for b in self.backwards:
            for m in sorted(b.produced - b.used_by):
                if INFO in b.used_by:
                    continue  # an info step stepped both modules' gradients
                if b.index in held.get(m, ()):
                    continue  # still in m's .grad when the loop crashed: its step may follow
                other = "G" if m == "D" else "D"
                for f in b.through:
                    if f.label != m:
                        continue
                    cost = self.wasted_backward(f)
                    wasted += cost
                    if other in b.used_by:
                        head = f.head  # a call's parts count as one time
                        graded = self._graded_at_output(b, f)
                        calls = unstepped.setdefault((m, other, not head.input_grad, graded),
                                                     {})  # fmt: skip
                        calls[b.index, id(head)] = calls.get((b.index, id(head)), 0) + cost
                    elif m not in MODULES and m not in stepping and b.used_by & set(MODULES):
                        phase = min(b.used_by & set(MODULES))  # a module no optimizer steps
                        calls = untrained.setdefault((m, phase), {})
                        calls[b.index, id(f.head)] = calls.get((b.index, id(f.head)), 0) + cost
        for (m, other, whole, graded), calls in unstepped.items():
            costs = list(calls.values())
            text = f"({len(costs)} time(s), {_gflop(self.per(sum(costs)))} per iteration wasted)"
            if whole:
                copy = (f"; a penalty takes {other}'s gradient at that output, so make the copy "
                        "require grad: .detach().requires_grad_()" if graded else "")  # fmt: skip
                hazards.append(
                    f"a whole backward through {m} ran in {other}'s step for gradients nobody "
                    f"stepped {text}: nothing needed the gradient at {m}'s input; take that "
                    f"output of {m} without a graph in {other}'s loss (detach() it, or run "
                    f"{m} under torch.no_grad()){copy}."
                )
            else:
                hazards.append(
                    f"{m}'s weight gradients were computed in {other}'s step and never "
                    f"stepped {text}: switch {m}'s parameters off (requires_grad_(False)) "
                    f"during {other}'s step."
                )
        for (m, phase), calls in untrained.items():
            name = self.rec.names.get(m, m.removeprefix("other:"))
            costs = list(calls.values())
            hazards.append(
                f"{name}'s weight gradients were computed in {phase}'s step and no optimizer "
                f"steps them ({len(costs)} time(s), {_gflop(self.per(sum(costs)))} per "
                f"iteration wasted): switch its parameters off ({name}.requires_grad_(False)); "
                f"{phase}'s gradient passes through it all the same."
            )
        recomputed: dict[str, dict[int, int]] = {}
        for f in self.forwards:
            if f.recomputed:
                wasted += f.flops
                calls = recomputed.setdefault(f.label, {})
                calls[id(f.head)] = calls.get(id(f.head), 0) + f.flops
        for m, by_call in recomputed.items():
            costs = list(by_call.values())
            hazards.append(
                f"{m} was forwarded again on the same input at the same parameters "
                f"({len(costs)} time(s), {_gflop(self.per(sum(costs)))} per iteration "
                "recomputed)."
            )
        return wasted, hazards

    # -- hazards -----------------------------------------------------------------------

    def leaks(self) -> list[str]:
        hazards = []
        both = [b.index for b in self.backwards if len(b.used_by & set(MODULES)) == 2]
        if both:
            hazards.append(
                f"the gradients of backward call(s) {', '.join(f'#{i}' for i in both)} were "
                "stepped by both G's and D's optimizer: one loss leaked into the other "
                "module's update; cut the graph with detach() or give each backward its "
                "inputs=."
            )
        failed = self.rec.failed
        if self.error is not None and failed is not None:
            # the step the crash prevented: would it have stepped the other's loss?
            for m in sorted(self.rec.reaches(failed.roots) & set(MODULES)):
                other = "G" if m == "D" else "D"
                stale = [b for b in self.rec.backwards
                         if b.index in self.rec.pending(m) and other in b.used_by
                         and m not in b.used_by]  # fmt: skip
                if stale:
                    hazards.append(
                        f"{m}'s gradients still held those of backward #{stale[0].index} "
                        f"({other}'s loss, stepped by {other}'s optimizer) when backward "
                        f"#{failed.index} started adding to them: had {m}'s step run, "
                        f"{other}'s loss would have leaked into {m}'s update. Detach the "
                        f"fake batch in {other}'s loss or zero {m}'s gradients before its "
                        "backward."
                    )
        return hazards

    def stale_steps(self) -> list[str]:
        hazards = []
        stepped: dict[str, set[int]] = {"G": set(), "D": set()}
        for s in self.steps:
            stale = s.backwards & stepped[s.label]
            if stale:
                hazards.append(
                    f"{s.label}'s step in iteration {s.iteration} used gradients already "
                    f"stepped before (backward #{min(stale)}): a missing zero_grad lets them "
                    "accumulate into this step."
                )
            stepped[s.label] |= s.backwards
        return hazards

    def _stale(self, m: str, kept_by: Callable[[_Forward], tuple[frozenset[int], int]]):
        """``m``'s forwards that read what a block kept (``kept_by(f)``: the things ``f``
        made or read from the block's cache, and the block) since before a step of
        ``m`` in that block."""
        steps = [s.seq for s in self.steps if s.label == m]
        kept: dict[int, tuple[int, int]] = {}  # thing -> (block, the forward that made it)
        stale = []
        for f in self.forwards:
            things, block = kept_by(f)
            if f.label != m or not things:
                continue
            made = [kept[t][1] for t in things if kept.get(t, (None,))[0] == block]
            if made and any(min(made) < s < f.seq for s in steps):
                stale.append(f)
            for t in things:
                if kept.get(t, (None,))[0] != block:
                    kept[t] = (block, f.seq)
        return stale

    def stale_in_blocks(self) -> list[str]:
        """Forwards inside a torch.autocast block that read a weight's cast copy made in
        that block before an optimizer step of its module (autocast casts each weight
        once per block), or inside a parametrize.cached() block one of its parametrized
        weights computed there before the step: they ran at the weights from before it."""
        hazards = []
        for m in MODULES:
            stale = self._stale(m, lambda f: (f.cast, f.cast_block))
            if stale:
                first = stale[0]
                at = f" at {first.where}" if first.where else ""
                precision = "fp16" if first.autocast == torch.float16 else "bf16"
                hazards.append(
                    f"{m} was forwarded {STALE_CAST} {m}'s optimizer "
                    f"step in that block ({len(stale)} time(s), first in iteration "
                    f"{first.iteration}{at}): autocast casts each weight once per block, so "
                    f"that forward ran at {m}'s weights from before the step. End the block "
                    "before each optimizer step (autocast the forwards and losses only), or "
                    f"give ganstep's Step precision={precision!r}."
                )
            stale = self._stale(m, lambda f: (f.cached, f.cached_block))
            if stale:
                first = stale[0]
                at = f" at {first.where}" if first.where else ""
                hazards.append(
                    f"{m} was forwarded inside a torch.nn.utils.parametrize.cached() block "
                    f"after {m}'s optimizer step in that block ({len(stale)} time(s), first "
                    f"in iteration {first.iteration}{at}): the block computes each "
                    f"parametrized weight once, so that forward ran at {m}'s weights from "
                    "before the step. End the block before each optimizer step."
                )
        return hazards

    # -- the update order ----------------------------------------------------------------

    def fake_versions(self, step: _Step, base: tuple[int, int]) -> tuple[int, int] | None:
        """(G, D) versions, relative to ``base``, of the D forwards on fake batches that
        the stepped gradient went through."""
        seen = set()
        mine = [b for b in self.rec.backwards if b.index in step.backwards]
        for b in mine:
            for f in b.through:
                if f.label == "D" and f.fed_by_g:
                    seen.add((f.producer.versions.get("G", 0) - base[0],
                              f.versions.get("D", 0) - base[1]))  # fmt: skip
        if not seen:
            # A backward that starts at a fake batch with a given gradient (the fused
            # step): that gradient was taken through D's forwards on the same batch.
            through = {id(f) for b in self.rec.backwards for f in b.through}
            for b in mine:
                for f in self.forwards:
                    made = f.label == "D" and f.producer is not None and id(f) in through
                    if made and f.iteration == step.iteration and f.key in b.roots:
                        seen.add((f.producer.versions.get("G", 0) - base[0],
                                  f.versions.get("D", 0) - base[1]))  # fmt: skip
        return seen.pop() if len(seen) == 1 else None

    def regularizing(self, step: _Step) -> bool:
        """Whether ``step`` stepped a regularizer alone: its gradients went through no D
        forward on G's output (a lazy R1 step on the real batch, a path length step
        through G alone), and not through a fused step's fake batch either."""
        through = self._through(step)
        if any(f.label == "D" and f.fed_by_g for f in through):
            return False
        if step.label == "G" and any(f.label == "D" for f in through):
            return False
        return self.fake_versions(step, (0, 0)) is None

    def gradless_steps(self) -> list[str]:
        """A hazard for each module whose optimizer stepped with no gradient in its
        parameters: its loss never reached them (G's output detached in G's loss)."""
        hazards = []
        for m in MODULES:
            empty = [s for s in self.steps if s.label == m and s.gradless]
            if not empty:
                continue
            at = f" ({empty[0].where.split(': ', 1)[-1]})" if empty[0].where else ""
            hazards.append(
                f"{m}'s optimizer stepped {len(empty)} time(s){at} with no gradient in any of "
                f"{m}'s parameters: no backward since their last zero_grad() reached them, so "
                f"{m} learns nothing there. Did {m}'s loss take {m}'s output detached "
                f"(.detach(), .data) or made under torch.no_grad()? (A reentrant "
                f"torch.utils.checkpoint, use_reentrant=True, whose inputs need no gradient "
                f"makes such an output too: give it use_reentrant=False.)"
            )
        return hazards

    def losses_left_out(self) -> list[str]:
        """A hazard where D's optimizer stepped on a regularizer alone though D was forwarded
        on G's output in that step's phase and no backward took that forward: D's loss
        computed and never backpropagated (PyTorch-GAN's dragan.py backpropagates its
        gradient penalty alone), so D learns from its penalty only."""
        left = []
        for s in self.steps:
            if s.label != "D" or s.gradless or not self.regularizing(s):
                continue
            if any(f.fed_by_g and not f.used for f in phase_forwards(self.rec, s.seq)):
                left.append(s)
        if not left:
            return []
        at = f" ({left[0].where.split(': ', 1)[-1]})" if left[0].where else ""
        return [
            f"D's optimizer stepped {len(left)} time(s){at} {PENALTY_ALONE}, though D was "
            "forwarded on G's output before it in that step and no backward took that "
            "forward: D's loss was computed and never backpropagated, so D learns from its "
            "penalty only. Backpropagate the loss with the penalty (one backward of their "
            "sum), unless a penalty alone is what you mean."
        ]

    def dropped_forwards(self) -> list[str]:
        """A hazard where D was forwarded on G's output and nothing was backpropagated
        from that forward, while a later forward of D on the same input before the same
        step was: a loss computed, then replaced (PyTorch-GAN's relativistic_gan.py
        overwrites its relativistic G loss with a plain one)."""
        dropped: dict[str, list[int]] = {}  # by the step's module: each dropped forward's FLOPs
        for f in self.forwards:
            if f.label != "D" or f.used or not f.fed_by_g:
                continue
            end = next((s for s in self.steps if s.seq > f.seq), None)
            if end is None:
                continue
            later = [g for g in self.forwards if f.seq < g.seq < end.seq and g.label == "D"]
            if any(g.used and (g.key, g.rest) == (f.key, f.rest) for g in later):
                dropped.setdefault(end.label, []).append(f.flops)
        return [
            f"D was forwarded on G's output in {m}'s step and nothing was backpropagated from "
            f"that forward ({len(flops)} time(s), {_gflop(self.per(sum(flops)))} per iteration), "
            "while a later forward of D on the same input in that step was: a loss computed, "
            "then replaced (overwritten?), or a read the later forward's output could give."
            for m, flops in dropped.items()
        ]

    def adversarial_steps(self) -> list[_Step]:
        """The steps of G and D on their adversarial losses (not a regularizer alone)."""
        return [s for s in self.steps if not self.regularizing(s)]

    def shape(self, iteration: int) -> tuple[str, int, int] | None:
        """(order, D steps, G steps) of one iteration, None when it has not both; steps on
        a regularizer alone are left out, but count in the parameters' versions."""
        adversarial = {id(s) for s in self.adversarial_steps()}
        steps = [s for s in self.steps if s.iteration == iteration and id(s) in adversarial]
        labels = [s.label for s in steps]
        if "G" not in labels or "D" not in labels:
            return None
        leader = labels[0]
        lead = next((i for i, m in enumerate(labels) if m != leader), len(labels))
        if any(m == leader for m in labels[lead:]):
            return ("other", labels.count("D"), labels.count("G"))
        moved = [*self.steps, *self.warm]  # (a warm-up's steps moved G's version too)
        before = [s for s in moved if s.iteration < iteration]
        info = sum(s.iteration < iteration for s in self.info)  # (each moves G and D)
        base = (sum(s.label == "G" for s in before) + info,
                sum(s.label == "D" for s in before) + info)  # fmt: skip
        # a regularizer's own step earlier in the iteration (StyleGAN2-ADA's Greg between
        # Gmain and Dmain) moved its module's version, not the adversarial order
        lazy = [s for s in moved if s.iteration == iteration and id(s) not in adversarial]
        at = [self._shifted(self.fake_versions(s, base), [r for r in lazy if r.seq < s.seq])
              for s in steps]  # fmt: skip
        n_d, n_g = labels.count("D"), labels.count("G")
        if leader == "D":
            first = [(0, j) for j in range(n_d)] + [(i, n_d) for i in range(n_g)]
        else:
            first = [(i, 0) for i in range(n_g)] + [(n_g, j) for j in range(n_d)]
        order = "d_first" if leader == "D" else "g_first"
        if at == first:
            return (order, n_d, n_g)
        if n_d == n_g == 1 and at == [(0, 0), (0, 0)]:
            return ("simultaneous", 1, 1)
        return ("other", n_d, n_g)

    @staticmethod
    def _shifted(at: tuple[int, int] | None, lazy: list[_Step]) -> tuple[int, int] | None:
        """Versions ``at`` less the regularizer steps ``lazy`` of each module."""
        if at is None:
            return None
        moved = [sum(s.label == m for s in lazy) for m in ("G", "D")]
        return at[0] - moved[0], at[1] - moved[1]

    def _first_d_step_forwards(self) -> list[_Forward]:
        """D's forwards that D's first step's gradient went through, in their order ([]
        where D never stepped)."""
        step = next((s for s in self.adversarial_steps() if s.label == "D"), None)
        if step is None:
            return []
        return sorted((f for f in self._through(step) if f.label == "D"), key=lambda f: f.seq)

    def g_between(self) -> bool:
        """Whether D's first step called G between its forwards on the real and the fake
        batch (the DCGAN example's lines: the noise drawn and G called after
        ``netD(real)``)."""
        ds = self._first_d_step_forwards()
        if any(f.concat is not None for f in ds):
            return False
        fakes = [f for f in ds if f.fed_by_g]
        reals = [f for f in ds if not f.fed_by_g]
        return bool(fakes and reals) and reals[0].seq < fakes[0].producer.head.seq

    def d_order(self) -> tuple[str | None, bool]:
        """Whether D's first step went through D on the fake batch (a G output) first, and
        whether it did so in one call on both batches concatenated."""
        ds = self._first_d_step_forwards()
        joined = next((f.concat for f in ds if f.concat is not None), None)
        if joined is not None:
            return joined, True
        fake = [f.fed_by_g for f in ds]
        if len(ds) < 2 or all(fake) or not any(fake):
            return None, False  # not a real/fake pair (or no D step)
        return ("fake_first" if fake[0] else "real_first"), False

    def order(self) -> tuple[str, str | None, str | None]:
        """(order, ganstep schedule, pattern description) over the analysed iterations."""
        shapes = [self.shape(i) for i in range(self.n)]
        if self.error is not None and shapes and shapes[-1] is None:
            shapes.pop()  # the crash came before this iteration's steps: judge the others
        if not shapes or any(s is None for s in shapes):
            counts = Counter(s.label for s in self.steps)
            if not self.steps:
                return "other", None, NO_STEPS
            per_iteration = ", ".join(
                "+".join(s.label for s in self.steps if s.iteration == i) or "-"
                for i in range(self.n)
            )
            return "other", None, (f"steps per iteration: {per_iteration} "
                                   f"({counts['D']} D, {counts['G']} G in all)")  # fmt: skip
        orders = {s[0] for s in shapes}
        d_counts, g_counts = [s[1] for s in shapes], [s[2] for s in shapes]
        pattern = None
        if len(set(d_counts)) > 1 or len(set(g_counts)) > 1:
            pattern = (f"irregular: D steps per iteration {', '.join(map(str, d_counts))}; "
                       f"G steps {', '.join(map(str, g_counts))}")  # fmt: skip
        if len(orders) > 1 or "other" in orders:
            described = ", ".join(s[0] for s in shapes)
            return "other", None, pattern or f"orders per iteration: {described}"
        (order,) = orders
        skipped = self.skipped_d_steps()
        if skipped and order == "d_first" and set(d_counts) == {1}:
            self.d_skipped, runs = skipped, len(d_counts) + skipped
            return order, None, (
                f"D's step skipped in {skipped} of the script's {runs} iterations: D "
                "forwarded on a real batch and on G's fakes and its loss taken, but no "
                "backward, before those G steps (a D step under a condition of the "
                "script's); counted above from one D step to the next"
            )  # fmt: skip
        # the counts most iterations ran (a first iteration often differs)
        n_d, n_g = _most_common(d_counts), _most_common(g_counts)
        if pattern is None and (n_d, n_g) != (1, 1):
            pattern = f"{n_d} D step(s) and {n_g} G step(s) per iteration"
        if order == "d_first" and _n_critic_loop(d_counts, g_counts):
            # G after the first D step, then after every k-th: PyTorch-GAN's `i % n_critic
            # == 0`, a Step called once a batch with G's step every k-th call
            k = d_counts[1]
            pattern = (f"G's step after D's first, then after every {k}th (an n_critic loop "
                       f"from the first batch): D steps per iteration "
                       f"{', '.join(map(str, d_counts))}")  # fmt: skip
            return order, f"d_first(g_every={k})", pattern
        return order, _schedule(order, n_d, n_g, self.reuses_z()), pattern

    def skipped_d_steps(self) -> int:
        """How many G steps followed another G step with a D step skipped between them: D
        forwarded on data and on G's output, no backward through either (the 3D-GAN's
        ``if d_total_acu < d_thresh:`` around D's backward and step)."""
        steps = self.steps  # (a D step on a penalty alone between them is a D step)
        skipped = 0
        for before, after in zip(steps, steps[1:], strict=False):
            if before.label != "G" or after.label != "G" or self.regularizing(before):
                continue
            between = [f for f in self.forwards if before.seq < f.seq < after.seq
                       and f.label == "D" and not f.used and not f.continues]  # fmt: skip
            if any(f.fed_by_g for f in between) and any(f.producer is None for f in between):
                skipped += 1
        return skipped

    def reuses_z(self) -> bool:
        """Whether the first D step after G's regenerates its fakes from the z of G's
        step (Lightning's example) rather than a z of its own (StyleGAN2-ADA's Dmain)."""
        steps = self.adversarial_steps()
        for g_step, d_step in zip(steps, steps[1:], strict=False):
            if g_step.label != "G" or d_step.label != "D":
                continue
            g_inputs = {f.key for f in self._through(g_step) if f.label == "G"}
            fakes_from = {f.producer.key for f in self._through(d_step)
                          if f.label == "D" and f.fed_by_g}  # fmt: skip
            return bool(fakes_from & g_inputs)
        return False

    def _through(self, step: _Step) -> list[_Forward]:
        return stepped_through(self.rec, step)


def info_steps(rec: Recorder) -> list[_Step]:
    """The recorded steps of one optimizer over G and D (:data:`INFO`), in order."""
    return [s for s in rec.joint_opt_steps if s.label == INFO]


def phase_forwards(rec: Recorder, seq: int, label: str = "D") -> list[_Forward]:
    """``label``'s forwards in the phase that event ``seq`` ends: after the optimizer step
    before it (any module's), before it."""
    start = max((s.seq for s in rec.opt_steps if s.seq < seq), default=-1)
    return [f for f in rec.forwards if f.label == label and start < f.seq < seq]


def stepped_through(rec: Recorder, step: _Step) -> list[_Forward]:
    """The forwards the gradients ``step`` used went back through."""
    return [f for b in rec.backwards if b.index in step.backwards for f in b.through]


def warm_up_steps(rec: Recorder) -> list[_Step]:
    """G's steps on a loss through no D before any step of G or D on an adversarial one (a
    warm-up: esrgan.py's ``--warmup_batches``, its pixel loss alone), in order."""
    steps = [s for s in rec.opt_steps if s.label in ("G", "D")]
    first = next((s for s in steps if any(f.label == "D" for f in stepped_through(rec, s))),
                 None)  # fmt: skip
    return [] if first is None else [s for s in steps if s.label == "G" and s.seq < first.seq]


def held_ids(opt: torch.optim.Optimizer) -> set[int]:
    """The ids of the parameters ``opt`` holds."""
    return {id(p) for g in opt.param_groups for p in g["params"]}


# how the hazard of a D step on its penalty alone, its loss dropped, names it
PENALTY_ALONE = "on a penalty alone"


def _n_critic_loop(d_counts: list[int], g_counts: list[int]) -> bool:
    """Whether the iterations' step counts are an n_critic loop's from its first batch:
    one D step, then k > 1 in each later iteration, one G step in each."""
    return (len(d_counts) > 1 and d_counts[0] == 1 and d_counts[1] > 1
            and set(d_counts[1:]) == {d_counts[1]} and set(g_counts) == {1})  # fmt: skip


def _most_common(counts: list[int]) -> int:
    """The count most iterations ran; on a tie the later one (PyTorch-GAN's WGAN-GP
    steps G after batch 0, then after every 5th)."""
    frequency = Counter(counts)
    return next(c for c in reversed(counts) if frequency[c] == max(frequency.values()))


def _schedule(order: str, d_steps: int, g_steps: int, reuse_z: bool = False) -> str:
    options = []
    if order == "g_first":
        options = [f"g_steps={g_steps}"] * (g_steps != 1) + [f"d_steps={d_steps}"] * (d_steps != 1)
        return f"g_first({', '.join(options + ['reuse_z=True'] * reuse_z)})"
    if order == "d_first":
        options = [f"d_steps={d_steps}"] * (d_steps != 1) + [f"g_steps={g_steps}"] * (g_steps != 1)
    return f"{order}({', '.join(options)})"


def analyse(
    rec: Recorder, iterations: int, error: BaseException | None, location: str | None = None
) -> Report:
    """The report on ``rec``'s first ``iterations`` iterations (G and D labelled)."""
    a = _Analysis(rec, iterations, error)
    forwards, backwards, double, others = a.passes()
    wasted, hazards = a.waste()
    hazards += a.leaks() + a.stale_steps() + a.stale_in_blocks()
    if a.steps and not a.backwards:
        hazards.insert(0, "no backward call ran in the audited iterations: every optimizer "
                          "step found no gradients and changed nothing (is loss.backward() "
                          "missing?)")  # fmt: skip
    else:
        hazards[:0] = a.gradless_steps() + a.losses_left_out()  # what trains wrong, first
    hazards += a.dropped_forwards()
    order, schedule, pattern = a.order()
    if error is not None and INPLACE in str(error):
        # both gradients were meant at the same parameters: that is `simultaneous`
        hazards.insert(0, _explain_inplace(rec))
        order, schedule = "simultaneous", "simultaneous()"
    freed = _explain_freed(rec) if error is not None and FREED in str(error) else None
    if freed is not None:
        hazards.insert(0, freed[0])
        if freed[1]:  # D's step on the fakes, then G's on them: the order the loop meant
            order, schedule = "d_first", "d_first()"
    other_flops = sum(f.flops for f in a.forwards if not f.used)
    d_profile, (d_order, d_concat) = observe_d(rec), a.d_order()
    regular = {id(s) for s in a.adversarial_steps()}
    # a regularizer's steps of their own (a step with no gradient at all regularizes
    # nothing: the hazard above says so)
    own = [s for s in a.steps if id(s) not in regular and not s.gradless]
    regularization = {m: a.per(sum(s.label == m for s in own)) for m in MODULES}
    # up to the last analysed step: a script's next iteration, begun when it was
    # stopped, is not part of the ones analysed
    last = max([*a.steps, *a.info], key=lambda s: s.seq, default=None)
    total = last.flops if last is not None and error is None else rec.flops()
    total -= a.warm[-1].flops if a.warm else 0  # (a warm-up's FLOPs: no part of the update)
    regularization_at = {m: sorted({s.iteration for s in own if s.label == m}) for m in MODULES}
    return Report(order, forwards, backwards, total, wasted, list(dict.fromkeys(hazards)), error,
                  iterations, schedule, double, others, other_flops, pattern, location,
                  d_profile, d_order, d_concat, a.g_between(), regularization,
                  regularization_at=regularization_at, info_steps=a.per(len(a.info)),
                  info_at=a.info[0].where if a.info else None, warm_up=len(a.warm),
                  warm_up_at=a.warm[0].where if a.warm else None,
                  d_steps_skipped=a.d_skipped if schedule is None else 0)  # fmt: skip


def observe_d(rec: Recorder) -> DProfile | None:
    """What D is, observed as Step observes it (no trace left) on the first input the
    loop gave D; None when D cannot be run on it again."""
    first = next((f for f in rec.forwards if f.label == "D" and f.args), None)
    D = rec.modules.get("D")
    if first is None or D is None or not isinstance(first.args[0], Tensor):
        return None
    if first.member:  # one module of a side (CycleGAN's D_A)
        D = D[first.place]
    x, rest = first.args[0], first.args[1:]
    try:
        return profile_d(D, Batch(x), lambda module, batch: module(batch.x, *rest))
    except Exception:  # e.g. a one-sample batch whose other arguments cannot be doubled
        return None


def _explain_inplace(rec: Recorder) -> str:
    failed = rec.failed
    position = next((i for i, e in enumerate(rec.events) if e[1] is failed), len(rec.events))
    kept = [e[1] for e in rec.events[:position] if e[0] == "backward" and e[1].retain_graph]
    keep = kept[-1] if kept else None
    start = next((i for i, e in enumerate(rec.events) if e[1] is keep), 0)
    steps = [e[1] for e in rec.events[start:position] if e[0] == "step"]
    which = ", ".join(f"opt_{s.label.lower()}.step()" for s in steps) or "an in-place update"
    kept_text = (
        f"backward #{keep.index} ran with retain_graph=True and kept its graph, which saved "
        "the weights it went through; "
        if keep is not None
        else ""
    )
    failed_text = f"backward #{failed.index}" if failed is not None else "a later backward"
    return (
        f"{kept_text}then {which} changed those weights in place, and {failed_text} "
        "through the kept graph raised PyTorch's in-place error (an error since PyTorch "
        "1.5; silently wrong gradients before). Both gradients were meant at the same "
        "parameters: that is ganstep's `simultaneous`, which takes them from one D forward "
        "with no retain_graph across an optimizer step."
    )


def _explain_freed(rec: Recorder) -> tuple[str, bool] | None:
    """What PyTorch's "backward through the graph a second time" was in the loop: which
    backward freed the graph of which module's forward that the failed one went back
    through, and the fix; and whether it was G's fakes, which D's loss took with G's
    graph before G's loss needed it (the d_first order). None where it does not show."""
    failed = rec.failed
    if failed is None:
        return None
    earlier = [b for b in rec.backwards if b.index < failed.index and not b.retain_graph]
    for f in failed.through:  # (a forward's output hook runs before its graph is read)
        freeing = next((b for b in earlier if any(g is f for g in b.through)), None)
        if freeing is not None:
            break
    else:
        return None
    m = f.label

    def said(b: _Backward) -> str:
        return f"backward #{b.index}" + (f" ({b.where.split(': ', 1)[-1]})" if b.where else "")

    text = (f"{said(freeing)} went back through a forward of {m} and freed its graph; "
            f"{said(failed)} went back through that forward again and raised PyTorch's "
            "'backward through the graph a second time'.")  # fmt: skip
    if m == "G" and "D" in freeing.produced:
        return text + (
            " G's fake batch entered D's loss with G's graph: retain_graph=True, as the "
            "error suggests, would keep the graph but still run a whole backward through G "
            "in D's step for gradients nobody steps. Take the fakes without G's graph in "
            "D's loss (D(fake.detach())) and G's step keeps its graph: D first, then G on "
            "the same fakes, which ganstep's d_first() computes making them once."
        ), True
    return text + (
        f" Forward {m} again for the second loss, or keep the graph with retain_graph=True "
        "in the first backward where no optimizer step changes the weights it saved between "
        "the two."
    ), False


def crash_location(error: BaseException, filename: str | None = None) -> str | None:
    """``file:line: source`` of the innermost frame of ``error`` in ``filename`` (when
    None: in the user's code, not in torch's or ganstep's)."""
    frames = traceback.extract_tb(error.__traceback__)
    if filename is not None:
        frames = [f for f in frames if f.filename == filename]
    else:
        libraries = tuple(str(Path(m.__file__).parent) for m in (torch, sys.modules["ganstep"]))
        frames = [f for f in frames if not f.filename.startswith(libraries)] or frames
    if not frames:
        return None
    f = frames[-1]
    return f"{f.filename}:{f.lineno}: {(f.line or '').strip()}"


def audit(
    fn: Callable[[], object],
    *,
    G: nn.Module,
    D: nn.Module,
    opt_g: torch.optim.Optimizer | None = None,
    opt_d: torch.optim.Optimizer | None = None,
    iterations: int = 1,
) -> Report:
    """Run ``fn()`` ``iterations`` times under instrumentation and report on it.

    ``fn`` is one training iteration of G and D written any way. Optimizer steps are
    recognised by the parameters they hold (``opt_g``/``opt_d`` need not be given;
    when given they are checked to hold G's, resp. D's, parameters). An exception
    from ``fn`` ends the run; the iterations up to it are analysed and the exception
    is kept in the report's ``error`` (``location`` says where it was raised).
    To audit a whole training script instead, see :func:`ganstep.tools.audit_script.audit_script`.
    """
    if not isinstance(G, nn.Module) or not isinstance(D, nn.Module):
        raise TypeError("G and D must be torch.nn.Module instances")
    positive_int(iterations, "iterations")
    for arg, opt, module in (("opt_g", opt_g, G), ("opt_d", opt_d, D)):
        if opt is None:
            continue
        if not held_ids(opt) & {id(p) for p in module.parameters()}:
            raise ValueError(f"{arg} holds none of {arg[-1].upper()}'s parameters")
    rec = Recorder()
    error = None
    with rec:
        rec.hook_module("G", G)
        rec.hook_module("D", D)
        try:
            for rec.iteration in range(iterations):
                fn()
        except Exception as e:  # the report carries it
            error = e
    done = rec.iteration + 1
    location = crash_location(error) if error is not None else None
    return analyse(rec, done, error, location)


def report_json(report: Report) -> str:
    return json.dumps(report.as_dict(), indent=1)
