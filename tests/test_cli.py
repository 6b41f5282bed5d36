"""`ganstep train` and `ganstep sample` run as a user runs them: subprocess, real files."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import tomllib

import numpy as np
import pytest
import torch
from helpers import (
    SHARED_DATA,
    TINY,
    assert_same_state,
    checkpoint,
    environment,
    ganstep,
    needs_shared_data,
    records,
)
from PIL import Image


def test_train_grid_writes_every_file(tmp_path, cache):
    """Run cold: a new interpreter, `python -m ganstep`, as the README's command starts
    (the other commands here are forked warm: tests/helpers/launcher.py)."""
    run = tmp_path / "run"
    proc = ganstep("train", "--steps", 20, "--eval-every", 10, "--sample-every", 10,
                   "--ckpt-every", 5, "--keep", 2, "--out", run, *TINY, cache=cache,
                   cold=True)  # fmt: skip
    assert "modes=" in proc.stdout
    config = tomllib.loads((run / "config.toml").read_text())
    assert config["data"] == "grid" and config["steps"] == 20 and config["schedule"] == "d_first"
    points = (config["z_dim"], config["r1"], config["lr_decay"], config["beta2"], config["ema"])
    assert points == (2, 0.1, "linear", 0.9, 0.99)  # the points defaults, resolved and written
    rows = records(run)
    assert [r["step"] for r in rows] == [10, 20]
    for r in rows:
        assert {"loss_d", "loss_g", "modes", "hq_fraction", "reverse_kl"} <= set(r)
        assert 0 <= r["modes"] <= 25 and 0 <= r["hq_fraction"] <= 1
    assert sorted(p.name for p in (run / "samples").iterdir()) == [
        "step_00000010.png", "step_00000020.png"]  # fmt: skip
    with Image.open(run / "samples" / "step_00000020.png") as im:
        assert im.size == (500, 500)
    with Image.open(run / "report.png") as im:
        assert im.size[0] > 300 and im.size[1] > 200
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "step_00000015.pt", "step_00000020.pt"]  # fmt: skip


def test_digits_dcgan_reports_fid_kid_and_floor(tmp_path, cache):
    run = tmp_path / "digits"
    ganstep("train", "--data", "digits", "--model", "dcgan", "--steps", 4, "--eval-every", 4,
            "--width", "8", "--batch-size", "16", "--eval-samples", "100", "--feature-steps", 3,
            "--no-progress", "--out", run, cache=cache)  # fmt: skip
    (row,) = records(run)
    config = tomllib.loads((run / "config.toml").read_text())
    assert (config["z_dim"], config["lr_g"], config["r1"], config["lr_decay"]) == (
        64,
        2e-4,
        0.0,
        "none",
    )
    assert {"fid", "kid", "fid_floor", "kid_floor"} <= set(row)
    assert row["fid"] > row["fid_floor"] >= 0
    assert len(list((cache / "features").glob("*.pt"))) == 1  # trained once, cached
    with Image.open(run / "samples" / "step_00000004.png") as im:
        assert im.size == (82, 82) and im.mode == "L"  # 8 x 8 digits of 8x8 pixels, 2px gaps
    out = tmp_path / "digits.npy"
    ganstep("sample", "--run", run, "--n", 10, "--out", out, cache=cache)
    x = np.load(out)
    assert x.shape == (10, 1, 8, 8) and 0 <= x.min() and x.max() <= 16  # digits' own values


def test_config_file_values_are_overridden_by_flags(tmp_path, cache):
    config = tmp_path / "run.toml"
    config.write_text('objective = "hinge"\nschedule = "simultaneous"\nsteps = 50\nlr_g = 1\n')
    run = tmp_path / "run"
    ganstep("train", "--config", config, "--steps", 6, "--eval-every", 3, "--out", run, *TINY,
            cache=cache)  # fmt: skip
    saved = tomllib.loads((run / "config.toml").read_text())
    assert (saved["objective"], saved["schedule"], saved["steps"]) == ("hinge", "simultaneous", 6)
    assert saved["lr_g"] == 1.0


def test_resume_equals_uninterrupted(tmp_path, cache):
    common = ["--ckpt-every", 4, "--eval-every", 6, "--schedule", "simultaneous", "--objective",
              "wgan_gp", "--lr-decay", "none", *TINY]  # fmt: skip
    ganstep("train", "--steps", 12, "--out", tmp_path / "a", *common, cache=cache)
    ganstep("train", "--steps", 6, "--out", tmp_path / "b", *common, cache=cache)
    ganstep("train", "--resume", "--steps", 12, "--out", tmp_path / "b", cache=cache)
    assert_same_state(checkpoint(tmp_path / "a"), checkpoint(tmp_path / "b"))
    assert [r["step"] for r in records(tmp_path / "b")] == [6, 12]
    assert records(tmp_path / "a")[-1]["loss_d"] == records(tmp_path / "b")[-1]["loss_d"]


def test_sigkill_then_resume_from_last_complete_checkpoint(tmp_path, cache):
    run = tmp_path / "killed"
    env = environment(cache)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ganstep", "train", "--steps", "1000000", "--ckpt-every", "7",
         "--eval-every", "1000000", "--sample-every", "1000000", "--lr-decay", "none",
         "--out", str(run), *TINY],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    ckpts = run / "checkpoints"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(ckpts.glob("step_*.pt"))) < 2:
        time.sleep(0.05)
    # While it runs, the folder is its own: neither a second run nor a resume may write there.
    for args in (["--steps", 10], ["--resume"]):
        second = ganstep("train", *args, "--out", run, *TINY, cache=cache, check=False)
        assert second.returncode == 1
        assert f"{run} is in use by pid {proc.pid} on host" in second.stderr, second.stderr
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    tag = json.loads((run / "run.lock").read_text())["writes"]  # the killed run's record
    (ckpts / f".tmp-ganstep-{tag}-half1234.pt").write_bytes(b"\x80\x02garbage")  # mid-write
    last = int(sorted(ckpts.glob("step_*.pt"))[-1].stem.split("_")[1])
    target = last + 5
    resumed = ganstep("train", "--resume", "--steps", target, "--out", run, cache=cache)
    assert f"took over the lock left by pid {proc.pid} on host" in resumed.stderr
    assert not list(ckpts.glob(".tmp-ganstep-*"))  # the killed write's leftover is gone
    straight = tmp_path / "straight"
    ganstep("train", "--steps", target, "--ckpt-every", 7, "--eval-every", 1000000,
            "--sample-every", 1000000, "--lr-decay", "none", "--out", straight, *TINY,
            cache=cache)  # fmt: skip
    assert_same_state(checkpoint(run), checkpoint(straight))


@pytest.mark.parametrize(
    ("sig", "said", "status"),
    [(signal.SIGINT, "interrupted at step", 130), (signal.SIGTERM, "stopped by SIGTERM at step",
     143), (signal.SIGHUP, "stopped by SIGHUP at step", 129)],
    ids=["ctrl-c", "sigterm", "sighup"],
)  # fmt: skip
def test_a_stop_signal_saves_a_checkpoint_and_exits_cleanly(tmp_path, cache, sig, said, status):
    """Ctrl-C, a scheduler's SIGTERM and a closed terminal's SIGHUP: each a checkpoint of
    the current step, one line, and the signal's exit status (before, SIGTERM and
    SIGHUP lost up to --ckpt-every steps without a word)."""
    run = tmp_path / "interrupted"
    env = environment(cache)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ganstep", "train", "--steps", "1000000", "--ckpt-every", "1000000",
         "--eval-every", "1000000", "--out", str(run), *TINY],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (run / "config.toml").exists():
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()  # a run of a million steps that ignored the signal is not left behind
    assert proc.returncode == status, err
    assert said in err and "--resume" in err
    (saved,) = list((run / "checkpoints").glob("step_*.pt"))
    assert torch.load(saved, weights_only=True)["step"] == int(saved.stem.split("_")[1]) > 0


def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, cache):
    run = tmp_path / "nan"
    # Adam at lr 1e4 on the default grid diverges after a few finite steps (step 7 here)
    proc = ganstep("train", "--steps", 50, "--ckpt-every", 1, "--keep", 100, "--lr-d", 1e4,
                   "--lr-g", 1e4, "--out", run, *TINY, cache=cache, check=False)  # fmt: skip
    assert proc.returncode == 1
    found = re.search(r"NaN or infinite at step (\d+)", proc.stderr)
    assert found, proc.stderr
    bad = int(found.group(1))
    assert bad > 2
    steps = sorted(int(p.stem.split("_")[1]) for p in (run / "checkpoints").glob("step_*.pt"))
    assert steps == list(range(1, bad))
    assert torch.isfinite(checkpoint(run)["G"]["net.0.weight"]).all()


def test_sample_writes_raw_values_and_pictures(tmp_path, cache):
    run = tmp_path / "run"
    ganstep("train", "--steps", 5, "--ema", 0, "--out", run, *TINY, cache=cache)
    ganstep("sample", "--run", run, "--n", 300, "--out", tmp_path / "s.npy", cache=cache)
    assert np.load(tmp_path / "s.npy").shape == (300, 2)
    ganstep("sample", "--run", run, "--n", 300, "--out", tmp_path / "s.png", cache=cache)
    with Image.open(tmp_path / "s.png") as im:
        assert im.size == (500, 500)


def test_npy_points_train_and_sample_in_their_own_units(tmp_path, cache):
    rng = np.random.default_rng(0)
    points = rng.normal(size=(400, 3)) * [100.0, 1.0, 0.01] + [50.0, -3.0, 7.0]
    np.save(tmp_path / "points.npy", points)
    run = tmp_path / "run"
    ganstep("train", "--data", tmp_path / "points.npy", "--steps", 5, "--eval-every", 5,
            "--out", run, *TINY, cache=cache)  # fmt: skip
    assert {"fid", "fid_floor"} <= set(records(run)[0])
    assert tomllib.loads((run / "config.toml").read_text())["z_dim"] == 3
    ganstep("sample", "--run", run, "--n", 2000, "--out", tmp_path / "s.npy", cache=cache)
    samples = np.load(tmp_path / "s.npy")
    assert samples.shape == (2000, 3)
    # standardised for training, mapped back: each dimension is on the data's own scale
    assert np.all(np.abs(samples.mean(0) - points.mean(0)) < 3 * points.std(0))
    assert np.all(samples.std(0) < 10 * points.std(0))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "gpt"], "unknown model 'gpt'; choose one of: mlp, dcgan, began"),
        (["--objective", "wgan_cp"], "unknown objective 'wgan_cp'; choose one of: minimax"),
        (["--schedule", "mode2"], "unknown schedule 'mode2'; choose one of: d_first"),
        (["--data", "cifar"], "unknown data 'cifar'; choose one of: grid, ring, digits"),
        (["--model", "dcgan"], "model 'dcgan' needs images"),
        (["--steps", "0"], "steps must be a positive integer"),
        (["--lr-decay", "cosine"], "unknown lr_decay 'cosine'; choose one of: none, linear"),
        (["--beta2", "1"], "beta2 must be in [0, 1), got 1.0"),
        (["--ema", "-0.5"], "ema must be in [0, 1), got -0.5"),
        (["--objective", "wgan_gp", "--r1", "1"], "r1 applies to the objectives ns, minimax"),
        (["--fused"], "fused applies to the simultaneous schedule, not 'd_first'"),
        (["--schedule", "simultaneous", "--fused", "--objective", "began"],
         "fused=True) cannot use objective 'began'"),
        (["--precision", "fp8"], "unknown precision 'fp8'; choose one of: fp32, bf16, fp16"),
        (["--compile", "turbo"], "unknown compile 'turbo'; choose one of: none, default"),
        (["--device", "cuda:7"] if not torch.cuda.is_available() else ["--lr-g", "-1"],
         "CUDA is not available" if not torch.cuda.is_available() else "lr_g must be positive"),
    ],
)  # fmt: skip
def test_bad_options_are_named(tmp_path, cache, args, message):
    proc = ganstep("train", *args, "--out", tmp_path / "x", *TINY, cache=cache, check=False)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "x" / "checkpoints").exists()


def test_adam_and_ema_defaults_follow_the_data_and_yield_to_the_user():
    """The 2D recipe's beta2 0.9 and EMA 0.99 are the points defaults only: images keep
    DCGAN's 0.999, and a value the user gives wins over either."""
    from ganstep.trainer.config import Config
    from ganstep.trainer.data import load_dataset

    def adam_and_ema(data: str, **given) -> tuple:
        cfg = Config(data=data, **given).resolved(load_dataset(data))
        return cfg.beta1, cfg.beta2, cfg.ema

    assert adam_and_ema("grid") == (0.5, 0.9, 0.99)
    assert adam_and_ema("digits") == (0.5, 0.999, 0.999)
    assert adam_and_ema("grid", beta2=0.999, ema=0.999) == (0.5, 0.999, 0.999)
    assert adam_and_ema("digits", beta1=0.0, beta2=0.9, ema=0.0) == (0.0, 0.9, 0.0)


def test_default_run_folder_is_named_and_resumable_without_out(tmp_path, cache):
    ganstep("train", "--steps", 3, "--objective", "hinge", *TINY, cache=cache, cwd=tmp_path)
    run = tmp_path / "runs" / "grid-mlp-hinge-d_first-s0"
    assert (run / "checkpoints" / "step_00000003.pt").exists()
    ganstep("train", "--resume", "--steps", 5, "--objective", "hinge", *TINY, cache=cache,
            cwd=tmp_path)  # fmt: skip
    assert (run / "checkpoints" / "step_00000005.pt").exists()
    proc = ganstep("train", "--resume", *TINY, cache=cache, cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "grid-mlp-ns-d_first-s0/config.toml not found" in proc.stderr


def test_existing_run_is_not_overwritten(tmp_path, cache):
    run = tmp_path / "run"
    ganstep("train", "--steps", 2, "--out", run, *TINY, cache=cache)
    before = (run / "metrics.jsonl").read_text()
    proc = ganstep("train", "--steps", 2, "--out", run, *TINY, cache=cache, check=False)
    assert proc.returncode == 1 and "--resume" in proc.stderr
    assert (run / "metrics.jsonl").read_text() == before


def test_mixed_image_sizes_are_refused(tmp_path, cache):
    folder = tmp_path / "imgs"
    folder.mkdir()
    for i, size in enumerate([(32, 32), (32, 32), (28, 28)]):
        Image.new("RGB", size, (i * 40, 0, 0)).save(folder / f"{i}.png")
    proc = ganstep("train", "--data", folder, "--model", "dcgan", "--out", tmp_path / "x", *TINY,
                   cache=cache, check=False)  # fmt: skip
    assert proc.returncode == 1
    assert "images of mixed sizes (0.png is 32x32, 2.png is 28x28)" in proc.stderr


@needs_shared_data
def test_mnist_from_data_dir_trains(tmp_path, cache):
    run = tmp_path / "mnist"
    ganstep("train", "--data", "mnist", "--data-dir", SHARED_DATA, "--model", "dcgan",
            "--steps", 2, "--eval-every", 2, "--width", 8, "--batch-size", 8,
            "--eval-samples", 50, "--feature-steps", 2, "--no-progress", "--out", run,
            cache=cache, timeout=300)  # fmt: skip
    assert {"fid", "fid_floor"} <= set(records(run)[0])
    with Image.open(run / "samples" / "step_00000002.png") as im:
        assert im.size == (8 * 30 + 2, 8 * 30 + 2)  # 28x28 images: the padding is cropped back


def test_conditional_digits_reports_class_accuracy_and_samples_each_class(tmp_path, cache):
    run = tmp_path / "cond"
    ganstep("train", "--data", "digits", "--model", "dcgan", "--conditional", "--steps", 4,
            "--eval-every", 4, "--width", 8, "--batch-size", 16, "--eval-samples", 100,
            "--feature-steps", 3, "--no-progress", "--out", run, cache=cache)  # fmt: skip
    (row,) = records(run)
    assert {"fid", "class_accuracy", "class_accuracy_floor"} <= set(row)
    assert 0 <= row["class_accuracy"] <= 1 and 0 <= row["class_accuracy_floor"] <= 1
    assert tomllib.loads((run / "config.toml").read_text())["conditional"] is True
    assert len(list((cache / "features").glob("classes-*.pt"))) == 1  # trained once, cached
    with Image.open(run / "samples" / "step_00000004.png") as im:
        assert im.size == (8 * 10 + 2, 10 * 10 + 2)  # 8 columns of 8x8 digits, a row per class
    out = tmp_path / "three.npy"
    ganstep("sample", "--run", run, "--n", 5, "--class", 3, "--out", out, cache=cache)
    assert np.load(out).shape == (5, 1, 8, 8)
    proc = ganstep("sample", "--run", run, "--n", 5, "--class", 10, "--out", tmp_path / "ten.npy",
                   cache=cache, check=False)  # fmt: skip
    assert proc.returncode == 1 and "--class must be from 0 to 9, got 10" in proc.stderr
    proc = ganstep("train", "--conditional", "--out", tmp_path / "grid", *TINY, cache=cache,
                   check=False)  # fmt: skip
    assert proc.returncode == 1 and "--conditional needs labelled data" in proc.stderr
