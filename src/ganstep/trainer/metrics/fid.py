"""FID and KID with a small CNN feature extractor trained on the data itself.

No metric may need a download, so there are no Inception weights: ganstep trains
a small CNN to tell which of four rotations was applied to a real training image
(self-supervised, so any image folder works without labels), once per dataset,
and caches it keyed by a checksum of the data. Its pooled penultimate features
(128-d) stand in for Inception's. Numbers are comparable within one dataset and
extractor, not with published FIDs; the real-vs-real floor (train vs test split)
gives them a scale.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

FEATURES = 128
VERSION = 1  # bump when the architecture or training changes: invalidates caches


class FeatureExtractor(nn.Module):
    """A small CNN for images (C, S, S) in [-1, 1]; ``features`` gives (n, 128)."""

    VERSION = VERSION

    def __init__(self, channels: int, outputs: int = 4):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, FEATURES, 3, 1, 1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )  # fmt: skip
        self.head = nn.Linear(FEATURES, outputs)  # 4 rotations; a classifier: its classes

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.body(x))

    @torch.no_grad()
    def features(self, x: Tensor, batch: int = 500) -> Tensor:
        self.eval()
        return torch.cat([self.body(x[i : i + batch]) for i in range(0, len(x), batch)]).double()

    @classmethod
    def train_on(
        cls,
        images: Tensor,
        steps: int = 300,
        batch: int = 128,
        seed: int = 0,
        tick: Callable[[], object] | None = None,
    ) -> FeatureExtractor:
        """Train on rotation prediction over ``images`` (N, C, H, W), on the CPU (half
        turns alone where H != W); ``tick()`` after each step (a progress bar's)."""
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            net = cls(images.shape[1])

        # a quarter turn of a non-square image changes its shape: half turns only there
        turns = 1 if images.shape[-1] == images.shape[-2] else 2

        def rotated() -> tuple[Tensor, Tensor]:
            x = images[torch.randint(len(images), (batch,), generator=gen)]
            k = torch.randint(4 // turns, (batch,), generator=gen) * turns
            for r in range(turns, 4, turns):
                x[k == r] = torch.rot90(x[k == r], r, (2, 3))
            return x, k

        return fit_cross_entropy(net, 1e-3, steps, rotated, tick)


def fit_cross_entropy(
    net: nn.Module,
    lr: float,
    steps: int,
    batch_of: Callable[[], tuple[Tensor, Tensor]],
    tick: Callable[[], object] | None = None,
) -> nn.Module:
    """``net`` trained with Adam at ``lr`` for ``steps`` steps of cross-entropy on the
    (inputs, targets) ``batch_of()`` draws; ``tick()`` after each step. In eval mode."""
    opt = torch.optim.Adam(net.parameters(), lr)
    net.train()
    for _ in range(steps):
        x, y = batch_of()
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if tick is not None:
            tick()
    return net.eval()


def fid(a: Tensor, b: Tensor) -> float:
    """Fréchet distance between Gaussians fitted to feature sets ``a`` and ``b``."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"fid needs at least 2 samples in each set, got {len(a)} and {len(b)}")
    import scipy.linalg  # here: 0.15 s of every run's start, and only image runs use it

    a, b = a.double().cpu().numpy(), b.double().cpu().numpy()
    mu_a, mu_b = a.mean(0), b.mean(0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        covmean = scipy.linalg.sqrtm(cov_a @ cov_b)
        if not np.isfinite(covmean).all():  # singular product: regularise, as pytorch-fid does
            offset = np.eye(len(cov_a)) * 1e-6
            covmean = scipy.linalg.sqrtm((cov_a + offset) @ (cov_b + offset))
    covmean = covmean.real
    value = ((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * covmean)
    return float(max(value, 0.0))


def kid(a: Tensor, b: Tensor, subsets: int = 10, size: int = 1000, seed: int = 0) -> float:
    """Kernel Inception Distance: unbiased MMD^2 with the kernel (x.y/d + 1)^3,
    averaged over random subsets of both sets."""
    a, b = a.double().cpu(), b.double().cpu()
    m = min(size, len(a), len(b))
    if m < 2:
        raise ValueError(f"kid needs at least 2 samples in each set, got {len(a)} and {len(b)}")
    d = a.shape[1]
    gen = torch.Generator().manual_seed(seed)
    total = 0.0
    for _ in range(subsets):
        x = a[torch.randperm(len(a), generator=gen)[:m]]
        y = b[torch.randperm(len(b), generator=gen)[:m]]
        kxx, kyy, kxy = ((x @ x.T / d + 1) ** 3, (y @ y.T / d + 1) ** 3, (x @ y.T / d + 1) ** 3)
        off = m * (m - 1)
        total += float(
            (kxx.sum() - kxx.diagonal().sum()) / off
            + (kyy.sum() - kyy.diagonal().sum()) / off
            - 2 * kxy.mean()
        )
    return total / subsets
