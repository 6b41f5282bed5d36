"""A run's CUDA backend flags: cuDNN autotuning for the image models, TF32 only with
--tf32, both put back after the run; nothing changed on a CPU."""

from __future__ import annotations

import tomllib

import pytest
import torch
from helpers import TINY, ganstep

from ganstep.trainer.backends import cuda_backends, settings


def current() -> dict[str, bool]:
    return {"cudnn.benchmark": torch.backends.cudnn.benchmark,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32}  # fmt: skip


@pytest.mark.parametrize(("model", "tf32"), [("dcgan", False), ("began", True), ("mlp", False)])
def test_a_cuda_run_sets_its_flags_and_puts_them_back(model, tf32):
    before = current()
    # the flags are process-wide settings: a torch without CUDA takes them too
    with cuda_backends(model, tf32, torch.device("cuda")) as chosen:
        assert current() == chosen == settings(model, tf32)
        assert chosen["cudnn.benchmark"] == (model != "mlp")
        assert chosen["cudnn.allow_tf32"] is chosen["cuda.matmul.allow_tf32"] is tf32
    assert current() == before


def test_flags_are_put_back_when_the_run_raises():
    before = current()
    with pytest.raises(KeyboardInterrupt), cuda_backends("dcgan", True, torch.device("cuda")):
        raise KeyboardInterrupt
    assert current() == before


def test_a_cpu_run_changes_nothing():
    before = current()
    with cuda_backends("dcgan", True, torch.device("cpu")) as chosen:
        assert chosen == {} and current() == before


def test_tf32_is_a_flag_config_toml_records_and_resume_may_change(tmp_path, cache):
    """Resuming keeps the run's choice unless told, and may switch TF32 on (where the
    run goes on is not what it is)."""
    run = tmp_path / "run"
    ganstep("train", "--steps", 4, "--out", run, *TINY, cache=cache)
    assert tomllib.loads((run / "config.toml").read_text())["tf32"] is False
    ganstep("train", "--resume", "--steps", 6, "--tf32", "--out", run, "--no-progress",
            cache=cache)  # fmt: skip
    assert tomllib.loads((run / "config.toml").read_text())["tf32"] is True
    ganstep("train", "--resume", "--steps", 8, "--out", run, "--no-progress", cache=cache)
    assert tomllib.loads((run / "config.toml").read_text())["tf32"] is True
