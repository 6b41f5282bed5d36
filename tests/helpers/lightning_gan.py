"""A small float64 GANModule for the Lightning tests (importable by spawned processes),
and the plain Step it must equal."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from ganstep.lightning import GANModule, ResumableLoader

from .integration import BATCH, N, Z, data, models, optimizers, options


class TinyGAN(GANModule):
    """``dropout``: D with a Dropout(0.3), whose masks come from the global stream."""

    def __init__(self, schedule: str = "d_first", r1: float = 0.0, batchnorm: bool = True,
                 out: str | None = None, dropout: bool = False,
                 **step_extra) -> None:  # fmt: skip
        super().__init__(z_dim=Z, seed=0)
        self.G, self.D = models(batchnorm, dropout)
        self.schedule, self.r1, self.out, self.extra = schedule, r1, out, step_extra

    def configure_optimizers(self):
        return optimizers(self.G, self.D)

    def step_options(self) -> dict:
        return {**options(self.schedule, self.r1), **self.extra}

    def on_train_end(self) -> None:  # every process's parameters, for the test to compare
        super().on_train_end()
        if self.out is not None:
            rank = self.trainer.global_rank
            torch.save([p.detach().clone() for p in self.parameters()],
                       Path(self.out) / f"rank{rank}.pt")  # fmt: skip
            torch.save({k: b.clone() for k, b in self.named_buffers()},
                       Path(self.out) / f"buffers{rank}.pt")  # fmt: skip


def loader() -> DataLoader:
    return DataLoader(TensorDataset(data()), batch_size=BATCH, shuffle=False)


def trainer(tmp: Path, **kwargs) -> L.Trainer:
    settings = {"accelerator": "cpu", "devices": 1, "max_epochs": 1, "logger": False,
                "enable_checkpointing": False, "enable_progress_bar": False,
                "enable_model_summary": False, "default_root_dir": str(tmp)}  # fmt: skip
    return L.Trainer(**{**settings, **kwargs})


class TinyImageGAN(TinyGAN):
    """G makes 1 x 4 x 4 images in [-1, 1]: the fixed-z grid goes to the loggers."""

    def __init__(self, **kwargs) -> None:
        super().__init__(batchnorm=False, **kwargs)
        torch.manual_seed(0)
        self.G = nn.Sequential(nn.Linear(Z, 16), nn.Tanh(), nn.Unflatten(1, (1, 4, 4))).double()
        self.D = nn.Sequential(nn.Flatten(), nn.Linear(16, 1)).double()


def image_loader() -> DataLoader:
    gen = torch.Generator().manual_seed(3)
    images = torch.rand(N, 1, 4, 4, generator=gen, dtype=torch.float64) * 2 - 1
    return DataLoader(TensorDataset(images), batch_size=BATCH, shuffle=False)


def resumable_loader(batch: int = BATCH, seed: int = 5) -> ResumableLoader:
    return ResumableLoader(TensorDataset(data()), batch_size=batch, shuffle=True, seed=seed)


def as_lightnings_sampler() -> ResumableLoader:
    """Seed 0: the order of the DistributedSampler Lightning (and the DDP loop) use."""
    return resumable_loader(seed=0)
