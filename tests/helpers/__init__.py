"""What the tests share: float64 G/D pairs for the equivalence tests, latent streams,
FLOP counts, and running ganstep as a user does (a subprocess) and reading what it wrote.

``helpers.wild`` holds the small Gs and Ds of the wild loops' tests (conditional,
pix2pix, ACGAN) and how to compare them; ``helpers.impure`` the Ds that are not pure;
``helpers.cases`` the data parallel cases run under torchrun; ``helpers.graph_cases``
the Steps a CUDA graph holds (the CUDA tests' and their CPU rehearsal's), and
``helpers.replay`` that rehearsal: each op of an iteration with its host-side arguments;
``helpers.launcher`` starts the commands :func:`ganstep` runs, each a process forked from
one that has imported torch and ganstep (seconds sooner than a new interpreter).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from ganstep.engine.objectives import AUTOENCODER_OBJECTIVES
from ganstep.trainer.models import MLP

from .launcher import LAUNCHER

Z_DIM, X_DIM, BATCH = 3, 2, 6

OBJECTIVES = ["minimax", "ns", "lsgan", "hinge", "wgan_gp", "began", "softmax",
              "rsgan", "rasgan", "ralsgan", "rahinge", "ebgan"]  # fmt: skip


class Run:
    """One G, D, their Adam optimizers and a seeded latent, for one side of a comparison."""

    def __init__(self, objective: str, batchnorm: bool, dtype=torch.float64, device="cpu"):
        torch.manual_seed(0)
        self.G = MLP(Z_DIM, X_DIM, (8,), activation=torch.nn.LeakyReLU, batchnorm=batchnorm)
        # BEGAN's and EBGAN's D is an autoencoder
        d_out = X_DIM if objective in AUTOENCODER_OBJECTIVES else 1
        self.D = MLP(X_DIM, d_out, (8, 4), activation=torch.nn.LeakyReLU, batchnorm=batchnorm)
        self.G.to(device, dtype)
        self.D.to(device, dtype)
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=0.02, betas=(0.5, 0.9))
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=0.02, betas=(0.5, 0.9))
        self.gen = gen = torch.Generator(device=device).manual_seed(1)
        self.latent = lambda n: torch.randn(n, Z_DIM, generator=gen, dtype=dtype, device=device)

    def models(self):
        return self.G, self.D, self.opt_g, self.opt_d


def real_batches(count: int, dtype=torch.float64, device="cpu") -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(2)
    return [
        (torch.randn(BATCH, X_DIM, generator=gen, dtype=dtype) * 0.5 + 1.0).to(device)
        for _ in range(count)
    ]


def latent_stream(width: int, seed: int = 1):
    """``latent(n)``: n float64 z of ``width`` from a generator of its own, fresh per call."""
    gen = torch.Generator().manual_seed(seed)
    return lambda n: torch.randn(n, width, generator=gen, dtype=torch.float64)


def flops(fn) -> int:
    """The FLOPs ``fn()`` runs, as ``FlopCounterMode`` counts them."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def pass_costs(D, x: torch.Tensor) -> tuple[int, int]:
    """(one forward of ``D`` on ``x``, D's weight gradients in one backward through it)."""
    from ganstep.engine.sides import frozen

    fake = x.detach().clone().requires_grad_(True)
    forward = flops(lambda: D(fake))
    with_weights = flops(lambda: D(fake).sum().backward())
    with frozen(D):
        without_weights = flops(lambda: D(fake).sum().backward())
    weight_grads = with_weights - without_weights
    assert forward > 0 and weight_grads > 0
    return forward, weight_grads


def lazy_r1_sides(make_g, make_d, every: int) -> list[tuple]:
    """Two identical float64 (G, D, Adam, Adam) sides; D's Adam as StyleGAN2-ADA sets it
    for R1 every ``every`` D steps (``objectives.lazy_regularization``)."""
    from ganstep.engine.objectives import lazy_regularization

    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = make_g().double(), make_d().double()
        lr, betas = (
            lazy_regularization(0.01, (0.5, 0.9), every) if every > 1 else (0.01, (0.5, 0.9))
        )
        out.append((G, D, torch.optim.Adam(G.parameters(), 0.01, betas=(0.5, 0.9)),
                    torch.optim.Adam(D.parameters(), lr, betas=betas)))  # fmt: skip
    return out


def build_trainee(**config) -> tuple:
    """A ``Trainee`` on the data a ``Config(**config)`` names, prepared as ``ganstep
    train`` prepares it (defaults resolved, images padded for a convolutional model),
    and that data."""
    from ganstep.trainer.train import Config, prepared_data
    from ganstep.trainer.trainee import Trainee

    data, cfg = prepared_data(Config(**config))
    return Trainee(cfg, data, torch.device("cpu")), data


# -- ganstep as a user runs it -----------------------------------------------------------


SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
# for tests that read MNIST from ../shared/data, which a user's machine does not have
needs_shared_data = pytest.mark.skipif(not SHARED_DATA.exists(), reason="needs ../shared/data")
TINY = ["--width", "16", "--batch-size", "32", "--eval-samples", "200", "--log-every", "5",
        "--no-progress"]  # fmt: skip


def environment(cache: Path) -> dict:
    return {**os.environ, "GANSTEP_CACHE": str(cache), "OMP_NUM_THREADS": "1"}


def ganstep(*args, cache: Path, check: bool = True, timeout: float = 120, cwd=None,
            script: Path | None = None, cold: bool = False):  # fmt: skip
    """The ganstep command in a new process (or ``script``, a file that runs it with
    something changed first, given the same arguments). The process is forked from one
    that has imported torch and ganstep already (``helpers.launcher``), unless ``cold``
    (a new interpreter, ``python -m ganstep``: for what happens while it starts)."""
    entry = ["-m", "ganstep"] if script is None else [str(script)]
    proc = LAUNCHER.run([sys.executable, *entry, *map(str, args)], env=environment(cache),
                        cwd=cwd, timeout=timeout, cold=cold)  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


# the ganstep command with Python's, numpy's and torch's generators seeded first (the
# seed its first argument): an audited script's own draws (its data, its pool's) the
# same in every run
SEEDED = """import random, sys
import numpy, torch
seed = int(sys.argv.pop(1))
random.seed(seed); numpy.random.seed(seed); torch.manual_seed(seed)
from ganstep.cli import run
run()
"""


def seeded_ganstep(seed: int, *args, cache: Path, cwd=None, check: bool = True):
    """:func:`ganstep` with every generator seeded ``seed`` first (:data:`SEEDED`)."""
    wrapper = cache / "seeded_ganstep.py"
    wrapper.write_text(SEEDED)
    return ganstep(seed, *args, script=wrapper, cache=cache, cwd=cwd, check=check)


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def checkpoint(run: Path) -> dict:
    last = sorted((run / "checkpoints").glob("step_*.pt"))[-1]
    return torch.load(last, weights_only=True)


def assert_same_state(a: dict, b: dict) -> None:
    for key in ("G", "D", "ema"):
        assert (a[key] is None) == (b[key] is None), key
        for name, value in (a[key] or {}).items():
            assert torch.equal(value, b[key][name]), f"{key}.{name}"
    for key in ("opt_g", "opt_d"):
        for pid, state in a[key]["state"].items():
            for name, value in state.items():
                assert torch.equal(value, b[key]["state"][pid][name]), f"{key}.{pid}.{name}"
    assert_same_tree(a["step_state"], b["step_state"])


def assert_same_tree(a: object, b: object, where: str = "step_state") -> None:
    """Equal nested dicts and lists, tensors compared exactly."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for key in a:
            assert_same_tree(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_tree(x, y, f"{where}[{i}]")
    else:
        assert a == b, where
