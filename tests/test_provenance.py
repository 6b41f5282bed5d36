"""What the audit's Provenance calls G's fake batch: G's output through the loop's own
torch calls (noise added, an augmentation, a cast), and not a mix of it with data."""

from __future__ import annotations

import gc

import torch

from ganstep.tools.provenance import DATA, MADE, Provenance

G_CALL = object()  # stands for the recorder's record of one call of G


def follow(make):
    """Run ``make(fake, real)`` under a Provenance whose G output is ``fake``; return
    the sources of what it returns, in order, and what it returned."""
    fake, real = torch.randn(8, 2), torch.randn(8, 2)
    mode = Provenance(lambda t: G_CALL if t.untyped_storage().data_ptr() == ptr else None)
    ptr = fake.untyped_storage().data_ptr()
    with mode:
        mode.mark_data(real)  # D was given it as a real batch
        made = make(fake, real)
    return [mode.source(t) for t in made], made


def test_noise_an_augmentation_and_a_cast_keep_g_s_output_g_s():
    sources, _ = follow(lambda fake, real: [
        fake.detach() + 0.1 * torch.randn_like(fake),  # instance noise
        fake * (torch.rand(8, 1) + 0.5),  # a per-sample factor (smaller than G's part)
        torch.roll(fake, 1, dims=1).flip(0)[torch.randperm(8)],  # moved, drawn indices
        fake.to(torch.float64),  # a cast
        torch.where(torch.rand(8, 2) < 0.5, fake, torch.zeros_like(fake)),  # cutout
    ])  # fmt: skip
    assert sources == [G_CALL] * 5


def test_what_data_went_into_is_no_fake_batch():
    """Data (what D was given as real) makes data; with G's output, neither: D's input
    there is no fake batch (WGAN-GP's interpolates)."""
    sources, _ = follow(lambda fake, real: [
        real + 0.1 * torch.randn_like(real),  # the real batch's noise
        (alpha := torch.rand(8, 1)) * real + (1 - alpha) * fake.detach(),  # WGAN-GP's mix
        torch.cat([fake, real]),  # both batches in one (the recorder finds the rows)
        torch.randn_like(fake),  # a draw shaped like the fakes: noise
        torch.ones(8, 2),  # a constant made here
    ])  # fmt: skip
    assert sources == [DATA, None, None, MADE, MADE]


def test_g_s_output_joined_with_a_condition_past_the_batch_dimension_stays_g_s():
    """pix2pix (junyanz) gives D ``torch.cat((real_A, fake_B), 1)``: each fake sample
    with its source beside it, G's still (it was read as data, so D's step seemed to
    have no fake batch). Joined along the batch's dimension: rows of both, as before."""
    other = torch.randn(8, 3)  # unknown to the mode: a condition made before it
    sources, _ = follow(lambda fake, real: [
        torch.cat((real, fake), 1),  # the source first, as junyanz's backward_D
        torch.cat([fake.detach(), other], dim=-1),  # a condition after, a negative dim
        torch.cat((real, real), 1),  # data beside data: data
        torch.cat([fake, real]),  # rows of both (the recorder finds the rows)
        torch.cat((fake, fake * 2), 1),  # two of G's outputs: one call's, still G's
        torch.cat((fake[:4], real[:4]), 1),  # fewer rows: G's, its first four samples
    ])  # fmt: skip
    assert sources == [G_CALL, G_CALL, DATA, None, G_CALL, G_CALL]


def test_g_s_output_mixed_with_an_unknown_tensor_of_its_size_is_nobody_s():
    other = torch.randn(8, 2)  # made before the mode was on: the audit knows nothing of it
    sources, _ = follow(lambda fake, real: [fake + other, fake + other[:1]])
    assert sources == [None, G_CALL]  # one row broadcast is a factor, not a batch


def test_a_detached_view_outlives_the_tensor_it_was_made_from():
    """``(fake + noise).detach()``: the sum is gone, its storage held by the view."""
    fake, ptr = torch.randn(8, 2), None
    mode = Provenance(lambda t: G_CALL if t.untyped_storage().data_ptr() == ptr else None)
    ptr = fake.untyped_storage().data_ptr()
    with mode:
        view = (fake + torch.randn_like(fake)).detach()
    gc.collect()
    assert mode.source(view) == G_CALL


def test_a_tag_is_dropped_with_its_tensors():
    """The mode keeps no tensor alive: once every tensor tagged at an address is gone,
    the address (which the allocator may give another tensor) tells nothing."""
    fake, ptr = torch.randn(8, 2), None
    mode = Provenance(lambda t: G_CALL if t.untyped_storage().data_ptr() == ptr else None)
    ptr = fake.untyped_storage().data_ptr()
    with mode:
        noisy = fake + 1.0
    address = (noisy.device, noisy.untyped_storage().data_ptr())
    assert mode.source(noisy) == G_CALL and address in mode.tags
    del noisy
    gc.collect()
    stand_in = torch.randn(3)  # a tensor the test points at the old address's entry
    mode.tags[(stand_in.device, stand_in.untyped_storage().data_ptr())] = mode.tags.pop(address)
    assert mode.source(stand_in) is None  # the tagged tensor is gone: not G's


def test_a_tensor_made_on_a_tagged_storage_outside_torch_calls_keeps_its_tag():
    """PyTorch-GAN's ReplayBuffer returns ``Variable(torch.cat(rows))``: ``Variable``
    makes a tensor on the cat's storage without a torch call the mode sees, and the cat
    itself is gone at once; the pooled fakes are still G's (D's step on them read as a
    regularizer's step on data, so CycleGAN's D seemed never to see a fake)."""
    from torch.autograd import Variable

    def pooled(fake, real):
        rows = [torch.unsqueeze(row, 0) for row in fake.data]
        return [Variable(torch.cat(rows)), Variable(torch.cat([row.clone() for row in rows]))]

    sources, made = follow(pooled)
    gc.collect()
    assert sources == [G_CALL, G_CALL]


class Call:
    """A module call record as the recorder keeps them: its module's label, its place."""

    def __init__(self, label: str, seq: int) -> None:
        self.label, self.seq = label, seq


def test_rows_of_several_calls_of_one_module_are_its_latest_calls():
    """A pool of past fakes (CycleGAN's ImagePool, full) returns rows of this iteration's
    fakes beside rows of earlier ones: the joined batch is G's latest call's (it read as
    nobody's, so D's step on it seemed a step on data). Rows of two modules' calls, or
    with data, are not one module's."""
    old, new, other = Call("G", 1), Call("G", 5), Call("D", 6)
    by_storage: dict[int, Call] = {}
    latest = {"G": new, "D": other}
    mode = Provenance(lambda t: by_storage.get(t.untyped_storage().data_ptr()),
                      lambda call: latest[call.label])  # fmt: skip
    past, fresh, scores, real = (torch.randn(4, 2) for _ in range(4))
    for t, call in ((past, old), (fresh, new), (scores, other)):
        by_storage[t.untyped_storage().data_ptr()] = call
    with mode:
        mode.mark_data(real)
        pooled = torch.cat([past[:1].clone(), fresh[1:]])
        mixed = torch.cat([past[:2], scores[:2]])
        with_data = torch.cat([fresh[:2], real[:2]])
        rows_of_one = torch.cat([fresh[:2], fresh[2:]])
    assert mode.source(pooled) is new
    assert mode.source(mixed) is None and mode.source(with_data) is None
    assert mode.source(rows_of_one) is new
