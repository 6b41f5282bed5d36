"""The game the phases play: two sides, the objective that scores them, and the rules
of one Step (where z and conditions come from, extra loss terms, how D is forwarded)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from torch import Tensor, nn

from .batch import Condition
from .checks import Weight, weight_at
from .d_profile import KNOWN_MIXING, DProfile, known_mixing_layers
from .objectives import Objective
from .pool import FakePool
from .precision import Precision
from .regularizers import Regularizer
from .sides import Side
from .views import Term

D_ORDERS = ("real_first", "fake_first")
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
    """What the phases act on: the sides ``g`` and ``d``, the objective, the rules of
    the Step, and the count of D steps that schedules lazy regularization."""

    g: Side
    d: Side
    objective: Objective
    latent: Callable[[int], Tensor] | None
    # None (unconditional), "real" (a fake is made for its real sample's condition) or
    # a sampler condition(n) of the fakes' conditions.
    condition: str | Callable[[int], Condition] | None = None
    # Extra weighted terms of L_G and L_D, and the factors of the adversarial losses:
    # numbers, or functions of the iteration (Weight).
    g_terms: dict[str, tuple[Weight, Term]] = field(default_factory=dict)
    d_terms: dict[str, tuple[Weight, Term]] = field(default_factory=dict)
    d_scale: Weight = 1.0
    g_scale: Weight = 1.0
    # D is called D(x, c) on a conditional batch; False: D(x) (ACGAN, InfoGAN: G alone
    # takes the condition, D predicts it).
    d_conditional: bool = True
    # D once on cat(real, fake); the order of D's forwards in a D step.
    concat: bool = False
    d_order: str = "real_first"
    # "auto": merge D forwards where D's profile allows it; "loop": the loop's forwards
    # always; "merged": merge whatever D is (the user asked, knowing the difference).
    d_forwards: str = "auto"
    # What D was observed (or declared) to be; None until the first step.
    d_profile: DProfile | None = None
    # Augmentation of every D input (DiffAugment, ADA), or None.
    augment: Callable[[Tensor], Tensor] | None = None
    # Past fakes that D's steps see in place of some new ones (CycleGAN's ImagePool).
    fake_pool: FakePool | None = None
    # D's 2-D output (n, k) is a map of k scores per sample, not a mistake.
    d_map: bool = False
    # Called with the parameters a phase is about to step, after their backward
    # (data parallel training averages their gradients across processes there).
    sync: Callable[[list[nn.Parameter]], None] | None = None
    # Check each loss on the host before stepping on it (Step(check_finite=True)).
    check_finite: bool = False
    # Log D's mean adversarial score on real and fake and the mean of its signs (the
    # scores and signs StyleGAN2-ADA logs): on the device, from the D step's forwards.
    log_scores: bool = False
    # The user's hooks by phase: before its optimizer step (gradients final, unscaled)
    # and after it.
    before_step: dict[str, PhaseHook] = field(default_factory=dict)
    after_step: dict[str, PhaseHook] = field(default_factory=dict)
    # InfoGAN's third side (an optimizer over G and D's Q head), its loss terms, and
    # where its latents come from (None: from latent).
    info: Side | None = None
    info_terms: dict[str, tuple[Weight, Term]] = field(default_factory=dict)
    info_latent: Callable[[int], Tensor] | None = None
    # G's lazy regularizer (path length), or None; D's is the objective's (R1).
    g_regularizer: Regularizer | None = None
    # Steps each side took so far: a lazy regularizer (every = k) runs after every k-th.
    d_updates: int = 0
    g_updates: int = 0
    # The iteration being run, counting from 0 (the Step's count): what weights that are
    # functions of the iteration, terms (view.iteration) and hooks read.
    iteration: int = 0
    _mixing: list[nn.Module] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._mixing = [m for m in self.d.module.modules() if isinstance(m, KNOWN_MIXING)]

    @property
    def precision(self) -> Precision:
        return self.d.precision

    def d_weight(self) -> float:
        """``d_scale`` at this iteration."""
        return weight_at(self.d_scale, self.iteration, "d_scale")

    def g_weight(self) -> float:
        """``g_scale`` at this iteration."""
        return weight_at(self.g_scale, self.iteration, "g_scale")

    def hook(self, when: str, phase: str) -> Callable[[nn.Module], object] | None:
        """The user's hook ``when`` (``"before"``/``"after"``) the phase's step, bound to
        this iteration; None if there is none."""
        found = (self.before_step if when == "before" else self.after_step).get(phase)
        return None if found is None else partial(found, iteration=self.iteration)

    def mixes_samples(self) -> bool:
        """Whether D mixes samples: a BatchNorm layer in training mode now (cheap: per
        call), or D's observed or declared profile says so."""
        profiled = self.d_profile is not None and self.d_profile.mixing
        return profiled or any(m.training for m in self._mixing)

    def mixing_reason(self) -> str:
        if self.d_profile is not None and self.d_profile.mixing:
            return self.d_profile.reason("mixing")
        layers = ", ".join(known_mixing_layers(self.d.module))
        return f"BatchNorm in training mode ({layers})"

    def merge_d_forwards(self) -> bool:
        """Whether two D forwards of the loop may be one here (``simultaneous``): never
        with a fake pool, which gives D other fakes than G's; with augmentation (new
        random numbers for each D input) only when asked for (``"merged"``)."""
        if self.fake_pool is not None:
            return False
        if self.d_forwards != "auto":
            return self.d_forwards == "merged"
        if self.augment is not None:
            return False
        return self.d_profile is None or self.d_profile.mergeable

    def regularizer_of(self, side: Side) -> Regularizer | None:
        """The side's regularizer: D's is the objective's (R1), G's the Step's."""
        if side is self.d:
            return self.objective.regularizer
        return self.g_regularizer if side is self.g else None

    def observe_real(self, real_scores: list[Tensor], d_step: bool = True) -> None:
        """Tell an adaptive augmentation D's scores on a real batch (ADA's signs)."""
        observe = getattr(self.augment, "observe", None)
        if observe is not None:
            observe(real_scores[0], d_step=d_step)

    def check_concat(self) -> None:
        """Refuse one D call on real and fake while D mixes samples."""
        if self.concat and self.mixes_samples():
            raise ValueError(
                "concat=True runs D once on cat(real, fake), which changes the math when D "
                f"mixes samples; D does: {self.mixing_reason()}. Use concat=False (or put "
                "those layers in eval mode)."
            )
