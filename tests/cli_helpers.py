"""Running ganstep as a user does (a subprocess) and reading what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TINY = ["--width", "16", "--batch-size", "32", "--eval-samples", "200", "--log-every", "5",
        "--no-progress"]  # fmt: skip


def environment(cache: Path) -> dict:
    return {**os.environ, "GANSTEP_CACHE": str(cache), "OMP_NUM_THREADS": "1"}


def ganstep(*args, cache: Path, check: bool = True, timeout: float = 120, cwd=None):
    env = environment(cache)
    proc = subprocess.run(
        [sys.executable, "-m", "ganstep", *map(str, args)],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd,
    )  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def checkpoint(run: Path) -> dict:
    last = sorted((run / "checkpoints").glob("step_*.pt"))[-1]
    return torch.load(last, weights_only=True)


def assert_same_state(a: dict, b: dict) -> None:
    for key in ("G", "D", "ema"):
        for name, value in a[key].items():
            assert torch.equal(value, b[key][name]), f"{key}.{name}"
    for key in ("opt_g", "opt_d"):
        for pid, state in a[key]["state"].items():
            for name, value in state.items():
                assert torch.equal(value, b[key]["state"][pid][name]), f"{key}.{pid}.{name}"
    assert a["step_state"] == b["step_state"]
