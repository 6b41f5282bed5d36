"""One iteration of ``ganstep train``: its real batches drawn, the Step, G's EMA.

On CUDA it is replayed from CUDA graphs (``--graph auto``, the default), where the run
allows it: the batches are drawn on the device from data kept there (or copied into
the graph's input when the data is too large for it), z from the run's own generator,
Adam is capturable with its rate a tensor, and the EMA is one foreach op, all inside
the graph. A run that cannot be captured says why in one line and runs eagerly; one
whose capture fails stops (:class:`CaptureStopped`), and the ``ganstep`` command goes
on without graphs in a new process.
"""

from __future__ import annotations

import sys

import torch
from torch import Tensor

from ..engine.cuda_graph import CaptureFailed, IterationGraphs, StaticInput, check_capturable
from .config import Config
from .data import Dataset
from .models import pack
from .trainee import Trainee

# Eager iterations of each kind before its graph is captured (cuDNN's plans and Adam's
# moments exist by then).
WARMUP = 2


def graph_refusal(cfg: Config, trainee: Trainee) -> str | None:
    """Why this run's iterations are not replayed from CUDA graphs; None if they are."""
    if cfg.graph == "off":
        return "--graph off"
    if trainee.device.type != "cuda":
        return "CUDA graphs need a CUDA device"
    if cfg.compile != "none":
        return (
            f"--compile {cfg.compile}: torch.compile checks its guards in Python at each "
            "call, which a replay would skip (use --compile none for graphs)"
        )
    try:
        check_capturable(trainee.step)
    except ValueError as e:
        return str(e)
    return None


class CaptureStopped(RuntimeError):
    """A ``--graph auto`` run stopped at a failed capture, all its checkpoints kept: the
    ``ganstep`` command goes on from the last one without graphs in a new process."""


class Iteration:
    """Call it to run the next training iteration; it returns the Step's logs."""

    def __init__(self, cfg: Config, data: Dataset, trainee: Trainee, writer: bool) -> None:
        self.cfg, self.trainee = cfg, trainee
        on_device = trainee.data_device.type == "cuda"
        self.data = data.on(trainee.data_device) if on_device else data
        self.static: StaticInput | None = None
        self.graphs: IterationGraphs | None = None
        self.copies_in = False
        refusal = graph_refusal(cfg, trainee)
        if refusal is None:
            generators = [trainee.latent_gen, *([trainee.data_gen] if on_device else [])]
            self.graphs = IterationGraphs(trainee.step, self._run, WARMUP, generators)
            self.copies_in = not on_device  # host data: each batch copied into the graph
        elif cfg.graph == "on":
            raise ValueError(f"--graph on: {refusal}")
        elif trainee.device.type == "cuda" and cfg.graph == "auto" and writer:
            print(f"ganstep: training eagerly, not from CUDA graphs: {refusal} "
                  "(--graph off hides this note)", file=sys.stderr)  # fmt: skip

    def __call__(self) -> dict[str, Tensor]:
        if self.graphs is None:
            return self._run()
        if self.copies_in:
            reals = self._draw()
            if self.static is None:
                self.static = StaticInput(reals)
            self.static.fill(reals)
        try:
            return self.graphs()
        except CaptureFailed as e:
            # nothing of this step ran and the last checkpoint stands; no eager fallback
            # here: torch leaves a failed capture's process unfit to go on (CaptureFailed)
            stop = CaptureStopped if self.cfg.graph == "auto" else RuntimeError
            raise stop(
                f"CUDA graph capture failed ({e.reason}); train with --graph off (--resume "
                "continues from the last checkpoint), and please report this"
            ) from e

    def _run(self) -> dict[str, Tensor]:
        """The iteration itself, as one graph holds it."""
        reals = self._draw() if self.static is None else self.static.value
        logs = self.trainee.step(reals if len(reals) > 1 else reals[0])
        self.trainee.update_ema()
        return logs

    def _draw(self) -> list:
        """The real batches of one iteration, one per D step of the schedule."""
        draws = self.trainee.step.real_batches
        return [real_batch(self.data, self.cfg, self.trainee.data_gen, self.trainee.device)
                for _ in range(draws)]  # fmt: skip


def real_batch(data: Dataset, cfg: Config, gen: torch.Generator, device) -> object:
    """One real batch on ``device``: x, (x, labels) for a conditional run, or packs."""
    if cfg.conditional:
        x, y = data.labelled_batch(cfg.batch_size, gen)
        return x.to(device), y.to(device)
    if cfg.pack > 1:  # one batch per pack slot, drawn slot after slot, as PacGAN feeds D
        return pack([data.batch(cfg.batch_size, gen) for _ in range(cfg.pack)]).to(device)
    return data.batch(cfg.batch_size, gen).to(device)
