"""`ganstep train --real-label X --fake-label Y`: D's targets (one- and two-sided label
smoothing) in a run, as a user gives them: subprocess, real files, config.toml."""

from __future__ import annotations

import tomllib

import pytest
import torch
from helpers import TINY, ganstep

from ganstep.engine.objectives import LSGAN, NS
from ganstep.trainer.config import Config
from ganstep.trainer.data import load_dataset
from ganstep.trainer.trainee import Trainee


def test_a_run_with_two_sided_label_smoothing_records_and_resumes_it(tmp_path, cache):
    """The labels reach config.toml, the run trains, and --resume goes on with them."""
    run = tmp_path / "run"
    ganstep("train", "--steps", 2, "--real-label", 0.9, "--fake-label", 0.1, "--out", run,
            *TINY, cache=cache)  # fmt: skip
    config = tomllib.loads((run / "config.toml").read_text())
    assert config["real_label"] == 0.9 and config["fake_label"] == 0.1
    ganstep("train", "--resume", "--steps", 4, "--out", run, cache=cache)
    again = tomllib.loads((run / "config.toml").read_text())
    assert again["real_label"] == 0.9 and again["fake_label"] == 0.1 and again["steps"] == 4


@pytest.mark.parametrize(("objective", "kind"), [("ns", NS), ("minimax", NS), ("lsgan", LSGAN)])
def test_the_runs_step_takes_the_labels(objective, kind):
    """The Step the trainer builds reads D's targets from the config, G's left at 1."""
    data = load_dataset("grid")
    cfg = Config(objective=objective, real_label=0.9, fake_label=0.2).resolved(data)
    made = Trainee(cfg, data, torch.device("cpu")).step.game.options.objective
    assert isinstance(made, kind) and made.name == objective
    assert (made.real_label, made.fake_label, made.g_label) == (0.9, 0.2, 1.0)
    plain = Trainee(Config(objective=objective).resolved(data), data, torch.device("cpu"))
    assert plain.step.game.options.objective.name == objective


@pytest.mark.parametrize(("flags", "said"), [
    (["--objective", "hinge", "--real-label", "0.9"],
     "real_label and fake_label are D's targets in the losses of ns, minimax, bgan, lsgan, "
     "not of 'hinge': drop them"),
    (["--real-label", "1.5"],
     "real_label (D's target for real samples) must be a number in (0, 1], got 1.5"),
    (["--fake-label", "1"],
     "fake_label (D's target for fake samples) must be a number in [0, 1), got 1.0"),
    (["--objective", "lsgan", "--real-label", "0.5", "--fake-label", "0.5"],
     "real_label and fake_label are D's targets for real and fake samples: equal (0.5), D "
     "has nothing to tell apart"),
], ids=["hinge", "ns-real", "ns-fake", "lsgan-equal"])  # fmt: skip
def test_labels_a_run_cannot_take_are_refused_in_one_line(tmp_path, cache, flags, said):
    proc = ganstep("train", "--steps", 2, "--out", tmp_path / "run", *flags, *TINY,
                   cache=cache, check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [f"ganstep: error: {said}"], proc.stderr
    assert not (tmp_path / "run").exists()
