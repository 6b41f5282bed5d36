"""A metric network is trained once per cache: runs started together on a fresh
machine wait for the first one's network instead of each training their own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import torch
from torch import nn

from ganstep.trainer import evaluation

# one process: trains "net" slowly (writing a line per training to a file), or loads it
WORKER = textwrap.dedent("""
    import sys, time
    import torch
    from torch import nn
    from ganstep.trainer import evaluation

    def fit(tick):
        with open(sys.argv[1], "a") as f:
            f.write("trained\\n")
        torch.manual_seed(int(sys.argv[2]))
        net = nn.Linear(3, 2)
        for _ in range(3):
            time.sleep(0.5)
            tick()
        return net

    net = evaluation._cached_net("net", lambda: nn.Linear(3, 2), fit, 3)
    print(net.weight.sum().item())
""")


def test_concurrent_runs_train_a_metric_network_once(tmp_path):
    env = {**os.environ, "GANSTEP_CACHE": str(tmp_path / "cache")}
    log = tmp_path / "trainings"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(log), str(seed)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed in range(3)]  # fmt: skip
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert log.read_text() == "trained\n"  # one of the three trained, the others loaded
    assert len({out for out, _ in outs}) == 1  # every process has the same network
    errs = "".join(err for _, err in outs)
    assert errs.count("training a metric network once (net)") == 1


def test_a_process_that_waits_says_so(tmp_path):
    """While another process holds the network's lock (here this one), a run waits for
    it, says so on stderr, and goes on once it is released."""
    import fcntl
    import time

    (tmp_path / "features").mkdir()
    holder = os.open(tmp_path / "features" / "net.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    waiting = "another process is training the metric network net; waiting for it"
    err_path = tmp_path / "stderr"
    with err_path.open("w") as err_file:
        child = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path / "log"), "0"],
            env={**os.environ, "GANSTEP_CACHE": str(tmp_path)},
            stdout=subprocess.PIPE, stderr=err_file, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 90  # imports take seconds on a busy machine
            while waiting not in err_path.read_text() and time.monotonic() < deadline:
                assert child.poll() is None, err_path.read_text()
                time.sleep(0.1)
            assert not (tmp_path / "log").exists()  # it waits: nothing trained yet
        finally:
            os.close(holder)  # released: the child trains and ends
        child.communicate(timeout=120)
    err = err_path.read_text()
    assert child.returncode == 0, err
    assert waiting in err
    assert (tmp_path / "log").read_text() == "trained\n"


def test_a_cache_that_cannot_be_written_trains_without_a_lock(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("GANSTEP_CACHE", str(blocked))  # features/ cannot be made under it
    fitted, ticks = nn.Linear(2, 1), []

    def fit(tick):
        tick()
        ticks.append(1)
        return fitted

    monkeypatch.setattr(evaluation.checkpoint, "atomic_save", lambda *a: None)
    assert evaluation._cached_net("net", lambda: nn.Linear(2, 1), fit, 1) is fitted
    assert ticks == [1]


def test_a_cached_network_is_loaded_without_training(tmp_path, monkeypatch):
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path))
    saved = nn.Linear(2, 1)
    (tmp_path / "features").mkdir()
    torch.save(saved.state_dict(), tmp_path / "features" / "net.pt")

    def fit(tick):
        raise AssertionError("trained although cached")

    net = evaluation._cached_net("net", lambda: nn.Linear(2, 1), fit, 1)
    assert torch.equal(net.weight, saved.weight)


def test_the_metric_network_trains_on_non_square_images():
    """A quarter turn of a 8x12 image is 12x8: such images learn half turns alone
    (before: 'shape mismatch: value tensor of shape [28, 1, 12, 8] cannot be broadcast')."""

    from ganstep.trainer.metrics.fid import FeatureExtractor

    images = torch.rand(10, 1, 8, 12) * 2 - 1
    net = FeatureExtractor.train_on(images, steps=3, batch=6)
    assert net.features(images).shape[0] == 10
    square = FeatureExtractor.train_on(torch.rand(10, 1, 8, 8), steps=3, batch=6)
    assert square.features(torch.rand(4, 1, 8, 8)).isfinite().all()
