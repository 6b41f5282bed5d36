"""Schedules: the update orders, composed from the phases in :mod:`ganstep.engine.phases`.

With parameters (g, d) at iteration t:

============== ===================== =====================
schedule        D's gradient at       G's gradient at
============== ===================== =====================
``d_first``     (g_t, d_t)            (g_t, d_t+1)
``g_first``     (g_t+1, d_t)          (g_t, d_t)
``simultaneous`` (g_t, d_t)           (g_t, d_t)
============== ===================== =====================

Each D step trains on its own real batch: a schedule with ``d_steps = k`` takes
``k`` real batches per iteration (``real_batches``), and one with ``d_steps =
"each_batch"`` as many as each call is given, one D step for each (a loop whose
number of D steps varies, as the WGAN authors' does). A batch carries its condition
(:class:`~ganstep.engine.batch.Batch`); schedules move batches and never look inside them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from .batch import Batch
from .checks import flag, positive_int
from .fakes import draw, g_batch_like, generate
from .fused import check_fusable, fused_joint_phase
from .game import Game
from .objectives import Logs
from .phases import d_phase_making_fakes, g_phase, joint_phase, separate_phases
from .registry import resolve
from .views import any_reads_real

# d_steps="each_batch": one D step for each real batch a call is given
EACH_BATCH = "each_batch"


class Schedule:
    """Base class: ``run`` performs one iteration and returns its logs."""

    name: ClassVar[str] = ""

    @property
    def real_batches(self) -> int | None:
        """How many real batches one iteration consumes (one per D step); ``None`` for
        ``d_steps="each_batch"``: as many as the call is given."""
        d_steps = getattr(self, "d_steps", 1)
        return None if d_steps == EACH_BATCH else d_steps

    def __post_init__(self) -> None:
        """A schedule's options are counts (positive integers) and flags (True/False);
        ``d_steps`` may be ``"each_batch"``."""
        for option in fields(self):
            value, what = getattr(self, option.name), f"{self.name}: {option.name}"
            if option.name == "d_steps":
                if not (isinstance(value, str) and value == EACH_BATCH):
                    _d_steps(value, what)
            elif option.type == "int":
                positive_int(value, what)
            else:
                flag(value, what)

    def check(self, game: Game) -> None:
        """Raise ValueError if this schedule cannot run exactly on ``game`` (its options and D)."""

    def run(self, game: Game, reals: list[Batch], iteration: int) -> Logs:
        raise NotImplementedError

    def updates(self, iteration: int) -> tuple[int, int]:
        """The optimizer steps (D's, G's) that :meth:`run` takes at ``iteration``: what a
        CUDA graph of one iteration must know to hold the same work as another."""
        raise NotImplementedError


@dataclass(frozen=True)
class DFirst(Schedule):
    """D steps first, then G steps (Goodfellow's Algorithm 1, the PyTorch DCGAN example).

    Args:
        d_steps: D steps per iteration, each on its own real batch and its own z
            (WGAN's n_critic); ``"each_batch"``: one for each real batch the call is
            given, so that a loop may vary their number (the WGAN authors' ``main.py``:
            100 D steps for G's first 25 and every 500th, ``Diters`` otherwise, fewer
            where the epoch runs out of batches).
        g_steps: G steps per iteration, after the D steps.
        reuse_fake: the first G step reuses the fake batch of the last D step, as the
            PyTorch DCGAN example does (G then runs once for both); otherwise every G
            step draws a fresh z. Later G steps always draw a fresh z.
        g_every: G steps only on iterations 0, k, 2k, ... (``g_every = k``), after that
            iteration's D steps: PyTorch-GAN's WGAN (``if i % n_critic == 0``) with
            one D step per iteration. An iteration without G steps reports ``loss_d``
            only.
        fresh_real: each G step reads a real batch of its own (AlexiaJM's
            relativistic loops draw one for G's step), after the D steps' batches: a call
            then takes ``d_steps + g_steps`` real batches. It matters where L_G reads
            the real batch (relativistic and softmax objectives, terms reading it).
        g_batch: each G step makes ``g_batch`` times as many fakes as the real batch
            has rows (pytorch-gan-collections' SNGAN: ``batch_size * 2``), from one
            draw of z (and of conditions, from a sampler). Needs ``reuse_fake=False``,
            and an L_G that does not pair fakes with real rows (not relativistic or
            softmax objectives, not ``condition="real"``, no G term reading real).
        reuse_z: the first G step makes its fakes anew from the last D step's z (and
            condition) with G's graph, instead of reusing that step's fake batch or
            drawing a fresh z: PyTorch-GAN's ``wgan.py`` (``generator(z).detach()`` for
            D, then ``generator(z)`` for G). G runs twice where ``reuse_fake`` runs it
            once, as that loop does: a G with BatchNorm then ends with the loop's
            running statistics. Needs ``reuse_fake=False``.
        g_steps_share_z: every G step makes its fakes from the last D step's z (and
            condition), with G's graph at G's parameters then, instead of drawing a
            fresh z after the first: carpedm20's DCGAN-tensorflow runs G's optimizer
            twice on one ``batch_z`` ("to make sure that d_loss does not go to zero"),
            as its PyTorch ports do. With ``reuse_fake`` the first G step still reuses
            the D step's fakes. Needs ``g_batch=1`` and ``fresh_real=False``.

    Passes: G runs without a graph for every D step whose fake batch is not reused;
    D's weights compute no gradient in the G steps.
    """

    d_steps: int | str = 1
    g_steps: int = 1
    reuse_fake: bool = True
    g_every: int = 1
    fresh_real: bool = False
    g_batch: int = 1
    reuse_z: bool = False
    g_steps_share_z: bool = False
    name: ClassVar[str] = "d_first"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reuse_z and (self.reuse_fake or self.fresh_real or self.g_batch > 1):
            raise ValueError(
                f"{self.name}: reuse_z makes G's first fakes anew from the last D step's z, "
                "so it takes reuse_fake=False, and neither fresh_real nor g_batch > 1 (which "
                "give G's step other rows than that z's): d_first(reuse_fake=False, "
                "reuse_z=True)"
            )
        if self.g_steps_share_z and (self.fresh_real or self.g_batch > 1):
            raise ValueError(
                f"{self.name}: g_steps_share_z makes every G step's fakes from the last D "
                "step's z, so it takes neither fresh_real nor g_batch > 1 (which give G's "
                "steps other rows than that z's)"
            )
        if self.g_batch > 1 and self.reuse_fake:
            raise ValueError(
                f"{self.name}: g_batch={self.g_batch} makes G's fakes {self.g_batch} times the "
                "D step's batch, so they cannot be the D step's fakes: use reuse_fake=False"
            )
        if self.fresh_real and self.d_steps == EACH_BATCH:
            raise ValueError(
                f"{self.name}: fresh_real gives each G step a real batch after the D steps', "
                f"so a call's batches must be counted: a number of d_steps, not {EACH_BATCH!r}"
            )
        if self.fresh_real and self.reuse_fake:
            raise ValueError(
                f"{self.name}: fresh_real gives G's step a real batch of its own, so it cannot "
                "reuse the D step's fake batch: use reuse_fake=False with it (as AlexiaJM's "
                "loops draw a fresh z too)"
            )

    @property
    def real_batches(self) -> int | None:
        if self.d_steps == EACH_BATCH:
            return None
        return self.d_steps + (self.g_steps if self.fresh_real else 0)

    def check(self, game: Game) -> None:
        if self.g_batch == 1:
            return
        pairs = None
        if game.options.condition == "real":
            pairs = "condition='real' makes each fake for one real row's condition"
        elif game.options.objective.g_needs_real:
            pairs = f"objective {game.options.objective.name!r} compares fakes with the real batch"
        elif any_reads_real(game.options.g_terms) or game.keeps_d_step_real:
            pairs = "a G term reads D's output on the real batch"
        if pairs is not None:
            raise ValueError(
                f"{self.name}(g_batch={self.g_batch}) makes more fakes than real rows, and "
                f"{pairs}: use g_batch=1"
            )

    def run(self, game: Game, reals: list[Batch], iteration: int) -> Logs:
        logs: Logs = {}
        kept = latents = None
        g_due = iteration % self.g_every == 0
        d_reals = reals[: len(reals) - self.g_steps] if self.fresh_real else reals
        for i, real in enumerate(d_reals):
            keep = self.reuse_fake and g_due and i == len(d_reals) - 1
            d_logs, latents, fake = d_phase_making_fakes(game, real, graph=keep)
            logs.update(d_logs)
            kept = fake if keep else None
        if not g_due:
            return logs
        for j in range(self.g_steps):
            real = reals[len(d_reals) + j] if self.fresh_real else d_reals[-1]
            if j == 0 and kept is not None:
                fake = kept
            elif self.g_steps_share_z or (j == 0 and self.reuse_z):
                fake = generate(game, latents, real, graph=True)
            else:
                like = real if self.g_batch == 1 else g_batch_like(real, self.g_batch)
                fake = generate(game, draw(game, like), like, graph=True)
            logs.update(g_phase(game, fake, real))
        return logs

    def updates(self, iteration: int) -> tuple[int, int]:
        return self.d_steps, self.g_steps if iteration % self.g_every == 0 else 0


@dataclass(frozen=True)
class GFirst(Schedule):
    """G steps first, then D steps on fakes from the updated G (Lightning's GAN example).

    Args:
        g_steps: G steps per iteration, each with its own z.
        d_steps: D steps per iteration, after the G steps, each on its own real batch;
            ``"each_batch"``: one for each real batch the call is given.
        reuse_z: the first D step regenerates its fakes from the last G step's z with
            the updated G, as Lightning's example does; otherwise it draws a fresh z.

    Passes: G runs without a graph in the D steps; D's weights compute no gradient
    in the G steps.
    """

    g_steps: int = 1
    d_steps: int | str = 1
    reuse_z: bool = False
    name: ClassVar[str] = "g_first"

    def run(self, game: Game, reals: list[Batch], iteration: int) -> Logs:
        first, latents = reals[0], None  # the G steps' batch; the last z drawn
        logs: Logs = {}
        for _ in range(self.g_steps):
            latents = draw(game, first)
            logs.update(g_phase(game, generate(game, latents, first, graph=True), first))
        for i, real in enumerate(reals):
            reused = latents if self.reuse_z and i == 0 else None  # and the fakes' condition
            logs.update(d_phase_making_fakes(game, real, reused)[0])
        return logs

    def updates(self, iteration: int) -> tuple[int, int]:
        return self.d_steps, self.g_steps


@dataclass(frozen=True)
class Simultaneous(Schedule):
    """D and G both step from the same parameters (g_t, d_t), sharing one D forward.

    This is what PyTorch-GAN's G-first scripts compute (their D step reuses the fake batch
    of g_t), SoftmaxGAN's third fix (the SoftmaxGAN graph post), and what
    ``retain_graph=True`` loops meant before PyTorch 1.5.

    The shared forward is taken only where D's profile allows it (D draws no random
    numbers and changes nothing its next forward reads; see :mod:`ganstep.engine.d_profile`).
    Otherwise, and with ``Step(d_forwards="loop")``, D is forwarded as PyTorch-GAN's
    loop does: for G's loss, then on the real and the fake batch for D's.

    Args:
        d_every: update D only on every ``d_every``-th iteration (the 1st is iteration
            ``d_every - 1``, counting from 0); ``d_every=2`` is SoftmaxGAN's D:G = 1:2.
        g_every: likewise for G (WGAN's n_critic in this order). At most one of the two
            may exceed 1. An iteration that updates one module runs only that phase.
        fused: take G's gradient from D's backward pass, rescaled per sample, instead
            of a second backward through D (FusedProp). Exact, and refused where it
            would not be: objectives ``began`` and ``softmax``, a D that mixes samples,
            and a D whose forwards may not be merged (unless ``d_forwards="merged"``).
    """

    d_every: int = 1
    g_every: int = 1
    fused: bool = False
    name: ClassVar[str] = "simultaneous"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.d_every > 1 and self.g_every > 1:
            raise ValueError(
                f"{self.name}: at most one of d_every ({self.d_every}) and g_every "
                f"({self.g_every}) may exceed 1"
            )

    def check(self, game: Game) -> None:
        if self.fused:
            check_fusable(game)

    def run(self, game: Game, reals: list[Batch], iteration: int) -> Logs:
        (real,) = reals
        update_d = (iteration + 1) % self.d_every == 0
        update_g = (iteration + 1) % self.g_every == 0
        if update_d and update_g:
            # both steps read D as this D step's forwards see it (WGAN(clamp_at="before"))
            game.options.objective.before_d_step(game.d.module)
            fake = generate(game, draw(game, real), real, graph=True)
            if self.fused:
                return fused_joint_phase(game, real, fake)
            if game.merge_d_forwards() and game.options.g_forwards is None:
                return joint_phase(game, real, fake)
            return separate_phases(game, real, fake)
        if update_g:
            return g_phase(game, generate(game, draw(game, real), real, graph=True), real)
        return d_phase_making_fakes(game, real)[0]

    def updates(self, iteration: int) -> tuple[int, int]:
        return int((iteration + 1) % self.d_every == 0), int((iteration + 1) % self.g_every == 0)


def _d_steps(value: object, what: str) -> None:
    """Refuse a ``d_steps`` that is neither a positive integer nor ``"each_batch"``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{what} must be a positive integer or {EACH_BATCH!r} (one D step for each real "
            f"batch a call is given), got {value!r}"
        )


d_first, g_first, simultaneous = DFirst, GFirst, Simultaneous

SCHEDULES: dict[str, type[Schedule]] = {cls.name: cls for cls in (DFirst, GFirst, Simultaneous)}


def get_schedule(spec: str | Schedule) -> Schedule:
    """Return a schedule from its name (default options) or pass a :class:`Schedule` through."""
    return resolve(spec, SCHEDULES, Schedule, "schedule")
