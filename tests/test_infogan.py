"""InfoGAN as PyTorch-GAN writes it: a tuple latent (z, label, code), D(x) with Q heads,
and the info step as a third phase of the Step (float64)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.wild import (
    assert_losses,
    assert_same_sides,
    run_step,
)
from torch import nn

from ganstep import Step, reference, simultaneous

N, Z, K, C, X = 6, 3, 3, 2, 4  # batch, noise, classes, continuous codes, sample width


class InfoG(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z + K + C, 8), nn.ReLU(), nn.Linear(8, X))

    def forward(self, noise, labels, code):
        return self.net(torch.cat((noise, labels, code), -1))


class InfoD(nn.Module):
    """PyTorch-GAN's D: a body with Dropout, then validity, label and code heads."""

    def __init__(self, dropout: float):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X, 8), nn.LeakyReLU(0.2), nn.Dropout(dropout))
        self.adv_layer, self.aux_layer, self.latent_layer = (
            nn.Linear(8, 1), nn.Linear(8, K), nn.Linear(8, C))  # fmt: skip

    def forward(self, img):
        out = self.body(img)
        return self.adv_layer(out), self.aux_layer(out), self.latent_layer(out)


def sides(dropout: float):
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = InfoG().double(), InfoD(dropout).double()
        adam = lambda params: torch.optim.Adam(params, 0.01, betas=(0.5, 0.9))  # noqa: E731
        out.append((G, D, adam(G.parameters()), adam(D.parameters()),
                    adam([*G.parameters(), *D.parameters()])))  # fmt: skip
    return out


def latent_codes():
    gen = torch.Generator().manual_seed(1)

    def latent(n):
        z = torch.randn(n, Z, generator=gen, dtype=torch.float64)
        labels = F.one_hot(torch.randint(K, (n,), generator=gen), K).double()
        code = torch.rand(n, C, generator=gen, dtype=torch.float64) * 2 - 1
        return z, labels, code

    return latent


def batches(count: int):
    gen = torch.Generator().manual_seed(3)
    return [torch.randn(N, X, generator=gen, dtype=torch.float64) for _ in range(count)]


INFO_TERMS = {
    "cat": (1.0, lambda v: F.cross_entropy(v.d_fake[1], v.fake.z[1].argmax(1))),
    "con": (0.1, lambda v: F.mse_loss(v.d_fake[2], v.fake.z[2])),
}


class InfoGAsWritten(nn.Module):
    """infogan.py's G in small: cat(noise, labels, code), BatchNorm, LeakyReLU."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z + K + C, 8), nn.BatchNorm1d(8, 0.8),
                                 nn.LeakyReLU(0.2), nn.Linear(8, X))  # fmt: skip

    def forward(self, noise, labels, code):
        return self.net(torch.cat((noise, labels, code), -1))


class InfoDAsWritten(nn.Module):
    """infogan.py's D in small: Dropout and BatchNorm in the body, validity, a label head
    ending in a Softmax (which its CrossEntropyLoss reads as logits) and a code head."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X, 8), nn.LeakyReLU(0.2), nn.Dropout(0.25),
                                  nn.BatchNorm1d(8, 0.8))  # fmt: skip
        self.adv_layer = nn.Sequential(nn.Linear(8, 1))
        self.aux_layer = nn.Sequential(nn.Linear(8, K), nn.Softmax(dim=1))
        self.latent_layer = nn.Sequential(nn.Linear(8, C))

    def forward(self, img):
        out = self.body(img)
        return self.adv_layer(out), self.aux_layer(out), self.latent_layer(out)


def numpy_latents(seed: int):
    """infogan.py's two ways of drawing from ``np.random``: G's step draws z, labels, a
    uniform code; the info step labels, z, then a code from normal(-1, 1)."""
    rng = np.random.RandomState(seed)

    def one_hot(y):
        return F.one_hot(torch.from_numpy(y), K).double()

    def latent(n):
        z = torch.from_numpy(rng.normal(0, 1, (n, Z)))
        labels = one_hot(rng.randint(0, K, n))
        return z, labels, torch.from_numpy(rng.uniform(-1, 1, (n, C)))

    def info_latent(n):
        labels = one_hot(rng.randint(0, K, n))
        z = torch.from_numpy(rng.normal(0, 1, (n, Z)))
        return z, labels, torch.from_numpy(rng.normal(-1, 1, (n, C)))

    return latent, info_latent


def as_written_sides():
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = InfoGAsWritten().double(), InfoDAsWritten().double()
        adam = lambda params: torch.optim.Adam(params, 0.01, betas=(0.5, 0.9))  # noqa: E731
        out.append((G, D, adam(G.parameters()), adam(D.parameters()),
                    adam(itertools.chain(G.parameters(), D.parameters()))))  # fmt: skip
    return out


def test_infogan_as_written_equals_simultaneous_with_the_info_steps_own_draws():
    """infogan.py as its author wrote it (numpy's draws in its two orders, the info
    step's code from normal(-1, 1), Dropout and BatchNorm in D, a Softmax label head):
    parameters, BatchNorm statistics and all three Adams' states equal."""
    theirs, ours = as_written_sides()
    reals = batches(4)
    torch.manual_seed(5)  # Dropout's masks
    expected = reference.pytorch_gan_infogan(*theirs, reals, np.random.RandomState(3), Z, K, C)
    latent, info_latent = numpy_latents(3)
    G, D, opt_g, opt_d, opt_info = ours
    step = Step(G, D, opt_g, opt_d, objective="lsgan", g_scale=2.0, schedule=simultaneous(),
                latent=latent, info_optimizer=opt_info, info_terms=INFO_TERMS,
                info_latent=info_latent)  # fmt: skip
    torch.manual_seed(5)
    got = run_step(step, reals)
    assert_losses(got, expected, keys=("loss_d", "loss_g", "loss_info"))
    assert_same_sides(ours, theirs)


def test_the_info_step_drawing_from_latent_is_another_loop():
    """Before info_latent, the info step called ``latent`` again (z, labels, uniform
    code): off the script by about 1e-3 after 4 iterations."""
    theirs, ours = as_written_sides()
    reals = batches(4)
    torch.manual_seed(5)
    reference.pytorch_gan_infogan(*theirs, reals, np.random.RandomState(3), Z, K, C)
    latent, _ = numpy_latents(3)
    G, D, opt_g, opt_d, opt_info = ours
    step = Step(G, D, opt_g, opt_d, objective="lsgan", g_scale=2.0, schedule=simultaneous(),
                latent=latent, info_optimizer=opt_info, info_terms=INFO_TERMS)  # fmt: skip
    torch.manual_seed(5)
    run_step(step, reals)
    assert not torch.allclose(G.net[0].weight, theirs[0].net[0].weight, atol=1e-6)


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_info_terms_train_with_one_latent_for_both_steps(dropout):
    """A loop whose info step draws as G's does: ``latent`` serves both."""
    _, ours = sides(dropout)
    G, D, opt_g, opt_d, opt_info = ours
    steps = []
    step = Step(G, D, opt_g, opt_d, objective="lsgan", g_scale=2.0, schedule=simultaneous(),
                latent=latent_codes(), info_optimizer=opt_info, info_terms=INFO_TERMS,
                after_step={"info": steps.append})  # fmt: skip
    got = run_step(step, batches(4))
    assert len(steps) == 4 and {"cat", "con", "loss_info"} <= set(got[0])


def test_info_step_steps_only_what_its_optimizer_holds():
    _, (G, D, opt_g, opt_d, _) = sides(0.0)
    q_heads = [*D.aux_layer.parameters(), *D.latent_layer.parameters()]
    opt_info = torch.optim.SGD([*G.parameters(), *q_heads], 0.1)
    body = [p.detach().clone() for p in D.body.parameters()]
    step = Step(G, D, opt_g, opt_d, objective="lsgan", schedule=simultaneous(),
                latent=latent_codes(), info_optimizer=opt_info, info_terms=INFO_TERMS,
                before_step={"info": lambda m: body.append(
                    [p.detach().clone() for p in D.body.parameters()])})  # fmt: skip
    step(batches(1)[0])
    before_info = body[-1]
    for p, q in zip(D.body.parameters(), before_info, strict=True):
        assert torch.equal(p, q)  # D's body moved in D's step, not in the info step


def test_info_arguments_are_checked():
    _, (G, D, opt_g, opt_d, opt_info) = sides(0.0)
    kwargs = dict(objective="lsgan", schedule="simultaneous", latent=latent_codes())
    with pytest.raises(ValueError, match="both info_optimizer and info_terms"):
        Step(G, D, opt_g, opt_d, info_optimizer=opt_info, **kwargs)
    with pytest.raises(ValueError, match="info_latent draws the info step's latents"):
        Step(G, D, opt_g, opt_d, info_latent=latent_codes(), **kwargs)
    with pytest.raises(TypeError, match="latent must take the batch size"):
        Step(G, D, opt_g, opt_d, info_optimizer=opt_info, info_terms=INFO_TERMS,
             info_latent=lambda: None, **kwargs)  # fmt: skip
    stranger = torch.optim.SGD([nn.Parameter(torch.zeros(1))], 0.1)
    with pytest.raises(ValueError, match="only G's and D's parameters"):
        Step(G, D, opt_g, opt_d, info_optimizer=stranger, info_terms=INFO_TERMS, **kwargs)
