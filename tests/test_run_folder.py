"""A run folder belongs to one run: resume refuses to change what defines it, a fresh
start refuses a used folder, and every input is checked before step 1."""

from __future__ import annotations

import json
import os
import stat
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import TINY, ganstep

from ganstep.cli import main
from ganstep.trainer import checkpoint
from ganstep.trainer.config import RESUMABLE, Config

TINY_FLAGS = [str(a) for a in TINY]


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """ganstep's main() in this process (seconds faster than a subprocess per call)."""
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path / "cache"))

    def call(*args) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return call


@pytest.fixture
def run(cli, tmp_path) -> Path:
    folder = tmp_path / "run"
    code, _, err = cli("train", "--steps", 4, "--eval-every", 2, "--out", folder, *TINY_FLAGS)
    assert code == 0, err
    return folder


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "flags, change",
    [
        (["--data", "ring"], 'data: "grid" -> "ring"'),
        (["--objective", "hinge"], 'objective: "ns" -> "hinge"'),
        (["--objective", "began"], 'objective: "ns" -> "began"'),  # not r1's complaint
        (["--r1", "0"], "r1: 0.1 -> 0.0"),
        (["--schedule", "g_first"], 'schedule: "d_first" -> "g_first"'),
        (["--schedule", "simultaneous", "--fused"], "fused: false -> true"),
        (["--precision", "bf16"], 'precision: "fp32" -> "bf16"'),
        (["--z-dim", "5"], "z_dim: 2 -> 5"),
        (["--width", "32"], "width: 16 -> 32"),
        (["--seed", "1"], "seed: 0 -> 1"),
        (["--batch-size", "16"], "batch_size: 32 -> 16"),
        (["--lr-g", "0.1"], "lr_g: 0.004 -> 0.1"),
        (["--ema", "0.5"], "ema: 0.99 -> 0.5"),
        (["--beta2", "0.999"], "beta2: 0.9 -> 0.999"),
        (["--lr-decay", "none"], 'lr_decay: "linear" -> "none"'),
        (["--eval-samples", "100"], "eval_samples: 200 -> 100"),
        (["--conditional"], "conditional: false -> true"),
    ],
)
def test_resume_refuses_each_change_to_what_defines_the_run(cli, run, flags, change):
    before = files(run)
    code, _, err = cli("train", "--resume", "--steps", 6, "--out", run, *flags, "--no-progress")
    assert code == 1
    assert err.startswith(f"ganstep: error: --resume continues the run in {run}"), err
    assert change in err and err.count("\n") == 1
    assert files(run) == before  # nothing written, config.toml untouched


def test_resume_lists_every_differing_key_at_once(run, cache):
    proc = ganstep("train", "--resume", "--out", run, "--data", "ring", "--seed", "3",
                   "--schedule", "g_first", cache=cache, check=False)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    for change in ('data: "grid" -> "ring"', 'schedule: "d_first" -> "g_first"', "seed: 0 -> 3"):
        assert change in proc.stderr


def test_resume_through_the_api_checks_against_the_checkpoint(run):
    from ganstep.trainer.train import train

    # config.toml edited by hand is not the truth: the checkpoint's config is
    saved = tomllib.loads((run / "config.toml").read_text())
    cfg = Config.from_dict({**saved, "seed": 7, "steps": 6})
    with pytest.raises(ValueError, match="seed: 0 -> 7"):
        train(cfg, resume=True, progress=False)


def test_resume_may_change_the_resumable_keys_and_config_toml_records_it(cli, run):
    assert set(RESUMABLE) == {"steps", "eval_every", "sample_every", "ckpt_every", "keep",
                              "log_every", "device", "compile", "out", "data_dir",
                              "tensorboard", "tf32", "graph"}  # fmt: skip
    code, _, err = cli("train", "--resume", "--steps", 6, "--eval-every", 3, "--keep", 5,
                       "--out", run, "--no-progress")  # fmt: skip
    assert code == 0, err
    text = (run / "config.toml").read_text()
    assert text.startswith("# resumed at step 4: steps 4 -> 6, eval_every 2 -> 3, keep 3 -> 5\n")
    config = tomllib.loads(text)
    assert (config["steps"], config["eval_every"], config["keep"]) == (6, 3, 5)
    code, _, _ = cli("train", "--resume", "--steps", 6, "--out", run, "--no-progress")
    assert code == 0
    lines = (run / "config.toml").read_text().splitlines()
    assert lines[:2] == ["# resumed at step 4: steps 4 -> 6, eval_every 2 -> 3, keep 3 -> 5",
                         "# resumed at step 6"]  # fmt: skip


def test_steps_below_the_completed_step_is_an_error(cli, run):
    before = files(run)
    code, _, err = cli("train", "--resume", "--steps", 3, "--out", run, "--no-progress")
    assert code == 1
    assert "steps 3 is below the 4 steps the run" in err and "--steps 4 or more" in err
    assert files(run) == before


def test_resume_refuses_data_whose_contents_changed(cli, tmp_path):
    data = tmp_path / "points.npy"
    np.save(data, np.random.default_rng(0).normal(size=(100, 2)))
    run = tmp_path / "run"
    code, _, err = cli("train", "--data", data, "--steps", 2, "--out", run, *TINY_FLAGS)
    assert code == 0, err
    np.save(data, np.random.default_rng(1).normal(size=(100, 2)))
    code, _, err = cli("train", "--resume", "--steps", 4, "--out", run, "--no-progress")
    assert code == 1 and "is not what the run in" in err and "checksum was" in err


def test_a_run_that_stopped_before_its_first_checkpoint_starts_afresh(cli, run):
    """Before: the same command said "not empty" and --resume "no checkpoint": a folder
    only deleting by hand could free. Now it is recognised as ganstep's own (its
    config.toml, nothing foreign) and started afresh, saying so."""
    for resume in ([], ["--resume"]):
        for p in (run / "checkpoints").iterdir():
            p.unlink()  # as a run killed before its first checkpoint leaves it:
        (run / "report.png").unlink()  # no report, records up to that checkpoint's step
        (run / "checkpoints" / ".tmp-ganstep-abcd1234.pt").write_bytes(b"half")
        code, _, err = cli("train", *resume, "--steps", 2, "--out", run, *TINY_FLAGS)
        assert code == 0, err
        assert "stopped before its first checkpoint" in err and "starts afresh" in err
        assert [r["step"] for r in map(json.loads, (run / "metrics.jsonl").open())] == [2]
        assert [p.name for p in (run / "checkpoints").iterdir()] == ["step_00000002.pt"]


@pytest.mark.parametrize("resume", [False, True])
def test_a_finished_run_whose_checkpoints_were_moved_is_refused_untouched(cli, tmp_path, resume):
    """Issue 53's data loss: a finished run whose checkpoints the user moved away was
    taken for one that stopped before its first checkpoint, and a new run in its folder
    deleted its metrics, samples and report with a warning. It is refused, naming what
    is there, and nothing changes."""
    run = tmp_path / "run"
    code, _, err = cli("train", "--steps", 6, "--ckpt-every", 2, "--eval-every", 2,
                       "--sample-every", 2, "--out", run, *TINY_FLAGS)  # fmt: skip
    assert code == 0, err
    for p in (run / "checkpoints").iterdir():
        p.rename(tmp_path / p.name)
    before = files(run)
    args = ["--resume", "--steps", 8] if resume else ["--seed", 1, "--steps", 2]
    code, _, err = cli("train", *args, "--out", run, *TINY_FLAGS)
    assert code == 1 and "stopped before its first checkpoint" not in err
    if resume:
        assert (
            "went past its first one (report.png, metrics.jsonl up to step 6, samples "
            "up to step 6): put its checkpoints back" in err
        )
    else:
        assert "is not empty (config.toml, metrics.jsonl, report.png, samples/" in err
    assert files(run) == before


def test_a_run_killed_after_its_first_checkpoint_then_moved_is_not_cleared(cli, tmp_path):
    """No report yet, but metrics past the first checkpoint's step: that run had
    checkpoints, so its folder is not an attempt to clear either."""
    run = tmp_path / "run"
    code, _, err = cli("train", "--steps", 6, "--ckpt-every", 2, "--eval-every", 2, "--out", run,
                       *TINY_FLAGS)  # fmt: skip
    assert code == 0, err
    (run / "report.png").unlink()
    for p in (run / "checkpoints").iterdir():
        p.unlink()
    before = files(run)
    code, _, err = cli("train", "--steps", 2, "--out", run, *TINY_FLAGS)
    assert code == 1 and "is not empty" in err and files(run) == before


def test_a_checkpointless_run_with_a_damaged_metrics_file_is_not_cleared(cli, run):
    """A metrics.jsonl whose middle line is damaged cannot say where the run got to, so
    the folder is not taken for an attempt to clear: refused, nothing changed."""
    for p in (run / "checkpoints").iterdir():
        p.unlink()
    (run / "report.png").unlink()
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("{not json\n" + "".join(lines))
    before = files(run)
    code, _, err = cli("train", "--resume", "--steps", 6, "--out", run, *TINY_FLAGS)
    assert code == 1 and "a metrics.jsonl it cannot read" in err
    assert files(run) == before


def test_a_stopped_run_beside_a_file_of_the_users_is_refused_untouched(cli, run):
    for p in (run / "checkpoints").iterdir():
        p.unlink()
    (run / "notes.txt").write_text("mine")
    before = files(run)
    code, _, err = cli("train", "--steps", 2, "--out", run, *TINY_FLAGS)
    assert code == 1 and "is not empty (config.toml, metrics.jsonl, notes.txt" in err
    assert files(run) == before


@pytest.mark.parametrize(
    "line, message",
    [
        ("lr_g = true", "lr_g must be a number, got true (bool)"),
        ('lr_g = "fast"', 'lr_g must be a number, got "fast" (str)'),
        ('ema = "0.5"', 'ema must be a number, got "0.5" (str)'),
        ("device = 3", "device must be a string, got 3 (int)"),
        ("seed = 1.5", "seed must be an integer, got 1.5 (float)"),
        ("steps = 2.0", "steps must be an integer, got 2.0 (float)"),
        ("fused = 1", "fused must be true or false, got 1 (int)"),
        ("steps = [2]", "steps must be an integer, got [2] (list)"),
        ("stepz = 2", "unknown config keys ['stepz']"),
        ("steps = ", "cannot read TOML config"),
    ],
)
def test_toml_values_are_type_checked_and_the_file_and_key_named(cli, tmp_path, line, message):
    config = tmp_path / "bad.toml"
    config.write_text(line + "\n")
    code, _, err = cli("train", "--config", config, "--out", tmp_path / "x", "--no-progress")
    assert code == 1 and err == f"ganstep: error: {config}: {message}" + err.split(message)[1]
    assert err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_a_bad_config_toml_of_a_run_is_named_by_sample(cli, run, tmp_path):
    (run / "config.toml").write_text('lr_g = "fast"\n')
    code, _, err = cli("sample", "--run", run, "--n", 4, "--out", tmp_path / "s.npy")
    assert code == 1 and f"{run / 'config.toml'}: lr_g must be a number" in err


@pytest.mark.parametrize(
    "out, message",
    [
        ("", "out must name the run folder, got an empty string"),
        ("afile", "--out {tmp}/afile is a file, not a folder"),
        ("afile/run", "run folder {tmp}/afile/run is not writable"),
        ("withfile", "{tmp}/withfile/checkpoints is a file; a run writes a folder there"),
    ],
)
def test_output_folder_is_checked_before_training(cli, tmp_path, out, message):
    (tmp_path / "afile").write_text("mine")
    (tmp_path / "withfile").mkdir()
    (tmp_path / "withfile" / "checkpoints").write_text("mine")
    target = str(tmp_path / out) if out else ""
    code, _, err = cli("train", "--out", target, *TINY_FLAGS)
    assert code == 1 and message.format(tmp=tmp_path) in err, err
    assert (tmp_path / "afile").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["afile", "withfile"]
    assert [p.name for p in (tmp_path / "withfile").iterdir()] == ["checkpoints"]


def test_a_refused_run_leaves_no_folder_behind(cli, tmp_path):
    code, _, err = cli("train", "--model", "dcgan", "--out", tmp_path / "x", *TINY_FLAGS)
    assert code == 1 and "needs images" in err
    assert not (tmp_path / "x").exists()


def test_batch_larger_than_the_dataset_is_warned_about(cli, tmp_path):
    data = tmp_path / "points.npy"
    np.save(data, np.random.default_rng(0).normal(size=(30, 2)))
    flags = ["--steps", 2, "--batch-size", 64, "--eval-samples", 50, "--no-progress"]
    code, _, err = cli("train", "--data", data, "--out", tmp_path / "run", *flags)
    assert code == 0
    assert "ganstep: warning: batch_size 64 is larger than the 27 training samples" in err


def test_sample_refuses_a_folder_as_out(cli, run, tmp_path):
    (tmp_path / "pics.png").mkdir()
    code, _, err = cli("sample", "--run", run, "--n", 4, "--out", tmp_path / "pics.png")
    assert code == 1 and "is a folder; name a .npy or .png file" in err


# -- a user's files are never touched; every rewrite is atomic ---------------------------


def test_fresh_start_refuses_a_folder_holding_the_users_files(tmp_path):
    out = tmp_path / "mine"
    (out / "samples").mkdir(parents=True)
    mine = {"config.toml": b"my = 'notes'\n", "report.png": b"\x89PNG mine",
            "samples/step_00000100.png": b"\x89PNG my sample"}  # fmt: skip
    for name, data in mine.items():
        (out / name).write_bytes(data)
    proc = ganstep("train", "--steps", 2, "--out", out, *TINY, cache=tmp_path / "cache",
                   check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "config.toml, report.png, samples/step_00000100.png" in proc.stderr
    assert {n: (out / n).read_bytes() for n in mine} == mine
    assert sorted(p.name for p in out.iterdir()) == ["config.toml", "report.png", "samples"]


def test_resume_drops_a_metrics_line_cut_short_by_a_crash(cli, run):
    metrics = run / "metrics.jsonl"
    whole = metrics.read_text()
    metrics.write_text(whole + '{"step": 6, "loss_d": 0.7')  # a write killed mid-line
    code, _, err = cli("train", "--resume", "--steps", 6, "--eval-every", 2, "--out", run)
    assert code == 0, err
    assert "ganstep: warning: " in err and "its last line is cut short" in err
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]
    assert steps == [2, 4, 6]


def test_a_damaged_metrics_line_before_the_last_is_named(cli, run):
    metrics = run / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join(["{oops", *lines[1:]]) + "\n")
    code, _, err = cli("train", "--resume", "--steps", 6, "--out", run)
    assert code == 1 and "metrics.jsonl, line 1: damaged" in err


@pytest.mark.parametrize("damage", ["", "steps = \n", None])
def test_resume_takes_the_config_from_the_checkpoint_when_config_toml_is_lost(cli, run, damage):
    config = run / "config.toml"
    if damage is None:
        config.unlink()
    else:
        config.write_text(damage)
    code, _, err = cli("train", "--resume", "--steps", 6, "--out", run)
    assert code == 0, err
    assert "the run's config comes from its newest checkpoint" in err
    assert tomllib.loads(config.read_text())["steps"] == 6  # written whole again


def test_an_interrupted_rewrite_leaves_the_old_file(tmp_path):
    from ganstep.trainer.checkpoint import atomic_write, atomic_write_text

    path = tmp_path / "config.toml"
    atomic_write_text(path, "steps = 4\n")

    def dies(f):
        f.write(b"steps = ")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, dies)
    assert path.read_text() == "steps = 4\n"
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_a_symlink_inside_a_run_folder_is_refused_before_anything_is_written(cli, tmp_path):
    """Before: the emptiness check did not follow a symlinked samples/ and a user's
    step_00000002.png behind it was overwritten."""
    mine = tmp_path / "my_pictures"
    mine.mkdir()
    (mine / "step_00000002.png").write_bytes(b"my picture")
    out = tmp_path / "run"
    out.mkdir()
    (out / "samples").symlink_to(mine, target_is_directory=True)
    code, _, err = cli("train", "--steps", 2, "--out", out, *TINY_FLAGS)
    assert code == 1 and "samples is a symbolic link" in err
    assert (mine / "step_00000002.png").read_bytes() == b"my picture"
    assert sorted(p.name for p in out.iterdir()) == ["samples"]


def test_a_users_temporary_looking_file_is_neither_exempt_nor_deleted(cli, run, tmp_path):
    """Before: any .tmp-* name was skipped by the emptiness check, then deleted by the
    cleanup of partial writes. Now only the temporary files of the run whose writer tag
    the lock file recorded are cleaned up."""
    fresh = tmp_path / "fresh"
    (fresh / "checkpoints").mkdir(parents=True)
    (fresh / "checkpoints" / ".tmp-thesis.tex").write_text("chapter 1")
    code, _, err = cli("train", "--steps", 2, "--out", fresh, *TINY_FLAGS)
    assert code == 1 and "checkpoints/.tmp-thesis.tex" in err
    assert (fresh / "checkpoints" / ".tmp-thesis.tex").read_text() == "chapter 1"
    (run / "checkpoints" / ".tmp-thesis.tex").write_text("chapter 2")
    # a run killed mid-rewrite: its lock still names it and the tag of its writes
    holder = {"pid": 1, "host": "gone", "since": "then", "writes": "0123abcd"}
    (run / "run.lock").write_text(json.dumps(holder))
    (run / ".tmp-ganstep-0123abcd-zz99aa11.jsonl").write_text("half a rewrite")
    (run / ".tmp-ganstep-zz99aa11.jsonl").write_text("a name like ganstep's, not its record")
    code, _, err = cli("train", "--resume", "--steps", 6, "--out", run, "--no-progress")
    assert code == 0, err
    assert (run / "checkpoints" / ".tmp-thesis.tex").read_text() == "chapter 2"
    assert not (run / ".tmp-ganstep-0123abcd-zz99aa11.jsonl").exists()
    assert (run / ".tmp-ganstep-zz99aa11.jsonl").exists()  # not recorded: not removed


@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_run_lock_that_is_not_gansteps_is_refused_untouched(cli, tmp_path, kind):
    """Before: a user's run.lock beside another file was truncated and rewritten before
    the run was refused, and a run.lock symlink truncated the file it points to."""
    out, target = tmp_path / "run", tmp_path / "precious.txt"
    out.mkdir()
    target.write_text("keep me")
    if kind == "file":
        (out / "run.lock").write_text("my lock notes")
        (out / "other.txt").write_text("x")
    else:
        (out / "run.lock").symlink_to(target)
    code, _, err = cli("train", "--steps", 2, "--out", out, *TINY_FLAGS)
    assert code == 1, err
    assert target.read_text() == "keep me"
    if kind == "file":
        assert (out / "run.lock").read_text() == "my lock notes" and "run.lock" in err
    else:
        assert "run.lock is a symbolic link" in err


def test_files_follow_the_umask(cli, tmp_path):
    """Before: atomic rewrites kept mkstemp's 0600 through the rename."""
    old = os.umask(0o022)
    try:
        code, _, err = cli("train", "--steps", 2, "--out", tmp_path / "run", *TINY_FLAGS)
    finally:
        os.umask(old)
    assert code == 0, err
    for name in ("config.toml", "metrics.jsonl", "checkpoints/step_00000002.pt"):
        assert stat.S_IMODE((tmp_path / "run" / name).stat().st_mode) == 0o644, name


def test_checkpoint_names_sort_and_match_past_eight_digits(tmp_path):
    """Before: step_100000000.pt missed the 8-digit pattern and resume silently took an
    older checkpoint."""
    for step in (99_999_999, 100_000_000, 5):
        checkpoint.path_for(tmp_path, step).write_bytes(b"")
    found = [p.name for p in checkpoint.list_checkpoints(tmp_path)]
    assert found == ["step_00000005.pt", "step_99999999.pt", "step_100000000.pt"]


def test_a_resume_that_moves_the_linear_decay_says_so():
    """Before: --steps 2000 on a run set for 1000 made lr jump from 0 to half, with only
    a comment line in config.toml."""
    from ganstep.trainer.train import _warn_lr_jump

    cfg = Config(steps=2000, lr_decay="linear")
    state = {"config": {"steps": 1000}, "step": 1000}
    with pytest.warns(UserWarning, match="at step 1000 they jump from 0 to 0.5"):
        _warn_lr_jump(cfg, state)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_lr_jump(Config(steps=2000, lr_decay="none"), state)  # nothing moves
        _warn_lr_jump(Config(steps=1000, lr_decay="linear"), state)
