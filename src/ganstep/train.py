"""The training loop around Step: data, models, EMA, metrics, samples, checkpoints, resume.

A run folder holds ``config.toml`` (the resolved config), ``metrics.jsonl`` (one JSON
object per evaluation, with ``step``), ``samples/`` (PNG grids or 2D scatter plots),
``checkpoints/`` (atomic, last K kept) and ``report.png`` (loss and metric curves).
A resumed run ends with exactly the parameters of an uninterrupted one: every random
stream the loop draws from (z, real batches, the global generator) is saved.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from torch import Tensor, nn

from . import checkpoint, plots
from . import distributed as data_parallel
from .data import Dataset, load_dataset
from .data.idx import cache_dir
from .errors import GanstepWarning
from .metrics import FeatureExtractor, class_accuracy, fid, kid, toy_metrics, train_classifier
from .metrics import classes as classes_metric
from .metrics import stacked as stacked_metric
from .metrics.stacked import stacked_metrics
from .models import build_models, image_size
from .objectives import OBJECTIVES, lazy_regularization
from .precision import DTYPES
from .registry import check_name
from .run_folder import RunLock
from .schedules import SCHEDULES, simultaneous
from .step import Step

R1_OBJECTIVES = ("ns", "minimax", "lsgan", "hinge")


# Defaults that depend on the data; a value given by the user always wins. The points
# defaults are tuned on the 2D grid (benchmarks/quality.py); z has the data's dimension.
# The 2D grid's recipe: lazy R1 (every 16th D step) costs 0.4% of a step where R1 on
# every step costs 27%, and lr 1e-3 finds the 25 modes in the 8,000 steps that buys
# (benchmarks/RESULTS.md, "Sample quality").
POINTS_DEFAULTS = {"steps": 8000, "batch_size": 256, "lr_g": 1e-3, "lr_d": 1e-3, "r1": 0.1,
                   "r1_every": 16, "lr_decay": "linear", "width": 256}  # fmt: skip
IMAGES_DEFAULTS = {"steps": 5000, "batch_size": 64, "lr_g": 2e-4, "lr_d": 2e-4, "r1": 0.0,
                   "r1_every": 1, "lr_decay": "none", "width": 32, "z_dim": 64}  # fmt: skip

# What --resume may change: how long the run goes on, how often it reports, where it
# runs. Everything else defines the run (its math, its data, its metrics) and must stay.
RESUMABLE = ("steps", "eval_every", "sample_every", "ckpt_every", "keep", "log_every",
             "device", "compile", "out", "data_dir")  # fmt: skip
MAX_SEED = 2**62

_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}
_TYPE_NAMES = {"str": "a string", "int": "an integer", "float": "a number",
               "bool": "true or false"}  # fmt: skip


def _check_type(name: str, value: object, annotation: str, where: str = "") -> None:
    """Raise ValueError unless ``value`` has the type a field annotated ``annotation``
    takes: a bool is not a number, a float is not an integer."""
    if value is None and "None" in annotation:
        return
    base = annotation.split("|")[0].strip()
    if isinstance(value, _TYPES[base]) and (base == "bool" or not isinstance(value, bool)):
        return
    shown = json.dumps(value, default=str)
    raise ValueError(
        f"{where}{name} must be {_TYPE_NAMES[base]}, got {shown} ({type(value).__name__})"
    )


def check_values(values: dict, source: str | Path | None = None) -> None:
    """Raise ValueError, naming ``source`` and the key, at the first unknown key or value
    of the wrong type in ``values`` (a dict of :class:`Config` fields, as from TOML)."""
    where = f"{source}: " if source is not None else ""
    known = {f.name: f.type for f in fields(Config)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"{where}unknown config keys {unknown}; known keys: {', '.join(known)}")
    for key, value in values.items():
        _check_type(key, value, known[key], where)


def run_changes(saved: dict, now: dict) -> list[str]:
    """The keys outside :data:`RESUMABLE` whose values differ, as ``key: old -> new``."""
    defaults = {f.name: f.default for f in fields(Config)}
    changes = []
    for key in defaults:
        if key in RESUMABLE:
            continue
        old, new = saved.get(key, defaults[key]), now.get(key, defaults[key])
        if old != new:
            changes.append(f"{key}: {json.dumps(old)} -> {json.dumps(new)}")
    return changes


def check_same_run(saved: dict, now: dict, folder: str | Path) -> None:
    """Raise ValueError listing each change of ``now`` to the run that ``saved`` defines."""
    changes = run_changes(saved, now)
    if changes:
        raise ValueError(
            f"--resume continues the run in {folder} as it was defined; these differ from it: "
            f"{'; '.join(changes)}. Only {', '.join(RESUMABLE)} may change on resume "
            "(steps upward); start a new run with another --out to change the rest"
        )


@dataclass
class Config:
    """Everything a run depends on; written to ``config.toml``.

    Fields left ``None`` take the defaults of the data's kind (``POINTS_DEFAULTS`` or
    ``IMAGES_DEFAULTS``) when the run starts. With no value at all it trains the 2D grid.
    """

    data: str = "grid"
    data_dir: str | None = None
    model: str = "mlp"
    conditional: bool = False
    objective: str = "ns"
    r1: float | None = None
    r1_every: int | None = None
    schedule: str = "d_first"
    fused: bool = False
    accumulate: int = 1
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
        if self.objective not in R1_OBJECTIVES or self.r1 == 0:
            defaults = {**defaults, "r1": 0.0, "r1_every": 1}
        values = dataclasses.asdict(self)
        for key, value in defaults.items():
            if values[key] is None:
                values[key] = value
        return Config(**values)

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        from .models import MODELS

        for f in fields(self):
            _check_type(f.name, getattr(self, f.name), f.type)
        if not self.out.strip():
            raise ValueError("out must name the run folder, got an empty string")
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
        counts = ("steps", "batch_size", "z_dim", "width", "eval_every", "sample_every",
                  "accumulate", "ckpt_every", "keep", "log_every", "feature_steps")  # fmt: skip
        for name in counts:
            value = getattr(self, name)
            if value is not None and value < 1:  # None: filled from the data's defaults
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.batch_size is not None and self.batch_size % self.accumulate:
            raise ValueError(
                f"accumulate {self.accumulate} splits each batch into equal micro-batches: "
                f"batch_size {self.batch_size} does not divide by it"
            )
        if self.eval_samples < 2:  # FID/KID compare the spread of the samples
            raise ValueError(f"eval_samples must be at least 2, got {self.eval_samples}")
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be an integer from 0 to 2**62, got {self.seed}")
        if self.r1 is not None and not (math.isfinite(self.r1) and self.r1 >= 0):
            raise ValueError(f"r1 must be a number >= 0, got {self.r1!r}")
        for name in ("lr_g", "lr_d"):
            if getattr(self, name) is None:
                continue
            if not math.isfinite(getattr(self, name)) or getattr(self, name) <= 0:
                raise ValueError(f"{name} must be a positive number, got {getattr(self, name)!r}")
        if self.r1_every is not None and self.r1_every < 1:
            raise ValueError(f"r1_every must be a positive integer, got {self.r1_every}")
        if (self.r1_every or 1) > 1 and self.r1 is not None and not self.r1:
            raise ValueError("r1_every applies to R1: give r1 > 0 with it")
        if self.r1 and self.objective not in R1_OBJECTIVES:
            raise ValueError(
                f"r1 applies to the objectives {', '.join(R1_OBJECTIVES)}, not {self.objective!r}"
            )
        if not (0 <= self.ema < 1 and 0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError("ema, beta1 and beta2 must be in [0, 1)")
        if self.device not in ("auto", "cpu") and not re.fullmatch(r"cuda(:\d+)?", self.device):
            raise ValueError(f"device must be auto, cpu or cuda[:N], got {self.device!r}")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {self.device!r} asked for, but CUDA is not available")

    @classmethod
    def from_dict(cls, values: dict, source: str | Path | None = None) -> Config:
        """A Config from ``values`` (e.g. a TOML file's), type-checked; errors name
        ``source`` and the key."""
        check_values(values, source)
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
    """Metrics of generated samples: toy mode coverage, or FID/KID against real features,
    and for a conditional run the class accuracy of samples made for known classes."""

    def __init__(self, data: Dataset, cfg: Config) -> None:
        self.data, self.n = data, cfg.eval_samples
        self.floor: dict[str, float] = {}
        self.classifier = self.digits = None
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
        if cfg.conditional:
            self.classifier = cached_classifier(data, cfg.feature_steps)
            images, labels = data.train, data.labels
            if data.test is not None and data.test_labels is not None:
                images, labels = data.test, data.test_labels
            accuracy = class_accuracy(self.classifier, images[: self.n], labels[: self.n])
            self.floor["class_accuracy_floor"] = accuracy

        if data.name == "stacked-mnist":
            self.digits, accuracy = cached_digit_classifier(cfg.data_dir, data.model_hw[0],
                                                            cfg.feature_steps)  # fmt: skip
            real = stacked_metrics(self.digits, data.train[pick])
            self.floor.update({"digit_accuracy": accuracy,
                               **{f"{k}_floor": v for k, v in real.items()}})  # fmt: skip

    def __call__(self, samples: Tensor, labels: Tensor | None = None) -> dict[str, float]:
        if self.data.modes is not None:
            return toy_metrics(samples, self.data.modes, self.data.std)
        samples = samples.float().cpu()
        fake = self.embed(samples)
        found = {"fid": fid(self.real, fake), "kid": kid(self.real, fake)}
        if self.digits is not None:
            found.update(stacked_metrics(self.digits, samples))
        if self.classifier is not None and labels is not None:
            found["class_accuracy"] = class_accuracy(self.classifier, samples, labels.cpu())
        return {**found, **self.floor}


def _cached_net(name: str, make: Callable[[], nn.Module], fit: Callable[[], nn.Module]):
    """A metric network, trained once by ``fit`` and cached under ``name``."""
    path = cache_dir() / "features" / f"{name}.pt"
    net = make()
    if path.exists():
        try:
            net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            return net.eval()
        except (RuntimeError, OSError, EOFError):
            pass  # a stale or damaged cache entry: train again and overwrite it
    net = fit()
    checkpoint.atomic_save(net.state_dict(), path)
    return net


def cached_extractor(data: Dataset, steps: int) -> FeatureExtractor:
    """The feature extractor of ``data``, trained once and cached by a data checksum."""
    key = f"{data.checksum}-{data.model_hw[0]}px-v{FeatureExtractor.VERSION}-s{steps}"
    return _cached_net(key, lambda: FeatureExtractor(data.train.shape[1]),
                       lambda: FeatureExtractor.train_on(data.train, steps=steps))  # fmt: skip


def cached_classifier(data: Dataset, steps: int) -> FeatureExtractor:
    """The class_accuracy classifier of labelled ``data``, trained once and cached."""
    classes = len(data.classes)
    key = f"classes-{data.checksum}-{data.model_hw[0]}px-v{classes_metric.VERSION}-s{steps}"
    channels = data.train.shape[1]

    def fit() -> FeatureExtractor:  # a classifier needs more steps than rotations do
        return train_classifier(data.train, data.labels, classes, 3 * steps)

    return _cached_net(key, lambda: FeatureExtractor(channels, outputs=classes), fit)


def cached_digit_classifier(
    data_dir: str | None, size: int, feature_steps: int
) -> tuple[FeatureExtractor, float]:
    """Stacked MNIST's digit classifier at ``size`` pixels, trained once on MNIST's
    training digits and cached, with its accuracy on MNIST's test digits."""
    mnist = load_dataset("mnist", data_dir)
    mnist.fit(size)
    steps = stacked_metric.STEPS_PER_FEATURE_STEP * feature_steps
    key = f"digits-mnist-{size}px-v{stacked_metric.VERSION}-s{steps}"
    net = _cached_net(key, lambda: FeatureExtractor(1, outputs=10),
                      lambda: stacked_metric.train_digit_classifier(mnist.train, mnist.labels,
                                                                    steps))  # fmt: skip
    # its test accuracy is cached beside it: 10,000 digits take seconds to classify
    record = cache_dir() / "features" / f"{key}.accuracy.json"
    weights = record.with_name(f"{key}.pt")
    try:
        saved = json.loads(record.read_text())
        if saved["weights_mtime_ns"] == weights.stat().st_mtime_ns:
            return net, float(saved["accuracy"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or stale: measure it
    accuracy = class_accuracy(net, mnist.test, mnist.test_labels)
    record.write_text(json.dumps({"accuracy": accuracy,
                                  "weights_mtime_ns": weights.stat().st_mtime_ns}))  # fmt: skip
    return net, accuracy


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
) -> Tensor:
    """n samples of G in eval mode from a fixed seed, leaving all training streams alone;
    with ``labels`` (n classes), of a conditional G made for them."""
    gen = torch.Generator(device=device).manual_seed(seed)
    was_training = G.training
    G.eval()
    try:
        out = []
        for i in range(0, n, batch):
            z = torch.randn(min(batch, n - i), latent_dim, generator=gen, device=device)
            args = (z,) if labels is None else (z, labels[i : i + batch].to(device))
            out.append(G(*args).cpu())
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
        "classes": list(data.classes) if data.classes else None,
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
        classes=tuple(meta["classes"]) if meta.get("classes") else None,
    )


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
        classes = len(data.classes) if cfg.conditional else None
        G, D = build_models(cfg.model, data.sample_shape, cfg.objective, cfg.z_dim, cfg.width,
                            classes)  # fmt: skip
        self.G, self.D = G.to(device), D.to(device)
        betas = (cfg.beta1, cfg.beta2)
        d_rates = (cfg.lr_d, betas)
        if cfg.r1 and cfg.r1_every > 1:  # lazy R1: StyleGAN2's lr and betas for D
            d_rates = lazy_regularization(cfg.lr_d, betas, cfg.r1_every)
        self.rates = {"g": (cfg.lr_g, betas), "d": d_rates}
        self.opt_g = torch.optim.Adam(self.G.parameters(), cfg.lr_g, betas=betas)
        self.opt_d = torch.optim.Adam(self.D.parameters(), d_rates[0], betas=d_rates[1])
        self.ema = copy.deepcopy(self.G).requires_grad_(False) if cfg.ema > 0 else None
        # Each process of a data parallel run draws its own z and batches.
        stream = cfg.seed + 1000003 * self.rank
        self.latent_gen = torch.Generator(device=device).manual_seed(stream + 1)
        self.data_gen = torch.Generator().manual_seed(stream + 2)
        objective = cfg.objective
        if cfg.r1:
            objective = OBJECTIVES[cfg.objective](r1=cfg.r1, r1_every=cfg.r1_every)
        schedule = simultaneous(fused=True) if cfg.fused else cfg.schedule
        compiled = {"none": False, "default": True}.get(cfg.compile, cfg.compile)
        self.step = Step(self.G, self.D, self.opt_g, self.opt_d, objective=objective,
                         schedule=schedule, latent=self.latent, precision=cfg.precision,
                         compile=compiled, distributed=self.world > 1,
                         condition="real" if cfg.conditional else None,
                         accumulate=cfg.accumulate)  # fmt: skip
        if self.rank:
            torch.manual_seed(stream)

    def latent(self, n: int) -> Tensor:
        return torch.randn(n, self.cfg.z_dim, generator=self.latent_gen, device=self.device)

    @property
    def sampler(self) -> nn.Module:
        """The G that samples and metrics use: the EMA when it is on."""
        return self.ema if self.ema is not None else self.G

    def set_lr(self, scale: float) -> None:
        for opt, who in ((self.opt_g, "g"), (self.opt_d, "d")):
            for group in opt.param_groups:
                group["lr"] = self.rates[who][0] * scale

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
        for opt, who in ((self.opt_g, "g"), (self.opt_d, "d")):
            for group in opt.param_groups:
                group["betas"] = self.rates[who][1]
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
    """Hold the run folder's lock for the whole run (rank 0 takes it for every process)."""
    out = Path(cfg.out)
    writer = data_parallel.rank() == 0
    with contextlib.ExitStack() as held:
        refused = None
        if writer:
            try:
                held.enter_context(RunLock(out))
            except (ValueError, RuntimeError) as e:
                refused = e
        # every process leaves together if rank 0 could not take the folder
        agreed = data_parallel.world_size() > 1 and _any_process(refused is not None, device)
        if agreed and refused is None:
            raise RuntimeError(f"rank 0 could not take the run folder {out}; see its error")
        if refused is not None:
            raise refused
        return _run(cfg, device, resume, progress, writer)


def _resume_state(cfg: Config, data_checksum: str) -> dict:
    """The newest checkpoint of ``cfg.out``, once it is known to be the run ``cfg`` asks for."""
    out = Path(cfg.out)
    state = checkpoint.load_latest(out / "checkpoints", map_location="cpu")
    if state is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {out / 'checkpoints'}")
    check_same_run(state["config"], dataclasses.asdict(cfg), out)
    saved = state["data"].get("checksum")
    if saved is not None and saved != data_checksum:
        raise ValueError(
            f"--resume: the data {cfg.data!r} is not what the run in {out} trained on (its "
            f"checksum was {saved}, now {data_checksum})"
        )
    if cfg.steps < state["step"]:
        raise ValueError(
            f"steps {cfg.steps} is below the {state['step']} steps the run in {out} has "
            f"completed; pass --steps {state['step']} or more"
        )
    return state


def _refuse_existing_run(out: Path) -> None:
    """A fresh start must not mix its files with an earlier run's."""
    if checkpoint.list_checkpoints(out / "checkpoints"):
        raise FileExistsError(
            f"{out} already holds checkpoints: pass --resume to continue it, or choose "
            "another --out"
        )
    metrics = out / "metrics.jsonl"
    if metrics.exists() and metrics.stat().st_size > 0:
        raise FileExistsError(
            f"{out} holds the metrics.jsonl of an earlier run that saved no checkpoint, so it "
            "cannot be resumed: delete that folder or choose another --out"
        )


def _write_config(path: Path, cfg: Config, resumed: dict | None, step: int) -> None:
    """config.toml: ``cfg``, after one comment line per resume saying what it changed."""
    history = []
    if resumed is not None:
        if path.exists():
            history = [line for line in path.read_text().splitlines() if line.startswith("# ")]
        now = dataclasses.asdict(cfg)
        changed = [f"{key} {json.dumps(resumed.get(key))} -> {json.dumps(now[key])}"
                   for key in RESUMABLE if resumed.get(key) != now[key]]  # fmt: skip
        history.append(f"# resumed at step {step}" + (": " + ", ".join(changed) if changed else ""))
    path.write_text("".join(line + "\n" for line in history) + cfg.to_toml())


def _run(cfg: Config, device: torch.device, resume: bool, progress: bool, writer: bool) -> dict:
    out = Path(cfg.out)
    ckpt_dir, samples_dir, metrics_path = (
        out / "checkpoints",
        out / "samples",
        out / "metrics.jsonl",
    )
    if writer:  # the lock is ours: a temporary file there is a killed write's leftover
        checkpoint.remove_partial(ckpt_dir)
    # In a data parallel run every process trains; only rank 0 evaluates and writes.
    data = load_dataset(cfg.data, cfg.data_dir)
    cfg = cfg.resolved(data)
    cfg.validate()
    data.fit(
        image_size(data.sample_shape) if data.kind == "images" and cfg.model != "mlp" else None
    )
    checksum = data.checksum
    if cfg.conditional and data.labels is None:
        raise ValueError(
            f"--conditional needs labelled data (digits, mnist, fashion-mnist, or a folder "
            f"with one subfolder of images per class); {cfg.data} has no labels"
        )
    state = _resume_state(cfg, checksum) if resume else None
    if not resume:
        _refuse_existing_run(out)
    if writer and data.train is not None and cfg.batch_size > len(data.train):
        warnings.warn(
            f"batch_size {cfg.batch_size} is larger than the {len(data.train)} training samples "
            f"of {cfg.data}: every batch repeats samples",
            GanstepWarning,
            stacklevel=2,
        )
    trainee = Trainee(cfg, data, device)
    sums: dict[str, Tensor] = {}  # loss sums since the last evaluation, kept on the device
    counts: dict[str, int] = {}
    first_bad = torch.full((), -1, dtype=torch.long, device=device)
    start = 0
    if state is not None:
        trainee.load_state_dict(state)
        start = state["step"]
        sums = {k: v.to(device) for k, v in state["sums"].items()}
        counts = dict(state["counts"])
        if writer:
            _truncate_metrics(metrics_path, start)
    evaluator = None
    if writer:
        samples_dir.mkdir(parents=True, exist_ok=True)
        _write_config(out / "config.toml", cfg, state and state["config"], start)
        evaluator = Evaluator(data, cfg)
    meta = {**data_meta(data), "checksum": checksum}

    def save_checkpoint(done: int) -> None:
        _raise_if_non_finite(first_bad)
        state = {"step": done, **trainee.state_dict(), "sums": sums, "counts": counts,
                 "config": dataclasses.asdict(cfg), "data": meta}  # fmt: skip
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
            reals = [_real_batch(data, cfg, trainee.data_gen, device)
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
                labels = (
                    class_labels(cfg.eval_samples, len(data.classes)) if cfg.conditional else None
                )
                samples = generate(trainee.sampler, cfg.z_dim, cfg.eval_samples, device,
                                   seed=cfg.seed + 4, labels=labels)  # fmt: skip
                last_record = {
                    "step": done,
                    **{k: round(v.item() / counts[k], 6) for k, v in sums.items()},
                    **evaluator(samples, labels),
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


def _real_batch(data: Dataset, cfg: Config, gen: torch.Generator, device) -> object:
    """One real batch on ``device``: x, or (x, labels) for a conditional run."""
    if cfg.conditional:
        x, y = data.labelled_batch(cfg.batch_size, gen)
        return x.to(device), y.to(device)
    return data.batch(cfg.batch_size, gen).to(device)


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
    try:
        values = tomllib.loads(config_path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{config_path}: cannot read TOML config ({e})") from e
    cfg = Config.from_dict(values, source=config_path)
    state = checkpoint.load_latest(run / "checkpoints", map_location=map_location)
    if state is None:
        raise FileNotFoundError(f"{run / 'checkpoints'} holds no checkpoint")
    return cfg, state
