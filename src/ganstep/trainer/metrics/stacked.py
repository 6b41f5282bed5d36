"""Stacked MNIST's metrics: how many of the 1,000 modes the samples cover, and the KL
divergence of their mode histogram to the uniform one (``reverse_kl``), as VEEGAN and
PacGAN count them.

Each channel of a sample is classified as a digit by a CNN trained on MNIST's
training digits; its accuracy on MNIST's test digits (``digit_accuracy``) says
whether the counts can be trusted (>= 0.98). At the default settings (32 pixels,
6,000 steps) it is the network shipped in this package (``SHIPPED``), so that a
reverse KL reads the same on every machine: float sums round differently on another
CPU, and a classifier trained there is another ruler (seed 3's width-64 G read 0.0425
under one, 0.037 under others; benchmarks/RESULTS.md, issue 31). Other settings
train their own once and cache it (no download).

Two more numbers say where a reverse KL comes from: ``channel_kl``, how far each
channel's digits are from uniform (G favouring some digits), and ``unclear_digits``,
the share of digits the classifier is unsure of (malformed digits, whose readings
fall unevenly among the classes).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..data.stacked import MODES, PLACES
from .classes import train_classifier
from .fid import FeatureExtractor
from .histogram import kl_to_uniform

VERSION = 2  # bump when the classifier's architecture or training changes
SAMPLES = 26_000  # as VEEGAN and PacGAN count modes
# The digit classifier trains 30 x --feature-steps steps (6,000 by default): 0.9892 on
# MNIST's test digits, in 7 min 51 s once (then cached) on the 2-core machine; 2,000
# steps reached 0.9765, short of the 0.98 the mode counts need (with the learning rate
# decayed to 0 over them, 0.9693).
STEPS_PER_FEATURE_STEP = 30
# The classifiers in this package, by their cache name, with their files' SHA-256:
# train_digit_classifier's of the default settings (seed 0, 6,000 steps), trained on
# the 2-core Xeon of 2026-11-27 (0.9895 on MNIST's test digits), the one that
# measured seeds 3 and 4 of issue 31's width-64 runs.
SHIPPED = {"digits-mnist-32px-v2-s6000":
           "6a3bd73322bc38d16934343d343e3ff5817e344eb0bc294c11233e2599933768"}  # fmt: skip
# a digit the classifier gives less than this probability counts as unclear: 2.8% of
# real stacked digits, a quarter to a third of those of 20,000-step runs (issue 31)
CLEAR = 0.9


def train_digit_classifier(
    digits: Tensor, labels: Tensor, steps: int, tick: Callable[[], object] | None = None
) -> FeatureExtractor:
    """A CNN telling the digit of one-channel images (N, 1, S, S) in [-1, 1];
    ``tick()`` after each training step."""
    return train_classifier(digits, labels, 10, steps, tick=tick)


def digits_of(classify: Callable[[Tensor], Tensor], samples: Tensor, batch: int = 500) -> Tensor:
    """The digit (n, 3) of each channel of ``samples`` (n, 3, S, S), each channel
    classified as a one-channel image; ``classify`` returns logits (m, 10)."""
    return _read_digits(classify, samples, batch)[0]


@torch.no_grad()
def _read_digits(
    classify: Callable[[Tensor], Tensor], samples: Tensor, batch: int = 500
) -> tuple[Tensor, Tensor]:
    """The digits (n, 3) of ``samples`` and the classifier's probability of each."""
    n, channels = samples.shape[:2]
    if channels != 3:
        raise ValueError(f"stacked MNIST samples have 3 channels, got {channels}")
    flat = samples.reshape(n * 3, 1, *samples.shape[2:])
    probs = [classify(flat[i : i + batch].float()).softmax(1).max(1)
             for i in range(0, len(flat), batch)]  # fmt: skip
    digits = torch.cat([p.indices for p in probs]).reshape(n, 3)
    return digits, torch.cat([p.values for p in probs]).reshape(n, 3)


def channel_kl(digits: Tensor) -> float:
    """The mean over the channels of KL(p_c || uniform) in nats, p_c the histogram of
    channel c's digits (``digits`` (n, 3), each 0-9)."""
    channels = range(digits.shape[1])
    kls = [kl_to_uniform(torch.bincount(digits[:, c].long(), minlength=10)) for c in channels]
    return sum(kls) / len(kls)


def mode_metrics(labels: Tensor) -> dict[str, float]:
    """``modes`` (distinct labels among ``labels``, each 0-999) and ``reverse_kl``:
    KL(p || uniform) of their histogram p over the 1,000 modes, in nats."""
    if labels.numel() == 0:
        raise ValueError("mode metrics need at least one sample")
    counts = torch.bincount(labels.long().reshape(-1), minlength=MODES)
    return {"modes": int((counts > 0).sum()), "reverse_kl": kl_to_uniform(counts)}


def stacked_metrics(classify: Callable[[Tensor], Tensor], samples: Tensor) -> dict[str, float]:
    """``modes``, ``reverse_kl``, ``channel_kl`` and ``unclear_digits`` (the share of
    digits read with a probability below ``CLEAR``) of stacked MNIST ``samples``
    (n, 3, S, S)."""
    digits, probability = _read_digits(classify, samples)
    return {**mode_metrics((digits * torch.as_tensor(PLACES)).sum(1)),
            "channel_kl": channel_kl(digits),
            "unclear_digits": float((probability < CLEAR).double().mean())}  # fmt: skip
