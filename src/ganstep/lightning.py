"""A ganstep :class:`~ganstep.Step` under ``lightning.Trainer`` (extra ``ganstep[lightning]``).

Lightning keeps what it is good at: the launcher and the process group, the
``DistributedSampler``, checkpoints, loggers and the progress bar. ganstep keeps what
decides exactness:

- Data parallelism is the Step's: one all-reduce per phase of the module that phase
  steps. :class:`GANStrategy` is Lightning's DDP strategy without the
  ``DistributedDataParallel`` wrapper, whose reducer would all-reduce in every backward
  (of both modules, and beside the Step's own: twice). Buffers are broadcast from rank
  0 once, when the Step is built.
- Precision and accumulation are the Step's (``precision=``, ``accumulate=``): one loss
  scaler per optimizer, one optimizer step per phase. Lightning's ``16-mixed`` (one
  scaler for both optimizers) and ``accumulate_grad_batches`` are refused, with what to
  use instead, as are ``gradient_clip_val`` and any strategy that wraps G and D.
- One ``training_step`` runs one GAN iteration on as many batches as it takes
  (``d_steps=k``: k): ``trainer.global_step`` and the step the loggers see count GAN
  iterations.

Subclass :class:`GANModule`::

    class DCGAN(GANModule):
        def __init__(self):
            super().__init__(z_dim=64)
            self.G, self.D = Generator(), Discriminator()

        def configure_optimizers(self):
            return Adam(self.G.parameters(), 2e-4), Adam(self.D.parameters(), 2e-4)

        def step_options(self):
            return {"objective": "ns", "schedule": d_first()}

    lightning.Trainer(strategy=GANStrategy(), devices=2, accelerator="cpu").fit(DCGAN(), loader)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor

try:
    import lightning as L
    from lightning.pytorch.strategies import DDPStrategy, SingleDeviceStrategy
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError("ganstep.lightning needs Lightning: pip install 'ganstep[lightning]'") from e

from . import distributed as data_parallel
from .plots import grid_pixels
from .step import Step

__all__ = ["GANModule", "GANStrategy"]

# Lightning's precisions that leave the numbers to the Step (a float64 module stays so).
FULL_PRECISION = ("32-true", "64-true", "32", "64")


class GANStrategy(DDPStrategy):
    """Lightning's DDP launcher, process group and samplers, with G and D left as they
    are: the Step averages each phase's gradients itself (``Step(distributed=True)``).
    Takes DDPStrategy's arguments (``start_method="spawn"``, ``process_group_backend``)."""

    strategy_name = "ganstep"

    def configure_ddp(self) -> None:
        """No DistributedDataParallel: its reducer would all-reduce in every backward."""


def _refuse_what_the_step_does(trainer: L.Trainer) -> None:
    """Raise ValueError for Trainer settings that the Step does instead, or that would
    change its numbers silently."""
    if str(trainer.precision) not in FULL_PRECISION:
        raise ValueError(
            f"Trainer(precision={trainer.precision!r}) autocasts both modules and shares one "
            "loss scaler between G's and D's optimizers: give the Step its precision "
            "instead (step_options: precision='bf16' or 'fp16', a scaler per optimizer) and "
            "leave the Trainer at 32-true"
        )
    if trainer.accumulate_grad_batches != 1:
        raise ValueError(
            f"Trainer(accumulate_grad_batches={trainer.accumulate_grad_batches}): give the "
            "Step its accumulation instead (step_options: accumulate=k, k micro-batches per "
            "batch, one optimizer step per phase)"
        )
    if trainer.gradient_clip_val:
        raise ValueError(
            "Trainer(gradient_clip_val=...): clip in the Step's hooks instead (step_options: "
            "before_step={'d': lambda D: torch.nn.utils.clip_grad_norm_(D.parameters(), c)})"
        )
    strategy = trainer.strategy
    if not isinstance(strategy, GANStrategy | SingleDeviceStrategy):
        raise ValueError(
            f"Trainer(strategy={type(strategy).__name__}) would wrap G and D in one "
            "DistributedDataParallel, which all-reduces in every backward (twice, beside the "
            "Step's own): use strategy=ganstep.lightning.GANStrategy()"
        )


class GANModule(L.LightningModule):
    """A LightningModule whose ``training_step`` is one iteration of a ganstep Step.

    Subclasses set ``self.G`` and ``self.D``, return ``(opt_g, opt_d)`` from
    ``configure_optimizers`` and the Step's options from :meth:`step_options` (anything
    :class:`~ganstep.Step` takes but the models, optimizers and ``distributed``). z is
    drawn by :meth:`latent`, from ``z_dim`` and a generator per process that is saved in
    checkpoints with the global one, so a resumed fit continues exactly.

    Logged each iteration (``self.log_dict``): the Step's losses (and whatever else it
    returns). Each epoch's end: a grid of G's samples from a fixed z, to every logger
    that takes images (TensorBoard), when G makes images (N, C, H, W) in [-1, 1].
    """

    def __init__(self, z_dim: int | None = None, seed: int = 0, samples: int = 64) -> None:
        super().__init__()
        self.automatic_optimization = False  # the Step steps both optimizers
        self.z_dim, self.seed, self.samples = z_dim, seed, samples
        self.step: Step | None = None
        self.latent_generator: torch.Generator | None = None
        self.iterations = 0
        self._saved: dict | None = None  # a checkpoint's part, until the Step is built

    # -- what a subclass provides ----------------------------------------------------

    def step_options(self) -> dict[str, Any]:
        """The Step's options: ``objective``, ``schedule`` and any others it takes."""
        raise NotImplementedError("a GANModule returns its Step's options from step_options()")

    def latent(self, n: int) -> Tensor:
        """n z of ``z_dim`` from this process's own generator (override for others)."""
        if self.z_dim is None:
            raise ValueError("GANModule(z_dim=...) draws z; or override latent(n)")
        dtype = next(self.G.parameters()).dtype
        return torch.randn(n, self.z_dim, generator=self.latent_generator, device=self.device,
                           dtype=dtype)  # fmt: skip

    # -- Lightning's hooks ------------------------------------------------------------

    @property
    def trainer(self) -> L.Trainer:
        return L.LightningModule.trainer.fget(self)

    @trainer.setter
    def trainer(self, trainer: L.Trainer | None) -> None:
        if trainer is not None:  # attached before Lightning checks its own settings
            _refuse_what_the_step_does(trainer)
        L.LightningModule.trainer.fset(self, trainer)

    def on_fit_start(self) -> None:
        opt_g, opt_d = self.optimizers(use_pl_optimizer=False)
        options = {"latent": self.latent, **self.step_options()}
        if "distributed" in options:
            raise ValueError("step_options: GANStrategy decides distributed; leave it out")
        rank = data_parallel.rank()
        self.latent_generator = torch.Generator(self.device).manual_seed(
            self.seed + data_parallel.SEED_STRIDE * rank + 1
        )
        self.step = Step(self.G, self.D, opt_g, opt_d, distributed=data_parallel.active(),
                         **options)  # fmt: skip
        if self._saved is not None:
            self._restore(self._saved)
            self._saved = None

    def training_step(self, dataloader_iter: Iterator) -> None:
        """One GAN iteration on the loader's next ``real_batches`` batches (Lightning
        hands the iterator over when training_step asks for it: one call, one
        iteration). Batches left at an epoch's end that do not make an iteration are
        not used."""
        reals = [self.step.batch_of(next(dataloader_iter)[0])
                 for _ in range(self.step.real_batches)]  # fmt: skip
        logs = self.step(reals if len(reals) > 1 else reals[0])
        self.iterations += 1
        # trainer.global_step counts the steps of Lightning's optimizers, which the Step
        # does not call: one GAN iteration counts one (max_steps, checkpoint intervals)
        progress = self.trainer.fit_loop.epoch_loop.manual_optimization.optim_step_progress
        progress.increment_ready()
        progress.increment_completed()
        self.log_dict(logs, on_step=True, on_epoch=False, batch_size=reals[0].n)

    def on_train_epoch_end(self) -> None:
        grid = self._sample_grid()
        if grid is None:
            return
        for logger in self.loggers:
            experiment = getattr(logger, "experiment", None)
            if hasattr(experiment, "add_image"):
                experiment.add_image("samples", grid, self.iterations,
                                     dataformats="HWC" if grid.ndim == 3 else "HW")  # fmt: skip

    @torch.no_grad()
    def _sample_grid(self):
        """G's samples from a fixed z as a grid of pixels, or None where G's output is
        not images in [-1, 1] (or the Step is conditional)."""
        if self.z_dim is None or self.step.game.condition is not None:
            return None
        gen = torch.Generator(self.device).manual_seed(self.seed + 3)
        dtype = next(self.G.parameters()).dtype
        z = torch.randn(self.samples, self.z_dim, generator=gen, device=self.device, dtype=dtype)
        training = self.G.training
        self.G.eval()
        try:
            x = self.G(z)
        finally:
            self.G.train(training)
        if not isinstance(x, Tensor) or x.dim() != 4 or x.shape[1] not in (1, 3):
            return None
        return grid_pixels(x.float().cpu().numpy(), (-1.0, 1.0))

    # -- checkpoints: the Step's state and every process's random streams -------------

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        rng = {"torch": torch.get_rng_state(), "latent": self.latent_generator.get_state()}
        ranks = [rng]
        if data_parallel.active():  # every process runs this hook: gather their streams
            ranks = [None] * data_parallel.world_size()
            torch.distributed.all_gather_object(ranks, rng)
        checkpoint["ganstep"] = {"step": self.step.state_dict(), "iterations": self.iterations,
                                 "rng_ranks": ranks}  # fmt: skip

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        if "ganstep" not in checkpoint:
            raise ValueError("this checkpoint was not written by a GANModule: no 'ganstep' part")
        self._saved = checkpoint["ganstep"]  # applied once the Step exists (on_fit_start)

    def _restore(self, saved: dict) -> None:
        ranks = saved["rng_ranks"]
        if len(ranks) != data_parallel.world_size():
            raise ValueError(
                f"this checkpoint was written by {len(ranks)} process(es); resume it with the "
                f"same number (now {data_parallel.world_size()})"
            )
        self.step.load_state_dict(saved["step"])
        self.iterations = int(saved["iterations"])
        rng = ranks[data_parallel.rank()]
        torch.set_rng_state(rng["torch"])
        self.latent_generator.set_state(rng["latent"])
