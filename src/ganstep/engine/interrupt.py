"""Ctrl-C while ganstep is imported: torch takes a second or more to import, and a
KeyboardInterrupt raised inside that import can be swallowed by a library's own
``except`` or end in a traceback. During the import SIGINT only sets a flag; once the
imports are done, a program that imports ganstep gets its KeyboardInterrupt there. The
``ganstep`` command holds SIGINT from the package's first line until its main() handles
it (:func:`hold_start`, :func:`release_start`), so no Ctrl-C lands between the two, and
one that came leaves with status 130 and one line."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import threading
from pathlib import Path
from typing import NoReturn

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


def _run_module() -> str | None:
    """The module ``python -m`` runs in this process, from the interpreter's own command
    line (None where it runs none, or where Python does not keep that line)."""
    line = list(getattr(sys, "orig_argv", []))
    return line[line.index("-m") + 1] if "-m" in line[:-1] else None


def takes_ctrl_c() -> bool:
    """Whether this thread may handle SIGINT: only the main thread can set handlers,
    and a process started with Ctrl-C ignored (`cmd &` in a script) goes on ignoring
    it, as Python itself does."""
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN)  # fmt: skip


# the command's start-up hold: the signals that came, and the handler it replaced
_start_hold: tuple[list[int], object] | None = None


def _noting(came: list[int]) -> object:
    """Make SIGINT only note itself in ``came``; the handler it replaced."""
    return signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))


def _leave(what: str) -> NoReturn:
    """The command's end on a Ctrl-C held while it did ``what``: one line, status 130."""
    print(f"ganstep: interrupted while {what}", file=sys.stderr)
    raise SystemExit(INTERRUPTED)


def hold_start() -> None:
    """At the start of ``import ganstep`` in the command (no-op elsewhere): hold SIGINT
    until :func:`release_start`. Blocks that hold it themselves (:func:`deferred`) cover
    the imports only, and a Ctrl-C landing after them and before main()'s ``try`` (the
    rest of cli's module body, main()'s first lines) ended in a traceback."""
    global _start_hold
    if _start_hold is not None or not (_command() and takes_ctrl_c()):
        return
    if multiprocessing.parent_process() is not None:  # a spawned worker gets the command's
        return  # argv, and no main() of its own would ever release the hold
    if _run_module() not in (None, "ganstep", "ganstep.__main__", "ganstep.cli"):
        return  # python -m ganstep.something: no main() would release it either
    came: list[int] = []
    _start_hold = came, _noting(came)


def release_start(what: str = "starting") -> None:
    """Where the command begins to handle Ctrl-C itself: put SIGINT's handler back and,
    if Ctrl-C came since :func:`hold_start`, leave with status 130 and one line."""
    global _start_hold
    if _start_hold is None:
        return
    (came, previous), _start_hold = _start_hold, None
    signal.signal(signal.SIGINT, previous)
    if came:
        _leave(what)


@contextlib.contextmanager
def deferred(what: str = "starting"):
    """Hold SIGINT until the block ends; then, if it came, leave with status 130 (the
    command) or raise KeyboardInterrupt (a program importing ganstep). Inside the
    command's start-up hold it leaves the signal to :func:`release_start`."""
    if not takes_ctrl_c() or _start_hold is not None:
        yield
        return
    came: list[int] = []
    previous = _noting(came)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if came and _command():
        _leave(what)
    if came:
        raise KeyboardInterrupt
