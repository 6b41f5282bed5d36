"""Run under torchrun (or alone): each case trains one epoch through ganstep.accelerate
and saves this process's parameters to OUT/CASE-rankR.pt; then the docs' snippet (a
latent that reads the global stream, Dropout in D, BatchNorm in G) saves what each
process drew (OUT/noise-rankR.pt), and a Dropout D with WGAN-GP fed from a
DistributedSampler for two epochs saves its parameters (OUT/ddp-rankR.pt), for the
hand-written DDP loop to equal."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ganstep.accelerate import log, prepare  # noqa: E402
from ganstep.engine.d_profile import observing  # noqa: E402
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


def docs_snippet(accelerator: Accelerator, out: Path) -> None:
    """The docs' way: models from one seed, prepare, a latent reading the global stream."""
    G, D = models(batchnorm=True, dropout=True)
    opt_g, opt_d = optimizers(G, D)
    drawn: dict = {}

    def latent(n: int) -> torch.Tensor:
        z = torch.randn(n, Z, dtype=torch.float64)
        drawn.setdefault("z", z.clone())
        return z

    def mask(module, args, output) -> None:
        if not observing():  # the Step's one-time look at D draws from a fixed seed
            drawn.setdefault("dropout", (output == 0) & (args[0] != 0))

    D[2].register_forward_hook(mask)
    loader = DataLoader(TensorDataset(data()), batch_size=BATCH, shuffle=False)
    step, loader = prepare(accelerator, G, D, opt_g, opt_d, loader, latent=latent,
                           **options("d_first", 0.0))  # fmt: skip
    for real in step.feed(loader, len(loader)):
        step(real)
    drawn["buffers"] = [b.clone() for b in G.buffers()]
    torch.save(drawn, out / f"noise-rank{accelerator.process_index}.pt")


def ddp_loop_twin(accelerator: Accelerator, out: Path) -> None:
    """tests/helpers/ddp_reference.py's loop (Dropout D, WGAN-GP, two epochs of a
    shuffled DistributedSampler), through prepare and step.feed."""
    rank, world = accelerator.process_index, accelerator.num_processes
    G, D = models(batchnorm=False, dropout=True)
    opt_g, opt_d = optimizers(G, D)
    gen = torch.Generator().manual_seed(SEED_STRIDE * rank + 1)
    dataset = TensorDataset(data())
    sampler = DistributedSampler(dataset, world, rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
    step, _ = prepare(
        accelerator,
        G,
        D,
        opt_g,
        opt_d,
        None,
        objective="wgan_gp",
        schedule="d_first",
        latent=lambda n: torch.randn(n, Z, generator=gen, dtype=torch.float64),
    )
    for real in step.feed(loader, 2 * len(loader)):  # feed moves the sampler's epoch
        step(real)
    params = [p.detach().clone() for p in [*G.parameters(), *D.parameters()]]
    torch.save(params, out / f"ddp-rank{rank}.pt")


if __name__ == "__main__":
    out = Path(sys.argv[1])
    accelerator = Accelerator(cpu=True)  # CPU processes: Accelerate's MULTI_CPU (gloo)
    for name in CASES:
        run(accelerator, name, out)
    docs_snippet(accelerator, out)
    ddp_loop_twin(accelerator, out)
    accelerator.wait_for_everyone()
    accelerator.end_training()  # destroys the process group
    exit_now()  # gloo may abort while the interpreter finalises: see its docstring
