"""Copies of a user's modules, whatever their forward left on them."""

from __future__ import annotations

import copy

from torch import Tensor, nn


def module_copy(module: nn.Module) -> nn.Module:
    """A deep copy of ``module``. A forward can leave a tensor of its graph on a module
    (torch.nn.utils.spectral_norm and weight_norm, the hook-based ones, set ``weight``
    so), which ``copy.deepcopy`` refuses; the copy holds it detached, as it would be
    after ``torch.no_grad()``, and the copy's own next forward sets it anew."""
    memo: dict[int, object] = {}
    for part in module.modules():
        for value in vars(part).values():
            if isinstance(value, Tensor) and value.grad_fn is not None:
                memo[id(value)] = value.detach().clone()
    return copy.deepcopy(module, memo)
