"""TensorBoard event files of a ``ganstep train`` run (``--tensorboard``), written by
rank 0 into ``tensorboard/`` of the run folder beside ``metrics.jsonl``.

What StyleGAN2-ADA's training loop writes, from what ganstep computes anyway: every
loss and penalty and BEGAN's k at each ``--log-every`` step (``Loss/...``), D's mean
score on real and fake and the mean of their signs (``Loss/score_real``,
``Loss/sign_real``, ...), the learning rates, the loss scales under fp16 and the steps
per second (``Progress/...``), every metric at each evaluation (``Metrics/...``), the
fixed-z sample picture at each sample step (``samples``), and the run's configuration
once as hyperparameters. A resumed run appends; what a killed run wrote after its last
checkpoint is purged, so no curve holds a step twice.
"""

from __future__ import annotations

import dataclasses
import numbers
from pathlib import Path

import numpy as np

from .config import Config

FOLDER = "tensorboard"


class Board:
    """One run's TensorBoard writer. ``start``: the step the run resumes from (0: new)."""

    def __init__(self, out: Path, cfg: Config, start: int) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as e:  # torch's writer needs the tensorboard package
            raise RuntimeError(
                "--tensorboard needs the tensorboard package: pip install 'ganstep[tensorboard]'"
            ) from e
        # purge_step drops the events a killed run wrote after the checkpoint resumed from
        self.writer = SummaryWriter(str(out / FOLDER), purge_step=start + 1 if start else None)
        if start == 0:
            self._hparams(cfg)

    def _hparams(self, cfg: Config) -> None:
        """The configuration as TensorBoard hyperparameters, in this run's own files."""
        from torch.utils.tensorboard.summary import hparams

        values = {k: v if isinstance(v, int | float | str | bool) else str(v)
                  for k, v in dataclasses.asdict(cfg).items()}  # fmt: skip
        for summary in hparams(values, {}):
            self.writer.file_writer.add_summary(summary)

    def scalars(self, group: str, values: dict[str, object], step: int) -> None:
        """``values`` (numbers; anything else is skipped) as ``group/name`` at ``step``."""
        for name, value in values.items():
            if isinstance(value, numbers.Number) and not isinstance(value, bool):
                self.writer.add_scalar(f"{group}/{name}", float(value), step)

    def picture(self, path: Path, step: int) -> None:
        """The sample picture at ``path`` (a PNG the run just wrote) as image ``samples``."""
        from PIL import Image

        with Image.open(path) as im:
            pixels = np.asarray(im.convert("RGB"))
        self.writer.add_image("samples", pixels, step, dataformats="HWC")

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
