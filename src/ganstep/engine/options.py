"""What the user chose for a Step, frozen once the Step is built (:class:`Options`), and
what changes as it runs, owned by the Step (:class:`Progress`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from torch import Tensor, nn

from .batch import Condition
from .checks import Weight
from .objectives import Objective
from .pool import FakePool
from .regularizers import Regularizer
from .views import Term

Terms = dict[str, tuple[Weight, Term]]


@dataclass(frozen=True, eq=False)
class Options:
    """The rules of one Step, checked and normalized by it: what the phases, the
    schedules and the losses read. Step's arguments of the same names document them
    for users; a field holds a stateful object (a pool, ADA, a regularizer's running
    mean), not a value that changes."""

    # How L_D and L_G are computed from D's outputs (and R1, when the objective has it).
    objective: Objective
    # z for n fakes: latent(n); None when G's input is the condition alone (pix2pix).
    latent: Callable[[int], Tensor] | None
    # None (unconditional), "real" (a fake is made for its real sample's condition) or
    # a sampler condition(n) of the fakes' conditions.
    condition: str | Callable[[int], Condition] | None = None
    # Extra weighted terms of L_G and L_D, and the factors of the adversarial losses:
    # numbers, or functions of the iteration (Weight).
    g_terms: Terms = field(default_factory=dict)
    d_terms: Terms = field(default_factory=dict)
    d_scale: Weight = 1.0
    g_scale: Weight = 1.0
    # D is called D(x, c) on a conditional batch; False: D(x) (ACGAN, InfoGAN: G alone
    # takes the condition, D predicts it).
    d_conditional: bool = True
    # D once on cat(real, fake) in a D step: True, False, "auto" (where that is the
    # loop's math: Game.concat_d_calls) or "joint" (once, even where D mixes samples).
    concat: bool | str = False
    # The order of D's forwards in a D step: "real_first", "fake_first" or "real_g_fake"
    # (G called between them: its fakes made after D's forward on the real batch).
    d_order: str = "real_first"
    # "auto": merge D forwards where D's profile allows it; "loop": the loop's forwards
    # always; "merged": merge whatever D is (the user asked, knowing the difference).
    d_forwards: str = "auto"
    # G's phase's D forwards as the loop writes them ("real", "fake", in order; L_G reads
    # the last of each), or None: what L_G needs (D on real where it reads it, then fake).
    g_forwards: tuple[str, ...] | None = None
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
    # Log D's mean adversarial score on real and fake and the mean of their signs (the
    # scores and signs StyleGAN2-ADA logs): on the device, from the D step's forwards.
    log_scores: bool = False
    # The user's hooks by phase, called before its optimizer step (gradients final,
    # unscaled) and after it: PhaseHook values keyed by a phase of game.PHASES.
    before_step: dict = field(default_factory=dict)
    after_step: dict = field(default_factory=dict)
    # InfoGAN's info step: its loss terms, and where its latents come from (None: from
    # latent).
    info_terms: Terms = field(default_factory=dict)
    info_latent: Callable[[int], Tensor] | None = None
    # G's lazy regularizer (path length), or None; D's is the objective's (R1).
    g_regularizer: Regularizer | None = None
    # D steps only where this is true of the D step's view, after its losses (3D-GAN's
    # D trained while its accuracy is below 0.8): a host sync per D step; None: always.
    d_step_if: Callable[[object], object] | None = None


@dataclass
class Progress:
    """How far a Step has run: what its state_dict saves, and the only counts that
    change while it trains."""

    # The iteration being run, counting from 0: what weights that are functions of the
    # iteration, terms (view.iteration) and hooks read.
    iteration: int = 0
    # Optimizer steps each side took so far: a lazy regularizer (every = k) runs after
    # every k-th.
    d_updates: int = 0
    g_updates: int = 0

    def count_update(self, side_key: str) -> int:
        """Count one more step of side ``"d"`` or ``"g"``; return the count before it."""
        if side_key == "d":
            self.d_updates += 1
            return self.d_updates - 1
        self.g_updates += 1
        return self.g_updates - 1
