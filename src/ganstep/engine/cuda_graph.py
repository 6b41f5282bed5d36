"""One whole Step iteration captured in a CUDA graph and replayed (CUDA only).

A replay launches every kernel of the iteration (both forwards, both backwards, both
optimizer steps, BEGAN's k_t update) with one CPU call. That needs an iteration with
no host synchronisation and the same work every time, so capture refuses:

- schedules whose work depends on the iteration (``simultaneous`` with ``d_every`` or
  ``g_every`` > 1) and the fused step (it reads one flag on the host to find samples
  where D's slope vanished);
- ``fp16`` (the loss scalers read their overflow flag on the host); ``bf16`` is fine;
- ``distributed=True`` (collectives are left out of the graph);
- ``check_finite=True`` (each check reads a value on the host);
- conditional steps and loss terms (not captured yet), lazy R1 (``r1_every`` > 1),
  ``accumulate`` > 1;
- weights that are functions of the iteration and hooks that read it (a replay would
  repeat the captured iteration's value);
- optimizers that are not capturable (build Adam/AdamW with ``capturable=True``).

z must come from a generator the graph can advance: the default CUDA generator, or
one the caller registers (``CUDAGraph.register_generator_state``, exposed here as
``generators=``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from .checks import positive_int
from .step import Step


def check_capturable(step: Step) -> None:
    """Raise ValueError naming what keeps ``step`` out of a CUDA graph."""
    schedule = step.schedule
    if getattr(schedule, "fused", False):
        raise ValueError(
            "CUDA graph capture: the fused step reads a flag on the host each iteration; "
            "capture simultaneous() without fused"
        )
    if getattr(schedule, "d_every", 1) > 1 or getattr(schedule, "g_every", 1) > 1:
        raise ValueError(
            "CUDA graph capture: with d_every or g_every > 1 iterations differ; "
            "capture needs the same work every iteration"
        )
    if step.precision.name == "fp16":
        raise ValueError(
            "CUDA graph capture: fp16's loss scalers check overflow on the host; use bf16"
        )
    if step.distributed:
        raise ValueError("CUDA graph capture: distributed steps are not captured")
    if step.accumulate > 1:
        raise ValueError("CUDA graph capture: accumulate > 1 is not captured; use accumulate=1")
    regularizer = step.objective.regularizer
    if regularizer is not None and regularizer.weight and regularizer.every > 1:
        raise ValueError("CUDA graph capture: lazy R1 (r1_every > 1) differs between iterations")
    game, options = step.game, step.game.options
    if options.g_regularizer is not None:
        raise ValueError("CUDA graph capture: a lazy G regularizer differs between iterations")
    if game.info is not None:
        raise ValueError("CUDA graph capture: InfoGAN's info step is not captured")
    if options.augment is not None or options.fake_pool is not None:
        raise ValueError(
            "CUDA graph capture: augmentation and the fake pool are not captured (the "
            "pool draws from Python's random, ADA's p moves on the host)"
        )
    if options.condition is not None or options.g_terms or options.d_terms:
        raise ValueError("CUDA graph capture: conditional steps and loss terms are not captured")
    hooks = [*options.before_step.values(), *options.after_step.values()]
    reads_iteration = any(h.with_iteration for h in hooks)
    if callable(options.d_scale) or callable(options.g_scale) or reads_iteration:
        raise ValueError(
            "CUDA graph capture: a weight that is a function of the iteration, or a hook "
            "that reads it, is read on the host each iteration; a graph would replay the "
            "first iteration's value"
        )
    if options.check_finite:
        raise ValueError(
            "CUDA graph capture: check_finite reads each loss on the host; check the "
            "losses the graphed step returns instead"
        )
    for name, opt in (("opt_g", step.game.g.optimizer), ("opt_d", step.game.d.optimizer)):
        if not all(group.get("capturable", False) for group in opt.param_groups):
            raise ValueError(
                f"CUDA graph capture: {name} ({type(opt).__name__}) is not capturable; "
                "build it with capturable=True"
            )
    device = next(step.game.g.module.parameters()).device
    if device.type != "cuda":
        raise ValueError(f"CUDA graph capture needs the models on CUDA, they are on {device}")


class GraphedStep:
    """``step`` captured on the shapes of ``real``; call it like the Step.

    Args:
        step: the Step to capture.
        real: an example of what one call takes (tensor or list of tensors); later
            calls must match its shapes, dtypes and device.
        warmup: ordinary iterations run on ``real`` before capture, on a side stream,
            so that lazily created state (optimizer moments, cuDNN plans) exists.
            They train the models like any iteration does.
        generators: extra CUDA generators the iteration draws from (e.g. the one
            behind ``latent``), registered with the graph so replays advance them.
    """

    def __init__(
        self,
        step: Step,
        real: Tensor | Sequence[Tensor],
        warmup: int = 3,
        generators: Sequence[torch.Generator] = (),
    ) -> None:
        check_capturable(step)
        positive_int(warmup, "warmup")
        self.step = step
        self.static = [b.x.clone() for b in step.batches_of(real)]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                step(self._arg())
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        for gen in generators:
            self.graph.register_generator_state(gen)
        with torch.cuda.graph(self.graph):
            self.logs = step(self._arg())  # counts as an iteration; replays count below
        step.iteration -= 1

    def _arg(self) -> Tensor | list[Tensor]:
        return self.static if len(self.static) > 1 else self.static[0]

    def __call__(self, real: Tensor | Sequence[Tensor]) -> dict[str, Tensor]:
        """Copy ``real`` into the graph's input and replay one iteration."""
        batches = [b.x for b in self.step.batches_of(real)]
        for target, batch in zip(self.static, batches, strict=True):
            if batch.shape != target.shape or batch.dtype != target.dtype:
                raise ValueError(
                    f"a captured step takes batches of shape {tuple(target.shape)} "
                    f"{target.dtype}, got {tuple(batch.shape)} {batch.dtype}"
                )
            target.copy_(batch, non_blocking=True)
        self.graph.replay()
        self.step.iteration += 1
        return {k: v.clone() for k, v in self.logs.items()}
