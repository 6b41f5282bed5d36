"""call_argument reads, from a script's source, the change a module call's own argument
made to a batch (an augmentation, instance noise): these calls are made here, in this
file, and read back from it as the audit reads a script's."""

from __future__ import annotations

import sys

import torch
from torch import nn

from ganstep.tools.call_argument import augmentation_at, written_over

policy, sigma = "color", 0.1


def DiffAugment(x, policy=""):  # noqa: N802 - named as data-efficient-gans names it
    return x + torch.rand(x.shape[0], 1)


class Seen(nn.Module):
    """A module that keeps, at each call, what augmentation_at reads at its caller."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list = []
        self.draws: list = []
        self.lines: list = []  # written_over's line at each call

    def forward(self, x):
        caller = sys._getframe(1)
        while caller.f_code.co_filename != __file__:
            caller = caller.f_back
        self.read.append(augmentation_at(caller, self.draws))
        self.lines.append(written_over(caller))
        return x

    def note(self) -> None:
        """The recorder's before_draw, by hand: the generator's state, and where this
        file's frames are."""
        frames, frame = [], sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == __file__:
                frames.append((id(frame), frame.f_lasti))
            frame = frame.f_back
        self.draws.append(([torch.random.get_rng_state()], tuple(frames)))

    def drawing(self, x):
        """An augmentation that notes its draw, as the recorder would."""
        self.note()
        return x + torch.rand(x.shape[0], 1)


def test_each_call_on_a_line_is_read_as_its_own():
    D = Seen()
    real, fake = torch.ones(4, 2), torch.zeros(4, 2, requires_grad=True)
    D(DiffAugment(real, policy=policy)), D(DiffAugment(fake.detach(), policy=policy))
    (real_read, before), (fake_read, after) = [r[:2] for r in D.read]
    assert real_read == fake_read == "lambda x: DiffAugment(x, policy=policy)"
    assert torch.equal(before, real) and torch.equal(after, fake)


def test_noise_names_the_batch_with_or_without_its_detach():
    D = Seen()
    real, fake = torch.ones(4, 2), torch.zeros(4, 2, requires_grad=True)
    D(fake.detach() + sigma * torch.randn_like(fake))
    x = real  # a script whose batch is called x: the template's name stays free
    D(x + sigma * torch.randn_like(x))
    assert [r[0] for r in D.read] == ["lambda x: x + sigma * torch.randn_like(x)"] * 2


def test_the_batch_itself_and_what_cannot_be_evaluated_again_are_not_read():
    D = Seen()
    real, fake = torch.ones(4, 2), torch.zeros(4, 2)
    D(real)
    D(fake.detach())
    D(torch.cat([real, fake]))  # the batch is a call: evaluating it again is not reading
    D(torch.flatten(iter([real]).__next__(), 1))
    assert D.read == [None] * 4


def test_the_generator_state_before_the_arguments_first_draw():
    """Where the audit noted the draws (the generator's state, where the script was),
    the state before the first draw made inside the call's argument: the augmentation's
    first, not a draw the script made before it."""
    D = Seen()

    torch.manual_seed(0)
    real = torch.ones(4, 2)
    D.note()
    torch.randn(3)  # z, drawn before the call
    start = torch.random.get_rng_state()
    D(D.drawing(real))
    (_, _, state) = D.read[0]
    assert torch.equal(state[0], start)


def test_a_change_assigned_to_a_name_before_the_call_is_read_with_its_draws():
    """``aug_real = D.drawing(real)`` and ``aug_fake = D.drawing(fake)`` on lines before
    ``D(aug_real)`` and ``D(aug_fake)``: each call reads its own assignment, and the
    state before that assignment's draw (the fakes' draw, assigned between, passed
    over)."""
    D = Seen()

    torch.manual_seed(0)
    real, fake = torch.ones(4, 2), torch.zeros(4, 2, requires_grad=True)
    D.note()
    torch.randn(3)  # z, drawn before the assignments
    before_real = torch.random.get_rng_state()
    aug_real = D.drawing(real)
    before_fake = torch.random.get_rng_state()
    aug_fake = D.drawing(fake.detach())
    D(aug_real), D(aug_fake)
    (real_read, real_value, real_state), (fake_read, fake_value, fake_state) = D.read
    assert real_read == fake_read == "lambda x: D.drawing(x)"
    assert torch.equal(real_value, real) and torch.equal(fake_value, fake)
    assert torch.equal(real_state[0], before_real) and torch.equal(fake_state[0], before_fake)


def test_a_batch_written_over_by_its_change_is_not_read_and_its_line_is_named():
    D = Seen()
    real = torch.ones(4, 2)
    real = DiffAugment(real, policy=policy)
    line = sys._getframe().f_lineno - 1
    D(real)
    assert D.read == [None] and D.lines == [line]
