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
  iterations, and Lightning's place in the epoch counts batches.
- Resume is exact from any checkpoint: the Step's state, every process's random
  streams and, with a :class:`ResumableLoader`, the loader's place in the epoch travel
  with it.

Subclass :class:`GANModule`::

    class DCGAN(GANModule):
        def __init__(self):
            super().__init__(z_dim=64)
            self.G, self.D = Generator(), Discriminator()

        def configure_optimizers(self):
            return Adam(self.G.parameters(), 2e-4), Adam(self.D.parameters(), 2e-4)

        def step_options(self):
            return {"objective": "ns", "schedule": d_first()}

    loader = ResumableLoader(dataset, batch_size=64, shuffle=True, drop_last=True)
    lightning.Trainer(strategy=GANStrategy(), devices=2, accelerator="cpu").fit(DCGAN(), loader)
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor

try:
    import lightning as L
    from lightning.fabric.utilities.types import _Stateful
    from lightning.pytorch.strategies import DDPStrategy, SingleDeviceStrategy
    from lightning.pytorch.strategies.launchers.multiprocessing import _MultiProcessingLauncher
    from lightning.pytorch.trainer.states import TrainerFn
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError("ganstep.lightning needs Lightning: pip install 'ganstep[lightning]'") from e

from ..engine import distributed as data_parallel
from ..engine.step import Step
from ..trainer.plots import grid_pixels
from .resumable import ResumableLoader

__all__ = ["GANModule", "GANStrategy", "ResumableLoader"]

# Lightning's precisions that leave the numbers to the Step (a float64 module stays so).
FULL_PRECISION = ("32-true", "64-true", "32", "64")


class GANStrategy(DDPStrategy):
    """Lightning's DDP launcher, process group and samplers, with G and D left as they
    are: the Step averages each phase's gradients itself (``Step(distributed=True)``).
    Takes DDPStrategy's arguments (``start_method="spawn"``, ``process_group_backend``)."""

    strategy_name = "ganstep"

    def configure_ddp(self) -> None:
        """No DistributedDataParallel: its reducer would all-reduce in every backward."""

    def _configure_launcher(self) -> None:
        super()._configure_launcher()
        if isinstance(self._launcher, _MultiProcessingLauncher):  # spawn, fork
            self._launcher = _GANLauncher(self, start_method=self._start_method)


class _GANLauncher(_MultiProcessingLauncher):
    """Lightning's spawning launcher, which also refuses the Trainer's settings before it
    starts any process (a refusal raised in a child reaches the caller wrapped in
    ProcessRaisedException), and brings rank 0's whole checkpoint back to the main
    process, where ``trainer.save_checkpoint`` writes it: the main process took no step
    and holds no optimizer, loop or random state of the fit."""

    def launch(self, function, *args: Any, trainer: L.Trainer | None = None, **kwargs: Any):
        if trainer is not None:
            _refuse_what_the_step_does(trainer)
        return super().launch(function, *args, trainer=trainer, **kwargs)

    def _wrapping_function(self, *args: Any, **kwargs: Any) -> None:
        """A spawned process's whole life: the fit, then rank 0's results into the return
        queue (a SimpleQueue: written by the time put returns). Then every process
        leaves its group together and exits without the interpreter's finalisation, in
        which gloo sometimes aborts (see :func:`~ganstep.engine.distributed.exit_now`)."""
        super()._wrapping_function(*args, **kwargs)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            data_parallel.leave()
        data_parallel.exit_now(0)

    def _collect_rank_zero_results(self, trainer: L.Trainer, results: Any):
        self._final_checkpoint_path = None
        module = trainer.lightning_module
        if trainer.state.fn == TrainerFn.FITTING and isinstance(module, GANModule):
            checkpoint = trainer._checkpoint_connector.dump_checkpoint()  # every rank: gathers
            if self._strategy.local_rank == 0:
                folder = tempfile.mkdtemp(prefix="ganstep-spawn-")
                self._final_checkpoint_path = os.path.join(folder, "final.ckpt")
                torch.save(checkpoint, self._final_checkpoint_path)
        return super()._collect_rank_zero_results(trainer, results)

    def get_extra_results(self, trainer: L.Trainer) -> dict[str, Any]:
        extra = super().get_extra_results(trainer)
        extra["ganstep_checkpoint"] = self._final_checkpoint_path
        return extra

    def update_main_process_results(self, trainer: L.Trainer, extra: dict[str, Any]) -> None:
        super().update_main_process_results(trainer, extra)
        path = extra.get("ganstep_checkpoint")
        if path is None:
            return
        try:
            checkpoint = torch.load(path, weights_only=True)
        finally:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        module = trainer.lightning_module
        module._final_checkpoint = checkpoint
        module.iterations = checkpoint["ganstep"]["iterations"]
        # trainer.global_step and current_epoch in the main process, as after a fit in it
        trainer.fit_loop.load_state_dict(checkpoint["loops"]["fit_loop"])


def _refuse_what_the_step_does(trainer: L.Trainer) -> None:
    """Raise ValueError for Trainer settings that the Step does instead, or that would
    change its numbers silently."""
    precision = str(trainer.precision)
    if precision not in FULL_PRECISION:
        if precision.endswith("-mixed"):
            what = ("autocasts both modules and shares one loss scaler between G's and D's "
                    "optimizers")  # fmt: skip
        elif precision.endswith("-true"):
            what = ("turns G's and D's parameters (and the optimizers' state) into 16-bit "
                    "numbers, with no float32 copy to step")  # fmt: skip
        else:
            what = "changes the numbers of both modules behind the Step"
        raise ValueError(
            f"Trainer(precision={trainer.precision!r}) {what}: give the Step its precision "
            "instead (step_options: precision='bf16' or 'fp16': autocast in each phase, "
            "float32 parameters, a loss scaler per optimizer under fp16) and leave the "
            "Trainer at 32-true"
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
    :class:`~ganstep.Step` takes but the models, optimizers and ``distributed``).

    Random streams, per process (rank r of a data parallel fit, r = 0 alone):

    - z comes from :meth:`latent`: ``z_dim`` numbers from a generator of this process
      seeded ``seed + 1000003 * r + 1``;
    - the global stream (Dropout, WGAN-GP's interpolation, augmentation) is left as the
      caller set it on rank 0 and seeded ``seed + 1000003 * r`` on rank r > 0, so that
      no two processes draw the same masks.

    Under data parallelism (:class:`GANStrategy`) every process ends each iteration
    with the same parameters and optimizer state, equal to those of one process on the
    processes' batches concatenated (where D does not mix samples and the losses are
    means). BatchNorm's running statistics follow each process's own batches; with
    ``sync_batchnorm_stats`` (the default) they are averaged over the processes after
    each iteration (one all-reduce), so that every process and the checkpoint hold the
    same ones; with ``False`` each keeps its own and checkpoints hold rank 0's.

    A checkpoint holds the Step's state and every process's streams; with a
    :class:`ResumableLoader` it holds the loader's place in the epoch too, so a fit
    resumed from any checkpoint (mid-epoch, ``d_steps=k``, written after a spawned fit)
    continues exactly.

    Logged at each GAN iteration t = 1, 2, ... (every ``log_every_n_steps``-th, to the
    Trainer's loggers, at step t): the Step's losses and whatever else it returns; a
    value a step does not compute each iteration (lazy R1's ``gp``) is logged as its
    latest. The losses are also on the progress bar. At each epoch's end, at step t: a
    grid of G's samples from a fixed z, to every logger that takes images
    (TensorBoard), when G makes images (N, C, H, W) in [-1, 1].
    """

    def __init__(self, z_dim: int | None = None, seed: int = 0, samples: int = 64,
                 sync_batchnorm_stats: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.automatic_optimization = False  # the Step steps both optimizers
        self.z_dim, self.seed, self.samples = z_dim, seed, samples
        self.sync_batchnorm_stats = sync_batchnorm_stats
        self.step: Step | None = None
        self.latent_generator: torch.Generator | None = None
        self.iterations = 0
        self.latest: dict[str, float] = {}  # the last value of everything the Step logged
        self._pending: dict[str, Tensor] = {}  # ... since the last log step
        self._saved: dict | None = None  # a checkpoint's part, until the Step is built
        self._final_checkpoint: dict | None = None  # rank 0's, after a spawned fit
        self._resumed = False  # restored from a checkpoint, not yet checked (on_train_start)

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
        self._final_checkpoint = None
        rank = data_parallel.rank()
        stream = self.seed + data_parallel.SEED_STRIDE * rank
        self.latent_generator = torch.Generator(self.device).manual_seed(stream + 1)
        if rank:  # every process its own Dropout masks, interpolations, augmentations
            torch.manual_seed(stream)
        self.step = Step(self.G, self.D, opt_g, opt_d, distributed=data_parallel.active(),
                         **options)  # fmt: skip
        if self.step.real_batches is None:
            raise ValueError(
                f"step_options: schedule {self.step.schedule!r} takes as many batches as each "
                "call is given; a GANModule takes a fixed number from Lightning's loader per "
                "iteration: give d_steps a number"
            )
        if self._saved is not None:
            self._restore(self._saved)
            self._saved = None

    def on_train_start(self) -> None:
        self._warn_if_the_loader_cannot_resume()

    def training_step(self, dataloader_iter: Iterator) -> None:
        """One GAN iteration on the loader's next ``real_batches`` batches (Lightning
        hands the iterator over when training_step asks for it: one call, one
        iteration). Batches left at an epoch's end that do not make an iteration are
        not used."""
        batches = []
        for _ in range(self.step.real_batches):
            try:
                batches.append(next(dataloader_iter)[0])
            except StopIteration:  # the epoch's last batches: too few for an iteration
                break
        # Lightning counts one batch per call; it counts the batches taken instead, so
        # that its place in the epoch (for an epoch's end, and a resumed fit) is the loader's
        loop = self.trainer.fit_loop.epoch_loop
        if len(batches) > 1:
            loop.batch_progress.increment_by(len(batches) - 1)
        if len(batches) < self.step.real_batches:
            return None
        reals = [self.step.batch_of(b) for b in batches]
        logs = self.step(reals if len(reals) > 1 else reals[0])
        if self.sync_batchnorm_stats and data_parallel.active():
            data_parallel.average_batchnorm_stats(self.G, self.D)
        self.iterations += 1
        # trainer.global_step counts the steps of Lightning's optimizers, which the Step
        # does not call: one GAN iteration counts one (max_steps, checkpoint intervals)
        progress = loop.manual_optimization.optim_step_progress
        progress.increment_ready()
        progress.increment_completed()
        self._log(logs, reals[0].n)
        return None

    def _log(self, logs: dict[str, Tensor], batch_size: int) -> None:
        """Losses to the progress bar (and callbacks) each iteration; everything, at GAN
        iteration t, to the loggers every ``log_every_n_steps``."""
        losses = {k: v for k, v in logs.items() if k.startswith("loss")}
        self.log_dict(losses, on_step=True, on_epoch=False, prog_bar=True, logger=False,
                      batch_size=batch_size)  # fmt: skip
        self._pending.update(logs)  # tensors: no host sync between log steps
        if self.iterations % max(self.trainer.log_every_n_steps, 1) == 0:
            self._flush_logs()

    def _flush_logs(self) -> None:
        """The latest values to the loggers, at this iteration."""
        self._take_pending()
        for logger in self.loggers:
            logger.log_metrics(dict(self.latest), step=self.iterations)

    def on_train_end(self) -> None:
        if self._pending:  # the last iterations, since the last log step
            self._flush_logs()

    def _take_pending(self) -> None:
        self.latest.update({k: float(v) for k, v in self._pending.items()})
        self._pending = {}

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
        if self.z_dim is None or self.step.game.options.condition is not None:
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
        if self.step is None:
            if self._final_checkpoint is None:
                raise ValueError(
                    "GANModule: nothing to save yet; a checkpoint holds the Step's state, "
                    "which exists once fit has started"
                )
            # the main process of a spawned fit: write what rank 0 held at the fit's end
            checkpoint.clear()
            checkpoint.update(self._final_checkpoint)
            return
        self._take_pending()
        rng = {"torch": torch.get_rng_state(), "latent": self.latent_generator.get_state()}
        ranks = [rng]
        if data_parallel.active():  # every process runs this hook: gather their streams
            ranks = [None] * data_parallel.world_size()
            torch.distributed.all_gather_object(ranks, rng)
        checkpoint["ganstep"] = {"step": self.step.state_dict(), "iterations": self.iterations,
                                 "rng_ranks": ranks, "latest": dict(self.latest)}  # fmt: skip

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        if "ganstep" not in checkpoint:
            raise ValueError("this checkpoint was not written by a GANModule: no 'ganstep' part")
        self._saved = checkpoint["ganstep"]  # applied once the Step exists (on_fit_start)
        fit_loop = checkpoint.get("loops", {}).get("fit_loop")
        if fit_loop is not None:
            _resume_where_the_batches_stopped(fit_loop)

    def _restore(self, saved: dict) -> None:
        ranks = saved["rng_ranks"]
        if len(ranks) != data_parallel.world_size():
            raise ValueError(
                f"this checkpoint was written by {len(ranks)} process(es); resume it with the "
                f"same number (now {data_parallel.world_size()})"
            )
        self.step.load_state_dict(saved["step"])
        self.iterations = int(saved["iterations"])
        self.latest = dict(saved.get("latest", {}))
        rng = ranks[data_parallel.rank()]
        torch.set_rng_state(rng["torch"])
        self.latent_generator.set_state(rng["latent"])
        self._resumed = True

    def _warn_if_the_loader_cannot_resume(self) -> None:
        """A fit resumed from a checkpoint written mid-epoch is exact only if the loader
        continues from there (Lightning's own warning counts optimizer steps, not
        batches, and misses d_steps=k)."""
        if not self._resumed:
            return
        self._resumed = False
        fit_loop = self.trainer.fit_loop
        taken = fit_loop.epoch_loop.batch_progress.current.processed
        per_epoch = self.trainer.num_training_batches
        loaders = fit_loop._combined_loader.flattened if fit_loop._combined_loader else []
        if 0 < taken < per_epoch and not all(isinstance(dl, _Stateful) for dl in loaders):
            warnings.warn(
                f"this checkpoint was written after {taken} of the epoch's {per_epoch} "
                "batches, and the loader cannot continue from there: the resumed fit takes "
                "the epoch's batches from its first again and does not continue the "
                "interrupted one exactly; give fit a ganstep.lightning.ResumableLoader",
                stacklevel=2,
            )


def _resume_where_the_batches_stopped(fit_loop: dict) -> None:
    """Make the fit loop's saved progress say where the batches stopped, which is where
    a resumed fit must go on (Lightning 2.6, iteration-based fits, restores these two
    wrongly: it runs one more batch in an epoch that had ended, and starts a new epoch
    after one that ``max_steps`` cut short).

    - After an epoch's last batch: the next epoch starts from its first batch.
    - An epoch that ``max_steps`` ended early is reopened: its remaining batches follow.
    """
    batches, epochs = fit_loop["epoch_loop.batch_progress"], fit_loop["epoch_progress"]
    taken = batches["current"]["processed"]
    if batches["is_last_batch"]:
        for progress in (epochs["total"], epochs["current"]):
            progress["completed"] = progress["processed"]
        batches["current"] = dict.fromkeys(batches["current"], 0)
        batches["is_last_batch"] = False
    elif taken and epochs["current"]["processed"] == epochs["current"]["started"]:
        for progress in (epochs["total"], epochs["current"]):
            progress["processed"] = progress["completed"] = progress["started"] - 1
