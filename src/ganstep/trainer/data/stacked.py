"""Stacked MNIST: three MNIST digits drawn independently as the R, G and B channels.

The standard mode-collapse benchmark on images (VEEGAN, PacGAN): 1,000 modes, one
per 3-digit number; the label of a sample is 100 x (R's digit) + 10 x (G's) + B's.
The set is built from the MNIST files (verified by their checksums), deterministically
from a seed: the training samples stack training digits, the test samples test digits.
"""

from __future__ import annotations

import numpy as np

MODES = 1000
TRAIN_SIZE = 60_000  # as many stacked samples as MNIST has training digits
TEST_SIZE = 10_000
PLACES = np.array([100, 10, 1])


def stack(
    images: np.ndarray, labels: np.ndarray, n: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples (n, 3, H, W) whose channels are digits drawn independently and
    uniformly from ``images`` (N, H, W), and their labels (0-999)."""
    if n < 1:
        raise ValueError(f"stacked MNIST needs at least one sample, got {n}")
    pick = np.random.default_rng(seed).integers(0, len(images), size=(n, 3))
    return images[pick], (labels[pick].astype(np.int64) * PLACES).sum(1)


def class_names() -> list[str]:
    return [f"{k:03d}" for k in range(MODES)]
