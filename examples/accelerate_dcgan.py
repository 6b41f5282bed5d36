"""The README's MNIST DCGAN run (`ganstep train --data mnist --model dcgan`) under
Hugging Face Accelerate, exact under data parallelism through ganstep.accelerate.

    python examples/accelerate_dcgan.py --data-dir ../shared/data             # 1 process
    torchrun --nproc_per_node 2 examples/accelerate_dcgan.py --data-dir ../shared/data
    accelerate launch --multi_gpu --num_processes 2 examples/accelerate_dcgan.py \
        --data-dir ../shared/data

(`--multi_gpu` is Accelerate's multi-process launcher, on CPU too; `--cpu` would start one
process.)

Each process draws its own z (and, reseeded by ``prepare``, its own global stream);
the Step all-reduces each phase and BatchNorm's statistics are averaged after each
iteration; rank 0 logs the losses to TensorBoard (accelerate_logs/) and saves the
state at the end (accelerate_state/).
"""

from __future__ import annotations

import argparse

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

from ganstep import d_first
from ganstep.accelerate import log, prepare
from ganstep.engine.distributed import SEED_STRIDE
from ganstep.trainer.data import load_dataset
from ganstep.trainer.models import build_models, image_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="mnist", help="mnist, fashion-mnist, digits, ...")
    parser.add_argument("--data-dir", help="folder with the official MNIST files")
    parser.add_argument("--steps", type=int, default=5000, help="GAN iterations")
    parser.add_argument("--batch-size", type=int, default=64, help="per process")
    parser.add_argument("--z-dim", type=int, default=64)
    parser.add_argument("--no-tensorboard", action="store_true", help="log nowhere")
    args = parser.parse_args()
    # cpu=True: Accelerate's multi-CPU mode (gloo) when launched as several processes
    accelerator = Accelerator(cpu=True, log_with=None if args.no_tensorboard else "tensorboard",
                              project_dir="accelerate_logs")  # fmt: skip
    if not args.no_tensorboard:
        accelerator.init_trackers("dcgan", config=vars(args))
    data = load_dataset(args.data, args.data_dir)
    data.fit(image_size(data.sample_shape))
    torch.manual_seed(0)  # the same models in every process (the Step broadcasts rank 0's)
    G, D = build_models("dcgan", data.sample_shape, "ns", args.z_dim, 32)
    betas = (0.5, 0.999)
    opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=betas)
    opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=betas)
    gen = torch.Generator().manual_seed(1 + SEED_STRIDE * accelerator.process_index)

    def latent(n: int) -> torch.Tensor:
        return torch.randn(n, args.z_dim, generator=gen).to(accelerator.device)

    loader = DataLoader(TensorDataset(data.train), batch_size=args.batch_size, shuffle=True,
                        drop_last=True)  # fmt: skip
    step, loader = prepare(accelerator, G, D, opt_g, opt_d, loader, objective="ns",
                           schedule=d_first(), latent=latent)  # fmt: skip
    accelerator.register_for_checkpointing(step)  # the Step's own state in save_state
    for i, real in enumerate(step.feed(loader, args.steps)):
        logs = step(real)
        if (i + 1) % 50 == 0 or i + 1 == args.steps:
            log(accelerator, logs, i + 1)
            accelerator.print(
                f"step {i + 1}: " + ", ".join(f"{k} {v.item():.3f}" for k, v in logs.items())
            )
    accelerator.save_state("accelerate_state")
    accelerator.end_training()


if __name__ == "__main__":
    main()
