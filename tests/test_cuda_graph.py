"""Whole-iteration CUDA graph capture: refusals everywhere, replays equal eager on CUDA."""

from __future__ import annotations

import pytest
import torch
from helpers import X_DIM, Z_DIM, Run, real_batches
from torch import nn
from torch.testing import assert_close

from ganstep import Step, d_first, g_first, simultaneous
from ganstep.engine.augment import Adaptive
from ganstep.engine.cuda_graph import GraphedStep
from ganstep.engine.objectives import OBJECTIVES
from ganstep.engine.regularizers import PathLength


def make(schedule, precision="fp32", capturable=True, objective="ns", device="cpu",
         conditional=False, **options):  # fmt: skip
    if callable(objective):
        objective = objective()
    name = objective if isinstance(objective, str) else objective.name
    side = Run(name, batchnorm=False, dtype=torch.float32, device=device)
    if conditional:
        side.G, side.D = CondG().to(device), CondD().to(device)
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
        ({"schedule": d_first(), "precision": "fp16"}, "fp16"),
        ({"schedule": d_first(), "capturable": False}, "capturable=True"),
        ({"schedule": d_first()}, "needs the models on CUDA"),
        ({"schedule": d_first(), "g_regularizer": PathLength()}, "path-length"),
        ({"schedule": d_first(), "info": True}, "info step"),
        ({"schedule": d_first(), "fake_pool": 4}, "fake pool"),
        ({"schedule": d_first(), "augment": Adaptive()}, "adaptive augmentation"),
        ({"schedule": d_first(), "accumulate": 2}, "accumulate"),
        ({"schedule": d_first(), "d_scale": lambda i: 1.0}, "function of the iteration"),
        ({"schedule": d_first(), "check_finite": True}, "check_finite"),
    ],
)
def test_capture_refuses_what_a_graph_cannot_hold(kwargs, match):
    _, step = make(**kwargs)
    with pytest.raises(ValueError, match=match):
        GraphedStep(step, real_batches(1, dtype=torch.float32)[0])


class CondG(nn.Module):
    """G(z, c): z and c's one-hot code through one linear layer."""

    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.classes, self.fc = classes, nn.Linear(Z_DIM + classes, X_DIM)

    def forward(self, z, c):
        return self.fc(torch.cat([z, nn.functional.one_hot(c, self.classes).to(z)], 1))


class CondD(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.classes, self.fc = classes, nn.Linear(X_DIM + classes, 1)

    def forward(self, x, c):
        return self.fc(torch.cat([x, nn.functional.one_hot(c, self.classes).to(x)], 1))


def lazy(name, every):
    """A fresh lazy-R1 objective per run (a factory: objectives may hold state)."""
    return lambda: OBJECTIVES[name](r1=0.5, r1_every=every)


GRAPH_CASES = {
    **{f"{o}-d_first": (d_first(), o, {}) for o in ("ns", "wgan_gp", "began")},
    **{f"{o}-simult": (simultaneous(), o, {}) for o in ("ns", "wgan_gp", "began")},
    "lazy_r1": (d_first(), lazy("ns", 3), {}),
    "lazy_r1-g_first-d_steps2": (g_first(d_steps=2), lazy("hinge", 3), {}),
    "wgan-n_critic": (d_first(d_steps=2, g_every=3), "wgan_gp", {}),
    "simult-d_every": (simultaneous(d_every=2), "ns", {}),
    "fused-wgan_gp": (simultaneous(fused=True), "wgan_gp", {}),
    "g_terms": (d_first(), "ns", {"g_terms": {"l1": lambda v: v.fake.x.abs().mean()}}),
    "diffaugment": (d_first(), "ns", {"augment": lambda x: x + 0.1 * torch.randn_like(x)}),
    "condition-real": (d_first(), "hinge", {"condition": "real"}),
    "condition-sampled": (
        simultaneous(),
        "ns",
        {"condition": lambda n: torch.randint(3, (n,), device="cuda")},
    ),
}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("case", list(GRAPH_CASES))
def test_graph_replays_equal_eager_iterations(case):
    """The graphed run and the eager run, each from the same seed, one after the other:
    draws from the default CUDA generator (WGAN-GP's interpolation weights, the
    augmentation, sampled conditions) would interleave if the two ran side by side
    (a difference once seen here: 5.057 against 5.037). z comes from each side's own
    generator, registered with the graph. Every call is one iteration; the first two
    of each kind run eagerly, then each kind's graph replays."""
    schedule, objective, options = GRAPH_CASES[case]
    torch.manual_seed(0)
    data = [b.float().cuda() for b in real_batches(24)]
    if options.get("condition") == "real":
        data = [(x, torch.randint(3, (x.shape[0],), device="cuda")) for x in data]
    per_call = schedule.real_batches
    calls = [data[i : i + per_call] for i in range(0, len(data), per_call)]
    calls = [c if len(c) > 1 else c[0] for c in calls]
    runs = []
    for graph in (True, False):
        side, step = make(schedule, objective=objective, device="cuda",
                          conditional="condition" in options, **options)  # fmt: skip
        torch.manual_seed(3)
        run = GraphedStep(step, calls[0], warmup=2, generators=[side.gen]) if graph else step
        logs = [run(real) for real in calls]
        runs.append((side, step, logs))
    (g_side, g_step, g_logs), (e_side, e_step, e_logs) = runs
    for i, (logs, eager) in enumerate(zip(g_logs, e_logs, strict=True)):
        assert logs.keys() == eager.keys(), f"call {i}"
        for key in eager:
            assert_close(logs[key], eager[key], rtol=1e-4, atol=1e-5, msg=f"{key} at call {i}")
    for module in ("G", "D"):
        for p, q in zip(getattr(g_side, module).parameters(),
                        getattr(e_side, module).parameters(), strict=True):  # fmt: skip
            assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert g_step.progress == e_step.progress  # replays moved the counters as calls do


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
