"""The trainer's EMA of G: after every step each parameter is decay * ema + (1 - decay)
* G's, the buffers (BatchNorm's running statistics) are G's, and so it goes on after a
checkpoint is loaded into a new Trainee (a resumed run)."""

from __future__ import annotations

import copy

import torch
from helpers import build_trainee

from ganstep.trainer.trainee import Trainee

DECAY = 0.9


def trainee() -> tuple[Trainee, object]:
    return build_trainee(data="digits", model="dcgan", width=4, batch_size=8, ema=DECAY, seed=1)


def steps_follow_the_textbook_ema(t: Trainee, data, n: int) -> None:
    for _ in range(n):
        expected = copy.deepcopy(t.ema)
        t.step(data.batch(8, t.data_gen))
        t.update_ema()
        with torch.no_grad():
            for e, g in zip(expected.parameters(), t.G.parameters(), strict=True):
                e.mul_(DECAY).add_(g, alpha=1 - DECAY)
        for (name, want), got in zip(expected.named_parameters(), t.ema.parameters(),
                                     strict=True):  # fmt: skip
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7, msg=name)
        buffers = list(t.G.named_buffers())
        assert buffers, "the test needs a G with buffers (BatchNorm)"
        for (name, want), got in zip(buffers, t.ema.buffers(), strict=True):
            assert torch.equal(got, want), name


def test_ema_follows_g_and_keeps_doing_so_after_a_checkpoint_is_loaded():
    t, data = trainee()
    steps_follow_the_textbook_ema(t, data, 3)
    again, _ = trainee()
    again.load_state_dict(t.state_dict())
    steps_follow_the_textbook_ema(again, data, 2)
    # the EMA moved away from G: the test compares two different things
    pairs = zip(again.ema.parameters(), again.G.parameters(), strict=True)
    assert any(not torch.equal(e, g) for e, g in pairs)
