"""Loss terms and d_scale: named, weighted terms of L_G and L_D read from the phase's
View (pix2pix's L1, ACGAN's auxiliary cross-entropy), equal to those loops in float64,
and never a D forward of their own."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import X_DIM, Z_DIM, Run, flops, latent_stream, real_batches
from helpers.wild import (
    ACGAND,
    ITERATIONS,
    CondG,
    K,
    N,
    PairD,
    Pix2PixG,
    ProjectionD,
    assert_losses,
    assert_same,
    assert_same_sides,
    build,
    image_pairs,
    labelled_batches,
    patch_net,
    pix2pix_step,
    run_step,
    streams,
)
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.objectives import ns
from ganstep.engine.views import ends_in_sigmoid, feature_matching
from ganstep.trainer.models import MLP


@pytest.mark.parametrize("batchnorm", [True, False], ids=["batchnormD", "plainD"])
def test_pix2pix_equals_d_first_with_an_image_condition_patch_d_and_l1(batchnorm):
    theirs, ours = build(Pix2PixG, lambda: PairD(patch_net(batchnorm)))
    pairs = image_pairs(ITERATIONS)
    expected = reference.pix2pix(theirs[0], theirs[1].net, theirs[2], theirs[3], pairs)
    got = run_step(pix2pix_step(ours), pairs)
    assert_losses(got, expected, ("loss_d", "loss_g", "l1"))
    assert_same(ours[0], theirs[0])  # G's BatchNorm ran once per iteration on both sides
    assert_same(ours[1], theirs[1])  # fake first on both sides: running statistics too


class ACGANG(nn.Module):
    """acgan.py's G in small: ``label_emb(labels) * noise``, a BatchNorm, a 1x8x8 image."""

    def __init__(self):
        super().__init__()
        self.label_emb = nn.Embedding(K, Z_DIM)
        self.net = nn.Sequential(nn.Linear(Z_DIM, 16), nn.BatchNorm1d(16, 0.8),
                                 nn.LeakyReLU(0.2), nn.Linear(16, 64), nn.Tanh(),
                                 nn.Unflatten(1, (1, 8, 8)))  # fmt: skip

    def forward(self, noise, labels):
        return self.net(torch.mul(self.label_emb(labels), noise))


class ACGANDAsWritten(nn.Module):
    """acgan.py's D in small: conv blocks with Dropout2d and BatchNorm, validity through
    a Sigmoid, the class through a Softmax; D(x) takes no label."""

    def __init__(self):
        super().__init__()
        self.conv_blocks = nn.Sequential(
            nn.Conv2d(1, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Dropout2d(0.25),
            nn.Conv2d(4, 8, 3, 2, 1), nn.LeakyReLU(0.2), nn.Dropout2d(0.25),
            nn.BatchNorm2d(8, 0.8),
        )  # fmt: skip
        self.adv_layer = nn.Sequential(nn.Linear(8 * 2 * 2, 1), nn.Sigmoid())
        self.aux_layer = nn.Sequential(nn.Linear(8 * 2 * 2, K), nn.Softmax(dim=1))

    def forward(self, img):
        out = self.conv_blocks(img).view(img.shape[0], -1)
        return self.adv_layer(out), self.aux_layer(out)


def acgan_images(count: int):
    gen = torch.Generator().manual_seed(3)
    return [(torch.rand(N, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1,
             torch.randint(K, (N,), generator=gen)) for _ in range(count)]  # fmt: skip


def acgan_step(side, latent, labels, objective=None, **kwargs) -> Step:
    def aux(which):
        return lambda v: F.cross_entropy(getattr(v, f"d_{which}")[1], getattr(v, which).c)

    return Step(*side, objective=objective or ns(probabilities=True), schedule=simultaneous(),
                latent=latent, condition=labels, d_conditional=False, d_scale=0.25,
                g_scale=0.5, g_terms={"aux": (0.5, aux("fake"))},
                d_terms={"aux_real": (0.25, aux("real")), "aux_fake": (0.25, aux("fake"))},
                **kwargs)  # fmt: skip


def test_pytorch_gan_acgan_as_written_equals_simultaneous_on_probabilities():
    """acgan.py as its author wrote it: numpy's draws (z, then labels), a D ending in a
    Sigmoid (BCELoss) and a Softmax (read by CrossEntropyLoss as logits), Dropout2d and
    BatchNorm in D. Parameters, BatchNorm statistics and Adam's state all equal."""
    theirs, ours = build(ACGANG, ACGANDAsWritten)
    batches = acgan_images(ITERATIONS)
    rng = np.random.RandomState(8)
    torch.manual_seed(5)  # Dropout2d's masks
    expected = reference.pytorch_gan_acgan(*theirs, batches, np.random.RandomState(8), Z_DIM, K)
    latent = lambda n: torch.from_numpy(rng.normal(0, 1, (n, Z_DIM)))  # noqa: E731
    labels = lambda n: torch.from_numpy(rng.randint(0, K, n)).long()  # noqa: E731
    torch.manual_seed(5)
    got = run_step(acgan_step(ours, latent, labels), batches)
    assert_losses(got, expected)
    assert {"aux", "aux_real", "aux_fake"} <= set(got[0])
    assert_same_sides(ours, theirs)


class SGANG(nn.Module):
    """sgan.py's G in small: unconditional, beside a label embedding it builds and never
    calls (its optimizer holds it; it never has a gradient)."""

    def __init__(self):
        super().__init__()
        self.label_emb = nn.Embedding(K, Z_DIM)
        self.net = ACGANG().net

    def forward(self, noise):
        return self.net(noise)


class SGAND(ACGANDAsWritten):
    """sgan.py's D in small: acgan.py's, its class head with one more class, the fakes'."""

    def __init__(self):
        super().__init__()
        self.aux_layer = nn.Sequential(nn.Linear(8 * 2 * 2, K + 1), nn.Softmax(dim=1))


def test_pytorch_gan_sgan_as_written_equals_simultaneous_with_the_labels_as_a_target():
    """sgan.py as its author wrote it: an unconditional G, D's class loss on the real
    batch to its labels and on the fakes to the extra class K. The labels reach D's terms
    as an extra target of a dict batch; parameters, BatchNorm statistics and Adam's state
    all equal, G's unused embedding untouched."""
    theirs, ours = build(SGANG, SGAND)
    batches = acgan_images(ITERATIONS)
    torch.manual_seed(5)  # Dropout2d's masks
    expected = reference.pytorch_gan_sgan(*theirs, batches, np.random.RandomState(8), Z_DIM, K)
    rng = np.random.RandomState(8)
    ce, fakes = F.cross_entropy, lambda v: torch.full((v.fake.n,), K)  # the extra class
    step = Step(*ours, objective=ns(probabilities=True), schedule=simultaneous(),
                latent=lambda n: torch.from_numpy(rng.normal(0, 1, (n, Z_DIM))), d_scale=0.25,
                d_terms={"aux_real": (0.25, lambda v: ce(v.d_real[1], v.real.extra["label"])),
                         "aux_fake": (0.25, lambda v: ce(v.d_fake[1], fakes(v)))})  # fmt: skip
    embedding = ours[0].label_emb.weight.detach().clone()
    torch.manual_seed(5)
    got = run_step(step, [{"x": x, "label": y} for x, y in batches])
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)
    assert torch.equal(ours[0].label_emb.weight, embedding)
    assert ours[2].state.get(ours[0].label_emb.weight) is None  # Adam never stepped it


def test_a_d_ending_in_a_sigmoid_is_refused_where_logits_are_read():
    _, ours = build(ACGANG, ACGANDAsWritten)
    latent, labels = (lambda n: torch.randn(n, Z_DIM, dtype=torch.float64),
                      lambda n: torch.randint(K, (n,)))  # fmt: skip
    batch = acgan_images(1)[0]
    for objective in ("ns", "minimax", "rsgan"):
        step = acgan_step(ours, latent, labels, objective=objective)
        with pytest.raises(ValueError, match="comes out of a sigmoid") as e:
            step(batch)
        fix = f"objectives.{objective}(probabilities=True)" if objective != "rsgan" else "Drop"
        assert fix in str(e.value)
    acgan_step(ours, latent, labels, objective="lsgan")(batch)  # an MSE on probabilities: as asked
    with pytest.raises(ValueError, match="probabilities must be True or False"):
        ns(probabilities=1)
    assert "probabilities=True" in repr(ns(probabilities=True))


def test_a_sigmoid_behind_reshapes_is_found_and_a_logit_is_not():
    x = torch.randn(4, 3, requires_grad=True)
    assert ends_in_sigmoid(torch.sigmoid(x).view(-1, 1).squeeze(1))  # the DCGAN example's D
    assert ends_in_sigmoid(nn.Sigmoid()(x)[:, :1].flatten())
    assert not ends_in_sigmoid(torch.sigmoid(x) * 2)
    assert not ends_in_sigmoid(x * 1.0)
    with torch.no_grad():
        assert not ends_in_sigmoid(torch.sigmoid(x))  # no graph: nothing to tell


def test_a_d_of_x_alone_in_a_conditional_step_is_named():
    """Before: ``TypeError: forward() takes 2 positional arguments but 3 were given`` from
    inside the first step."""
    _, ours = build(ACGANG, ACGANDAsWritten)
    latent, labels = (lambda n: torch.randn(n, Z_DIM, dtype=torch.float64),
                      lambda n: torch.randint(K, (n,)))  # fmt: skip
    with pytest.raises(ValueError, match="pass d_conditional=False") as e:
        Step(*ours, objective=ns(probabilities=True), schedule=simultaneous(), latent=latent,
             condition=labels)  # fmt: skip
    assert "takes x alone" in str(e.value) and "forward(img)" in str(e.value)
    cond_sides = build(lambda: CondG(False), lambda: ProjectionD(False))[0]
    with pytest.raises(ValueError, match="leave d_conditional=True"):
        Step(*cond_sides, objective="ns", schedule=simultaneous(), latent=latent,
             condition=labels, d_conditional=False)  # fmt: skip


def test_pix2pix_is_already_minimal_and_terms_add_no_d_forward():
    """pix2pix freezes D for G's step itself: d_first costs exactly what it does."""
    theirs, ours = build(Pix2PixG, lambda: PairD(patch_net()))
    pairs = image_pairs(1)
    ref = flops(lambda: reference.pix2pix(theirs[0], theirs[1].net, theirs[2], theirs[3], pairs))
    step = pix2pix_step(ours)
    step.observe_d(pairs[0])  # once, outside the measured step
    ours_flops = flops(lambda: step(pairs[0]))
    assert ours_flops == ref


@pytest.mark.parametrize("objective", ["ns", "hinge", "lsgan"])
def test_g_scale_scales_g_adversarial_loss_alone_fused_or_not(objective):
    """g_scale = 2 is the loop whose L_G is twice ganstep's (plain MSE for LSGAN): the same
    as a loop written with 2 * L_G; the fused step carries the factor into G's gradient."""
    runs = [Run(objective, batchnorm=False) for _ in range(3)]
    batches = real_batches(ITERATIONS)
    scaled = [
        Step(*r.models(), objective=objective, latent=r.latent, g_scale=2.0,
             schedule=simultaneous(fused=fused))
        for r, fused in zip(runs[:2], (False, True), strict=True)
    ]  # fmt: skip
    doubled = _TwiceG(objective)
    ref = Step(*runs[2].models(), objective=doubled, latent=runs[2].latent, schedule=simultaneous())
    logs = [run_step(s, batches) for s in (*scaled, ref)]
    assert_losses(logs[0], logs[2])
    assert_losses(logs[1], logs[2])
    for r in runs[:2]:
        assert_same(r.G, runs[2].G)
        assert_same(r.D, runs[2].D)


class _TwiceG:
    """An objective whose L_G is twice the named one's, written by hand."""

    def __new__(cls, name):
        from ganstep.engine.objectives import OBJECTIVES

        base = OBJECTIVES[name]

        class Twice(base):
            def g_loss(self, fake, real=None):
                loss, logs = super().g_loss(fake, real)
                return 2 * loss, logs

        return Twice()


@given(value=st.one_of(st.floats(max_value=0.0), st.just(float("inf")), st.just(float("nan"))))
def test_scales_must_be_positive_numbers(value):
    run = Run("ns", batchnorm=False)
    for name in ("d_scale", "g_scale"):
        if value == 0:
            continue  # a side may train on its terms alone (or wait for taming's disc_start)
        with pytest.raises(ValueError, match=f"{name} must be a (positive number|number >= 0)"):
            Step(*run.models(), objective="ns", schedule="d_first", latent=run.latent,
                 **{name: value})  # fmt: skip
        with pytest.raises(TypeError, match=f"{name} must be a number"):
            Step(*run.models(), objective="ns", schedule="d_first", latent=run.latent,
                 **{name: True})  # fmt: skip


def test_began_refuses_a_g_scale():
    run = Run("began", batchnorm=False)
    with pytest.raises(ValueError, match="g_scale would change it"):
        Step(*run.models(), objective="began", schedule="d_first", latent=run.latent, g_scale=2)


def test_an_unconditional_d_is_called_without_the_condition_it_never_sees():
    """d_conditional=False: G(z, y), D(x); calling D with y would fail on this D."""
    _, ours = build(lambda: CondG(False), lambda: ACGAND(False))
    latent, labels = streams()
    aux = lambda v: F.cross_entropy(v.d_fake[1], v.fake.c)  # noqa: E731
    step = Step(*ours, objective="ns", schedule=d_first(), latent=latent, condition=labels,
                d_conditional=False, g_terms={"aux": aux})  # fmt: skip
    logs = step(labelled_batches(1)[0])
    assert set(logs) >= {"loss_d", "loss_g", "aux"}
    with pytest.raises(TypeError, match="d_conditional must be True or False"):
        Step(*ours, objective="ns", schedule=d_first(), latent=latent, condition=labels,
             d_conditional=0)  # fmt: skip


class FeatureD(nn.Module):
    """D(x) -> (logit, features): improved-GAN's D with its intermediate layer out."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X_DIM, 8), nn.LeakyReLU(0.2))
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        h = self.body(x)
        return self.out(h).squeeze(1), h


def test_feature_matching_equals_improved_gan_loop_without_a_schedule_change():
    theirs, ours = build(lambda: MLP(Z_DIM, X_DIM, (8,)), FeatureD)
    batches = real_batches(ITERATIONS)
    expected = reference.feature_matching(*theirs, batches, latent_stream(Z_DIM))
    step = Step(*ours, objective="ns", schedule=d_first(reuse_fake=False), g_scale=0,
                latent=latent_stream(Z_DIM), g_terms={"fm": feature_matching()})  # fmt: skip
    got = run_step(step, batches)
    assert_losses(got, expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_a_g_term_reading_real_without_the_mark_says_how_to_ask_for_it():
    _, ours = build(lambda: MLP(Z_DIM, X_DIM, (8,)), FeatureD)
    unmarked = lambda v: (v.d_fake[1].mean(0) - v.d_real[1].mean(0)).square().mean()  # noqa: E731
    step = Step(*ours, objective="ns", schedule=d_first(), latent=latent_stream(Z_DIM),
                g_terms={"fm": unmarked})  # fmt: skip
    with pytest.raises(ValueError, match="reads_real"):
        step(real_batches(1)[0])


def test_a_name_in_both_g_terms_and_d_terms_is_refused():
    """One iteration's logs hold one value per name: a D term and a G term of the same
    name would log one and hide the other (StarGAN's two class losses)."""
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    with pytest.raises(ValueError, match=r"both name \['cls'\].*apart"):
        Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
             objective="ns", schedule="d_first", latent=torch.randn,
             g_terms={"cls": lambda v: v.fake.x.mean()},
             d_terms={"cls": lambda v: v.real.x.mean()})  # fmt: skip
