"""Exact with the Ds people train: Dropout, spectral norm (both APIs), augmentation inside
D, BatchNorm; every schedule and option equals the loop written as the wild writes it
(parameters and buffers, spectral norm's u and v included), or is refused."""

from __future__ import annotations

import pytest
import torch
from helpers import flops, latent_stream, lazy_r1_sides, pass_costs
from helpers.impure import KINDS, X, make_d, make_projection_d
from helpers.wild import (
    CondG,
    PairD,
    Pix2PixG,
    assert_losses,
    assert_same,
    build,
    image_pairs,
    labelled_batches,
    pix2pix_step,
    run_step,
    streams,
)
from torch import nn
from torch.nn.utils import parametrizations

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.objectives import NS

Z, N, ITERATIONS = 3, 6, 4
IMPURE = [k for k in KINDS if k != "batchnorm"]  # draw random numbers or advance state


def sides(make_d_of, dtype=torch.float64):
    """Two identical (G, D, opt_g, opt_d), float64."""
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(Z, 8), nn.Tanh(), nn.Linear(8, X)).to(dtype)
        D = make_d_of().to(dtype)
        out.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.5, 0.9)),
                    torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.9))))  # fmt: skip
    return out


def real_batches(count: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(2)
    return [torch.randn(N, X, generator=gen, dtype=torch.float64) + 1 for _ in range(count)]


def assert_same_state(ours, theirs, buffers: bool = True) -> None:
    """G's and D's parameters, and (``buffers``) their buffers: running statistics,
    spectral norm's u and v (both APIs keep them as buffers)."""
    for a, b in ((ours[0], theirs[0]), (ours[1], theirs[1])):
        assert_same(a, b, buffers=buffers)


def run_both(kind, objective, schedule, loop, options, **step_options):
    theirs, ours = sides(lambda: make_d(kind))
    k = schedule.real_batches
    reals = real_batches(ITERATIONS * k)
    torch.manual_seed(7)  # Dropout, augmentation and WGAN-GP draw from the global generator
    expected = loop(*theirs, reals, latent_stream(Z), objective, **options)
    step = Step(*ours, objective=objective, schedule=schedule, latent=latent_stream(Z),
                **step_options)  # fmt: skip
    torch.manual_seed(7)
    got = [step(reals[i * k : (i + 1) * k] if k > 1 else reals[i]) for i in range(ITERATIONS)]
    got = [{key: value.item() for key, value in row.items()} for row in got]
    return ours, theirs, got, expected, step


CASES = [
    ("d_first", d_first(), reference.dcgan_example, {}),
    ("d_first_fresh_z", d_first(reuse_fake=False), reference.backward_memo_way1, {}),
    ("simultaneous", simultaneous(), reference.pytorch_gan_g_first, {}),
    ("g_first_reuse_z", g_first(reuse_z=True), reference.lightning_g_first, {}),
    ("d2_g2_reuse_fake", d_first(d_steps=2, g_steps=2), reference.textbook_loop,
     {"d_steps": 2, "g_steps": 2, "reuse": True}),
    ("g_first_g2_d2", g_first(g_steps=2, d_steps=2), reference.textbook_loop,
     {"order": "g_first", "d_steps": 2, "g_steps": 2}),
]  # fmt: skip


@pytest.mark.parametrize("objective", ["ns", "wgan_gp", "softmax"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("kind", KINDS)
def test_every_schedule_equals_its_loop_for_the_ds_people_train(kind, case, objective):
    _, schedule, loop, options = case
    ours, theirs, got, expected, step = run_both(kind, objective, schedule, loop, options)
    assert_losses(got, expected)
    # simultaneous merges D's two forwards on the fake batch for a BatchNorm D (the
    # parameters are equal, the running statistics are not: see the "loop" test below)
    merged = kind == "batchnorm" and case[0] == "simultaneous"
    assert_same_state(ours, theirs, buffers=not merged)
    assert ("as the loop's" in repr(step)) == (kind in IMPURE)


@pytest.mark.parametrize("objective", ["ns", "softmax"])
def test_batchnorm_d_with_the_loops_forwards_ends_with_the_loops_statistics(objective):
    ours, theirs, got, expected, _ = run_both(
        "batchnorm", objective, simultaneous(), reference.pytorch_gan_g_first, {},
        d_forwards="loop")  # fmt: skip
    assert_losses(got, expected)
    assert_same_state(ours, theirs, buffers=True)


@pytest.mark.parametrize("kind", IMPURE)
def test_merged_forwards_are_a_named_choice_that_equals_a_merging_loop(kind):
    """The SoftmaxGAN graph post's fix 3 takes D's and G's losses from one forward: for an
    impure D only d_forwards="merged" equals it, and the default (the loop's forwards) does
    not."""
    loop, options = reference.softmaxgan_graph_fix3, {}
    merged = run_both(kind, "softmax", simultaneous(d_every=2), loop, options,
                      d_forwards="merged")  # fmt: skip
    for ours, theirs in zip(merged[2], merged[3], strict=True):  # D steps every 2nd
        assert set(ours) >= set(theirs)
        assert_losses([ours], [theirs], tuple(theirs))
    assert_same_state(merged[0], merged[1])
    default = run_both(kind, "softmax", simultaneous(d_every=2), loop, options)
    diff = max((p - q).abs().max().item() for p, q in zip(
        default[0][1].parameters(), default[1][1].parameters(), strict=True))  # fmt: skip
    assert diff > 1e-8


@pytest.mark.parametrize("kind", IMPURE)
def test_merging_an_impure_d_differs_from_the_loop(kind):
    """The difference the default avoids (the issue's 7.9e-4 for Dropout)."""
    ours, theirs, *_ = run_both(kind, "ns", simultaneous(), reference.pytorch_gan_g_first, {},
                                d_forwards="merged")  # fmt: skip
    diff = max((p - q).abs().max().item() for p, q in zip(
        ours[1].parameters(), theirs[1].parameters(), strict=True))  # fmt: skip
    assert diff > 1e-8


@pytest.mark.parametrize("kind", IMPURE)
def test_the_fused_step_is_refused_for_an_impure_d_unless_merging_is_asked_for(kind):
    _, ours = sides(lambda: make_d(kind))
    step = Step(*ours, objective="ns", schedule=simultaneous(fused=True), latent=latent_stream(Z))
    before = [p.clone() for p in ours[1].parameters()]
    with pytest.raises(ValueError, match="d_forwards='merged'"):
        step(real_batches(1)[0])
    for p, q in zip(ours[1].parameters(), before, strict=True):
        assert torch.equal(p, q)  # refused before anything was updated
    merged = Step(*ours, objective="ns", schedule=simultaneous(fused=True),
                  latent=latent_stream(Z), d_forwards="merged")  # fmt: skip
    assert set(merged(real_batches(1)[0])) >= {"loss_d", "loss_g"}


@pytest.mark.parametrize("kind", ["mbstd", "center", "batchnorm"])
def test_a_d_that_mixes_samples_is_refused_by_fused_and_concat(kind):
    _, ours = sides(lambda: make_d(kind))
    real = real_batches(1)[0]
    for options in ({"schedule": simultaneous(fused=True)}, {"schedule": d_first(),
                                                             "concat": True}):  # fmt: skip
        with pytest.raises(ValueError, match="mix"):
            step = Step(*ours, objective="ns", latent=latent_stream(Z), **options)
            step(real)  # a mixing layer of no known type is found on the first call
    step = Step(*ours, objective="ns", schedule="d_first", latent=latent_stream(Z))
    step(real)
    assert "mixing (" in repr(step)


# -- the wild loops that forward D fake first -----------------------------------------


def patch_net(kind: str) -> nn.Module:
    """pix2pix's PatchGAN on cat(source, image), with spectral norm or Dropout."""
    conv = nn.Conv2d
    if kind == "spectral":
        layers = [parametrizations.spectral_norm(conv(2, 4, 4, 2, 1)), nn.LeakyReLU(0.2),
                  parametrizations.spectral_norm(conv(4, 1, 2, 1, 0))]  # fmt: skip
    else:
        layers = [conv(2, 4, 4, 2, 1), nn.LeakyReLU(0.2), nn.Dropout(0.3), conv(4, 1, 2, 1, 0)]
    return nn.Sequential(*layers)


@pytest.mark.parametrize("kind", ["spectral", "dropout"])
def test_pix2pix_with_a_spectral_norm_or_dropout_patch_gan(kind):
    theirs, ours = build(Pix2PixG, lambda: PairD(patch_net(kind)))
    pairs = image_pairs(ITERATIONS)
    torch.manual_seed(7)
    expected = reference.pix2pix(theirs[0], theirs[1].net, theirs[2], theirs[3], pairs)
    torch.manual_seed(7)
    got = run_step(pix2pix_step(ours), pairs)  # d_order="fake_first", as pix2pix
    assert_losses(got, expected, ("loss_d", "loss_g", "l1"))
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])
    real_first = build(Pix2PixG, lambda: PairD(patch_net(kind)))[1]
    torch.manual_seed(7)
    run_step(pix2pix_step(real_first, d_order="real_first"), pairs)
    diff = max((p - q).abs().max().item() for p, q in zip(
        real_first[1].parameters(), theirs[1].parameters(), strict=True))  # fmt: skip
    assert diff > 1e-8  # the order is what makes it exact


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.parametrize("kind", ["augment", "dropout", "spectral_old"])
def test_stylegan2_ada_phases_with_augmentation_inside_d_and_lazy_r1(kind, every):
    theirs, ours = lazy_r1_sides(
        lambda: nn.Sequential(nn.Linear(Z, 8), nn.Tanh(), nn.Linear(8, X)), lambda: make_d(kind),
        every)  # fmt: skip
    reals = real_batches(5)
    torch.manual_seed(7)
    expected = reference.stylegan2_r1(*theirs, reals, latent_stream(Z), r1=2.0, r1_every=every)
    step = Step(*ours, objective=NS(r1=2.0, r1_every=every), schedule=g_first(),
                latent=latent_stream(Z), d_order="fake_first")  # fmt: skip
    torch.manual_seed(7)
    got = [{k: v.item() for k, v in step(real).items()} for real in reals]
    assert_losses(got, expected)
    assert_same_state(ours, theirs)


def row_stream(make, total: int = 512):
    """A stream of rows drawn in advance: latent(n) takes the next n, so one draw of n
    equals k draws of n / k (BigGAN samples z per micro-batch, ganstep per batch)."""
    rows, at = make(total), 0

    def take(n):
        nonlocal at
        at += n
        return rows[at - n : at]

    return take


def biggan_streams():
    gz, gy = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
    latent = row_stream(lambda t: torch.randn(t, Z, generator=gz, dtype=torch.float64))
    labels = row_stream(lambda t: torch.randint(3, (t,), generator=gy))
    return latent, labels


@pytest.mark.parametrize("accumulate", [1, 2])
@pytest.mark.parametrize("kind", IMPURE)
def test_biggan_one_d_call_on_fake_then_real_with_accumulation(kind, accumulate):
    theirs, ours = build(lambda: CondG(False), lambda: make_projection_d(kind))
    batches = labelled_batches(2 * ITERATIONS)
    latent, labels = biggan_streams()
    torch.manual_seed(7)
    expected = reference.biggan_hinge(*theirs, batches, latent, labels, d_steps=2,
                                      accumulations=accumulate)  # fmt: skip
    latent, labels = biggan_streams()
    step = Step(*ours, objective="hinge", schedule=d_first(d_steps=2, reuse_fake=False),
                latent=latent, condition=labels, concat=True, d_order="fake_first",
                accumulate=accumulate)  # fmt: skip
    torch.manual_seed(7)
    assert_losses(run_step(step, list(step.feed(batches, iterations=ITERATIONS))), expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


@pytest.mark.parametrize("kind", IMPURE + ["batchnorm"])
def test_pytorch_gan_cgan_with_its_dropout_d_and_others(kind):
    """PyTorch-GAN's cgan D has Dropout(0.4): simultaneous() equals it as written."""
    theirs, ours = build(lambda: CondG(False), lambda: make_projection_d(kind))
    batches = labelled_batches(ITERATIONS)
    latent, labels = streams()
    torch.manual_seed(7)
    expected = reference.pytorch_gan_cgan(*theirs, batches, latent, labels)
    latent, labels = streams()
    step = Step(*ours, objective="lsgan", schedule=simultaneous(), latent=latent,
                condition=labels)  # fmt: skip
    torch.manual_seed(7)
    assert_losses(run_step(step, batches), expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1], buffers=kind != "batchnorm")


# -- passes ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["spectral", "dropout", "plain"])
def test_the_exact_step_pays_one_d_forward_more_for_an_impure_d(kind):
    """PyTorch-GAN's loop forwards D three times and computes D's weight gradients in
    G's step. For a pure D simultaneous saves a D forward on the fake batch and those
    weight gradients; for an impure D it keeps the loop's forwards and saves the
    weight gradients only."""
    theirs, ours = sides(lambda: make_d(kind))
    real = real_batches(1)[0]
    ref = flops(lambda: reference.pytorch_gan_g_first(*theirs, [real], latent_stream(Z)))
    step = Step(*ours, objective="ns", schedule="simultaneous", latent=latent_stream(Z))
    step.observe_d(real)
    got = flops(lambda: step(real))
    forward, weight_grads = pass_costs(make_d(kind).double(), real)
    assert ref - got == (forward + weight_grads if kind == "plain" else weight_grads)
