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
forward is shared). ``order="d_first"`` is DualGAN's loop instead: D's phase on fakes
of the iteration's G (made without a graph), then, on every ``g_every``-th iteration,
G's phase with its forwards run again after D's step. ``g_order`` runs G's four
forwards in the loop's order (DiscoGAN's, DualGAN's), which matters where G draws
random numbers (Dropout in a U-Net) or keeps running statistics; ``discriminator_order``
does the same for the two Ds' steps; ``g_terms`` and ``d_terms`` add loss terms.

CycleGAN's ``lsgan`` (plain MSE) is ganstep's ``lsgan`` with ``g_scale=2`` (its D
loss, ``0.5 * (real + fake)``, is ganstep's); its ``vanilla`` (BCE) is ``ns`` with
``d_scale=0.5``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .batch import Batch
from .checks import positive_int, refused_block, scale_factor
from .game import Game, check_hooks
from .losses import joined, penalty_of, scores, summed
from .objectives import Logs, Objective, get_objective
from .options import Options, Progress
from .phases import guard, run_phase
from .pool import FakePool
from .precision import Precision
from .sides import Side, frozen
from .views import View, add_terms, normalize_terms

# G's four forwards: fake_B = G_A(a), rec_A = G_B(fake_B), fake_A = G_B(b), rec_B = G_A(fake_A).
CYCLEGAN_G_ORDER = ("fake_B", "rec_A", "fake_A", "rec_B")
# its identity forwards, idt_A = G_A(b) and idt_B = G_B(a): by default in G's loss, after
# the four; a g_order may place them among the four (PyTorch-GAN's cyclegan.py first)
IDENTITY_FORWARDS = ("idt_A", "idt_B")
ORDERS = ("simultaneous", "d_first")


@dataclass(frozen=True, eq=False)
class CycleView:
    """What a ``g_terms`` term of a CycleStep reads: both real batches, G's fakes and
    reconstructions of this G phase, and the iteration (counting from 0)."""

    real_A: Tensor
    real_B: Tensor
    fake_A: Tensor
    fake_B: Tensor
    rec_A: Tensor
    rec_B: Tensor
    iteration: int
    phase: str = "G"
    d_real_out: object = None
    d_fake_out: object = None


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
        order: ``"simultaneous"`` (CycleGAN's: G's step, then D's on the same fakes, both
            at the iteration's parameters) or ``"d_first"`` (DualGAN's: D's step on fakes
            made without a graph, then G's phase forwarded anew).
        g_every: with ``order="d_first"``, G steps on every ``g_every``-th iteration,
            counting from 0 (DualGAN's ``i % n_critic == 0``); D steps every iteration.
        g_order: the order of G's four forwards, a permutation of ``("fake_B", "rec_A",
            "fake_A", "rec_B")`` (CycleGAN's, the default) with each reconstruction after
            its fake: DiscoGAN's ``("fake_B", "fake_A", "rec_A", "rec_B")``, DualGAN's
            ``("fake_A", "fake_B", "rec_A", "rec_B")``. ``d_first``'s D phase makes its two
            fakes in this order too. It may also place the identity forwards, ``"idt_A"``
            (``G_A(b)``) and ``"idt_B"`` (``G_B(a)``), among the four (PyTorch-GAN's
            cyclegan.py: ``("idt_B", "idt_A", "fake_B", "fake_A", "rec_A", "rec_B")``);
            without them they run in G's loss, after the four (CycleGAN's).
        discriminator_order: the order of the two Ds' forwards in G's loss and of their
            losses and backward passes in D's phase, ``("D_A", "D_B")`` (CycleGAN's) or
            ``("D_B", "D_A")`` (DiscoGAN's and DualGAN's domain A first).
        g_terms: extra terms of G's loss, ``{"name": fn}`` or ``{"name": (weight, fn)}``,
            ``fn(view)`` reading a :class:`CycleView` (DiscoGAN's pixelwise L1); logged by
            name.
        d_terms: extra terms of each D's loss, ``fn(view)`` reading a
            :class:`~ganstep.engine.views.View` of that D (``view.phase`` is ``"D_A"`` or
            ``"D_B"``; its real batch, the fakes it was shown, its outputs on both);
            logged by name with ``_a``, ``_b``.

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
        order: str = "simultaneous",
        g_every: int = 1,
        g_order: tuple[str, ...] = CYCLEGAN_G_ORDER,
        discriminator_order: tuple[str, str] = ("D_A", "D_B"),
        g_terms: dict | None = None,
        d_terms: dict | None = None,
    ) -> None:
        check_modules({"G_A": G_A, "G_B": G_B, "D_A": D_A, "D_B": D_B})
        objective = get_objective(objective)
        if objective.g_needs_real or not objective.reads_scores:  # (began, ebgan)
            raise ValueError(
                f"CycleStep's G loss reads D on the fakes alone; objective {objective.name!r} "
                "needs more (use lsgan, ns, hinge, minimax, wgan or wgan_gp)"
            )
        if objective.regularizer is not None and objective.regularizer.weight > 0:
            raise ValueError("CycleStep does not take R1: build the objective without r1")
        if objective.penalty_at == "own_step":
            raise ValueError(
                "CycleStep runs each D's penalty in its step, not in a step of its own: build "
                "the objective with penalty_at='after'"
            )
        self.order, self.g_every = _check_order(order, g_every)
        self.g_order = _check_g_order(g_order)
        self.discriminator_order = _check_discriminator_order(discriminator_order)
        self.cycle = scale_factor(cycle, "cycle", zero=True)
        self.identity = scale_factor(identity, "identity", zero=True)
        if IDENTITY_FORWARDS[0] in self.g_order and not (self.cycle and self.identity):
            raise ValueError(
                "g_order places the identity forwards, which cycle=0 or identity=0 skips: "
                "leave idt_A and idt_B out of it"
            )
        generators, discriminators = nn.ModuleList([G_A, G_B]), nn.ModuleList([D_A, D_B])
        _check_holds(opt_g, generators, "opt_g", "G_A and G_B")
        _check_holds(opt_d, discriminators, "opt_d", "D_A and D_B")
        device = next(G_A.parameters()).device
        self.precision = Precision(precision, device.type)
        options = Options(objective, latent=None,
                          g_scale=scale_factor(g_scale, "g_scale", zero=True),
                          d_scale=scale_factor(d_scale, "d_scale"),
                          before_step=check_hooks(before_step, "before_step"),
                          after_step=check_hooks(after_step, "after_step"),
                          g_terms=normalize_terms(g_terms, "g_terms"),
                          d_terms=normalize_terms(d_terms, "d_terms"))  # fmt: skip
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
        game = self.game
        if why := refused_block("a CycleStep", game.precision.device_type, game.eager_modules()):
            raise RuntimeError(why)
        check_batches(real_A, real_B, "a CycleStep takes one batch of each domain, of the "
                      "same size, as CycleGAN's loop does")  # fmt: skip
        reals = [(real_A, real_B)]
        if self.order == "d_first":
            with torch.no_grad():
                made = self._forwards(real_A, real_B, reconstruct=False)
            game.options.objective.before_d_step(game.d.module)  # WGAN(clamp_at="before")
            logs = run_phase(game, [game.d], reals, [(made["fake_B"], made["fake_A"])],
                             self._d_micro)  # fmt: skip
            if self.iteration % self.g_every == 0:
                logs.update(self._g_phase(reals, self._forwards(real_A, real_B)))
        else:
            made = self._forwards(real_A, real_B)
            logs = self._g_phase(reals, made)
            fakes = [(made["fake_B"].detach(), made["fake_A"].detach())]
            game.options.objective.before_d_step(game.d.module)
            logs.update(run_phase(game, [game.d], reals, fakes, self._d_micro))
        self.iteration += 1
        return logs

    def _forwards(self, a: Tensor, b: Tensor, reconstruct: bool = True) -> dict[str, Tensor]:
        """G's forwards in ``g_order``: the two fakes and, with ``reconstruct``, the two
        reconstructions and the identity maps the order places."""
        G_A, G_B = self.game.g.module
        calls = {"fake_B": (G_A, lambda: a), "fake_A": (G_B, lambda: b),
                 "rec_A": (G_B, lambda: made["fake_B"]),
                 "rec_B": (G_A, lambda: made["fake_A"]),
                 "idt_A": (G_A, lambda: b), "idt_B": (G_B, lambda: a)}  # fmt: skip
        made: dict[str, Tensor] = {}
        with self.precision.autocast():
            for name in self.g_order:
                if reconstruct or name.startswith("fake"):
                    G, inp = calls[name]
                    made[name] = G(inp())
        return made

    def _g_phase(self, reals: list, made: dict[str, Tensor]) -> Logs:
        game = self.game
        forwards = [(made["fake_B"], made["rec_A"], made["fake_A"], made["rec_B"],
                     made.get("idt_A"), made.get("idt_B"))]  # fmt: skip
        with frozen(game.d.module):
            return run_phase(game, [game.g], reals, forwards, self._g_micro)

    def _adversarial_g(self, D: nn.Module, fake: Tensor) -> Tensor:
        found = scores(self.game, D(fake), fake)
        return summed([self.game.options.objective.g_loss(s) for s in found])[0]

    def _g_micro(self, real: tuple, fakes: tuple, k: int) -> Logs:
        (a, b), (fake_B, rec_A, fake_A, rec_B, idt_A, idt_B) = real, fakes
        game = self.game
        G_A, G_B = game.g.module
        D_A, D_B = game.d.module
        logs: Logs = {}
        with self.precision.autocast():
            if self.identity > 0:
                weight = self.cycle * self.identity
                idt_A = G_A(b) if idt_A is None else idt_A  # (where g_order did not place it)
                idt_B = G_B(a) if idt_B is None else idt_B
                logs["idt_a"] = F.l1_loss(idt_A, b) * weight
                logs["idt_b"] = F.l1_loss(idt_B, a) * weight
            judged = {"D_A": ("loss_g_a", D_A, fake_B), "D_B": ("loss_g_b", D_B, fake_A)}
            for name in self.discriminator_order:  # each D's forward, in the loop's order
                key, D, fake = judged[name]
                logs[key] = game.options.g_scale * self._adversarial_g(D, fake)
            logs["cycle_a"] = F.l1_loss(rec_A, a) * self.cycle
            logs["cycle_b"] = F.l1_loss(rec_B, b) * self.cycle
            loss = sum(logs.values())
            view = CycleView(a, b, fake_A, fake_B, rec_A, rec_B, self.iteration)
            loss, term_logs = add_terms(loss, game.options.g_terms, view)
        logs.update(term_logs)
        guard(game, loss_g=loss)
        game.g.backward(loss / k)
        return {**{key: v.detach() for key, v in logs.items()}, "loss_g": loss.detach()}

    def _d_micro(self, real: tuple, fakes: tuple, k: int) -> Logs:
        (a, b), (fake_B, fake_A) = real, fakes
        game = self.game
        D_A, D_B = game.d.module
        logs: Logs = {}
        each = {"D_A": ("_a", D_A, 0, b, fake_B), "D_B": ("_b", D_B, 1, a, fake_A)}
        for name in self.discriminator_order:
            suffix, D, pool, x, fake = each[name]
            if self.pools is not None:
                fake = self.pools[pool].query(fake)
            loss, penalty, view = self._d_loss(D, x, fake, name)
            if penalty is not None:
                logs["gp" + suffix] = penalty.detach()
                loss = loss + penalty
            with self.precision.autocast():
                loss, term_logs = add_terms(loss, game.options.d_terms, view)
            logs.update({key + suffix: v for key, v in term_logs.items()})
            guard(game, **{"loss_d" + suffix: loss})
            game.d.backward(loss / k)  # each D's backward, as backward_D_A then _B
            logs["loss_d" + suffix] = loss.detach()
        logs["loss_d"] = logs["loss_d_a"] + logs["loss_d_b"]
        if "gp_a" in logs:
            logs["gp"] = logs["gp_a"] + logs["gp_b"]
        return logs

    def _d_loss(self, D: nn.Module, x: Tensor, fake: Tensor, name: str
                ) -> tuple[Tensor, Tensor | None, View]:  # fmt: skip
        """One D's scaled adversarial loss on its real batch ``x`` and ``fake``, the
        objective's penalty, where ``penalty_at`` puts it (before the two forwards, read
        from them, their inputs then requiring grad, or after them on forwards of its
        own), and the view its terms read."""
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
        view = View(name, Batch(x), Batch(fake), out_real, out_fake, self.iteration)
        return loss, penalty, view

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


def check_modules(modules: dict[str, object]) -> None:
    """Each a ``torch.nn.Module``, no two the same."""
    for name, module in modules.items():
        if not isinstance(module, nn.Module):
            raise TypeError(f"{name} must be a torch.nn.Module, got {type(module).__name__}")
    if len({id(m) for m in modules.values()}) < len(modules):
        *first, last = modules
        raise ValueError(f"{', '.join(first)} and {last} must be {len(modules)} different modules")


def check_batches(real_A: object, real_B: object, why: str) -> None:
    """Two batch tensors of the same number of rows (``why`` says why they must be)."""
    for name, x in (("real_A", real_A), ("real_B", real_B)):
        if not isinstance(x, Tensor) or x.dim() < 2 or x.shape[0] == 0:
            raise ValueError(f"{name} must be a batch tensor (n, ...), got {x!r}")
    if real_A.shape[0] != real_B.shape[0]:
        raise ValueError(f"real_A has {real_A.shape[0]} rows and real_B {real_B.shape[0]}: {why}")


def _check_order(order: object, g_every: object) -> tuple[str, int]:
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    g_every = positive_int(g_every, "g_every")
    if g_every > 1 and order != "d_first":
        raise ValueError(
            "g_every > 1 skips G's phase on some iterations, which order='simultaneous' "
            "shares its forwards with: use order='d_first' (DualGAN's n_critic)"
        )
    return order, g_every


def _check_discriminator_order(order: object) -> tuple[str, str]:
    if isinstance(order, str) or tuple(order) not in (("D_A", "D_B"), ("D_B", "D_A")):
        raise ValueError(
            f'discriminator_order must be ("D_A", "D_B") or ("D_B", "D_A"), got {order!r}'
        )
    return tuple(order)


def _check_g_order(g_order: object) -> tuple[str, ...]:
    """A permutation of G's four forwards, or of them and the two identity forwards,
    with each reconstruction after its fake."""
    four, six = sorted(CYCLEGAN_G_ORDER), sorted(CYCLEGAN_G_ORDER + IDENTITY_FORWARDS)
    if isinstance(g_order, str) or sorted(g_order) not in (four, six):
        raise ValueError(f"g_order must be a permutation of {CYCLEGAN_G_ORDER}, or of them and "
                         f"{IDENTITY_FORWARDS}, got {g_order!r}")  # fmt: skip
    g_order = tuple(g_order)
    for rec, fake in (("rec_A", "fake_B"), ("rec_B", "fake_A")):
        if g_order.index(rec) < g_order.index(fake):
            raise ValueError(f"g_order: {rec} reconstructs from {fake}, so it comes after it")
    return g_order
