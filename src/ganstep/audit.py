"""ganstep audit: instrument anyone's GAN iteration and report passes, waste and hazards.

``audit(fn, G=G, D=D)`` runs ``fn()`` (one training iteration, written any way) under
instrumentation:

- forward hooks on G and D count forwards, their FLOPs and the parameter versions
  (optimizer steps taken so far) they ran at; a hook on each output counts the
  backward passes that reach it;
- ``torch.autograd.backward`` and ``torch.autograd.grad`` are wrapped for the run,
  so each backward call has a number, and hooks on every parameter record which
  backward calls fed its ``.grad`` since it was last cleared;
- a global optimizer step hook sees every ``step()`` and which gradients it used.

From that event log it derives the update order (from the versions at which the
stepped gradients were computed), the passes per iteration, the FLOPs spent on
gradients nobody stepped and on forwards recomputed identically, and hazards.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

INPLACE = "modified by an inplace operation"
SCHEDULE_FOR = {
    "d_first": "d_first()",
    "g_first": "g_first(reuse_z=True)",
    "simultaneous": "simultaneous()",
}


@dataclass
class _Forward:
    module: str
    iteration: int
    versions: tuple[int, int]  # (G steps, D steps) when it ran
    source: tuple[int, int] | None  # for D: versions of the G forward that made its input
    flops: int
    shape: tuple[int, ...]
    recomputed: bool = False
    input_key: tuple | None = None  # identifies the input tensor (storage, shape, version)


@dataclass
class _Backward:
    index: int
    iteration: int
    retain_graph: bool
    through: list[_Forward] = field(default_factory=list)
    produced: set[str] = field(default_factory=set)  # modules whose weight grads it computed
    used_by: set[str] = field(default_factory=set)  # modules whose optimizer stepped them
    roots: list[tuple] = field(default_factory=list)  # keys of the tensors it started from


@dataclass
class _Step:
    module: str
    iteration: int
    backwards: set[int]


@dataclass
class Report:
    """What ``audit`` found. ``forwards`` and ``backwards`` are per iteration."""

    order: str
    forwards: dict[str, float]
    backwards: dict[str, float]
    total_flops: int
    wasted_flops: int
    hazards: list[str]
    error: BaseException | None
    iterations: int
    schedule: str | None

    def as_dict(self) -> dict:
        """A JSON-ready dict (the error as its message)."""
        return {
            "order": self.order,
            "forwards": self.forwards,
            "backwards": self.backwards,
            "total_flops": self.total_flops,
            "wasted_flops": self.wasted_flops,
            "hazards": self.hazards,
            "error": None if self.error is None else f"{type(self.error).__name__}: {self.error}",
            "iterations": self.iterations,
            "schedule": self.schedule,
        }

    def __str__(self) -> str:
        per = max(1, self.iterations)
        total, wasted = self.total_flops / per / 1e9, self.wasted_flops / per / 1e9
        share = 100 * self.wasted_flops / self.total_flops if self.total_flops else 0.0
        lines = [
            f"ganstep audit: {self.iterations} iteration(s), update order: {self.order}",
            "  passes per iteration: "
            + ", ".join(
                f"{m} {self.forwards[m]:g} forward(s) / {self.backwards[m]:g} backward(s)"
                for m in ("G", "D")
            ),
            f"  FLOPs per iteration: {total:.4f} GFLOP, wasted {wasted:.4f} ({share:.1f}%)",
        ]
        if self.error is not None:
            lines.append(f"  error: {type(self.error).__name__}: {self.error}".splitlines()[0])
        lines.append("  hazards:" if self.hazards else "  hazards: none found")
        lines += [f"   - {h}" for h in self.hazards]
        if self.schedule:
            lines.append(
                f"  ganstep: schedule {self.schedule} computes this update with the fewest "
                f"passes; it would save about {wasted:.4f} GFLOP per iteration."
            )
        else:
            lines.append("  ganstep: no single ganstep schedule matches this update order.")
        return "\n".join(lines)


class _Auditor:
    def __init__(self, G: nn.Module, D: nn.Module) -> None:
        self.modules = {"G": G, "D": D}
        self.owner = {id(p): name for name, m in self.modules.items() for p in m.parameters()}
        self.steps = {"G": 0, "D": 0}
        self.iteration = 0
        self.forwards: list[_Forward] = []
        self.backwards: list[_Backward] = []
        self.opt_steps: list[_Step] = []
        self.events: list[tuple[str, object]] = []  # ("backward", b) / ("step", s), in order
        self.current: _Backward | None = None
        self.contrib: dict[int, set[int]] = {}  # param id -> backward indices in its .grad
        self.made_by_g: dict[tuple, tuple[int, int]] = {}  # G output key -> versions
        self.seen: set[tuple] = set()
        self.alive: list[Tensor] = []  # inputs kept alive so their addresses are not reused
        self.counter = FlopCounterMode(display=False)
        self.handles: list = []
        self.failed: _Backward | None = None

    # -- instrumentation -------------------------------------------------------------

    def flops(self) -> int:
        return self.counter.get_total_flops()

    @staticmethod
    def _key(t: Tensor) -> tuple:
        return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t._version)

    def _hook_module(self, name: str, module: nn.Module) -> None:
        start: list[int] = []

        def pre(mod, args):
            start.append(self.flops())

        def post(mod, args, out):
            x = args[0] if args and isinstance(args[0], Tensor) else None
            versions = (self.steps["G"], self.steps["D"])
            # the same input at the same own parameters, within one iteration: the same result
            key = (name, self.iteration, self.steps[name], self._key(x) if x is not None else None)
            if x is not None:
                self.alive.append(x.detach())
            made = self.made_by_g.get(self._key(x)) if x is not None else None
            source = made if name == "D" else None
            shape = tuple(x.shape) if x is not None else ()
            flops = self.flops() - start.pop()
            fwd = _Forward(name, self.iteration, versions, source, flops, shape,
                           input_key=self._key(x) if x is not None else None)  # fmt: skip
            fwd.recomputed = key in self.seen and x is not None
            self.seen.add(key)
            self.forwards.append(fwd)
            if isinstance(out, Tensor):
                if name == "G":
                    self.made_by_g[self._key(out)] = versions
                    self.alive.append(out.detach())

                def on_grad(grad):
                    if self.current is not None:
                        self.current.through.append(fwd)

                if out.requires_grad:
                    out.register_hook(on_grad)

        self.handles.append(module.register_forward_pre_hook(pre))
        self.handles.append(module.register_forward_hook(post))

    def _hook_params(self) -> None:
        for name, module in self.modules.items():
            for p in module.parameters():

                def on_param_grad(grad, p=p, name=name):
                    b = self.current
                    if b is None:
                        return grad
                    fresh = p.grad is None or not bool(p.grad.any())
                    if fresh:
                        self.contrib[id(p)] = set()
                    self.contrib.setdefault(id(p), set()).add(b.index)
                    b.produced.add(name)
                    return grad

                self.handles.append(p.register_hook(on_param_grad))

    def _step_hook(self, opt, args, kwargs) -> None:
        params = [p for g in opt.param_groups for p in g["params"]]
        names = {self.owner.get(id(p)) for p in params} - {None}
        if len(names) != 1:
            return  # an optimizer of something else, or of both: not a G or D step
        (name,) = names
        used = set()
        for p in params:
            if p.grad is not None:
                used |= self.contrib.get(id(p), set())
        step = _Step(name, self.iteration, used)
        self.opt_steps.append(step)
        self.events.append(("step", step))
        for b in self.backwards:
            if b.index in used:
                b.used_by.add(name)

    def _after_step(self, opt, args, kwargs) -> None:
        params = [p for g in opt.param_groups for p in g["params"]]
        names = {self.owner.get(id(p)) for p in params} - {None}
        if len(names) == 1:
            self.steps[names.pop()] += 1

    def _wrap(self, original: Callable) -> Callable:
        signature = inspect.signature(original)

        def wrapped(*args, **kwargs):
            bound = signature.bind(
                *args, **kwargs
            ).arguments  # Tensor.backward passes them positionally
            retain = bound.get("retain_graph")
            if retain is None:
                retain = bool(bound.get("create_graph", False))
            b = _Backward(len(self.backwards), self.iteration, bool(retain))
            roots = bound.get("tensors", bound.get("outputs"))
            roots = [roots] if isinstance(roots, Tensor) else list(roots or [])
            b.roots = [self._key(t) for t in roots if isinstance(t, Tensor)]
            self.backwards.append(b)
            self.events.append(("backward", b))
            outer, self.current = self.current, b
            try:
                return original(*args, **kwargs)
            except RuntimeError:
                self.failed = b
                raise
            finally:
                self.current = outer

        return wrapped

    def run(self, fn: Callable[[], object], iterations: int) -> BaseException | None:
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        for name, module in self.modules.items():
            self._hook_module(name, module)
        self._hook_params()
        self.handles.append(register_optimizer_step_pre_hook(self._step_hook))
        self.handles.append(register_optimizer_step_post_hook(self._after_step))
        saved = torch.autograd.backward, torch.autograd.grad
        torch.autograd.backward = self._wrap(saved[0])
        torch.autograd.grad = self._wrap(saved[1])
        error = None
        try:
            with self.counter:
                for self.iteration in range(iterations):
                    fn()
        except Exception as e:  # the report carries it
            error = e
        finally:
            torch.autograd.backward, torch.autograd.grad = saved
            for h in self.handles:
                h.remove()
        return error

    # -- analysis --------------------------------------------------------------------

    def weight_grad_flops(self, name: str, shape: tuple[int, ...]) -> int:
        """FLOPs of ``name``'s weight gradients in one backward at an input of ``shape``."""
        module = copy.deepcopy(self.modules[name])
        param = next(module.parameters())
        x = torch.randn(shape, dtype=param.dtype, device=param.device, requires_grad=True)

        def run(weights: bool) -> int:
            for p in module.parameters():
                p.requires_grad_(weights)
            with FlopCounterMode(display=False) as c:
                module(x).sum().backward()
            return c.get_total_flops()

        return run(True) - run(False)

    def order(self, iteration: int) -> str:
        """The update order, from the versions behind the stepped gradients."""
        steps = [s for s in self.opt_steps if s.iteration == iteration]
        d_steps = [s for s in steps if s.module == "D"]
        g_steps = [s for s in steps if s.module == "G"]
        if len(d_steps) != 1 or len(g_steps) != 1:
            return "other"
        base = self._base_versions(iteration)
        d_at = self._fake_versions(d_steps[0], base)
        g_at = self._fake_versions(g_steps[0], base)
        if d_at is None or g_at is None:
            return "other"
        return {
            ((0, 0), (0, 1)): "d_first",
            ((1, 0), (0, 0)): "g_first",
            ((0, 0), (0, 0)): "simultaneous",
        }.get((d_at, g_at), "other")

    def _base_versions(self, iteration: int) -> tuple[int, int]:
        firsts = [f.versions for f in self.forwards if f.iteration == iteration]
        return firsts[0] if firsts else (0, 0)

    def _fake_versions(self, step: _Step, base) -> tuple[int, int] | None:
        """(G, D) versions, relative to the iteration's start, of the D forwards on fake
        batches that the stepped gradient went through."""
        seen = set()
        mine = [b for b in self.backwards if b.index in step.backwards]
        for b in mine:
            for f in b.through:
                if f.module == "D" and f.source is not None:
                    seen.add((f.source[0] - base[0], f.versions[1] - base[1]))
        if not seen:
            # A backward that starts at a fake batch with a given gradient (the fused
            # step): that gradient was taken through D's forwards on the same batch.
            through = {id(f) for b in self.backwards for f in b.through}
            for b in mine:
                for f in self.forwards:
                    made = f.module == "D" and f.source is not None and id(f) in through
                    if made and f.iteration == step.iteration and f.input_key in b.roots:
                        seen.add((f.source[0] - base[0], f.versions[1] - base[1]))
        return seen.pop() if len(seen) == 1 else None


def audit(
    fn: Callable[[], object],
    *,
    G: nn.Module,
    D: nn.Module,
    opt_g: torch.optim.Optimizer | None = None,
    opt_d: torch.optim.Optimizer | None = None,
    iterations: int = 1,
) -> Report:
    """Run ``fn()`` ``iterations`` times under instrumentation and report on it.

    ``fn`` is one training iteration of G and D written any way. Optimizer steps are
    recognised by the parameters they hold (``opt_g``/``opt_d`` need not be given;
    when given they are checked to hold G's, resp. D's, parameters). An exception
    from ``fn`` ends the run and is kept in the report's ``error``.
    """
    if not isinstance(G, nn.Module) or not isinstance(D, nn.Module):
        raise TypeError("G and D must be torch.nn.Module instances")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
    for arg, opt, module in (("opt_g", opt_g, G), ("opt_d", opt_d, D)):
        if opt is None:
            continue
        held = {id(p) for g in opt.param_groups for p in g["params"]}
        if not held & {id(p) for p in module.parameters()}:
            raise ValueError(f"{arg} holds none of {arg[-1].upper()}'s parameters")
    auditor = _Auditor(G, D)
    error = auditor.run(fn, iterations)
    done = max(1, auditor.iteration + (error is None))
    return _report(auditor, error, done)


def _report(a: _Auditor, error: BaseException | None, iterations: int) -> Report:
    forwards = {m: sum(f.module == m for f in a.forwards) / iterations for m in ("G", "D")}
    backwards = {
        m: sum(f.module == m for b in a.backwards for f in b.through) / iterations
        for m in ("G", "D")
    }
    hazards: list[str] = []
    wasted = 0
    unstepped: dict[tuple[str, str], list[int]] = {}  # (module, other) -> FLOPs per case
    leaks = []
    for b in a.backwards:
        for m in b.produced - b.used_by:
            if error is not None and b.iteration == a.iteration:
                continue  # the run stopped before it could step them
            cost = sum(a.weight_grad_flops(m, f.shape) for f in b.through if f.module == m)
            wasted += cost
            other = "G" if m == "D" else "D"
            if other in b.used_by:
                unstepped.setdefault((m, other), []).append(cost)
        if len(b.used_by) == 2:
            leaks.append(b.index)
    for (m, other), costs in unstepped.items():
        hazards.append(
            f"{m}'s weight gradients were computed in {other}'s step and never stepped "
            f"({len(costs)} time(s), {sum(costs) / iterations / 1e9:.4f} GFLOP per iteration "
            f"wasted): switch {m}'s parameters off (requires_grad_(False)) during {other}'s step."
        )
    if leaks:
        hazards.append(
            f"the gradients of backward call(s) {', '.join(f'#{i}' for i in leaks)} were "
            "stepped by both G's and D's optimizer: one loss leaked into the other module's "
            "update; cut the graph with detach() or give each backward its inputs=."
        )
    recomputed: dict[str, list[int]] = {}
    for f in a.forwards:
        if f.recomputed:
            wasted += f.flops
            recomputed.setdefault(f.module, []).append(f.flops)
    for m, costs in recomputed.items():
        hazards.append(
            f"{m} was forwarded again on the same input at the same parameters ({len(costs)} "
            f"time(s), {sum(costs) / iterations / 1e9:.4f} GFLOP per iteration recomputed)."
        )
    stepped: dict[str, set[int]] = {"G": set(), "D": set()}
    for s in a.opt_steps:
        stale = s.backwards & stepped[s.module]
        if stale:
            hazards.append(
                f"{s.module}'s step in iteration {s.iteration} used gradients already "
                f"stepped before (backward #{min(stale)}): a missing zero_grad lets them "
                "accumulate into this step."
            )
        stepped[s.module] |= s.backwards
    schedule = None
    order = a.order(0) if a.opt_steps else "other"
    orders = {a.order(i) for i in range(iterations)} if error is None else {order}
    order = order if len(orders) == 1 else "other"
    if error is not None and INPLACE in str(error):
        hazards.insert(0, _explain_inplace(a))
        schedule = SCHEDULE_FOR["simultaneous"]
    elif order in SCHEDULE_FOR:
        schedule = SCHEDULE_FOR[order]
    return Report(order, forwards, backwards, a.flops(), wasted, _unique(hazards), error,
                  iterations, schedule)  # fmt: skip


def _explain_inplace(a: _Auditor) -> str:
    failed = a.failed
    position = next((i for i, e in enumerate(a.events) if e[1] is failed), len(a.events))
    kept = [e[1] for e in a.events[:position] if e[0] == "backward" and e[1].retain_graph]
    keep = kept[-1] if kept else None
    start = a.events.index(("backward", keep)) if keep is not None else 0
    steps = [e[1] for e in a.events[start:position] if e[0] == "step"]
    which = ", ".join(f"opt_{s.module.lower()}.step()" for s in steps) or "an in-place update"
    kept_text = (
        f"backward #{keep.index} ran with retain_graph=True and kept its graph, which saved "
        "the weights it went through; "
        if keep is not None
        else ""
    )
    failed_text = f"backward #{failed.index}" if failed is not None else "a later backward"
    return (
        f"{kept_text}then {which} changed those weights in place, and {failed_text} "
        "through the kept graph raised PyTorch's in-place error (an error since PyTorch "
        "1.5; silently wrong gradients before). Both gradients were meant at the same "
        "parameters: that is ganstep's `simultaneous`, which takes them from one D forward "
        "with no retain_graph across an optimizer step."
    )


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def report_json(report: Report) -> str:
    return json.dumps(report.as_dict(), indent=1)
