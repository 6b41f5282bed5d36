"""The run folder: one process at a time, writable before step 1, and what it holds.

A run folder holds ``config.toml`` (the resolved config, after one comment line per
resume), ``metrics.jsonl`` (one JSON object per evaluation, with ``step``),
``samples/``, ``checkpoints/`` (atomic, last K kept), ``report.png`` and, with
``--tensorboard``, ``tensorboard/`` (event files).

``RunLock`` holds an advisory lock (``flock``) on ``run.lock`` for the whole run. The
kernel drops it when its process ends, however it ends (``kill -9`` too), so a lock
file naming a process that is gone is simply taken over. The file names its holder
(PID, host, start time) for the message a second process gets.

A run folder holds ganstep's files only, and ganstep touches only files it made: a
fresh run refuses a folder holding any other file, a symbolic link anywhere in a run
folder is refused (ganstep would write through it), ``run.lock`` is created
exclusively and a ``run.lock`` that is not ganstep's is refused untouched, and the
only files ever deleted are the temporary files of the run whose writer tag the lock
file recorded (its killed writes) and, when a run stopped before its first
checkpoint, that attempt's own files (:func:`stale_attempt`).
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import re
import secrets
import socket
import tempfile
import time
import warnings
from pathlib import Path

from ..engine.errors import GanstepWarning
from . import checkpoint, tensorboard
from .config import RESUMABLE, Config, check_same_run, read_toml, run_changes
from .data import Dataset

LOCK_NAME = "run.lock"
FOLDERS = ("checkpoints", "samples", tensorboard.FOLDER)
FILES = ("config.toml", "metrics.jsonl", "report.png")
SAMPLE = re.compile(r"^step_\d{8,}\.png$")
EVENTS = "events.out.tfevents."


class RunFolderLocked(RuntimeError):
    """Another process is training in this run folder."""


def _holder(text: str) -> dict | None:
    """The holder a ganstep lock file names, or None if ``text`` is not one."""
    try:
        holder = json.loads(text)
    except ValueError:
        return None
    if isinstance(holder, dict) and {"pid", "host", "since"} <= set(holder):
        return holder
    return None


def _describe(text: str) -> str:
    holder = _holder(text)
    if holder is None:
        return "another process"
    return f"pid {holder['pid']} on host {holder['host']} (since {holder['since']})"


def _open_lock(path: Path) -> int:
    """``run.lock``'s descriptor: created exclusively, or an existing file of ganstep's
    opened without following a link. Nothing is written to a file of the user's."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        pass
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError(
                f"{path} is a symbolic link: ganstep's lock is a file it makes itself; remove "
                "the link or choose another --out"
            ) from None
        if e.errno == errno.EISDIR:
            raise ValueError(f"{path} is a folder; a run writes its lock file there") from None
        raise
    text = os.pread(fd, 4096, 0).decode(errors="replace")
    if text.strip() and _holder(text) is None:
        os.close(fd)
        raise ValueError(
            f"{path} is not ganstep's lock file (it holds {text.strip()[:40]!r}): move it "
            "away or choose another --out"
        )
    return fd


def lock_holder(folder: Path) -> str | None:
    """Who holds ``folder``'s lock now, described, or None (no lock, or nobody)."""
    path = Path(folder) / LOCK_NAME
    if path.is_symlink() or not path.is_file():
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _describe(os.pread(fd, 4096, 0).decode(errors="replace"))
    finally:
        os.close(fd)  # closing drops a lock we took
    return None


class RunLock:
    """Hold ``folder``'s lock while the ``with`` block runs; refuse if another holds it."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.fd: int | None = None

    def __enter__(self) -> RunLock:
        self.created = not self.folder.exists()
        check_folder(self.folder)
        try:
            fd = _open_lock(self.path)
        except OSError as e:
            raise ValueError(f"run folder {self.folder} is not writable ({e.strerror})") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(os.pread(fd, 4096, 0).decode(errors="replace"))
            os.close(fd)
            raise RunFolderLocked(
                f"{self.folder} is in use by {holder}: one process trains in a run folder "
                "at a time; wait for it to end or stop it, or choose another --out"
            ) from None
        previous = os.pread(fd, 4096, 0).decode(errors="replace")
        # the writer tag of the run that left the folder: its temporary files are ours
        # to remove (see checkpoint.remove_partial)
        self.previous_tag = (_holder(previous) or {}).get("writes", "")
        if previous.strip():
            warnings.warn(
                f"{self.path}: took over the lock left by {_describe(previous)}, which has ended",
                GanstepWarning,
                stacklevel=2,
            )
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        tag = secrets.token_hex(4)
        checkpoint.set_writer_tag(tag)
        holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since,
                             "writes": tag})  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode() + b"\n", 0)
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is None:
            return
        checkpoint.set_writer_tag("")
        try:
            os.ftruncate(self.fd, 0)  # an empty lock file: nobody to take over from
            if self.created and [p.name for p in self.folder.iterdir()] == [LOCK_NAME]:
                self.path.unlink()  # a run refused before writing anything leaves no folder
                self.folder.rmdir()
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def check_folder(folder: Path) -> None:
    """Raise ValueError unless ``folder`` and what a run writes in it can be written.

    Checked before training starts, so that a run never fails at its first checkpoint.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {folder} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for sub in (folder, *(folder / name for name in FOLDERS)):
            if sub.exists() and not sub.is_dir():
                raise ValueError(f"{sub} is a file; a run writes a folder there")
            if sub.is_dir():
                with tempfile.TemporaryFile(dir=sub):  # a real write: permissions can mislead
                    pass
    except OSError as e:
        raise ValueError(f"run folder {folder} is not writable ({e.strerror}: {e.filename})") from e
    links = symlinks(folder)
    if links:
        link = links[0]
        raise ValueError(
            f"{link} is a symbolic link (to {os.readlink(link)}): a run folder holds ganstep's "
            "own files and folders, and ganstep would write through the link; remove it or "
            "choose another --out"
        )
    for name in FILES:
        path = folder / name
        if path.is_dir():
            raise ValueError(f"{path} is a folder; a run writes a file there")
        if path.exists() and not os.access(path, os.W_OK):
            raise ValueError(f"{path} is not writable")


# -- what the folder holds ------------------------------------------------------------


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


def resume_state(cfg: Config, data_checksum: str) -> dict:
    """The newest checkpoint of ``cfg.out``, once it is known to be the run ``cfg`` asks for."""
    out = Path(cfg.out)
    state = checkpoint.load_latest(out / "checkpoints", map_location="cpu")
    if state is None:
        try:
            later = went_past_first(out, read_toml(out / "config.toml"))
        except (ValueError, OSError):
            later = []
        if later:  # its checkpoints were there once: moved or deleted, not never written
            raise FileNotFoundError(
                f"--resume: no checkpoint in {out / 'checkpoints'}, yet {out} holds a run that "
                f"went past its first one ({', '.join(later)}): put its checkpoints back there "
                "to continue it; nothing in the folder was changed"
            )
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


def symlinks(folder: Path) -> list[Path]:
    """The symbolic links inside ``folder`` (files or folders; none followed)."""
    found = []
    for root, dirs, files in os.walk(folder):
        found += [Path(root, name) for name in (*dirs, *files) if Path(root, name).is_symlink()]
    return sorted(found)


def _is_ganstep_file(out: Path, path: Path) -> bool:
    """Whether ``path`` (a file in the run folder ``out``) is one ganstep writes there."""
    parts = path.relative_to(out).parts
    name = parts[-1]
    if len(parts) == 1:
        if name == LOCK_NAME:
            text = path.read_text(errors="replace")
            return not text.strip() or _holder(text) is not None
        return name in FILES or checkpoint.is_temporary(name)
    if len(parts) != 2:
        return False
    if parts[0] == "checkpoints":
        return bool(checkpoint.PATTERN.match(name)) or checkpoint.is_temporary(name)
    if parts[0] == "samples":
        return bool(SAMPLE.match(name)) or checkpoint.is_temporary(name)
    return parts[0] == tensorboard.FOLDER and name.startswith(EVENTS)


def stale_attempt(out: Path) -> list[Path] | None:
    """The files of a run that stopped before its first checkpoint (killed, or failed
    after writing its config), or None if ``out`` is not such a folder: a ganstep
    config.toml, no checkpoint, no link, nothing but files ganstep writes there, and
    nothing that only a run past its first checkpoint writes (:func:`went_past_first`):
    a finished run whose checkpoints were moved away is not an attempt to clear."""
    out = Path(out)
    if not out.is_dir() or checkpoint.list_checkpoints(out / "checkpoints") or symlinks(out):
        return None
    try:
        config = read_toml(out / "config.toml")
    except (ValueError, OSError):
        return None
    if "steps" not in config or went_past_first(out, config):
        return None
    files = [p for p in out.rglob("*") if not p.is_dir()]
    if not all(_is_ganstep_file(out, p) for p in files):
        return None
    return files


def went_past_first(out: Path, config: dict) -> list[str]:
    """What in ``out`` a run writes only after its first checkpoint (at step
    ``min(ckpt_every, steps)``): the report of a finished run, a metrics record or a
    sample picture of a later step. A run killed before that checkpoint leaves none."""
    found = ["report.png"] if (out / "report.png").exists() else []
    steps, every = config.get("steps"), config.get("ckpt_every", 1000)
    if not (isinstance(steps, int) and isinstance(every, int)) or min(steps, every) < 1:
        return found or ["a config.toml without its step counts"]  # not ours to judge
    first = min(steps, every)
    try:
        with warnings.catch_warnings():  # a last line cut short by the kill: left out, quietly
            warnings.simplefilter("ignore", GanstepWarning)
            later = [r["step"] for r in records(out / "metrics.jsonl") if r and r["step"] > first]
    except (ValueError, OSError):  # damaged or unreadable: not clearly an attempt's
        return [*found, "a metrics.jsonl it cannot read"]
    if later:
        found.append(f"metrics.jsonl up to step {max(later)}")
    shown = [int(p.stem[5:]) for p in (out / "samples").glob("step_*.png") if SAMPLE.match(p.name)]
    if any(s > first for s in shown):
        found.append(f"samples up to step {max(shown)}")
    return found


def clear_stale_attempt(out: Path, files: list[Path], resume: bool) -> None:
    """Delete what :func:`stale_attempt` found (the lock stays: it is ours now), saying so."""
    kept = out / LOCK_NAME
    gone = [p for p in files if p != kept]
    for p in gone:
        p.unlink(missing_ok=True)
    asked = "--resume found no checkpoint" if resume else "the folder is not empty"
    warnings.warn(
        f"{out} holds a run that stopped before its first checkpoint ({len(gone)} file(s) of "
        f"ganstep's: its config.toml and what it wrote); {asked}, so it starts afresh",
        GanstepWarning,
        stacklevel=2,
    )


def refuse_existing_run(out: Path) -> None:
    """A fresh start writes only into an empty folder: never over an earlier run's files
    nor over files of the user's (a config.toml, a report.png of their own). Only an
    empty lock file of ganstep's, or one naming its holder, is no obstacle."""
    if checkpoint.list_checkpoints(out / "checkpoints"):
        raise FileExistsError(
            f"{out} already holds checkpoints: pass --resume to continue it, or choose "
            "another --out"
        )
    lock = out / LOCK_NAME
    found = sorted(
        str(p.relative_to(out)) for p in out.rglob("*")
        if not p.is_dir() and not (p == lock and _is_ganstep_file(out, p))
    )  # fmt: skip
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise FileExistsError(
            f"{out} is not empty ({shown}): a new run would write over those files; choose "
            "another --out (or move them away)"
        )


def write_config(path: Path, cfg: Config, resumed: dict | None, step: int) -> None:
    """config.toml, atomically: ``cfg``, after one comment line per resume saying what it
    changed."""
    history = []
    if resumed is not None:
        if path.exists():
            text = path.read_text(errors="replace")
            history = [line for line in text.splitlines() if line.startswith("# ")]
        now = dataclasses.asdict(cfg)
        changed = [f"{key} {json.dumps(resumed.get(key))} -> {json.dumps(now[key])}"
                   for key in RESUMABLE if resumed.get(key) != now[key]]  # fmt: skip
        history.append(f"# resumed at step {step}" + (": " + ", ".join(changed) if changed else ""))
    checkpoint.atomic_write_text(path, "".join(line + "\n" for line in history) + cfg.to_toml())


def records(path: Path) -> list[dict]:
    """The metrics records of ``path`` (``[{}]`` if none). A last line cut short by a crash
    is left out, with a warning; a damaged line before it is an error naming it."""
    if not path.exists():
        return [{}]
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    found = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("step"), int):
                raise ValueError("not a metrics record")
        except ValueError as e:
            if number < len(lines):
                raise ValueError(f"{path}, line {number}: damaged ({e}); remove that line") from e
            warnings.warn(
                f"{path}: its last line is cut short (a crash while writing it); left out",
                GanstepWarning,
                stacklevel=2,
            )
            break
        found.append(record)
    return found or [{}]


def truncate_metrics(path: Path, step: int) -> None:
    """Drop records written after the checkpoint a run resumes from (and a last line cut
    short), atomically."""
    if path.exists():
        keep = [r for r in records(path) if r and r["step"] <= step]
        checkpoint.atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in keep))


def saved_config(out: Path) -> dict:
    """The config of the run in ``out``: its config.toml, or if that is missing or
    damaged, the config its newest checkpoint holds (with a warning)."""
    path = out / "config.toml"
    try:
        values = read_toml(path)
        if "steps" not in values:  # every run writes its resolved config, steps and all
            raise ValueError(
                f"--resume: {path} holds no run's config (emptied or edited: it has no "
                "steps), and the run has no checkpoint to take it from; start afresh in "
                "another folder, or put the file back"
            )
        return values
    except (ValueError, OSError) as e:
        state = checkpoint.load_latest(out / "checkpoints", map_location="cpu")
        if state is None:
            if not path.exists():
                raise FileNotFoundError(
                    f"--resume: {path} not found (no run to continue there)"
                ) from None
            raise
        warnings.warn(
            f"{path} is missing or damaged ({e}); the run's config comes from its newest "
            "checkpoint",
            GanstepWarning,
            stacklevel=2,
        )
        return {k: v for k, v in state["config"].items() if v is not None}


def load_run(run: str | Path, map_location="cpu") -> tuple[Config, dict]:
    """The config and newest checkpoint of a run folder."""
    run = Path(run)
    config_path = run / "config.toml"
    if not config_path.exists():
        raise FileNotFoundError(f"{run} is not a ganstep run folder: no config.toml")
    cfg = Config.from_toml(config_path)
    state = checkpoint.load_latest(run / "checkpoints", map_location=map_location)
    if state is None:
        raise FileNotFoundError(f"{run / 'checkpoints'} holds no checkpoint")
    changes = run_changes(state["config"], dataclasses.asdict(cfg))
    if changes:  # as --resume refuses it: the checkpoint is another run's
        raise ValueError(
            f"the newest checkpoint in {run / 'checkpoints'} is not the run that {config_path} "
            f"describes ({'; '.join(changes)}): it was copied from another run"
        )
    return cfg, state
