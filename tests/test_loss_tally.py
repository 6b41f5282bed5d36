"""The trainer's LossTally: its one-vector sums equal one running float32 sum per loss
to the last bit, it finds the first step with a NaN or infinite loss and names the
losses, and a tally rebuilt from a checkpoint's sums goes on as the one that was saved."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ganstep.trainer.loss_tally import LossTally, NonFiniteLoss

CPU = torch.device("cpu")
NAMES = ("loss_d", "gp", "loss_g", "score_real")
finite = st.floats(-1e6, 1e6, width=32)
any_value = st.one_of(finite, st.sampled_from([math.nan, math.inf, -math.inf]))
# a step logs some of the losses, in a fixed order (as the Step's dict does)
step_logs = st.lists(st.tuples(st.sampled_from(NAMES), finite), min_size=1, max_size=4)


def as_logs(pairs) -> dict[str, torch.Tensor]:
    return {name: torch.tensor(value, dtype=torch.float32) for name, value in dict(pairs).items()}


def running_sums(steps) -> tuple[dict, dict]:
    """The plain tally: one float32 sum per loss, added in step order."""
    sums, counts = {}, {}
    for logs in steps:
        for key, value in logs.items():
            sums[key] = sums.get(key, torch.zeros(())) + value
            counts[key] = counts.get(key, 0) + 1
    return sums, counts


@settings(max_examples=60, deadline=None)
@given(st.lists(step_logs, min_size=1, max_size=30), st.integers(0, 30))
def test_sums_counts_and_means_are_one_running_sum_per_loss(steps, cut):
    steps = [as_logs(s) for s in steps]
    tally = LossTally(CPU)
    for i, logs in enumerate(steps[:cut], 1):
        tally.add(logs, i)
    # a checkpoint here, and a tally rebuilt from it (a resumed run)
    tally = LossTally(CPU, tally.sums, tally.counts)
    for i, logs in enumerate(steps[cut:], cut + 1):
        tally.add(logs, i)
    sums, counts = running_sums(steps)
    assert tally.counts == counts
    assert list(tally.sums) == list(sums)
    for key, value in sums.items():
        assert torch.equal(tally.sums[key], value), key
    tally.check()
    means = tally.take_means()
    assert means == {k: round(v.item() / counts[k], 6) for k, v in sums.items()}
    assert tally.take_means() == {} and tally.sums == {} and tally.counts == {}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(NAMES), any_value), min_size=1, max_size=4),
                min_size=1, max_size=20))  # fmt: skip
def test_the_first_non_finite_step_and_its_losses_are_named(steps):
    steps = [as_logs(s) for s in steps]
    tally = LossTally(CPU)
    for i, logs in enumerate(steps, 1):
        tally.add(logs, i)
    bad_steps = [i for i, logs in enumerate(steps, 1)
                 if any(not math.isfinite(v.item()) for v in logs.values())]  # fmt: skip
    if not bad_steps:
        tally.check()
        return
    with pytest.raises(NonFiniteLoss) as caught:
        tally.check()
    message = str(caught.value)
    assert f"became NaN or infinite at step {bad_steps[0]}." in message
    named = message[message.index("(") + 1 : message.index(")")].split(", ")
    bad_keys = {k for logs in steps for k, v in logs.items() if not math.isfinite(v.item())}
    assert set(named) == bad_keys


def test_a_finite_step_after_a_bad_one_does_not_clear_it():
    tally = LossTally(CPU)
    tally.add({"loss_d": torch.tensor(1.0)}, 1)
    tally.add({"loss_d": torch.tensor(math.nan), "gp": torch.tensor(0.5)}, 2)
    tally.add({"loss_d": torch.tensor(1.0), "gp": torch.tensor(0.5)}, 3)
    with pytest.raises(NonFiniteLoss, match=r"\(loss_d\) became NaN or infinite at step 2\."):
        tally.check()
