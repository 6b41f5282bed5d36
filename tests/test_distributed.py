"""Data parallel Step over torch.distributed: 2 CPU processes (gloo) under torchrun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from ganstep import Step, d_first, simultaneous
from ganstep.models import MLP

HELPERS = Path(__file__).parent / "helpers"
sys.path.insert(0, str(HELPERS))
from cases import CASES, run_case  # noqa: E402


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


@pytest.mark.parametrize("name", [n for n in CASES if not CASES[n][3]])
def test_two_ranks_equal_one_process_on_the_concatenated_batch(two_ranks, name):
    params, logs = run_case(name, rank=0, world=1)
    rank0 = two_ranks[name][0]
    for p, q in zip(rank0["params"], params, strict=True):
        assert_close(p, q)
    for ours, single in zip(rank0["logs"], logs, strict=True):
        assert ours.keys() == single.keys()
        for key in ours:
            assert_close(ours[key], single[key], msg=lambda m, k=key: f"{k}: {m}")


def test_distributed_without_a_process_group_is_refused():
    G, D = MLP(2, 2, (4,)), MLP(2, 1, (4,))
    with pytest.raises(ValueError, match="init_process_group"):
        Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
             objective="ns", schedule="d_first", latent=lambda n: torch.randn(n, 2),
             distributed=True)  # fmt: skip


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

    step.pair.sync = record
    for _ in range(2 if schedule.name == "simultaneous" and schedule.d_every == 2 else 1):
        step(torch.randn(5, 2) if step.real_batches == 1 else [torch.randn(5, 2)] * 2)
    assert seen == want
