"""Argument checks shared by the public API: one rule, one message, each written once.

``what`` names the argument as the user wrote it (``"accumulate"``, ``"d_first: d_steps"``,
``"ns r1_every"``), so the message points at it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
from torch import nn
from torch.nn.utils import parametrize

# A loss's factor: a number, or a function of the iteration (counting from 0) giving one.
Weight = float | Callable[[int], float]


def positive_int(value: object, what: str, maximum: int | None = None) -> int:
    """``value`` if it is an int >= 1 (not a bool) and at most ``maximum``; otherwise
    ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{what} must be at most {maximum:,}, got {value:,}")
    return value


def gradients_off(what: str) -> str:
    """What a training call made where autograd is off says (``what``: "the Step"): a
    loss without a graph would otherwise be blamed on the user's layers."""
    return (
        f"{what} was called with gradients disabled (inside torch.no_grad() or "
        "torch.inference_mode()): a training iteration backpropagates; call it outside "
        "that block (nothing was updated)"
    )


def inside_autocast(what: str, device_type: str) -> str:
    """What a training call made inside the user's ``torch.autocast`` says: autocast keeps
    each weight's cast copy until its outermost block ends, so a forward after an
    optimizer step in the same block reads the weights from before that step."""
    return (
        f"{what} was called inside torch.autocast({device_type!r}): autocast reuses each "
        "weight's cast copy until the block ends, so the forwards after an optimizer step "
        "would read the weights from before it; give the Step its precision instead "
        "(precision='bf16' or 'fp16': autocast in each phase) and call it outside that "
        "block (nothing was updated)"
    )


def parametrizations_cached(what: str) -> str:
    """What a training call made inside ``torch.nn.utils.parametrize.cached()`` says."""
    return (
        f"{what} was called inside torch.nn.utils.parametrize.cached(): it computes each "
        "parametrized weight (spectral_norm's, weight_norm's) once for the whole block, so "
        "the forwards after an optimizer step would read the weights from before it; call "
        "it outside that block (nothing was updated)"
    )


def parametrized(modules: Iterable[nn.Module]) -> bool:
    """Whether any of ``modules``, walked whole, has a parametrization."""
    return any(parametrize.is_parametrized(m) for module in modules for m in module.modules())


def refused_block(what: str, device_type: str, modules: Iterable[nn.Module]) -> str | None:
    """Why a training call of ``what`` made now would go wrong, naming the block it is
    made in (None where it is in none): autograd off, the caller's autocast on the
    models' device (``device_type``), or parametrize's cache over ``modules`` (a
    parametrization computed once per block). The last two keep a weight as it was
    before an optimizer step for the rest of the block."""
    if not torch.is_grad_enabled():
        return gradients_off(what)
    if torch.is_autocast_enabled(device_type):
        return inside_autocast(what, device_type)
    if getattr(parametrize, "_cache_enabled", 0) and parametrized(modules):
        return parametrizations_cached(what)
    return None


def flag(value: object, what: str, error: type[Exception] = ValueError) -> bool:
    """``value`` if it is True or False; otherwise ``error`` naming ``what``."""
    if not isinstance(value, bool):
        raise error(f"{what} must be True or False, got {value!r}")
    return value


def non_negative(value: object, what: str) -> float:
    """``value`` as a float if it is a number >= 0 (not a bool, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{what} must be a number >= 0, got {value!r}")
    return float(value)


def scale_factor(value: object, what: str, zero: bool = False) -> float:
    """``value`` as a float if it is a finite number > 0 (or 0, with ``zero``): a loss's
    factor or weight. TypeError for a non-number, ValueError for a bad number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number, got {value!r}")
    if not (math.isfinite(value) and (value > 0 or zero and value == 0)):
        kind = "a number >= 0" if zero else "a positive number"
        raise ValueError(f"{what} must be {kind}, got {value!r}")
    return float(value)


def weight(value: object, what: str, zero: bool = True) -> Weight:
    """A loss's factor as given: a number checked as :func:`scale_factor` checks it, or a
    callable ``w(iteration)``, whose values :func:`weight_at` checks as they come."""
    if callable(value) and not isinstance(value, bool | int | float):
        return value
    return scale_factor(value, what, zero=zero)


def weight_at(value: Weight, iteration: int, what: str) -> float:
    """The factor at ``iteration``: ``value`` itself, or what ``value(iteration)`` gives,
    checked (a finite number >= 0), so that a schedule's mistake names the weight."""
    if not callable(value):
        return value
    got = value(iteration)
    try:
        return scale_factor(got, f"{what} at iteration {iteration}", zero=True)
    except TypeError:
        raise TypeError(
            f"{what} is a function of the iteration and must return a number; at iteration "
            f"{iteration} it returned {got!r}"
        ) from None
