"""The tests' warm launcher (tests/helpers/launcher.py) starts a command as a new
interpreter would: the same output, files, exit status and results, cold and warm."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from helpers import TINY, environment, ganstep
from helpers.launcher import LAUNCHER

# where CUDA is, every command starts cold (the last test): nothing warm to compare
# (tests/test_gpu_session.py reads a skip reason naming CUDA as a test that needs it)
warm_only = pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU machine starts "
                               "every command cold: nothing warm to compare")  # fmt: skip


def started(proc):
    """``proc``, or a skip where the launcher could not start warm: on such a machine
    every command starts cold, slower but as before (a test failing there would stop CI
    for a speed-up)."""
    if proc is None:
        pytest.skip("the launcher's server did not start here: every command starts cold")
    return proc


def both(tmp_path, cache, *args) -> tuple:
    """The command run cold (``python -m ganstep``), then warm, each in a folder of its
    own."""
    (tmp_path / "cold").mkdir()
    (tmp_path / "warm").mkdir()
    cold = ganstep(*args, cache=cache, cwd=tmp_path / "cold", check=False, cold=True)
    warm = started(LAUNCHER.ganstep([str(a) for a in args], env=environment(cache),
                                    cwd=tmp_path / "warm", timeout=120))  # fmt: skip
    return cold, warm


@warm_only
def test_a_training_run_is_the_same_warm_and_cold(tmp_path, cache):
    cold, warm = both(tmp_path, cache, "train", "--steps", 4, "--ckpt-every", 4, "--out", "run",
                      *TINY)  # fmt: skip
    assert cold.returncode == warm.returncode == 0, cold.stderr + warm.stderr
    assert cold.stdout == warm.stdout and cold.stderr == warm.stderr
    saved = [torch.load(tmp_path / how / "run" / "checkpoints" / "step_00000004.pt",
                        weights_only=True) for how in ("cold", "warm")]  # fmt: skip
    for part in ("G", "D"):
        for name, value in saved[0][part].items():
            assert torch.equal(value, saved[1][part][name]), f"{part}.{name}"


@warm_only
@pytest.mark.parametrize("args", [["--help"], ["train", "--steps", "0"], ["sample"]],
                         ids=["help", "bad-value", "missing-argument"])  # fmt: skip
def test_output_and_status_are_the_same_warm_and_cold(tmp_path, cache, args):
    cold, warm = both(tmp_path, cache, *args)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout,
                                                           cold.stderr)  # fmt: skip


@warm_only
@pytest.mark.parametrize(("code", "status", "last_line"), [
    ("print('out'); import sys; sys.exit(3)", 3, None),
    ("raise ValueError('told')", 1, "ValueError: told"),
    ("raise KeyboardInterrupt", -2, "KeyboardInterrupt"),
    ("import sys; sys.exit('a message')", 1, "a message"),
    ("import threading, time, atexit; atexit.register(print, 'at exit'); "
     "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()", 0, None),
], ids=["exit-3", "exception", "keyboard-interrupt", "exit-message",
        "thread-and-atexit"])  # fmt: skip
def test_python_code_ends_as_a_new_interpreter_ends(tmp_path, cache, code, status, last_line):
    env = environment(cache)
    warm = started(LAUNCHER.python(code, env=env, cwd=tmp_path, timeout=60))
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)  # fmt: skip
    assert warm.returncode == cold.returncode == status
    assert warm.stdout == cold.stdout
    if last_line is not None:
        assert warm.stderr.splitlines()[-1] == cold.stderr.splitlines()[-1] == last_line
    # the traceback starts at the code, as Python's own does: none of the launcher's lines
    assert "launcher.py" not in warm.stderr


@warm_only
def test_a_command_past_its_timeout_is_killed(tmp_path, cache):
    started(LAUNCHER.python("pass", env=environment(cache), cwd=tmp_path, timeout=60))
    with pytest.raises(subprocess.TimeoutExpired):
        LAUNCHER.python("import time; time.sleep(30)", env=environment(cache), cwd=tmp_path,
                        timeout=0.5)  # fmt: skip
    after = LAUNCHER.python("print('next')", env=environment(cache), cwd=tmp_path, timeout=60)
    assert after.returncode == 0 and after.stdout == "next\n"  # the server goes on


@warm_only
@pytest.mark.parametrize("draw", ["torch.rand(1).item()", "random.random()",
                                  "numpy.random.rand()"])  # fmt: skip
def test_unseeded_draws_differ_between_commands_as_between_new_processes(tmp_path, cache, draw):
    """An unseeded generator starts from the OS's entropy in each new interpreter (torch's
    too): two commands forked from one server must not draw the same numbers."""
    code = f"import random, numpy, torch; print({draw})"
    env = environment(cache)
    warm = [started(LAUNCHER.python(code, env=env, cwd=tmp_path, timeout=60)).stdout
            for _ in range(2)]  # fmt: skip
    assert warm[0] and warm[0] != warm[1]


def test_where_cuda_is_every_command_starts_cold(tmp_path, cache, monkeypatch):
    """A CUDA driver asked for its devices before a fork is unusable in the child: on a
    GPU machine the tests' commands start as new interpreters."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert LAUNCHER.python("print(1)", env=environment(cache), cwd=tmp_path, timeout=60) is None
    proc = ganstep("--help", cache=cache)  # cold, then
    assert proc.returncode == 0 and "usage: ganstep" in proc.stdout
