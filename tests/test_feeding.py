"""Feeding a Step: x, (x, y) and {"x", "y"} from a DataLoader, d_steps across epoch ends,
and an unconditional Step that never reads y as data."""

from __future__ import annotations

import pytest
import torch
from helpers.wild import (
    CondG,
    K,
    N,
    ProjectionD,
    X,
    Z,
    assert_same,
    build,
    labelled_batches,
    run_step,
    streams,
)
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from ganstep import Step, d_first


def test_an_unconditional_step_never_reads_y_as_data():
    (G, D, opt_g, opt_d), _ = build(lambda: nn.Linear(Z, X), lambda: nn.Linear(X, 1))
    latent, _ = streams()
    x, y = labelled_batches(1)[0]
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(d_steps=2), latent=latent)
    with pytest.raises(ValueError, match="differ in shape or dtype.*DataLoader"):
        step([x, y])
    one = Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent)
    with pytest.raises(ValueError, match="unconditional; pass x alone, or use step.feed"):
        one([x, y])
    with pytest.raises(ValueError, match="unconditional but the batch carries a condition"):
        one((x, y))
    with pytest.raises(ValueError, match=r"SGAN's\), pass a dict batch \{'x': x, 'label': y\}"):
        one((x, y))
    logs = one({"x": x, "label": y})  # labels beside x, for D's terms alone: trained on x
    assert set(logs) == {"loss_d", "loss_g"}


@pytest.mark.parametrize("kind", ["pairs", "dicts"])
def test_feed_from_a_dataloader_with_d_steps_and_epoch_ends(kind):
    """d_first(d_steps=5) from a loader of 3 batches an epoch: equal to the same batches
    given by hand, in the loader's order across epochs."""
    gen = torch.Generator().manual_seed(7)
    xs, ys = torch.randn(3 * N, X, dtype=torch.float64, generator=gen), torch.arange(3 * N) % K
    data = TensorDataset(xs, ys)
    loader = DataLoader(data, batch_size=N, shuffle=False)
    if kind == "dicts":
        loader = [{"x": a, "y": b} for a, b in loader]
    theirs, ours = build(lambda: CondG(False), lambda: ProjectionD(False))
    latent, _ = streams()
    step = Step(*ours, objective="hinge", schedule=d_first(d_steps=5), latent=latent,
                condition="real")  # fmt: skip
    fed = list(step.feed(loader, iterations=2))
    assert [len(items) for items in fed] == [5, 5]
    order = [b for items in fed for b in items]
    expected_order = [i % 3 for i in range(10)]
    for batch, i in zip(order, expected_order, strict=True):
        assert torch.equal(batch.x, xs[i * N : (i + 1) * N])
    run_step(step, fed)
    latent, _ = streams()
    by_hand = Step(*theirs, objective="hinge", schedule=d_first(d_steps=5), latent=latent,
                   condition="real")  # fmt: skip
    for items in fed:
        by_hand([(b.x, b.c) for b in items])
    assert_same(ours[1], theirs[1])
    # an unconditional step fed (x, y) takes x and drops y
    G, D = nn.Linear(Z, X).double(), nn.Linear(X, 1).double()
    plain = Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                 objective="ns", schedule="d_first", latent=latent)  # fmt: skip
    (first,) = list(plain.feed(DataLoader(data, batch_size=N), iterations=1))
    assert torch.equal(first.x, xs[:N]) and first.c is None


def _feed_rows(loader, calls: int) -> list[list[int]]:
    """The rows (first column of x) of each call ``feed`` makes from ``loader``."""
    G, D = nn.Linear(Z, X), nn.Linear(X, 1)
    step = Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                objective="ns", schedule=d_first(), latent=lambda n: torch.randn(n, Z))  # fmt: skip
    return [batch.x[:, 0].long().tolist() for batch in step.feed(loader, calls)]


@pytest.mark.parametrize("kind", ["resumable", "distributed_sampler"])
def test_feed_moves_a_loader_to_its_next_epoch_at_each_end(kind):
    """Before, feed restarted the loader without set_epoch: a ResumableLoader (or a
    DistributedSampler) repeated epoch 0's shuffle every epoch, where Lightning and
    Accelerate move it on. Now each epoch's order is the one set_epoch(e) gives."""
    from torch.utils.data import DistributedSampler

    from ganstep.adapters.resumable import ResumableLoader

    rows = torch.arange(8, dtype=torch.float32)[:, None].repeat(1, X)
    dataset = TensorDataset(rows)

    def make():
        if kind == "resumable":
            return ResumableLoader(dataset, batch_size=4, shuffle=True, seed=3)
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=3)
        return DataLoader(dataset, batch_size=4, sampler=sampler)

    fed = _feed_rows(make(), 6)  # three epochs of two batches
    expected = []
    for epoch in range(3):
        loader = make()
        (loader if kind == "resumable" else loader.sampler).set_epoch(epoch)
        expected += [x[:, 0].long().tolist() for (x,) in loader]
    assert fed == expected
    assert fed[0:2] != fed[2:4]  # the epochs' orders differ (seed 3): the check can fail
