"""``Step(d_step_if=...)``: D steps only where a function of its step's view says so, as
the 3D-GAN trains D only while its accuracy is below 0.8 (xchhuang/simple-pytorch-3dgan's
``trainer.py``, ``reference.xchhuang_3dgan``), in float64."""

from __future__ import annotations

import re

import pytest
import torch
from helpers.wild import assert_losses, assert_same_sides, build, run_step
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.objectives import NS

Z_DIM, CUBE = 4, 8


class VoxelG(nn.Module):
    """Its net_G in small: z viewed as (n, z_dim, 1, 1, 1), transposed 3-D convolutions
    (BatchNorm3d, ReLU), a Sigmoid, the output squeezed: (n, 8, 8, 8) voxels."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose3d(Z_DIM, 8, 4, 1, 0, bias=False), nn.BatchNorm3d(8), nn.ReLU(True),
            nn.ConvTranspose3d(8, 1, 4, 2, 1, bias=False), nn.Sigmoid(),
        )  # fmt: skip

    def forward(self, x):
        return torch.squeeze(self.net(x.view(-1, Z_DIM, 1, 1, 1)))


class VoxelD(nn.Module):
    """Its net_D in small: the voxels viewed as (n, 1, 8, 8, 8), 3-D convolutions
    (BatchNorm3d, LeakyReLU(0.2)), a Sigmoid, the output squeezed: one score a sample."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv3d(1, 4, 4, 2, 1, bias=False), nn.BatchNorm3d(4), nn.LeakyReLU(0.2, True),
            nn.Conv3d(4, 1, 4, 1, 0, bias=False), nn.Sigmoid(),
        )  # fmt: skip

    def forward(self, x):
        return torch.squeeze(self.net(x.view(-1, 1, CUBE, CUBE, CUBE)))


def voxels(count: int):
    gen = torch.Generator().manual_seed(4)
    return [(torch.rand(6, CUBE, CUBE, CUBE, generator=gen, dtype=torch.float64) > 0.7).double()
            for _ in range(count)]  # fmt: skip


def generate_z(n: int):  # its generateZ: torch.Tensor(batch, z_dim).normal_(0, 0.33)
    return torch.empty(n, Z_DIM, dtype=torch.float64).normal_(0, 0.33)


def accuracy_below(threshold: float):
    """Its gate as a user writes it: D's accuracy on the step's real and fake scores (a
    probability >= 0.5 on the real batch, <= 0.5 on the fakes) below ``threshold``."""

    def gate(v):
        right = torch.cat((torch.ge(v.d_real, 0.5), torch.le(v.d_fake, 0.5))).float()
        return right.mean() < threshold

    return gate


def run(schedule=None, **options):
    """The script on one side, the Step on the other, z from torch's generator seeded
    alike: both sides and both logs."""
    theirs, ours = build(VoxelG, VoxelD)
    data = voxels(8)
    torch.manual_seed(1)
    G, D, opt_g, opt_d = theirs
    expected = reference.xchhuang_3dgan(G, D, opt_d, opt_g, data, generate_z)
    step = Step(*ours, objective=NS(probabilities=True),
                schedule=schedule or d_first(reuse_fake=False), latent=generate_z,
                **options)  # fmt: skip
    torch.manual_seed(1)
    return ours, theirs, run_step(step, data), expected


@pytest.mark.parametrize("d_order", ["real_first", "real_g_fake"])
def test_the_3dgan_as_written_equals_d_first_with_d_step_if(d_order):
    """trainer.py: D's step taken only while its accuracy is below 0.8 (its forwards run
    and BatchNorm's statistics move either way), G's on Z drawn anew: every parameter,
    statistic and Adam state equal to 1e-12, D's step skipped where the script's was.
    Its D runs on the real batch before G (``"real_g_fake"``); nothing else drawing,
    the default order draws the same Z."""
    ours, theirs, got, expected = run(d_step_if=accuracy_below(0.8), d_order=d_order)
    assert [r["d_step"] for r in got] == [r["d_step"] for r in expected]
    assert 0.0 in [r["d_step"] for r in got] and 1.0 in [r["d_step"] for r in got]
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)
    assert ours[3].state_dict()["state"][0]["step"].item() == sum(r["d_step"] for r in got)


def test_without_the_gate_d_steps_every_iteration_and_parts():
    """The check can fail: D stepping at every iteration is another update."""
    ours, theirs, got, _ = run()
    assert "d_step" not in got[0]
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)


def test_a_closed_gate_leaves_d_and_its_optimizer_untouched_in_g_first_too():
    """g_first's D step under a gate that always says no: D's parameters and Adam state
    as they were (its BatchNorm statistics moved by its forwards), G trained."""
    torch.manual_seed(0)
    G, D = VoxelG().double(), VoxelD().double()
    opt_d = torch.optim.Adam(D.parameters(), 0.01)
    before = [p.detach().clone() for p in D.parameters()]
    step = Step(G, D, torch.optim.Adam(G.parameters(), 0.01), opt_d,
                objective=NS(probabilities=True), schedule=g_first(), latent=generate_z,
                d_step_if=lambda v: False)  # fmt: skip
    logs = run_step(step, voxels(2))
    assert [r["d_step"] for r in logs] == [0.0, 0.0]
    assert all(torch.equal(p, q) for p, q in zip(D.parameters(), before, strict=True))
    assert opt_d.state_dict()["state"] == {}
    assert D.net[1].num_batches_tracked.item() > 0


@pytest.mark.parametrize(
    ("options", "words"),
    [({"schedule": simultaneous()}, "simultaneous() takes D's and G's gradients"),
     ({"accumulate": 2}, "accumulate=2 would decide per micro-batch"),
     ({"objective": NS(r1=1.0, r1_every=4)}, "steps D on its penalty")],
    ids=["simultaneous", "accumulate", "lazy-r1"],
)  # fmt: skip
def test_d_step_if_is_refused_where_d_steps_are_not_its_own(options, words):
    torch.manual_seed(0)
    G, D = VoxelG().double(), VoxelD().double()
    kwargs = {"objective": NS(probabilities=True), "schedule": d_first(), **options}
    with pytest.raises(ValueError, match=re.escape(words)):
        Step(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()),
             latent=generate_z, d_step_if=lambda v: True, **kwargs)  # fmt: skip


@given(st.one_of(st.integers(), st.text(), st.floats(), st.lists(st.integers())))
def test_d_step_if_must_be_a_function(value):
    torch.manual_seed(0)
    G, D = VoxelG().double(), VoxelD().double()
    with pytest.raises(TypeError, match="d_step_if must be a function of the D step's view"):
        Step(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()),
             objective=NS(probabilities=True), schedule=d_first(), latent=generate_z,
             d_step_if=value)  # fmt: skip


@pytest.mark.parametrize(("said", "error"), [
    (lambda v: v.d_real < 0.5, ValueError), (lambda v: "yes", None), (lambda v: object(), None),
], ids=["a tensor of six", "a string", "an object"])  # fmt: skip
def test_what_d_step_if_returns_is_read_as_a_bool_or_refused(said, error):
    """A tensor of several elements is refused by name (its truth is ambiguous); any
    Python value is read as Python reads it."""
    torch.manual_seed(0)
    G, D = VoxelG().double(), VoxelD().double()
    step = Step(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()),
                objective=NS(probabilities=True), schedule=d_first(), latent=generate_z,
                d_step_if=said)  # fmt: skip
    if error is None:
        assert step(voxels(1)[0])["d_step"].item() == 1.0
        return
    with pytest.raises(error, match=r"d_step_if must return a bool or a tensor of one element"):
        step(voxels(1)[0])


def test_d_step_if_is_refused_across_processes():
    """Each process could decide otherwise while D's gradients are averaged across them
    (the check itself: a distributed Step needs a process group)."""
    from ganstep.engine.step_checks import check_d_step_if

    with pytest.raises(ValueError, match="each process could decide otherwise"):
        check_d_step_if(lambda v: True, d_first(), 1, True, NS())
    gate = accuracy_below(0.8)
    assert check_d_step_if(gate, d_first(), 1, False, NS()) is gate


def test_each_of_several_d_steps_is_decided_on_its_own():
    """With d_steps=2 the gate is asked at each D step, on that step's batch: D's Adam
    counts the steps it said yes to, and the logs hold the last D step's answer."""
    torch.manual_seed(0)
    G, D = VoxelG().double(), VoxelD().double()
    opt_d = torch.optim.Adam(D.parameters(), 0.01)
    answers = iter([True, False, False, True, True, False])
    step = Step(G, D, torch.optim.Adam(G.parameters(), 0.01), opt_d,
                objective=NS(probabilities=True), schedule=d_first(d_steps=2),
                latent=generate_z, d_step_if=lambda v: next(answers))  # fmt: skip
    data = voxels(6)
    logs = [step([data[i], data[i + 1]]) for i in (0, 2, 4)]
    assert [r["d_step"].item() for r in logs] == [0.0, 1.0, 0.0]
    assert opt_d.state_dict()["state"][0]["step"].item() == 3
