"""The training loop around Step: data, models, EMA, metrics, samples, checkpoints, resume.

A run folder holds ``config.toml`` (the resolved config), ``metrics.jsonl`` (one JSON
object per evaluation, with ``step``), ``samples/`` (PNG grids or 2D scatter plots),
``checkpoints/`` (atomic, last K kept) and ``report.png`` (loss and metric curves).
A resumed run ends with exactly the parameters of an uninterrupted one: every random
stream the loop draws from (z, real batches, the global generator) is saved.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import signal
import sys
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from torch import Tensor, nn

from . import checkpoint, plots
from . import distributed as data_parallel
from .data import Dataset, load_dataset
from .data.idx import cache_dir
from .metrics import FeatureExtractor, fid, kid, toy_metrics
from .models import build_models, image_size
from .objectives import OBJECTIVES
from .precision import DTYPES
from .registry import check_name
from .schedules import SCHEDULES, simultaneous
from .step import Step

R1_OBJECTIVES = ("ns", "minimax", "lsgan", "hinge")


# Defaults that depend on the data; a value given by the user always wins. The points
# defaults are tuned on the 2D grid (benchmarks/quality.py); z has the data's dimension.
POINTS_DEFAULTS = {"steps": 12000, "batch_size": 256, "lr_g": 5e-4, "lr_d": 5e-4, "r1": 0.1,
                   "lr_decay": "linear", "width": 256}  # fmt: skip
IMAGES_DEFAULTS = {"steps": 5000, "batch_size": 64, "lr_g": 2e-4, "lr_d": 2e-4, "r1": 0.0,
                   "lr_decay": "none", "width": 32, "z_dim": 64}  # fmt: skip


@dataclass
class Config:
    """Everything a run depends on; written to ``config.toml``.

    Fields left ``None`` take the defaults of the data's kind (``POINTS_DEFAULTS`` or
    ``IMAGES_DEFAULTS``) when the run starts. With no value at all it trains the 2D grid.
    """

    data: str = "grid"
    data_dir: str | None = None
    model: str = "mlp"
    objective: str = "ns"
    r1: float | None = None
    schedule: str = "d_first"
    fused: bool = False
    precision: str = "fp32"
    compile: str = "none"
    steps: int | None = None
    batch_size: int | None = None
    lr_g: float | None = None
    lr_d: float | None = None
    lr_decay: str | None = None
    beta1: float = 0.5
    beta2: float = 0.999
    z_dim: int | None = None
    width: int | None = None
    ema: float = 0.999
    seed: int = 0
    device: str = "auto"
    out: str = "runs/latest"
    eval_every: int = 1000
    eval_samples: int = 2500
    sample_every: int = 1000
    ckpt_every: int = 1000
    keep: int = 3
    log_every: int = 50
    feature_steps: int = 200

    def resolved(self, data: Dataset) -> Config:
        """A copy with every ``None`` field filled from the defaults of ``data``'s kind."""
        if data.kind == "images":
            defaults = IMAGES_DEFAULTS
        else:
            defaults = {**POINTS_DEFAULTS, "z_dim": data.sample_shape[0]}
        if self.objective not in R1_OBJECTIVES:
            defaults = {**defaults, "r1": 0.0}
        values = dataclasses.asdict(self)
        for key, value in defaults.items():
            if values[key] is None:
                values[key] = value
        return Config(**values)

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        from .models import MODELS

        check_name("model", self.model, MODELS)
        check_name("objective", self.objective, OBJECTIVES)
        check_name("schedule", self.schedule, SCHEDULES)
        check_name("precision", self.precision, DTYPES)
        if not isinstance(self.fused, bool):
            raise ValueError(f"fused must be true or false, got {self.fused!r}")
        if self.fused and self.schedule != "simultaneous":
            raise ValueError(f"fused applies to the simultaneous schedule, not {self.schedule!r}")
        if self.compile not in ("none", "default"):  # else a backend torch.compile knows
            backends = ["none", "default", *torch.compiler.list_backends(exclude_tags=())]
            check_name("compile", self.compile, backends)
        if self.lr_decay is not None:
            check_name("lr_decay", self.lr_decay, ("none", "linear"))
        counts = ("steps", "batch_size", "z_dim", "width", "eval_every", "eval_samples",
                  "sample_every", "ckpt_every", "keep", "log_every", "feature_steps")  # fmt: skip
        for name in counts:
            value = getattr(self, name)
            if value is None:  # filled from the data's defaults when the run starts
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("lr_g", "lr_d"):
            if getattr(self, name) is None:
                continue
            if not math.isfinite(getattr(self, name)) or getattr(self, name) <= 0:
                raise ValueError(f"{name} must be a positive number, got {getattr(self, name)!r}")
        if self.r1 and self.objective not in R1_OBJECTIVES:
            raise ValueError(
                f"r1 applies to the objectives {', '.join(R1_OBJECTIVES)}, not {self.objective!r}"
            )
        if not (0 <= self.ema < 1 and 0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError("ema, beta1 and beta2 must be in [0, 1)")
        if self.device not in ("auto", "cpu") and not self.device.startswith("cuda"):
            raise ValueError(f"device must be auto, cpu or cuda[:N], got {self.device!r}")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {self.device!r} asked for, but CUDA is not available")

    @classmethod
    def from_dict(cls, values: dict) -> Config:
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys: {', '.join(known)}")
        cfg = cls(**values)
        for f in fields(cls):  # TOML gives ints for floats like 1 (lr = 1): accept them
            value = getattr(cfg, f.name)
            if "float" in f.type and isinstance(value, int) and not isinstance(value, bool):
                setattr(cfg, f.name, float(value))
        return cfg

    def to_toml(self) -> str:
        lines = []
        for key, value in dataclasses.asdict(self).items():
            if value is None:
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, int | float):
                text = repr(value)
            else:
                text = json.dumps(value)  # a JSON string is a valid TOML basic string
            lines.append(f"{key} = {text}")
        return "\n".join(lines) + "\n"


class NonFiniteLoss(RuntimeError):
    """A loss became NaN or infinite; training stopped before saving anything after it."""


class Evaluator:
    """Metrics of generated samples: toy mode coverage, or FID/KID against real features."""

    def __init__(self, data: Dataset, cfg: Config) -> None:
        self.data, self.n = data, cfg.eval_samples
        self.floor: dict[str, float] = {}
        if data.modes is not None:
            return
        if data.kind == "images":
            self.extractor = cached_extractor(data, cfg.feature_steps)
            self.embed = self.extractor.features
        else:
            self.embed = lambda x: x.double()
        gen = torch.Generator().manual_seed(0)
        pick = torch.randperm(len(data.train), generator=gen)[: self.n]
        self.real = self.embed(data.train[pick])
        if data.test is not None and len(data.test) >= 2:
            test = self.embed(data.test[: self.n])
            self.floor = {"fid_floor": fid(self.real, test), "kid_floor": kid(self.real, test)}

    def __call__(self, samples: Tensor) -> dict[str, float]:
        if self.data.modes is not None:
            return toy_metrics(samples, self.data.modes, self.data.std)
        fake = self.embed(samples.float().cpu())
        return {"fid": fid(self.real, fake), "kid": kid(self.real, fake), **self.floor}


def cached_extractor(data: Dataset, steps: int) -> FeatureExtractor:
    """The feature extractor of ``data``, trained once and cached by a data checksum."""
    folder = cache_dir() / "features"
    key = f"{data.checksum}-{data.model_hw[0]}px-v{FeatureExtractor.VERSION}-s{steps}"
    path = folder / f"{key}.pt"
    net = FeatureExtractor(data.train.shape[1])
    if path.exists():
        try:
            net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            return net.eval()
        except (RuntimeError, OSError, EOFError):
            pass  # a stale or damaged cache entry: train again and overwrite it
    net = FeatureExtractor.train_on(data.train, steps=steps)
    checkpoint.atomic_save(net.state_dict(), path)
    return net


@torch.no_grad()
def generate(G: nn.Module, latent_dim: int, n: int, device, seed: int, batch: int = 500) -> Tensor:
    """n samples of G in eval mode from a fixed seed, leaving all training streams alone."""
    gen = torch.Generator(device=device).manual_seed(seed)
    was_training = G.training
    G.eval()
    try:
        out = [
            G(torch.randn(min(batch, n - i), latent_dim, generator=gen, device=device)).cpu()
            for i in range(0, n, batch)
        ]
    finally:
        G.train(was_training)
    return torch.cat(out)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def data_meta(data: Dataset) -> dict:
    """What ``ganstep sample`` needs to map samples back to the data's values."""
    return {
        "name": data.name,
        "kind": data.kind,
        "sample_shape": list(data.sample_shape),
        "raw_range": list(data.raw_range),
        "native_hw": list(data.native_hw) if data.native_hw else None,
        "model_hw": list(data.model_hw) if data.model_hw else None,
        "modes": data.modes,
        "std": data.std,
        "shift": data.shift,
        "scale": data.scale,
    }


def dataset_from_meta(meta: dict) -> Dataset:
    hw = meta["native_hw"], meta["model_hw"]
    return Dataset(
        name=meta["name"],
        kind=meta["kind"],
        train=None,
        modes=meta["modes"],
        std=meta["std"],
        shift=meta.get("shift"),
        scale=meta.get("scale"),
        raw_range=tuple(meta["raw_range"]),
        native_hw=tuple(hw[0]) if hw[0] else None,
        model_hw=tuple(hw[1]) if hw[1] else None,
    )


def save_samples(G: nn.Module, data: Dataset, cfg: Config, device, path: Path) -> None:
    if data.kind == "images":
        x = generate(G, cfg.z_dim, 64, device, seed=cfg.seed + 3)
        plots.image_grid(data.to_raw(x), data.raw_range, path)
    else:
        x = generate(G, cfg.z_dim, min(cfg.eval_samples, 2500), device, seed=cfg.seed + 3)
        modes = None if data.modes is None else data.modes.numpy()
        plots.scatter(data.to_raw(x)[:, :2], modes, path, f"{data.name}, {path.stem}")


class _StopFlag:
    """Ctrl-C (SIGINT) asks the loop to stop after the current iteration; a second one
    interrupts at once."""

    def __init__(self) -> None:
        self.requested = False

    def __enter__(self):
        self.installed = threading.current_thread() is threading.main_thread()
        if self.installed:  # signal handlers can only be set from the main thread
            self.previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc) -> None:
        if self.installed:
            signal.signal(signal.SIGINT, self.previous)


class Trainee:
    """What a checkpoint holds: models, optimizers, Step, EMA and every random stream."""

    def __init__(self, cfg: Config, data: Dataset, device: torch.device) -> None:
        self.cfg, self.device = cfg, device
        self.rank, self.world = data_parallel.rank(), data_parallel.world_size()
        torch.manual_seed(cfg.seed)  # the same models everywhere (and rank 0's are broadcast)
        G, D = build_models(cfg.model, data.sample_shape, cfg.objective, cfg.z_dim, cfg.width)
        self.G, self.D = G.to(device), D.to(device)
        betas = (cfg.beta1, cfg.beta2)
        self.opt_g = torch.optim.Adam(self.G.parameters(), cfg.lr_g, betas=betas)
        self.opt_d = torch.optim.Adam(self.D.parameters(), cfg.lr_d, betas=betas)
        self.ema = copy.deepcopy(self.G).requires_grad_(False) if cfg.ema > 0 else None
        # Each process of a data parallel run draws its own z and batches.
        stream = cfg.seed + 1000003 * self.rank
        self.latent_gen = torch.Generator(device=device).manual_seed(stream + 1)
        self.data_gen = torch.Generator().manual_seed(stream + 2)
        objective = OBJECTIVES[cfg.objective](r1=cfg.r1) if cfg.r1 else cfg.objective
        schedule = simultaneous(fused=True) if cfg.fused else cfg.schedule
        compiled = {"none": False, "default": True}.get(cfg.compile, cfg.compile)
        self.step = Step(self.G, self.D, self.opt_g, self.opt_d, objective=objective,
                         schedule=schedule, latent=self.latent, precision=cfg.precision,
                         compile=compiled, distributed=self.world > 1)  # fmt: skip
        if self.rank:
            torch.manual_seed(stream)

    def latent(self, n: int) -> Tensor:
        return torch.randn(n, self.cfg.z_dim, generator=self.latent_gen, device=self.device)

    @property
    def sampler(self) -> nn.Module:
        """The G that samples and metrics use: the EMA when it is on."""
        return self.ema if self.ema is not None else self.G

    def set_lr(self, scale: float) -> None:
        for opt, lr in ((self.opt_g, self.cfg.lr_g), (self.opt_d, self.cfg.lr_d)):
            for group in opt.param_groups:
                group["lr"] = lr * scale

    @torch.no_grad()
    def update_ema(self) -> None:
        if self.ema is not None:
            for e, p in zip(self.ema.parameters(), self.G.parameters(), strict=True):
                e.lerp_(p, 1 - self.cfg.ema)
            for e, b in zip(self.ema.buffers(), self.G.buffers(), strict=True):
                e.copy_(b)

    def rng_state(self) -> dict:
        cuda = self.device.type == "cuda"
        return {
            "torch": torch.get_rng_state(),
            "latent": self.latent_gen.get_state(),
            "data": self.data_gen.get_state(),
            "cuda": torch.cuda.get_rng_state(self.device) if cuda else None,
        }

    def set_rng_state(self, rng: dict) -> None:
        torch.set_rng_state(rng["torch"])
        self.latent_gen.set_state(rng["latent"])
        self.data_gen.set_state(rng["data"])
        if self.device.type == "cuda" and rng.get("cuda") is not None:
            torch.cuda.set_rng_state(rng["cuda"], self.device)

    def state_dict(self) -> dict:
        """Everything to continue exactly; in a data parallel run, call it on every
        process (it gathers each one's random streams under ``rng_ranks``)."""
        rng = self.rng_state()
        ranks = [rng]
        if self.world > 1:
            ranks = [None] * self.world
            torch.distributed.all_gather_object(ranks, rng)
        return {
            "G": self.G.state_dict(),
            "D": self.D.state_dict(),
            "opt_g": self.opt_g.state_dict(),
            "opt_d": self.opt_d.state_dict(),
            "step_state": self.step.state_dict(),
            "ema": self.ema.state_dict() if self.ema is not None else None,
            "rng": rng,
            "rng_ranks": ranks,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a checkpoint (loaded on the CPU: RNG states must stay CPU tensors)."""
        self.G.load_state_dict(state["G"])
        self.D.load_state_dict(state["D"])
        for opt, key in ((self.opt_g, "opt_g"), (self.opt_d, "opt_d")):
            opt.load_state_dict(state[key])
        self.set_lr(1.0)  # the config wins over the saved rates: a resume may change them
        for opt in (self.opt_g, self.opt_d):
            for group in opt.param_groups:
                group["betas"] = (self.cfg.beta1, self.cfg.beta2)
        self.step.load_state_dict(state["step_state"])
        if self.ema is not None and state.get("ema") is not None:
            self.ema.load_state_dict(state["ema"])
        ranks = state.get("rng_ranks", [state["rng"]])
        if len(ranks) != self.world:
            raise ValueError(
                f"this checkpoint was written by {len(ranks)} process(es); resume it with "
                f"the same number (now {self.world}), or its random streams cannot continue"
            )
        self.set_rng_state(ranks[self.rank])


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
        record = _train(cfg, device, resume, progress)
    except BaseException:
        if started_group:
            torch.distributed.destroy_process_group()
        raise
    if started_group:  # leave together: no process tears down a group another still uses
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    return record


def _train(cfg: Config, device: torch.device, resume: bool, progress: bool) -> dict:
    out = Path(cfg.out)
    ckpt_dir, samples_dir, metrics_path = (
        out / "checkpoints",
        out / "samples",
        out / "metrics.jsonl",
    )
    # In a data parallel run every process trains; only rank 0 evaluates and writes.
    writer = data_parallel.rank() == 0
    data = load_dataset(cfg.data, cfg.data_dir)
    cfg = cfg.resolved(data)
    cfg.validate()
    data.fit(
        image_size(data.sample_shape) if data.kind == "images" and cfg.model != "mlp" else None
    )
    trainee = Trainee(cfg, data, device)
    sums: dict[str, Tensor] = {}  # loss sums since the last evaluation, kept on the device
    counts: dict[str, int] = {}
    first_bad = torch.full((), -1, dtype=torch.long, device=device)
    start = 0
    if resume:
        state = checkpoint.load_latest(ckpt_dir, map_location="cpu")
        if state is None:
            raise FileNotFoundError(f"--resume: no checkpoint in {ckpt_dir}")
        trainee.load_state_dict(state)
        start = state["step"]
        sums = {k: v.to(device) for k, v in state["sums"].items()}
        counts = dict(state["counts"])
        if writer:
            _truncate_metrics(metrics_path, start)
    elif checkpoint.list_checkpoints(ckpt_dir):
        raise FileExistsError(
            f"{out} already holds checkpoints: pass --resume to continue it, or choose "
            "another --out"
        )
    evaluator = None
    if writer:
        samples_dir.mkdir(parents=True, exist_ok=True)
        (out / "config.toml").write_text(cfg.to_toml())
        evaluator = Evaluator(data, cfg)

    def save_checkpoint(done: int) -> None:
        _raise_if_non_finite(first_bad)
        state = {"step": done, **trainee.state_dict(), "sums": sums, "counts": counts,
                 "config": dataclasses.asdict(cfg), "data": data_meta(data)}  # fmt: skip
        if writer:
            checkpoint.save(ckpt_dir, done, state, cfg.keep)

    bar = None
    if progress and writer:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=start, desc="ganstep", unit="step", file=sys.stderr)
    last_record: dict = _records(metrics_path)[-1] if start >= cfg.steps else {}
    t0 = time.perf_counter()
    with _StopFlag() as stop:
        for done in range(start + 1, cfg.steps + 1):
            if cfg.lr_decay == "linear":  # a function of the step alone: resume stays exact
                trainee.set_lr(1 - (done - 1) / cfg.steps)
            reals = [data.batch(cfg.batch_size, trainee.data_gen).to(device)
                     for _ in range(trainee.step.real_batches)]  # fmt: skip
            logs = trainee.step(reals if len(reals) > 1 else reals[0])
            for key, value in logs.items():  # on the device: no host sync per step
                sums[key] = sums.get(key, torch.zeros((), device=device)) + value.float()
                counts[key] = counts.get(key, 0) + 1
                first_bad = torch.where((first_bad < 0) & ~torch.isfinite(value), done, first_bad)
            trainee.update_ema()
            last = done == cfg.steps
            if done % cfg.log_every == 0 or last:
                _raise_if_non_finite(first_bad)
                if bar is not None:
                    losses = {k: f"{v.item():.3f}" for k, v in logs.items() if k.startswith("loss")}
                    bar.set_postfix(losses)
                    bar.update(done - bar.n)
            if (done % cfg.eval_every == 0 or last) and writer:
                _raise_if_non_finite(first_bad)
                samples = generate(trainee.sampler, cfg.z_dim, cfg.eval_samples, device,
                                   seed=cfg.seed + 4)  # fmt: skip
                last_record = {
                    "step": done,
                    **{k: round(v.item() / counts[k], 6) for k, v in sums.items()},
                    **evaluator(samples),
                    "elapsed_s": round(time.perf_counter() - t0, 2),
                }
                sums, counts = {}, {}
                with metrics_path.open("a") as f:
                    f.write(json.dumps(last_record) + "\n")
            if (done % cfg.sample_every == 0 or last) and writer:
                save_samples(
                    trainee.sampler, data, cfg, device, samples_dir / f"step_{done:08d}.png"
                )
            if done % cfg.ckpt_every == 0 or last:
                save_checkpoint(done)
            # Processes agree on stopping at log steps only: one that stopped alone
            # would leave the others waiting in the next collective.
            agreed = trainee.world == 1 or done % cfg.log_every == 0 or last
            if trainee.world > 1 and agreed:
                stop.requested = _any_process(stop.requested, device)
            if stop.requested and agreed:
                if not (done % cfg.ckpt_every == 0 or last):
                    save_checkpoint(done)
                if bar is not None:
                    bar.close()
                print(f"interrupted at step {done}: checkpoint saved; continue with --resume",
                      file=sys.stderr)  # fmt: skip
                raise KeyboardInterrupt
    if bar is not None:
        bar.close()
    if writer and metrics_path.exists():
        plots.report(metrics_path, out / "report.png")
    return last_record


def _any_process(flag: bool, device: torch.device) -> bool:
    """Whether any process of the run set ``flag`` (so that all stop at one step)."""
    t = torch.tensor(float(flag), device=device)
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return bool(t.item())


def _raise_if_non_finite(first_bad: Tensor) -> None:
    bad = int(first_bad.item())
    if bad >= 0:
        raise NonFiniteLoss(
            f"a loss became NaN or infinite at step {bad}; training stopped and nothing was "
            "saved after it (the last checkpoint before it is kept). Try smaller learning "
            "rates (--lr-g, --lr-d)."
        )


def _records(path: Path) -> list[dict]:
    if not path.exists():
        return [{}]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] or [{}]


def _truncate_metrics(path: Path, step: int) -> None:
    """Drop records written after the checkpoint a run resumes from."""
    if path.exists():
        keep = [r for r in _records(path) if r and r["step"] <= step]
        path.write_text("".join(json.dumps(r) + "\n" for r in keep))


def load_run(run: str | Path, map_location="cpu") -> tuple[Config, dict]:
    """The config and newest checkpoint of a run folder."""
    run = Path(run)
    import tomllib

    config_path = run / "config.toml"
    if not config_path.exists():
        raise FileNotFoundError(f"{run} is not a ganstep run folder: no config.toml")
    cfg = Config.from_dict(tomllib.loads(config_path.read_text()))
    state = checkpoint.load_latest(run / "checkpoints", map_location=map_location)
    if state is None:
        raise FileNotFoundError(f"{run / 'checkpoints'} holds no checkpoint")
    return cfg, state
