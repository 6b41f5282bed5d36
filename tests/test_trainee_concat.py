"""The trainer runs D once on cat(real, fake) where that is the same math (a D that
treats each sample alone, no augmentation), and as two calls otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import build_trainee
from torch.testing import assert_close


def build(**overrides) -> tuple:
    return build_trainee(**{"batch_size": 16, "width": 8, **overrides})


@pytest.mark.parametrize(
    "overrides, concat",
    [
        ({}, True),  # the default run: an MLP D
        ({"data": "digits", "model": "dcgan", "objective": "wgan_gp"}, True),  # D without BN
        ({"data": "digits", "model": "dcgan"}, False),  # BatchNorm mixes the batch
        ({"data": "digits", "model": "dcgan", "objective": "wgan_gp", "augment": "diffaugment"},
         False),  # each input's augmentation draws its own numbers
    ],
)  # fmt: skip
def test_d_runs_once_on_real_and_fake_only_where_that_is_the_same_math(overrides, concat):
    trainee, data = build(**overrides)
    calls = []
    trainee.D.register_forward_hook(lambda module, args, out: calls.append(len(args[0])))
    trainee.step(data.batch(16, torch.Generator().manual_seed(0)))
    assert trainee.step.game.concat_d_calls() is concat
    # after the three forwards of D's first observation, the D step's first: on both
    # batches at once, or on the real batch alone (then R1's, WGAN-GP's and G's step's
    # forwards, of 16 each)
    assert calls[:3] == [16, 16, 16] and (calls[3] == 32) is concat
    assert 32 not in calls[4:]


def test_one_d_call_trains_as_two_do():
    """The default run's iterations, lazy R1 included, with D once on cat(real, fake)
    and with D called on each batch apart: the same parameters (up to float32's
    rounding of the longer matrix product)."""
    one, data = build(r1_every=2)
    two, _ = build(r1_every=2)
    two.step.game.options = replace(two.step.game.options, concat=False)
    gen = torch.Generator().manual_seed(3)
    for _ in range(6):
        real = data.batch(16, gen)
        logs_one, logs_two = one.step(real), two.step(real)
        assert one.step.game.concat_d_calls() and not two.step.game.concat_d_calls()
        assert set(logs_one) == set(logs_two)
        for key in logs_one:
            assert_close(logs_one[key], logs_two[key], msg=key)
    for model in ("G", "D"):
        pairs = zip(getattr(one, model).parameters(), getattr(two, model).parameters(),
                    strict=True)  # fmt: skip
        for a, b in pairs:
            assert_close(a, b, msg=model)
    assert not torch.equal(next(one.G.parameters()), next(build()[0].G.parameters()))
