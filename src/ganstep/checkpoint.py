"""Checkpoints written atomically (write, fsync, rename) and pruned to the last K.

A checkpoint is ``checkpoints/step_00001234.pt``; a write in progress is a hidden
``.tmp-*`` file that is never loaded, so a run killed at any moment leaves only
complete checkpoints behind.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import torch

PATTERN = re.compile(r"^step_(\d{8})\.pt$")


def path_for(folder: Path, step: int) -> Path:
    return folder / f"step_{step:08d}.pt"


def atomic_save(obj: object, path: Path) -> None:
    """``torch.save`` to a temporary file beside ``path``, fsync, then rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pt")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def save(folder: Path, step: int, state: dict, keep: int) -> Path:
    """Write ``state`` as the checkpoint of ``step``; keep only the last ``keep``."""
    final = path_for(folder, step)
    atomic_save(state, final)
    for old in list_checkpoints(folder)[:-keep]:
        old.unlink(missing_ok=True)
    return final


def list_checkpoints(folder: Path) -> list[Path]:
    """Complete checkpoints in ``folder``, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if PATTERN.match(p.name))


def load_latest(folder: Path, map_location="cpu") -> dict | None:
    """The newest checkpoint of ``folder``, or ``None`` if it has none."""
    found = list_checkpoints(folder)
    if not found:
        return None
    return torch.load(found[-1], map_location=map_location, weights_only=False)
