"""Mixed precision for a GAN step: autocast for the forwards, a loss scaler per optimizer.

``fp16`` needs loss scaling. PyTorch's ``GradScaler`` allows one ``step`` per optimizer
between two ``update`` calls, and a GAN iteration may step D several times (n_critic)
and mixes backward passes of two losses. So each optimizer gets its own scaler, and
each optimizer step is followed by its scaler's update: a step with an overflow is
skipped and only that scaler backs off, whatever the schedule.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor

from .registry import check_name

DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
# what autocast casts to: D's scores in these are taken to float32 for the losses (a
# float64 model's stay float64: autocast leaves float64 alone, and so does the Step)
REDUCED = (torch.bfloat16, torch.float16)


class Precision:
    """Autocast and loss scaling for one device type.

    Args:
        name: ``fp32`` (nothing changes), ``bf16`` (autocast to bfloat16, no scaling) or
            ``fp16`` (autocast to float16 with a gradient scaler per optimizer).
        device_type: ``"cpu"`` or ``"cuda"``, where the models live.
    """

    def __init__(self, name: str = "fp32", device_type: str = "cpu") -> None:
        check_name("precision", name, DTYPES)
        self.name, self.device_type, self.dtype = name, device_type, DTYPES[name]
        if self.dtype is not None and not torch.amp.is_autocast_available(device_type):
            raise ValueError(f"precision {name!r}: autocast is not available on {device_type}")
        self.scalers: dict[str, torch.amp.GradScaler] = {}
        if name == "fp16":
            self.scalers = {who: torch.amp.GradScaler(device_type) for who in ("d", "g")}

    def add_scaler(self, who: str) -> None:
        """A loss scaler for one more optimizer (InfoGAN's info step), under fp16."""
        if self.name == "fp16":
            self.scalers[who] = torch.amp.GradScaler(self.device_type)

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        """Run the forwards of a phase in the chosen precision (no-op for fp32).

        Its weight casts end with it, as an outermost autocast block's do, even inside a
        block of the caller's (``enabled=False``, or for another device): torch keeps
        them until the outermost block ends, and the next phase, after an optimizer
        step, would read them stale."""
        if self.dtype is None:
            yield
            return
        try:
            with torch.autocast(self.device_type, dtype=self.dtype):
                yield
        finally:
            torch.clear_autocast_cache()

    def scale(self, loss: Tensor, who: str) -> Tensor:
        """The loss to call backward on for ``who`` (``"d"`` or ``"g"``)."""
        scaler = self.scalers.get(who)
        return loss if scaler is None else scaler.scale(loss)

    def factor(self, who: str, like: Tensor) -> Tensor:
        """The current scale of ``who``'s gradients as a tensor on ``like``'s device (1
        without scaling); read without a host sync."""
        one = torch.ones((), dtype=torch.float32, device=like.device)
        scaler = self.scalers.get(who)
        return one if scaler is None else scaler.scale(one)

    def unscale(self, opt: torch.optim.Optimizer, who: str) -> None:
        """Bring ``opt``'s gradients to their true scale before its step (for a hook that
        clips them); a no-op without scaling."""
        scaler = self.scalers.get(who)
        if scaler is not None:
            scaler.unscale_(opt)

    def step(self, opt: torch.optim.Optimizer, who: str) -> None:
        """Step ``opt`` on its (possibly scaled) gradients; skip the step on overflow."""
        scaler = self.scalers.get(who)
        if scaler is None:
            opt.step()
            return
        scaler.step(opt)
        scaler.update()

    def state_dict(self) -> dict:
        return {who: s.state_dict() for who, s in self.scalers.items()}

    def load_state_dict(self, state: dict) -> None:
        if set(state) != set(self.scalers):
            raise ValueError(
                f"precision {self.name!r} keeps scaler states {sorted(self.scalers)}, "
                f"got {sorted(state)}"
            )
        for who, s in self.scalers.items():
            s.load_state_dict(state[who])

    def __repr__(self) -> str:
        return f"Precision({self.name!r}, {self.device_type!r})"
