"""Your own DCGAN loop replayed from CUDA graphs (``ganstep.GraphedStep``), with a
learning rate that decays and a checkpoint to go on from: what a graph needs, in one file.

    python examples/cuda_graph_dcgan.py --steps 1000             # from CUDA graphs on a GPU
    python examples/cuda_graph_dcgan.py --steps 2000 --resume    # on from the checkpoint
    python examples/cuda_graph_dcgan.py --steps 1000 --no-graph  # the same loop, eager

Without CUDA the loop runs eagerly. A graph replays one captured iteration's kernels with
the memory and the numbers they had, so whatever changes between iterations lives in
tensors on the device, changed in place:

- Adam is capturable, its learning rate a tensor on the device that ``set_rate`` fills
  in place (a float rate changed later would not reach the replays: ganstep raises);
- z is drawn on the device from a generator registered with the graphs;
- each batch is copied into the graph's own input (GraphedStep does it: call it as the
  Step is called).

Restoring a checkpoint needs nothing more: loading a state into the Step or the
optimizers puts new tensors where the graphs read the old ones, and GraphedStep then
captures again.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

from ganstep import GraphedStep, Step, d_first
from ganstep.trainer.data import load_dataset
from ganstep.trainer.models import build_models, image_size

LR = 2e-4


def set_rate(optimizers: list[torch.optim.Optimizer], rate: float) -> None:
    """Each group's learning rate, in place where it is a tensor (what a graph reads)."""
    for opt in optimizers:
        for group in opt.param_groups:
            if isinstance(group["lr"], torch.Tensor):
                group["lr"].fill_(rate)
            else:
                group["lr"] = rate


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="digits", help="digits (built in), mnist, ...")
    parser.add_argument("--data-dir", help="folder with the official MNIST files")
    parser.add_argument("--steps", type=int, default=1000, help="GAN iterations in all")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--no-graph", action="store_true", help="run each iteration eagerly")
    parser.add_argument("--checkpoint", type=Path, default=Path("cuda_graph_dcgan.pt"))
    parser.add_argument("--resume", action="store_true", help="go on from --checkpoint")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    graphs = device.type == "cuda" and not args.no_graph
    data = load_dataset(args.data, args.data_dir)
    data.fit(image_size(data.sample_shape))
    torch.manual_seed(0)
    G, D = (m.to(device) for m in build_models("dcgan", data.sample_shape, "ns", 64, args.width))

    def adam(module: torch.nn.Module) -> torch.optim.Adam:
        # capturable: Adam keeps its step count on the device, and its rate a tensor there
        lr = torch.tensor(LR, device=device) if graphs else LR
        return torch.optim.Adam(module.parameters(), lr, betas=(0.5, 0.999), capturable=graphs)

    opt_g, opt_d = adam(G), adam(D)
    z_gen = torch.Generator(device=device).manual_seed(1)
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=d_first(),
                latent=lambda n: torch.randn(n, 64, generator=z_gen, device=device))  # fmt: skip
    parts = {"G": G, "D": D, "opt_g": opt_g, "opt_d": opt_d, "step": step}
    i = 0
    if args.resume:
        saved = torch.load(args.checkpoint, map_location=device, weights_only=False)
        for name, part in parts.items():
            part.load_state_dict(saved[name])
        z_gen.set_state(saved["z_gen"].cpu())
        i = saved["iteration"]
    loader = DataLoader(TensorDataset(data.train), args.batch_size, shuffle=True, drop_last=True,
                        generator=torch.Generator().manual_seed(2 + i),
                        pin_memory=device.type == "cuda")  # fmt: skip
    run = step
    while i < args.steps:
        for (real,) in loader:
            real = real.to(device, non_blocking=True)
            if graphs and run is step:  # built on the first batch: its shapes are the graph's
                run = GraphedStep(step, real, generators=[z_gen])
            set_rate([opt_g, opt_d], LR * (1 - i / args.steps))  # linear decay to 0
            logs = run(real)
            i += 1
            if i % 100 == 0 or i == args.steps:
                print(f"step {i}: " + ", ".join(f"{k} {v.item():.3f}" for k, v in logs.items()))
            if i == args.steps:
                break
    state = {name: part.state_dict() for name, part in parts.items()}
    torch.save({**state, "z_gen": z_gen.get_state(), "iteration": i}, args.checkpoint)
    print(f"{'CUDA graphs' if graphs else 'eager'}: {i} iterations; saved {args.checkpoint}")


if __name__ == "__main__":
    main()
