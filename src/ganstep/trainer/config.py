"""The configuration of a ``ganstep train`` run: its fields and defaults, the checks of
its values, what a resume may change, and TOML in and out."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from ..engine.augment import is_policy
from ..engine.checks import positive_int
from ..engine.objectives import AUTOENCODER_OBJECTIVES, OBJECTIVES, R1_OBJECTIVES
from ..engine.precision import DTYPES
from ..engine.registry import check_name
from ..engine.schedules import SCHEDULES
from .data import Dataset

# Defaults that depend on the data; a value given by the user always wins. The points
# defaults are tuned on the 2D grid (benchmarks/quality.py); z has the data's dimension.
# The 2D grid's recipe (benchmarks/RESULTS.md, "Sample quality"): lazy R1 (every 16th D
# step) costs 0.4% of a step where R1 on every step costs 27%. Adam's beta2 0.9 and an
# EMA of 0.99 sharpen the modes of a narrower MLP than beta2 0.999 did; an lr of 4e-3
# decayed linearly to 0 beats a constant 2e-3. Most of a step's time does not grow with
# the width, so 10,000 steps at width 96 take the time of 8,000 at width 128, and raise
# ten seeds' mean hq_fraction from 0.945 to 0.961.
POINTS_DEFAULTS = {"steps": 10000, "batch_size": 256, "lr_g": 4e-3, "lr_d": 4e-3, "r1": 0.1,
                   "r1_every": 16, "lr_decay": "linear", "width": 96, "beta2": 0.9,
                   "ema": 0.99}  # fmt: skip
IMAGES_DEFAULTS = {"steps": 5000, "batch_size": 64, "lr_g": 2e-4, "lr_d": 2e-4, "r1": 0.0,
                   "r1_every": 1, "lr_decay": "none", "width": 32, "z_dim": 64,
                   "beta2": 0.999, "ema": 0.999}  # fmt: skip

# What --resume may change: how long the run goes on, how often it reports, where it
# runs. Everything else defines the run (its math, its data, its metrics) and must stay.
RESUMABLE = ("steps", "eval_every", "sample_every", "ckpt_every", "keep", "log_every",
             "device", "compile", "out", "data_dir", "tensorboard", "tf32",
             "graph")  # fmt: skip
# The datasets read from files under data_dir (the rest are generated, embedded, or paths).
DATA_DIR_READERS = ("mnist", "fashion-mnist", "stacked-mnist")
MAX_SEED = 2**62
MAX_LR = 1e6  # far beyond any working rate; near float32's range Adam's step overflows
# Upper bounds, checked before anything is allocated: far beyond any run this trainer is
# made for, and low enough that a typo (10**20) fails here, named, instead of in torch's
# allocator, an overflow at the first lazy step, or an evaluation that never ends.
LIMITS = {"batch_size": 2**20, "z_dim": 2**16, "width": 2**14, "eval_samples": 10**6,
          "feature_steps": 10**6, "r1_every": 10**6, "accumulate": 2**20,
          "steps": 10**12, "limit": 10**12, "pack": 64}  # fmt: skip
# the objectives whose losses take D's targets (--real-label, --fake-label)
LABEL_OBJECTIVES = ("ns", "minimax", "bgan", "lsgan")
# --augment: DiffAugment's color, translation, cutout; "ada" with ADA's adaptive p; or a
# DiffAugment policy naming some of them ("translation,cutout").
AUGMENTS = ("none", "diffaugment", "ada")

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
    limit: int | None = None
    model: str = "mlp"
    conditional: bool = False
    objective: str = "ns"
    r1: float | None = None
    r1_every: int | None = None
    real_label: float = 1.0
    fake_label: float = 0.0
    schedule: str = "d_first"
    fused: bool = False
    accumulate: int = 1
    pack: int = 1
    augment: str = "none"
    precision: str = "fp32"
    compile: str = "none"
    steps: int | None = None
    batch_size: int | None = None
    lr_g: float | None = None
    lr_d: float | None = None
    lr_decay: str | None = None
    beta1: float = 0.5
    beta2: float | None = None
    z_dim: int | None = None
    width: int | None = None
    ema: float | None = None
    seed: int = 0
    device: str = "auto"
    tf32: bool = False
    graph: str = "auto"
    out: str = "runs/latest"
    eval_every: int = 1000
    eval_samples: int = 2500
    sample_every: int = 1000
    ckpt_every: int = 1000
    keep: int = 3
    log_every: int = 50
    feature_steps: int = 200
    tensorboard: bool = False

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
        for f in fields(self):
            _check_type(f.name, getattr(self, f.name), f.type)
        self._check_names()
        self._check_counts()
        self._check_numbers()
        if self.device not in ("auto", "cpu") and not re.fullmatch(r"cuda(:\d+)?", self.device):
            raise ValueError(f"device must be auto, cpu or cuda[:N], got {self.device!r}")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {self.device!r} asked for, but CUDA is not available")
        on_cuda = self.device.startswith("cuda") or (
            self.device == "auto" and torch.cuda.is_available()
        )
        if self.graph == "on" and not on_cuda:
            raise ValueError(
                "graph on captures CUDA graphs, and this run is on the CPU: use --graph "
                "auto (the default, on CUDA only) or off"
            )

    def _check_paths(self) -> None:
        """data_dir only where it is read; the run folder not inside the data folder."""
        if self.data_dir is not None and self.data not in DATA_DIR_READERS:
            raise ValueError(
                f"data_dir says where {', '.join(DATA_DIR_READERS)} are read from; data "
                f"{self.data!r} does not read it: drop data_dir"
            )
        data = Path(self.data).expanduser()
        if data.is_dir():
            out, data = Path(self.out).expanduser().resolve(), data.resolve()
            if out == data or data in out.parents:
                raise ValueError(
                    f"out {self.out!r} is inside the data folder {self.data!r}: the run's "
                    "pictures would become part of the data; put the run folder elsewhere"
                )

    def _check_names(self) -> None:
        """The fields that name something: a folder, a dataset, a model, an option."""
        from .models import MODELS

        if not self.out.strip():
            raise ValueError("out must name the run folder, got an empty string")
        for key in ("out", "data", "data_dir"):
            value = getattr(self, key)
            if value is not None and "\0" in value:  # no path can hold one
                raise ValueError(f"{key} holds a NUL character, which no file name can: {value!r}")
            try:
                (value or "").encode("utf-8")
            except UnicodeEncodeError:  # bytes the file system gave that are not UTF-8
                shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                raise ValueError(
                    f"{key} {shown!r} is not valid UTF-8 (as the file system names it); "
                    "config.toml and the metrics record paths as UTF-8: rename it"
                ) from None
        if not self.data.strip():
            raise ValueError(
                "data must name a dataset, a folder or a .npy file, got an empty string"
            )
        check_name("model", self.model, MODELS)
        self._check_paths()
        check_name("objective", self.objective, OBJECTIVES)
        check_name("schedule", self.schedule, SCHEDULES)
        check_name("precision", self.precision, DTYPES)
        check_name("graph", self.graph, ("auto", "on", "off"))
        if not is_policy(self.augment):  # a DiffAugment policy such as "translation,cutout"
            check_name("augment", self.augment, (*AUGMENTS, "a policy such as translation,cutout"))
        if self.fused and self.schedule != "simultaneous":
            raise ValueError(f"fused applies to the simultaneous schedule, not {self.schedule!r}")
        if self.fused and self.augment != "none":
            raise ValueError(
                "fused takes G's gradient from D's backward at its input, and augmentation "
                "stands between G and D: use --augment without --fused"
            )
        if self.pack > 1:
            self._check_pack()
        if self.compile not in ("none", "default"):  # else a backend torch.compile knows
            backends = ["none", "default", *torch.compiler.list_backends(exclude_tags=())]
            check_name("compile", self.compile, backends)
        if self.lr_decay is not None:
            check_name("lr_decay", self.lr_decay, ("none", "linear"))

    def _check_pack(self) -> None:
        """What packing D's inputs (PacGAN) goes with: one sample per pack slot and a D
        that scores each pack, unaugmented (an augmentation would see a pack as one
        image and treat its samples alike)."""
        if self.conditional:
            raise ValueError(f"pack {self.pack}: packing does not go with --conditional")
        if self.objective in AUTOENCODER_OBJECTIVES or self.model == "began":
            owner = "the began model" if self.model == "began" else self.objective
            raise ValueError(f"pack {self.pack}: packing does not go with {owner}'s autoencoder D")
        if self.augment != "none":
            raise ValueError(f"pack {self.pack}: packing does not go with --augment")
        if self.fused:
            raise ValueError(
                f"pack {self.pack}: fused takes G's gradient at D's input, which a pack "
                "splits into G's calls; use --pack without --fused"
            )

    def _check_counts(self) -> None:
        """The integer fields: positive, and the batch divisible into micro-batches."""
        counts = ("steps", "batch_size", "z_dim", "width", "eval_every", "sample_every",
                  "accumulate", "ckpt_every", "keep", "log_every", "feature_steps",
                  "limit", "r1_every", "pack")  # fmt: skip
        for name in counts:
            if getattr(self, name) is not None:  # None: filled from the data's defaults
                positive_int(getattr(self, name), name, LIMITS.get(name))
        if self.batch_size is not None and self.batch_size % self.accumulate:
            raise ValueError(
                f"accumulate {self.accumulate} splits each batch into equal micro-batches: "
                f"batch_size {self.batch_size} does not divide by it"
            )
        if not 2 <= self.eval_samples <= LIMITS["eval_samples"]:  # FID/KID need a spread
            raise ValueError(
                f"eval_samples must be from 2 to {LIMITS['eval_samples']:,}, got "
                f"{self.eval_samples:,}"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be an integer from 0 to 2**62, got {self.seed}")

    def _check_numbers(self) -> None:
        """The real-valued fields: learning rates, R1, EMA and Adam's betas."""
        if self.r1 is not None and not (math.isfinite(self.r1) and self.r1 >= 0):
            raise ValueError(f"r1 must be a number >= 0, got {self.r1!r}")
        for name in ("lr_g", "lr_d"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
            if value is not None and value > MAX_LR:  # torch's float32 steps overflow
                raise ValueError(
                    f"{name} must be at most {MAX_LR:g} (2e-4 to 1e-3 are usual), got {value:g}"
                )
        if (self.r1_every or 1) > 1 and self.r1 is not None and not self.r1:
            if self.objective not in R1_OBJECTIVES:
                raise ValueError(
                    f"r1_every applies to R1, which objective {self.objective!r} does not take "
                    f"(R1 is for {', '.join(R1_OBJECTIVES)}): drop r1_every"
                )
            raise ValueError("r1_every applies to R1: give r1 > 0 with it")
        if self.r1 and self.objective not in R1_OBJECTIVES:
            raise ValueError(
                f"r1 applies to the objectives {', '.join(R1_OBJECTIVES)}, not {self.objective!r}"
            )
        for name in ("ema", "beta1", "beta2"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < 1:  # None: the data's default
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        self._check_labels()

    def _check_labels(self) -> None:
        """D's targets (label smoothing): for the objectives whose losses have them, in
        the ranges those objectives take."""
        if (self.real_label, self.fake_label) == (1.0, 0.0):
            return
        if self.objective not in LABEL_OBJECTIVES:
            raise ValueError(
                f"real_label and fake_label are D's targets in the losses of "
                f"{', '.join(LABEL_OBJECTIVES)}, not of {self.objective!r}: drop them"
            )
        try:
            labelled_objective(self)
        except ValueError as e:
            raise ValueError(str(e).replace(f"{self.objective} ", "", 1)) from None

    @classmethod
    def from_toml(cls, path: str | Path) -> Config:
        """A Config from a TOML file; errors name the file and the key."""
        return cls.from_dict(read_toml(path), source=path)

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


def read_toml(path: str | Path) -> dict:
    """The values of a TOML config file, each key known and each value of its type."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: a folder, not a TOML config file")
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is not TOML's first key
        values = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{path}: cannot read TOML config ({e})") from e
    except RecursionError:  # tomllib recurses once per level of nesting
        raise ValueError(
            f"{path}: nested too deeply to read; a ganstep config is flat (key = value)"
        ) from None
    check_values(values, source=path)
    for key in ("out", "data", "data_dir"):  # a shell expands ~ in a flag; TOML does not
        if isinstance(values.get(key), str) and values[key].startswith("~"):
            values[key] = str(Path(values[key]).expanduser())
    return values


def labelled_objective(cfg: Config) -> object:
    """The run's objective with D's targets and R1 as ``cfg`` sets them, or its name where
    it sets neither (the Step builds it then)."""
    labels = {}
    if (cfg.real_label, cfg.fake_label) != (1.0, 0.0):
        labels = {"real_label": cfg.real_label, "fake_label": cfg.fake_label}
    if not cfg.r1 and not labels:
        return cfg.objective
    r1 = {"r1": cfg.r1, "r1_every": cfg.r1_every} if cfg.r1 else {}
    return OBJECTIVES[cfg.objective](**r1, **labels)
