"""Pictures a run writes: sample grids (PNG), 2D scatter plots and the report."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import checkpoint


def image_grid(
    images: np.ndarray, raw_range: tuple[float, float], path: Path, cols: int | None = None
) -> None:
    """Save images (N, C, H, W) with values in ``raw_range`` as one PNG grid, ``cols``
    images a row (default: as square as it gets)."""
    from PIL import Image

    picture = Image.fromarray(grid_pixels(images, raw_range, cols))
    checkpoint.atomic_write(Path(path), lambda f: picture.save(f, format="PNG"))


def grid_pixels(
    images: np.ndarray, raw_range: tuple[float, float], cols: int | None = None
) -> np.ndarray:
    """Images (N, C, H, W) in ``raw_range`` as one grid of 8-bit pixels: (H, W) for
    one channel, (H, W, C) for colour."""
    lo, hi = raw_range
    x = np.clip((images - lo) / (hi - lo), 0, 1)
    n, c, h, w = x.shape
    cols = cols or math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    pad = 2
    grid = np.ones((c, rows * (h + pad) + pad, cols * (w + pad) + pad), dtype=np.float64)
    for i in range(n):
        r, q = divmod(i, cols)
        y0, x0 = pad + r * (h + pad), pad + q * (w + pad)
        grid[:, y0 : y0 + h, x0 : x0 + w] = x[i]
    pixels = (grid * 255).round().astype(np.uint8)
    return pixels[0] if c == 1 else pixels.transpose(1, 2, 0)


def scatter(points: np.ndarray, modes: np.ndarray | None, path: Path, title: str) -> None:
    """Save 2D samples (and the true modes) as a scatter plot PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5), dpi=100)
    ax.scatter(points[:, 0], points[:, 1], s=2, alpha=0.4, label="generated")
    if modes is not None:
        ax.scatter(modes[:, 0], modes[:, 1], s=30, c="red", marker="x", label="modes")
    ax.set_aspect("equal")
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=7)
    checkpoint.atomic_write(Path(path), lambda f: fig.savefig(f, format="png"))
    plt.close(fig)


def report(rows: list[dict], path: Path) -> None:
    """Plot every numeric series of the metrics records ``rows`` against the step, one
    panel each, written atomically to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [
        k
        for k in dict.fromkeys(k for r in rows for k in r)
        if k not in ("step", "elapsed_s")
        and all(isinstance(r.get(k, 0), int | float) for r in rows)
    ]
    cols = 3
    panels = max(1, len(keys))
    fig, axes = plt.subplots(
        math.ceil(panels / cols), cols, figsize=(4 * cols, 3 * math.ceil(panels / cols)), dpi=100
    )
    axes = np.atleast_1d(axes).ravel()
    for ax, key in zip(axes, keys, strict=False):
        xs = [r["step"] for r in rows if key in r]
        ax.plot(xs, [r[key] for r in rows if key in r], marker=".")
        ax.set_title(key)
        ax.set_xlabel("step")
    for ax in axes[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    checkpoint.atomic_write(path, lambda f: fig.savefig(f, format="png"))
    plt.close(fig)
