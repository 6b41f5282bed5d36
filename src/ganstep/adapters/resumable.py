"""A DataLoader whose place in the epoch travels with a checkpoint.

A fit resumed from a checkpoint written in the middle of an epoch is exact only if it
goes on with the batches the interrupted fit had not reached yet, in the same order.
A plain ``DataLoader(shuffle=True)`` draws each epoch's order from the global random
stream when it is iterated, and starts over from the epoch's first batch: a resumed
fit replays batches. :class:`ResumableLoader` takes each epoch's order from
``seed + epoch`` alone (as ``DistributedSampler`` does, whose order it keeps, so that a
process group shards it as Lightning's own sampler would) and reports how many of the
epoch's batches it has handed out (``state_dict``); loaded into a new loader
(``load_state_dict``), it skips them, by index, without loading them.

Iterating a DataLoader draws a seed for its worker processes from the global random
stream (or the loader's ``generator``), once per epoch; a resumed epoch does not draw
it again, so that the global stream (Dropout masks, ...) continues as it would have.
Its workers are seeded anew: random transforms inside worker processes do not continue
exactly in a resumed epoch (those in the main process, and without workers, do).

Lightning saves and restores the state of such a loader in its checkpoints by itself
(any loader with ``state_dict`` and ``load_state_dict``), and leaves its sampler in
place under data parallelism (it is a ``DistributedSampler``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from ..engine import distributed as data_parallel

__all__ = ["ResumableLoader", "ResumableSampler"]


class ResumableSampler(DistributedSampler):
    """``DistributedSampler``'s order (``seed + epoch``, padded or trimmed to a multiple
    of the processes, every process taking every ``world``-th index) with the process
    count and rank read when iterated, so that it can be built before the process group
    exists (a spawned fit), and a ``start``: the indices of this epoch to skip."""

    def __init__(self, dataset: Sized, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:  # fmt: skip
        # DistributedSampler.__init__ asks the process group for the rank at once
        self.dataset, self.shuffle, self.seed, self.drop_last = dataset, shuffle, seed, drop_last
        self.epoch = 0
        self.start = 0

    @property
    def num_replicas(self) -> int:  # type: ignore[override]
        return data_parallel.world_size()

    @property
    def rank(self) -> int:  # type: ignore[override]
        return data_parallel.rank()

    @property
    def num_samples(self) -> int:  # type: ignore[override]
        n, world = len(self.dataset), self.num_replicas
        if self.drop_last and n % world:
            return math.ceil((n - world) / world)
        return math.ceil(n / world)

    @property
    def total_size(self) -> int:  # type: ignore[override]
        return self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed + self.epoch)
            indices = torch.randperm(n, generator=gen).tolist()
        else:
            indices = list(range(n))
        total = self.total_size
        if total > n:  # pad with the first indices, repeated as often as needed
            indices += (indices * math.ceil((total - n) / n))[: total - n]
        else:
            indices = indices[:total]
        return iter(indices[self.rank : total : self.num_replicas][self.start :])

    def __len__(self) -> int:
        return self.num_samples


class ResumableLoader(DataLoader):
    """A ``DataLoader`` over ``dataset`` in batches of ``batch_size`` whose position in
    the epoch is saved by ``state_dict()`` and continued after ``load_state_dict()``.

    Each epoch's order is a function of ``seed`` and the epoch (``set_epoch``, which
    Lightning calls at each epoch's start), not of the global random stream; under
    torch.distributed every process takes its own share of it. Other keyword arguments
    (``num_workers``, ``collate_fn``, ...) are the DataLoader's; ``sampler`` and
    ``batch_sampler`` are this loader's own.
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False, **kwargs: Any) -> None:  # fmt: skip
        for taken in ("sampler", "batch_sampler"):
            if taken in kwargs:
                raise ValueError(f"ResumableLoader chooses its own {taken}; leave it out")
        if not isinstance(dataset, Sized):
            raise TypeError("ResumableLoader needs a dataset with a length (a map-style dataset)")
        sampler = ResumableSampler(dataset, shuffle=shuffle, seed=seed)
        super().__init__(dataset, batch_size=batch_size, sampler=sampler, drop_last=drop_last,
                         **kwargs)  # fmt: skip
        self.seed = seed
        self._epoch = 0  # the epoch whose batches are being handed out
        self._taken = 0  # how many of them
        self._resume: dict | None = None  # a loaded position, for the epoch it names

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        # a generator: the order is drawn (and workers started) at the first batch, after
        # the trainer has set this epoch (Lightning iterates before it calls set_epoch)
        return self._batches()

    def _batches(self) -> Iterator[Any]:
        sampler = self.sampler
        skip = 0
        if self._resume is not None and self._resume["epoch"] == sampler.epoch:
            skip = self._resume["batches"]
        self._resume = None
        sampler.start = skip * self.batch_size
        self._epoch, self._taken = sampler.epoch, skip
        generator = self.generator
        if skip:  # the interrupted fit drew this epoch's worker seed from the global stream
            self.generator = torch.Generator().manual_seed(self.seed + sampler.epoch)
        try:
            batches = super().__iter__()
        finally:
            self.generator = generator
        for batch in batches:
            # the sampler has been iterated by now: the next pass over it starts at 0
            sampler.start = 0
            self._taken += 1
            yield batch
        sampler.start = 0

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch whose order the next iteration follows."""
        self.sampler.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        """Where this loader is: the epoch and how many of its batches it handed out."""
        return {"epoch": self._epoch, "batches": self._taken, "seed": self.seed,
                "batch_size": self.batch_size, "world": data_parallel.world_size(),
                "length": len(self.dataset)}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (from :meth:`state_dict`): the next iteration over the
        epoch it names skips the batches it had handed out."""
        same = {"seed": self.seed, "batch_size": self.batch_size,
                "world": data_parallel.world_size(), "length": len(self.dataset)}  # fmt: skip
        changed = [f"{k} {state.get(k)} -> {v}" for k, v in same.items() if state.get(k) != v]
        if changed:
            raise ValueError(
                "this loader's position was saved with other settings, so its batches would "
                f"not be the ones that followed ({', '.join(changed)}): resume with the same "
                "dataset, batch_size, seed and number of processes"
            )
        self._resume = {"epoch": int(state["epoch"]), "batches": int(state["batches"])}
        self._epoch, self._taken = self._resume["epoch"], self._resume["batches"]
