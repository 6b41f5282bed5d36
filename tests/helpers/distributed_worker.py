"""Run under torchrun by tests/test_distributed.py: a few data parallel steps per case.

Each process saves its final parameters to OUT/case-rank.pt. Batches and z are cut
from global ones, so that one process on the concatenated batch sees the same data.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.distributed as dist

from ganstep.engine.distributed import exit_now

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import CASES, run_case  # noqa: E402

if __name__ == "__main__":
    out = Path(sys.argv[1])
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    for name in CASES:
        params, logs = run_case(name, rank, world)
        torch.save({"params": params, "logs": logs}, out / f"{name}-{rank}.pt")
    dist.barrier()  # nobody tears down the group while another process still uses it
    dist.destroy_process_group()
    exit_now()  # gloo may abort while the interpreter finalises: see its docstring
