"""examples/: the MNIST DCGAN run under Lightning and under Accelerate, run as a user
would (here on the bundled digits, a few steps, one process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import environment

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("name, needs", [("lightning_dcgan.py", "lightning"),
                                         ("accelerate_dcgan.py", "accelerate")])  # fmt: skip
def test_example_trains_and_writes_its_logs(tmp_path, name, needs):
    pytest.importorskip(needs)
    cmd = [sys.executable, str(EXAMPLES / name), "--data", "digits", "--steps", "3",
           "--batch-size", "16"]  # fmt: skip
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=environment(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    logs = tmp_path / ("lightning_logs" if needs == "lightning" else "accelerate_logs")
    assert list(logs.rglob("events.out.tfevents.*")), "no TensorBoard events written"
    if needs == "lightning":
        assert list(logs.rglob("*.ckpt")), "no checkpoint written"
    else:
        assert (tmp_path / "accelerate_state").is_dir()
