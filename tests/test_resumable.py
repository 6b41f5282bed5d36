"""ganstep.adapters.resumable: ResumableLoader takes each epoch's order as torch's
DistributedSampler does (the source it stands in for), hands out the batches a plain
DataLoader over that sampler would, continues an epoch from its state, and draws from the
global stream exactly where a plain DataLoader does."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from ganstep.adapters.resumable import ResumableLoader, ResumableSampler
from ganstep.engine import distributed as data_parallel


def dataset(n: int) -> TensorDataset:
    return TensorDataset(torch.arange(n, dtype=torch.float64))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), world=st.integers(1, 4), epoch=st.integers(0, 3),
       shuffle=st.booleans(), drop_last=st.booleans(), seed=st.integers(0, 9))  # fmt: skip
def test_the_order_is_distributed_samplers_on_every_rank(n, world, epoch, shuffle, drop_last,
                                                          seed):  # fmt: skip
    for rank in range(world):
        theirs = DistributedSampler(dataset(n), world, rank, shuffle=shuffle, seed=seed,
                                    drop_last=drop_last)  # fmt: skip
        ours = ResumableSampler(dataset(n), shuffle=shuffle, seed=seed, drop_last=drop_last)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(data_parallel, "world_size", lambda w=world: w)
            mp.setattr(data_parallel, "rank", lambda r=rank: r)
            theirs.set_epoch(epoch)
            ours.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def batches(loader) -> list[torch.Tensor]:
    return [b[0] for b in loader]


@pytest.mark.parametrize("drop_last", [False, True])
def test_an_epoch_is_a_plain_dataloaders_over_that_sampler(drop_last):
    sampler = DistributedSampler(dataset(23), 1, 0, shuffle=True, seed=3)
    sampler.set_epoch(2)
    plain = DataLoader(dataset(23), batch_size=5, sampler=sampler, drop_last=drop_last)
    ours = ResumableLoader(dataset(23), batch_size=5, seed=3, drop_last=drop_last)
    ours.set_epoch(2)
    assert len(ours) == len(plain)
    for a, b in zip(batches(ours), batches(plain), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("taken", [0, 1, 3, 5])
def test_a_loaded_position_continues_the_epoch_and_the_global_stream(taken):
    """The interrupted loader drew the epoch's worker seed from the global stream when it
    started; the continued one does not draw it again. A new epoch draws, as a plain
    DataLoader's does."""
    first = ResumableLoader(dataset(23), batch_size=5, seed=3)
    first.set_epoch(1)
    torch.manual_seed(0)
    epoch = iter(first)
    head = [next(epoch)[0] for _ in range(taken)]
    state, rng = first.state_dict(), torch.get_rng_state()
    tail = [b[0] for b in epoch]
    after = torch.rand(3)

    second = ResumableLoader(dataset(23), batch_size=5, seed=3)
    second.load_state_dict(state)
    second.set_epoch(1)
    torch.set_rng_state(rng)
    rest = batches(second)
    assert len(head) + len(rest) == len(first)
    for a, b in zip(rest, tail, strict=True):
        assert torch.equal(a, b)
    assert torch.equal(torch.rand(3), after)
    assert second.state_dict()["batches"] == len(first)

    torch.manual_seed(1)
    plain = DataLoader(dataset(23), batch_size=5)
    iter(plain)
    expected = torch.rand(1)
    torch.manual_seed(1)
    next(iter(second))  # a new pass over epoch 1: from its first batch, drawing once
    assert second.state_dict()["batches"] == 1 and torch.equal(torch.rand(1), expected)


def test_a_position_in_another_epoch_is_not_applied():
    first = ResumableLoader(dataset(20), batch_size=5, seed=3)
    epoch = iter(first)
    next(epoch)
    second = ResumableLoader(dataset(20), batch_size=5, seed=3)
    second.load_state_dict(first.state_dict())  # epoch 0, one batch taken
    second.set_epoch(1)
    assert len(batches(second)) == 4


@pytest.mark.parametrize("taken", ["sampler", "batch_sampler"])
def test_a_sampler_of_ones_own_is_refused(taken):
    with pytest.raises(ValueError, match=f"own {taken}"):
        ResumableLoader(dataset(4), batch_size=2, **{taken: None})


def test_worker_processes_continue_the_epoch_too():
    first = ResumableLoader(dataset(30), batch_size=4, seed=1, num_workers=2)
    epoch = iter(first)
    head = [next(epoch)[0] for _ in range(3)]
    state = first.state_dict()
    tail = [b[0] for b in epoch]
    second = ResumableLoader(dataset(30), batch_size=4, seed=1, num_workers=2)
    second.load_state_dict(state)
    rest = batches(second)
    assert len(head) == 3 and len(rest) == len(tail) == len(first) - 3
    for a, b in zip(rest, tail, strict=True):
        assert torch.equal(a, b)
