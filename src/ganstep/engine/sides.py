"""A side: one player of the game (G or D) with what updates it.

A side owns its module (as the phases call it: eager or compiled), its optimizer, its
loss scaler (the ``Precision``'s scaler for this side) and, at any moment, its
trainable parameters: the ones the user lets train and no phase has switched off.

Walking a module's parameters costs a recursion over its submodules; a Step call asks
for them several times (its check that none was replaced, each backward's inputs, D
frozen for G's step), so each side keeps the list and walks again only after a module
registered a parameter or submodule (:class:`~ganstep.engine.autograd_calls.ParameterList`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .autograd_calls import ParameterList, backward_into
from .compiled import is_compiled, uncompiled
from .precision import Precision


def trainable(module: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``module`` that the user lets train (``requires_grad``)."""
    return [p for p in module.parameters() if p.requires_grad]


@contextmanager
def frozen(module: nn.Module) -> Iterator[None]:
    """Switch off weight gradients of ``module``; restore exactly the user's flags after."""
    with _frozen(trainable(module)):
        yield


@contextmanager
def _frozen(params: list[nn.Parameter]) -> Iterator[None]:
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


@dataclass(eq=False)
class Side:
    """G or D: ``name``, ``module``, ``optimizer`` and the ``precision`` whose loss
    scaler for this side scales its backward and guards its step."""

    name: str
    module: nn.Module
    optimizer: torch.optim.Optimizer
    precision: Precision
    # The ids of the parameters the optimizer holds, when it holds some of the module's
    # only (InfoGAN's info optimizer over G and D); None: all of them.
    held: frozenset[int] | None = None
    # Parameters the optimizer holds beside the module's, in neither G nor D: a head
    # this side's loss terms call (InfoGAN's Q head, which Natsu6767's optimG holds with
    # G's). Each backward of this side adds to them too, as the script's backward does.
    outside: tuple[nn.Parameter, ...] = ()
    # The module's parameters, walked again only after a registration.
    _listed: ParameterList = field(init=False, repr=False)
    # Whether the module is compiled: a backward that keeps its graph then runs with
    # AOTAutograd's donated buffers off (ganstep.engine.compiled)
    compiled: bool = field(init=False, repr=False)
    # The user's module itself (``module`` unless compiled): what a penalty's own forward
    # calls, since compiled code has no double backward
    eager: nn.Module = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._listed = ParameterList(self.module)
        self.compiled = is_compiled(self.module)
        self.eager = uncompiled(self.module)

    @property
    def key(self) -> str:
        """The precision's name for this side's scaler (and its checkpoint key)."""
        return self.name.lower()

    def all_params(self) -> list[nn.Parameter]:
        """Every parameter of the module, trainable or not (whether each trains is read
        at each use)."""
        return self._listed()

    def plain_params(self) -> bool:
        """Whether every parameter is a plain ``nn.Parameter`` (no tensor subclass)."""
        return self._listed.plain

    def params_moved(self) -> bool:
        """Whether a module registered a parameter or submodule since the last listing
        (one may have been replaced: the Step checks its optimizers again)."""
        return self._listed.moved()

    def module_params(self) -> list[nn.Parameter]:
        """The module's parameters this side trains now (not those ``outside`` it)."""
        held = self.held
        return [p for p in self.all_params()
                if p.requires_grad and (held is None or id(p) in held)]  # fmt: skip

    def params(self) -> list[nn.Parameter]:
        """The parameters this side trains now: the module's, and those ``outside``."""
        found = self.module_params()
        if self.outside:
            found += [p for p in self.outside if p.requires_grad]
        return found

    def frozen(self) -> AbstractContextManager[None]:
        """Switch off the module's weight gradients (as :func:`frozen`)."""
        return _frozen([p for p in self.all_params() if p.requires_grad])

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def backward(self, loss: Tensor, *, retain_graph: bool = False, also: Sequence[Tensor] = ()):
        """Add ``loss``'s gradient (scaled) to this side's parameters only, and to ``also``."""
        if not loss.requires_grad:
            raise ValueError(
                f"{self.name}'s loss does not depend on {self.name}'s trainable parameters "
                f"(it has no graph): does {self.name}'s forward use its layers, and are "
                "they left trainable (requires_grad=True)?"
            )
        scaled = self.precision.scale(loss, self.key)
        inputs = self.params()
        plain = self._listed.plain and not self.outside
        if also:
            inputs, plain = [*inputs, *also], False
        backward_into(scaled, inputs, retain_graph, plain, self.compiled)

    def factor(self, like: Tensor) -> Tensor:
        """This side's current loss scale, as a tensor on ``like``'s device."""
        return self.precision.factor(self.key, like)

    def step(
        self,
        sync: Callable[[list[nn.Parameter]], None] | None,
        before: Callable[[nn.Module], object] | None = None,
    ) -> None:
        """One optimizer step on the gradients its phase computed, after ``sync`` (which
        averages them across processes under data parallelism) and the user's
        ``before(module)`` hook (which sees them unscaled: gradient clipping)."""
        if sync is not None:  # (a head beside the module that no loss of this phase
            # reached, as in a lazy regularization step, has no gradient on any process)
            sync([*self.module_params(), *(p for p in self.outside if p.grad is not None)])
        if before is not None:
            self.precision.unscale(self.optimizer, self.key)
            before(self.module)
        self.precision.step(self.optimizer, self.key)
