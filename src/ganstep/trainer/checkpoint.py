"""Checkpoints written atomically (write, fsync, rename), pruned to the last K, and
loaded safely.

A checkpoint is ``checkpoints/step_00001234.pt``; a write in progress is a hidden
``.tmp-*`` file that is never loaded, so a run killed at any moment leaves only
complete checkpoints behind (and the next run in the folder removes the leftover).

The format is plain data: tensors, numbers, strings, ``None`` and lists, tuples and
dicts of them. :func:`save` refuses anything else and :func:`load` reads with
``torch.load(weights_only=True)`` and no extra allowed globals, so a checkpoint
crafted to run code when unpickled is refused instead of run.
"""

from __future__ import annotations

import hashlib
import math
import os
import pickle
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import torch

from ..engine.errors import GanstepWarning

# step_00001234.pt: eight digits at least, more past step 99,999,999 (steps may reach
# 10**12), so that every allowed step count is found and sorted by its number.
PATTERN = re.compile(r"^step_(\d{8,})\.pt$")
# The temporary files of ganstep's atomic writes: this prefix, the writing run's tag
# (recorded in its run.lock; see set_writer_tag), mkstemp's eight random characters
# and the written file's suffix. A file of the user's is never taken for one (a
# ".tmp-thesis.tex" is not), and a run's cleanup removes only the temporary files of
# the run whose tag it found recorded.
TEMPORARY = ".tmp-ganstep-"
_TEMPORARY_NAME = re.compile(r"^\.tmp-ganstep-(?:([0-9a-f]{8})-)?[a-z0-9_]{8}(\.[a-z]+)?$")
_writer_tag = ""
# Everything a checkpoint may hold besides tensors and containers. torch's weights-only
# unpickler allows these (and tensors) without any global added by us.
PLAIN = (bool, int, float, str, type(None))


class CheckpointError(RuntimeError):
    """No checkpoint of a folder could be read safely; the message names each one."""


class MisnamedCheckpoint(CheckpointError):
    """A checkpoint whose name says another step than the one it holds (a copy or a
    rename): never skipped, as the newest by name it would outlive every real one."""


def path_for(folder: Path, step: int) -> Path:
    return folder / f"step_{step:08d}.pt"


def check_plain(obj: object, where: str = "state") -> None:
    """Raise TypeError naming the first value of ``obj`` that is not plain data."""
    if isinstance(obj, (torch.Tensor, *PLAIN)):
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, PLAIN):
                raise TypeError(f"checkpoint key {where}[{key!r}] is not a plain value")
            check_plain(value, f"{where}[{key!r}]")
        return
    if isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            check_plain(value, f"{where}[{i}]")
        return
    raise TypeError(
        f"checkpoint value {where} is a {type(obj).__name__}: checkpoints hold only tensors, "
        "numbers, strings, None and lists or dicts of them, so that they load safely"
    )


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """``write(file)`` to a temporary file beside ``path``, fsync, then rename over it:
    a reader (or a crash) sees the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = TEMPORARY + (f"{_writer_tag}-" if _writer_tag else "")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=path.suffix)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would: mkstemp's 0600 survives the rename
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:  # torch.save reports a failed write as RuntimeError
        Path(tmp).unlink(missing_ok=True)
        raise _write_failure(path, e) from e
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def set_writer_tag(tag: str) -> None:
    """Name this process's temporary files with ``tag`` (8 hex digits; "" for none): a
    run records its tag in its lock file, so that the next run in the folder knows which
    leftovers were written by it."""
    global _writer_tag
    if tag and not re.fullmatch(r"[0-9a-f]{8}", tag):
        raise ValueError(f"a writer tag is 8 hex digits, got {tag!r}")
    _writer_tag = tag


def is_temporary(name: str, tag: str | None = None) -> bool:
    """Whether ``name`` is one of ganstep's temporary files (see :data:`TEMPORARY`), and
    with ``tag``, one written under that tag."""
    found = _TEMPORARY_NAME.match(name)
    return bool(found) and (tag is None or found.group(1) == tag)


def append_text(path: Path, text: str) -> None:
    """``text`` appended to ``path`` (metrics.jsonl's records); a failed write names the
    file and why (a line cut short is dropped by the next resume)."""
    try:
        with path.open("a") as f:
            f.write(text)
    except OSError as e:
        raise _write_failure(path, e, "its earlier lines are intact") from e


def _write_failure(path: Path, error: BaseException, kept: str = "") -> OSError:
    """Why a write failed, in terms a user can act on: a file size limit, a full disk."""
    import resource

    hints = []
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY:
        hints.append(f"this process may write files of at most {limit:,} bytes (ulimit -f)")
    free = shutil.disk_usage(path.parent).free
    if free < 64 * 2**20:
        hints.append(f"{free:,} bytes are free on that disk")
    reason = "; ".join(hints) or str(error).splitlines()[0]
    kept = kept or "the file it replaces is intact"
    return OSError(f"{path}: could not be written ({reason}); {kept}")


def atomic_save(obj: object, path: Path) -> None:
    """``torch.save`` to ``path`` atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda f: torch.save(obj, f))


def atomic_write_text(path: Path, text: str) -> None:
    """``text`` to ``path`` atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda f: f.write(text.encode()))


def checksum(state: object) -> str:
    """SHA-256 of a checkpoint's payload: every tensor's dtype, shape and bytes and every
    plain value, in a fixed order (dict keys sorted), so that a flipped bit shows."""
    h = hashlib.sha256()

    def feed(obj: object) -> None:
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        elif isinstance(obj, dict):
            h.update(b"{")
            for key in sorted(obj, key=repr):
                h.update(repr(key).encode())
                feed(obj[key])
            h.update(b"}")
        elif isinstance(obj, list | tuple):
            h.update(b"[")
            for value in obj:
                feed(value)
            h.update(b"]")
        else:
            h.update(repr(obj).encode())

    feed(state)
    return h.hexdigest()


def save(folder: Path, step: int, state: dict, keep: int) -> Path:
    """Write ``state`` (plain data only) as the checkpoint of ``step``, with the checksum
    of its payload; keep the last ``keep``."""
    check_plain(state)
    final = path_for(folder, step)
    atomic_save({**state, "checksum": checksum(state)}, final)
    for old in list_checkpoints(folder)[:-keep]:
        old.unlink(missing_ok=True)
    return final


def remove_partial(folder: Path, tag: str) -> list[Path]:
    """Delete the temporary files of killed writes of the run whose writer tag is ``tag``
    (the one its lock file recorded); return them.

    Call it only while holding the run folder's lock: no write can be in progress then.
    """
    if not tag or not folder.is_dir() or folder.is_symlink():
        return []
    leftovers = [p for p in folder.iterdir() if is_temporary(p.name, tag) and p.is_file()
                 and not p.is_symlink()]  # fmt: skip
    for p in leftovers:
        p.unlink(missing_ok=True)
    return leftovers


def list_checkpoints(folder: Path) -> list[Path]:
    """Complete checkpoints in ``folder``, oldest first (by step, whatever its digits)."""
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := PATTERN.match(p.name))]
    return [p for _, p in sorted(found)]


def load(path: Path, map_location="cpu") -> dict:
    """One checkpoint, read without running any code it may carry.

    Raises :class:`CheckpointError` saying why it cannot be used: damaged (truncated,
    empty, not a checkpoint) or holding objects that only an unsafe load could build.
    """
    path = Path(path)
    if path.is_file() and path.stat().st_size == 0:
        raise CheckpointError(f"{path}: damaged (an empty file)")
    try:
        with warnings.catch_warnings():
            # random bytes read as a pickle "protocol"; the error below says it all
            warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
            state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        # torch names the global it refused on a line of its own
        refused = [line.strip() for line in str(e).splitlines() if "GLOBAL" in line]
        if refused:
            raise CheckpointError(
                f"{path}: refused: it holds objects that are not plain data, and loading "
                f"it could run code ({refused[0]})"
            ) from e
        raise CheckpointError(f"{path}: damaged or not a checkpoint (cannot unpickle)") from e
    except FileNotFoundError as e:
        raise CheckpointError(f"{path}: no such checkpoint") from e
    except Exception as e:  # noqa: BLE001 - damaged bytes fail in any way the unpickler can
        raise CheckpointError(f"{path}: damaged ({_short(e)})") from e
    if not isinstance(state, dict) or "step" not in state:
        raise CheckpointError(f"{path}: not a ganstep checkpoint (no step)")
    problem = _check_payload(state)
    if problem is not None:
        raise CheckpointError(f"{path}: damaged ({problem})")
    named = PATTERN.match(path.name)
    if named and int(named.group(1)) != state["step"]:
        raise MisnamedCheckpoint(
            f"{path}: holds step {state['step']}, not the step {int(named.group(1))} its name "
            f"says (a copy or a rename): rename it {path_for(path.parent, state['step']).name} "
            "if it is the newest, or move it out of the run"
        )
    return state


# A training checkpoint's parts and their types (ganstep train writes all of them).
PARTS = {"step": int, "config": dict, "data": dict, "G": dict, "D": dict, "opt_g": dict,
         "opt_d": dict, "step_state": dict, "rng": dict, "sums": dict, "counts": dict}  # fmt: skip
FINITE = ("G", "D", "ema", "opt_g", "opt_d")


def _check_payload(state: dict) -> str | None:
    """Why a loaded checkpoint cannot be trusted, or None: its checksum, its parts and
    their types, and every float in the models, EMA and optimizer states being finite."""
    saved = state.pop("checksum", None)
    if saved is not None and saved != checksum(state):
        return "its checksum does not match its contents: a bit flipped on disk or in transfer"
    if "G" in state:  # a training checkpoint (tests save bare ones)
        for key, kind in PARTS.items():
            if not isinstance(state.get(key), kind) or isinstance(state.get(key), bool):
                got = type(state[key]).__name__ if key in state else "missing"
                return f"its {key!r} should be a {kind.__name__}, got {got}"
        for key in FINITE:
            bad = _first_non_finite(state.get(key), key)
            if bad is not None:
                return f"{bad} holds NaN or infinite values"
        elapsed = state.get("elapsed_s", 0.0)  # kept since issue 31; older ones lack it
        if not isinstance(elapsed, float) or not 0 <= elapsed < math.inf:
            return f"its 'elapsed_s' should be a finite number of seconds >= 0, got {elapsed!r}"
    return None


def _first_non_finite(obj: object, where: str) -> str | None:
    """Where the first non-finite float of ``obj`` (nested tensors and numbers) is."""
    if isinstance(obj, torch.Tensor):
        ok = not obj.is_floating_point() or bool(torch.isfinite(obj).all())
        return None if ok else where
    if isinstance(obj, float):
        return None if math.isfinite(obj) else where
    if isinstance(obj, dict | list | tuple):
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for key, value in items:
            found = _first_non_finite(value, f"{where}.{key}")
            if found is not None:
                return found
    return None


def _short(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    first = lines[0].split(". ")[0] if lines else "no message"
    return f"{type(e).__name__}: {first}"


def load_latest(folder: Path, map_location="cpu") -> dict | None:
    """The newest checkpoint of ``folder`` that can be read, or ``None`` if it has none.

    A newer one that cannot be read (see :func:`load`) is named in a
    :class:`~ganstep.engine.errors.GanstepWarning` and the next older one is tried; if none
    can be read, :class:`CheckpointError` lists each and why.
    """
    found = list_checkpoints(folder)
    reasons = []
    for path in reversed(found):
        try:
            state = load(path, map_location)
        except MisnamedCheckpoint:
            raise
        except CheckpointError as e:
            reasons.append(str(e))
            continue
        for reason in reasons:
            warnings.warn(f"{reason}; using the older {path.name}", GanstepWarning, stacklevel=2)
        return state
    if reasons:
        raise CheckpointError("no checkpoint can be read: " + "; ".join(reasons))
    return None
