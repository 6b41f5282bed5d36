"""Data parallel Step over torch.distributed: 2 CPU processes (gloo) under torchrun."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from ganstep import Step, d_first, simultaneous
from ganstep.trainer.models import MLP

HELPERS = Path(__file__).parent / "helpers"
sys.path.insert(0, str(HELPERS))
from cases import CASES, has_single_process_twin, run_case  # noqa: E402


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--master_port=0", "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0",
           str(HELPERS / "distributed_worker.py"), str(out)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {name: [torch.load(out / f"{name}-{r}.pt") for r in range(2)] for name in CASES}


@pytest.mark.parametrize("name", list(CASES))
def test_every_rank_ends_with_the_same_parameters(two_ranks, name):
    rank0, rank1 = two_ranks[name]
    for p, q in zip(rank0["params"], rank1["params"], strict=True):
        assert torch.equal(p, q)
    assert rank0["logs"] == rank1["logs"]  # losses are averaged across ranks


@pytest.mark.parametrize("name", [n for n in CASES if has_single_process_twin(n)])
def test_two_ranks_equal_one_process_on_the_concatenated_batch(two_ranks, name):
    params, logs = run_case(name, rank=0, world=1)
    rank0 = two_ranks[name][0]
    for p, q in zip(rank0["params"], params, strict=True):
        assert_close(p, q)
    for ours, single in zip(rank0["logs"], logs, strict=True):
        assert ours.keys() == single.keys()
        for key in ours:
            assert_close(ours[key], single[key], msg=lambda m, k=key: f"{k}: {m}")


def test_ada_moves_p_by_the_rows_of_every_rank(two_ranks):
    """p moves by (rows since the last update) / (kimg * 1000), the rows of all ranks:
    2 iterations x 8 global rows / 160 = 0.1 (a rank's own rows would give 0.05)."""
    logs = two_ranks["g_first-ns-ada"][0]["logs"]
    p = [0.5] + [row["augment_p"] for row in logs]
    moves = {round(abs(b - a), 9) for a, b in zip(p[:-1], p[1:], strict=True)}
    assert moves <= {0.0, 0.1} and 0.1 in moves


def test_distributed_without_a_process_group_is_refused():
    G, D = MLP(2, 2, (4,)), MLP(2, 1, (4,))
    with pytest.raises(ValueError, match="init_process_group"):
        Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
             objective="ns", schedule="d_first", latent=lambda n: torch.randn(n, 2),
             distributed=True)  # fmt: skip


def test_a_step_not_told_distributed_refuses_a_process_group_of_several(monkeypatch):
    """As a plain Step in a LightningModule under Lightning's DDP strategy finds itself:
    each process would train alone. Said either way, it trains."""
    from ganstep.engine import distributed as data_parallel

    monkeypatch.setattr(data_parallel, "active", lambda: True)
    monkeypatch.setattr(data_parallel, "world_size", lambda: 2)

    def step(**said):
        G, D = MLP(2, 2, (4,)), MLP(2, 1, (4,))
        opts = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
        return Step(G, D, *opts, objective="ns", schedule="d_first",
                    latent=lambda n: torch.randn(n, 2), **said)  # fmt: skip

    unsaid = step()
    with pytest.raises(ValueError, match=r"2 processes.*distributed=True.*GANModule"):
        unsaid(torch.randn(4, 2))
    assert all(p.grad is None for p in unsaid._models[0].parameters())  # nothing trained
    assert set(step(distributed=False)(torch.randn(4, 2))) >= {"loss_d", "loss_g"}


@pytest.mark.parametrize(
    ("schedule", "want"),
    [
        (d_first(), ["D", "G"]),
        (d_first(d_steps=2, g_steps=2, reuse_fake=False), ["D", "D", "G", "G"]),
        (simultaneous(), ["D", "G"]),
        (simultaneous(fused=True), ["D", "G"]),
        (simultaneous(d_every=2), ["G", "D", "G"]),  # iteration 0 updates G only
    ],
)
def test_each_phase_synchronises_only_the_module_it_steps(schedule, want):
    """The gradient averaging hook sees, per phase, exactly the parameters about to step."""
    torch.manual_seed(0)
    G, D = MLP(3, 2, (4,)), MLP(2, 1, (4,))
    step = Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                objective="ns", schedule=schedule, latent=lambda n: torch.randn(n, 3))  # fmt: skip
    names = {id(p): "G" for p in G.parameters()} | {id(p): "D" for p in D.parameters()}
    seen = []

    def record(params):
        owners = {names[id(p)] for p in params}
        assert len(owners) == 1 and all(p.grad is not None for p in params)
        seen.append(owners.pop())

    step.game.options = replace(step.game.options, sync=record)
    for _ in range(2 if schedule.name == "simultaneous" and schedule.d_every == 2 else 1):
        step(torch.randn(5, 2) if step.real_batches == 1 else [torch.randn(5, 2)] * 2)
    assert seen == want


# --- torchrun -m ganstep train ------------------------------------------------------

TINY = ["--width", "16", "--batch-size", "16", "--eval-samples", "200", "--log-every", "3",
        "--no-progress", "--ckpt-every", "3", "--eval-every", "6", "--sample-every", "6",
        "--lr-decay", "none",
        "--schedule", "simultaneous", "--fused"]  # fmt: skip


def launch(*args, cache, nproc=2, check=True):
    env = {**os.environ, "GANSTEP_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    runner = ["-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--rdzv_backend=c10d",
              "--rdzv_endpoint=localhost:0", "-m"] if nproc > 1 else ["-m"]  # fmt: skip
    cmd = [sys.executable, *runner, "ganstep", "train", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def last_checkpoint(run: Path) -> dict:
    return torch.load(sorted((run / "checkpoints").glob("step_*.pt"))[-1], weights_only=True)


def test_torchrun_train_writes_once_and_resumes_every_rank_exactly(tmp_path):
    cache = tmp_path / "cache"
    done = launch("--steps", 12, "--out", tmp_path / "a", *TINY, cache=cache)
    assert done.stdout.count("done:") == 1  # rank 0 reports, the others stay quiet
    launch("--steps", 6, "--out", tmp_path / "b", *TINY, cache=cache)
    launch("--resume", "--steps", 12, "--out", tmp_path / "b", cache=cache)
    a, b = last_checkpoint(tmp_path / "a"), last_checkpoint(tmp_path / "b")
    assert a["step"] == b["step"] == 12 and len(a["rng_ranks"]) == 2
    # each process drew its own batches and z
    assert not torch.equal(a["rng_ranks"][0]["data"], a["rng_ranks"][1]["data"])
    for key in ("G", "D", "ema"):
        for name, value in a[key].items():
            assert torch.equal(value, b[key][name]), f"{key}.{name}"
    lines = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [6, 12]
    assert len(list((tmp_path / "a" / "samples").glob("*.png"))) == 2
    # a 2-process checkpoint cannot continue in one process: its streams would not match
    single = launch("--resume", "--steps", 15, "--out", tmp_path / "a", cache=cache, nproc=1,
                    check=False)  # fmt: skip
    assert single.returncode != 0 and "written by 2 process(es)" in single.stderr


def test_torchrun_ctrl_c_on_one_rank_stops_every_rank_at_the_same_step(tmp_path):
    """A SIGINT reaching one process only: both stop at one step, with one checkpoint,
    instead of one waiting forever in a collective the other left."""
    run = tmp_path / "run"
    env = {**os.environ, "GANSTEP_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0", "-m", "ganstep", "train",
           "--steps", "1000000", "--out", str(run), *map(str, TINY),
           "--log-every", "40", "--ckpt-every", "100000"]  # agreed steps are rare  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    children: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not (run / "metrics.jsonl").exists():  # training is under way
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                  text=True).stdout.split()  # fmt: skip
        assert len(children) == 2
        os.kill(int(children[-1]), signal.SIGINT)
        _, err = proc.communicate(timeout=90)  # a process left waiting would hang here
    finally:
        if proc.poll() is None:  # hung: kill the workers, then torchrun
            for pid in [*map(int, children), proc.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    stops = re.findall(r"interrupted at step (\d+)", err)
    assert len(stops) == 2 and stops[0] == stops[1], err[-2000:]
    assert last_checkpoint(run)["step"] == int(stops[0])
