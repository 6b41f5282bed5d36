"""Samples of a trained G: a fixed seed, eval mode, every training stream left alone;
the grids and scatter plots a run folder keeps."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import Tensor, nn

from . import plots
from .config import Config
from .data import Dataset


def class_labels(n: int, classes: int) -> Tensor:
    """Labels 0, 1, ..., classes - 1, 0, 1, ... for n conditional samples: balanced."""
    return torch.arange(n) % classes


@torch.no_grad()
def generate(
    G: nn.Module,
    latent_dim: int,
    n: int,
    device,
    seed: int,
    batch: int = 500,
    labels: Tensor | None = None,
    progress: bool = False,
) -> Tensor:
    """n samples of G in eval mode from a fixed seed, leaving all training streams alone;
    with ``labels`` (n classes), of a conditional G made for them. ``progress``: a
    progress bar on stderr."""
    gen = torch.Generator(device=device).manual_seed(seed)
    was_training = G.training
    G.eval()
    starts = range(0, n, batch)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc="sampling", unit="batch", file=sys.stderr)
    try:
        out = []
        for i in starts:
            z = torch.randn(min(batch, n - i), latent_dim, generator=gen, device=device)
            args = (z,) if labels is None else (z, labels[i : i + batch].to(device))
            out.append(G(*args).cpu())
    finally:
        G.train(was_training)
    return torch.cat(out)


def save_samples(G: nn.Module, data: Dataset, cfg: Config, device, path: Path) -> None:
    if data.kind == "images" and cfg.conditional:  # one row per class
        k = len(data.classes)
        labels = torch.arange(k).repeat_interleave(8)
        x = generate(G, cfg.z_dim, len(labels), device, seed=cfg.seed + 3, labels=labels)
        plots.image_grid(data.to_raw(x), data.raw_range, path, cols=8)
    elif data.kind == "images":
        x = generate(G, cfg.z_dim, 64, device, seed=cfg.seed + 3)
        plots.image_grid(data.to_raw(x), data.raw_range, path)
    else:
        x = generate(G, cfg.z_dim, min(cfg.eval_samples, 2500), device, seed=cfg.seed + 3)
        modes = None if data.modes is None else data.modes.numpy()
        plots.scatter(data.to_raw(x)[:, :2], modes, path, f"{data.name}, {path.stem}")
