"""Conditions: G(z, c), G(c) and D(x, c) through every schedule, equal to the conditional
loops of the wild (PyTorch-GAN cGAN, BigGAN, Lightning) in float64; what a condition may
be, and the passes a conditional step saves."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from helpers import flops
from helpers.wild import (
    ITERATIONS,
    CondG,
    K,
    N,
    ProjectionD,
    X,
    Z,
    assert_losses,
    assert_same,
    build,
    labelled_batches,
    run_step,
    streams,
)
from torch import nn

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.sides import frozen


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


# --- a tuple condition, unpacked into G --------------------------------------------------


class Translator(nn.Module):
    """StarGAN's G(x, c): a source sample and its target domain's labels, no z."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(X + K, X)
        self.calls: list[tuple] = []

    def forward(self, x, c):
        self.calls.append((tuple(x.shape), c.dtype))
        return self.fc(torch.cat([x, F.one_hot(c, K).to(x)], 1))


def test_a_tuple_condition_is_unpacked_into_g_and_equals_the_loop():
    """StarGAN's G(x, c) from a sampler of (source, target labels); D(x) alone. Before,
    G got the tuple as one argument: 'forward() missing 1 required positional argument'."""

    def sides():
        torch.manual_seed(0)
        G, D = Translator().double(), nn.Linear(X, 1).double()
        return G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)

    def source(n):
        return torch.randn(n, X, dtype=torch.float64), torch.randint(K, (n,))

    torch.manual_seed(1)
    reals = [torch.randn(N, X, dtype=torch.float64) for _ in range(3)]
    pairs = [(x, source(N)) for x in reals]  # real rows come with their own (x, c)
    G, D, opt_g, opt_d = sides()
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(), latent=None,
                condition=source, d_conditional=False)  # fmt: skip
    torch.manual_seed(2)
    for pair in pairs:  # the general path, then the steady one
        step(pair)
    assert G.calls == [((N, X), torch.int64)] * 3
    g, d, opt_g, opt_d = sides()
    torch.manual_seed(2)
    for real in reals:  # the loop, as StarGAN's users write it with ns
        fake = g(*source(N))
        opt_d.zero_grad()
        loss_d = F.softplus(-d(real)).mean() + F.softplus(d(fake.detach())).mean()
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        F.softplus(-d(fake)).mean().backward()
        opt_g.step()
    for p, q in zip([*G.parameters(), *D.parameters()], [*g.parameters(), *d.parameters()],
                    strict=True):  # fmt: skip
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-12)


def test_a_g_whose_signature_does_not_fit_is_told_what_it_was_called_with():
    class OneInput(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(Z, X)

        def forward(self, z):
            return self.fc(z)

    G, D = OneInput().double(), nn.Linear(X, 1).double()
    step = Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                objective="ns", schedule=d_first(), d_conditional=False,
                latent=lambda n: torch.randn(n, Z, dtype=torch.float64),
                condition=lambda n: (torch.randn(n, 2, dtype=torch.float64),
                                     torch.randint(K, (n,))))  # fmt: skip
    real = torch.randn(N, X, dtype=torch.float64)
    with pytest.raises(TypeError) as e:
        step((real, (torch.randn(N, 2, dtype=torch.float64), torch.randint(K, (N,)))))
    message = str(e.value)
    assert (
        f"ganstep called G(z: ({N}, {Z}) float64, c[0]: ({N}, 2) float64, c[1]: ({N},) int64)"
        in message
    )
    assert "which G's forward(z) does not take" in message
