"""Host work per steady-state iteration (issue 51's goal): a Step makes at most 1.05x
the Python calls of the hand-written loop of its order, for every objective, with R1 and
lazy R1, and the engine's own share stays under 40 calls; a CUDA graph's replay makes
a few dozen. Python calls are counted, not timed: the count is the same on any machine
(ganstep.tools.host_calls)."""

from __future__ import annotations

import pytest
import torch
from helpers.replay import captures_on_cpu

from ganstep import Step, d_first
from ganstep.engine.cuda_graph import GraphedStep
from ganstep.tools import bench
from ganstep.tools.host_calls import OBJECTIVES, ORDERS, measure, python_calls

CASES = [(order, objective, None) for order in ORDERS for objective in OBJECTIVES]
CASES += [("d_first", "ns", "r1"), ("g_first", "ns", "r1_lazy")]


@pytest.mark.parametrize(("order", "objective", "regularizer"), CASES)
def test_a_step_makes_no_more_python_calls_than_the_loop_it_replaces(order, objective,
                                                                      regularizer):  # fmt: skip
    row = measure(order, objective, regularizer, iterations=4, batch=4, width=8)
    assert row["ratio"] <= 1.05, row
    assert row["engine_calls"] < 40, row


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_real_g_fake_makes_no_more_python_calls_than_the_dcgan_examples_loop(objective):
    """d_first making its fakes after D's real forward, as the example's lines run."""
    row = measure("d_first", objective, iterations=4, batch=4, width=8, d_order="real_g_fake")
    assert row["reference"] == "dcgan_example"
    assert row["ratio"] <= 1.05, row
    assert row["engine_calls"] < 40, row


def test_python_calls_counts_frames_entered():
    def two_calls() -> None:
        abs(-1)  # a C function: not counted
        (lambda: None)()

    def outer() -> None:
        two_calls()

    count = python_calls(outer, iterations=3, warmup=0)
    assert count.calls == 3  # outer, two_calls, the lambda
    assert count.engine == 0


def test_a_replay_makes_a_few_dozen_python_calls(monkeypatch):
    """A CUDA graph's replay runs no Step on the host, only its checks (what the graphs
    read, the iteration's kind, the optimizers' settings), the batch's copy and the
    logs' clones: under 40 Python calls at any model size, where the eager iteration
    makes hundreds. Counted with the CPU's stand-in graphs, whose replay is one Python
    call where CUDA's is a C call."""
    captures_on_cpu(monkeypatch)
    for width in (8, 32):
        G, D, opt_g, opt_d, latent, real = bench.make_pair("dcgan", "ns", 4, width, "cpu")
        for group in (*opt_g.param_groups, *opt_d.param_groups):  # as a CUDA graph needs
            group["capturable"], group["lr"] = True, torch.tensor(group["lr"])
        step = Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(), latent=latent)
        graphed = GraphedStep(step, real, warmup=1)
        replay = python_calls(lambda: graphed(real), iterations=4, warmup=2)  # noqa: B023
        eager = python_calls(lambda: step(real), iterations=2, warmup=1)  # noqa: B023
        assert replay.calls < 40 and eager.calls > 10 * replay.calls, (replay, eager)
