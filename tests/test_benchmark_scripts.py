"""The benchmark scripts that no other test runs still run (a refactor once left
parameter_walks.py reading an attribute the Step no longer had). Smallest sizes, in
process: their figures are for RESULTS.md, not tests."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


@pytest.mark.parametrize(
    "script, args, printed",
    [
        ("parameter_walks.py", ["--reps", "2", "--iterations", "2"], "listed / walked"),
        ("default_step.py", ["--reps", "1", "--warmup", "0"], "x no_r1"),
        ("default_recipe_step.py", ["--reps", "1", "--warmup", "0"], "(the default)"),
        ("iteration_cost.py", ["--batch-sizes", "8", "--reps", "1", "--warmup", "0"],
         "per 1,000 samples"),
    ],
)  # fmt: skip
def test_a_benchmark_script_runs(script, args, printed, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [script, *args])
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    assert printed in capsys.readouterr().out
