"""The README's MNIST DCGAN run (`ganstep train --data mnist --model dcgan`) under
lightning.Trainer, exact under data parallelism through ganstep.lightning.

    python examples/lightning_dcgan.py --data-dir ../shared/data               # 1 process
    python examples/lightning_dcgan.py --data-dir ../shared/data --devices 2   # 2 CPU processes

Losses and a fixed-z sample grid each epoch go to TensorBoard (lightning_logs/). A
checkpoint is written when the run ends (lightning_logs/version_N/checkpoints/); it
carries the Step's state, every process's random streams and the loader's place in the
epoch, so `--resume PATH --steps M` continues it exactly: 20 steps, then resumed to 40,
end with the checkpoint of a straight 40 (tests/test_examples.py).
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
from torch.utils.data import TensorDataset

from ganstep import d_first
from ganstep.lightning import GANModule, GANStrategy, ResumableLoader
from ganstep.trainer.data import load_dataset
from ganstep.trainer.models import build_models, image_size


class DCGAN(GANModule):
    def __init__(self, shape: tuple[int, ...], z_dim: int = 64, width: int = 32) -> None:
        super().__init__(z_dim=z_dim, seed=0)
        torch.manual_seed(0)
        self.G, self.D = build_models("dcgan", shape, "ns", z_dim, width)

    def configure_optimizers(self):
        betas = (0.5, 0.999)
        return (torch.optim.Adam(self.G.parameters(), 2e-4, betas=betas),
                torch.optim.Adam(self.D.parameters(), 2e-4, betas=betas))  # fmt: skip

    def step_options(self) -> dict:
        return {"objective": "ns", "schedule": d_first()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="mnist", help="mnist, fashion-mnist, digits, ...")
    parser.add_argument("--data-dir", help="folder with the official MNIST files")
    parser.add_argument("--devices", type=int, default=1, help="CPU processes")
    parser.add_argument("--steps", type=int, default=5000, help="GAN iterations")
    parser.add_argument("--batch-size", type=int, default=64, help="per process")
    parser.add_argument("--resume", help="a checkpoint to continue from")
    args = parser.parse_args()
    data = load_dataset(args.data, args.data_dir)
    data.fit(image_size(data.sample_shape))
    # each epoch's order from seed + epoch, and its place saved with the checkpoint
    loader = ResumableLoader(TensorDataset(data.train), batch_size=args.batch_size,
                             shuffle=True, drop_last=True, seed=0)  # fmt: skip
    strategy = GANStrategy(start_method="spawn") if args.devices > 1 else "auto"
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy,
                        max_steps=args.steps, log_every_n_steps=50)  # fmt: skip
    trainer.fit(DCGAN(data.sample_shape), loader, ckpt_path=args.resume)


if __name__ == "__main__":
    main()
