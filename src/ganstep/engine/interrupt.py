"""Ctrl-C while ganstep is imported: torch takes a second or more to import, and a
KeyboardInterrupt raised inside that import can be swallowed by a library's own
``except`` or end in a traceback. During the import SIGINT only sets a flag; once the
imports are done, the ``ganstep`` command leaves with status 130 and one line, and a
program that imports ganstep gets its KeyboardInterrupt there."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from pathlib import Path

INTERRUPTED = 130  # the shell's status for a process ended by SIGINT


class Stopped(KeyboardInterrupt):
    """Training stopped on a signal after saving a checkpoint; ``status`` is the exit
    status a process ended by that signal has (130 for SIGINT, 143 SIGTERM, 129 SIGHUP)."""

    def __init__(self, status: int = INTERRUPTED) -> None:
        super().__init__(status)
        self.status = status


def _command() -> bool:
    """Whether this process is the ``ganstep`` command: ``ganstep ...``, or ``python -m
    ganstep``, whose argv[0] is "-m" while the package is imported and then the path of
    its ``__main__.py`` (runpy sets it before running the module)."""
    first = sys.argv[0] if sys.argv else ""
    if first == "-m" or Path(first).name == "ganstep":
        return True
    package_main = Path(__file__).resolve().parents[1] / "__main__.py"
    return Path(first).name == "__main__.py" and Path(first).resolve() == package_main


def takes_ctrl_c() -> bool:
    """Whether this thread may handle SIGINT: only the main thread can set handlers,
    and a process started with Ctrl-C ignored (`cmd &` in a script) goes on ignoring
    it, as Python itself does."""
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN)  # fmt: skip


@contextlib.contextmanager
def deferred(what: str = "starting"):
    """Hold SIGINT until the block ends; then, if it came, leave with status 130 (the
    command) or raise KeyboardInterrupt (a program importing ganstep)."""
    if not takes_ctrl_c():
        yield
        return
    came = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if came and _command():
        print(f"ganstep: interrupted while {what}", file=sys.stderr)
        raise SystemExit(INTERRUPTED)
    if came:
        raise KeyboardInterrupt
