"""What a CUDA graph would replay of an iteration, rehearsed on the CPU.

A CUDA graph replays the kernels its capture recorded, with the arguments they had
then; the Python that launched them does not run again. So an iteration replays as
it ran eagerly exactly when (a) it reads nothing back to the host (a host read fails
the capture), (b) it copies nothing from host memory (``torch.tensor(...)`` inside
the iteration: the copy fails the capture, or is frozen), (c) every value its
kernels take from the host (a float, an int, a shape) is the same at every
iteration of its kind, (d) it makes no tensor without naming its device (one made
on the host would be frozen or fail) and (e) it draws random numbers only from
generators the graph advances: the device's default one or those registered.

:class:`Rehearsal` records each ATen op an iteration dispatches with every argument
that is not a tensor's contents, so that (a)-(e) can be checked on the CPU: the
work of two iterations of one kind must be equal argument for argument. What it
cannot see: ops that read the host on CUDA alone (none in this code, by the CUDA
tests' sync check), and anything about streams and memory.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import warnings
import weakref
from collections.abc import Iterable

import torch
from torch import nn
from torch.optim import adam as torch_adam
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors
from torch.utils._python_dispatch import TorchDispatchMode

# Ops that read a device tensor back to the host (they sync, and fail a capture).
HOST_READS = {"_local_scalar_dense", "item", "is_nonzero", "nonzero", "masked_select",
              "unique", "_unique", "_unique2", "equal", "allclose"}  # fmt: skip
# The op behind torch.tensor(...) and Tensor.new_tensor(...): a copy from host memory.
HOST_COPIES = {"lift_fresh", "lift_fresh_copy"}
# Random ops (in place ones too: "normal_" is "normal" here).
RANDOM = {"randn", "rand", "randint", "randperm", "normal", "bernoulli", "uniform",
          "multinomial", "rand_like", "randn_like", "randint_like", "exponential",
          "random"}  # fmt: skip


PROXIES = (weakref.ProxyType, weakref.CallableProxyType)
TORCH = os.path.dirname(torch.__file__)
FACTORIES = _device_constructors()
WRAPPERS = tuple(os.path.join(TORCH, *p) for p in (("utils", "_device.py"), ("_dynamo",),
                 ("_compile.py",), ("overrides.py",)))  # fmt: skip
PLAIN = (bool, int, float, complex, str, torch.dtype, torch.device, torch.layout,
         torch.memory_format)  # fmt: skip


def _name(func) -> str:
    """'aten.mul.Tensor' -> 'mul'."""
    return func._schema.name.split("::")[-1]


def _seed(gen: torch.Generator) -> tuple:
    """A generator's name: the Python object is made anew at each dispatch."""
    return (gen.device.type, gen.initial_seed())


def _from_torch() -> bool:
    """Whether the op's caller is torch's own code (past this helper and torch's
    dispatch wrappers): its host tensors are torch's choice for the device at hand
    (Adam's ``torch.tensor(1.0)`` is made only where its step counts are on the CPU,
    as in this rehearsal; capturable Adam on CUDA adds 1 on the device)."""
    frame = sys._getframe(1)
    while frame is not None:
        file = frame.f_code.co_filename
        if file != __file__ and not file.startswith(WRAPPERS):
            return file.startswith(TORCH)
        frame = frame.f_back
    return False


class Rehearsal(TorchDispatchMode):
    """Record each op's name and arguments (tensors by shape, dtype and device;
    generators by seed; everything else by value) and what a graph cannot hold
    (``problems``). ``generators``: those the graph is told to advance."""

    def __init__(
        self, generators: Iterable[torch.Generator] = (), state: frozenset[int] = frozenset()
    ) -> None:
        super().__init__()
        self.ops: list[tuple] = []
        self.problems: list[str] = []
        self.generators = {_seed(g) for g in generators}
        self.state = state

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        self.ops.append((str(func), self._key(args), self._key(sorted(kwargs.items()))))
        if name in HOST_READS:
            self.problems.append(f"{func} reads a device value on the host")
        if name in HOST_COPIES and not _from_torch():
            self.problems.append(f"{func}: a tensor copied from host memory (torch.tensor)")
        if name == "index" and any(
            t is not None and t.dtype == torch.bool for t in args[1]
        ):  # fmt: skip
            self.problems.append(f"{func} with a boolean mask (its size is read on the host)")
        gen = kwargs.get("generator")
        if name.rstrip("_") in RANDOM:
            if gen is not None and _seed(gen) not in self.generators:
                self.problems.append(f"{func} draws from a generator the graph does not advance")
        return func(*args, **kwargs)

    def _key(self, value):
        if isinstance(value, torch.Tensor):
            # a tensor that outlives iterations is read where it is (a graph reads that
            # memory): named by identity, so a replaced one is other work
            held = ("state", id(value)) if id(value) in self.state else ("tensor",)
            return (*held, tuple(value.shape), value.dtype, value.device.type)
        if isinstance(value, torch.Generator):
            return ("generator", _seed(value))
        if isinstance(value, list | tuple):
            return tuple(self._key(v) for v in value)
        if value is None or isinstance(value, PLAIN):
            return value
        return type(value).__name__  # a profiler range's handle, an opaque object

    def __enter__(self):
        self._unplaced = _Unplaced(self.problems)
        self._unplaced.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        out = super().__exit__(*exc)
        self._unplaced.__exit__(*exc)
        return out


class _Unplaced(TorchFunctionMode):
    """Notes each tensor made by a factory (torch.zeros, torch.tensor, torch.randn...)
    without a device: on CUDA it would be made on the host. An empty one holds no value."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__()
        self.problems = problems

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in FACTORIES and kwargs.get("device") is None and not _from_torch():
            if isinstance(out, torch.Tensor) and out.numel():
                self.problems.append(f"torch.{func.__name__} made a tensor without a device")
        return out


def live_tensors() -> tuple[list[torch.Tensor], frozenset[int]]:
    """Every tensor alive now but parameters' gradients (a graph makes those anew
    inside it), and their identities; hold the list while the identities are used."""
    with warnings.catch_warnings():  # isinstance on torch.distributed's deprecated names
        warnings.simplefilter("ignore")
        # isinstance on a weak proxy whose object is gone raises ReferenceError (an
        # earlier test's leftover, seen in the whole suite under torch 2.11)
        tensors = [t for t in gc.get_objects()
                   if type(t) not in PROXIES and isinstance(t, torch.Tensor)]  # fmt: skip
    grads = {id(t.grad) for t in tensors if isinstance(t, nn.Parameter) and t.grad is not None}
    held = [t for t in tensors if id(t) not in grads]
    return held, frozenset(id(t) for t in held)


def capturable_on_cpu(monkeypatch) -> None:
    """Let ``Adam(capturable=True)`` run on the CPU, as it runs on CUDA (step count and
    bias corrections on the device, the rate a tensor): torch allows it only on
    devices with graphs."""
    supported = torch_adam._get_capturable_supported_devices

    def with_cpu(supports_xla: bool = True) -> list[str]:
        return [*supported(supports_xla), "cpu"]

    monkeypatch.setattr(torch_adam, "_get_capturable_supported_devices", with_cpu)


class _NoStream:
    """torch.cuda's streams where there is no CUDA: nothing to order."""

    def wait_stream(self, other) -> None:
        pass


class _NoGraph:
    def register_generator_state(self, gen) -> None:
        pass

    def replay(self) -> None:
        """Nothing but a count: a stand-in capture records nothing (for what happens
        around replays)."""
        REPLAYS.append(self)


CAPTURES: list[dict] = []  # the keyword arguments of each capture the stand-in saw
REPLAYS: list[_NoGraph] = []  # the stand-in graph of each replay


@contextlib.contextmanager
def _capture_invalidated(graph, **kwargs):
    """A capture that fails as CUDA fails one whose iteration did what a graph cannot
    hold (the error comes at the capture's end, after the iteration's Python ran)."""
    CAPTURES.append(kwargs)
    yield
    raise RuntimeError("CUDA error: operation not permitted when stream is capturing")


@contextlib.contextmanager
def _capture_recorded(graph, **kwargs):
    """A capture that ends well (the stand-in graph replays nothing: for what happens
    up to a capture's end)."""
    CAPTURES.append(kwargs)
    yield


def captures_on_cpu(monkeypatch, fail: bool = False) -> None:
    """torch.cuda's streams and graphs stood in for on the CPU (capture's checks pass
    models on the CPU); with ``fail``, each capture fails: what a CUDA machine shows
    when an iteration does what a graph cannot hold."""
    # torch's compiler imported while torch.cuda.Stream is the real one: torch 2.5
    # imports it lazily, at an optimizer's first parameter group, and refuses to load
    # beside a stand-in stream ("should be inherit from _StreamBase")
    import torch._dynamo  # noqa: F401

    from ganstep.engine import cuda_graph

    capturable_on_cpu(monkeypatch)
    monkeypatch.setattr(cuda_graph, "check_capturable", lambda step: None)
    monkeypatch.setattr(torch.cuda, "Stream", _NoStream)
    monkeypatch.setattr(torch.cuda, "current_stream", _NoStream)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _NoGraph)
    monkeypatch.setattr(torch.cuda, "graph", _capture_invalidated if fail else _capture_recorded)


def captures_fail_on_cpu(monkeypatch) -> None:
    """:func:`captures_on_cpu`, each capture failing."""
    captures_on_cpu(monkeypatch, fail=True)


def training_captures_fail_on_cpu(monkeypatch) -> None:
    """:func:`training_captures_on_cpu`, each capture failing."""
    training_captures_on_cpu(monkeypatch, fail=True)


def training_captures_on_cpu(monkeypatch, fail: bool = False) -> None:
    """``ganstep train --device cpu`` run as a CUDA run is (graphed, its Adam
    capturable) unless ``--graph off``, with the stand-ins of :func:`captures_on_cpu`."""
    from ganstep.trainer import iteration, trainee

    captures_on_cpu(monkeypatch, fail)
    refusal = iteration.graph_refusal  # all but "CUDA graphs need a CUDA device"
    monkeypatch.setattr(
        iteration,
        "graph_refusal",
        lambda cfg, trainee: refusal(cfg, trainee) if cfg.graph == "off" else None,
    )
    monkeypatch.setattr(trainee, "adam_for_graphs", lambda device, cfg: cfg.graph != "off")
