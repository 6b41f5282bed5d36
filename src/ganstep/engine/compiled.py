"""G and D through ``torch.compile``, as a Step calls them.

AOTAutograd lets a compiled backward reuse the memory of tensors its forward saved
("donated buffers") and so refuses a backward that keeps the graph
(``retain_graph=True``): a second backward would read memory already reused. The
simultaneous order keeps D's graph on purpose: L_D's backward leaves D's forward on the
fake batch for L_G's backward to pass through again. Two things make that exact:

- D is compiled by a backend that compiles with donation off. Being a backend of its
  own, Dynamo never hands it code compiled with donation for another Step on the same
  model class (a compiled d_first Step's, say).
- A backward that keeps the graph runs with the refusal off: a backward that AOTAutograd
  compiled before its first run (dynamic shapes, after a second input shape) was never
  told it would run twice, and is refused even without donated buffers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import cache

import torch
from torch import nn

# one backend per name, so that Steps compiling with it share Dynamo's cache entries
_WITHOUT_DONATION: dict[str, Callable] = {}


def compiled(module: nn.Module, compile: bool | str, donate: bool = True) -> nn.Module:
    """``module`` through ``torch.compile`` (``True``: inductor; a string: that backend),
    or ``module`` itself for ``compile=False``. ``donate=False``: its backward may be run
    twice on one forward (see the module's docstring)."""
    if compile is False:
        return module
    if compile is True:
        backend = "inductor"
    elif not isinstance(compile, str):
        raise TypeError(f"compile must be True, False or a backend name, got {compile!r}")
    else:
        backends = torch.compiler.list_backends(exclude_tags=())
        if compile not in backends:
            raise ValueError(f"compile: unknown backend {compile!r}; choose one of {backends}")
        backend = compile
    if donate or not _has_donation() or backend == "eager":  # eager: no AOTAutograd
        return torch.compile(module, backend=backend)
    return torch.compile(module, backend=_without_donation(backend))


def donation_off() -> AbstractContextManager[object]:
    """AOTAutograd's donated buffers (and its refusal of a kept graph) off, inside."""
    if not _has_donation():
        return nullcontext()
    return torch._functorch.config.patch(donated_buffer=False)


def is_compiled(module: nn.Module) -> bool:
    """Whether ``module`` is ``torch.compile``'s wrapper (Dynamo is not imported for
    the question: a module compiled has imported it)."""
    dynamo = sys.modules.get("torch._dynamo.eval_frame")
    return dynamo is not None and isinstance(module, dynamo.OptimizedModule)


def uncompiled(module: nn.Module) -> nn.Module:
    """The user's own module behind ``torch.compile``'s wrapper (``module`` if not
    compiled): what messages name layers by (``net.3``, not ``_orig_mod.net.3``)."""
    return module._orig_mod if is_compiled(module) else module


@cache  # asked at each kept-graph backward of a compiled Step
def _has_donation() -> bool:
    """torch < 2.6 has no donated buffers, and so nothing to turn off."""
    import torch._functorch.config  # not imported by ``import torch``

    return hasattr(torch._functorch.config, "donated_buffer")


def _without_donation(name: str) -> Callable:
    """The backend ``name`` compiling with donated buffers off."""
    if name not in _WITHOUT_DONATION:
        inner = torch._dynamo.lookup_backend(name)

        def backend(graph: torch.fx.GraphModule, example_inputs: list) -> Callable:
            with donation_off():
                return inner(graph, example_inputs)

        backend.__name__ = f"{name}_without_donated_buffers"
        _WITHOUT_DONATION[name] = backend
    return _WITHOUT_DONATION[name]
