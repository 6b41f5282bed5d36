"""Modern recipes as their authors wrote them: taming-transformers' VQGAN (a D that
waits for ``disc_start``: a weight that is a function of the iteration and 0 before;
G's adaptive weight; G's extra output, the codebook loss) and HiFi-GAN (a batch's extra
target, y_mel; feature matching that reads D on the real batch; sub-discriminators with
spectral norm) and MelGAN (feature matching against D's real features from D's step,
before D's update: reads_d_step_real). Also the iteration in terms and hooks, and checks
of weights and extras (float64)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import Run, real_batches
from helpers.wild import (
    assert_losses,
    assert_same,
    assert_same_sides,
    build,
    run_step,
)
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.views import reads_d_step_real, reads_real

N = 4  # batch


class TinyVQ(nn.Module):
    """A VQ autoencoder in small (taming's VQModel): G(x) = (xrec, qloss)."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Conv2d(1, 2, 3, 1, 1)
        self.codebook = nn.Embedding(4, 2)
        self.conv_out = nn.Conv2d(2, 1, 3, 1, 1)

    def forward(self, x):
        h = self.encoder(x)
        flat = h.permute(0, 2, 3, 1).reshape(-1, 2)
        index = torch.cdist(flat, self.codebook.weight).argmin(1)
        zq = self.codebook(index).view(h.shape[0], 8, 8, 2).permute(0, 3, 1, 2)
        qloss = 0.25 * F.mse_loss(zq.detach(), h) + F.mse_loss(zq, h.detach())
        zq = h + (zq - h).detach()  # straight through
        return self.conv_out(torch.relu(zq)), qloss


def patch_d():
    """taming's NLayerDiscriminator in small: a conv without bias before BatchNorm (as
    taming builds it), a 4x4 map of logits."""
    return nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1, bias=False), nn.BatchNorm2d(4), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 1, 3, 1, 1))  # fmt: skip


class Perceptual(nn.Module):
    """A fixed network in place of LPIPS: one value per sample, shaped (n, 1, 1, 1)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(11)
        self.net = nn.Sequential(nn.Conv2d(1, 3, 3, 1, 1), nn.Tanh()).double()
        self.requires_grad_(False).eval()

    def forward(self, x, y):
        return (self.net(x) - self.net(y)).square().mean((1, 2, 3), keepdim=True)


def images(count: int):
    gen = torch.Generator().manual_seed(4)
    return [torch.rand(N, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


def taming_step(side, perceptual, disc_start, codebook_weight=1.0) -> Step:
    """taming's VQGAN as a Step: its hinge D waiting for disc_start through d_scale, its
    G loss as terms (the adaptive weight reads the adversarial loss's own gradient, so
    the adversarial part is a term and g_scale is 0), the codebook loss read from G's
    extra output."""
    G = side[0]
    factor = lambda t: 1.0 if t >= disc_start else 0.0  # noqa: E731 (adopt_weight)

    def nll(v):
        x, xrec = v.real.x, v.fake.x
        return (torch.abs(x - xrec) + perceptual(x, xrec)).mean()

    def adaptive_gan(v):
        g_loss = -torch.mean(v.d_fake)
        last = G.conv_out.weight
        nll_grads = torch.autograd.grad(nll(v), last, retain_graph=True)[0]
        g_grads = torch.autograd.grad(g_loss, last, retain_graph=True)[0]
        d_weight = torch.clamp(nll_grads.norm() / (g_grads.norm() + 1e-4), 0.0, 1e4).detach()
        return d_weight * factor(v.iteration) * g_loss

    codebook = lambda v: v.fake.extra[0].mean()  # noqa: E731 (G's qloss)
    return Step(*side, objective="hinge", schedule=g_first(), latent=None, condition="real",
                d_conditional=False, d_scale=lambda t: 0.5 * factor(t), g_scale=0,
                g_terms={"nll": nll, "gan": adaptive_gan,
                         "codebook": (codebook_weight, codebook)})  # fmt: skip


@pytest.mark.parametrize("disc_start", [0, 2])
def test_taming_vqgan_equals_g_first_with_a_weight_that_waits(disc_start):
    """VQModel.training_step under Lightning 1.0's two-optimizer loop: before disc_start
    D's loss is 0 times the hinge and D's Adam still steps (its step count moves), as
    d_scale 0 does; G's adaptive weight and codebook loss as terms. Parameters, D's
    BatchNorm statistics and both Adams' states equal."""
    theirs, ours = build(TinyVQ, patch_d)
    batches = images(5)
    perceptual = Perceptual()
    expected = reference.taming_vqgan(*theirs, batches, perceptual, theirs[0].conv_out.weight,
                                      disc_start=disc_start, codebook_weight=0.5)  # fmt: skip
    step = taming_step(ours, perceptual, disc_start, codebook_weight=0.5)
    got = run_step(step, [(x, x) for x in batches])
    assert_losses(got, expected)
    assert [row["gan"] == 0 for row in got] == [t < disc_start for t in range(5)]
    assert_same_sides(ours, theirs)
    assert ours[3].state_dict()["state"][0]["step"].item() == 5  # D's Adam stepped from 0 on


def test_weights_read_the_iteration_and_hooks_may_too():
    run = Run("ns", batchnorm=False)
    seen, hooked = [], []

    def term(v):
        seen.append((v.phase, v.iteration))
        return v.fake.x.square().mean()

    step = Step(*run.models(), objective="ns", schedule=d_first(), latent=run.latent,
                g_scale=lambda t: [1.0, 0.0, 2.0][t], g_terms={"sq": (lambda t: t / 2, term)},
                after_step={"g": lambda G, t: hooked.append(t), "d": lambda D: None})  # fmt: skip
    logs = [step(b) for b in real_batches(3)]
    assert seen == [("G", 0), ("G", 1), ("G", 2)] and hooked == [0, 1, 2]
    assert logs[0]["sq"].item() == 0 and logs[2]["sq"].item() > 0


def test_a_zero_g_scale_is_a_g_trained_on_its_terms_alone():
    """g_scale = lambda t: 0 equals a loop whose G loss is its terms: the adversarial
    loss adds nothing, and D still steps on its own."""
    runs = [Run("ns", batchnorm=False) for _ in range(2)]
    term = {"sq": lambda v: (v.fake.x - 1).square().mean()}
    a = Step(*runs[0].models(), objective="ns", schedule=simultaneous(), latent=runs[0].latent,
             g_scale=lambda t: 0.0, g_terms=term)  # fmt: skip
    b = Step(*runs[1].models(), objective="ns", schedule=simultaneous(), latent=runs[1].latent,
             g_scale=0, g_terms=term)  # fmt: skip
    batches = real_batches(3)
    assert_losses(run_step(a, batches), run_step(b, batches))
    assert_same(runs[0].G, runs[1].G)
    assert_same(runs[0].D, runs[1].D)


@pytest.mark.parametrize("bad, error, message", [
    (lambda t: -1.0, ValueError, "d_scale at iteration 0 must be a number >= 0, got -1.0"),
    (lambda t: float("nan"), ValueError, "d_scale at iteration 0 must be a number >= 0"),
    (lambda t: "0.5", TypeError, "d_scale is a function of the iteration and must return a number"),
])  # fmt: skip
def test_a_weight_schedule_that_goes_wrong_is_named(bad, error, message):
    run = Run("ns", batchnorm=False)
    step = Step(*run.models(), objective="ns", schedule=d_first(), latent=run.latent,
                d_scale=bad)  # fmt: skip
    with pytest.raises(error, match=message):
        step(real_batches(1)[0])


@given(st.one_of(st.floats(max_value=-1e-9), st.just(float("inf")), st.text(max_size=3)))
def test_term_weights_are_numbers_or_functions(value):
    run = Run("ns", batchnorm=False)
    with pytest.raises((ValueError, TypeError), match="weight|fn or"):
        Step(*run.models(), objective="ns", schedule=d_first(), latent=run.latent,
             g_terms={"t": (value, lambda v: v.fake.x.mean())})  # fmt: skip


# -- extras ------------------------------------------------------------------------------


class MelG(nn.Module):
    """G(mel) -> (audio, an extra per-sample output): HiFi-GAN's shape of things."""

    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 4)

    def forward(self, mel):
        audio = self.net(mel)
        return audio, audio.abs().sum(1)


def test_terms_read_a_batchs_extra_targets_and_gs_extra_outputs_per_micro_batch():
    """HiFi-GAN's y_mel rides in the batch (a dict's other keys) and is split with it
    into micro-batches; G's extra output rides with its fakes; neither reaches G or D."""
    seen = []

    def mel_loss(v):
        seen.append((v.real.extra["y_mel"].shape[0], v.fake.extra[0].shape))
        assert torch.equal(v.real.extra["y_mel"], v.real.x[:, :2] * 3)  # rows stay paired
        return F.l1_loss(v.fake.x[:, :2] * 3, v.real.extra["y_mel"]) + v.fake.extra[0].mean()

    (G, D, opt_g, opt_d), _ = build(MelG, lambda: nn.Linear(4, 1))
    step = Step(G, D, opt_g, opt_d, objective="lsgan", schedule=d_first(), latent=None,
                condition="real", d_conditional=False, accumulate=2,
                g_terms={"mel": (45.0, mel_loss)})  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    y = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    logs = step({"x": y, "c": torch.randn(6, 3, generator=gen, dtype=torch.float64),
                 "y_mel": y[:, :2] * 3})  # fmt: skip
    assert seen == [(3, (3,)), (3, (3,))] and logs["mel"] > 0
    with pytest.raises(ValueError, match="'y_mel' is \\(5, 2\\), but the batch has 6 samples"):
        step({"x": y, "c": y[:, :3], "y_mel": torch.zeros(5, 2, dtype=torch.float64)})


# -- HiFi-GAN ----------------------------------------------------------------------------


class SubD(nn.Module):
    """DiscriminatorS in small: conv1d layers whose outputs are the feature maps, the
    last one's flattened output the scores (a map per sample)."""

    def __init__(self, spectral: bool = False):
        super().__init__()
        norm = nn.utils.spectral_norm if spectral else (lambda m: m)
        self.convs = nn.ModuleList([norm(nn.Conv1d(1, 4, 5, 1, 2)), norm(nn.Conv1d(4, 4, 5, 2, 2))])
        self.conv_post = norm(nn.Conv1d(4, 1, 3, 1, 1))

    def forward(self, x):
        fmap = []
        for layer in self.convs:
            x = F.leaky_relu(layer(x), 0.1)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        return torch.flatten(x, 1, -1), fmap


class SubP(SubD):
    """DiscriminatorP in small: the audio folded by a period into 2-D, conv2d layers,
    the same feature maps and scores."""

    def __init__(self, period: int):
        nn.Module.__init__(self)
        self.period = period
        self.convs = nn.ModuleList([nn.Conv2d(1, 4, (3, 1), (2, 1), (1, 0))])
        self.conv_post = nn.Conv2d(4, 1, (3, 1), 1, (1, 0))

    def forward(self, x):
        b, c, t = x.shape
        return super().forward(x.view(b, c, t // self.period, self.period))


class Multi(nn.Module):
    """MultiPeriod/MultiScaleDiscriminator as HiFi-GAN calls them: d(y, y_hat), each
    sub-discriminator on the real batch then the fake one; the scale discriminator
    pools between its scales."""

    def __init__(self, discriminators, pools=()):
        super().__init__()
        self.discriminators = nn.ModuleList(discriminators)
        self.meanpools = nn.ModuleList(pools)

    def forward(self, y, y_hat):
        y_d_rs, y_d_gs, fmap_rs, fmap_gs = [], [], [], []
        for i, d in enumerate(self.discriminators):
            if i != 0 and self.meanpools:
                y, y_hat = self.meanpools[i - 1](y), self.meanpools[i - 1](y_hat)
            y_d_r, fmap_r = d(y)
            y_d_g, fmap_g = d(y_hat)
            y_d_rs.append(y_d_r)
            fmap_rs.append(fmap_r)
            y_d_gs.append(y_d_g)
            fmap_gs.append(fmap_g)
        return y_d_rs, y_d_gs, fmap_rs, fmap_gs


class HiFiD(nn.Module):
    """What a ganstep user writes for HiFi-GAN's two discriminators: D(y) returns
    (the scores of every sub-discriminator, their feature maps)."""

    def __init__(self):
        super().__init__()
        self.mpd = Multi([SubP(2), SubP(4)])
        self.msd = Multi([SubD(spectral=True), SubD()], [nn.AvgPool1d(4, 2, padding=2)])

    def forward(self, y):
        scores, fmaps = [], []
        for d in self.mpd.discriminators:
            s, f = d(y)
            scores.append(s)
            fmaps.append(f)
        for i, d in enumerate(self.msd.discriminators):
            if i != 0:
                y = self.msd.meanpools[i - 1](y)
            s, f = d(y)
            scores.append(s)
            fmaps.append(f)
        return scores, fmaps


class Vocoder(nn.Module):
    """G(mel) -> audio (n, 1, 16)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Unflatten(1, (1, 16)))

    def forward(self, mel):
        return self.net(mel)


def mel_spectrogram(audio):
    """A fixed stand-in for the mel transform: |frames| projected."""
    return audio.squeeze(1).unfold(1, 4, 4).abs().sum(2)


def speech(count: int):
    gen = torch.Generator().manual_seed(3)
    out = []
    for _ in range(count):
        y = torch.rand(N, 1, 16, generator=gen, dtype=torch.float64) * 2 - 1
        x = torch.randn(N, 6, generator=gen, dtype=torch.float64)
        out.append((x, y, mel_spectrogram(y)))
    return out


@reads_real
def hifigan_feature_loss(v):
    """HiFi-GAN's feature_loss on the view: D's feature maps on real (constants) and fake."""
    loss = 0
    for dr, dg in zip(v.d_real[1], v.d_fake[1], strict=True):
        for rl, gl in zip(dr, dg, strict=True):
            loss += torch.mean(torch.abs(rl - gl))
    return loss * 2


def test_hifigan_equals_d_first_with_an_extra_target_and_feature_matching():
    """train.py as written: y_mel rides in the batch, feature matching reads D on the
    real batch (reads_real), the least-squares losses summed over five
    sub-discriminators (one with spectral norm, whose power iterations run in HiFi-GAN's
    order per sub-discriminator: real, then fake). Parameters, buffers and AdamW's
    state equal."""
    adamw = lambda m: torch.optim.AdamW(m.parameters(), 0.01, betas=(0.8, 0.99))  # noqa: E731
    theirs, ours = ([G, D, adamw(G), adamw(D)] for G, D, _, _ in build(Vocoder, HiFiD))
    G, D = theirs[:2]
    batches = speech(4)
    expected = reference.hifigan(G, D.mpd, D.msd, *theirs[2:], batches, mel_spectrogram)
    step = Step(*ours, objective="lsgan", schedule=d_first(), latent=None, condition="real",
                d_conditional=False, d_map=True, d_scale=2, g_scale=2,
                g_terms={"fm": hifigan_feature_loss,
                         "mel": (45, lambda v: F.l1_loss(v.real.extra["y_mel"],
                                                         mel_spectrogram(v.fake.x)))})  # fmt: skip
    got = run_step(step, [{"x": y, "c": x, "y_mel": y_mel} for x, y, y_mel in batches])
    assert_losses(got, expected, ("loss_d", "loss_g", "mel"))
    assert_same_sides(ours, theirs)


def wn_conv(*args, **kwargs) -> nn.Module:
    """MelGAN's WNConv1d: a Conv1d under weight_norm, as mel2wav/modules.py builds it."""
    return nn.utils.weight_norm(nn.Conv1d(*args, **kwargs))


class MelNLayerD(nn.Module):
    """mel2wav's NLayerDiscriminator in small: a ModuleDict of layers, every layer's
    output returned, the score last."""

    def __init__(self):
        super().__init__()
        leaky = nn.LeakyReLU(0.2, True)
        self.model = nn.ModuleDict({
            "layer_0": nn.Sequential(nn.ReflectionPad1d(2), wn_conv(1, 2, 5), leaky),
            "layer_1": nn.Sequential(wn_conv(2, 4, 5, 2, 2), leaky),
            "layer_2": wn_conv(4, 1, 3, 1, 1),
        })  # fmt: skip

    def forward(self, x):
        results = []
        for _, layer in self.model.items():
            x = layer(x)
            results.append(x)
        return results


class MelD(nn.Module):
    """mel2wav's Discriminator: each scale's NLayerDiscriminator on the audio pooled
    between scales, a list per scale."""

    def __init__(self, num_D: int = 2):
        super().__init__()
        self.model = nn.ModuleDict({f"disc_{i}": MelNLayerD() for i in range(num_D)})
        self.downsample = nn.AvgPool1d(4, stride=2, padding=1, count_include_pad=False)

    def forward(self, x):
        results = []
        for _, disc in self.model.items():
            results.append(disc(x))
            x = self.downsample(x)
        return results


class ScoresAndFeatures(nn.Module):
    """What a ganstep user gives the Step for MelGAN's D: (each scale's score, each
    scale's features)."""

    def __init__(self, netD):
        super().__init__()
        self.netD = netD

    def forward(self, x):
        results = self.netD(x)
        return [r[-1] for r in results], [r[:-1] for r in results]


def melgan_feature_loss(wt: float):
    """train.py's loss_feat on the view: each scale's features on the fakes against D's
    on the real batch (from D's step: reads_d_step_real), weighted wt."""

    def loss(v):
        total = 0
        for fakes, reals in zip(v.d_fake[1], v.d_real[1], strict=True):
            for fake, real in zip(fakes, reals, strict=True):
                total += wt * F.l1_loss(fake, real.detach())
        return total

    return loss


def mel_to_audio() -> nn.Module:
    """G(mel) -> audio (n, 1, 16), its convolutions under weight_norm."""
    return nn.Sequential(wn_conv(6, 4, 3, 1, 1), nn.LeakyReLU(0.2), wn_conv(4, 4, 3, 1, 1),
                         nn.Tanh(), nn.Flatten(1), nn.Unflatten(1, (1, 16)))  # fmt: skip


def audio(count: int):
    gen = torch.Generator().manual_seed(5)
    return [torch.rand(N, 1, 16, generator=gen, dtype=torch.float64) * 2 - 1 for _ in range(count)]


@pytest.mark.parametrize("marked", ["reads_d_step_real", "reads_real"])
def test_melgan_equals_d_first_reading_d_steps_real_features(marked):
    """descriptinc/melgan-neurips' train.py as written: G's feature matching compares D's
    features on the fakes (at D's new weights) with ``D_real`` from D's step, before D's
    update. A term marked reads_d_step_real reads those: parameters, weight_norm's g and
    v, Adam's state and the losses equal, with one D forward fewer in G's step than
    reads_real, whose forward at D's new weights parts from the script."""
    theirs, ours = build(mel_to_audio, MelD)
    batches = audio(3)
    n_layers_D, num_D = 1, 2  # (wt = 1 / 2 * 4 / 2 = 1)
    expected = reference.descript_melgan(*theirs, batches, mel_stand_in,
                                         n_layers_D=n_layers_D, num_D=num_D)  # fmt: skip
    mark = reads_d_step_real if marked == "reads_d_step_real" else reads_real
    wt = (1.0 / num_D) * (4.0 / (n_layers_D + 1))
    G, D, opt_g, opt_d = ours
    forwards = []
    D.register_forward_hook(lambda *_: forwards.append(1))
    step = Step(G, ScoresAndFeatures(D), opt_g, opt_d, objective="hinge", schedule=d_first(),
                latent=None, condition="real", d_conditional=False, d_order="fake_first",
                g_terms={"loss_feat": (10, mark(melgan_feature_loss(wt)))})  # fmt: skip
    calls = [{"x": x, "c": mel_stand_in(x)} for x in batches]
    got = run_step(step, calls[:1])  # (the first call observes D too)
    forwards.clear()
    got += run_step(step, calls[1:])
    if marked == "reads_real":  # D's real features at its new weights: not the script's
        with pytest.raises(AssertionError):
            assert_same_sides(ours, theirs)
        assert len(forwards) == 4 * (len(batches) - 1)
        return
    # D on the fakes and the real batch, then on the fakes for G: the script's three
    assert len(forwards) == 3 * (len(batches) - 1)
    # the Step logs each term weighted, and L_G with its terms: the script's (loss_G +
    # lambda_feat * loss_feat) that it backpropagates
    weighed = [{"loss_d": e["loss_d"], "loss_feat": 10 * e["loss_feat"],
                "loss_g": e["loss_g"] + 10 * e["loss_feat"]} for e in expected]  # fmt: skip
    assert_losses(got, weighed, ("loss_d", "loss_feat", "loss_g"))
    assert_same_sides(ours, theirs)


def mel_stand_in(audio):
    """A fixed stand-in for MelGAN's Audio2Mel: 6 bands of each 4-sample frame."""
    frames = audio.squeeze(1).unfold(1, 4, 4).abs()  # (n, 4 frames, 4 samples)
    bands = torch.cat([frames, frames.mean(2, keepdim=True), frames.amax(2, keepdim=True)], 2)
    return bands.transpose(1, 2)  # (n, 6 bands, 4 frames)


def melgan_step(side, schedule=None, **options) -> Step:
    G, D, opt_g, opt_d = side
    options = {"objective": "hinge", "latent": None, "condition": "real",
               "d_conditional": False, "d_order": "fake_first",
               "g_terms": {"feat": (10, reads_d_step_real(melgan_feature_loss(1.0)))},
               **options}  # fmt: skip
    return Step(G, ScoresAndFeatures(D), opt_g, opt_d, schedule=schedule or d_first(), **options)


def test_d_steps_real_outputs_pair_with_gs_micro_batches():
    """With accumulate=2 each of G's micro-batches reads D's step's output on its own
    rows: the same update as one batch (means over equal halves), to float64's rounding."""
    whole, halves = build(mel_to_audio, MelD)
    calls = [{"x": x, "c": mel_stand_in(x)} for x in audio(3)]
    run_step(melgan_step(whole), calls)
    run_step(melgan_step(halves, accumulate=2), calls)
    assert_same(whole[0], halves[0])
    assert_same(whole[1], halves[1])


@pytest.mark.parametrize(
    ("schedule", "options", "message"),
    [
        (g_first(), {}, "G's step comes first"),
        (simultaneous(), {"d_forwards": "loop"}, "G's step comes first"),
        (d_first(reuse_fake=False, d_steps=1, fresh_real=True), {}, "a real batch of its own"),
    ],
)  # fmt: skip
def test_reading_d_steps_real_output_without_a_d_step_before_g_raises(schedule, options, message):
    """G's step before D's (g_first; a simultaneous step forwarding D in a loop runs G's
    phase first) or on a real batch of its own (fresh_real) has no D step output on its
    batch: a ValueError says so, at every call."""
    side, _ = build(mel_to_audio, MelD)
    step = melgan_step(side, schedule, **options)
    calls = [{"x": x, "c": mel_stand_in(x)} for x in audio(2)]
    for call in calls:
        with pytest.raises(ValueError, match=message):
            step([call, call] if schedule.real_batches == 2 else call)


def test_reading_d_steps_real_output_in_a_joint_step_reads_the_shared_forward():
    """simultaneous(): both losses from one D forward on each batch, so D's step's real
    output is what G's term reads, whichever mark it has: the same update."""
    marked, fresh = build(mel_to_audio, MelD)
    calls = [{"x": x, "c": mel_stand_in(x)} for x in audio(3)]
    run_step(melgan_step(marked, simultaneous()), calls)
    run_step(melgan_step(fresh, simultaneous(), g_terms={
        "feat": (10, reads_real(melgan_feature_loss(1.0)))}), calls)  # fmt: skip
    assert_same_sides(marked, fresh)


@pytest.mark.parametrize("objective", ["rasgan", "rsgan"])
def test_reading_d_steps_real_output_beside_a_fresh_real_forward_is_refused(objective):
    """An objective whose L_G reads D's real scores forwards D on the real batch in G's
    phase; a term reading D's step's output beside it would read another: refused, as
    is a term marked reads_real beside one marked reads_d_step_real."""
    side, _ = build(mel_to_audio, MelD)
    with pytest.raises(ValueError, match="G's loss reads it from one place"):
        melgan_step(side, objective=objective)
    both = {"feat": (10, reads_d_step_real(melgan_feature_loss(1.0))),
            "fm": reads_real(melgan_feature_loss(1.0))}  # fmt: skip
    with pytest.raises(ValueError, match="a term marked reads_real reads it too"):
        melgan_step(side, g_terms=both)
