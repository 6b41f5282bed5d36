"""A batch carries its samples and the condition they are for, through every schedule.

A real batch is ``Batch(x, c)``: ``c`` is ``None`` (unconditional), a tensor with one
row per sample (labels, one-hot codes, source images) or a tuple of such. A fake batch
carries the condition it was made for, so that D judges it against that condition.
Schedules move batches and never look inside them; the phases call G and D with them.

Both may carry ``extra``, which neither G nor D is called with and loss terms read: a
real batch the other keys of a dict batch (``{"x": y, "c": mel, "y_mel": y_mel}``:
HiFi-GAN's target mel), a fake batch G's outputs after the first when G returns a
tuple (``(reconstruction, codebook_loss)``: VQGAN's).
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
    # A real batch's extra targets {name: tensor with n rows}; a fake batch's extra
    # outputs of G (a tuple). Read by loss terms only.
    extra: dict[str, Tensor] | tuple | None = None

    @property
    def n(self) -> int:
        return self.x.shape[0]

    def with_x(self, x: Tensor) -> Batch:
        """The same condition, latent and extras for other samples (an interpolated x)."""
        return Batch(x, self.c, self.z, self.extra)

    def rows(self, index: Tensor) -> Batch:
        """Some rows of the samples, their condition and latent (not the extras)."""
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
        if isinstance(self.extra, dict):
            for name, t in self.extra.items():
                if not isinstance(t, Tensor) or t.dim() == 0 or t.shape[0] != self.n:
                    shape = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
                    raise ValueError(
                        f"{what}: {name!r} is {shape}, but the batch has {self.n} samples; "
                        "an extra target of a batch needs one row per sample"
                    )


def split_rows(batch: Batch, sizes: list[int]) -> list[Batch]:
    """``batch`` as consecutive micro-batches of ``sizes`` rows."""
    xs = torch.split(batch.x, sizes)
    extras: list = [None] * len(sizes)
    if isinstance(batch.extra, dict):
        split_extra = {name: torch.split(t, sizes) for name, t in batch.extra.items()}
        extras = [{name: parts[i] for name, parts in split_extra.items()} for i in range(len(xs))]
    if batch.c is None:
        cs: list = [None] * len(sizes)
    elif isinstance(batch.c, Tensor):
        cs = list(torch.split(batch.c, sizes))
    else:
        parts = [torch.split(t, sizes) for t in batch.c]
        cs = [tuple(p[i] for p in parts) for i in range(len(xs))]
    return [Batch(x, c, extra=e) for x, c, e in zip(xs, cs, extras, strict=True)]


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
    raise TypeError(
        f"D returned a {type(out).__name__}; see ganstep.engine.views for what D may return"
    )


def to_batch(item: object, conditional: bool, what: str) -> Batch:
    """One real batch from what a user or a DataLoader gives: ``x``, ``(x, c)``,
    ``[x, c]`` (a DataLoader's default collation) or ``{"x": x, "y": c}`` (or ``"c"``),
    whose other keys are the batch's extra targets, read by loss terms as
    ``view.real.extra[key]``."""
    extra = None
    if isinstance(item, Batch):
        x, c, extra = item.x, item.c, item.extra
    elif isinstance(item, Tensor):
        x, c = item, None
    elif isinstance(item, dict):
        if "x" not in item:
            raise ValueError(f"{what}: a dict batch needs the key 'x' (and 'y' or 'c')")
        x, c = item["x"], item.get("y", item.get("c"))
        extra = {k: v for k, v in item.items() if k not in ("x", "y", "c")} or None
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
            "Pass x alone (step(x), or step.feed(loader), which drops y), build the Step "
            "with condition='real' (or a sampler) to train on y, or, for labels only D's "
            "terms read (SGAN's), pass a dict batch {'x': x, 'label': y}: its other keys "
            "are extra targets, view.real.extra['label']"
        )
    if isinstance(c, list):
        c = tuple(c)
    batch = Batch(x, c, extra=extra)
    batch.check(what)
    return batch
