"""The training loop around Step: set up (data, models, resume), then loop (steps,
logs, evaluations, samples, checkpoints) until done or stopped.

A resumed run ends with exactly the parameters of an uninterrupted one: every random
stream the loop draws from (z, real batches, the global generator) is checkpointed
(:mod:`ganstep.trainer.trainee`). The run folder's files: :mod:`ganstep.trainer.run_folder`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import signal
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from ..engine import distributed as data_parallel
from ..engine.errors import GanstepWarning
from ..engine.interrupt import Stopped, takes_ctrl_c
from . import checkpoint, nonfinite, plots
from . import run_folder as folder
from .backends import cuda_backends
from .config import Config
from .data import Dataset, load_dataset
from .evaluation import Evaluator
from .iteration import Iteration
from .loss_tally import LossTally, NonFiniteLoss
from .models import image_size
from .run_folder import RunLock
from .sampling import class_labels, generate, save_samples
from .tensorboard import Board
from .trainee import Trainee

__all__ = ["Config", "NonFiniteLoss", "resolve_device", "train"]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def train(cfg: Config, *, resume: bool = False, progress: bool = True) -> dict:
    """Train as ``cfg`` says; return the last metrics record.

    With ``resume``, continue from the newest checkpoint of ``cfg.out``. Raises
    :class:`NonFiniteLoss` if a loss becomes NaN or infinite (checkpoints written
    before it stay), and stops cleanly on Ctrl-C after saving a checkpoint.

    Under torchrun (``WORLD_SIZE`` > 1) it joins the process group and trains data
    parallel: every process on its own batches, rank 0 alone evaluating and writing.
    """
    cfg.validate()
    device = resolve_device(cfg.device)
    started_group = False
    if data_parallel.launched() and not data_parallel.active():
        data_parallel.init(device.type)  # torchrun's environment says where to meet
        started_group = True
    device = data_parallel.local_device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    try:
        with cuda_backends(cfg.model, cfg.tf32, device):
            record = _train_in_folder(cfg, device, resume, progress)
    except BaseException:
        if started_group:
            torch.distributed.destroy_process_group()
        raise
    if started_group:
        data_parallel.leave()
    return record


def _train_in_folder(cfg: Config, device: torch.device, resume: bool, progress: bool) -> dict:
    """Hold the run folder's lock for the whole run (rank 0 takes it for every process)."""
    out = Path(cfg.out)
    writer = data_parallel.rank() == 0
    with contextlib.ExitStack() as held:
        refused, afresh, leftovers = None, False, ""
        if writer:
            try:
                afresh, leftovers = _take_folder(out, resume, held)
            except (ValueError, RuntimeError, FileExistsError) as e:
                refused = e
        # every process leaves together if rank 0 could not take the folder
        agreed = data_parallel.world_size() > 1 and _any_process(refused is not None, device)
        if agreed and refused is None:
            raise RuntimeError(f"rank 0 could not take the run folder {out}; see its error")
        if refused is not None:
            raise refused
        if data_parallel.world_size() > 1:  # rank 0's finding, for every process
            afresh = _any_process(afresh, device)
        return _train_and_report(cfg, device, resume and not afresh, progress, writer, leftovers)


def _take_folder(out: Path, resume: bool, held: contextlib.ExitStack) -> tuple[bool, str]:
    """Rank 0: refuse a folder that is not ganstep's before writing anything into it,
    take its lock, and clear an attempt that stopped before its first checkpoint.
    Return whether the run starts afresh because of that, and the writer tag of the run
    that left the folder (whose temporary files are leftovers)."""
    stale = None
    if out.is_dir() and folder.lock_holder(out) is None:  # a held lock: RunLock says whose
        folder.check_folder(out)
        stale = folder.stale_attempt(out)
        if not resume and stale is None:
            folder.refuse_existing_run(out)
    lock = held.enter_context(RunLock(out))
    if stale is None:
        return False, lock.previous_tag
    folder.clear_stale_attempt(out, stale, resume)
    return True, lock.previous_tag


@dataclass
class RunState:
    """What the loop works with, once set up."""

    cfg: Config
    out: Path
    data: Dataset  # what training draws from (a subset with --limit)
    trainee: Trainee
    tally: LossTally
    start: int
    writer: bool  # rank 0: evaluates and writes
    evaluator: Evaluator | None
    meta: dict  # the data's description, in every checkpoint
    iteration: Iteration  # runs one training iteration (eager, or from CUDA graphs)
    board: Board | None = None  # --tensorboard, rank 0
    # The loop's seconds so far: those of the processes before a resume (from the
    # checkpoint) plus this one's since its loop began, so elapsed_s counts the run.
    elapsed_before: float = 0.0
    loop_began: float | None = None

    def elapsed(self) -> float:
        since = 0.0 if self.loop_began is None else time.perf_counter() - self.loop_began
        return self.elapsed_before + since

    def save_checkpoint(self, done: int) -> None:
        self.tally.check()
        state = {"step": done, **self.trainee.state_dict(), "sums": self.tally.sums,
                 "counts": self.tally.counts, "config": dataclasses.asdict(self.cfg),
                 "data": self.meta, "elapsed_s": self.elapsed()}  # fmt: skip
        if self.writer:
            checkpoint.save(self.out / "checkpoints", done, state, self.cfg.keep)
        if self.board is not None:  # the events up to a checkpoint are on disk with it
            self.board.flush()

    def log(self, logs: dict[str, Tensor], done: int, rate: float) -> None:
        """The step's losses and the run's progress to TensorBoard (one host sync)."""
        if self.board is None:
            return
        self.board.scalars("Loss", {k: v.item() for k, v in logs.items()}, done)
        trainee = self.trainee
        progress = {f"lr_{who}": float(opt.param_groups[0]["lr"])
                    for who, opt in (("g", trainee.opt_g), ("d", trainee.opt_d))}  # fmt: skip
        progress["steps_per_s"] = rate
        for who, scaler in trainee.step.precision.scalers.items():
            progress[f"loss_scale_{who}"] = scaler.get_scale()
        self.board.scalars("Progress", progress, done)


def _train_and_report(
    cfg: Config,
    device: torch.device,
    resume: bool,
    progress: bool,
    writer: bool,
    leftovers: str = "",
) -> dict:
    run = _set_up_run(cfg, device, resume, writer, leftovers)
    try:
        record = _training_loop(run, device, progress)
    finally:
        if run.board is not None:
            run.board.close()
    if writer and (run.out / "metrics.jsonl").exists():
        plots.report(folder.records(run.out / "metrics.jsonl"), run.out / "report.png")
    return record


def _warn_lr_jump(cfg: Config, state: dict) -> None:
    """A resume that changes --steps under linear decay moves the whole decay: the
    learning rate jumps at the resumed step. Allowed (a longer run is a new schedule),
    but said, not only written in config.toml."""
    before, step = state["config"].get("steps"), state["step"]
    if cfg.lr_decay != "linear" or before in (None, cfg.steps) or step >= cfg.steps:
        return
    was, now = 1 - step / before, 1 - step / cfg.steps
    warnings.warn(
        f"--steps {cfg.steps} (the run was set for {before}) with lr_decay linear: the "
        f"learning rates decay to 0 at step {cfg.steps} now, so at step {step} they jump "
        f"from {was:.3g} to {now:.3g} times --lr-g/--lr-d (--lr-decay none keeps them "
        "constant)",
        GanstepWarning,
        stacklevel=3,
    )


def prepared_data(cfg: Config) -> tuple[Dataset, Config]:
    """The data ``cfg`` names, fitted to its model's size (images padded for a
    convolutional model), and ``cfg`` resolved on it and checked against it."""
    data = load_dataset(cfg.data, cfg.data_dir)
    cfg = cfg.resolved(data)
    cfg.validate()
    data.fit(
        image_size(data.sample_shape) if data.kind == "images" and cfg.model != "mlp" else None
    )
    if cfg.conditional and data.labels is None:
        raise ValueError(
            f"--conditional needs labelled data (digits, mnist, fashion-mnist, or a folder "
            f"with one subfolder of images per class); {cfg.data} has no labels"
        )
    if cfg.augment != "none" and data.kind != "images":
        raise ValueError(f"--augment {cfg.augment} transforms images; {cfg.data} is points")
    return data, cfg


def _set_up_run(
    cfg: Config, device: torch.device, resume: bool, writer: bool, leftovers: str
) -> RunState:
    """Data, the resolved config, models and optimizers, and the state to resume from.
    In a data parallel run every process trains; only rank 0 evaluates and writes."""
    out = Path(cfg.out)
    if writer:  # the lock is ours: the last holder's temporary files are killed writes'
        for place in (out, out / "checkpoints", out / "samples"):
            checkpoint.remove_partial(place, leftovers)
    data, cfg = prepared_data(cfg)
    # Training reads the subset; the metrics compare with the whole data (one FID floor).
    train = data.subset(cfg.limit) if cfg.limit is not None else data
    state = folder.resume_state(cfg, data.checksum) if resume else None
    if not resume:
        folder.refuse_existing_run(out)
    if writer and state is not None:
        _warn_lr_jump(cfg, state)
    if writer and train.train is not None and cfg.batch_size > len(train.train):
        warnings.warn(
            f"batch_size {cfg.batch_size} is larger than the {len(train.train)} training "
            f"samples of {cfg.data}: every batch repeats samples",
            GanstepWarning,
            stacklevel=3,
        )
    trainee, tally, start, elapsed = Trainee(cfg, train, device), LossTally(device), 0, 0.0
    if state is not None:
        trainee.load_state_dict(state)
        start = state["step"]
        elapsed = state.get("elapsed_s", 0.0)  # absent from checkpoints before it was kept
        tally = LossTally(device, state["sums"], state["counts"])
        if writer:
            folder.truncate_metrics(out / "metrics.jsonl", start)
    evaluator = None
    if writer:
        (out / "samples").mkdir(parents=True, exist_ok=True)
        folder.write_config(out / "config.toml", cfg, state and state["config"], start)
        with _own_rng(device):
            evaluator = Evaluator(data, cfg)
    meta = {**folder.data_meta(data), "checksum": data.checksum}
    board = Board(out, cfg, start) if writer and cfg.tensorboard else None
    tally.explain = functools.partial(nonfinite.explain, cfg, trainee.G, trainee.D)
    iteration = Iteration(cfg, train, trainee, writer)
    return RunState(cfg, out, train, trainee, tally, start, writer, evaluator, meta, iteration,
                    board, elapsed)  # fmt: skip


def _training_loop(run: RunState, device: torch.device, progress: bool) -> dict:
    """Steps from ``run.start`` to ``cfg.steps``; the last metrics record."""
    cfg, trainee, tally = run.cfg, run.trainee, run.tally
    bar = None
    if progress and run.writer:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=run.start, desc="ganstep", unit="step",
                   file=sys.stderr)  # fmt: skip
    metrics = run.out / "metrics.jsonl"
    record: dict = folder.records(metrics)[-1] if run.start >= cfg.steps else {}
    run.loop_began = logged_at = time.perf_counter()
    logged = run.start
    with _StopFlag() as stop:
        for done in range(run.start + 1, cfg.steps + 1):
            if cfg.lr_decay == "linear":  # a function of the step alone: resume stays exact
                trainee.set_lr(1 - (done - 1) / cfg.steps)
            logs = run.iteration()  # the real batches, the Step, the EMA
            tally.add(logs, done)
            last = done == cfg.steps
            if done % cfg.log_every == 0 or last:
                tally.check()
                now = time.perf_counter()
                run.log(logs, done, (done - logged) / max(now - logged_at, 1e-9))
                logged, logged_at = done, now
                if bar is not None:
                    bar.set_postfix({k: f"{v.item():.3f}" for k, v in logs.items()
                                     if k.startswith("loss")})  # fmt: skip
                    bar.update(done - bar.n)
            if run.writer:
                record = _report(run, done, device) or record
            if done % cfg.ckpt_every == 0 or last:
                run.save_checkpoint(done)
            if _stopped(run, stop, done, device):
                if bar is not None:
                    bar.close()
                print(stop.stopped_line(done), file=sys.stderr)
                raise Stopped(stop.status())
    if bar is not None:
        bar.close()
    return record


def _report(run: RunState, done: int, device: torch.device) -> dict | None:
    """Rank 0's evaluation and sample picture when step ``done`` is due for them; the
    metrics record, if one was made."""
    cfg, last, record = run.cfg, done == run.cfg.steps, None
    if done % cfg.eval_every == 0 or last:
        with _own_rng(device):
            record = _evaluate(run, done, device)
        checkpoint.append_text(run.out / "metrics.jsonl", json.dumps(record) + "\n")
        if run.board is not None:
            run.board.scalars("Metrics", {k: v for k, v in record.items() if k != "step"}, done)
    if done % cfg.sample_every == 0 or last:
        path = run.out / "samples" / f"step_{done:08d}.png"
        with _own_rng(device):
            save_samples(run.trainee.sampler, run.data, cfg, device, path)
        if run.board is not None:
            run.board.picture(path, done)
    return record


@contextlib.contextmanager
def _own_rng(device: torch.device):
    """Run work beside training (metric networks, evaluation, samples) on forked global
    generators, seeded alike every time: it draws nothing from the training's streams,
    so a resumed run goes on exactly as one that never stopped."""
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(0)
        yield


def _evaluate(run: RunState, done: int, device: torch.device) -> dict:
    """The metrics record of step ``done``: mean losses since the last one, metrics."""
    cfg, elapsed = run.cfg, run.elapsed()  # the loop's time up to this evaluation
    run.tally.check()
    labels = class_labels(cfg.eval_samples, len(run.data.classes)) if cfg.conditional else None
    samples = generate(run.trainee.sampler, cfg.z_dim, cfg.eval_samples, device,
                       seed=cfg.seed + 4, labels=labels)  # fmt: skip
    return {"step": done, **run.tally.take_means(), **run.evaluator(samples, labels),
            "elapsed_s": round(elapsed, 2)}  # fmt: skip


def _stopped(run: RunState, stop: _StopFlag, done: int, device: torch.device) -> bool:
    """Whether to stop after step ``done`` on Ctrl-C, with a checkpoint of it saved.
    Processes agree on stopping at log steps only: one that stopped alone would leave
    the others waiting in the next collective."""
    cfg, world = run.cfg, run.trainee.world
    last = done == cfg.steps
    agreed = world == 1 or done % cfg.log_every == 0 or last
    if world > 1 and agreed:
        stop.requested = _any_process(stop.requested, device)
    if not (stop.requested and agreed):
        return False
    if not (done % cfg.ckpt_every == 0 or last):
        run.save_checkpoint(done)
    return True


class _StopFlag:
    """Ctrl-C (SIGINT), SIGTERM (a scheduler's stop) and SIGHUP (a closed terminal) ask
    the loop to stop after the current iteration, with a checkpoint of it; a second one
    interrupts at once. A signal the process was started ignoring (nohup) stays ignored."""

    SIGNALS = tuple(
        getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)
    )

    def __init__(self) -> None:
        self.requested = False
        self.by: signal.Signals | None = None
        self.previous: dict = {}

    def __enter__(self):
        if takes_ctrl_c():
            for sig in self.SIGNALS:
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested, self.by = True, signal.Signals(signum)

    def stopped_line(self, done: int) -> str:
        """The line said when the loop stops at step ``done``."""
        how = "interrupted" if self.by in (None, signal.SIGINT) else f"stopped by {self.by.name}"
        return f"{how} at step {done}: checkpoint saved; continue with --resume"

    def status(self) -> int:
        """The exit status of a process ended by the signal: 128 + its number."""
        return 128 + (self.by or signal.SIGINT)

    def __exit__(self, *exc) -> None:
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)


def _any_process(flag: bool, device: torch.device) -> bool:
    """Whether any process of the run set ``flag`` (so that all stop at one step)."""
    t = torch.tensor(float(flag), device=device)
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return bool(t.item())
