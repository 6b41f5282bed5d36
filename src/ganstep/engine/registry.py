"""Looking things up by name, with errors that list the valid choices."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def check_name(kind: str, name: str, choices: Iterable[str]) -> None:
    """Raise ValueError unless ``name`` is one of ``choices``, listing them."""
    choices = list(choices)
    if name not in choices:
        raise ValueError(f"unknown {kind} {name!r}; choose one of: {', '.join(choices)}")


def resolve(spec: str | T, registry: dict[str, type[T]], base: type[T], kind: str) -> T:
    """An instance of ``base`` from its registry name (default options), or ``spec`` itself."""
    if isinstance(spec, base):
        return spec
    if isinstance(spec, str):
        check_name(kind, spec, registry)
        return registry[spec]()
    raise TypeError(
        f"{kind} must be a name ({', '.join(registry)}) or a {base.__name__}, "
        f"got {type(spec).__name__}"
    )
