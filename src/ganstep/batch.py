"""A batch carries its samples and the condition they are for, through every schedule.

A real batch is ``Batch(x, c)``: ``c`` is ``None`` (unconditional), a tensor with one
row per sample (labels, one-hot codes, source images) or a tuple of such. A fake batch
carries the condition it was made for, so that D judges it against that condition.
Schedules move batches and never look inside them; the phases call G and D with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

Condition = Tensor | tuple[Tensor, ...] | None


def _map(c: Condition, fn: Callable[[Tensor], Tensor]) -> Condition:
    if c is None:
        return None
    if isinstance(c, Tensor):
        return fn(c)
    return tuple(fn(t) for t in c)


def _tensors(c: Condition) -> list[Tensor]:
    if c is None:
        return []
    return [c] if isinstance(c, Tensor) else list(c)


@dataclass(frozen=True, eq=False)  # tensors have no single truth value to compare
class Batch:
    """Samples ``x`` (n rows) and their condition ``c`` (``None``, or n rows); a fake
    batch also carries the latent ``z`` it was made from (a tensor or a tuple, such as
    InfoGAN's ``(z, code)``), which loss terms may read."""

    x: Tensor
    c: Condition = None
    z: Condition = None

    @property
    def n(self) -> int:
        return self.x.shape[0]

    def with_x(self, x: Tensor) -> Batch:
        """The same condition (and latent) for other samples (a detached or interpolated x)."""
        return Batch(x, self.c, self.z)

    def rows(self, index: Tensor) -> Batch:
        pick = lambda t: t[index]  # noqa: E731
        return Batch(self.x[index], _map(self.c, pick), _map(self.z, pick))

    def check(self, what: str) -> None:
        """Raise ValueError unless every part of the condition has one row per sample."""
        for t in _tensors(self.c):
            if not isinstance(t, Tensor):
                raise TypeError(f"{what}: a condition must be a tensor or a tuple of tensors")
            if t.dim() == 0 or t.shape[0] != self.n:
                raise ValueError(
                    f"{what}: the condition has shape {tuple(t.shape)}, but the batch has "
                    f"{self.n} samples; a condition needs one row per sample"
                )


def split_rows(batch: Batch, sizes: list[int]) -> list[Batch]:
    """``batch`` as consecutive micro-batches of ``sizes`` rows."""
    xs = torch.split(batch.x, sizes)
    if batch.c is None:
        return [Batch(x) for x in xs]
    if isinstance(batch.c, Tensor):
        return [Batch(x, c) for x, c in zip(xs, torch.split(batch.c, sizes), strict=True)]
    parts = [torch.split(t, sizes) for t in batch.c]
    return [Batch(x, tuple(p[i] for p in parts)) for i, x in enumerate(xs)]


def cat(a: Batch, b: Batch) -> Batch:
    """``a`` then ``b`` as one batch (D's single call on real and fake, ``concat``)."""
    x = torch.cat([a.x, b.x.to(a.x.dtype)])
    if a.c is None:
        return Batch(x)
    if isinstance(a.c, Tensor):
        return Batch(x, torch.cat([a.c, b.c]))
    return Batch(x, tuple(torch.cat([s, t]) for s, t in zip(a.c, b.c, strict=True)))


def split(out: object, n: int) -> tuple[object, object]:
    """D's output on ``cat(a, b)`` as its outputs on ``a`` (first ``n`` rows) and ``b``."""
    if isinstance(out, Tensor):
        return out[:n], out[n:]
    if isinstance(out, tuple | list):
        halves = [split(o, n) for o in out]
        kind = type(out)
        return kind(h[0] for h in halves), kind(h[1] for h in halves)
    raise TypeError(f"D returned a {type(out).__name__}; see ganstep.views for what D may return")


def to_batch(item: object, conditional: bool, what: str) -> Batch:
    """One real batch from what a user or a DataLoader gives: ``x``, ``(x, c)``,
    ``[x, c]`` (a DataLoader's default collation) or ``{"x": x, "y": c}``."""
    if isinstance(item, Batch):
        x, c = item.x, item.c
    elif isinstance(item, Tensor):
        x, c = item, None
    elif isinstance(item, dict):
        if "x" not in item:
            raise ValueError(f"{what}: a dict batch needs the key 'x' (and 'y' or 'c')")
        x, c = item["x"], item.get("y", item.get("c"))
    elif isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], Tensor):
        x, c = item
    else:
        raise TypeError(
            f"{what}: a real batch is a tensor x, a pair (x, c) or a dict with 'x' and 'y'; "
            f"got {type(item).__name__}"
        )
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: x must be a tensor, got {type(x).__name__}")
    if conditional and c is None:
        raise ValueError(
            f"{what}: this Step is conditional, so a real batch is a pair (x, c) with the "
            "condition of each sample; got x alone"
        )
    if not conditional and c is not None:
        raise ValueError(
            f"{what}: this Step is unconditional but the batch carries a condition (x, y). "
            "Pass x alone (step(x), or step.feed(loader), which drops y), or build the Step "
            "with condition='real' (or a sampler) to train on y"
        )
    if isinstance(c, list):
        c = tuple(c)
    batch = Batch(x, c)
    batch.check(what)
    return batch
