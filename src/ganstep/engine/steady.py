"""The steady iteration: what a Step runs once its first call has checked everything.

A Step's first call goes through the general path (:mod:`ganstep.engine.phases`): it
checks the real batch, z, G's output and D's (shapes, dtypes, devices, a sigmoid where
logits are read), observes D, and decides which forwards may be merged. None of that
changes while the inputs keep their shape, D its train/eval mode and G and D their
layers, so from the second call on a Step whose options are the plain ones (listed in
:func:`steady_for`) runs this: the same forwards, losses, backward passes and optimizer
steps in the same order, with the decisions taken once, so that its host work per
iteration is that of the hand-written loop of the same order. Anything else (another
shape, D switched to eval, a layer replaced, a latent or G that returns something
new) sends the call back to the general path, which checks again and plans anew.

The two paths compute the same bits: the tests run every schedule and objective both
ways (``tests/test_steady.py``) and against the reference loops.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from .autograd_calls import REGISTRATIONS, backward_into
from .batch import Batch
from .fakes import checked_fake, checked_latent
from .game import Game
from .losses import penalty_of, score_logs
from .objectives import Logs, Objective
from .precision import REDUCED
from .schedules import DFirst, GFirst, Schedule, Simultaneous
from .sides import Side
from .views import adversarial, describe

# One call's real batches, each as (samples, condition or None).
Reals = tuple[tuple[Tensor, Tensor | None], ...] | list[tuple[Tensor, Tensor | None]]


def steady_for(game: Game, schedule: Schedule, reals: list[Batch], D: nn.Module,
               accumulate: int, distributed: bool) -> Steady | None:  # fmt: skip
    """The steady iteration of a Step whose general call on ``reals`` just succeeded, or
    ``None`` where every call takes the general path: micro-batches, data parallelism,
    fp16's loss scalers, a sampler of conditions or a condition that is not one tensor,
    loss terms, weights that are functions of the iteration, augmentation, a fake pool,
    hooks, finite checks, InfoGAN's step, G's regularizer, ``d_step_if``, the fused step,
    ``fresh_real`` and ``g_batch``, or a user's schedule. With ``condition="real"`` each
    fake is made for the condition of the real batch it is judged with, so a real
    batch's condition ``c`` goes with its samples through G and D."""
    o = game.options
    kind = type(schedule)
    plain = (
        accumulate == 1 and not distributed and game.precision.name != "fp16"
        and o.condition in (None, "real") and not o.g_terms and not o.d_terms
        and not callable(o.d_scale) and not callable(o.g_scale)
        and o.augment is None and o.fake_pool is None and not o.before_step
        and not o.after_step and not o.check_finite and game.info is None and o.sync is None
        and o.g_regularizer is None and o.d_step_if is None
        and kind in (DFirst, GFirst, Simultaneous)
        and not (kind is DFirst and (schedule.fresh_real or schedule.g_batch > 1))
        and not (kind is Simultaneous and schedule.fused)
        and all(type(b.x) is Tensor and b.extra is None and (b.c is None or type(b.c) is Tensor)
                for b in reals)
        and game.most_d_outputs == 1  # one adversarial output (not a multi-scale D)
        and not game.g.outside and not game.d.outside  # (heads beside G and D: loss terms')
        and o.objective.penalty_at == "after" and o.g_forwards is None
    )  # fmt: skip
    return Steady(game, schedule, reals[0], D) if plain else None


def _overrides(objective: Objective, name: str) -> bool:
    return getattr(type(objective), name) is not getattr(Objective, name)


class Steady:
    """One plain iteration per call, as decided once for ``game`` and ``schedule`` on a
    real batch like ``like`` (its samples' and condition's shape, dtype and device);
    ``D`` is the user's own module (not compiled), whose train/eval mode is checked
    before each call."""

    def __init__(self, game: Game, schedule: Schedule, like: Batch, D: nn.Module) -> None:
        o, objective = game.options, game.options.objective
        self.game, self.schedule, self.objective = game, schedule, objective
        self.progress, self.g, self.d = game.progress, game.g, game.d
        # the sides' parameters, valid while no module registers one (checked each call)
        self.g_params, self.d_params = game.g.all_params(), game.d.all_params()
        self.plain = game.g.plain_params() and game.d.plain_params()
        self.registrations = REGISTRATIONS[0]
        self.G, self.D = game.g.module, game.d.module
        self.D_eager = game.d.eager  # a penalty's own forwards (double backward)
        self.D_real = self.D_eager if game.real_forward_eager() else self.D
        self.D_fake = self.D_eager if game.fake_forward_eager() else self.D
        self.latent = o.latent
        self.shape, self.dtype, self.device = like.x.shape, like.x.dtype, like.x.device
        self.c_like = like.c  # None: unconditional
        self.d_conditional = o.d_conditional  # False: D(x) alone (ACGAN), G(z, c)
        self.k = schedule.real_batches  # None: d_steps="each_batch", any list but []
        # what is checked before each call: D's train/eval mode and its mixing layers'
        # (BatchNorm), on which merging and concatenating D's forwards depend
        self.user_d, self.d_mode = D, D.training
        self.mixing = game.mixing_layers
        self.mixing_modes = [m.training for m in self.mixing]
        self.merge = game.merge_d_forwards()
        self.concat = game.concat_d_calls()
        self.fake_first = o.d_order == "fake_first"
        # d_order="real_g_fake": a D step's fakes made after D's forward on the real batch
        self.g_between = o.d_order == "real_g_fake" and not self.concat
        self.made: tuple[object, Tensor] | None = None  # that step's (z, G's output)
        self.autocast = game.precision.autocast if game.precision.dtype is not None else None
        self.device_type = game.precision.device_type  # a user's autocast there: refused
        self.fake_dtypes = (like.x.dtype, game.precision.dtype)
        regularizer = objective.regularizer
        self.r1 = regularizer if regularizer is not None and regularizer.in_loss() else None
        self.lazy = regularizer if regularizer is not None and regularizer.every > 1 else None
        self.penalty = _overrides(objective, "penalty")
        self.before_d_step = _overrides(objective, "before_d_step")
        self.after_d_step = _overrides(objective, "after_d_step")
        self.end_iteration = _overrides(objective, "end_iteration")
        self.d_scale, self.g_scale = o.d_scale, o.g_scale
        self.log_scores = o.log_scores
        self.z_like: Tensor | None = None  # the first z drawn here: later ones must match
        self.run = {DFirst: self._d_first, GFirst: self._g_first,
                    Simultaneous: self._simultaneous}[type(schedule)]  # fmt: skip

    def __call__(self, real: object) -> Logs | None:
        """Run one iteration on ``real``; ``None`` (nothing run) where it does not fit."""
        if self.k == 1:
            reals = (self._split(real),)
        elif type(real) is list and (len(real) == self.k or self.k is None and real):
            reals = [self._split(item) for item in real]  # as real_input takes them
        else:
            return None
        if None in reals:
            return None
        # (blocks the checked path refuses: autograd off, autocast, parametrize's cache)
        if (self.user_d.training is not self.d_mode or not torch.is_grad_enabled()
                or torch.is_autocast_enabled(self.device_type)
                or getattr(parametrize, "_cache_enabled", 0)
                or REGISTRATIONS[0] != self.registrations):  # fmt: skip
            return None
        if self.mixing and [m.training for m in self.mixing] != self.mixing_modes:
            return None
        logs = self.run(reals, self.progress.iteration)
        if self.end_iteration:
            logs.update(self.objective.end_iteration(logs))
        self.progress.iteration += 1
        return logs

    def _split(self, item: object) -> tuple[Tensor, Tensor | None] | None:
        """One real batch as ``(x, c)``, or None where it is not like the first call's."""
        like = self.c_like
        if like is None:
            x, c = item, None
        elif type(item) in (tuple, list) and len(item) == 2:
            x, c = item
            if (type(c) is not Tensor or c.shape != like.shape or c.dtype != like.dtype
                    or c.device != like.device):  # fmt: skip
                return None
        else:
            return None
        if (type(x) is not Tensor or x.shape != self.shape or x.dtype != self.dtype
                or x.device != self.device):  # fmt: skip
            return None
        return x, c

    # The three orders, as their schedules' ``run`` (schedules.py) with plain options.

    def _d_first(self, reals: Reals, iteration: int) -> Logs:
        schedule, logs = self.schedule, {}
        g_due = iteration % schedule.g_every == 0
        kept = z = None
        last = len(reals) - 1
        for i, (x, c) in enumerate(reals):
            keep = schedule.reuse_fake and g_due and i == last
            if self.g_between:
                logs.update(self._d_step(x, c, None, None, keep))
                z, fake = self.made
            else:
                z = self._draw(x.shape[0])
                fake = self._generate(z, c, x, keep)
                logs.update(self._d_step(x, c, fake.detach()))
            kept = fake if keep else None
        if not g_due:
            return logs
        x, c = reals[last]
        for j in range(schedule.g_steps):
            if j == 0 and kept is not None:
                fake = kept
            elif schedule.g_steps_share_z or (j == 0 and schedule.reuse_z):
                fake = self._generate(z, c, x, True)
            else:
                fake = self._generate(self._draw(x.shape[0]), c, x, True)
            logs.update(self._g_step(fake, x, c))
        return logs

    def _g_first(self, reals: Reals, iteration: int) -> Logs:
        schedule, logs = self.schedule, {}
        (first, c_first), z = reals[0], None
        for _ in range(schedule.g_steps):
            z = self._draw(first.shape[0])
            fake = self._generate(z, c_first, first, True)
            logs.update(self._g_step(fake, first, c_first))
        for i, (x, c) in enumerate(reals):
            if not (schedule.reuse_z and i == 0):  # reusing z reuses the condition too
                z = None if self.g_between else self._draw(x.shape[0])
            if self.g_between:
                logs.update(self._d_step(x, c, None, z))
            else:
                logs.update(self._d_step(x, c, self._generate(z, c, x, False)))
        return logs

    def _simultaneous(self, reals: Reals, iteration: int) -> Logs:
        schedule, ((x, c),) = self.schedule, reals
        update_d = (iteration + 1) % schedule.d_every == 0
        update_g = (iteration + 1) % schedule.g_every == 0
        if update_d and update_g:
            if self.before_d_step:  # before G's forward too: both steps read that D
                self.objective.before_d_step(self.D)
            fake = self._generate(self._draw(x.shape[0]), c, x, True)
            if self.merge:
                return self._joint_step(x, c, fake)
            logs = self._g_step(fake, x, c)
            logs.update(self._d_step(x, c, fake.detach()))
            return logs
        if update_g:
            return self._g_step(self._generate(self._draw(x.shape[0]), c, x, True), x, c)
        if self.g_between:
            return self._d_step(x, c, None)
        return self._d_step(x, c, self._generate(self._draw(x.shape[0]), c, x, False))

    # G's side: z and the fakes (fakes.py's draw and generate, checked only on change)

    def _draw(self, n: int) -> object:
        if self.latent is None:  # G(c) alone (image-to-image)
            return None
        z = self.latent(n)
        like = self.z_like
        if (type(z) is not Tensor or like is None or z.shape[0] != n
                or z.dtype != like.dtype or z.device != like.device):  # fmt: skip
            z = checked_latent(self.game, z, n)
            if self.z_like is None and type(z) is Tensor:
                self.z_like = z
        return z

    def _generate(self, z: object, c: Tensor | None, like: Tensor, graph: bool) -> Tensor:
        """G's fakes from ``z`` (and for ``c``): ``G(z)``, ``G(z, c)`` or ``G(c)``."""
        args = (z,) if type(z) is Tensor else () if z is None else tuple(z)
        if c is not None:
            args = (*args, *c) if isinstance(c, tuple | list) else (*args, c)  # unpacked
        if self.autocast is not None:
            with self.autocast(), torch.set_grad_enabled(graph):
                fake = self.G(*args)
        elif graph:
            fake = self.G(*args)
        else:
            with torch.no_grad():
                fake = self.G(*args)
        if (type(fake) is not Tensor or fake.shape != like.shape
                or fake.dtype not in self.fake_dtypes or fake.device != like.device):  # fmt: skip
            # G's extra outputs are read by G's terms alone, and a steady Step has none
            fake, _ = checked_fake(self.game, fake, Batch(like, c))
        return fake

    # D's side: the phases of phases.py, for a D with one adversarial output

    def _d_outputs(self, x: Tensor, c: Tensor | None, fake: Tensor) -> tuple[object, object]:
        """losses.d_outputs: D on the real and the fake batch (both for condition ``c``)."""
        D, dc = self.D_fake, c if self.d_conditional else None
        Dr = self.D_real  # compiled D but for R1's double backward
        if self.concat:  # batch.cat and batch.split, in d_order
            first, second = (fake, x) if self.fake_first else (x, fake)
            both = torch.cat([first, second.to(first.dtype)])
            out = Dr(both) if dc is None else Dr(both, torch.cat([dc, dc]))
            n = first.shape[0]
            return (out[n:], out[:n]) if self.fake_first else (out[:n], out[n:])
        if self.fake_first:
            out_fake = D(fake) if dc is None else D(fake, dc)
            return (Dr(x) if dc is None else Dr(x, dc)), out_fake
        if dc is None:
            return Dr(x), D(fake)
        return Dr(x, dc), D(fake, dc)

    def _d(self, x: Tensor, c: Tensor | None, eager: bool = False) -> object:
        """losses.d_call: D(x), or D(x, c) for a conditional batch of a conditional D."""
        D = self.D_eager if eager else self.D
        return D(x) if c is None or not self.d_conditional else D(x, c)

    def _scores(self, out: object, inp: Tensor) -> Tensor:
        """losses.scores of D's one adversarial output (a tuple's first element)."""
        if type(out) is not Tensor:
            found = adversarial(out)
            if len(found) != 1:
                raise ValueError(
                    f"D returned {len(found)} adversarial outputs where it returned one "
                    f"before ({describe(out)}): a Step's D returns the same kind of output "
                    "on every call"
                )
            out = found[0]
        s = self.objective.score(out, inp)
        return s if self.autocast is None or s.dtype not in REDUCED else s.float()

    def _d_loss(self, x: Tensor, c: Tensor | None, fake: Tensor, out_real: object,
                out_fake: object):  # fmt: skip
        """L_D and its logs (losses.d_loss for one adversarial output, no terms)."""
        s_real, s_fake = self._scores(out_real, x), self._scores(out_fake, fake)
        loss, logs = self.objective.d_loss(s_real, s_fake)
        if self.d_scale != 1.0:
            loss = self.d_scale * loss
        penalty = None  # losses.loss_penalty: R1, then the objective's own
        if self.r1 is not None:  # from the D(real) forward above
            penalty = self.r1.penalty(x, s_real.sum())
        if self.penalty:  # losses._penalty: D at the real batch's condition
            dc = c if self.d_conditional else None
            D = self.D_eager
            call = D if dc is None else lambda inp: D(inp, dc)
            own = penalty_of(self.objective, call, x, fake.detach())
            if own is not None:
                penalty = own if penalty is None else penalty + own
        if penalty is not None:
            logs["gp"] = penalty.detach()
            loss = loss + penalty
        logs["loss_d"] = loss.detach()
        if self.log_scores:
            logs.update(score_logs([s_real], [s_fake]))
        return loss, logs, s_real, s_fake

    def _g_loss(self, s_fake: Tensor, s_real: Tensor | None) -> tuple[Tensor, Logs]:
        if s_real is None:
            loss, logs = self.objective.g_loss(s_fake)
        else:
            loss, logs = self.objective.g_loss(s_fake, s_real.detach())
        if self.g_scale != 1.0:
            loss = self.g_scale * loss
        return loss, logs

    def _d_step(self, x: Tensor, c: Tensor | None, fake: Tensor | None, z: object = None,
                graph: bool = False) -> Logs:  # fmt: skip
        """phases.d_phase: D on ``x`` and ``fake`` (cut from G's graph), one step of D.
        ``fake`` None: G makes it after D's forward on ``x`` (:meth:`_g_between_losses`)."""
        if self.before_d_step:
            self.objective.before_d_step(self.D)
        self.d.optimizer.zero_grad(set_to_none=True)
        xr = x if self.r1 is None else x.detach().requires_grad_(True).view_as(x)
        if fake is None:
            loss, logs = self._g_between_losses(xr, c, z, graph)
        elif self.autocast is None:
            loss, logs, _, _ = self._d_loss(xr, c, fake, *self._d_outputs(xr, c, fake))
        else:
            with self.autocast():
                loss, logs, _, _ = self._d_loss(xr, c, fake, *self._d_outputs(xr, c, fake))
        self._backward(self.d, self.d_params, loss)
        self._step_d(logs, x, c)
        return logs

    def _g_between_losses(self, x: Tensor, c: Tensor | None, z: object,
                          graph: bool) -> tuple[Tensor, Logs]:  # fmt: skip
        """L_D of phases.d_phase_making_fakes with d_order="real_g_fake": D on ``x``, then
        G's fakes from ``z`` (drawn now where None), then D on them. Keeps ``(z, G's
        output)`` (with G's graph where ``graph``) in ``self.made``."""
        with self.autocast() if self.autocast is not None else nullcontext():
            out_real = self._d(x, c, self.D_real is self.D_eager)
            if z is None:
                z = self._draw(x.shape[0])
            made = self._generate(z, c, x, graph)
            fake = made.detach()
            dc = c if self.d_conditional else None
            out_fake = self.D_fake(fake) if dc is None else self.D_fake(fake, dc)
            loss, logs, _, _ = self._d_loss(x, c, fake, out_real, out_fake)
        self.made = (z, made)
        return loss, logs

    def _g_step(self, fake: Tensor, x: Tensor, c: Tensor | None) -> Logs:
        """phases.g_phase: D (frozen) on ``fake``, one step of G."""
        frozen = [p for p in self.d_params if p.requires_grad]
        for p in frozen:
            p.requires_grad_(False)
        try:
            self.g.optimizer.zero_grad(set_to_none=True)
            if self.autocast is None:
                loss, logs = self._g_forward(fake, x, c)
            else:
                with self.autocast():
                    loss, logs = self._g_forward(fake, x, c)
            self._backward(self.g, self.g_params, loss)
            logs["loss_g"] = loss.detach()
            self.g.optimizer.step()  # fp16's scalers take the general path
            self.progress.g_updates += 1
        finally:
            for p in frozen:
                p.requires_grad_(True)
        return logs

    def _g_forward(self, fake: Tensor, x: Tensor, c: Tensor | None) -> tuple[Tensor, Logs]:
        s_real = None
        if self.objective.g_needs_real:
            with torch.no_grad():  # D(x) is a constant for G
                s_real = self._scores(self._d(x, c), x)
        out = self.D(fake) if c is None or not self.d_conditional else self.D(fake, c)
        return self._g_loss(self._scores(out, fake), s_real)

    def _joint_step(self, x: Tensor, c: Tensor | None, fake: Tensor) -> Logs:
        """phases.joint_phase: one D forward on ``fake`` for both losses, a step of each."""
        self.d.optimizer.zero_grad(set_to_none=True)
        self.g.optimizer.zero_grad(set_to_none=True)
        xr = x if self.r1 is None else x.detach().requires_grad_(True).view_as(x)
        if self.autocast is None:
            loss_d, logs, loss_g, g_logs = self._joint_losses(xr, c, fake)
        else:
            with self.autocast():
                loss_d, logs, loss_g, g_logs = self._joint_losses(xr, c, fake)
        self._backward(self.d, self.d_params, loss_d, retain_graph=True)
        self._backward(self.g, self.g_params, loss_g)
        logs.update(g_logs)
        logs["loss_g"] = loss_g.detach()
        self.d.optimizer.step()
        if self.after_d_step:
            self.objective.after_d_step(self.D)
        self.g.optimizer.step()
        self._count_d(logs, x, c)
        self.progress.g_updates += 1
        return logs

    def _backward(self, side: Side, params: list, loss: Tensor, retain_graph: bool = False):
        """Side.backward without loss scaling (fp16 takes the general path)."""
        if not loss.requires_grad:
            side.backward(loss)  # raises, saying why
        inputs = [p for p in params if p.requires_grad]
        backward_into(loss, inputs, retain_graph, self.plain, side.compiled)

    def _joint_losses(self, x: Tensor, c: Tensor | None, fake: Tensor):
        loss_d, logs, s_real, s_fake = self._d_loss(x, c, fake, *self._d_outputs(x, c, fake))
        loss_g, g_logs = self._g_loss(s_fake, s_real if self.objective.g_needs_real else None)
        return loss_d, logs, loss_g, g_logs

    def _step_d(self, logs: Logs, x: Tensor, c: Tensor | None) -> None:
        self.d.optimizer.step()
        if self.after_d_step:  # WGAN's clipping
            self.objective.after_d_step(self.D)
        self._count_d(logs, x, c)

    def _count_d(self, logs: Logs, x: Tensor, c: Tensor | None) -> None:
        """Count D's step; lazy R1's own step after it when due (phases.regularize_after)."""
        steps = self.progress.d_updates
        self.progress.d_updates = steps + 1
        if self.lazy is not None and self.lazy.due(steps):
            self._lazy_r1(x, c, logs)

    def _lazy_r1(self, x: Tensor, c: Tensor | None, logs: Logs) -> None:
        """phases.lazy_phase for R1: D on ``x`` alone, the penalty weighted by its interval,
        one more step of D in which every weight takes part."""
        self.d.optimizer.zero_grad(set_to_none=True)
        xr = x.detach().requires_grad_(True).view_as(x)
        if self.autocast is None:
            penalty = self.lazy.penalty(xr, self._scores(self._d(xr, c, True), xr).sum())
        else:
            with self.autocast():
                penalty = self.lazy.penalty(xr, self._scores(self._d(xr, c, True), xr).sum())
        self._backward(self.d, self.d_params, penalty * self.lazy.every)
        for p in self.d_params:  # as SG2-ADA's `real_logits * 0`
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
        self.d.optimizer.step()
        logs["gp"] = penalty.detach()
