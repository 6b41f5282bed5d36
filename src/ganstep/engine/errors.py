"""Exceptions and warnings that ganstep raises for its users to catch or filter."""

from __future__ import annotations


class GanstepWarning(UserWarning):
    """Something the user should know about a run that still goes on (the command line
    prints these as one ``ganstep: warning:`` line)."""


class NonFiniteError(FloatingPointError):
    """A real batch or a loss was NaN or infinite (``Step(check_finite=True)``)."""
