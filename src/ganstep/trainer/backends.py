"""The CUDA backend settings of a run, set for its length and put back after it.

- cuDNN autotuning (``torch.backends.cudnn.benchmark``) for the image models: their
  shapes are the same at every step of a run, so the first step's search for the
  fastest convolution algorithms pays off over the rest (the MLP has no convolution).
- TF32 only when asked (``--tf32``): it rounds the inputs of float32 matrix products and
  convolutions to 10 bits of mantissa, faster on Ampere and later GPUs but no longer
  the float32 arithmetic that the reference loops, the tests' equalities and a CPU run
  compute. StyleGAN2-ADA makes the same choice: its ``train.py`` leaves
  ``--allow-tf32`` off unless given, and its training loop sets both flags below from
  it. PyTorch's own default allows TF32 in cuDNN's convolutions (not in matmuls), so
  "off" is set here explicitly.

On a CPU nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

IMAGE_MODELS = ("dcgan", "began")


def settings(model: str, tf32: bool) -> dict[str, bool]:
    """The flags a CUDA run of ``model`` sets, by name."""
    return {"cudnn.benchmark": model in IMAGE_MODELS, "cudnn.allow_tf32": tf32,
            "cuda.matmul.allow_tf32": tf32}  # fmt: skip


def _flags() -> dict[str, tuple[object, str]]:
    backends = torch.backends
    return {"cudnn.benchmark": (backends.cudnn, "benchmark"),
            "cudnn.allow_tf32": (backends.cudnn, "allow_tf32"),
            "cuda.matmul.allow_tf32": (backends.cuda.matmul, "allow_tf32")}  # fmt: skip


@contextmanager
def cuda_backends(model: str, tf32: bool, device: torch.device) -> Iterator[dict[str, bool]]:
    """Set a run's backend flags on CUDA for the block; restore what they were after.
    Yields the flags set (empty on a CPU)."""
    if device.type != "cuda":
        yield {}
        return
    wanted = settings(model, tf32)
    flags = _flags()
    before = {name: getattr(owner, attr) for name, (owner, attr) in flags.items()}
    try:
        for name, value in wanted.items():
            owner, attr = flags[name]
            setattr(owner, attr, value)
        yield wanted
    finally:
        for name, value in before.items():
            owner, attr = flags[name]
            setattr(owner, attr, value)
