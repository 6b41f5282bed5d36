"""Backward passes and parameter lists at the host cost of a hand-written loop.

A Step names the inputs of every backward pass (so no gradient leaks into a side not
about to step), and ``torch.autograd.backward(inputs=...)`` checks each input in Python
(two calls per parameter, every pass). :func:`backward_into` runs the same engine call
that function ends in, with the same implicit gradient of a scalar loss; anything it is
not sure of (a non-scalar, a tensor subclass, a torch without that entry, and a
``torch.autograd.backward`` that someone wrapped, as ``ganstep audit`` does to see every
backward call) goes through ``torch.autograd.backward`` itself.

Walking a module's parameters recurses over its submodules (a few dozen Python calls
for a DCGAN). :class:`ParameterList` walks once and again only after some module
registered a parameter or a submodule (``G.fc = nn.Linear(...)``, a parametrization):
torch's global registration hooks count those, so a steady iteration walks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .compiled import donation_off

try:  # what torch.autograd.backward calls once its Python checks are done
    from torch.autograd.graph import _engine_run_backward
except ImportError:  # pragma: no cover - an older or newer torch without it
    _engine_run_backward = None
_BACKWARD = torch.autograd.backward  # as torch defines it; a wrapper must see every call

# Parameters and submodules registered anywhere since ganstep first listed a module's
# parameters: a plan that holds parameter lists is valid while this stays as it was.
REGISTRATIONS = [0]
_hooked = [False]


def _count(*_: object) -> None:
    REGISTRATIONS[0] += 1


def _hook_registrations() -> None:
    if not _hooked[0]:
        _hooked[0] = True
        nn.modules.module.register_module_parameter_registration_hook(_count)
        nn.modules.module.register_module_module_registration_hook(_count)


class ParameterList:
    """``module.parameters()`` as a list, walked again only after a registration."""

    def __init__(self, module: nn.Module) -> None:
        _hook_registrations()
        self.module = module
        self._seen = -1
        self._params: list[nn.Parameter] = []
        # every parameter a plain nn.Parameter (no tensor subclass): backward_into may
        # skip torch.autograd.backward's checks for them
        self.plain = True

    def moved(self) -> bool:
        """Whether some module registered a parameter or submodule since the last walk."""
        return self._seen != REGISTRATIONS[0]

    def __call__(self) -> list[nn.Parameter]:
        if self._seen != REGISTRATIONS[0]:
            self._params = list(self.module.parameters())
            self.plain = all(type(p) is nn.Parameter for p in self._params)
            self._seen = REGISTRATIONS[0]
        return self._params


def backward_into(
    loss: Tensor,
    inputs: Sequence[Tensor],
    retain_graph: bool = False,
    plain: bool = False,
    compiled: bool = False,
) -> None:
    """``torch.autograd.backward(loss, inputs=inputs, retain_graph=retain_graph)``: the
    same gradients, added to ``inputs`` only. ``plain``: the caller knows every input is
    a plain tensor or parameter (no subclass with ``__torch_function__``); then the
    engine is called without the per-input Python. ``compiled``: the graph runs through
    compiled code, which refuses to keep it unless donated buffers are off
    (:mod:`ganstep.engine.compiled`)."""
    if retain_graph and compiled:
        with donation_off():
            backward_into(loss, inputs, retain_graph, plain)
        return
    if not (plain and _engine_run_backward is not None and type(loss) is Tensor
            and loss.dim() == 0 and torch.autograd.backward is _BACKWARD):  # fmt: skip
        torch.autograd.backward(loss, inputs=list(inputs), retain_graph=retain_graph)
        return
    grad = torch.ones_like(loss, memory_format=torch.preserve_format)
    _engine_run_backward(
        (loss,), (grad,), retain_graph, False, tuple(inputs),
        allow_unreachable=True, accumulate_grad=True,
    )  # fmt: skip
