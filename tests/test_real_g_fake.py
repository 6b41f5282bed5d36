"""``d_order="real_g_fake"``: a D step's fakes made after D's forward on the real batch,
as the PyTorch DCGAN example's and Udacity's GAN notebook's lines run. Where D's real
forward draws from the generator that z or G's forward draw from (Dropout), only this
order equals those loops (float64, against the sources' own loops)."""

from __future__ import annotations

import random

import pytest
import torch
from helpers import X_DIM, real_batches
from helpers.wild import assert_losses, assert_same_sides, run_step
from hypothesis import given
from hypothesis import strategies as st
from test_label_smoothing import Z_SIZE, UdacityD, notebook_run
from test_pytorch_gan_loops import WGANDiv
from torch import nn

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.objectives import NS, WGANGP


class UdacityG(nn.Module):
    """The notebook's Generator, narrow: leaky ReLUs with Dropout(0.3), tanh out."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(Z_SIZE, 8), nn.Linear(8, 16), nn.Linear(16, X_DIM)
        self.dropout = nn.Dropout(0.3)

    def forward(self, x):
        x = self.dropout(nn.functional.leaky_relu(self.fc1(x), 0.2))
        x = self.dropout(nn.functional.leaky_relu(self.fc2(x), 0.2))
        return torch.tanh(self.fc3(x))


def twins(make_g, make_d, lr=0.002):
    """Two identical (G, D, opt_g, opt_d) in float64: the loop's, the Step's."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = make_g().double(), make_d().double()
        made.append((G, D, torch.optim.Adam(G.parameters(), lr),
                     torch.optim.Adam(D.parameters(), lr)))  # fmt: skip
    return made


def largest_gap(a: nn.Module, b: nn.Module) -> float:
    return max((p - q).abs().max().item()
               for p, q in zip(a.parameters(), b.parameters(), strict=True))  # fmt: skip


def udacity(d_order: str):
    """The notebook's loop and the Step, both with its Dropout in G and D."""
    theirs, ours = twins(UdacityG, UdacityD)
    got, expected, step = notebook_run(theirs, ours, d_order=d_order)
    return ours, theirs, got, expected, step


def test_udacitys_notebook_with_its_dropout_equals_real_g_fake():
    """The notebook forwards D on the real batch, then G (its Dropout's masks), then D on
    the fakes: D's masks and G's are drawn in that order from one generator."""
    ours, theirs, got, expected, step = udacity("real_g_fake")
    assert step._steady is not None  # the calls after the first ran the steady path
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)


def test_udacitys_notebook_with_its_dropout_differs_with_fakes_first():
    """What the order changes: with G's fakes made first, G's masks come before D's."""
    ours, theirs, *_ = udacity("real_first")
    assert largest_gap(ours[1], theirs[1]) > 1e-6


def dcgan_g():
    return nn.Sequential(nn.ConvTranspose2d(4, 8, 4, 1, 0, bias=False), nn.BatchNorm2d(8),
                         nn.ReLU(True), nn.ConvTranspose2d(8, 1, 4, 2, 1, bias=False),
                         nn.Tanh())  # fmt: skip


class DropoutDCGAND(nn.Module):
    """The example's netD, narrow, with Dropout after its first block (as tutorials add
    it); a Sigmoid out, read by BCELoss."""

    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
                                  nn.Dropout(0.3), nn.Conv2d(8, 1, 4, 1, 0, bias=False),
                                  nn.Sigmoid())  # fmt: skip

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def images(count, n=6):
    gen = torch.Generator().manual_seed(3)
    return [torch.rand(n, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


@pytest.mark.parametrize("d_order", ["real_g_fake", "real_first"])
def test_the_dcgan_example_as_written_with_a_dropout_d(d_order):
    """pytorch/examples dcgan/main.py draws its noise with torch.randn after
    ``netD(real_cpu)``: with Dropout in netD, the real batch's masks come before z. Its G
    step reuses the D step's fakes (G's graph kept from inside D's step)."""
    theirs, ours = twins(dcgan_g, DropoutDCGAND, lr=2e-4)
    data = images(4)
    torch.manual_seed(1)
    expected = reference.pytorch_examples_dcgan(*theirs, data, nz=4)
    step = Step(*ours, objective=NS(probabilities=True), schedule=d_first(),
                latent=lambda n: torch.randn(n, 4, 1, 1, dtype=torch.float64),
                d_order=d_order)  # fmt: skip
    torch.manual_seed(1)
    fixed_noise = torch.randn(6, 4, 1, 1, dtype=torch.float64)
    got = []
    for i, real in enumerate(data):
        got.append({k: v.item() for k, v in step(real).items()})
        if i % 100 == 0:
            ours[0](fixed_noise)  # the sample grid, G in training mode
    if d_order == "real_first":
        assert largest_gap(ours[1], theirs[1]) > 1e-6
        return
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)


def dcgan_forks_run(objective: NS) -> tuple:
    """The DCGAN example with its label convention set to 0.9 and 0.1, as its forks set
    it, and ``objective``'s Step: both sides and both logs."""
    theirs, ours = twins(dcgan_g, DropoutDCGAND, lr=2e-4)
    data = images(4)
    torch.manual_seed(1)
    expected = reference.pytorch_examples_dcgan(*theirs, data, nz=4, real_label=0.9,
                                                fake_label=0.1)  # fmt: skip
    step = Step(*ours, objective=objective, schedule=d_first(), d_order="real_g_fake",
                latent=lambda n: torch.randn(n, 4, 1, 1, dtype=torch.float64))  # fmt: skip
    torch.manual_seed(1)
    fixed_noise = torch.randn(6, 4, 1, 1, dtype=torch.float64)
    got = [{k: v.item() for k, v in step(data[0]).items()}]
    ours[0](fixed_noise)  # the example's sample grid after its first batch, G training
    got += run_step(step, data[1:])
    return ours, theirs, got, expected


def test_the_dcgan_examples_forks_with_two_sided_label_smoothing():
    """dcgan/main.py with ``real_label = 0.9`` and ``fake_label = 0.1`` (two-sided label
    smoothing, as its forks write it): BCELoss against 0.9 on the real batch, 0.1 on the
    fakes, and 0.9 again in G's step (it fills ``real_label``): NS's fake_label and
    g_label. Without fake_label the Step parts (the check can fail)."""
    smoothed = dict(probabilities=True, real_label=0.9, g_label=0.9)
    ours, theirs, got, expected = dcgan_forks_run(NS(**smoothed, fake_label=0.1))
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)
    ours, theirs, _, _ = dcgan_forks_run(NS(**smoothed))
    assert largest_gap(ours[1], theirs[1]) > 1e-6


class BoltsD(nn.Module):
    """Lightning Bolts' DCGANDiscriminator, narrow: bias-free convolutions, BatchNorm
    after all but the first, LeakyReLU(0.2, inplace), a last convolution into a Sigmoid,
    ``.view(-1, 1).squeeze(1)``."""

    def __init__(self):
        super().__init__()
        self.disc = nn.Sequential(
            nn.Conv2d(1, 4, 4, 2, 1, bias=False), nn.Identity(), nn.LeakyReLU(0.2, True),
            nn.Conv2d(4, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.LeakyReLU(0.2, True),
            nn.Conv2d(8, 1, 2, 1, 0, bias=False), nn.Sigmoid(),
        )  # fmt: skip

    def forward(self, x):
        return self.disc(x).view(-1, 1).squeeze(1)


def bolts_run(schedule=None, **options) -> tuple:
    """Bolts' DCGAN step over 4 labelled batches and its Step (``schedule``, by default
    d_first(reuse_fake=False), ``options`` added), the noise from torch's generator
    seeded alike: both sides and both logs."""
    theirs, ours = twins(dcgan_g, BoltsD, lr=2e-4)
    labelled = [(x, torch.arange(len(x))) for x in images(4)]
    torch.manual_seed(2)
    G, D, opt_g, opt_d = theirs
    expected = reference.lightning_bolts_dcgan(G, D, opt_d, opt_g, labelled, latent_dim=4)
    step = Step(*ours, objective=NS(probabilities=True),
                schedule=schedule or d_first(reuse_fake=False),
                latent=lambda n: torch.randn(n, 4, 1, 1, dtype=torch.float64),
                **options)  # fmt: skip
    torch.manual_seed(2)
    return ours, theirs, run_step(step, [x for x, _ in labelled]), expected


def test_lightning_bolts_dcgan_equals_d_first_with_fresh_fakes_for_g():
    """Bolts' DCGAN (Lightning 1.x's automatic optimization, two optimizers): D's step on
    BCELoss of its Sigmoid on the real batch, then on fakes of noise drawn after it (G
    toggled off, the fakes not detached), G's on noise drawn anew with D toggled off:
    BatchNorm in both, every parameter, statistic and Adam state equal to 1e-12. Its D
    runs on the real batch before the noise is drawn (``d_order="real_g_fake"``); with
    nothing else drawing, the default order draws the same noise."""
    for options in ({}, {"d_order": "real_g_fake"}):
        ours, theirs, got, expected = bolts_run(**options)
        assert_same_sides(ours, theirs)
        assert_losses(got, expected)


def test_lightning_bolts_dcgan_reusing_ds_fakes_for_g_is_another_update():
    """The check can fail: G's step on the D step's fakes (d_first's default) is not
    Bolts' (its G step draws its noise anew and forwards G again)."""
    ours, theirs, _, _ = bolts_run(d_first())
    assert largest_gap(ours[0], theirs[0]) > 1e-6


def hand_loop(G, D, opt_g, opt_d, batches, latent, order: str):
    """The textbook loop with the D step's lines in the DCGAN example's order (D on the
    real batch, then z and G, then D on the fakes): ``g_first`` as Lightning's GAN example
    (z of G's step reused for D's), and simultaneous's D-only iteration (G steps every
    2nd, PyTorch-GAN's ``i % n_critic`` with the roles of its WGAN swapped)."""
    bce = nn.functional.binary_cross_entropy_with_logits

    def d_loss(out_real, out_fake):
        return bce(out_real, torch.ones_like(out_real)) + bce(out_fake, torch.zeros_like(out_fake))

    def g_loss(out):
        return bce(out, torch.ones_like(out))

    history = []
    for i, real in enumerate(batches):
        n, row = real.size(0), {}
        if order == "simultaneous" and (i + 1) % 2 == 0:
            # both steps at (g_t, d_t), as PyTorch-GAN: G's step on G(z), then D's own
            # forwards on the real batch and on the same fakes cut from G's graph
            opt_g.zero_grad()
            fake = G(latent(n))
            loss = g_loss(D(fake))
            loss.backward()
            opt_g.step()
            opt_d.zero_grad()
            loss_d = d_loss(D(real), D(fake.detach()))
            loss_d.backward()
            opt_d.step()
            history.append({"loss_d": loss_d.item(), "loss_g": loss.item()})
            continue
        z = None
        if order == "g_first":
            z = latent(n)
            opt_g.zero_grad()
            loss = g_loss(D(G(z)))
            loss.backward()
            opt_g.step()
            row["loss_g"] = loss.item()
        opt_d.zero_grad()
        out_real = D(real)
        z = latent(n) if z is None else z
        loss_d = d_loss(out_real, D(G(z).detach()))
        loss_d.backward()
        opt_d.step()
        row["loss_d"] = loss_d.item()
        history.append(row)
    return history


@pytest.mark.parametrize("order, schedule", [
    ("g_first", g_first(reuse_z=True)), ("simultaneous", simultaneous(g_every=2))])  # fmt: skip
def test_d_steps_of_other_orders_make_their_fakes_after_the_real_forward(order, schedule):
    """g_first's D step (z reused from G's step, G's Dropout masks drawn between D's) and
    simultaneous's D-only iterations; z drawn from torch's global generator."""
    theirs, ours = twins(UdacityG, UdacityD)
    reals = real_batches(4, dtype=torch.float64)
    latent = lambda n: torch.rand(n, Z_SIZE, dtype=torch.float64) * 2 - 1  # noqa: E731
    torch.manual_seed(7)
    expected = hand_loop(*theirs, reals, latent, order)
    step = Step(*ours, objective="ns", schedule=schedule, latent=latent, d_order="real_g_fake")
    torch.manual_seed(7)
    got = run_step(step, reals)
    assert_same_sides(ours, theirs)
    for mine, source in zip(got, expected, strict=True):
        assert_losses([mine], [source], tuple(source))


PURE_D_OPTIONS = {
    "concat_auto": dict(concat="auto"),
    "fake_pool": dict(fake_pool=3),
    "penalty_on_loss_forwards": dict(objective=WGANDiv()),
    "r1": dict(objective=NS(r1=1.0)),
    "lazy_r1": dict(objective=NS(r1=1.0, r1_every=2)),
}


@pytest.mark.parametrize("name", list(PURE_D_OPTIONS))
def test_with_a_pure_d_real_g_fake_computes_what_real_first_does(name):
    """Where D draws nothing, the order of its real forward and G's call changes nothing:
    the options that read D's fakes (a pool's swap, a penalty on the loss forwards'
    graph) take them as made after D's real forward, and concat="auto" (one D call on
    both batches) makes them first."""
    options = {"objective": "ns", **PURE_D_OPTIONS[name]}
    made = []
    for d_order in ("real_g_fake", "real_first"):
        torch.manual_seed(0)
        G, D = nn.Linear(Z_SIZE, X_DIM).double(), nn.Linear(X_DIM, 1).double()
        step = Step(G, D, torch.optim.Adam(G.parameters(), 0.01),
                    torch.optim.Adam(D.parameters(), 0.01), schedule=d_first(),
                    latent=lambda n: torch.randn(n, Z_SIZE, dtype=torch.float64),
                    d_order=d_order, **options)  # fmt: skip
        random.seed(1)  # the pool's draws
        torch.manual_seed(1)
        run_step(step, real_batches(4, dtype=torch.float64))
        if name == "concat_auto":
            assert step._steady is not None and step._steady.concat
        made.append([*G.parameters(), *D.parameters()])
    for a, b in zip(*made, strict=True):
        assert torch.equal(a, b)


class PenaltyFirst(WGANGP):
    """WGAN-GP whose penalty runs before D's loss forwards (DualGAN's order)."""

    penalty_at = "before"


@pytest.mark.parametrize("options, words", [
    (dict(concat=True), "concat=True forwards D once"),
    (dict(accumulate=2), "accumulate=2 draws z for the whole batch"),
    (dict(objective=PenaltyFirst()), "runs its penalty on the fakes before"),
])  # fmt: skip
def test_what_real_g_fake_cannot_do_is_refused_when_the_step_is_built(options, words):
    torch.manual_seed(0)
    G, D = nn.Linear(Z_SIZE, X_DIM), nn.Linear(X_DIM, 1)
    options = {"objective": "ns", **options}
    with pytest.raises(ValueError, match=f"d_order='real_g_fake' makes .*{words}"):
        Step(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()),
             schedule=d_first(), latent=lambda n: torch.randn(n, Z_SIZE), d_order="real_g_fake",
             **options)  # fmt: skip


@given(st.text(max_size=12).filter(lambda s: s not in ("real_first", "fake_first", "real_g_fake")))
def test_an_unknown_d_order_is_refused_naming_the_three(d_order):
    G, D = nn.Linear(Z_SIZE, X_DIM), nn.Linear(X_DIM, 1)
    with pytest.raises(ValueError, match="real_g_fake"):
        Step(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()),
             objective="ns", schedule=d_first(), latent=lambda n: torch.randn(n, Z_SIZE),
             d_order=d_order)  # fmt: skip
