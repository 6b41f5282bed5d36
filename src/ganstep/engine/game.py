"""The game the phases play: two sides, the user's options (the objective that scores
them, where z and conditions come from, extra loss terms, how D is forwarded), and the
Step's progress."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from torch import Tensor, nn

from .checks import weight_at
from .compiled import uncompiled
from .d_profile import KNOWN_MIXING, DProfile, known_mixing_layers
from .objectives import has_penalty
from .options import Options, Progress
from .precision import Precision
from .regularizers import Regularizer
from .sides import Side
from .views import any_reads_d_step_real

# The orders of a D step's forwards; "real_g_fake": D on the real batch, then G makes
# the fakes (z drawn then), then D on them, as the PyTorch DCGAN example's lines run.
D_ORDERS = ("real_first", "fake_first", "real_g_fake")
# The optimizer steps a hook may name: each side's adversarial step, its lazy
# regularization step, InfoGAN's info step.
PHASES = ("d", "g", "d_reg", "g_reg", "info")
Hook = Callable[[nn.Module], object]
D_FORWARDS = ("auto", "loop", "merged")


class PhaseHook:
    """A user's hook, called ``fn(module)``, or ``fn(module, iteration)`` when it takes
    two arguments (the iteration counting from 0, as loss weights read it)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        try:
            inspect.signature(fn).bind(None, 0)
            self.with_iteration = True
        except TypeError:
            self.with_iteration = False
        except ValueError:  # no signature to read (some builtins): the documented form
            self.with_iteration = False

    def __call__(self, module: nn.Module, iteration: int = 0) -> object:
        return self.fn(module, iteration) if self.with_iteration else self.fn(module)


def check_hooks(hooks: object, name: str) -> dict[str, PhaseHook]:
    """``{"d": fn, ...}``: each key a phase of :data:`PHASES`, each value callable as
    ``fn(module)`` or ``fn(module, iteration)``."""
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise TypeError(f"{name} must be a dict {{phase: fn(module)}}, got {type(hooks).__name__}")
    for phase, fn in hooks.items():
        if phase not in PHASES:
            raise ValueError(f"{name}: unknown phase {phase!r}; choose from {PHASES}")
        if not callable(fn):
            raise TypeError(f"{name}[{phase!r}] must be callable as fn(module), got {fn!r}")
    return {phase: PhaseHook(fn) for phase, fn in hooks.items()}


@dataclass(eq=False)
class Game:
    """What the phases act on: the sides ``g`` and ``d`` (and InfoGAN's ``info``), the
    user's frozen :class:`~ganstep.engine.options.Options`, the Step's
    :class:`~ganstep.engine.options.Progress`, and what D was observed to be."""

    g: Side
    d: Side
    options: Options
    progress: Progress = field(default_factory=Progress)
    # InfoGAN's third side: an optimizer over G and D's Q head.
    info: Side | None = None
    # What D was observed (or declared) to be; None until the first step.
    d_profile: DProfile | None = None
    # D's layers that mix samples while in training mode (BatchNorm), found once.
    mixing_layers: list[nn.Module] = field(default_factory=list, repr=False)
    # The most adversarial outputs D returned in one forward so far (a multi-scale D's
    # several): the steady iteration (steady.py) reads one.
    most_d_outputs: int = 0
    # Whether a G term reads D's step's own output on the real batch (reads_d_step_real),
    # and the last D step's, per real micro-batch: (the batch, D's output detached, the
    # iteration)
    keeps_d_step_real: bool = False
    d_step_real: list[tuple[object, object, int]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.mixing_layers = [m for m in self.d.module.modules() if isinstance(m, KNOWN_MIXING)]
        self.keeps_d_step_real = any_reads_d_step_real(self.options.g_terms)

    @property
    def precision(self) -> Precision:
        return self.d.precision

    def eager_modules(self) -> list[nn.Module]:
        """The user's modules of each side (G, D, InfoGAN's head), behind any compiled
        wrapper."""
        return [side.eager for side in (self.g, self.d, self.info) if side is not None]

    def d_weight(self) -> float:
        """``d_scale`` at this iteration."""
        return weight_at(self.options.d_scale, self.progress.iteration, "d_scale")

    def g_weight(self) -> float:
        """``g_scale`` at this iteration."""
        return weight_at(self.options.g_scale, self.progress.iteration, "g_scale")

    def hook(self, when: str, phase: str) -> Callable[[nn.Module], object] | None:
        """The user's hook ``when`` (``"before"``/``"after"``) the phase's step, bound to
        this iteration; None if there is none."""
        hooks = self.options.before_step if when == "before" else self.options.after_step
        found = hooks.get(phase)
        return None if found is None else partial(found, iteration=self.progress.iteration)

    def mixes_samples(self) -> bool:
        """Whether D mixes samples: a BatchNorm layer in training mode now (cheap: per
        call), or D's observed or declared profile says so."""
        profiled = self.d_profile is not None and self.d_profile.mixing
        return profiled or any(m.training for m in self.mixing_layers)

    def mixing_reason(self) -> str:
        if self.d_profile is not None and self.d_profile.mixing:
            return self.d_profile.reason("mixing")
        layers = ", ".join(known_mixing_layers(uncompiled(self.d.module)))
        return f"BatchNorm in training mode ({layers})"

    def real_forward_eager(self) -> bool:
        """Whether D's loss forward on the real batch runs on the user's uncompiled D:
        where D is compiled and R1 is read from that forward on every step (its double
        backward, which compiled code has not), or beside an uncompiled forward before
        it (:meth:`fake_forward_eager`). The fake batch's stays compiled otherwise."""
        return self.d.compiled and (self._r1_in_loss() or self.fake_forward_eager())

    def fake_forward_eager(self) -> bool:
        """Whether D's loss forward on the fake batch runs uncompiled too: where an
        uncompiled D forward (R1's real batch, a penalty before the loss forwards)
        saves D's buffers for its backward and D's forward changes them in place
        (BatchNorm's running statistics): compiled code writes them back as an
        in-place copy, which would invalidate what the uncompiled forward saved."""
        if not self.d.compiled or not (self._r1_in_loss() or self._early_penalty()):
            return False
        return self._d_changes_buffers()

    def _r1_in_loss(self) -> bool:
        regularizer = self.options.objective.regularizer
        return regularizer is not None and regularizer.in_loss()

    def _early_penalty(self) -> bool:
        objective = self.options.objective
        return objective.penalty_at == "before" and has_penalty(objective)

    def _d_changes_buffers(self) -> bool:
        profile = self.d_profile  # None: not observed yet, so assume it does
        changes = profile is None or profile.eval_state or profile.stateful
        return changes or any(m.training for m in self.mixing_layers)

    def merge_d_forwards(self) -> bool:
        """Whether two D forwards of the loop may be one here (``simultaneous``): never
        with a fake pool, which gives D other fakes than G's; with augmentation (new
        random numbers for each D input) only when asked for (``"merged"``)."""
        if self.options.fake_pool is not None:
            return False
        if self.options.d_forwards != "auto":
            return self.options.d_forwards == "merged"
        if self.options.augment is not None:
            return False
        return self.d_profile is None or self.d_profile.mergeable

    def regularizer_of(self, side: Side) -> Regularizer | None:
        """The side's regularizer: D's is the objective's (R1), G's the Step's."""
        if side is self.d:
            return self.options.objective.regularizer
        return self.options.g_regularizer if side is self.g else None

    def observe_real(self, real_scores: list[Tensor], d_step: bool = True) -> None:
        """Tell an adaptive augmentation D's scores on a real batch (ADA's signs)."""
        observe = getattr(self.options.augment, "observe", None)
        if observe is not None:
            observe(real_scores[0], d_step=d_step)

    def concat_d_calls(self) -> bool:
        """Whether a D step calls D once on cat(real, fake): with ``concat=True`` always
        (refused while D mixes samples); with ``"auto"`` where that is the loop's math,
        i.e. D treats each sample alone, draws no random numbers and changes no state
        its next forward reads (its profile, observed at the first call), and no
        augmentation draws numbers for each input."""
        concat = self.options.concat
        if concat != "auto":
            self.check_concat()
            return concat is not False
        if self.options.augment is not None or self.d_profile is None:
            return False
        if self.real_forward_eager():  # real and fake through two Ds: compiled and not
            return False
        return self.d_profile.mergeable and not self.mixes_samples()

    def check_concat(self) -> None:
        """Refuse ``concat=True`` (one D call on real and fake) while D mixes samples
        (``concat="joint"`` asks for that math)."""
        if self.options.concat is True and self.mixes_samples():
            raise ValueError(
                "concat=True runs D once on cat(real, fake), which changes the math when D "
                f"mixes samples; D does: {self.mixing_reason()}. Use concat=False (or put "
                'those layers in eval mode), or concat="joint" where that is your math: a '
                "loop that calls D on both batches joined normalizes them together."
            )
