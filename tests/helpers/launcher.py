"""The ganstep command (and ``python -c`` code) started warm: a process per command,
forked from one that has already imported what every command imports.

Each ``python -m ganstep`` the tests start spends seconds before its first line of
ganstep: the interpreter, ``import torch``, and the ``torch._dynamo`` import torch makes
at a process's first optimizer (1.3 s of the 3.7 s of a command on a 2-core machine),
for each of the suite's hundreds of commands. Here a server per test process and
environment imports them once; each command is a child forked from it, with its own
arguments, working folder, environment and files for stdout and stderr, and the status
a process gets: the command runs in a process of its own, on real files, as a user's
does, only sooner. ``tests/test_launcher.py`` holds it to what a new interpreter does.

What a fork cannot start as a new interpreter would is left to ``subprocess``
(:meth:`Launcher.run` starts it cold; :meth:`Launcher.ganstep` and
:meth:`Launcher.python` return None): an environment differing
from every server's in more than ``PER_COMMAND`` (torch reads some of it at import)
once ``MAX_SERVERS`` run, a command while another thread's runs, any command where
CUDA is (a forked child cannot use it), or a server that did not start or holds a
thread (a fork copies only the calling thread: numpy's BLAS starts one unless
``OMP_NUM_THREADS=1``)."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# set for each command (ganstep reads GANSTEP_CACHE when it runs; pytest names each test
# in PYTEST_CURRENT_TEST): the rest of the environment must be the server's
PER_COMMAND = frozenset({"GANSTEP_CACHE", "PYTEST_CURRENT_TEST"})
# servers a test process keeps (one per environment: the suite has two, helpers' and the
# hostile table's); a command in yet another environment starts cold
MAX_SERVERS = 3


def _serve() -> None:
    """The server: import, then fork a child per request line on stdin; write back the
    child's pid, then its wait status."""
    import numpy  # noqa: F401 - what every command imports, once
    import torch
    import torch._dynamo  # noqa: F401 - imported at a process's first optimizer

    import ganstep.cli  # noqa: F401
    import ganstep.tools.audit_script  # noqa: F401
    import ganstep.trainer.train  # noqa: F401

    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        print(json.dumps({"refused": "the server holds threads"}), flush=True)
        return
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)  # never returns
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": status}), flush=True)


def _child(request: dict) -> None:
    """The forked process: its folder, environment, files and argv, then the command
    (``ganstep.cli.run()``) or the code (as ``python -c`` runs it); it ends as an
    interpreter ends (threads joined, exit handlers, an uncaught exception printed with
    status 1, an uncaught KeyboardInterrupt by SIGINT)."""
    import builtins
    import random
    import traceback

    import numpy
    import torch

    import ganstep

    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        stdin = os.open(os.devnull, os.O_RDONLY)
        stdout = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        stderr = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        # a new interpreter's draws: seeded from the OS (torch's, Python's, numpy's)
        torch.seed()
        random.seed()
        numpy.random.seed()
        try:
            if "code" in request:  # python -c: argv, path and __main__ as it sets them
                sys.argv, sys.path[0] = ["-c"], ""
                main = sys.modules["__main__"]
                main.__dict__.clear()
                main.__dict__.update(__name__="__main__", __doc__=None, __package__=None,
                                     __spec__=None, __annotations__={},
                                     __builtins__=builtins)  # fmt: skip
                exec(compile(request["code"], "<string>", "exec"), main.__dict__)  # noqa: S102
            else:  # python -m ganstep
                sys.argv = [str(Path(ganstep.__file__).parent / "__main__.py"), *request["args"]]
                sys.path[0] = os.getcwd()
                from ganstep.cli import run

                run()
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
        except BaseException as e:  # noqa: BLE001 - printed as the interpreter prints it
            traceback.print_exception(type(e), e, e.__traceback__.tb_next)  # not this frame
            if isinstance(e, KeyboardInterrupt):
                code = -signal.SIGINT
        threading._shutdown()  # noqa: SLF001 - the interpreter joins non-daemon threads
        atexit._run_exitfuncs()  # noqa: SLF001
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed stream, as at exit
                pass
    finally:
        if code < 0:  # ended by the signal, as an uncaught KeyboardInterrupt ends Python
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code & 0xFF)


class _Server:
    """A server process with its environment (what torch read at its import)."""

    def __init__(self, env: dict) -> None:
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); " \
               "import launcher; sys.path.pop(0); launcher._serve()"  # fmt: skip
        self.process = subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        self.ready = "ready" in json.loads(self.process.stdout.readline() or "{}")
        if not self.ready:
            self.stop()

    def stop(self) -> None:
        """End the server: it leaves at the end of its input, or is killed."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()

    def run(self, request: dict, timeout: float) -> int:
        """The child's wait status; a timeout kills it as ``subprocess.run``'s does."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("the tests' command server ended")
        pid = json.loads(answer)["pid"]
        fired = []

        def kill() -> None:
            fired.append(True)
            os.kill(pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            status = json.loads(self.process.stdout.readline())["status"]
        finally:
            timer.cancel()
        if fired:
            raise subprocess.TimeoutExpired(request.get("args", ["-c"]), timeout)
        return status


class Launcher:
    """The servers of a test process, one per environment, each started at its first
    command."""

    def __init__(self) -> None:
        self._servers: dict[frozenset, _Server] = {}
        self._lock = threading.Lock()
        atexit.register(self.stop)

    def stop(self) -> None:
        """End every server (at the test process's exit)."""
        for server in self._servers.values():
            if server.ready:
                server.stop()
        self._servers.clear()

    def _server(self, env: dict) -> _Server | None:
        import torch

        # where CUDA is, a server's import may have asked the driver for its devices
        # (torch._dynamo does), and a CUDA context does not survive a fork: start cold
        if sys.platform != "linux" or torch.cuda.is_available():
            return None
        base = {k: v for k, v in env.items() if k not in PER_COMMAND}
        key = frozenset(base.items())
        if key not in self._servers and len(self._servers) >= MAX_SERVERS:
            return None  # a test's environment of its own: a server would cost more
        if key not in self._servers:
            try:
                self._servers[key] = _Server(base)
            except (OSError, ValueError):
                return None
        server = self._servers[key]
        return server if server.ready else None

    def run(self, command: list[str], *, env: dict, cwd, timeout: float, cold: bool = False,
            stdin=None, preexec=None) -> subprocess.CompletedProcess:  # fmt: skip
        """``command`` as ``subprocess.run(command, capture_output=True, text=True, ...)``
        runs it: forked warm where it is ``python -m ganstep ...`` or ``python -c code``
        and can be (see the module's docstring), else in a new interpreter (``cold``, or
        a ``preexec`` function, which only a new process runs)."""
        warm = None
        if not cold and preexec is None and command[0] == sys.executable:
            if command[1:3] == ["-m", "ganstep"]:
                warm = self.ganstep(command[3:], env=env, cwd=cwd, timeout=timeout)
            elif command[1] == "-c":
                warm = self.python(command[2], env=env, cwd=cwd, timeout=timeout)
        if warm is not None:
            return warm
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=timeout, stdin=stdin, preexec_fn=preexec)  # fmt: skip

    def ganstep(self, args: list[str], *, env: dict, cwd, timeout: float):
        """``python -m ganstep *args`` forked warm: a ``CompletedProcess`` as
        ``subprocess.run(..., capture_output=True, text=True)`` returns, or None where it
        cannot start warm (the caller then starts it cold)."""
        return self._run({"args": [str(a) for a in args]}, env, cwd, timeout,
                         [sys.executable, "-m", "ganstep", *map(str, args)])  # fmt: skip

    def python(self, code: str, *, env: dict, cwd, timeout: float):
        """``python -c code`` forked warm, as :meth:`ganstep`."""
        return self._run({"code": code}, env, cwd, timeout, [sys.executable, "-c", code])

    def _run(self, request: dict, env: dict, cwd, timeout: float, command: list):
        if not self._lock.acquire(blocking=False):  # another thread's command: cold
            return None
        try:
            server = self._server(env)
            if server is None:
                return None
            with tempfile.TemporaryDirectory(prefix="ganstep-command-") as folder:
                stdout, stderr = Path(folder, "stdout"), Path(folder, "stderr")
                request = {**request, "env": env, "cwd": str(cwd or os.getcwd()),
                           "stdout": str(stdout), "stderr": str(stderr)}  # fmt: skip
                status = server.run(request, timeout)
                return subprocess.CompletedProcess(
                    command, os.waitstatus_to_exitcode(status),
                    stdout.read_text(errors="replace"), stderr.read_text(errors="replace"),
                )  # fmt: skip
        finally:
            self._lock.release()


LAUNCHER = Launcher()
