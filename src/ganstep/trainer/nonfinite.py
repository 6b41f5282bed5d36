"""What made a training loss NaN or infinite, read from the run when it happens: which
losses went bad, whether the models' weights are still finite, and which setting stands
out. The message names what it finds rather than guessing at learning rates."""

from __future__ import annotations

import torch
from torch import nn

from .config import Config

# Settings past these are far outside any working recipe: name them as the likely cause.
HUGE_LR = 1.0
HUGE_R1 = 1e4


def _first_non_finite(module: nn.Module) -> str | None:
    for name, p in module.named_parameters():
        if not torch.isfinite(p).all():
            return name
    return None


def explain(cfg: Config, G: nn.Module, D: nn.Module, bad: list[str]) -> str:
    """What made the losses ``bad`` non-finite, one clause per finding, most telling
    first: the settings that stand out, the penalties that went bad, the weights no
    longer finite. (The data cannot: it is mapped to about -1..1 when it is loaded, and
    values too large for that are refused there.)"""
    found = []
    for name in ("lr_g", "lr_d"):
        value = getattr(cfg, name)
        if value is not None and value > HUGE_LR:
            flag = "--" + name.replace("_", "-")
            found.append(f"{flag} {value:g} is far above any working learning rate "
                         "(2e-4 to 1e-3 are usual)")  # fmt: skip
    if cfg.r1 is not None and cfg.r1 > HUGE_R1:
        found.append(f"--r1 {cfg.r1:g} is a very large penalty weight (0.1 to 10 are usual)")
    if "gp" in bad:  # R1 and WGAN-GP log their penalty as gp
        what = f"the R1 penalty (--r1 {cfg.r1:g})" if cfg.r1 else "WGAN-GP's gradient penalty"
        found.append(f"{what} went non-finite")
    for role, module in (("G", G), ("D", D)):
        name = _first_non_finite(module)
        if name is not None:
            found.append(f"{role}'s weights are no longer finite (first: {name})")
    if not found:
        found.append("no setting stands out: try smaller learning rates (--lr-g, --lr-d)")
    return "; ".join(found)
