"""The small Gs and Ds of the wild loops' tests (cGAN, projection D, ACGAN, pix2pix),
in float64, with the streams and comparisons those tests share."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from ganstep import Step, d_first

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
    """D(x) -> (validity logit, class logits), as acgan writes it: no label in."""

    def __init__(self, batchnorm: bool):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X, 8), norm(8, batchnorm), nn.LeakyReLU(0.2))
        self.adv, self.cls = nn.Linear(8, 1), nn.Linear(8, K)

    def forward(self, x):
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


# Equal to 1e-12 in float64: the order of sums may differ, nothing else. (A bias that
# feeds a BatchNorm straight, or one added to every score of a relativistic loss, has a
# gradient of rounding noise, which Adam turns into steps of size lr: no two
# implementations agree on it, so the Ds of the exact tests have none.)
TOLERANCE = {"rtol": 1e-12, "atol": 1e-12}


def assert_same(a: nn.Module, b: nn.Module, buffers: bool = True, exact: bool = False) -> None:
    """Every parameter (and buffer) of ``a`` equals ``b``'s: to 1e-12 with ``exact``,
    else to torch's float64 tolerance (1e-7)."""
    tolerance = TOLERANCE if exact else {}
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert_close(p, q, **tolerance, msg=lambda m, name=name: f"{name}: {m}")
    if buffers:
        for (name, p), q in zip(a.named_buffers(), b.buffers(), strict=True):
            assert_close(p, q, **tolerance, msg=lambda m, name=name: f"buffer {name}: {m}")


def assert_same_sides(ours, theirs) -> None:
    """Modules (parameters and buffers) and optimizers (state) equal to 1e-12, in order."""
    for mine, source in zip(ours, theirs, strict=True):
        if isinstance(mine, nn.Module):
            assert_same(mine, source, exact=True)
        else:
            assert_same_optimizer(mine, source)


def assert_same_optimizer(a: torch.optim.Optimizer, b: torch.optim.Optimizer) -> None:
    """Equal optimizer state (step counts, moments) to 1e-12, parameter by parameter."""
    state_a, state_b = a.state_dict()["state"], b.state_dict()["state"]
    assert sorted(state_a) == sorted(state_b)
    for key in state_a:
        for name, value in state_a[key].items():
            assert_close(value, state_b[key][name], **TOLERANCE,
                         msg=lambda m, k=key, n=name: f"{k}.{n}: {m}")  # fmt: skip


def numpy_normal(seed: int, width: int):
    """``latent(n)`` drawing as PyTorch-GAN's scripts do, ``np.random.normal(0, 1, (n,
    width))``, from a RandomState of its own (the scripts' ``np.random``), and its
    RandomState for the reference loop: two identical streams."""
    import numpy as np

    ours, theirs = np.random.RandomState(seed), np.random.RandomState(seed)
    return (lambda n: torch.from_numpy(ours.normal(0, 1, (n, width)))), theirs


def run_step(step: Step, batches) -> list[dict]:
    return [{k: v.item() for k, v in step(batch).items()} for batch in batches]


def assert_losses(ours: list[dict], theirs: list[dict], keys=("loss_d", "loss_g")) -> None:
    for a, b in zip(ours, theirs, strict=True):
        for key in keys:
            # float(): a log may hold 0-d tensors, which pytest >= 9.2's approx iterates
            assert float(a[key]) == pytest.approx(float(b[key]), rel=1e-10, abs=1e-12), key


def pix2pix_step(side, **kwargs) -> Step:
    G, D, opt_g, opt_d = side
    return Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(), latent=None,
                condition="real", d_scale=0.5,
                g_terms={"l1": (100.0, lambda v: F.l1_loss(v.fake.x, v.real.x))},
                **{"d_order": "fake_first", **kwargs})  # fmt: skip


class BatchMeanD(nn.Module):
    """A D that averages its scores over the batch itself, as the WGAN authors' netD
    does (``output.mean(0)``, then ``view(1)``)."""

    def __init__(self, d: nn.Module):
        super().__init__()
        self.d = d

    def forward(self, x):
        return self.d(x).mean(0).view(1)
