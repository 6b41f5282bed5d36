"""Checkpoints load without running code, and a damaged newest one falls back to an older."""

from __future__ import annotations

import json
import os
import random
import warnings
from pathlib import Path

import pytest
import torch
from helpers import TINY, assert_same_state, checkpoint, ganstep

from ganstep.engine.errors import GanstepWarning
from ganstep.trainer import checkpoint as ckpt


class RunsAShellCommand:
    """Unpickling this runs ``touch MARKER``: what a hostile checkpoint would carry."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def plant_hostile(path: Path, marker: Path) -> None:
    torch.save({"step": 99, "G": RunsAShellCommand(marker)}, path)


# no lr decay: a run resumed to 6 steps then follows the schedule of one trained to 6
COMMON = ["--ckpt-every", 2, "--eval-every", 2, "--lr-decay", "none", *TINY]


@pytest.fixture
def run(tmp_path, cache) -> Path:
    folder = tmp_path / "run"
    ganstep("train", "--steps", 4, "--out", folder, *COMMON, cache=cache)
    return folder


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """A run trained to 6 steps without a stop: what every resumed run must equal (one
    for the module, the runs being alike)."""
    folder = tmp_path_factory.mktemp("straight") / "run"
    ganstep("train", "--steps", 6, "--out", folder, *COMMON, cache=folder.parent / "cache")
    return folder


def test_hostile_checkpoint_is_refused_and_its_code_never_runs(run, tmp_path, cache):
    marker = tmp_path / "code-ran"
    for old in ckpt.list_checkpoints(run / "checkpoints"):
        old.unlink()
    plant_hostile(run / "checkpoints" / "step_00000004.pt", marker)
    sample = ganstep("sample", "--run", run, "--n", 5, "--out", tmp_path / "s.npy", cache=cache,
                     check=False)  # fmt: skip
    resume = ganstep("train", "--resume", "--steps", 6, "--out", run, cache=cache, check=False)
    for proc in (sample, resume):
        assert proc.returncode == 1
        assert "step_00000004.pt: refused: it holds objects that are not plain data" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not marker.exists()  # with weights_only=False, unpickling would have created it
    assert not (tmp_path / "s.npy").exists()


def test_hostile_newest_checkpoint_falls_back_to_the_older_one(run, tmp_path, cache):
    marker = tmp_path / "code-ran"
    plant_hostile(run / "checkpoints" / "step_00000006.pt", marker)
    proc = ganstep("sample", "--run", run, "--n", 5, "--out", tmp_path / "s.npy", cache=cache)
    assert "ganstep: warning:" in proc.stderr and "using the older step_00000004.pt" in proc.stderr
    assert not marker.exists()
    assert (tmp_path / "s.npy").exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[:300]),  # truncated by a full disk
        lambda p: p.write_bytes(b""),  # empty
        lambda p: p.write_bytes(os.urandom(2000)),  # overwritten
    ],
    ids=["truncated", "empty", "random"],
)
def test_damaged_newest_checkpoint_is_named_and_resume_continues_exactly(
    run, straight, tmp_path, cache, damage
):
    newest = run / "checkpoints" / "step_00000004.pt"
    damage(newest)
    proc = ganstep("train", "--resume", "--steps", 6, "--out", run, cache=cache)
    assert f"ganstep: warning: {newest}: damaged" in proc.stderr
    assert "using the older step_00000002.pt" in proc.stderr
    assert_same_state(checkpoint(run), checkpoint(straight))  # resumed from step 2, exactly


def test_no_readable_checkpoint_is_a_clear_error_naming_each(run, tmp_path, cache):
    for p in ckpt.list_checkpoints(run / "checkpoints"):
        p.write_bytes(b"not a checkpoint")
    proc = ganstep("sample", "--run", run, "--n", 5, "--out", tmp_path / "s.npy", cache=cache,
                   check=False)  # fmt: skip
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "no checkpoint can be read" in proc.stderr
    assert "step_00000002.pt: damaged" in proc.stderr
    assert "step_00000004.pt: damaged" in proc.stderr


def test_save_refuses_anything_but_plain_data(tmp_path):
    with pytest.raises(TypeError, match=r"state\['extra'\]\[0\] is a Generator"):
        ckpt.save(tmp_path, 1, {"step": 1, "extra": [torch.Generator()]}, keep=1)
    assert not list(tmp_path.iterdir())


def test_load_latest_warns_then_uses_the_older(tmp_path):
    ckpt.save(tmp_path, 1, {"step": 1, "w": torch.ones(2)}, keep=3)
    ckpt.save(tmp_path, 2, {"step": 2, "w": torch.zeros(2)}, keep=3)
    ckpt.path_for(tmp_path, 2).write_bytes(b"\x00" * 10)
    with pytest.warns(GanstepWarning, match="step_00000002.pt: damaged"):
        state = ckpt.load_latest(tmp_path)
    assert state["step"] == 1 and torch.equal(state["w"], torch.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ckpt.load_latest(tmp_path / "none") is None


def test_any_damaged_bytes_are_a_checkpoint_error(tmp_path):
    """Random bytes fail inside the unpickler in many ways (IndexError, KeyError,
    UnicodeDecodeError, ...): every one is "damaged", so resume falls back to an older
    checkpoint instead of dying with a traceback."""
    rng = random.Random(0)
    path = tmp_path / "step_00000001.pt"
    for _ in range(300):
        path.write_bytes(rng.randbytes(rng.choice([1, 20, 2000])))
        with pytest.raises(ckpt.CheckpointError, match="damaged|not a ganstep checkpoint"):
            ckpt.load(path)


def _rewrite(path: Path, change) -> None:
    """Load a checkpoint raw, change it, save it keeping its old checksum (as a bit flip
    would) or dropping it (``change`` returns False: a checkpoint that unpickles fine)."""
    state = torch.load(path, weights_only=True)
    if change(state) is False:
        state["checksum"] = ckpt.checksum({k: v for k, v in state.items() if k != "checksum"})
    torch.save(state, path)


def flip_a_bit(state):
    w = next(iter(state["G"].values()))
    w.view(-1)[0] = torch.nextafter(w.view(-1)[0], torch.tensor(1.0))


@pytest.mark.parametrize(
    "change, why",
    [
        (flip_a_bit, "its checksum does not match its contents"),
        (lambda s: [next(iter(s["ema"].values())).fill_(float("nan")), False][1],
         "ema.net.0.weight holds NaN or infinite values"),
        (lambda s: [s.pop("opt_g"), False][1], "its 'opt_g' should be a dict, got missing"),
        (lambda s: [s.update(step="200"), False][1], "its 'step' should be a int, got str"),
        (lambda s: [s.update(config="oops"), False][1], "its 'config' should be a dict, got str"),
        (lambda s: [s.update(elapsed_s=float("nan")), False][1],
         "its 'elapsed_s' should be a finite number of seconds >= 0, got nan"),
    ],
    ids=["bit-flip", "nan-ema", "no-opt_g", "step-str", "config-str", "elapsed-nan"],
)  # fmt: skip
def test_a_checkpoint_that_unpickles_but_cannot_be_trusted_falls_back(
    run, straight, tmp_path, cache, change, why
):
    newest = run / "checkpoints" / "step_00000004.pt"
    _rewrite(newest, change)
    with pytest.raises(ckpt.CheckpointError, match=why):
        ckpt.load(newest)
    proc = ganstep("sample", "--run", run, "--n", 5, "--out", tmp_path / "s.npy", cache=cache)
    assert (
        f"{newest}: damaged ({why}" in proc.stderr
        and "using the older step_00000002" in proc.stderr
    )
    proc = ganstep("train", "--resume", "--steps", 6, "--out", run, cache=cache)
    assert_same_state(checkpoint(run), checkpoint(straight))  # resumed from step 2, exactly


@pytest.mark.parametrize("before", [1000.0, None], ids=["kept", "older-checkpoint"])
def test_elapsed_s_counts_the_loop_time_before_a_resume(run, cache, before):
    """A resumed run's elapsed_s goes on from its checkpoint's, not from zero; a
    checkpoint written before elapsed_s was kept resumes, counting from zero."""
    newest = run / "checkpoints" / "step_00000004.pt"
    _rewrite(newest, lambda s: [s.pop("elapsed_s") if before is None
                                else s.update(elapsed_s=before), False][1])  # fmt: skip
    ganstep("train", "--resume", "--steps", 6, "--out", run, cache=cache)
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [2, 4, 6]
    at_6, saved = records[-1]["elapsed_s"], checkpoint(run)["elapsed_s"]
    # records round to 10 ms, and two steps of this tiny run can take under 5 ms (a
    # flake once): a record may say 0.0; the checkpoint keeps the unrounded seconds
    assert 0 <= records[0]["elapsed_s"] <= records[1]["elapsed_s"] < 1000
    if before is None:
        assert 0 <= at_6 < 1000 and 0 < saved < 1000
    else:  # the resumed process's own seconds on top of the 1000 before it
        assert 1000 < at_6 <= saved < 1000 + 300


def test_sample_refuses_a_checkpoint_copied_from_another_run(run, tmp_path, cache):
    other = tmp_path / "other"
    ganstep("train", "--steps", 2, "--seed", 5, "--out", other, *COMMON, cache=cache)
    for p in ckpt.list_checkpoints(run / "checkpoints"):
        p.unlink()
    (other / "checkpoints" / "step_00000002.pt").rename(run / "checkpoints" / "step_00000002.pt")
    proc = ganstep("sample", "--run", run, "--n", 5, "--out", tmp_path / "s.npy", cache=cache,
                   check=False)  # fmt: skip
    assert proc.returncode == 1 and "seed: 5 -> 0" in proc.stderr, proc.stderr
    assert "copied from another run" in proc.stderr and not (tmp_path / "s.npy").exists()


def test_a_metrics_line_that_cannot_be_written_names_the_file():
    """Before: ENOSPC on metrics.jsonl said "[Errno 28] No space left on device" and
    nothing more. /dev/full answers every write with ENOSPC."""
    from ganstep.trainer.checkpoint import append_text

    with pytest.raises(OSError, match="/dev/full: could not be written .*earlier lines are intact"):
        append_text(Path("/dev/full"), '{"step": 1}\n')


def test_a_checkpoint_whose_name_says_another_step_is_refused_not_trusted(tmp_path):
    """A copy named step_99999999.pt was the newest by name: resumed from, and kept while
    the real newer checkpoints were pruned. The step inside is the truth."""
    import shutil

    from ganstep.trainer import checkpoint

    for step in (1, 2):
        checkpoint.save(tmp_path, step, {"step": step}, keep=5)
    shutil.copy(tmp_path / "step_00000001.pt", tmp_path / "step_99999999.pt")
    with pytest.raises(checkpoint.MisnamedCheckpoint, match="holds step 1, not the step 99999999"):
        checkpoint.load_latest(tmp_path)
    (tmp_path / "step_99999999.pt").unlink()
    assert checkpoint.load_latest(tmp_path)["step"] == 2
