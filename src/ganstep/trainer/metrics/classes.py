"""class_accuracy: how often a classifier trained on the real data agrees with the
class a conditional G was asked for.

The classifier is the FID network's CNN with a head per class, trained once per
dataset on its labelled train split (no download) and cached like the feature
extractor. Its accuracy on the real test split is reported as
``class_accuracy_floor``: the real data's reference, like ``fid_floor`` (generated
samples can be easier to classify than real ones, so a good G may exceed it).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .fid import FeatureExtractor, fit_cross_entropy

VERSION = 2  # bump when the architecture or training changes: invalidates caches


def train_classifier(
    images: Tensor,
    labels: Tensor,
    classes: int,
    steps: int = 600,
    batch: int = 128,
    seed: int = 0,
    tick: Callable[[], object] | None = None,
) -> FeatureExtractor:
    """A CNN trained to predict ``labels`` from ``images`` (N, C, S, S), on the CPU
    (Adam at 3e-3: 600 steps reach about 0.9 on MNIST's test split); ``tick()`` after
    each step (a progress bar's)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = FeatureExtractor(images.shape[1], outputs=classes)

    def labelled() -> tuple[Tensor, Tensor]:
        index = torch.randint(len(images), (batch,), generator=gen)
        return images[index], labels[index]

    return fit_cross_entropy(net, 3e-3, steps, labelled, tick)


@torch.no_grad()
def class_accuracy(
    net: FeatureExtractor, images: Tensor, labels: Tensor, batch: int = 500
) -> float:
    """The fraction of ``images`` that ``net`` classifies as their ``labels``."""
    net.eval()
    right = sum(
        (net(images[i : i + batch].float()).argmax(1) == labels[i : i + batch]).sum().item()
        for i in range(0, len(images), batch)
    )
    return right / len(images)
