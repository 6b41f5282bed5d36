"""Host work per steady-state iteration (issue 51's goal): a Step makes at most 1.05x
the Python calls of the hand-written loop of its order, for every objective, with R1 and
lazy R1, and the engine's own share stays under 40 calls. Python calls are counted, not
timed: the count is the same on any machine (ganstep.tools.host_calls)."""

from __future__ import annotations

import pytest

from ganstep.tools.host_calls import OBJECTIVES, ORDERS, measure, python_calls

CASES = [(order, objective, None) for order in ORDERS for objective in OBJECTIVES]
CASES += [("d_first", "ns", "r1"), ("g_first", "ns", "r1_lazy")]


@pytest.mark.parametrize(("order", "objective", "regularizer"), CASES)
def test_a_step_makes_no_more_python_calls_than_the_loop_it_replaces(order, objective,
                                                                      regularizer):  # fmt: skip
    row = measure(order, objective, regularizer, iterations=4, batch=4, width=8)
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
