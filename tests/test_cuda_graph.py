"""Whole-iteration CUDA graph capture: refusals everywhere, replays equal eager on CUDA."""

from __future__ import annotations

import pytest
import torch
from helpers import Run, real_batches
from torch.testing import assert_close

from ganstep import Step, d_first, g_first, simultaneous
from ganstep.engine.cuda_graph import GraphedStep
from ganstep.engine.regularizers import PathLength


def make(schedule, precision="fp32", capturable=True, objective="ns", device="cpu", **options):
    side = Run(objective, batchnorm=False, dtype=torch.float32, device=device)
    side.opt_g = torch.optim.Adam(side.G.parameters(), 0.01, capturable=capturable)
    side.opt_d = torch.optim.Adam(side.D.parameters(), 0.01, capturable=capturable)
    if options.pop("info", False):
        options["info_optimizer"] = torch.optim.Adam(side.G.parameters(), 0.01)
        options["info_terms"] = {"zero": lambda v: v.fake.x.sum() * 0}
    step = Step(*side.models(), objective=objective, schedule=schedule, latent=side.latent,
                precision=precision, **options)  # fmt: skip
    return side, step


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"schedule": simultaneous(fused=True)}, "fused"),
        ({"schedule": simultaneous(d_every=2)}, "d_every"),
        ({"schedule": d_first(), "precision": "fp16"}, "fp16"),
        ({"schedule": d_first(), "capturable": False}, "capturable=True"),
        ({"schedule": d_first()}, "needs the models on CUDA"),
        ({"schedule": d_first(), "g_regularizer": PathLength()}, "lazy G regularizer"),
        ({"schedule": d_first(), "info": True}, "info step"),
        ({"schedule": d_first(), "fake_pool": 4}, "fake pool"),
        ({"schedule": d_first(), "augment": lambda x: x}, "augmentation"),
    ],
)
def test_capture_refuses_what_a_graph_cannot_hold(kwargs, match):
    _, step = make(**kwargs)
    with pytest.raises(ValueError, match=match):
        GraphedStep(step, real_batches(1, dtype=torch.float32)[0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("objective", ["ns", "wgan_gp", "began"])
@pytest.mark.parametrize("schedule", [d_first(), simultaneous()], ids=["d_first", "simult"])
def test_graph_replays_equal_eager_iterations(schedule, objective):
    """The graphed run and the eager run each from the same seed, one after the other:
    WGAN-GP's interpolation weights come from the default CUDA generator, which both
    would advance if they were interleaved (each replay, then each eager call, drawing
    the next numbers of one stream: the difference once seen here, 5.057 against
    5.037). z comes from each side's own generator, registered with the graph."""
    data = [b.float().cuda() for b in real_batches(8)]
    runs = []
    for graph in (True, False):
        side, step = make(schedule, objective=objective, device="cuda")
        torch.manual_seed(3)
        if graph:
            graphed = GraphedStep(step, data[0], warmup=2, generators=[side.gen])
        else:
            for real in [data[0]] * 2:  # the same two warm-up iterations, eagerly
                step(real)
            graphed = step
        logs = [graphed(real) for real in data[1:]]
        runs.append((side, logs))
    (graphed_side, graphed_logs), (eager_side, eager_logs) = runs
    for logs, eager in zip(graphed_logs, eager_logs, strict=True):
        for key in eager:
            assert_close(logs[key], eager[key], rtol=1e-4, atol=1e-5)
    for p, q in zip(graphed_side.G.parameters(), eager_side.G.parameters(), strict=True):
        assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("objective", ["ns", "wgan_gp", "began", "softmax"])
@pytest.mark.parametrize("schedule", [d_first(), g_first(), simultaneous()], ids=str)
def test_an_iteration_never_waits_for_the_gpu(schedule, objective):
    _, step = make(schedule, objective=objective, device="cuda")
    real = real_batches(1, dtype=torch.float32)[0].cuda()
    step(real)  # lazily created state (optimizer moments) comes first
    torch.cuda.set_sync_debug_mode("error")  # any host synchronisation raises
    try:
        logs = step(real)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert all(v.device.type == "cuda" for v in logs.values())
