"""torch's fused Adam on the CPU, called without the Python around its kernel.

``torch.optim.Adam(fused=True).step()`` spends more time in Python than in its kernel
on a small model: a profiler range, hooks, a grad-mode switch, regrouping the tensors
by device and dtype, and (at the first call) importing ``torch._dynamo``, 0.8-1.4 s.
On the default run's MLPs that was 12% of an iteration. ``LeanAdam`` makes the same
two calls the fused path makes (``_foreach_add_`` on the steps, ``_fused_adam_``), so
its parameters and state equal ``torch.optim.Adam(fused=True)``'s bit for bit, and its
``state_dict`` is torch's (checkpoints of either load into the other). Anything the
short path does not cover (a closure, AMP's grad scale, amsgrad, tensor rates,
capturable, another device) goes through ``torch.optim.Adam.step`` unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain

import torch
from torch import Tensor
from torch.optim import optimizer as torch_optimizer

_SHORT_PATH_OFF = ("amsgrad", "capturable", "differentiable", "decoupled_weight_decay")


def _undecorated(method: Callable) -> Callable:
    return getattr(method, "__wrapped__", method)


class LeanAdam(torch.optim.Adam):
    """``torch.optim.Adam(params, lr, betas, eps, weight_decay, maximize=...,
    fused=True)`` whose ``step()`` calls the fused kernel directly (same update, same
    state). Hooks registered on it or globally run as torch runs them."""

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, *, maximize: bool = False) -> None:  # fmt: skip
        super().__init__(params, lr, betas, eps, weight_decay, maximize=maximize, fused=True)

    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One Adam step of every parameter that has a gradient."""
        args, kwargs = (self,) if closure is None else (self, closure), {}
        hooks = (torch_optimizer._global_optimizer_pre_hooks, self._optimizer_step_pre_hooks)
        for pre_hook in chain(*(h.values() for h in hooks)):
            replaced = pre_hook(self, args, kwargs)
            if replaced is not None:  # a hook may replace the arguments, as in torch
                args, kwargs = replaced
                closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        groups = None if closure is not None else self._short_path_groups()
        if groups is None:
            loss = _adam_step()(self, closure)
        else:
            loss = None
            if torch._C._autograd._profiler_enabled():  # keep torch's label in traces
                with torch.autograd.profiler.record_function("Optimizer.step#LeanAdam.step"):
                    self._fused_steps(groups)
            else:
                self._fused_steps(groups)
        self._optimizer_step_code()
        hooks = (self._optimizer_step_post_hooks, torch_optimizer._global_optimizer_post_hooks)
        for post_hook in chain(*(h.values() for h in hooks)):
            post_hook(self, args, kwargs)
        return loss

    # torch would wrap step() in its profiler-and-hooks wrapper; step() runs the hooks.
    step.hooked = True  # type: ignore[attr-defined]

    # torch wraps these in torch._disable_dynamo, whose first call imports torch._dynamo
    # (0.8-1.4 s, every optimizer's constructor calls add_param_group); no compiled code
    # calls them here, so LeanAdam calls torch's functions themselves.
    add_param_group = _undecorated(torch.optim.Optimizer.add_param_group)
    state_dict = _undecorated(torch.optim.Optimizer.state_dict)
    load_state_dict = _undecorated(torch.optim.Optimizer.load_state_dict)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every gradient to None (or zero it, as torch's does, if not to None)."""
        if not set_to_none:
            super().zero_grad(set_to_none=False)
            return
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def _short_path_groups(self) -> list[tuple[dict, list[Tensor]]] | None:
        """Each group with its parameters that have a gradient, creating torch's state
        for new ones; None when any of it needs torch's own step."""
        if any(getattr(self, k, None) is not None for k in ("grad_scale", "found_inf")):
            return None  # AMP's scaled gradients: set by GradScaler.step
        groups = []
        for group in self.param_groups:
            if any(group.get(k) for k in _SHORT_PATH_OFF) or not group["fused"]:
                return None
            if not all(isinstance(v, float) for v in (group["lr"], *group["betas"])):
                return None
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                if p.device.type != "cpu" or p.grad.is_sparse or not p.is_floating_point():
                    return None
                if not self.state[p]:  # torch's lazy state, as its fused path makes it
                    self.state[p].update(
                        step=torch.zeros((), dtype=torch.float32, device=p.device),
                        exp_avg=torch.zeros_like(p, memory_format=torch.preserve_format),
                        exp_avg_sq=torch.zeros_like(p, memory_format=torch.preserve_format),
                    )
            groups.append((group, params))
        return groups

    def _fused_steps(self, groups: list[tuple[dict, list[Tensor]]]) -> None:
        for group, params in groups:
            if not params:
                continue
            dtypes = {p.dtype for p in params}
            for dtype in dtypes:  # the kernel takes one dtype a call, as torch groups them
                ps = params if len(dtypes) == 1 else [p for p in params if p.dtype == dtype]
                states = [self.state[p] for p in ps]
                steps = [s["step"] for s in states]
                torch._foreach_add_(steps, 1)
                torch._fused_adam_(
                    ps, [p.grad for p in ps], [s["exp_avg"] for s in states],
                    [s["exp_avg_sq"] for s in states], [], steps, amsgrad=False,
                    lr=group["lr"], beta1=group["betas"][0], beta2=group["betas"][1],
                    weight_decay=group["weight_decay"], eps=group["eps"],
                    maximize=group["maximize"], grad_scale=None, found_inf=None,
                )  # fmt: skip


def _adam_step() -> Callable:
    """torch's Adam.step without torch's hook wrapper (LeanAdam.step runs the hooks):
    the wrapper is put on Adam.step once any plain Adam is made."""
    adam_step = torch.optim.Adam.step
    return adam_step.__wrapped__ if getattr(adam_step, "hooked", False) else adam_step
