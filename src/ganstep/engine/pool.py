"""A pool of past fakes for D's steps (Shrivastava et al., 2017), as CycleGAN's
``ImagePool`` keeps it.

``Step(fake_pool=50)``: every D step sees, in place of each fake sample, either that
sample or (once the pool is full, with probability 1/2) a random earlier one, which the
new sample replaces in the pool. The draws come from Python's ``random`` module, as
CycleGAN's do, so a loop and a Step seeded alike draw alike. G's steps always see the
fresh fakes. The pool is part of ``Step.state_dict()``.
"""

from __future__ import annotations

import random

import torch
from torch import Tensor

from .checks import positive_int


class FakePool:
    """Up to ``size`` past fake samples, detached."""

    def __init__(self, size: int) -> None:
        self.size = positive_int(size, "fake_pool")
        self.images: list[Tensor] = []

    def query(self, fakes: Tensor) -> Tensor:
        """The batch D sees in place of ``fakes``: sample by sample, a fake while the pool
        fills; then with probability 1/2 a stored one (swapped out for the new fake),
        else the new fake itself."""
        out = []
        for image in fakes.detach():
            image = image.unsqueeze(0)
            if len(self.images) < self.size:
                self.images.append(image)
                out.append(image)
            elif random.uniform(0, 1) > 0.5:
                index = random.randint(0, self.size - 1)
                out.append(self.images[index].to(image.device).clone())
                self.images[index] = image
            else:
                out.append(image)
        return torch.cat(out, 0)

    def state_dict(self) -> dict:
        return {"size": self.size, "images": [t.cpu() for t in self.images]}

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state, dict) or set(state) != {"size", "images"}:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"fake pool state needs the keys 'size' and 'images'; got {got}")
        if state["size"] != self.size or len(state["images"]) > self.size:
            raise ValueError(
                f"the saved fake pool holds up to {state['size']} fakes, this Step's {self.size}"
            )
        self.images = [torch.as_tensor(t) for t in state["images"]]  # moved when drawn

    def __repr__(self) -> str:
        return f"FakePool({self.size}, holding {len(self.images)})"
