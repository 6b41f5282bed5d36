"""A FLOP counter that works on any training loop, penalties included.

``torch.utils.flop_counter.FlopCounterMode`` attributes FLOPs to modules with a
module tracker whose backward hooks cannot handle ``torch.autograd.grad`` taken with
respect to a leaf input fed to a module (every WGAN-GP and R1 penalty written the
usual way): the loop dies with "A leaf node was passed to _will_engine_execute_node".
The audit only needs the total, so this counter keeps FlopCounterMode's dispatch
(decompositions, the FLOP formulas) and drops the module tracking.
"""

from __future__ import annotations

from torch.utils.flop_counter import FlopCounterMode


class _NoModules:
    """Stands in for FlopCounterMode's module tracker: every FLOP goes to "Global"."""

    parents = ("Global",)

    def __enter__(self) -> _NoModules:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class TotalFlops(FlopCounterMode):
    """``FlopCounterMode(display=False)`` counting only the total, with no module hooks.

    Use as a context manager; ``get_total_flops()`` gives the FLOPs run inside it.
    """

    def __init__(self) -> None:
        super().__init__(display=False)
        self.mod_tracker = _NoModules()
