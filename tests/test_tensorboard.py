"""``ganstep train --tensorboard``: the event files, read back with tensorboard's own
reader, hold every scalar and the sample picture at the steps they were logged, and a
resumed run appends to them."""

from __future__ import annotations

import io

import numpy as np
import pytest
from helpers import ganstep, records

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    IMAGES,
    SCALARS,
    EventAccumulator,
)

IMAGE_RUN = ["--data", "digits", "--model", "dcgan", "--batch-size", "16", "--width", "8",
             "--eval-every", "3", "--sample-every", "3", "--log-every", "2", "--ckpt-every", "3",
             "--eval-samples", "50", "--feature-steps", "10", "--tensorboard",
             "--no-progress"]  # fmt: skip


def events(run):
    acc = EventAccumulator(str(run / "tensorboard"), size_guidance={SCALARS: 0, IMAGES: 0})
    acc.Reload()
    return acc


def steps(acc, tag):
    return [e.step for e in acc.Scalars(tag)]


def test_scalars_and_sample_pictures_at_their_steps_and_a_resume_appends(tmp_path):
    run = tmp_path / "run"
    ganstep("train", "--steps", 6, "--out", run, *IMAGE_RUN, cache=tmp_path)
    ganstep("train", "--resume", "--steps", 9, "--out", run, *IMAGE_RUN, cache=tmp_path)
    acc = events(run)
    tags = set(acc.Tags()["scalars"])
    losses = {"Loss/loss_d", "Loss/loss_g", "Loss/score_real", "Loss/score_fake",
              "Loss/sign_real", "Loss/sign_fake"}  # fmt: skip
    progress = {"Progress/lr_g", "Progress/lr_d", "Progress/steps_per_s"}
    metrics = {"Metrics/fid", "Metrics/kid", "Metrics/fid_floor", "Metrics/loss_d"}
    assert losses | progress | metrics <= tags, tags
    assert steps(acc, "Loss/loss_d") == [2, 4, 6, 8, 9]  # every --log-every step and the last
    assert steps(acc, "Metrics/fid") == [3, 6, 9]
    # the metrics in the events are those of metrics.jsonl, at the same steps
    fid = {r["step"]: r["fid"] for r in records(run)}
    assert [e.value for e in acc.Scalars("Metrics/fid")] == pytest.approx([fid[3], fid[6], fid[9]])
    signs = [e.value for e in acc.Scalars("Loss/sign_real")]
    assert all(-1 <= v <= 1 for v in signs)
    pictures = acc.Images("samples")
    assert [p.step for p in pictures] == [3, 6, 9]
    from PIL import Image

    shown = np.asarray(Image.open(io.BytesIO(pictures[-1].encoded_image_string)).convert("RGB"))
    written = np.asarray(Image.open(run / "samples" / "step_00000009.png").convert("RGB"))
    assert np.array_equal(shown, written)  # the picture the run wrote, pixel for pixel
    # the configuration, once, as hyperparameters
    hparams = acc.PluginTagToContent("hparams")
    assert b"objective" in hparams["_hparams_/session_start_info"]


def test_a_killed_runs_events_after_its_checkpoint_are_purged_on_resume(tmp_path):
    run = tmp_path / "run"
    grid = [
        "--batch-size",
        "16",
        "--width",
        "8",
        "--eval-samples",
        "50",
        "--log-every",
        "1",
        "--eval-every",
        "100",
        "--sample-every",
        "100",
        "--tensorboard",
        "--no-progress",
    ]
    ganstep("train", "--steps", 6, "--ckpt-every", 4, "--keep", 5, "--out", run, *grid,
            cache=tmp_path)  # fmt: skip
    # as if killed after step 6 with step 4 the newest checkpoint: steps 5, 6 run again
    (run / "checkpoints" / "step_00000006.pt").unlink()
    ganstep("train", "--resume", "--steps", 7, "--out", run, *grid, cache=tmp_path)
    assert steps(events(run), "Loss/loss_d") == [1, 2, 3, 4, 5, 6, 7]  # each step once
