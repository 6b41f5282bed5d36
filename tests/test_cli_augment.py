"""`ganstep train --augment`, `--limit` and the new objectives, as a user runs them."""

from __future__ import annotations

import tomllib

import pytest
import torch
from helpers import TINY, assert_same_state, checkpoint, ganstep, records

from ganstep.trainer.data import load_dataset

SMALL = ["--data", "digits", "--model", "dcgan", "--width", "8", "--batch-size", "16",
         "--eval-samples", "100", "--feature-steps", "5", "--no-progress"]  # fmt: skip


def test_ada_on_a_limited_dataset_resumes_exactly(tmp_path, cache):
    common = [*SMALL, "--augment", "ada", "--limit", "300", "--objective", "rasgan",
              "--ckpt-every", "6", "--eval-every", "6", "--lr-decay", "none"]  # fmt: skip
    ganstep("train", "--steps", 10, "--out", tmp_path / "a", *common, cache=cache)
    ganstep("train", "--steps", 6, "--out", tmp_path / "b", *common, cache=cache)
    ganstep("train", "--resume", "--steps", 10, "--out", tmp_path / "b", cache=cache)
    straight, resumed = checkpoint(tmp_path / "a"), checkpoint(tmp_path / "b")
    assert_same_state(straight, resumed)  # p, and the signs of iterations 5 and 6
    assert straight["step_state"]["augment"]["p"] > 0
    saved = tomllib.loads((tmp_path / "a" / "config.toml").read_text())
    assert (saved["augment"], saved["limit"], saved["objective"]) == ("ada", 300, "rasgan")
    assert 0 < records(tmp_path / "a")[-1]["augment_p"] < 0.01  # the mean of p since step 6
    # the metrics compare with the whole training set, whatever the limit
    ganstep("train", "--steps", 6, "--out", tmp_path / "full",
            *[a for a in common if a not in ("--limit", "300")], cache=cache)  # fmt: skip
    assert records(tmp_path / "full")[-1]["fid_floor"] == records(tmp_path / "b")[0]["fid_floor"]


def test_a_diffaugment_policy_trains_and_is_kept(tmp_path, cache):
    """``--augment translation,cutout``: DiffAugment's policy string, as the library's."""
    ganstep("train", "--steps", 2, "--eval-every", 2, "--out", tmp_path / "p", *SMALL,
            "--augment", "translation,cutout", cache=cache)  # fmt: skip
    saved = tomllib.loads((tmp_path / "p" / "config.toml").read_text())
    assert saved["augment"] == "translation,cutout" and records(tmp_path / "p")[-1]["step"] == 2


def test_limit_trains_on_a_fixed_subset():
    data = load_dataset("digits")
    a, b = data.subset(100), data.subset(100)
    assert torch.equal(a.train, b.train) and torch.equal(a.labels, b.labels)
    assert len(a.train) == 100 and len(data.subset(200).train) == 200
    rows = {tuple(x.flatten().tolist()) for x in data.train}
    assert all(tuple(x.flatten().tolist()) in rows for x in a.train)
    assert len(set(a.labels.tolist())) == 10  # a random subset, not the first rows


@pytest.mark.parametrize("objective", ["wgan", "rsgan", "ralsgan", "rahinge"])
def test_new_objectives_train(tmp_path, cache, objective):
    run = tmp_path / objective
    ganstep("train", "--objective", objective, "--steps", 4, "--eval-every", 4, "--out", run,
            *TINY, cache=cache)  # fmt: skip
    assert records(run)[-1]["step"] == 4


@pytest.mark.parametrize(
    "args, message",
    [
        (["--augment", "flip"],
         "unknown augment 'flip'; choose one of: none, diffaugment, ada, a policy such as"),
        (["--augment", "ada"], "--augment ada transforms images; grid is points"),
        (["--limit", "0"], "limit must be a positive integer"),
        ([*SMALL, "--limit", "5000"], "limit 5000 is more than the"),
        (["--limit", "10"], "grid draws fresh samples"),
        (["--schedule", "simultaneous", "--fused", "--augment", "diffaugment"],
         "use --augment without --fused"),
        (["--accumulate", "2", "--objective", "softmax"], "objective 'softmax' is not"),
        (["--data", ""], "data must name a dataset, a folder or a .npy file"),
    ],
)  # fmt: skip
def test_bad_augment_and_limit_are_named(tmp_path, cache, args, message):
    proc = ganstep("train", *TINY, *args, "--steps", 2, "--out", tmp_path / "x", cache=cache,
                   check=False)  # fmt: skip
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
