"""Argument checks shared by the public API: one rule, one message, each written once.

``what`` names the argument as the user wrote it (``"accumulate"``, ``"d_first: d_steps"``,
``"ns r1_every"``), so the message points at it.
"""

from __future__ import annotations

import math


def positive_int(value: object, what: str, maximum: int | None = None) -> int:
    """``value`` if it is an int >= 1 (not a bool) and at most ``maximum``; otherwise
    ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{what} must be at most {maximum:,}, got {value:,}")
    return value


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
