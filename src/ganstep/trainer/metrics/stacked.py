"""Stacked MNIST's metrics: how many of the 1,000 modes the samples cover, and the KL
divergence of their mode histogram to the uniform one (``reverse_kl``), as VEEGAN and
PacGAN count them.

Each channel of a sample is classified as a digit by a CNN that ganstep trains once
on MNIST's training digits and caches (no download); its accuracy on MNIST's test
digits (``digit_accuracy``) says whether the counts can be trusted (>= 0.98).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..data.stacked import MODES, PLACES
from .classes import train_classifier
from .fid import FeatureExtractor

VERSION = 2  # bump when the classifier's architecture or training changes
SAMPLES = 26_000  # as VEEGAN and PacGAN count modes
# The digit classifier trains 30 x --feature-steps steps (6,000 by default): 0.9892 on
# MNIST's test digits, in 7 min 51 s once (then cached) on the 2-core machine; 2,000
# steps reached 0.9765, short of the 0.98 the mode counts need (with the learning rate
# decayed to 0 over them, 0.9693).
STEPS_PER_FEATURE_STEP = 30


def train_digit_classifier(digits: Tensor, labels: Tensor, steps: int) -> FeatureExtractor:
    """A CNN telling the digit of one-channel images (N, 1, S, S) in [-1, 1]."""
    return train_classifier(digits, labels, 10, steps)


@torch.no_grad()
def digits_of(classify: Callable[[Tensor], Tensor], samples: Tensor, batch: int = 500) -> Tensor:
    """The digit (n, 3) of each channel of ``samples`` (n, 3, S, S), each channel
    classified as a one-channel image; ``classify`` returns logits (m, 10)."""
    n, channels = samples.shape[:2]
    if channels != 3:
        raise ValueError(f"stacked MNIST samples have 3 channels, got {channels}")
    flat = samples.reshape(n * 3, 1, *samples.shape[2:])
    found = [classify(flat[i : i + batch].float()).argmax(1) for i in range(0, len(flat), batch)]
    return torch.cat(found).reshape(n, 3)


def mode_metrics(labels: Tensor) -> dict[str, float]:
    """``modes`` (distinct labels among ``labels``, each 0-999) and ``reverse_kl``:
    KL(p || uniform) of their histogram p over the 1,000 modes, in nats."""
    if labels.numel() == 0:
        raise ValueError("mode metrics need at least one sample")
    counts = torch.bincount(labels.long().reshape(-1), minlength=MODES).double()
    p = counts[counts > 0] / counts.sum()
    return {"modes": int(len(p)), "reverse_kl": float((p * (p * MODES).log()).sum())}


def stacked_metrics(classify: Callable[[Tensor], Tensor], samples: Tensor) -> dict[str, float]:
    """``modes`` and ``reverse_kl`` of stacked MNIST ``samples`` (n, 3, S, S)."""
    digits = digits_of(classify, samples)
    return mode_metrics((digits * torch.as_tensor(PLACES)).sum(1))
