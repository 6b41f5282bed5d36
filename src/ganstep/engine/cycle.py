"""CycleStep: CycleGAN's update (Zhu et al., 2017) on ganstep's phases.

Two domains, A and B: ``G_A`` maps A to B and ``G_B`` B to A, ``D_A`` tells real B
from ``G_A``'s fakes and ``D_B`` real A from ``G_B``'s. One iteration is
junyanz/pytorch-CycleGAN-and-pix2pix's ``optimize_parameters``:

1. forward: ``fake_B = G_A(a)``, ``rec_A = G_B(fake_B)``, ``fake_A = G_B(b)``,
   ``rec_B = G_A(fake_A)``;
2. G's phase (both Ds frozen; one optimizer over G_A and G_B): the adversarial losses
   of ``D_A(fake_B)`` and ``D_B(fake_A)``, scaled by ``g_scale``, the cycle terms
   ``cycle * |rec_A - a|_1`` and ``cycle * |rec_B - b|_1`` and the identity terms
   ``cycle * identity * |G_A(b) - b|_1`` and ``... |G_B(a) - a|_1``;
3. D's phase (one optimizer over D_A and D_B), on the fakes of step 1 cut from G's
   graph and passed through each domain's pool of past fakes: ``D_A`` on ``b`` then
   on the pooled ``fake_B``, then ``D_B`` on ``a`` and the pooled ``fake_A``, each D's
   adversarial loss scaled by ``d_scale``, plus the objective's penalty on that D
   (WGAN-GP's, or your own objective's) between its real batch and the fakes it was
   shown, unscaled, where the objective's ``penalty_at`` puts it (after its two
   forwards, before them, or read from them).

Both gradients are taken at the iteration's parameters, as ``simultaneous()`` takes
them; D's forwards are the loop's own (the pool gives D other fakes than G's, so no
forward is shared). CycleGAN's ``lsgan`` (plain MSE) is ganstep's ``lsgan`` with
``g_scale=2`` (its D loss, ``0.5 * (real + fake)``, is ganstep's); its ``vanilla``
(BCE) is ``ns`` with ``d_scale=0.5``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checks import scale_factor
from .game import Game, check_hooks
from .losses import joined, penalty_of, scores, summed
from .objectives import Logs, Objective, get_objective
from .options import Options, Progress
from .phases import guard, run_phase
from .pool import FakePool
from .precision import Precision
from .sides import Side, frozen


class CycleStep:
    """One CycleGAN iteration per call: ``step(real_A, real_B)``.

    Args:
        G_A: the generator A -> B.
        G_B: the generator B -> A.
        D_A: the discriminator of domain B (real B vs ``G_A``'s fakes), as CycleGAN names it.
        D_B: the discriminator of domain A (real A vs ``G_B``'s fakes).
        opt_g: one optimizer over G_A's and G_B's parameters; opt_d: over D_A's and D_B's.
        objective: the adversarial objective (default ``lsgan``); it must not need the
            real batch in G's loss (not relativistic, not softmax or began).
        g_scale: the factor of G's adversarial loss (CycleGAN's lsgan: 2, the default).
        d_scale: the factor of D's (CycleGAN's: 1, the default).
        cycle: the weight of each cycle term (CycleGAN's ``lambda_A = lambda_B``, 10).
        identity: the identity terms' weight relative to ``cycle`` (``lambda_identity``,
            0.5); 0 skips them (and their G forwards).
        fake_pool: each domain's pool of past fakes for D's phase (CycleGAN's 50;
            ``None`` or 0: off). Drawn with Python's ``random`` as CycleGAN's are.
        precision: ``fp32``, ``bf16`` or ``fp16`` (a loss scaler per optimizer).
        before_step: hooks by phase (``"g"``, ``"d"``) before its optimizer step, called
            with the ``nn.ModuleList`` of the two modules that phase steps.
        after_step: the same, after the step.

    Returns a dict of detached tensors: ``loss_g``, ``loss_d`` and their parts
    (``loss_g_a``, ``loss_g_b``, ``cycle_a``, ``cycle_b``, ``idt_a``, ``idt_b``,
    ``loss_d_a``, ``loss_d_b``); with a penalty, ``gp_a`` and ``gp_b`` (each in its D's
    loss) and their sum ``gp``.
    """

    def __init__(
        self,
        G_A: nn.Module,
        G_B: nn.Module,
        D_A: nn.Module,
        D_B: nn.Module,
        opt_g: torch.optim.Optimizer,
        opt_d: torch.optim.Optimizer,
        *,
        objective: str | Objective = "lsgan",
        g_scale: float = 2.0,
        d_scale: float = 1.0,
        cycle: float = 10.0,
        identity: float = 0.5,
        fake_pool: int | None = 50,
        precision: str = "fp32",
        before_step: dict[str, Callable[[nn.Module], object]] | None = None,
        after_step: dict[str, Callable[[nn.Module], object]] | None = None,
    ) -> None:
        modules = {"G_A": G_A, "G_B": G_B, "D_A": D_A, "D_B": D_B}
        for name, module in modules.items():
            if not isinstance(module, nn.Module):
                raise TypeError(f"{name} must be a torch.nn.Module, got {type(module).__name__}")
        if len({id(m) for m in modules.values()}) < 4:
            raise ValueError("G_A, G_B, D_A and D_B must be four different modules")
        objective = get_objective(objective)
        if objective.g_needs_real or objective.name == "began":
            raise ValueError(
                f"CycleStep's G loss reads D on the fakes alone; objective {objective.name!r} "
                "needs more (use lsgan, ns, hinge, minimax, wgan or wgan_gp)"
            )
        if objective.regularizer is not None and objective.regularizer.weight > 0:
            raise ValueError("CycleStep does not take R1: build the objective without r1")
        self.cycle = scale_factor(cycle, "cycle", zero=True)
        self.identity = scale_factor(identity, "identity", zero=True)
        generators, discriminators = nn.ModuleList([G_A, G_B]), nn.ModuleList([D_A, D_B])
        _check_holds(opt_g, generators, "opt_g", "G_A and G_B")
        _check_holds(opt_d, discriminators, "opt_d", "D_A and D_B")
        device = next(G_A.parameters()).device
        self.precision = Precision(precision, device.type)
        options = Options(objective, latent=None,
                          g_scale=scale_factor(g_scale, "g_scale", zero=True),
                          d_scale=scale_factor(d_scale, "d_scale"),
                          before_step=check_hooks(before_step, "before_step"),
                          after_step=check_hooks(after_step, "after_step"))  # fmt: skip
        self.progress = Progress()
        self.game = Game(Side("G", generators, opt_g, self.precision),
                         Side("D", discriminators, opt_d, self.precision), options,
                         self.progress)  # fmt: skip
        self.pools = None if not fake_pool else (FakePool(fake_pool), FakePool(fake_pool))

    @property
    def iteration(self) -> int:
        """Iterations run so far (what hooks taking the iteration read)."""
        return self.progress.iteration

    @iteration.setter
    def iteration(self, value: int) -> None:
        self.progress.iteration = value

    def __call__(self, real_A: Tensor, real_B: Tensor) -> dict[str, Tensor]:
        """One iteration on a batch of each domain (the same number of rows)."""
        for name, x in (("real_A", real_A), ("real_B", real_B)):
            if not isinstance(x, Tensor) or x.dim() < 2 or x.shape[0] == 0:
                raise ValueError(f"{name} must be a batch tensor (n, ...), got {x!r}")
        if real_A.shape[0] != real_B.shape[0]:
            raise ValueError(
                f"real_A has {real_A.shape[0]} rows and real_B {real_B.shape[0]}: a CycleStep "
                "takes one batch of each domain, of the same size, as CycleGAN's loop does"
            )
        game = self.game
        G_A, G_B = game.g.module
        with self.precision.autocast():
            fake_B = G_A(real_A)
            rec_A = G_B(fake_B)
            fake_A = G_B(real_B)
            rec_B = G_A(fake_A)
        reals = [(real_A, real_B)]
        with frozen(game.d.module):
            logs = run_phase(game, [game.g], reals, [(fake_B, rec_A, fake_A, rec_B)], self._g_micro)
        fakes = [(fake_B.detach(), fake_A.detach())]
        logs.update(run_phase(game, [game.d], reals, fakes, self._d_micro))
        self.iteration += 1
        return logs

    def _adversarial_g(self, D: nn.Module, fake: Tensor) -> Tensor:
        found = scores(self.game, D(fake), fake)
        return summed([self.game.options.objective.g_loss(s) for s in found])[0]

    def _g_micro(self, real: tuple, fakes: tuple, k: int) -> Logs:
        (a, b), (fake_B, rec_A, fake_A, rec_B) = real, fakes
        game = self.game
        G_A, G_B = game.g.module
        D_A, D_B = game.d.module
        logs: Logs = {}
        with self.precision.autocast():
            if self.identity > 0:
                weight = self.cycle * self.identity
                logs["idt_a"] = F.l1_loss(G_A(b), b) * weight
                logs["idt_b"] = F.l1_loss(G_B(a), a) * weight
            logs["loss_g_a"] = game.options.g_scale * self._adversarial_g(D_A, fake_B)
            logs["loss_g_b"] = game.options.g_scale * self._adversarial_g(D_B, fake_A)
            logs["cycle_a"] = F.l1_loss(rec_A, a) * self.cycle
            logs["cycle_b"] = F.l1_loss(rec_B, b) * self.cycle
            loss = sum(logs.values())
        guard(game, loss_g=loss)
        game.g.backward(loss / k)
        return {**{key: v.detach() for key, v in logs.items()}, "loss_g": loss.detach()}

    def _d_micro(self, real: tuple, fakes: tuple, k: int) -> Logs:
        (a, b), (fake_B, fake_A) = real, fakes
        game = self.game
        D_A, D_B = game.d.module
        logs: Logs = {}
        for key, gp_key, D, pool, x, fake in (("loss_d_a", "gp_a", D_A, 0, b, fake_B),
                                              ("loss_d_b", "gp_b", D_B, 1, a, fake_A)):  # fmt: skip
            if self.pools is not None:
                fake = self.pools[pool].query(fake)
            loss, penalty = self._d_loss(D, x, fake)
            if penalty is not None:
                logs[gp_key] = penalty.detach()
                loss = loss + penalty
            guard(game, **{key: loss})
            game.d.backward(loss / k)  # each D's backward, as backward_D_A then _B
            logs[key] = loss.detach()
        logs["loss_d"] = logs["loss_d_a"] + logs["loss_d_b"]
        if "gp_a" in logs:
            logs["gp"] = logs["gp_a"] + logs["gp_b"]
        return logs

    def _d_loss(self, D: nn.Module, x: Tensor, fake: Tensor) -> tuple[Tensor, Tensor | None]:
        """One D's scaled adversarial loss on its real batch ``x`` and ``fake``, and the
        objective's penalty, where ``penalty_at`` puts it: before the two forwards, read
        from them (their inputs then require grad), or after them on forwards of its own."""
        game, objective = self.game, self.game.options.objective
        at = objective.penalty_at
        if at == "loss_forwards":
            x = x.detach().requires_grad_(True).view_as(x)
            fake = fake.detach().requires_grad_(True).view_as(fake)
        with self.precision.autocast():
            penalty = penalty_of(objective, D, x, fake) if at == "before" else None
            out_real, out_fake = D(x), D(fake)
            s_real, s_fake = scores(game, out_real, x), scores(game, out_fake, fake)
            parts = [objective.d_loss(r, f) for r, f in zip(s_real, s_fake, strict=True)]
            loss = game.options.d_scale * summed(parts)[0]
            if at == "loss_forwards":
                outputs = joined(out_real, x.shape[0]), joined(out_fake, fake.shape[0])
                penalty = objective.penalty_on_outputs(x, outputs[0], fake, outputs[1])
            elif at == "after":
                penalty = penalty_of(objective, D, x, fake)
        return loss, penalty

    def state_dict(self) -> dict:
        """The iteration count, the loss scalers (fp16) and the two pools of past fakes."""
        state = {"iteration": self.iteration, "precision": self.precision.state_dict()}
        if self.pools is not None:
            state["fake_pools"] = [pool.state_dict() for pool in self.pools]
        return state

    def load_state_dict(self, state: dict) -> None:
        keys = {"iteration", "precision"} | ({"fake_pools"} if self.pools is not None else set())
        if not isinstance(state, dict) or set(state) != keys:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"CycleStep state needs the keys {sorted(keys)}; got {got}")
        if self.pools is not None:
            for pool, saved in zip(self.pools, state["fake_pools"], strict=True):
                pool.load_state_dict(saved)
        self.precision.load_state_dict(state["precision"])
        self.iteration = int(state["iteration"])

    def __repr__(self) -> str:
        pool = self.pools[0].size if self.pools is not None else None
        options = self.game.options
        return (f"CycleStep(objective={options.objective!r}, g_scale={options.g_scale}, "
                f"d_scale={options.d_scale}, cycle={self.cycle}, identity={self.identity}, "
                f"fake_pool={pool})")  # fmt: skip


def _check_holds(opt: object, modules: nn.ModuleList, arg: str, names: str) -> None:
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"{arg} must be a torch.optim.Optimizer, got {type(opt).__name__}")
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    missing = [p for p in modules.parameters() if p.requires_grad and id(p) not in held]
    if missing:
        raise ValueError(f"{arg} must hold the parameters of {names} (one optimizer for both)")
