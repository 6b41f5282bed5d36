"""The loop a data parallel GAN is written as without ganstep, for the Lightning tests:
pytorch/examples ``dcgan/main.py`` (``ganstep.reference.dcgan_example``) with G and D
each wrapped in ``DistributedDataParallel`` and the data in a ``DistributedSampler``
(seed 0, shuffled, ``set_epoch`` each epoch), as the PyTorch DDP tutorial has it.

Every process draws z from its own generator and reseeds the global stream (Dropout,
WGAN-GP's interpolation) by the formula the README gives for GANModule: rank r > 0
``seed + 1000003 * r``, z ``seed + 1000003 * r + 1``; rank 0 keeps the global stream
it was started with (after building the models, as the Lightning test's main process).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from ganstep import reference
from ganstep.engine.distributed import SEED_STRIDE

from .integration import BATCH, Z, data, models, optimizers


def _worker(rank: int, world: int, out: str, objective: str, epochs: int) -> None:
    # a file in the test's own folder for the rendezvous, not a port: a port found free
    # and closed may be taken by a process of a test running beside this one
    store = Path(out) / "rendezvous"
    dist.init_process_group("gloo", init_method=store.as_uri(), rank=rank, world_size=world)
    torch.set_num_threads(1)
    G, D = models(batchnorm=False, dropout=True)
    if rank:
        torch.manual_seed(SEED_STRIDE * rank)
    opt_g, opt_d = optimizers(G, D)
    G_ddp, D_ddp = DDP(G), DDP(D)
    gen = torch.Generator().manual_seed(SEED_STRIDE * rank + 1)

    def latent(n: int) -> torch.Tensor:
        return torch.randn(n, Z, generator=gen, dtype=torch.float64)

    dataset = TensorDataset(data())
    sampler = DistributedSampler(dataset, world, rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        reference.dcgan_example(G_ddp, D_ddp, opt_g, opt_d, (x for (x,) in loader), latent,
                                objective)  # fmt: skip
    torch.save([p.detach().clone() for p in [*G.parameters(), *D.parameters()]],
               Path(out) / f"ddp{rank}.pt")  # fmt: skip
    dist.barrier()
    dist.destroy_process_group()


def run(out: Path, objective: str, epochs: int, world: int = 2) -> list:
    """Rank 0's parameters after ``epochs`` epochs of the DDP loop (``out``: a folder of
    its own, new to it)."""
    out.mkdir(parents=True, exist_ok=True)
    mp.spawn(_worker, args=(world, str(out), objective, epochs), nprocs=world)
    return torch.load(out / "ddp0.pt")
