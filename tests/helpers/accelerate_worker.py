"""Run under torchrun (or alone): each case trains one epoch through ganstep.accelerate
and saves this process's parameters to OUT/CASE-rankR.pt."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ganstep.accelerate import log, prepare  # noqa: E402
from ganstep.engine.distributed import SEED_STRIDE, exit_now  # noqa: E402
from helpers.integration import (  # noqa: E402
    BATCH,
    Z,
    data,
    models,
    optimizers,
    options,
)

CASES = {"d_first": ("d_first", 0.0), "simultaneous": ("simultaneous", 0.0),
         "d_first_r1": ("d_first", 1.0)}  # fmt: skip


def run(accelerator: Accelerator, name: str, out: Path) -> None:
    schedule, r1 = CASES[name]
    G, D = models(batchnorm=True)
    opt_g, opt_d = optimizers(G, D)
    gen = torch.Generator().manual_seed(SEED_STRIDE * accelerator.process_index + 1)

    def latent(n: int) -> torch.Tensor:
        return torch.randn(n, Z, generator=gen, dtype=torch.float64)

    loader = DataLoader(TensorDataset(data()), batch_size=BATCH, shuffle=False)
    step, loader = prepare(accelerator, G, D, opt_g, opt_d, loader, latent=latent,
                           **options(schedule, r1))  # fmt: skip
    for i, real in enumerate(step.feed(loader, len(loader))):
        log(accelerator, step(real), i + 1)
    params = [p.detach().clone() for p in [*G.parameters(), *D.parameters()]]
    torch.save(params, out / f"{name}-rank{accelerator.process_index}.pt")


if __name__ == "__main__":
    out = Path(sys.argv[1])
    accelerator = Accelerator(cpu=True)  # CPU processes: Accelerate's MULTI_CPU (gloo)
    for name in CASES:
        run(accelerator, name, out)
    accelerator.wait_for_everyone()
    accelerator.end_training()  # destroys the process group
    exit_now()  # gloo may abort while the interpreter finalises: see its docstring
