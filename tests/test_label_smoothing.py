"""Label smoothing: ``NS(real_label=...)``, D's target for real samples below 1
(Salimans et al., 2016), as Udacity's GAN notebook writes it, ``NS(g_label=...)``,
G's target too, as rasbt's gan-conv-smoothing notebook writes it (float64), and
``fake_label``, D's target for the fakes (two-sided: the DCGAN example's forks, in
tests/test_real_g_fake.py; pytorch-CycleGAN-and-pix2pix's ``GANLoss`` with its target
labels set, for NS and LSGAN)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import X_DIM, real_batches
from helpers.wild import assert_losses, assert_same_sides, run_step
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.objectives import BGAN, LSGAN, NS, Minimax, Objective
from ganstep.tools.reference.other_codebases import GANLoss

Z_SIZE = 5


class UdacityD(nn.Module):
    """The notebook's Discriminator, narrow: leaky ReLUs with Dropout(0.3) between."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(X_DIM, 16), nn.Linear(16, 8), nn.Linear(8, 1)
        self.dropout = nn.Dropout(0.3)

    def forward(self, x):
        x = self.dropout(nn.functional.leaky_relu(self.fc1(x), 0.2))
        x = self.dropout(nn.functional.leaky_relu(self.fc2(x), 0.2))
        return self.fc3(x)


def sides():
    """Two identical (G, D, opt_g, opt_d) in float64. G has no Dropout, so the default
    d_order (G's fakes made before D's forwards) equals the notebook; with its G's
    Dropout too, d_order="real_g_fake" does (tests/test_real_g_fake.py)."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(Z_SIZE, 8), nn.LeakyReLU(0.2), nn.Linear(8, X_DIM),
                          nn.Tanh()).double()  # fmt: skip
        D = UdacityD().double()
        made.append((G, D, torch.optim.Adam(G.parameters(), 0.002),
                     torch.optim.Adam(D.parameters(), 0.002)))  # fmt: skip
    return made


def notebook_run(theirs, ours, **options) -> tuple[list, list, Step]:
    """The notebook's loop on ``theirs`` and its Step on ``ours`` (``options`` added):
    z from the same numpy draws, Dropout's masks from torch's generator seeded alike;
    the notebook rescales each batch itself (x * 2 - 1), the Step is given them
    rescaled. Each one's losses, and the Step."""
    reals = [x.sigmoid() for x in real_batches(5, dtype=torch.float64)]  # images in [0, 1)
    torch.manual_seed(7)
    expected = reference.udacity_gan_mnist(*theirs, reals, np.random.RandomState(3), Z_SIZE)
    rng = np.random.RandomState(3)
    latent = lambda n: torch.from_numpy(rng.uniform(-1, 1, size=(n, Z_SIZE)))  # noqa: E731
    step = Step(*ours, objective=NS(real_label=0.9), schedule=d_first(reuse_fake=False),
                latent=latent, **options)  # fmt: skip
    torch.manual_seed(7)
    return run_step(step, [x * 2 - 1 for x in reals]), expected, step


def test_real_label_equals_udacitys_gan_notebook():
    """The notebook's loop: BCEWithLogitsLoss against 0.9 on D's real scores, 0 on the
    fakes, 1 in G's step on fresh z (numpy's uniform), D's Dropout masks in its order."""
    theirs, ours = sides()
    got, expected, _ = notebook_run(theirs, ours)
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)


@pytest.mark.parametrize("schedule", [d_first(), g_first(), simultaneous()],
                         ids=["d_first", "g_first", "simultaneous"])  # fmt: skip
@pytest.mark.parametrize("probabilities", [False, True])
def test_real_label_moves_only_ds_real_term(schedule, probabilities):
    """L_D's real term is the BCE against the label, its fake term and L_G are NS's: the
    logged L_D is that sum, the logged L_G the plain NS one."""
    torch.manual_seed(0)
    G = nn.Linear(Z_SIZE, X_DIM).double()
    layers = [nn.Linear(X_DIM, 1), *([nn.Sigmoid()] if probabilities else [])]
    D = nn.Sequential(*layers).double()
    step = Step(G, D, torch.optim.SGD(G.parameters(), 0.0), torch.optim.SGD(D.parameters(), 0.0),
                objective=NS(real_label=0.8, probabilities=probabilities), schedule=schedule,
                latent=lambda n: torch.zeros(n, Z_SIZE, dtype=torch.float64))  # fmt: skip
    real = real_batches(1, dtype=torch.float64)[0]
    logs = step(real)
    with torch.no_grad():
        r, f = D(real).squeeze(1), D(G(torch.zeros(len(real), Z_SIZE, dtype=torch.float64)))
        if probabilities:
            bce = nn.functional.binary_cross_entropy
            want_d = bce(r, torch.full_like(r, 0.8)) + bce(f, torch.zeros_like(f))
            want_g = bce(f, torch.ones_like(f))
        else:
            bce = nn.functional.binary_cross_entropy_with_logits
            want_d = bce(r, torch.full_like(r, 0.8)) + bce(f, torch.zeros_like(f))
            want_g = bce(f, torch.ones_like(f))
    assert logs["loss_d"].item() == pytest.approx(want_d.item(), rel=1e-12)
    assert logs["loss_g"].item() == pytest.approx(want_g.item(), rel=1e-12)


def test_the_default_label_computes_what_ns_computed():
    """real_label=1.0 is NS as it was, bit for bit (its losses' ops are unchanged)."""
    r, f = torch.randn(8), torch.randn(8)
    assert torch.equal(NS().d_loss(r, f)[0], torch.nn.functional.softplus(-r).mean()
                       + torch.nn.functional.softplus(f).mean())  # fmt: skip
    assert repr(NS()) == "NS(r1=0.0, r1_every=1)"
    assert repr(Minimax(real_label=0.9)) == "Minimax(r1=0.0, r1_every=1, real_label=0.9)"


@given(st.one_of(st.floats(allow_nan=True), st.integers(), st.booleans(), st.text()))
def test_a_label_outside_0_to_1_is_refused_by_name(label):
    if not isinstance(label, bool) and isinstance(label, int | float) and 0 < label <= 1:
        assert NS(real_label=label).real_label == float(label)
        return
    with pytest.raises(ValueError, match=r"real_label \(D's target for real samples\)"):
        NS(real_label=label)


# --- G trained against the smoothed label too: NS(g_label=...) ---------------------------

LATENT, IMAGE = 5, (1, 4, 4)


class ConvSmoothingGAN(nn.Module):
    """rasbt's gan-conv-smoothing notebook's ``GAN``, narrow: G a bias-free Linear,
    BatchNorm1d, LeakyReLU(1e-4), a reshape and a transposed convolution into Tanh; D a
    bias-free convolution, BatchNorm2d, LeakyReLU(1e-4), Flatten and a Linear to one
    logit. Its ``discriminator_forward`` reads the notebook's global ``model``: here
    ``self``, the same module."""

    def __init__(self):
        super().__init__()
        self.generator = nn.Sequential(
            nn.Linear(LATENT, 16, bias=False), nn.BatchNorm1d(16), nn.LeakyReLU(1e-4),
            nn.Unflatten(1, (4, 2, 2)), nn.ConvTranspose2d(4, 1, 2, stride=2, bias=False),
            nn.Tanh(),
        )  # fmt: skip
        self.discriminator = nn.Sequential(
            nn.Conv2d(1, 4, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(4),
            nn.LeakyReLU(1e-4), nn.Flatten(), nn.Linear(16, 1),
        )  # fmt: skip

    def generator_forward(self, z):
        return self.generator(z)

    def discriminator_forward(self, img):
        return self.discriminator(img).view(-1)


def smoothing_models():
    """Two identical notebook models in float64, each with its Adam pair (lr 1e-4 there;
    1e-2 here, so that few iterations move the weights visibly)."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        model = ConvSmoothingGAN().double()
        made.append((model, torch.optim.Adam(model.generator.parameters(), lr=0.01),
                     torch.optim.Adam(model.discriminator.parameters(), lr=0.01)))  # fmt: skip
    return made


def smoothing_run(objective, **options) -> tuple:
    """The notebook's cell on one model and ``objective``'s Step (``options`` added) on
    the other, z from torch's generator seeded alike, over 4 batches of (images in
    [0, 1), labels). The Step is given the batches rescaled as the notebook rescales
    them."""
    (theirs, opt_g, opt_d), (ours, our_opt_g, our_opt_d) = smoothing_models()
    torch.manual_seed(1)
    pairs = [(torch.rand(6, *IMAGE, dtype=torch.float64), torch.randint(10, (6,)))
             for _ in range(4)]  # fmt: skip
    torch.manual_seed(5)
    expected = reference.rasbt_gan_conv_smoothing(theirs, opt_g, opt_d, pairs, LATENT, IMAGE)
    step = Step(
        ours.generator,
        ours.discriminator,
        our_opt_g,
        our_opt_d,
        objective=objective,
        schedule=simultaneous(),
        d_scale=0.5,
        **options,
        latent=lambda n: torch.zeros((n, LATENT), dtype=torch.float64).uniform_(-1, 1),
    )
    torch.manual_seed(5)
    got = run_step(step, [(x - 0.5) * 2.0 for x, _ in pairs])
    return (ours, our_opt_g, our_opt_d), (theirs, opt_g, opt_d), got, expected


SMOOTHED_BOTH = dict(real_label=0.9, g_label=0.9, bce_with_logits=True)


def test_g_label_equals_rasbts_gan_conv_smoothing_notebook():
    """Both steps against ``valid*0.9``, D's loss halved, G's step first and D's on its
    fakes (simultaneous), BatchNorm in G and D, D forwarded three times as the notebook
    does (``d_forwards="loop"``): every parameter, buffer and Adam state equal to 1e-12
    after 4 float64 iterations, and the logged losses."""
    ours, theirs, got, expected = smoothing_run(NS(**SMOOTHED_BOTH), d_forwards="loop")
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)


def test_g_label_with_ds_shared_forward_equals_the_notebooks_parameters():
    """By default the Step shares D's fake forward between G's loss and D's (BatchNorm
    reads its batch's statistics in training, not its running ones): the parameters
    and Adam states equal the notebook's, D's running statistics advance twice per
    iteration where the notebook's advance three times."""
    ours, theirs, got, expected = smoothing_run(NS(**SMOOTHED_BOTH))
    assert_same_sides([ours[0].generator, *ours[1:]], [theirs[0].generator, *theirs[1:]])
    for (name, mine), source in zip(ours[0].discriminator.named_parameters(),
                                    theirs[0].discriminator.parameters(), strict=True):  # fmt: skip
        assert torch.allclose(mine, source, rtol=0, atol=1e-12), name
    assert ours[0].discriminator[1].num_batches_tracked == 8  # notebook: 12
    assert theirs[0].discriminator[1].num_batches_tracked == 12
    assert_losses(got, expected)


def test_g_label_is_what_makes_the_notebook_equal():
    """The comparison can fail: with G's target left at 1 (one-sided smoothing, D's real
    target alone) the Step parts from the notebook."""
    ours, theirs, got, expected = smoothing_run(NS(real_label=0.9, bce_with_logits=True),
                                                d_forwards="loop")  # fmt: skip
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)


# NS's three forms of its losses
FORMS = pytest.mark.parametrize(
    "form", [{}, {"bce_with_logits": True}, {"probabilities": True}],
    ids=["softplus", "bce_with_logits", "probabilities"],
)  # fmt: skip


def scores_and_bce(form: dict) -> tuple:
    """D's real and fake scores as ``form`` reads them (probabilities, or logits), and the
    BCE torch computes on them against a target."""
    fake = torch.randn(7, 1, dtype=torch.float64)
    real = torch.randn(7, 1, dtype=torch.float64)
    if form.get("probabilities"):
        return real.sigmoid(), fake.sigmoid(), nn.functional.binary_cross_entropy
    return real, fake, nn.functional.binary_cross_entropy_with_logits


@FORMS
def test_g_label_moves_only_gs_loss(form):
    """L_G is the BCE of D's fake scores against g_label (BCELoss on probabilities); L_D
    is unchanged by it."""
    real, fake, bce = scores_and_bce(form)
    smoothed = NS(g_label=0.85, **form)
    want = bce(fake, torch.full_like(fake, 0.85))
    assert smoothed.g_loss(fake)[0].item() == pytest.approx(want.item(), rel=1e-14)
    assert torch.equal(smoothed.d_loss(real, fake)[0], NS(**form).d_loss(real, fake)[0])
    assert repr(smoothed).endswith("g_label=0.85)")


def test_fused_step_takes_g_labels_slope():
    """The fused simultaneous step computes G's gradient from D's through the slope
    ratio: with g_label it equals the unfused step (a wrong ratio would part them)."""
    from test_fused import assert_same_runs, run

    objective = NS(real_label=0.9, g_label=0.8)
    fused = run(objective, simultaneous(fused=True))
    assert_same_runs(fused, run(NS(real_label=0.9, g_label=0.8), simultaneous()))
    with pytest.raises(AssertionError):  # G's target makes a difference the runs see
        assert_same_runs(fused, run(NS(real_label=0.9), simultaneous()))


@pytest.mark.parametrize("objective", [Minimax, BGAN])
def test_a_g_loss_without_a_target_refuses_g_label(objective):
    with pytest.raises(ValueError, match="G loss has no target: g_label"):
        objective(g_label=0.9)
    assert objective(g_label=1.0).g_label == 1.0


@given(st.one_of(st.floats(allow_nan=True), st.integers(), st.booleans(), st.text()))
def test_a_g_label_outside_0_to_1_is_refused_by_name(label):
    if not isinstance(label, bool) and isinstance(label, int | float) and 0 < label <= 1:
        assert NS(g_label=label).g_label == float(label)
        return
    with pytest.raises(ValueError, match=r"g_label \(G's target for its fakes' scores\)"):
        NS(g_label=label)


# --- D's target for the fakes too: fake_label (two-sided label smoothing) --------------


@FORMS
def test_fake_label_moves_only_ds_fake_term(form):
    """L_D's fake term is the BCE of D's fake scores against fake_label (BCELoss on
    probabilities); its real term and L_G are unchanged by it; 0 computes what NS did."""
    real, fake, bce = scores_and_bce(form)
    smoothed = NS(real_label=0.9, fake_label=0.15, **form)
    want = bce(real, torch.full_like(real, 0.9)) + bce(fake, torch.full_like(fake, 0.15))
    assert smoothed.d_loss(real, fake)[0].item() == pytest.approx(want.item(), rel=1e-14)
    assert torch.equal(smoothed.g_loss(fake)[0], NS(**form).g_loss(fake)[0])
    assert torch.equal(NS(fake_label=0.0, **form).d_loss(real, fake)[0],
                       NS(**form).d_loss(real, fake)[0])  # fmt: skip
    assert "real_label=0.9" in repr(smoothed) and repr(smoothed).endswith("fake_label=0.15)")
    assert repr(Minimax(fake_label=0.1)) == "Minimax(r1=0.0, r1_every=1, fake_label=0.1)"


@pytest.mark.parametrize("mode", ["vanilla", "lsgan"])
def test_smoothed_targets_compute_cyclegan_and_pix2pixs_ganloss(mode):
    """pytorch-CycleGAN-and-pix2pix's GANLoss with its target labels set: D's loss
    ``(criterionGAN(pred_real, True) + criterionGAN(pred_fake, False)) * 0.5`` and G's
    ``criterionGAN(pred_fake, True)``, against NS and LSGAN with the same targets (G's
    the real label; LSGAN's losses halved, so its G loss scaled by 2 and its D loss the
    source's halved sum). GANLoss keeps its labels as float32 buffers: labels exact in
    float32 (0.875, 0.25) compare in float64 (0.9 there is 0.89999998)."""
    criterion = GANLoss(mode, target_real_label=0.875, target_fake_label=0.25)
    pred_real = torch.randn(5, 1, 3, 3, dtype=torch.float64)
    pred_fake = torch.randn(5, 1, 3, 3, dtype=torch.float64)
    loss_d = (criterion(pred_real, True) + criterion(pred_fake, False)) * 0.5
    loss_g = criterion(pred_fake, True)
    if mode == "vanilla":
        objective = NS(real_label=0.875, fake_label=0.25, g_label=0.875, bce_with_logits=True)
        d_scale, g_scale = 0.5, 1.0
    else:
        objective = LSGAN(real_label=0.875, fake_label=0.25, g_label=0.875)
        d_scale, g_scale = 1.0, 2.0
    got_d = d_scale * objective.d_loss(pred_real, pred_fake)[0]
    got_g = g_scale * objective.g_loss(pred_fake)[0]
    assert got_d.item() == pytest.approx(loss_d.item(), rel=1e-14)
    assert got_g.item() == pytest.approx(loss_g.item(), rel=1e-14)


def test_lsgans_default_targets_compute_what_lsgan_computed():
    """LSGAN(1, 0, 1) is lsgan as it was, bit for bit; the paper's (-1, 1, 0) coding its
    own losses."""
    real, fake = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    plain = 0.5 * (real - 1).square().mean() + 0.5 * fake.square().mean()
    assert torch.equal(LSGAN().d_loss(real, fake)[0], plain)
    assert torch.equal(LSGAN().g_loss(fake)[0], 0.5 * (fake - 1).square().mean())
    assert repr(LSGAN()) == "LSGAN(r1=0.0, r1_every=1)"
    coded = LSGAN(real_label=1, fake_label=-1, g_label=0)
    want = 0.5 * (real - 1).square().mean() + 0.5 * (fake + 1).square().mean()
    assert coded.d_loss(real, fake)[0].item() == pytest.approx(want.item(), rel=1e-14)
    assert coded.g_loss(fake)[0].item() == pytest.approx(0.5 * fake.square().mean().item())
    assert repr(coded) == "LSGAN(r1=0.0, r1_every=1, fake_label=-1.0, g_label=0.0)"


@pytest.mark.parametrize(
    "objective",
    [NS(real_label=0.9, fake_label=0.1, g_label=0.9), NS(fake_label=0.2), Minimax(fake_label=0.1),
     BGAN(fake_label=0.1), LSGAN(real_label=0.9, fake_label=0.1, g_label=0.9),
     LSGAN(real_label=1, fake_label=-1, g_label=0)],
    ids=["ns-both", "ns", "minimax", "bgan", "lsgan", "lsgan-coded"],
)  # fmt: skip
def test_fused_step_takes_the_fake_labels_slope(objective):
    """The fused simultaneous step's G gradient comes from D's through h_G' / h_D' at
    the fake scores, whose h_D' is sigmoid(s) - fake_label (s - fake_label for LSGAN):
    with D's fake target moved it equals the unfused step (a ratio that ignored it would
    part them: the runs see the target)."""
    from test_fused import assert_same_runs, run

    same = type(objective)(**{k: getattr(objective, k) for k in ("real_label", "fake_label",
                                                                 "g_label")})  # fmt: skip
    assert_same_runs(run(objective, simultaneous(fused=True)), run(same, simultaneous()))
    plain = {k: getattr(objective, k) for k in ("real_label", "g_label")}
    with pytest.raises(AssertionError):
        assert_same_runs(run(same, simultaneous()), run(type(objective)(**plain),
                                                        simultaneous()))  # fmt: skip


@given(st.one_of(st.floats(allow_nan=True), st.integers(), st.booleans(), st.text()))
def test_a_fake_label_outside_0_to_1_is_refused_by_name(label):
    if not isinstance(label, bool) and isinstance(label, int | float) and 0 <= label < 1:
        assert NS(fake_label=label).fake_label == float(label)
        return
    with pytest.raises(ValueError, match=r"fake_label \(D's target for fake samples\)"):
        NS(fake_label=label)


@given(st.sampled_from(["real_label", "fake_label", "g_label"]),
       st.one_of(st.floats(allow_nan=True), st.integers(), st.booleans(), st.text()))  # fmt: skip
def test_lsgans_targets_are_finite_numbers(name, label):
    options = {name: label}
    number = not isinstance(label, bool) and isinstance(label, int | float)
    if number and abs(label) <= torch.finfo(torch.float64).max:
        if name == "real_label" and label == 0 or name == "fake_label" and label == 1:
            with pytest.raises(ValueError, match="equal"):
                LSGAN(**options)
            return
        assert getattr(LSGAN(**options), name) == float(label)
        return
    with pytest.raises(ValueError, match=rf"lsgan {name} \(.*\) must be a finite number"):
        LSGAN(**options)


# --- labml.ai's GAN: smoothed labels drawn once, one per row, in the user's loss modules --


class LabmlLogits(Objective):
    """An objective of the user's (docs/loops.md#labml-gan): labml's two loss
    modules, as its experiment calls them, on the Step's scores."""

    name = "labml_logits"
    applies_sigmoid = True  # BCE with logits: a D ending in a sigmoid is refused

    def __init__(self, discriminator_loss: nn.Module, generator_loss: nn.Module) -> None:
        self.discriminator_loss, self.generator_loss = discriminator_loss, generator_loss

    # the Step reads D's (n, 1) logits as n scores; labml's labels are a column
    def d_loss(self, real, fake):
        loss_true, loss_false = self.discriminator_loss(real.view(-1, 1), fake.view(-1, 1))
        return loss_true + loss_false, {"true": loss_true.detach(), "false": loss_false.detach()}

    def g_loss(self, fake, real=None):
        return self.generator_loss(fake.view(-1, 1)), {}


def labml_losses(smoothing: float):
    """Its loss modules, their labels drawn from torch's generator seeded alike, twice;
    in float64 (the labels drawn in float32, as the experiment draws them)."""
    made = []
    for _ in range(2):
        torch.manual_seed(9)
        made.append((reference.LabmlDiscriminatorLogitsLoss(smoothing).double(),
                     reference.LabmlGeneratorLogitsLoss(smoothing).double()))  # fmt: skip
    return made


def labml_sides():
    """labml's MLP Generator and Discriminator in small (LeakyReLU(0.2), a Tanh out; D's
    one logit), their Adams at its betas (0.5, 0.999), twice in float64."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(Z_SIZE, 16), nn.LeakyReLU(0.2), nn.Linear(16, X_DIM),
                          nn.Tanh()).double()  # fmt: skip
        D = nn.Sequential(nn.Linear(X_DIM, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)).double()
        made.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.5, 0.999)),
                     torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.999))))  # fmt: skip
    return made


def labml_run(objective_of, smoothing: float = 0.2):
    """labml's step over 4 batches and ``objective_of(losses)``'s Step, z from torch's
    generator seeded alike: both sides and both logs."""
    theirs, ours = labml_sides()
    (d_loss, g_loss), (our_d_loss, our_g_loss) = labml_losses(smoothing)
    batches = real_batches(4, dtype=torch.float64)
    latent = lambda n: torch.randn(n, Z_SIZE, dtype=torch.float64)  # noqa: E731 (sample_z)
    torch.manual_seed(3)
    expected = reference.labml_gan(*theirs, batches, latent, d_loss, g_loss)
    step = Step(*ours, objective=objective_of(our_d_loss, our_g_loss),
                schedule=d_first(reuse_fake=False), latent=latent)  # fmt: skip
    torch.manual_seed(3)
    return ours, theirs, run_step(step, batches), expected


def test_labmls_gan_equals_d_first_with_its_loss_modules_as_the_objective():
    """labml_nn/gan/original's experiment: D's step on BCE with logits against its
    smoothed labels drawn once (one per row: U(0.8, 1) for the real batch, U(0, 0.2) for
    the fakes), G's on fresh z against its own U(0.8, 1) rows; an objective calling its
    loss modules, d_first(reuse_fake=False): equal to 1e-12."""
    ours, theirs, got, expected = labml_run(LabmlLogits)
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)


def test_labmls_labels_are_per_row_not_one_smoothed_value():
    """The check can fail: NS with one label per side (the labels' means) is another
    update than labml's rows."""
    _, (d_loss, g_loss) = labml_losses(0.2)
    real_label, fake_label = d_loss.labels_true.mean().item(), d_loss.labels_false.mean().item()
    ours, theirs, _, _ = labml_run(
        lambda *_: NS(real_label=real_label, fake_label=fake_label,
                      g_label=g_loss.fake_labels.mean().item()))  # fmt: skip
    with pytest.raises(AssertionError):
        assert_same_sides(ours, theirs)
