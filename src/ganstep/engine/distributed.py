"""Data parallel training on torch.distributed, synchronised phase by phase.

Every process runs the same Step on its own batch. A phase's gradients are averaged
across processes (one ``all_reduce`` over a flat buffer) right before that phase's
optimizer steps, and only for the module it steps: a D phase never waits on G's
gradients, nor a G phase on D's. With the same initial parameters (broadcast from
rank 0) every process then takes the same step, so parameters stay identical, and
equal those of one process on the concatenated batch wherever the losses are means
over samples and D does not mix samples (no BatchNorm in training mode).

The losses a step logs are averaged the same way before the objective updates its
state, so BEGAN's k_t follows the global batch on every rank.

``torchrun --nproc_per_node=N -m ganstep train ...`` starts such a run: gloo on CPU,
NCCL on GPU.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

# Each process of a data parallel run draws its own z (and batches): its generators are
# seeded seed + SEED_STRIDE * rank (+ a small offset per stream).
SEED_STRIDE = 1000003


def launched() -> bool:
    """True when this process was started by torchrun (or any launcher setting the
    torch.distributed environment) with more than one process."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def active() -> bool:
    """True when a default process group with more than one process is running."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def init(device_type: str) -> None:
    """Join the process group the launcher describes (gloo on CPU, NCCL on CUDA)."""
    if dist.is_initialized():
        return
    dist.init_process_group("nccl" if device_type == "cuda" else "gloo")


def local_device(device: torch.device) -> torch.device:
    """On CUDA, this process's GPU (``LOCAL_RANK``); otherwise ``device`` itself."""
    if device.type == "cuda":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return device


def leave() -> None:
    """Leave the process group together: no process tears down a group another still
    uses (every process calls this at the same point). The group is torn down even when
    the barrier fails (a peer died)."""
    try:
        dist.barrier()
    finally:
        dist.destroy_process_group()


def exit_now(code: int = 0) -> None:
    """End a worker process whose group was torn down, skipping interpreter finalisation.

    With torch 2.13, a gloo process sometimes aborts ("terminate called without an
    active exception") while the interpreter finalises, after a clean
    ``destroy_process_group``, when the machine is loaded (about 1 run in 8 on the
    2-core CI machine). Everything is written by then; this exits before it happens.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def broadcast_module(module: nn.Module, src: int = 0) -> None:
    """Copy ``src``'s parameters and buffers into every process."""
    broadcast_tensors([*module.parameters(), *module.buffers()], src)


def broadcast_tensors(tensors: list[Tensor], src: int = 0) -> None:
    """Copy ``src``'s ``tensors`` (parameters: a head beside G and D) into every process."""
    with torch.no_grad():
        for tensor in tensors:
            dist.broadcast(tensor.data, src)


class GradientAverager:
    """Average the gradients of the given parameters across the processes.

    One all-reduce per call, over a flat buffer per dtype. Every process must call it
    with the same parameters, each holding a gradient (as with DDP, a parameter that
    gets no gradient on some processes would desynchronise them: it is an error).
    """

    def __call__(self, params: list[nn.Parameter]) -> None:
        grads = [p.grad for p in params]
        if any(g is None for g in grads):
            missing = sum(g is None for g in grads)
            raise RuntimeError(
                f"data parallel step: {missing} parameter(s) got no gradient in this phase; "
                "every trainable parameter must take part in the loss on every process"
            )
        _average(grads)


def average_batchnorm_stats(*modules: nn.Module) -> None:
    """Average BatchNorm's running means and variances across processes, in one
    all-reduce. Each process's statistics follow its own batches; their average is the
    running average of the global batch's means (and of the processes' variances), and
    stays so however often it is taken, since the update is linear in them."""
    stats = [t for m in modules for bn in m.modules()
             if isinstance(bn, nn.modules.batchnorm._BatchNorm) and bn.track_running_stats
             for t in (bn.running_mean, bn.running_var) if t is not None]  # fmt: skip
    with torch.no_grad():
        _average(stats)


def _average(tensors: list[Tensor]) -> None:
    """Replace each tensor by its mean across processes: one all-reduce per dtype, over
    a flat buffer."""
    groups: dict[torch.dtype, list[Tensor]] = {}
    for t in tensors:
        groups.setdefault(t.dtype, []).append(t)
    world = dist.get_world_size()
    for group in groups.values():
        flat = _flatten_dense_tensors(group)
        all_reduce_sum(flat)
        flat.div_(world)
        for t, averaged in zip(group, _unflatten_dense_tensors(flat, group), strict=True):
            t.copy_(averaged)


def all_reduce_sum(t: Tensor) -> None:
    """Sum ``t`` across processes, in place (through the backend's device: NCCL's is CUDA)."""
    if dist.get_backend() == "nccl" and t.device.type != "cuda":
        on_device = t.to(torch.device("cuda", torch.cuda.current_device()))
        dist.all_reduce(on_device)
        t.copy_(on_device)
    else:
        dist.all_reduce(t)


def average_logs(logs: dict[str, Tensor]) -> dict[str, Tensor]:
    """The logs averaged across processes (one all-reduce, on the device)."""
    if not logs:
        return logs
    keys = sorted(logs)
    wide = any(v.dtype == torch.float64 for v in logs.values())
    dtype = torch.float64 if wide else torch.float32
    stacked = torch.stack([logs[k].detach().to(dtype).reshape(()) for k in keys])
    dist.all_reduce(stacked)
    stacked.div_(dist.get_world_size())
    return {k: stacked[i].to(logs[k].dtype) for i, k in enumerate(keys)}
