"""The Steps a CUDA graph holds, built alike for the CUDA tests (replays equal eager)
and for their CPU rehearsal (each iteration replay-safe): one case per cadence and
feature a graph takes."""

from __future__ import annotations

import torch
from torch import nn

from ganstep import Step, d_first, g_first, simultaneous
from ganstep.engine.objectives import OBJECTIVES
from ganstep.engine.regularizers import PathLength
from ganstep.engine.views import reads_d_step_real

from . import X_DIM, Z_DIM, Run


def make(schedule, precision="fp32", capturable=True, objective="ns", device="cpu",
         conditional=False, fused_adam=False, batchnorm=False, spectral=False,
         **options):  # fmt: skip
    """A float32 side (G, D, capturable Adam, fused where asked, seeded latent; MLPs with
    BatchNorm where asked, D's first layer spectral-normalized where asked) and its Step."""
    if callable(objective):
        objective = objective()
    if callable(options.get("g_regularizer")):  # a factory: a regularizer holds state
        options["g_regularizer"] = options["g_regularizer"]()
    name = objective if isinstance(objective, str) else objective.name
    side = Run(name, batchnorm=batchnorm, dtype=torch.float32, device=device)
    if conditional:
        side.G, side.D = CondG().to(device), CondD().to(device)
    if spectral:
        torch.nn.utils.parametrizations.spectral_norm(side.D.net[0])
    kind = {"capturable": capturable, "fused": fused_adam or None}
    side.opt_g = torch.optim.Adam(side.G.parameters(), 0.01, **kind)
    side.opt_d = torch.optim.Adam(side.D.parameters(), 0.01, **kind)
    if options.pop("info", False):
        options["info_optimizer"] = torch.optim.Adam(
            side.G.parameters(), 0.01, capturable=capturable
        )
        options["info_terms"] = {"zero": lambda v: v.fake.x.sum() * 0}
    step = Step(*side.models(), objective=objective, schedule=schedule, latent=side.latent,
                precision=precision, **options)  # fmt: skip
    return side, step


CLASSES = 3


class CondG(nn.Module):
    """G(z, c): z scaled by c's embedding, through one linear layer (an embedding, as
    projection Ds and BigGAN take classes: one_hot reads its input's range on the
    host on the CPU, though not on CUDA)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.fc = nn.Embedding(CLASSES, Z_DIM), nn.Linear(Z_DIM, X_DIM)

    def forward(self, z, c):
        return self.fc(z * self.embed(c))


class CondD(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.fc = nn.Embedding(CLASSES, X_DIM), nn.Linear(X_DIM, 1)

    def forward(self, x, c):
        return self.fc(x * self.embed(c))


def lazy(name, every):
    """A fresh lazy-R1 objective per run (a factory: objectives may hold state)."""
    return lambda: OBJECTIVES[name](r1=0.5, r1_every=every)


def disc_start(at: int, value: float):
    """taming's ``adopt_weight``: a weight of 0 before iteration ``at``, then ``value``."""
    return lambda i: 0.0 if i < at else value


def graph_cases(device: str) -> dict[str, tuple]:
    """name -> (schedule, objective, Step options), for Steps on ``device``."""
    return {
        **{f"{o}-d_first": (d_first(), o, {}) for o in ("ns", "wgan_gp", "began")},
        **{f"{o}-simult": (simultaneous(), o, {}) for o in ("ns", "wgan_gp", "began")},
        "lazy_r1": (d_first(), lazy("ns", 3), {}),
        "lazy_r1-accumulate2": (d_first(), lazy("ns", 3), {"accumulate": 2}),
        "fp16-fused_adam-lazy_r1": (
            d_first(),
            lazy("ns", 3),
            {"precision": "fp16", "fused_adam": True},
        ),
        "lazy_r1-g_first-d_steps2": (g_first(d_steps=2), lazy("hinge", 3), {}),
        "wgan-n_critic": (d_first(d_steps=2, g_every=3), "wgan_gp", {}),
        "path_length-g_first": (g_first(), "ns", {"g_regularizer": lambda: PathLength(every=2)}),
        # rosinality's: the path length's own draw of n // shrink rows
        "path_length-shrunk": (
            d_first(reuse_fake=False),
            "ns",
            {"g_regularizer": lambda: PathLength(every=2, z_draw="shrunk")},
        ),
        "simult-d_every": (simultaneous(d_every=2), "ns", {}),
        "fused-wgan_gp": (simultaneous(fused=True), "wgan_gp", {}),
        "g_terms": (d_first(), "ns", {"g_terms": {"l1": lambda v: v.fake.x.abs().mean()}}),
        # MelGAN's: G's term reads D's output on the real batch from D's step
        "g_terms-d_step_real": (
            d_first(),
            "hinge",
            {"g_terms": {"fm": reads_d_step_real(lambda v: (v.d_fake - v.d_real).abs().mean())}},
        ),
        # a graph per pair of values: iterations 0-3, 4-7, then 8 on
        "weights-of-the-iteration": (
            d_first(),
            "ns",
            {
                "d_scale": disc_start(4, 0.5),
                "g_terms": {"l1": (lambda i: 0.1 if i < 8 else 0.2, lambda v: v.fake.x.mean())},
            },
        ),
        "infogan-lazy_r1": (d_first(), lazy("ns", 2), {"info": True}),
        "diffaugment": (d_first(), "ns", {"augment": lambda x: x + 0.1 * torch.randn_like(x)}),
        "condition-real": (d_first(), "hinge", {"condition": "real"}),
        "condition-sampled": (
            simultaneous(),
            "ns",
            {"condition": lambda n: torch.randint(CLASSES, (n,), device=device)},
        ),
    }


def conditioned(data: list, device: str) -> list:
    """``data`` with a class label per sample, for the conditional cases."""
    gen = torch.Generator().manual_seed(5)
    return [(x, torch.randint(CLASSES, (x.shape[0],), generator=gen).to(device)) for x in data]


def per_call(data: list, schedule) -> list:
    """``data`` cut into what each call of a Step on ``schedule`` takes."""
    per = schedule.real_batches
    calls = [data[i : i + per] for i in range(0, len(data), per)]
    return [c if len(c) > 1 else c[0] for c in calls]
