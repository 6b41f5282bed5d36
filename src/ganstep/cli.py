"""The ``ganstep`` command: ``ganstep train`` and ``ganstep sample``."""

from __future__ import annotations

from .engine.interrupt import INTERRUPTED, Stopped, deferred, release_start

with deferred():  # a program importing the cli (the command holds Ctrl-C from its start)
    import argparse
    import io
    import math
    import os
    import sys
    import threading
    import warnings
    from pathlib import Path

    from .engine.errors import GanstepWarning
    from .engine.objectives import OBJECTIVES, R1_OBJECTIVES
    from .engine.schedules import SCHEDULES

    # what the train extra installs (pip install 'ganstep[train]'), by import name
    TRAIN_EXTRA = ("numpy", "scipy", "sklearn", "PIL", "matplotlib", "tqdm")
    try:
        from .trainer.data import NAMES, DataError
        from .trainer.models import MODELS
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] not in TRAIN_EXTRA:
            raise
        WITHOUT_EXTRA: ModuleNotFoundError | None = missing  # main() says what to install
        NAMES, MODELS, DataError = (), {}, OSError  # for the help texts below; never used
    else:
        WITHOUT_EXTRA = None

_CONDITIONAL = (
    "class-conditional (dcgan on labelled data: digits, mnist, fashion-mnist, a folder of "
    "class subfolders)"
)
_R1_EVERY = (
    "lazy R1: every k-th D step, weighted k (StyleGAN2); 1 is every step (default 16 on 2D "
    "data, 1 on images)"
)

# what `ganstep COMMAND --help` says of a command (audit's own text is beside its flags)
COMMANDS = {
    "train": {
        "help": "train a GAN (with no option: the 2D grid, about a minute on a CPU)",
        "description": "Train a GAN. Values come from the defaults, then the run's "
        "config.toml (with --resume), then --config FILE.toml, then the flags given.",
    },
    "bench": {
        "help": "time, memory, FLOPs and passes of the schedules next to the reference loops",
        "description": "Every implementation runs one iteration at a time, interleaved, in "
        "one process; see benchmarks/RESULTS.md for how to read the numbers.",
    },
}

_LIMIT = (
    "train on this many training images only (a fixed subset); the metrics still "
    "compare with the whole training set"
)
_AUGMENT = (
    "augmentation of every D input (images): none, diffaugment (color, translation, "
    "cutout), ada (those with ADA's adaptive p), or a DiffAugment policy such as "
    "translation,cutout"
)
_PACK = (
    "PacGAN's packing: D judges packs of this many samples stacked along channels "
    "(--batch-size counts packs; G draws that many samples per pack); 1 is off"
)
_TENSORBOARD = (
    "also write TensorBoard event files into the run folder's tensorboard/ (losses, D's "
    "scores, rates, metrics, sample pictures); needs ganstep[tensorboard]"
)
_REAL_LABEL = (
    "D's target for real samples (ns, minimax, bgan, lsgan; default 1): 0.9 is one-sided "
    "label smoothing (G's target stays 1)"
)
_FAKE_LABEL = (
    "D's target for fakes (ns, minimax, bgan, lsgan; default 0): 0.1 with --real-label 0.9 "
    "is two-sided label smoothing"
)
_EMA = (
    "EMA decay of G's weights for samples and metrics (default 0.99 on 2D data, 0.999 on "
    "images); 0 turns EMA off"
)
# flag -> Config field, for the options the command line may override
TRAIN_FLAGS = {
    "data": (str, f"dataset: {', '.join(NAMES)}, a folder of PNG/JPG images, or a .npy file"),
    "data_dir": (str, "folder with the official MNIST/Fashion-MNIST files (no download)"),
    "limit": (int, _LIMIT),
    "model": (str, f"one of: {', '.join(MODELS)}"),
    "conditional": (bool, _CONDITIONAL),
    "objective": (str, f"one of: {', '.join(OBJECTIVES)}"),
    "r1": (float, f"R1 penalty weight on real data ({', '.join(R1_OBJECTIVES)}); 0 is off"),
    "r1_every": (int, _R1_EVERY),
    "real_label": (float, _REAL_LABEL),
    "fake_label": (float, _FAKE_LABEL),
    "schedule": (str, f"update order, one of: {', '.join(SCHEDULES)}"),
    "fused": (bool, "simultaneous only: take G's gradient from D's backward pass (FusedProp)"),
    "accumulate": (int, "micro-batches per batch: gradients summed, one optimizer step"),
    "pack": (int, _PACK),
    "augment": (str, _AUGMENT),
    "precision": (str, "fp32, bf16 (autocast) or fp16 (autocast with loss scaling)"),
    "compile": (str, "torch.compile G and D: none, default, or a backend name"),
    "steps": (int, "training iterations"),
    "batch_size": (int, "real (and fake) samples per D step"),
    "lr_g": (float, "G's Adam learning rate"),
    "lr_d": (float, "D's Adam learning rate"),
    "lr_decay": (str, "none, or linear (to 0 at the last step)"),
    "beta1": (float, "Adam's beta1, for G and D (default 0.5)"),
    "beta2": (float, "Adam's beta2, for G and D (default 0.9 on 2D data, 0.999 on images)"),
    "seed": (int, "seed of every random stream of the run"),
    "device": (str, "auto (cuda when available), cpu or cuda[:N]"),
    "tf32": (
        bool,
        "CUDA: allow TF32 in float32 matmuls and convolutions (faster on Ampere "
        "and later; off by default, as in StyleGAN2-ADA: not float32 arithmetic)",
    ),
    "graph": (
        str,
        "CUDA: replay each iteration from CUDA graphs: auto (the default: on CUDA when "
        "the run allows it, else a note says why not; should a capture fail, the command "
        "goes on with --resume --graph off in a new process), on (or fail), off",
    ),
    "out": (str, "the run folder"),
    "z_dim": (int, "size of z"),
    "width": (int, "model width (hidden units, or base channels)"),
    "ema": (float, _EMA),
    "eval_every": (int, "steps between evaluations (metrics.jsonl)"),
    "eval_samples": (int, "samples per evaluation"),
    "sample_every": (int, "steps between sample pictures"),
    "ckpt_every": (int, "steps between checkpoints"),
    "keep": (int, "checkpoints kept"),
    "log_every": (int, "steps between progress bar updates"),
    "tensorboard": (bool, _TENSORBOARD),
    "feature_steps": (int, "training steps of the FID feature extractor (cached per dataset)"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ganstep", description="GAN training with an explicit update order."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_train, _add_sample, _add_bench, _add_audit):
        add(sub)
    return parser


def _add_train(sub) -> None:
    train = sub.add_parser("train", **COMMANDS["train"])
    for name, (kind, text) in TRAIN_FLAGS.items():
        flag = "--" + name.replace("_", "-")
        if kind is bool:
            train.add_argument(flag, dest=name, action="store_const", const=True, help=text)
        else:
            train.add_argument(flag, dest=name, type=kind, help=text)
    train.add_argument("--config", type=Path, help="a TOML file of config values")
    train.add_argument("--resume", action="store_true", help="continue the run in --out")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")


_FORCE = "replace an existing --out, --json or --plot file (refused otherwise)"
MAX_REPS = 100_000  # bench repetitions: hours on a CPU already


def _writable_output(path: Path | None, flag: str, force: bool, *, script: Path | None = None):
    """Refuse to write ``path`` over a file the user has, unless ``force``; never over the
    script being audited, nor where a folder is. Outputs are then written atomically."""
    if path is None:
        return
    if script is not None and path.resolve() == script.resolve():
        raise ValueError(f"{flag} {path} is the script being audited; name another file")
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a folder; name a file")
    if path.exists() and not force:
        raise ValueError(f"{flag} {path} exists; pass --force to replace it, or name another file")


def _add_sample(sub) -> None:
    sample = sub.add_parser("sample", help="write samples of a trained run")
    sample.add_argument("--run", required=True, type=Path, help="a run folder")
    sample.add_argument("--n", required=True, type=int, help="number of samples")
    sample.add_argument(
        "--out", required=True, type=Path,
        help=".npy (raw values, as the data was given) or .png (a grid, or a 2D scatter plot)",
    )  # fmt: skip
    sample.add_argument("--seed", type=int, default=0, help="seed of z")
    sample.add_argument("--force", action="store_true", help=_FORCE)
    sample.add_argument(
        "--class",
        dest="label",
        type=int,
        default=None,
        help="a conditional run: samples of this class (default: all, in turn)",
    )


def _add_bench(sub) -> None:
    bench = sub.add_parser("bench", **COMMANDS["bench"])
    models = (
        "of: mlp (2D grid), dcgan (32x32), dcgan_plain (D without BatchNorm), dcgan_sn (D "
        "with spectral norm on every conv, no BatchNorm), began"
    )
    bench.add_argument("--models", nargs="+", default=["mlp", "dcgan", "began"], help=models)
    bench.add_argument("--objectives", nargs="+", default=["ns", "began"],
                       help="objectives (the began model runs with began, ebgan only)")  # fmt: skip
    bench.add_argument("--reps", type=int, default=15, help="timed iterations per implementation")
    bench.add_argument("--warmup", type=int, default=3, help="untimed iterations first")
    bench.add_argument("--width", type=int, default=64, help="DCGAN width (BEGAN: half)")
    bench.add_argument("--batch-size", type=int, default=64, help="batch of the image models")
    bench.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    variants = (
        "Step options to add rows for: fused, bf16, fp16, compile, graph (CUDA), "
        "r1, r1lazy (ns, next to reference.dcgan_r1), accum4"
    )
    bench.add_argument("--variants", nargs="*", default=[], metavar="NAME", help=variants)
    processes = "add a data parallel d_first row over this many CPU processes (>= 2)"
    bench.add_argument("--processes", type=int, default=0, help=processes)
    quick = "mlp and a small dcgan, ns, few repetitions: under a minute"
    bench.add_argument("--quick", action="store_true", help=quick)
    bench.add_argument("--json", type=Path, help="write the rows as JSON")
    bench.add_argument("--plot", type=Path, help="write a PNG bar chart")
    bench.add_argument("--force", action="store_true", help=_FORCE)


def _add_audit(sub) -> None:
    audit = sub.add_parser(
        "audit",
        usage="ganstep audit SCRIPT [--iterations N] [--G NAME] [--D NAME] [--json FILE] "
        "[--function NAME] [--port] [--verify N] [-- SCRIPT ARGS...]",
        help="instrument your training script, unmodified: passes, waste, hazards",
        description="Runs SCRIPT as __main__ with its own arguments (those after --), "
        "finds G and D (the modules its optimizers train; D consumes G's output), lets it "
        "train N iterations (one G step with the D steps around it), stops it and reports. "
        "Exit status: 0, 1 when the script could not be audited, 3 when its loop crashed "
        "(the report covers the steps before the crash). With --function, SCRIPT is "
        "instead run as the module __ganstep_audit__ (its main block does not run) and "
        "must define G and D (or the names --G/--D give) and that function, one training "
        "iteration with no arguments; opt_g and opt_d are used if defined. With --port, "
        "the report ends with the Step that equals the script's update, found and verified "
        "on copies of its own models, batches and random draws (or what stood in the way).",
    )
    audit.add_argument("script", type=Path, help="a Python file")
    audit.add_argument("--iterations", type=int, default=2, help="iterations to run")
    audit.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                       help="stop a script that has not run its iterations by then "
                       "(default 600)")  # fmt: skip
    g_help = "G's name in the script (a global, or a dotted path from one)"
    audit.add_argument("--G", dest="g_name", metavar="NAME", help=g_help)
    audit.add_argument("--D", dest="d_name", metavar="NAME", help="D's name, likewise")
    audit.add_argument("--json", type=Path, help="write the report as JSON")
    audit.add_argument("--force", action="store_true", help=_FORCE)
    audit.add_argument("--function", metavar="NAME",
                       help="audit this function of SCRIPT instead of running SCRIPT")  # fmt: skip
    audit.add_argument("--port", action="store_true",
                       help="print the Step that equals the script's update, verified over "
                       "the audited iterations")  # fmt: skip
    audit.add_argument("--verify", type=int, metavar="N",
                       help="--port, verified over N iterations (the audit runs N)")  # fmt: skip


def _train(args: argparse.Namespace) -> int:
    from .engine.distributed import exit_now, launched
    from .trainer.config import Config, check_same_run, read_toml
    from .trainer.run_folder import saved_config
    from .trainer.train import train

    values: dict = {}
    flags = {k: getattr(args, k) for k in TRAIN_FLAGS if getattr(args, k) is not None}
    if args.config is not None:
        values.update(read_toml(args.config))
    values.update(flags)
    if "out" not in values:  # the default run folder is named after what it trains
        named = Config.from_dict(values)
        cond = "-cond" if named.conditional else ""
        values["out"] = (
            f"runs/{Path(named.data).stem}-{named.model}-{named.objective}-{named.schedule}"
            f"{cond}-s{named.seed}"
        )
    if args.resume:
        previous = saved_config(Path(values["out"]))
        values = {**previous, **values}
        check_same_run(previous, values, values["out"])  # before any check of the new values
    cfg = Config.from_dict(values)
    record = train(cfg, resume=args.resume, progress=not args.no_progress)
    if int(os.environ.get("RANK", "0")) == 0:  # under torchrun, rank 0 reports
        shown = ", ".join(f"{k}={v}" for k, v in record.items() if k != "elapsed_s")
        print(f"done: {shown}\nrun folder: {cfg.out}")
    if launched():  # the group is gone and every file written: see exit_now
        exit_now(0)
    return 0


# `ganstep sample --n`: ten million 2D points are 80 MB; more is a typo, not a sample.
# Images are bounded by memory instead: 4 GiB of float32 samples.
MAX_SAMPLES = 10**7
MAX_SAMPLE_BYTES = 4 * 2**30


def _sample(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from .trainer import plots
    from .trainer.checkpoint import atomic_write
    from .trainer.config import MAX_SEED
    from .trainer.models import build_models
    from .trainer.run_folder import dataset_from_meta, load_run
    from .trainer.sampling import class_labels, generate

    if not 1 <= args.n <= MAX_SAMPLES:
        raise ValueError(f"--n must be from 1 to {MAX_SAMPLES:,}, got {args.n:,}")
    if not 0 <= args.seed <= MAX_SEED:
        raise ValueError(f"--seed must be from 0 to 2**62, got {args.seed}")
    if args.out.suffix not in (".npy", ".png"):
        raise ValueError(f"--out must end in .npy or .png, got {args.out}")
    if args.out.is_dir():
        raise ValueError(f"--out {args.out} is a folder; name a .npy or .png file")
    _writable_output(args.out, "--out", args.force)
    cfg, state = load_run(args.run)
    data = dataset_from_meta(state["data"])
    shape = tuple(state["data"]["sample_shape"])
    classes = len(data.classes) if cfg.conditional else None
    if args.label is not None and not (classes and 0 <= args.label < classes):
        if not classes:
            raise ValueError(f"--class: {args.run} is not a conditional run")
        raise ValueError(f"--class must be from 0 to {classes - 1}, got {args.label}")
    labels = None
    if classes:
        labels = class_labels(args.n, classes)
        if args.label is not None:
            labels = torch.full((args.n,), args.label)
    size = args.n * math.prod(shape) * 4  # float32 in memory before it is written
    if size > MAX_SAMPLE_BYTES:
        most = MAX_SAMPLE_BYTES // (math.prod(shape) * 4)
        raise ValueError(
            f"--n {args.n:,} samples of shape {shape} take {size / 2**30:.1f} GiB; this run's "
            f"samples allow at most --n {most:,} at once"
        )
    G, _ = build_models(cfg.model, shape, cfg.objective, cfg.z_dim, cfg.width, classes)
    G.load_state_dict(state["ema"] if state.get("ema") is not None else state["G"])
    x = generate(G, cfg.z_dim, args.n, torch.device("cpu"), seed=args.seed, labels=labels,
                 progress=args.n > 20_000)  # fmt: skip
    raw = data.to_raw(x)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.suffix == ".npy":
        atomic_write(args.out, lambda f: np.save(f, raw))
    elif data.kind == "images":
        plots.image_grid(raw, data.raw_range, args.out)
    else:
        modes = None if data.modes is None else data.modes.numpy()
        plots.scatter(raw[:, :2], modes, args.out, f"{data.name}: {args.n} samples")
    print(f"wrote {args.n} samples to {args.out}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    import torch

    from .engine.registry import check_name
    from .tools.bench import MODELS, VARIANTS, bench, plot, table, write_json
    from .trainer.train import resolve_device

    if args.device != "cpu" and not args.device.startswith("cuda"):
        raise ValueError(f"--device must be cpu or cuda[:N], got {args.device!r}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {args.device} asked for, but CUDA is not available")
    resolve_device(args.device)  # a malformed cuda:N fails here, named
    if args.width < 1 or args.batch_size < 1:
        raise ValueError(
            f"--width and --batch-size must be at least 1, got {args.width} and {args.batch_size}"
        )
    from .trainer.config import LIMITS

    bounds = {"--width": (args.width, LIMITS["width"]),
              "--batch-size": (args.batch_size, LIMITS["batch_size"]),
              "--reps": (args.reps, MAX_REPS), "--warmup": (args.warmup, MAX_REPS)}  # fmt: skip
    for flag, (value, most) in bounds.items():
        if value > most:  # a typo (10**20) fails here, not in torch or after days
            raise ValueError(f"{flag} must be at most {most:,}, got {value:,}")
    for model in args.models:
        check_name("model", model, MODELS)
    for variant in args.variants:
        check_name("variant", variant, VARIANTS)
    if args.processes < 0 or args.processes == 1:
        raise ValueError(f"--processes must be 0 (off) or at least 2, got {args.processes}")
    if "graph" in args.variants and not args.device.startswith("cuda"):
        raise ValueError("--variants graph captures CUDA graphs: it needs --device cuda")
    if args.processes and args.device != "cpu":
        raise ValueError("--processes measures CPU processes (gloo); use --device cpu")
    from .tools.reference.common import TUTORIAL_OBJECTIVES

    for objective in args.objectives:
        check_name("objective", objective, OBJECTIVES)
        if objective not in TUTORIAL_OBJECTIVES:
            raise ValueError(
                f"ganstep bench compares the objectives its reference loops write "
                f"({', '.join(TUTORIAL_OBJECTIVES)}); {objective!r} is not one of them"
            )
    if args.reps < 1 or args.warmup < 0:
        raise ValueError("--reps must be at least 1 and --warmup at least 0")
    _writable_output(args.json, "--json", args.force)
    _writable_output(args.plot, "--plot", args.force)
    if args.quick:
        args.models, args.objectives, args.reps, args.warmup = ["mlp", "dcgan"], ["ns"], 5, 2
        args.width, args.batch_size = 32, 32
    _bench_variants_run(args)
    rows = bench(args.models, args.objectives, reps=args.reps, warmup=args.warmup,
                 dcgan_width=args.width, batch=args.batch_size, device=args.device,
                 variants=args.variants, processes=args.processes)  # fmt: skip
    if not rows:
        raise ValueError(
            "nothing to measure: the began model runs only with --objectives began or ebgan, "
            "and they with it or mlp"
        )
    print(table(rows))
    if args.json:
        write_json(rows, args.json)
    if args.plot:
        plot(rows, args.plot)
    return 0


def _bench_variants_run(args: argparse.Namespace) -> None:
    """Each variant asked for runs somewhere, or the command says why not; where it
    does not run, a note says why (no row is dropped without a word)."""
    from .tools.bench import pairs
    from .tools.bench import variant_refusal as refusal

    measured = pairs(args.models, args.objectives)
    for variant in args.variants:
        why = {(m, o): refusal(variant, m, o, args.device) for m, o in measured}
        if measured and all(why.values()):
            shown = "; ".join(f"{m}/{o}: {w}" for (m, o), w in why.items())
            raise ValueError(f"--variants {variant} runs on none of the models asked for ({shown})")
        for (m, o), w in why.items():
            if w:
                print(f"ganstep: note: no {variant} row for {m}/{o}: {w}", file=sys.stderr)


def _audit(args: argparse.Namespace) -> int:
    from .tools.audit import NO_STEPS, report_json
    from .tools.audit_script import audit_script
    from .trainer.checkpoint import atomic_write_text

    if args.iterations < 1:
        raise ValueError(f"--iterations must be at least 1, got {args.iterations}")
    if args.verify is not None:
        if args.verify < 1:
            raise ValueError(f"--verify must be at least 1 iteration, got {args.verify}")
        args.port, args.iterations = True, args.verify
    if args.port and args.function is not None:
        raise ValueError("--port replays a script's own run; it does not take --function")
    _writable_output(args.json, "--json", args.force, script=args.script)

    def show(report) -> int:
        print(report)
        if args.json:
            atomic_write_text(args.json, report_json(report) + "\n")
        return AUDITED_LOOP_CRASHED if report.error is not None else 0

    def leave(report) -> None:  # the script swallowed the stop: it may swallow any other
        code = show(report)
        print(f"ganstep: the script caught the audit's stop after {args.iterations} "
              "iteration(s) and ran on; it was ended here", file=sys.stderr)  # fmt: skip
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    if args.function is not None:
        report = _audit_function(args)
        if report.error is None and report.pattern == NO_STEPS:  # as a script's audit says
            raise ValueError(
                f"{args.script}: {args.function}() ran {args.iterations} time(s) without an "
                "optimizer step of G or D: nothing to audit (does it train?)"
            )
        return show(report)
    if not args.timeout > 0 or args.timeout == math.inf:
        raise ValueError(f"--timeout must be a number of seconds > 0, got {args.timeout}")
    code = show(audit_script(args.script, args.script_args, iterations=args.iterations,
                             G=args.g_name, D=args.d_name, on_swallowed=leave,
                             timeout=args.timeout, port=args.port,
                             float64=args.verify is not None))  # fmt: skip
    left = [t.name for t in threading.enumerate()
            if t.is_alive() and not t.daemon and t is not threading.main_thread()]  # fmt: skip
    if left:  # the script's own threads would keep the process alive after the report
        print(f"ganstep: the script left thread(s) running ({', '.join(left)}); ended here",
              file=sys.stderr)  # fmt: skip
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


AUDITED_LOOP_CRASHED = 3


def _audit_function(args: argparse.Namespace):
    import runpy

    from .tools.audit import audit, crash_location

    if args.script_args:
        raise ValueError("--function runs no script: it takes no script arguments after --")
    if not args.script.is_file():
        raise FileNotFoundError(f"{args.script}: no such script")
    sys.path.insert(0, str(args.script.resolve().parent))  # its own imports, as python would
    path = str(args.script.resolve())
    try:
        names = runpy.run_path(path, run_name="__ganstep_audit__")
    except SyntaxError as e:
        if e.filename != path:
            raise
        raise ValueError(f"{args.script}:{e.lineno}: not valid Python ({e.msg})") from None
    except Exception as e:  # the script's own failure, reported as the user's, not ganstep's
        where = crash_location(e, path) or args.script
        raise ValueError(
            f"{where}: {type(e).__name__}: {_one_line(e)}, while loading the script"
        ) from e
    g_name, d_name = args.g_name or "G", args.d_name or "D"
    missing = [n for n in (g_name, d_name, args.function) if n not in names]
    if missing:
        raise ValueError(f"{args.script} must define {g_name}, {d_name} and "
                         f"{args.function}(); missing: {', '.join(missing)}")  # fmt: skip
    import torch

    for name in (g_name, d_name):
        if not isinstance(names[name], torch.nn.Module):
            kind = type(names[name]).__name__
            raise ValueError(f"{args.script}: {name} must be a torch.nn.Module, got a {kind}")
    fn = names[args.function]
    if not callable(fn):
        raise ValueError(f"{args.script}: {args.function} is not a function")
    import inspect

    try:
        inspect.signature(fn).bind()
    except TypeError:
        raise ValueError(
            f"{args.script}: {args.function}{inspect.signature(fn)} takes arguments; --function "
            "calls one training iteration with none: wrap it, e.g. def one_step(): "
            f"{args.function}(next(batches))"
        ) from None
    except ValueError:  # no signature to read: the call will tell
        pass
    return audit(fn, G=names[g_name], D=names[d_name], opt_g=names.get("opt_g"),
                 opt_d=names.get("opt_d"), iterations=args.iterations)  # fmt: skip


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """ganstep's own warnings as one line each; any other warning as Python shows it."""
    if issubclass(category, GanstepWarning):
        print(f"ganstep: warning: {message}", file=sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def main(argv: list[str] | None = None, *, relaunch: bool = False) -> int:
    """Entry point of the ``ganstep`` console script. With ``relaunch`` (the command
    itself, not a caller in the same process), a ``--graph auto`` training run whose CUDA
    graph capture fails goes on without graphs in a new process that replaces this one."""
    previous = warnings.showwarning
    try:
        release_start()  # the command's Ctrl-C, held since ganstep's import: handled here on
        argv = sys.argv[1:] if argv is None else list(argv)
        for stream in (sys.stdout, sys.stderr):  # a path the console's encoding cannot show
            if isinstance(stream, io.TextIOWrapper):  # (PYTHONIOENCODING=ascii) is escaped
                stream.reconfigure(errors="backslashreplace")
        if WITHOUT_EXTRA is not None:
            print(_extra_missing(WITHOUT_EXTRA), file=sys.stderr)
            return 1
        script_args: list[str] = []
        if argv[:1] == ["audit"] and "--" in argv:  # what follows -- is the script's own
            at = argv.index("--")
            argv, script_args = argv[:at], argv[at + 1 :]
        warnings.showwarning = _show_warning
        with deferred():
            args = _parser().parse_args(argv)
        args.script_args = script_args
        commands = {"train": _train, "sample": _sample, "bench": _bench, "audit": _audit}
        return commands[args.command](args)
    except KeyboardInterrupt as e:
        if not isinstance(e, Stopped):  # a stopped run has said where it stopped
            print("ganstep: interrupted", file=sys.stderr)
        return getattr(e, "status", INTERRUPTED)  # a SIGTERM's stop: 143
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in TRAIN_EXTRA:
            raise
        print(_extra_missing(e), file=sys.stderr)
        return 1
    except (ValueError, DataError, OSError, RuntimeError) as e:
        if relaunch and _capture_stopped(e):
            _relaunch_without_graphs(e, argv)
        print(f"ganstep: error: {_one_line(e)}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = previous


def _capture_stopped(e: BaseException) -> bool:
    """Whether ``e`` is a ``--graph auto`` run stopped by a failed capture."""
    iteration = sys.modules.get("ganstep.trainer.iteration")  # imported if a run trained
    return iteration is not None and isinstance(e, iteration.CaptureStopped)


def _relaunch_without_graphs(e: BaseException, argv: list[str]) -> None:
    """Replace this process by the same command resumed without CUDA graphs: torch leaves
    a process whose capture failed unfit to go on (its allocator and generators stay in
    capture mode), and the run's checkpoints make a new one continue exactly (a run
    stopped before its first checkpoint starts afresh)."""
    import os

    reason = getattr(e.__cause__, "reason", None) or _one_line(e)  # torch's error
    print(f"ganstep: CUDA graph capture failed ({reason}); going on without CUDA graphs in "
          "a new process (--resume --graph off), from the last checkpoint; please report "
          "this", file=sys.stderr)  # fmt: skip
    sys.stdout.flush()
    sys.stderr.flush()
    command = [sys.executable, "-m", "ganstep", *argv, "--resume", "--graph", "off"]
    if os.name == "nt":  # there execv starts the new process and ends this one at once
        import subprocess

        sys.exit(subprocess.call(command))
    os.execv(sys.executable, command)


def _extra_missing(e: ModuleNotFoundError) -> str:
    return (
        f"ganstep: error: the ganstep command needs the train extra ({e.name} is not "
        "installed): pip install 'ganstep[train]' (from a checkout: pip install -e '.[train]')"
    )


def _one_line(e: BaseException) -> str:
    """The error's message on one line (a script reading stderr gets one record)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return "; ".join(lines) or type(e).__name__


def run(argv: list[str] | None = None) -> None:
    """The ``ganstep`` command: :func:`main`, then exit with its status. Once the command
    is done, Ctrl-C is ignored: a second one pressed while the process exits would
    otherwise interrupt the exit handlers (``Exception ignored in atexit callback``)."""
    code = main(argv, relaunch=True)
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # CPython marks a KeyboardInterrupt raised out of code run by exec() or eval() of a
    # string as uncaught, even when main() caught it (scipy's import runs `exec("from
    # numpy import *")`, ~0.1 s, at a run's first FID); under `python -m ganstep` the
    # process then ends by SIGINT (status -2) instead of with `code`. Each such evaluation
    # clears the mark first, so evaluating an empty string here leaves the exit status to
    # the command.
    exec("")
    sys.exit(code)


if __name__ == "__main__":
    run()
