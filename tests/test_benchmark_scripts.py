"""The benchmark scripts that no other test runs still run (a refactor once left
parameter_walks.py reading an attribute the Step no longer had). Smallest sizes, in
process: their figures are for RESULTS.md, not tests. The MNIST ones run where
../shared/data is, with metric networks of two training steps."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest
from helpers import SHARED_DATA, needs_shared_data

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
SHORT = ["steps=20", "eval_samples=200", "eval_every=20"]  # a run of the 2D grid, briefly
MNIST = ["--data-dir", str(SHARED_DATA), "--seeds", "1"]
TINY_MNIST = ["eval_samples=200", "feature_steps=2", "width=8", "batch_size=16"]


@pytest.mark.parametrize(
    "script, args, printed",
    [
        ("parameter_walks.py", ["--reps", "2", "--iterations", "2"], "listed / walked"),
        ("default_step.py", ["--reps", "1", "--warmup", "0"], "x no_r1"),
        ("default_recipe_step.py", ["--reps", "1", "--warmup", "0"], "(the default)"),
        ("iteration_cost.py", ["--batch-sizes", "8", "--reps", "1", "--warmup", "0"],
         "per 1,000 samples"),
        ("quality.py", ["grid", "--seeds", "1", "--set", *SHORT], "reverse_kl: mean"),
        ("quality_grid.py", ["--seeds", "1", "--set", *SHORT], "hq_fraction: mean"),
        ("profile_default_run.py", ["--steps", "4", "eval_samples=200"],
         "Self CPU time total"),
        ("autocast_ops.py", ["--batch", "2", "--width", "4"], "aten._to_copy.default +"),
        ("audit_times.py", ["--scripts", "dcgan_example", "--verify", "1", "--against", "HEAD"],
         "  same\n"),
        pytest.param("data_efficient.py", [*MNIST, "--steps", "2", "--only", "whole", "none",
                     "diffaugment", "--set", "ema=0", *TINY_MNIST],
                     "\ndiffaugment\n         fid: mean", marks=needs_shared_data),
        pytest.param("stacked_mnist.py", [*MNIST, "--set", "steps=2", *TINY_MNIST],
                     "reverse_kl: mean", marks=needs_shared_data),
    ],
)  # fmt: skip
def test_a_benchmark_script_runs(script, args, printed, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", [script, *args])
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    trainer = trainer_parts()
    runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    assert printed in capsys.readouterr().out
    assert trainer_parts() == trainer  # what a script times it puts back


def trainer_parts() -> list:
    from ganstep.trainer import train
    from ganstep.trainer.trainee import Trainee

    return [Trainee.__init__, Trainee.update_ema, train._report, train.RunState.save_checkpoint,
            train.plots.report]  # fmt: skip
