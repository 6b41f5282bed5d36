"""Mode coverage on toy mixtures, measured as PacGAN (Lin et al., 2018) measures it."""

from __future__ import annotations

import torch
from torch import Tensor

from .histogram import kl_to_uniform


def toy_metrics(samples: Tensor, modes: Tensor, std: float) -> dict[str, float]:
    """``modes``: modes with at least one high-quality sample nearest to them;
    ``hq_fraction``: share of samples within 3 standard deviations of their nearest
    mode; ``reverse_kl``: KL(histogram of samples over nearest modes || uniform)."""
    samples = samples.detach().double().cpu()
    modes = modes.double()
    dist = torch.cdist(samples, modes)
    nearest_dist, nearest = dist.min(1)
    hq = nearest_dist <= 3 * std
    return {
        "modes": int(nearest[hq].unique().numel()),
        "hq_fraction": float(hq.double().mean()),
        "reverse_kl": kl_to_uniform(torch.bincount(nearest, minlength=len(modes))),
    }
