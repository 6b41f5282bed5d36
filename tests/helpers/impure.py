"""Discriminators as real GAN code writes them, pure and not, for the exactness tests.

Each is float64-ready and small: a sample is ``X`` numbers. ``make_d(kind)`` builds one
scoring ``D(x)``; ``make_projection_d(kind)`` one scoring ``D(x, y)`` (BigGAN, cgan).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import parametrizations
from torch.nn.utils import spectral_norm as spectral_norm_old

X, K = 4, 3  # sample width, classes

KINDS = ["dropout", "spectral", "spectral_old", "augment", "batchnorm"]


class Augment(nn.Module):
    """DiffAugment-style random brightness and translation, inside D's forward: one
    ``torch.rand`` draw per sample from the global generator, differentiable in x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = (x.shape[0],) + (1,) * (x.dim() - 1)
        brightness = torch.rand(shape, dtype=x.dtype, device=x.device) - 0.5
        shift = torch.rand(shape, dtype=x.dtype, device=x.device) - 0.5
        return x * (1 + 0.5 * brightness) + 0.3 * shift


class MinibatchStd(nn.Module):
    """StyleGAN's minibatch standard deviation: one feature of the whole batch's spread."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spread = x.std(0).mean().expand(x.shape[0], 1)
        return torch.cat([x, spread], 1)


class CenterBatch(nn.Module):
    """A custom layer that subtracts the batch mean: mixes samples, no known type."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - x.mean(0, keepdim=True)


def _linear(kind: str, a: int, b: int) -> nn.Module:
    if kind == "spectral":
        return parametrizations.spectral_norm(nn.Linear(a, b))
    if kind == "spectral_old":
        return spectral_norm_old(nn.Linear(a, b))
    return nn.Linear(a, b)


def body(kind: str) -> nn.Sequential:
    """D's layers up to an 8-wide feature, with the kind's impurity."""
    layers: list[nn.Module] = []
    width = X
    if kind == "augment":
        layers.append(Augment())
    if kind == "mbstd":
        layers.append(MinibatchStd())
        width += 1
    if kind == "center":
        layers.append(CenterBatch())
    layers += [_linear(kind, width, 8), nn.LeakyReLU(0.2)]
    if kind == "batchnorm":
        layers.append(nn.BatchNorm1d(8))
    if kind == "dropout":
        layers.append(nn.Dropout(0.3))
    return nn.Sequential(*layers)


def make_d(kind: str) -> nn.Module:
    return nn.Sequential(body(kind), _linear(kind, 8, 1))


class ProjectionD(nn.Module):
    """D(x, y) = w . h(x) + <embed(y), h(x)>, with the kind's impurity in h."""

    def __init__(self, kind: str):
        super().__init__()
        self.body = body(kind)
        self.out = _linear(kind, 8, 1)
        self.embed = nn.Embedding(K, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.body(x)
        return self.out(h).squeeze(1) + (self.embed(y) * h).sum(1)


def make_projection_d(kind: str) -> nn.Module:
    return ProjectionD(kind)
