"""Step: one GAN training iteration = objective + schedule + models + optimizers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from . import distributed as data_parallel
from .objectives import Objective, get_objective
from .phases import Pair, sample_mixing_layers, trainable
from .precision import Precision
from .schedules import Schedule, get_schedule


def _check_optimizer(opt: object, module: nn.Module, own: str, other: nn.Module) -> None:
    other_name = "D" if own == "G" else "G"
    arg = f"opt_{own.lower()}"
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"{arg} must be a torch.optim.Optimizer, got {type(opt).__name__}")
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    stolen = [name for name, p in other.named_parameters() if id(p) in held]
    if stolen:
        raise ValueError(
            f"{arg} holds {other_name}'s parameters ({', '.join(stolen[:3])}): "
            "were opt_g and opt_d swapped?"
        )
    missing = [
        name for name, p in module.named_parameters() if p.requires_grad and id(p) not in held
    ]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ValueError(
            f"{arg} does not hold {own}'s trainable parameters {', '.join(missing[:3])}{more}; "
            f"build it from {own}.parameters()"
        )


def _compiled(module: nn.Module, compile: bool | str) -> nn.Module:
    if compile is False:
        return module
    if compile is True:
        return torch.compile(module)
    if not isinstance(compile, str):
        raise TypeError(f"compile must be True, False or a backend name, got {compile!r}")
    backends = torch.compiler.list_backends(exclude_tags=())
    if compile not in backends:
        raise ValueError(f"compile: unknown backend {compile!r}; choose one of {backends}")
    return torch.compile(module, backend=compile)


class Step:
    """One full GAN training iteration per call, with the fewest passes its schedule allows.

    Args:
        G: the generator, any ``nn.Module`` mapping a batch of z to a batch of samples.
        D: the discriminator, any ``nn.Module``: one logit per sample, or for ``began``
            an autoencoder whose output is shaped like its input.
        opt_g, opt_d: any ``torch.optim.Optimizer`` holding G's, resp. D's, trainable
            parameters (and not the other module's).
        objective: a name (``minimax``, ``ns``, ``lsgan``, ``hinge``, ``wgan_gp``,
            ``began``, ``softmax``) or an :class:`~ganstep.objectives.Objective`.
        schedule: a name (``d_first``, ``g_first``, ``simultaneous``) or a
            :class:`~ganstep.schedules.Schedule` with options, e.g. ``d_first(d_steps=5)``.
        latent: ``latent(n)`` returns a batch of n z. Step draws z only through it,
            one draw per generated batch, in the order the schedule generates them.
        concat: run D once on ``cat(real, fake)`` in D steps. Refused when D has
            BatchNorm in training mode, since that changes the math.
        precision: ``fp32`` (default), ``bf16`` (autocast) or ``fp16`` (autocast with a
            loss scaler per optimizer; a step whose gradients overflow is skipped).
            Under bf16 and fp16 the losses are computed in float32.
        distributed: data parallel over torch.distributed's default process group
            (initialised by the caller, e.g. under torchrun): G and D are broadcast from
            rank 0 now, and each phase averages the gradients of the module it steps
            across processes before stepping it. See :mod:`ganstep.distributed`.
        compile: ``True`` (or a backend name such as ``"inductor"``, ``"aot_eager"``)
            runs G's and D's forwards through ``torch.compile``; their parameters stay
            the user's. ``False`` (default) runs them eagerly.

    Calling ``step(real)`` runs one iteration. ``real`` is one batch (a tensor) when
    the schedule has one D step per iteration; with ``d_steps = k`` it is a list or
    tuple of ``k`` batches, one per D step in order (see :attr:`real_batches`). Fake
    batches have the size of the real batch they are compared with.

    Returns a dict of detached tensors on the device (no host sync): ``loss_d``,
    ``loss_g`` (of the last D and G step; an iteration that updates only one module
    reports only its loss), plus ``gp`` for ``wgan_gp`` and ``l_real``, ``k`` (after the
    update), ``m_global`` for ``began``.

    The other module's parameters are switched off (``requires_grad=False``) during
    each phase and restored exactly as they were; only parameters the user left
    trainable are trained.
    """

    def __init__(
        self,
        G: nn.Module,
        D: nn.Module,
        opt_g: torch.optim.Optimizer,
        opt_d: torch.optim.Optimizer,
        *,
        objective: str | Objective,
        schedule: str | Schedule,
        latent: Callable[[int], Tensor],
        concat: bool = False,
        precision: str = "fp32",
        distributed: bool = False,
        compile: bool | str = False,
    ) -> None:
        for arg, module in (("G", G), ("D", D)):
            if not isinstance(module, nn.Module):
                raise TypeError(f"{arg} must be a torch.nn.Module, got {type(module).__name__}")
            if not trainable(module):
                raise ValueError(f"{arg} has no trainable parameters")
        if G is D:
            raise ValueError("G and D must be two different modules")
        _check_optimizer(opt_g, G, "G", D)
        _check_optimizer(opt_d, D, "D", G)
        if not callable(latent):
            raise TypeError(f"latent must be callable as latent(n), got {type(latent).__name__}")
        if not isinstance(concat, bool):
            raise TypeError(f"concat must be True or False, got {concat!r}")
        if not isinstance(distributed, bool):
            raise TypeError(f"distributed must be True or False, got {distributed!r}")
        if distributed and not data_parallel.active():
            raise ValueError(
                "distributed=True needs torch.distributed's default process group with more "
                "than one process: call torch.distributed.init_process_group first (torchrun "
                "sets up its environment)"
            )
        self.objective = get_objective(objective)
        self.schedule = get_schedule(schedule)
        device = next(G.parameters()).device
        self.precision = Precision(precision, device.type)
        self.distributed = distributed
        g_run, d_run = _compiled(G, compile), _compiled(D, compile)
        self.pair = Pair(g_run, d_run, opt_g, opt_d, self.objective, latent, concat,
                         precision=self.precision)  # fmt: skip
        self.pair.check_concat()
        self.schedule.check(self.pair)
        if distributed:
            data_parallel.broadcast_module(G)
            data_parallel.broadcast_module(D)
            self.pair.sync = data_parallel.GradientAverager()
        self.iteration = 0

    @property
    def real_batches(self) -> int:
        """How many real batches one call takes: the schedule's D steps per iteration."""
        return self.schedule.real_batches

    def _batches(self, real: Tensor | Sequence[Tensor]) -> list[Tensor]:
        want = self.real_batches
        if isinstance(real, Tensor):
            batches = [real]
        elif isinstance(real, (list, tuple)) and all(isinstance(b, Tensor) for b in real):
            batches = list(real)
        else:
            raise TypeError(
                f"real must be a tensor or a list of {want} tensors, got {type(real).__name__}"
            )
        if len(batches) != want:
            raise ValueError(
                f"schedule {self.schedule!r} takes {want} real batch(es) per step, one per "
                f"D step; got {len(batches)}"
            )
        for b in batches:
            if b.dim() < 2 or b.shape[0] == 0:
                raise ValueError(
                    "a real batch must have shape (n, ...) with n >= 1 and at least one "
                    f"feature dimension, got {tuple(b.shape)}"
                )
        return batches

    def __call__(self, real: Tensor | Sequence[Tensor]) -> dict[str, Tensor]:
        """Run one training iteration on ``real``; return the iteration's losses."""
        logs = self.schedule.run(self.pair, self._batches(real), self.iteration)
        if self.distributed:
            logs = data_parallel.average_logs(logs)
        logs.update(self.objective.end_iteration(logs))
        self.iteration += 1
        return logs

    def state_dict(self) -> dict:
        """Step's own state: the iteration count, the objective's state (BEGAN's k) and
        the loss scalers' state (``fp16``; empty otherwise).

        Models and optimizers keep their own ``state_dict()``.
        """
        return {
            "iteration": self.iteration,
            "objective": self.objective.state_dict(),
            "precision": self.precision.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (``precision`` may be absent)."""
        needed, allowed = {"iteration", "objective"}, {"iteration", "objective", "precision"}
        if not isinstance(state, dict) or not needed <= set(state) <= allowed:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"Step state needs the keys 'iteration' and 'objective' (and optionally "
                f"'precision'), got {got}"
            )
        self.objective.load_state_dict(state["objective"])
        self.precision.load_state_dict(state.get("precision", self.precision.state_dict()))
        self.iteration = int(state["iteration"])

    def __repr__(self) -> str:
        mixing = sample_mixing_layers(self.pair.D)
        return (
            f"Step(objective={self.objective!r}, schedule={self.schedule!r}, "
            f"concat={self.pair.concat}, D sample-mixing layers={mixing or 'none'})"
        )
