"""A ganstep :class:`~ganstep.Step` under Hugging Face Accelerate (extra
``ganstep[accelerate]``).

Accelerate keeps the launcher (``accelerate launch`` or ``torchrun``), the process
group, the device and the sharding of the DataLoader; the Step keeps what decides
exactness, as under Lightning (:mod:`ganstep.lightning`): G and D are not given to
``accelerator.prepare`` (each would be wrapped in its own DistributedDataParallel,
all-reducing in every backward, and, in mixed precision, its forward in autocast),
the Step all-reduces once per phase the module it steps; precision and accumulation
are the Step's (one loss scaler per optimizer, one optimizer step per phase).
Accelerate's ``mixed_precision`` and ``gradient_accumulation_steps`` are refused with
what to use instead::

    accelerator = Accelerator()
    step, loader = prepare(accelerator, G, D, opt_g, opt_d, loader,
                           objective="ns", schedule=d_first(), latent=latent)
    for i, real in enumerate(step.feed(loader, iterations)):
        log(accelerator, step(real), i + 1)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn

try:
    from accelerate import Accelerator
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "ganstep.accelerate needs Accelerate: pip install 'ganstep[accelerate]'"
    ) from e

from ..engine import distributed as data_parallel
from ..engine.step import Step

__all__ = ["log", "prepare"]


def _refuse_what_the_step_does(accelerator: Accelerator, models: dict[str, nn.Module]) -> None:
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if accelerator.num_processes != launched:  # each process would train a model alone
        raise ValueError(
            f"{launched} processes were launched but the Accelerator sees "
            f"{accelerator.num_processes}: on CPU processes give Accelerator(cpu=True)"
        )
    if accelerator.mixed_precision != "no":
        raise ValueError(
            f"Accelerator(mixed_precision={accelerator.mixed_precision!r}) autocasts each "
            "prepared model and shares one loss scaler between the optimizers: leave it at "
            "'no' and give the Step its precision (precision='bf16' or 'fp16', a scaler per "
            "optimizer)"
        )
    if accelerator.gradient_accumulation_steps != 1:
        raise ValueError(
            f"Accelerator(gradient_accumulation_steps={accelerator.gradient_accumulation_steps})"
            ": give the Step its accumulation instead (accumulate=k: k micro-batches per "
            "batch, one optimizer step per phase)"
        )
    for name, module in models.items():
        wrapped = isinstance(module, nn.parallel.DistributedDataParallel)
        if wrapped or hasattr(module, "_original_forward"):  # accelerate.prepare's marks
            raise ValueError(
                f"{name} went through accelerator.prepare (DistributedDataParallel or an "
                "autocast forward): pass the module itself; the Step all-reduces each phase"
            )


def prepare(
    accelerator: Accelerator,
    G: nn.Module,
    D: nn.Module,
    opt_g: torch.optim.Optimizer,
    opt_d: torch.optim.Optimizer,
    loader: Iterable | None = None,
    *,
    seed: int = 0,
    sync_batchnorm_stats: bool = True,
    **step_options: Any,
) -> tuple[Step, Iterable | None]:
    """G and D on ``accelerator.device``, ``loader`` sharded across processes by
    Accelerate, and the Step over them (data parallel when Accelerate runs more than
    one process). ``step_options`` are the Step's (``objective``, ``schedule``,
    ``latent``, ...; not ``distributed``). Returns ``(step, loader)``.

    With several processes each draws its own noise, as under ``GANModule``: process
    r > 0 reseeds torch's global stream with ``seed + 1000003 * r`` (Dropout's masks,
    WGAN-GP's interpolation, augmentation, and a ``latent`` that reads the global
    stream, such as ``lambda n: torch.randn(n, z_dim)``); process 0 keeps the stream it
    has. Call it after building G and D from one seed, so that every process starts
    from the same models. With ``sync_batchnorm_stats`` (the default) BatchNorm's
    running statistics are averaged over the processes after each iteration (one
    all-reduce), so that every process, and ``accelerator.save_state``, holds the same.
    """
    if "distributed" in step_options:
        raise ValueError("prepare decides distributed from the Accelerator; leave it out")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    _refuse_what_the_step_does(accelerator, {"G": G, "D": D})
    G.to(accelerator.device)  # in place: the optimizers keep holding these parameters
    D.to(accelerator.device)
    _optimizer_state_to(opt_g, accelerator.device)
    _optimizer_state_to(opt_d, accelerator.device)
    if loader is not None:
        loader = accelerator.prepare_data_loader(loader)
    several = accelerator.num_processes > 1
    if several and accelerator.process_index:  # every process its own noise
        torch.manual_seed(seed + data_parallel.SEED_STRIDE * accelerator.process_index)
    kind = _BatchNormSynced if several and sync_batchnorm_stats else Step
    step = kind(G, D, opt_g, opt_d, distributed=several, **step_options)
    return step, loader


class _BatchNormSynced(Step):
    """A data parallel Step that averages BatchNorm's running statistics over the
    processes after each iteration (what ``GANModule`` does by default)."""

    def __call__(self, real: object) -> dict[str, Tensor]:
        logs = super().__call__(real)
        G, D = self._models[:2]
        data_parallel.average_batchnorm_stats(G, D)
        return logs


def _optimizer_state_to(opt: torch.optim.Optimizer, device: torch.device) -> None:
    for state in opt.state.values():
        for key, value in state.items():
            if isinstance(value, Tensor) and key != "step":
                state[key] = value.to(device)


def log(accelerator: Accelerator, logs: dict[str, Tensor], iteration: int) -> None:
    """The Step's losses to Accelerate's trackers at ``iteration`` (the main process
    writes; one host sync)."""
    accelerator.log({k: v.item() for k, v in logs.items()}, step=iteration)
