"""The run folder: one process at a time, and writable before step 1.

``RunLock`` holds an advisory lock (``flock``) on ``run.lock`` for the whole run. The
kernel drops it when its process ends, however it ends (``kill -9`` too), so a lock
file naming a process that is gone is simply taken over. The file names its holder
(PID, host, start time) for the message a second process gets.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import tempfile
import time
import warnings
from pathlib import Path

from .errors import GanstepWarning

LOCK_NAME = "run.lock"
FOLDERS = ("checkpoints", "samples")
FILES = ("config.toml", "metrics.jsonl", "report.png")


class RunFolderLocked(RuntimeError):
    """Another process is training in this run folder."""


def _describe(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on host {holder['host']} (since {holder['since']})"
    except (ValueError, KeyError, TypeError):
        return "another process"


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
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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
        if previous.strip():
            warnings.warn(
                f"{self.path}: took over the lock left by {_describe(previous)}, which has ended",
                GanstepWarning,
                stacklevel=2,
            )
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since})
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode() + b"\n", 0)
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is None:
            return
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
    for name in FILES:
        path = folder / name
        if path.is_dir():
            raise ValueError(f"{path} is a folder; a run writes a file there")
        if path.exists() and not os.access(path, os.W_OK):
            raise ValueError(f"{path} is not writable")
