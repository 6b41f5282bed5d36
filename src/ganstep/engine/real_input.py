"""The input adapter of a Step: what one call takes (one real batch, or a list of one
per D step), checked and split into micro-batches, and the same from any DataLoader."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from torch import Tensor

from .batch import Batch, split_rows, to_batch
from .schedules import Schedule


def real_batches(real: object, schedule: Schedule, conditional: bool) -> list[Batch]:
    """The real batches of one call: one item, or a list of ``schedule.real_batches``
    items (any number but 0 for ``d_steps="each_batch"``), each as a :class:`Batch` (its
    condition read when ``conditional``)."""
    want = schedule.real_batches
    if want is None:  # d_steps="each_batch": a list, one D step for each of its items
        if not isinstance(real, list | tuple) or not real:
            got = f"a {type(real).__name__}" if not isinstance(real, list | tuple) else "none"
            raise ValueError(
                f"schedule {schedule!r} takes a list of real batches per step, one D step for "
                f"each (a list of one for one D step); got {got}"
            )
        items, want = list(real), len(real)
    else:
        items = _items(real, want, conditional)
    if len(items) != want:
        raise ValueError(
            f"schedule {schedule!r} takes {want} real batch(es) per step, "
            f"{_batches_for(schedule)}, as a list; got {len(items)}. "
            "step.feed(loader) yields them."
        )
    batches = [to_batch(item, conditional, f"real batch {i}") for i, item in enumerate(items)]
    if want > 1 and not conditional:
        kinds = {(tuple(b.x.shape[1:]), b.x.dtype) for b in batches}
        if len(kinds) > 1:
            raise ValueError(
                f"the {want} real batches of one step differ in shape or dtype ({kinds}): "
                "was a DataLoader's (x, y) passed as batches? use step.feed(loader)"
            )
    for b in batches:
        if b.x.dim() < 2 or b.x.shape[0] == 0:
            raise ValueError(
                "a real batch must have shape (n, ...) with n >= 1 and at least one "
                f"feature dimension, got {tuple(b.x.shape)}"
            )
    return batches


def _items(real: object, want: int, conditional: bool) -> list:
    """A call's real batches as given: ``real`` itself where one is wanted (an
    unconditional Step's list of 2 refused: a DataLoader's (x, y)), else its items."""
    if isinstance(real, list) and want == 1 and len(real) == 2 and not conditional:
        raise ValueError(
            "got a list of 2 for 1 D step: if it is a DataLoader's (x, y), this Step is "
            "unconditional; pass x alone, or use step.feed(loader), which drops y"
        )
    if isinstance(real, list) and not (want == 1 and len(real) == 2):
        return real
    return [real]


def micro_batches(batch: Batch, k: int) -> list[Batch]:
    """``batch`` as ``k`` equal micro-batches (``Step(accumulate=k)``)."""
    if batch.n % k:
        raise ValueError(
            f"accumulate={k} splits each real batch into {k} equal micro-batches; a batch "
            f"of {batch.n} rows does not divide by {k}"
        )
    return [batch] if k == 1 else split_rows(batch, [batch.n // k] * k)


def batch_of(item: object, conditional: bool) -> Batch:
    """What one D step takes from a loader's item (``x``, ``(x, y)`` or ``{"x": x,
    "y": y}``): the samples and, when ``conditional``, their condition; else y is dropped."""
    if conditional:
        return to_batch(item, True, "a batch from the loader")
    return Batch(_x_of(item))


def feed(
    loader: Iterable, iterations: int | None, per_call: int, take_one: Callable[[object], Batch]
) -> Iterator[object]:
    """``per_call`` items of ``loader`` per call (``take_one`` of each), for ``iterations``
    calls (forever if None), restarting ``loader`` at each epoch's end and, where the
    loader (or its sampler) has ``set_epoch``, moving it to the next epoch first: a
    DistributedSampler's or ResumableLoader's shuffle then differs per epoch, as under
    Lightning or Accelerate (a loader that counts its epochs itself is left to it)."""
    source, began = iter(loader), _epoch_of(loader)

    def take() -> object:
        nonlocal source, began
        try:
            item = next(source)
        except StopIteration:
            began = _next_epoch(loader, began)
            source = iter(loader)  # a new epoch
            try:
                item = next(source)
            except StopIteration:
                raise ValueError("the loader yields no batches") from None
        return take_one(item)

    done = 0
    while iterations is None or done < iterations:
        items = [take() for _ in range(per_call)]
        yield items[0] if per_call == 1 else items
        done += 1


def _epoch_of(loader: Iterable) -> int | None:
    """The epoch ``loader`` says it is in (Accelerate's ``iteration``, its sampler's
    ``epoch``), or None where it keeps no count."""
    for owner, name in ((loader, "iteration"), (getattr(loader, "sampler", None), "epoch")):
        value = getattr(owner, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _next_epoch(loader: Iterable, began: int | None) -> int | None:
    """Move ``loader`` from the epoch it ``began`` to the next one, unless it moved itself
    (Accelerate's loader does); return the epoch it is in now."""
    now = _epoch_of(loader)
    if now is not None and began is not None and now != began:
        return now  # it counted its epoch itself
    target = next((o for o in (loader, getattr(loader, "sampler", None))
                   if callable(getattr(o, "set_epoch", None))), None)  # fmt: skip
    if target is None:
        return now
    epoch = (began if began is not None else 0) + 1
    target.set_epoch(epoch)
    return epoch


def _batches_for(schedule: Schedule) -> str:
    """What each real batch of one call is for, in words."""
    d_steps = getattr(schedule, "d_steps", 1)
    if getattr(schedule, "fresh_real", False):
        g_steps = schedule.g_steps
        return (f"one per D step ({d_steps}) then one per G step ({g_steps}, fresh_real: G's "
                "loss reads a real batch of its own)")  # fmt: skip
    return "one per D step"


def _x_of(item: object) -> Tensor:
    """The samples of a loader's item, its condition dropped (an unconditional Step)."""
    if isinstance(item, Batch):
        return item.x
    if isinstance(item, dict) and "x" in item:
        return item["x"]
    if isinstance(item, tuple | list) and item and isinstance(item[0], Tensor):
        return item[0]
    if isinstance(item, Tensor):
        return item
    raise TypeError(
        f"a loader batch must be x, (x, y) or {{'x': x, ...}}, got {type(item).__name__}"
    )
