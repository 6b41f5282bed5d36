"""What a Step knows of D: declared by the user (whole or in part), else observed on the
first real batch and again whenever D's train/eval mode changes; after each, the checks
that depend on D (``concat``, the schedule's fused step) run again."""

from __future__ import annotations

from torch import nn

from .batch import Batch
from .d_profile import FIELDS, DProfile, check_declaration, profile_d
from .game import Game
from .schedules import Schedule


class DObserver:
    """Keeps ``game.d_profile`` true to D: set from a whole declaration once, or from an
    observation (three forwards without a graph) when D's mode is one not observed yet."""

    def __init__(self, D: nn.Module, d_profile: object, game: Game, schedule: Schedule) -> None:
        self.declared = check_declaration(d_profile)
        self.module, self.mode = D, None  # D observed in that train/eval mode
        self.game, self.schedule = game, schedule
        if isinstance(self.declared, dict) and set(self.declared) == set(FIELDS):
            self.declared = DProfile().declare(self.declared)
        if isinstance(self.declared, DProfile):
            game.d_profile = self.declared
        game.check_concat()
        schedule.check(game)

    def know(self, real: Batch) -> None:
        """Observe D (unless declared whole) when first called or when its mode changed,
        then check again what depends on it (concat, the fused step)."""
        if isinstance(self.declared, DProfile) or self.mode == self.module.training:
            return
        mode = self.module.training
        try:
            if not self.game.options.d_conditional:
                real = Batch(real.x)
            profile = profile_d(self.module, real, d_call_of)
        except Exception as e:  # the step itself then says what is wrong with the input;
            # until an observation succeeds (tried again next call), D counts as impure
            mode = None
            profile = DProfile(stochastic=True, why=(("stochastic", (
                f"not observed: D failed on the first real batch ({type(e).__name__}); "
                "treated as impure, declare d_profile to say what it is")),))  # fmt: skip
        if self.declared:
            profile = profile.declare(self.declared)
        self.game.d_profile, self.mode = profile, mode
        self.game.check_concat()
        self.schedule.check(self.game)


def d_call_of(D: nn.Module, batch: Batch) -> object:
    """``D(x)``, or ``D(x, c)`` for a conditional batch (D itself, not compiled)."""
    return D(batch.x) if batch.c is None else D(batch.x, batch.c)
