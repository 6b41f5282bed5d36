"""Conditional, image-to-image, PatchGAN, multi-output D, loss terms, DataLoader feeding:
each wild loop equals its Step configuration in float64."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.flop_counter import FlopCounterMode

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.sides import frozen

N, Z, X, K = 6, 3, 4, 3  # batch, z, sample width, classes
ITERATIONS = 4


def norm(width: int, batchnorm: bool) -> nn.Module:
    return nn.BatchNorm1d(width) if batchnorm else nn.Identity()


class CondG(nn.Module):
    """G(z, y): z next to a learned embedding of the label (PyTorch-GAN's cgan)."""

    def __init__(self, batchnorm: bool):
        super().__init__()
        self.embed = nn.Embedding(K, 2)
        self.net = nn.Sequential(nn.Linear(Z + 2, 8), norm(8, batchnorm), nn.LeakyReLU(0.2),
                                 nn.Linear(8, X))  # fmt: skip

    def forward(self, z, y):
        return self.net(torch.cat([z, self.embed(y)], 1))


class ProjectionD(nn.Module):
    """D(x, y) = w . h(x) + <embed(y), h(x)> (Miyato and Koyama's projection D)."""

    def __init__(self, batchnorm: bool):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X, 8), norm(8, batchnorm), nn.LeakyReLU(0.2))
        self.out = nn.Linear(8, 1)
        self.embed = nn.Embedding(K, 8)

    def forward(self, x, y):
        h = self.body(x)
        return self.out(h).squeeze(1) + (self.embed(y) * h).sum(1)


class ACGAND(nn.Module):
    """D(x) -> (validity logit, class logits); it ignores the condition it is given."""

    def __init__(self, batchnorm: bool):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X, 8), norm(8, batchnorm), nn.LeakyReLU(0.2))
        self.adv, self.cls = nn.Linear(8, 1), nn.Linear(8, K)

    def forward(self, x, y=None):
        h = self.body(x)
        return self.adv(h), self.cls(h)


class Pix2PixG(nn.Module):
    """G(source) -> target, 1x8x8 images (a small encoder-decoder with BatchNorm)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.BatchNorm2d(4), nn.ReLU(),
                                 nn.Conv2d(4, 1, 3, 1, 1), nn.Tanh())  # fmt: skip

    def forward(self, source):
        return self.net(source)


def patch_net(batchnorm: bool = True) -> nn.Module:
    """A PatchGAN on cat(source, image): a 1 x 3 x 3 map of logits per sample."""
    return nn.Sequential(nn.Conv2d(2, 4, 4, 2, 1), norm2d(4, batchnorm), nn.LeakyReLU(0.2),
                         nn.Conv2d(4, 1, 2, 1, 0))  # fmt: skip


def norm2d(width: int, batchnorm: bool) -> nn.Module:
    return nn.BatchNorm2d(width) if batchnorm else nn.Identity()


class PairD(nn.Module):
    """What a ganstep user writes for pix2pix's D: D(x, c) = net(cat(c, x))."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x, c):
        return self.net(torch.cat((c, x), 1))


def build(make_g, make_d):
    """Two identical (G, D, opt_g, opt_d) sides, in float64."""
    sides = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = make_g().double(), make_d().double()
        sides.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.5, 0.9)),
                      torch.optim.Adam(D.parameters(), 0.01, betas=(0.5, 0.9))))  # fmt: skip
    return sides


def streams():
    """latent(n) and labels(n) from their own generators, fresh for each side."""
    gz, gy = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)

    def latent(n):
        return torch.randn(n, Z, generator=gz, dtype=torch.float64)

    def labels(n):
        return torch.randint(K, (n,), generator=gy)

    return latent, labels


def labelled_batches(count: int):
    gen = torch.Generator().manual_seed(3)
    return [(torch.randn(N, X, generator=gen, dtype=torch.float64),
             torch.randint(K, (N,), generator=gen)) for _ in range(count)]  # fmt: skip


def image_pairs(count: int):
    gen = torch.Generator().manual_seed(4)
    out = []
    for _ in range(count):
        source = torch.rand(N, 1, 8, 8, generator=gen, dtype=torch.float64) * 2 - 1
        out.append((torch.flip(source, (3,)) * 0.8, source))  # (target, source)
    return out


def assert_same(a: nn.Module, b: nn.Module, buffers: bool = True) -> None:
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert_close(p, q, msg=lambda m, name=name: f"{name}: {m}")
    if buffers:
        for (name, p), q in zip(a.named_buffers(), b.buffers(), strict=True):
            assert_close(p, q, msg=lambda m, name=name: f"buffer {name}: {m}")


def run_step(step: Step, batches) -> list[dict]:
    return [{k: v.item() for k, v in step(batch).items()} for batch in batches]


def assert_losses(ours: list[dict], theirs: list[dict], keys=("loss_d", "loss_g")) -> None:
    for a, b in zip(ours, theirs, strict=True):
        for key in keys:
            assert a[key] == pytest.approx(b[key], rel=1e-10, abs=1e-12), key


# -- the wild loops -------------------------------------------------------------------


def pix2pix_step(side, **kwargs) -> Step:
    G, D, opt_g, opt_d = side
    return Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(), latent=None,
                condition="real", d_scale=0.5,
                g_terms={"l1": (100.0, lambda v: F.l1_loss(v.fake.x, v.real.x))},
                **{"d_order": "fake_first", **kwargs})  # fmt: skip


@pytest.mark.parametrize("batchnorm", [True, False], ids=["batchnormD", "plainD"])
def test_pix2pix_equals_d_first_with_an_image_condition_patch_d_and_l1(batchnorm):
    theirs, ours = build(Pix2PixG, lambda: PairD(patch_net(batchnorm)))
    pairs = image_pairs(ITERATIONS)
    expected = reference.pix2pix(theirs[0], theirs[1].net, theirs[2], theirs[3], pairs)
    got = run_step(pix2pix_step(ours), pairs)
    assert_losses(got, expected, ("loss_d", "loss_g", "l1"))
    assert_same(ours[0], theirs[0])  # G's BatchNorm ran once per iteration on both sides
    assert_same(ours[1], theirs[1])  # fake first on both sides: running statistics too


@pytest.mark.parametrize("batchnorm", [True, False], ids=["batchnormD", "plainD"])
def test_pytorch_gan_cgan_equals_simultaneous_with_sampled_labels(batchnorm):
    theirs, ours = build(lambda: CondG(batchnorm), lambda: ProjectionD(batchnorm))
    batches = labelled_batches(ITERATIONS)
    latent, labels = streams()
    expected = reference.pytorch_gan_cgan(*theirs, batches, latent, labels)
    latent, labels = streams()
    step = Step(*ours, objective="lsgan", schedule=simultaneous(), latent=latent,
                condition=labels)  # fmt: skip
    assert_losses(run_step(step, batches), expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1], buffers=not batchnorm)  # cgan forwards D(fake) twice


@pytest.mark.parametrize("fused", [False, True])
def test_pytorch_gan_acgan_equals_simultaneous_with_auxiliary_terms(fused):
    theirs, ours = build(lambda: CondG(False), lambda: ACGAND(False))
    batches = labelled_batches(ITERATIONS)
    latent, labels = streams()
    expected = reference.pytorch_gan_acgan(*theirs, batches, latent, labels)
    latent, labels = streams()

    def aux(which):
        return lambda v: F.cross_entropy(getattr(v, f"d_{which}")[1], getattr(v, which).c)

    kwargs = dict(objective="ns", schedule=simultaneous(), latent=latent, condition=labels,
                  d_scale=0.25, d_terms={"aux_real": (0.25, aux("real")),
                                         "aux_fake": (0.25, aux("fake"))},
                  g_terms={"aux": aux("fake")})  # fmt: skip
    if fused:
        with pytest.raises(ValueError, match="extra loss terms would break"):
            Step(*ours, **{**kwargs, "schedule": simultaneous(fused=True)})
        return
    got = run_step(Step(*ours, **kwargs), batches)
    assert_losses(got, expected)
    assert {"aux", "aux_real", "aux_fake"} <= set(got[0])
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


@pytest.mark.parametrize("concat", [False, True])
def test_biggan_projection_hinge_equals_d_first_with_d_steps(concat):
    theirs, ours = build(lambda: CondG(True), lambda: ProjectionD(False))
    batches = labelled_batches(2 * ITERATIONS)
    latent, labels = streams()
    expected = reference.biggan_hinge(*theirs, batches, latent, labels, d_steps=2)
    latent, labels = streams()
    step = Step(*ours, objective="hinge", schedule=d_first(d_steps=2, reuse_fake=False),
                latent=latent, condition=labels, concat=concat)  # fmt: skip
    fed = list(step.feed(batches, iterations=ITERATIONS))
    assert_losses(run_step(step, fed), expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


def test_lightning_conditional_equals_g_first_reuse_z():
    theirs, ours = build(lambda: CondG(True), lambda: ProjectionD(True))
    batches = labelled_batches(ITERATIONS)
    latent, _ = streams()
    expected = reference.lightning_conditional_g_first(*theirs, batches, latent)
    latent, _ = streams()
    step = Step(*ours, objective="ns", schedule=g_first(reuse_z=True), latent=latent,
                condition="real")  # fmt: skip
    assert_losses(run_step(step, batches), expected)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])


# -- penalties read x only ------------------------------------------------------------


def test_wgan_gp_interpolates_x_and_never_the_condition():
    """A hand loop whose interpolate keeps the real labels; blending one-hot labels (as
    packing c into x would) changes D's input and the result."""
    onehot = lambda y: F.one_hot(y, K).double()  # noqa: E731

    class OneHotD(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(X + K, 8), nn.Tanh(), nn.Linear(8, 1))

        def forward(self, x, c):
            return self.net(torch.cat([x, c], 1)).squeeze(1)

    class OneHotG(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(Z + K, 8), nn.Tanh(), nn.Linear(8, X))

        def forward(self, z, c):
            return self.net(torch.cat([z, c], 1))

    def hand_loop(G, D, opt_g, opt_d, batches, latent, labels, blend: bool):
        for x, y in batches:
            c_real = onehot(y)
            z, c_fake = latent(N), onehot(labels(N))
            fake = G(z, c_fake)
            opt_d.zero_grad()
            e = torch.rand(N, 1, dtype=torch.float64)
            x_hat = (e * x + (1 - e) * fake.detach()).requires_grad_(True)
            c_hat = e * c_real + (1 - e) * c_fake if blend else c_real
            (grad,) = torch.autograd.grad(D(x_hat, c_hat).sum(), x_hat, create_graph=True)
            gp = ((grad.norm(2, dim=1) - 1) ** 2).mean()
            loss_d = D(fake.detach(), c_fake).mean() - D(x, c_real).mean() + 10 * gp
            loss_d.backward()
            opt_d.step()
            opt_g.zero_grad()
            (-D(fake, c_fake).mean()).backward()
            opt_g.step()

    results = {}
    for blend in (False, True):
        theirs, ours = build(OneHotG, OneHotD)
        batches = labelled_batches(ITERATIONS)
        torch.manual_seed(9)
        latent, labels = streams()
        hand_loop(*theirs, batches, latent, labels, blend)
        torch.manual_seed(9)
        latent, labels = streams()
        step = Step(*ours, objective="wgan_gp", schedule=d_first(), latent=latent,
                    condition=lambda n, labels=labels: onehot(labels(n)))  # fmt: skip
        run_step(step, [(x, onehot(y)) for x, y in batches])
        results[blend] = torch.allclose(ours[1].net[0].weight, theirs[1].net[0].weight)
    assert results == {False: True, True: False}


# -- D outputs ------------------------------------------------------------------------


class MultiScaleD(nn.Module):
    """A list of two maps (pix2pixHD's multi-scale D), plus nothing else."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 1, 4, 2, 1)
        self.b = nn.Conv2d(2, 1, 3, 1, 1)

    def forward(self, x, c):
        both = torch.cat((c, x), 1)
        return [self.a(both), self.b(F.avg_pool2d(both, 2))]


def test_multi_scale_d_sums_its_adversarial_losses():
    (G, D, opt_g, opt_d), _ = build(Pix2PixG, MultiScaleD)
    target, source = image_pairs(1)[0]
    step = Step(G, D, opt_g, opt_d, objective="lsgan", schedule=simultaneous(), latent=None,
                condition="real")  # fmt: skip
    with torch.no_grad():
        fake = G(source)
        maps_real, maps_fake = D(target, source), D(fake, source)
    expected = sum(0.5 * (r - 1).square().mean() + 0.5 * f.square().mean()
                   for r, f in zip(maps_real, maps_fake, strict=True))  # fmt: skip
    logs = step((target, source))
    assert_close(logs["loss_d"], expected)
    with pytest.raises(ValueError, match="needs one adversarial output; D returned 2"):
        (G, D, opt_g, opt_d), _ = build(Pix2PixG, MultiScaleD)
        Step(G, D, opt_g, opt_d, objective="minimax", schedule=simultaneous(fused=True),
             latent=None, condition="real")((target, source))  # fmt: skip


@pytest.mark.parametrize("objective", ["minimax", "hinge", "wgan_gp"])
def test_fused_step_on_a_patch_map_equals_unfused(objective):
    pairs = image_pairs(ITERATIONS)
    sides = build(Pix2PixG, lambda: PairD(patch_net(batchnorm=False)))
    for side, fused in zip(sides, (False, True), strict=True):
        side[0].eval()  # G's BatchNorm in eval mode: both sides run G the same way
        torch.manual_seed(5)  # wgan_gp's interpolation draws
        step = Step(*side, objective=objective, schedule=simultaneous(fused=fused), latent=None,
                    condition="real")  # fmt: skip
        run_step(step, pairs)
    assert_same(sides[0][0], sides[1][0])
    assert_same(sides[0][1], sides[1][1])


@pytest.mark.parametrize("objective", ["ns", "lsgan"])
def test_fused_step_refuses_a_map_where_the_ratio_varies(objective):
    (G, D, opt_g, opt_d), _ = build(Pix2PixG, lambda: PairD(patch_net(batchnorm=False)))
    step = Step(G, D, opt_g, opt_d, objective=objective, schedule=simultaneous(fused=True),
                latent=None, condition="real")  # fmt: skip
    with pytest.raises(ValueError, match=f"{objective!r} varies per element"):
        step(image_pairs(1)[0])


# -- refusals -------------------------------------------------------------------------


def test_refusals_name_the_fix():
    (G, D, opt_g, opt_d), _ = build(lambda: CondG(False), lambda: ProjectionD(False))
    latent, labels = streams()
    x, y = labelled_batches(1)[0]
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent,
                condition="real")  # fmt: skip
    with pytest.raises(ValueError, match="this Step is conditional, so a real batch is a pair"):
        step(x)
    with pytest.raises(ValueError, match=r"the condition has shape \(4,\), but the batch has 6"):
        step((x, y[:4]))
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent,
                condition=lambda n: labels(n + 1))  # fmt: skip
    with pytest.raises(ValueError, match=r"condition\(6\): the condition has shape \(7,\)"):
        step((x, y))
    with pytest.raises(ValueError, match="latent=None means G takes no z"):
        Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=None)
    with pytest.raises(ValueError, match="condition must be None, 'real' or a sampler"):
        Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent,
             condition="labels")  # fmt: skip
    with pytest.raises(ValueError, match="the name 'loss_g' is taken"):
        Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent,
             condition="real", g_terms={"loss_g": lambda v: v.fake.x.mean()})  # fmt: skip
    second = {"aux": lambda v: F.cross_entropy(v.d_fake[1], v.fake.c)}
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent,
                condition="real", g_terms=second)  # fmt: skip
    message = r"term 'aux' of the G phase failed.*D returned a tensor \(6,\): does the term read"
    with pytest.raises(ValueError, match=message):
        step((x, y))
    reads_real = {"fm": lambda v: v.d_real.mean()}
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent,
                condition="real", g_terms=reads_real)  # fmt: skip
    with pytest.raises(ValueError, match="G phase reads D's output on the real batch, which"):
        step((x, y))


def test_an_unconditional_step_never_reads_y_as_data():
    (G, D, opt_g, opt_d), _ = build(lambda: nn.Linear(Z, X), lambda: nn.Linear(X, 1))
    latent, _ = streams()
    x, y = labelled_batches(1)[0]
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(d_steps=2), latent=latent)
    with pytest.raises(ValueError, match="differ in shape or dtype.*DataLoader"):
        step([x, y])
    one = Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first", latent=latent)
    with pytest.raises(ValueError, match="unconditional; pass x alone, or use step.feed"):
        one([x, y])
    with pytest.raises(ValueError, match="unconditional but the batch carries a condition"):
        one((x, y))


@pytest.mark.parametrize("kind", ["pairs", "dicts"])
def test_feed_from_a_dataloader_with_d_steps_and_epoch_ends(kind):
    """d_first(d_steps=5) from a loader of 3 batches an epoch: equal to the same batches
    given by hand, in the loader's order across epochs."""
    gen = torch.Generator().manual_seed(7)
    xs, ys = torch.randn(3 * N, X, dtype=torch.float64, generator=gen), torch.arange(3 * N) % K
    data = TensorDataset(xs, ys)
    loader = DataLoader(data, batch_size=N, shuffle=False)
    if kind == "dicts":
        loader = [{"x": a, "y": b} for a, b in loader]
    theirs, ours = build(lambda: CondG(False), lambda: ProjectionD(False))
    latent, _ = streams()
    step = Step(*ours, objective="hinge", schedule=d_first(d_steps=5), latent=latent,
                condition="real")  # fmt: skip
    fed = list(step.feed(loader, iterations=2))
    assert [len(items) for items in fed] == [5, 5]
    order = [b for items in fed for b in items]
    expected_order = [i % 3 for i in range(10)]
    for batch, i in zip(order, expected_order, strict=True):
        assert torch.equal(batch.x, xs[i * N : (i + 1) * N])
    run_step(step, fed)
    latent, _ = streams()
    by_hand = Step(*theirs, objective="hinge", schedule=d_first(d_steps=5), latent=latent,
                   condition="real")  # fmt: skip
    for items in fed:
        by_hand([(b.x, b.c) for b in items])
    assert_same(ours[1], theirs[1])
    # an unconditional step fed (x, y) takes x and drops y
    G, D = nn.Linear(Z, X).double(), nn.Linear(X, 1).double()
    plain = Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                 objective="ns", schedule="d_first", latent=latent)  # fmt: skip
    (first,) = list(plain.feed(DataLoader(data, batch_size=N), iterations=1))
    assert torch.equal(first.x, xs[:N]) and first.c is None


# -- passes ---------------------------------------------------------------------------


def flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_pix2pix_is_already_minimal_and_terms_add_no_d_forward():
    """pix2pix freezes D for G's step itself: d_first costs exactly what it does."""
    theirs, ours = build(Pix2PixG, lambda: PairD(patch_net()))
    pairs = image_pairs(1)
    ref = flops(lambda: reference.pix2pix(theirs[0], theirs[1].net, theirs[2], theirs[3], pairs))
    step = pix2pix_step(ours)
    step.observe_d(pairs[0])  # once, outside the measured step
    ours_flops = flops(lambda: step(pairs[0]))
    assert ours_flops == ref


def test_conditional_simultaneous_saves_one_d_forward_and_d_weight_gradients():
    theirs, ours = build(lambda: CondG(False), lambda: ProjectionD(False))
    batches = labelled_batches(1)
    latent, labels = streams()
    ref = flops(lambda: reference.pytorch_gan_cgan(*theirs, batches, latent, labels))
    latent, labels = streams()
    step = Step(*ours, objective="lsgan", schedule="simultaneous", latent=latent,
                condition=labels)  # fmt: skip
    step.observe_d(batches[0])
    got = flops(lambda: step(batches[0]))
    D = copy.deepcopy(ours[1])
    x = torch.randn(N, X, dtype=torch.float64, requires_grad=True)
    y = labels(N)
    forward = flops(lambda: D(x, y))
    with_weights = flops(lambda: D(x, y).sum().backward())
    with frozen(D):
        without_weights = flops(lambda: D(x, y).sum().backward())
    assert forward > 0 and with_weights > without_weights
    assert ref - got == forward + (with_weights - without_weights)
