"""Whole Step iterations captured in CUDA graphs and replayed (CUDA only).

A replay launches every kernel of the iteration (both forwards, both backwards, both
optimizer steps, BEGAN's k_t update) with one CPU call. A graph holds one fixed piece
of work, so iterations are sorted by what they do (:func:`iteration_kind`: how many
steps each side takes, and after which of them a lazy phase runs, R1 or path length)
and each kind gets a graph of its own, captured the first time that kind comes after
``warmup`` eager iterations of it. A plain d_first Step has one kind; lazy R1 two
(with and without the penalty), and path length likewise; WGAN's ``g_every = 5`` two
(with and without G's step); ADA's augmentation two (with and without its update of p);
a weight that is a function of the iteration one per value it takes (taming's
``disc_start``, a weight of 0 until then: two). A module of G's or D's switched to eval
mode (BatchNorm then normalizes by its running statistics, Dropout passes everything)
runs other kernels, so iterations are told apart by the modules in eval mode too: a
model switched to eval and back replays the graphs of each mode.

Capture refuses what a graph cannot replay (each for the reason given):

- the fused step, except for WGAN-GP: it reads one flag on the host to find samples
  where D's slope vanished;
- ``fp16`` unless every optimizer is fused (Adam/AdamW ``fused=True``): the loss
  scalers read their overflow flag on the host before any other optimizer's step;
  ``bf16`` is fine;
- ``distributed=True`` (collectives are left out of the graph);
- ``check_finite=True`` (each check reads a value on the host), and ``d_step_if``
  (it decides on the host whether D steps);
- the fake pool (it draws from Python's random);
- a G regularizer or an adaptive augmentation of your own that does not say it is
  capturable (PathLength, whose running mean changes in place, is captured: one graph
  with its phase, one without; so is ganstep's ADA, whose p moves on the device in
  place: one graph with its update, one without);
- hooks that read the iteration, and loss terms that read ``View.iteration`` (found
  at capture): a replay would repeat the captured iteration's value. A weight that
  is a function of the iteration (``d_scale``, ``g_scale``, a term's weight) is
  captured once per value: one that takes a new value at every iteration keeps the
  Step eager;
- optimizers that are not capturable, InfoGAN's info optimizer among them (build
  Adam/AdamW with ``capturable=True``; a learning rate that changes during training
  must be a tensor, changed in place: each replay checks that the optimizers'
  settings are those its graph was captured with, and raises where one changed).

Random draws must come from generators the graph advances: the default CUDA generator
(augmentation, WGAN-GP's interpolation, a condition sampler that draws on the device)
or ones the caller registers (``generators=``, e.g. the one behind ``latent``). A
draw on the CPU, moved to the GPU, would be replayed as the captured numbers.
"""

from __future__ import annotations

import operator
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from .autograd_calls import REGISTRATIONS
from .checks import positive_int, refused_block, weight_at
from .options import Options
from .schedules import Schedule
from .step import Step
from .views import iteration_reads

# Kinds counted towards their capture at most at once: a weight that takes a new value
# at every iteration (a linear ramp) makes a new kind each time, none ever captured.
KINDS_COUNTED = 1024


def _check_is_step(step: object) -> None:
    """Raise TypeError unless ``step`` is a :class:`~ganstep.Step` (what a graph
    captures: its iterations are sorted by the Step's schedule and counters)."""
    if not isinstance(step, Step):
        raise TypeError(
            f"CUDA graph capture takes a ganstep.Step, got {type(step).__name__} "
            "(CycleStep and BicycleStep are not captured)"
        )


def check_capturable(step: Step) -> None:
    """Raise ValueError naming what keeps ``step`` out of a CUDA graph (TypeError if it
    is not a Step)."""
    _check_is_step(step)
    schedule = step.schedule
    if getattr(schedule, "fused", False) and not step.objective.constant_slopes:
        raise ValueError(
            "CUDA graph capture: the fused step reads a flag on the host each iteration "
            f"(samples where D's slope vanished; {step.objective.name!r} has them); "
            "capture simultaneous() without fused"
        )
    if step.objective.penalty_at == "own_step":
        raise ValueError(
            "CUDA graph capture: a penalty in a D step of its own (penalty_at='own_step') is "
            "not captured; use penalty_at='after', or the eager Step"
        )
    if schedule.real_batches is None:
        raise ValueError(
            f"CUDA graph capture: schedule {schedule!r} takes as many D steps as each call "
            "is given real batches, and a graph holds one iteration's steps: give d_steps "
            "a number"
        )
    if type(schedule).updates is Schedule.updates:
        raise ValueError(
            f"CUDA graph capture: schedule {type(schedule).__name__} does not say which "
            "steps each iteration takes (Schedule.updates), so its iterations cannot be "
            "sorted into graphs"
        )
    optimizers = step_optimizers(step)
    # GradScaler hands its overflow flag to an optimizer that takes it (fused Adam/AdamW:
    # the skip happens in the kernel); for any other it reads the flag on the host
    if step.precision.name == "fp16" and not all(
        getattr(opt, "_step_supports_amp_scaling", False) for opt in optimizers.values()
    ):
        raise ValueError(
            "CUDA graph capture: fp16's loss scalers read the overflow flag on the host "
            "unless the optimizer skips the step on the device: build Adam/AdamW with "
            "fused=True and capturable=True (or use bf16)"
        )
    if step.distributed:
        raise ValueError("CUDA graph capture: distributed steps are not captured")
    beside = [side.name for side in (step.game.g, step.game.d) if side.outside]
    if beside:  # (what a replay checks for replaced parameters walks G's and D's alone)
        raise ValueError(
            f"CUDA graph capture: opt_{beside[0].lower()} holds parameters of neither G nor D "
            "(a head a loss term calls), which are not captured yet; use the eager Step"
        )
    compiled = [side.name for side in (step.game.g, step.game.d) if side.compiled]
    if compiled:
        raise ValueError(
            f"CUDA graph capture: {' and '.join(compiled)} run through torch.compile, which "
            "checks its guards in Python at each call, and a replay would skip them; "
            "build the Step with compile=False (and G and D not compiled) to capture it"
        )
    _check_options(step.game.options)
    for name, opt in optimizers.items():
        if not all(group.get("capturable", False) for group in opt.param_groups):
            raise ValueError(
                f"CUDA graph capture: {name} ({type(opt).__name__}) is not capturable; "
                "build it with capturable=True"
            )
    device = _models_device(step)
    if device.type != "cuda":
        raise ValueError(f"CUDA graph capture needs the models on CUDA, they are on {device}")


def _models_device(step: Step) -> torch.device:
    """Where the Step's models are (G's first parameter's device)."""
    return next(step.game.g.module.parameters()).device


def graph_generators(generators: object, device: torch.device) -> list[torch.Generator]:
    """``generators`` as a list, each a generator of ``device``: a graph advances the
    generators of its own device alone, and a draw on the host, moved to the GPU, would
    be replayed as the captured numbers."""
    if isinstance(generators, str | torch.Generator) or not isinstance(generators, Sequence):
        raise TypeError(
            f"generators: a list of torch.Generator (e.g. [gen]), got {type(generators).__name__}"
        )
    for i, gen in enumerate(generators):
        if not isinstance(gen, torch.Generator):
            raise TypeError(f"generators[{i}]: a torch.Generator, got {type(gen).__name__}")
        if gen.device.type != device.type:
            raise ValueError(
                f"generators[{i}] draws on {gen.device}, the models are on {device}: a "
                "graph advances only generators of its device; make it with "
                f"torch.Generator(device={device.type!r}) and draw z from it there"
            )
    return list(generators)


def step_optimizers(step: Step) -> dict[str, torch.optim.Optimizer]:
    """The optimizers a captured iteration steps, by the Step's names for them."""
    game = step.game
    optimizers = {"opt_g": game.g.optimizer, "opt_d": game.d.optimizer}
    if game.info is not None:  # InfoGAN's third optimizer steps in the graph too
        optimizers["info_optimizer"] = game.info.optimizer
    return optimizers


_PLAIN = (bool, int, float, str, type(None))
_PLAIN_TYPES = frozenset(_PLAIN)


class _TensorAt(NamedTuple):
    """A setting that is a tensor, by the memory a graph's kernels read it from."""

    address: int


def optimizer_settings(optimizers: dict[str, torch.optim.Optimizer]) -> tuple:
    """Each optimizer group's settings as ``(name, group, key, value)``: Python values
    (lr, betas, eps...) as they are, tensors (a capturable Adam's lr) by their address.
    A graph's kernels take the values, and read the addresses, its capture saw."""
    settings = []
    for name, opt in optimizers.items():
        for i, group in enumerate(opt.param_groups):
            for key, value in group.items():
                if isinstance(value, Tensor):
                    settings.append((name, i, key, _TensorAt(value.data_ptr())))
                elif isinstance(value, _PLAIN) or (
                    isinstance(value, tuple) and {type(v) for v in value} <= _PLAIN_TYPES
                ):
                    settings.append((name, i, key, value))
    return tuple(settings)


def _changed_setting(captured: tuple, now: tuple) -> str:
    """Why a graph captured with optimizer settings ``captured`` cannot replay ``now``."""
    for before, after in zip(captured, now, strict=False):
        if before == after:
            continue
        name, i, key, value = before
        if after[:3] != before[:3]:
            break
        what = f"CUDA graphs: {name}'s {key} (group {i})"
        if isinstance(value, _TensorAt):
            return (
                f"{what} is another tensor than when this kind of iteration was captured, "
                "and a replay reads the captured one: change it in place (lr.fill_(new), "
                "as torch's LR schedulers do)"
            )
        return (
            f"{what} changed from {value!r} to {after[3]!r} after this kind of iteration "
            "was captured, and a replay steps with the captured value; a setting that "
            "changes during training must be a tensor changed in place (Adam(..., "
            "lr=torch.tensor(lr, device=...), capturable=True): torch's LR schedulers "
            "then fill it)"
        )
    return (
        "CUDA graphs: the optimizers' parameter groups changed after this kind of "
        "iteration was captured; a replay steps the groups its capture saw"
    )


def _check_options(options: Options) -> None:
    """Raise ValueError naming a Step option a CUDA graph cannot replay."""
    g_regularizer = options.g_regularizer
    if g_regularizer is not None and not getattr(g_regularizer, "capturable", False):
        raise ValueError(
            f"CUDA graph capture: G's regularizer {type(g_regularizer).__name__} does not say "
            "it is capturable (state kept on the device and changed in place, as PathLength "
            "keeps its running mean): set capturable = True where it is"
        )
    if options.fake_pool is not None:
        raise ValueError("CUDA graph capture: the fake pool draws from Python's random")
    augment = options.augment
    if hasattr(augment, "end_iteration") and not getattr(augment, "capturable", False):
        raise ValueError(
            f"CUDA graph capture: the augmentation {type(augment).__name__} has an "
            "end_iteration that may read or change values on the host; ganstep's Adaptive "
            "(ADA) and fixed policies (DiffAugment) are captured, and yours is where it sets "
            "capturable = True and moves_after(done)"
        )
    hooks = [*options.before_step.values(), *options.after_step.values()]
    if any(h.with_iteration for h in hooks):
        raise ValueError(
            "CUDA graph capture: a hook that reads the iteration is recorded with the "
            "captured iteration's number, and a replay would repeat it"
        )
    if options.check_finite:
        raise ValueError(
            "CUDA graph capture: check_finite reads each loss on the host; check the "
            "losses the graphed step returns instead"
        )
    if options.d_step_if is not None:
        raise ValueError(
            "CUDA graph capture: d_step_if decides on the host whether D steps, and a "
            "replay would repeat the captured decision"
        )


def iteration_kind(step: Step) -> tuple:
    """What ``step``'s next iteration does, as far as a graph must know: the steps each
    side takes, for each of D's whether a lazy R1 phase follows it, for each of G's
    whether a path-length phase does, whether an adaptive augmentation updates its
    p at the end, and the values of the weights that are functions of the iteration.
    Two iterations of one kind run the same kernels on the same shapes and numbers."""
    d_steps, g_steps = step.schedule.updates(step.iteration)
    progress, options = step.progress, step.game.options
    r1, pl = step.objective.regularizer, options.g_regularizer
    # lists, not generators: each item a generator yields is a Python call of the replay
    d_lazy = tuple([r1 is not None and r1.due(progress.d_updates + j) for j in range(d_steps)])
    g_lazy = tuple([pl is not None and pl.due(progress.g_updates + j) for j in range(g_steps)])
    moves_after = getattr(options.augment, "moves_after", None)
    ada = moves_after is not None and moves_after(step.iteration + 1)
    return d_steps, g_steps, d_lazy, g_lazy, ada, _weights_at(options, step.iteration)


def _weights_at(options: Options, iteration: int) -> tuple[float, ...]:
    """The values at ``iteration`` of the weights that are functions of it, in the
    order the Step's options hold them (checked as the Step checks them)."""
    named = {"d_scale": options.d_scale, "g_scale": options.g_scale}
    for owner in ("g_terms", "d_terms", "info_terms"):
        for name, (w, _) in getattr(options, owner).items():
            named[f"the weight of term {name!r}"] = w
    return tuple(weight_at(w, iteration, what) for what, w in named.items() if callable(w))


class CaptureFailed(RuntimeError):
    """Capturing an iteration in a CUDA graph failed (an op the graph cannot hold, or a
    CUDA error during capture); ``reason`` is what torch raised. Nothing of the
    iteration ran: the Step's counters are as before it. A run goes on from its last
    checkpoint without graphs, in a new process: torch ends a failed capture before its
    caching allocator stops routing to the graph's pool and before the registered
    generators leave capture mode (``CUDAGraph::capture_end``), so in this process
    ``torch.cuda.empty_cache`` (which the next capture calls) trips the allocator's
    assert, and the next eager draw from those generators fails."""

    def __init__(self, kind: tuple, reason: Exception) -> None:
        self.reason = f"{type(reason).__name__}: {reason}"
        super().__init__(
            f"CUDA graph capture of an iteration of kind {kind} failed ({self.reason}); "
            "run this Step without CUDA graphs in a new process (torch leaves this one's "
            "CUDA allocator and generators in capture mode), and please report this"
        )


@dataclass
class _Captured:
    graph: torch.cuda.CUDAGraph
    logs: dict[str, Tensor]
    moved: tuple[int, int, int]  # what one iteration adds to (iteration, d_updates, g_updates)
    settings: tuple  # optimizer_settings at the capture


class _Submodules:
    """G's and D's submodules (and InfoGAN's head's): the user's modules, behind any
    compiled wrapper, walked again only after some module registered a parameter or
    a submodule (as :class:`~ganstep.engine.autograd_calls.ParameterList` does)."""

    def __init__(self, step: Step) -> None:
        self.roots = step.game.eager_modules()
        self.seen, self.listed = -1, []

    def __call__(self) -> list[nn.Module]:
        if self.seen != REGISTRATIONS[0]:
            self.listed = [m for root in self.roots for m in root.modules()]
            self.seen = REGISTRATIONS[0]
        return self.listed


class IterationGraphs:
    """``run`` (one iteration of ``step``, and whatever the caller adds to it) captured
    once per :func:`iteration_kind` and set of G's and D's modules in eval mode, after
    ``warmup`` eager runs of that key, and replayed from then on. Each call is one
    iteration. ``run`` reads its inputs from tensors that stay where they are (the
    caller copies new data into them first, or ``run`` draws it on the device) and
    returns its logs."""

    def __init__(
        self,
        step: Step,
        run: Callable[[], dict[str, Tensor]],
        warmup: int = 3,
        generators: Sequence[torch.Generator] = (),
    ) -> None:
        check_capturable(step)
        self.step, self.run = step, run
        self.optimizers = step_optimizers(step)
        self.modules = _Submodules(step)
        self.read = self._what_graphs_read()
        self.warmup = positive_int(warmup, "warmup")
        self.generators = graph_generators(generators, _models_device(step))
        self.device_type = step.game.precision.device_type  # where a user's autocast acts
        self.graphs: dict[Hashable, _Captured] = {}
        self.eager_runs: Counter = Counter()
        self.warned_kinds = False  # KINDS_COUNTED was passed, and said, once

    def __call__(self) -> dict[str, Tensor]:
        # a replay would train all the same in a block the Step refuses a call in
        if (not torch.is_grad_enabled() or torch.is_autocast_enabled(self.device_type)
                or getattr(parametrize, "_cache_enabled", 0)):  # fmt: skip
            why = refused_block("the Step", self.device_type, self.modules.roots)
            if why is not None:
                raise RuntimeError(why)
        if self._state_replaced():
            # new tensors where the graphs read the old ones: they are dropped, and each
            # kind warms up (the Step's checks run again) and is captured again
            self.drop()
        kind = iteration_kind(self.step)
        # a module switched to eval (or back) runs other kernels: its own graphs
        key = (kind, tuple([i for i, m in enumerate(self.modules.listed) if not m.training]))
        captured = self.graphs.get(key)
        if captured is None and self.eager_runs[key] < self.warmup:
            self._count_eager(key)
            return self._eager()
        if captured is None:
            captured = self.graphs[key] = self._capture(kind)
        elif (settings := optimizer_settings(self.optimizers)) != captured.settings:
            raise ValueError(_changed_setting(captured.settings, settings))
        captured.graph.replay()
        progress = self.step.progress
        progress.iteration += captured.moved[0]
        progress.d_updates += captured.moved[1]
        progress.g_updates += captured.moved[2]
        return {k: v.clone() for k, v in captured.logs.items()}

    def drop(self) -> None:
        """Forget every graph: each kind warms up and is captured again."""
        self.graphs.clear()
        self.eager_runs.clear()
        self.read = self._what_graphs_read()

    def _what_graphs_read(self) -> tuple:
        """What replacing what the graphs read changes: the addresses of G's and D's
        parameters (a layer replaced, a module moved with ``.to``) and whether each
        trains (a layer frozen, as FreezeD freezes D's first ones: the graphs would go
        on updating it), the Step's count of state loads, G's and D's submodules (a
        layer without parameters added or replaced: the graphs hold the old one's
        kernels), and each optimizer's state dict (torch's load_state_dict makes a new
        one)."""
        game = self.step.game  # its lists are walked again only after a registration
        # comprehensions, not generators: a replay's host work is a few dozen Python calls
        params = [(p.data_ptr(), p.requires_grad) for side in (game.g, game.d)
                  for p in side.all_params()]  # fmt: skip
        states = [o.state for o in self.optimizers.values()]
        return params, self.step.state_loads, self.modules(), states

    def _state_replaced(self) -> bool:
        """Whether what the graphs read was replaced since ``self.read`` was taken (a
        replaced layer that is in no optimizer raises, as the Step's call does)."""
        self.step.check_parameters()
        now, then = self._what_graphs_read(), self.read
        return now[:3] != then[:3] or any(map(operator.is_not, now[3], then[3]))

    def _count_eager(self, key: tuple) -> None:
        """Count an eager run of ``key`` (a kind and the modules in eval mode); past
        KINDS_COUNTED keys, forget the counts (a key that comes again warms up again),
        saying once why the Step runs eagerly."""
        if key not in self.eager_runs and len(self.eager_runs) >= KINDS_COUNTED:
            if not self.warned_kinds:
                warnings.warn(
                    f"CUDA graphs: iterations of {KINDS_COUNTED} kinds ran eagerly (a kind is "
                    f"captured after {self.warmup} eager runs of it); a weight that is a "
                    "function of the iteration and takes a new value at each makes a new "
                    f"kind every time (the last: {key[0]}), so those iterations never replay "
                    "a graph: give such a weight a few steps",
                    stacklevel=4,  # GraphedStep's caller
                )
            self.warned_kinds = True
            self.eager_runs.clear()
        self.eager_runs[key] += 1

    def _eager(self) -> dict[str, Tensor]:
        """One ordinary iteration, on a side stream as torch's capture recipe warms up
        (lazily made state, cuDNN and cuBLAS plans, exist before capture)."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            logs = self.run()
        torch.cuda.current_stream().wait_stream(side)
        return logs

    def _capture(self, kind: tuple) -> _Captured:
        """Record one iteration of ``kind``; nothing runs until it is replayed, so the
        counters the recording moved are put back (each replay moves them)."""
        progress = self.step.progress
        before = (progress.iteration, progress.d_updates, progress.g_updates)
        graph = torch.cuda.CUDAGraph()
        for gen in self.generators:
            graph.register_generator_state(gen)
        try:
            # thread_local: CUDA calls of other threads (a DataLoader's pin-memory thread
            # allocating pinned memory, pin_memory=True) are theirs, not the capture's;
            # in torch's default mode, global, one of them breaks the capture. No pool=:
            # torch shares a memory pool safely only among graphs replayed in the order
            # they were captured, and kinds are replayed in any order (lazy R1's 1 in 16)
            with (
                iteration_reads() as reads,
                torch.cuda.graph(graph, capture_error_mode="thread_local"),
            ):
                logs = self.run()
            after = (progress.iteration, progress.d_updates, progress.g_updates)
        except Exception as e:  # torch's message alone names neither graphs nor a way out
            raise CaptureFailed(kind, e) from e
        finally:  # recorded or failed, nothing ran
            progress.iteration, progress.d_updates, progress.g_updates = before
        if reads:
            raise ValueError(
                f"CUDA graph capture: a loss term of the {reads[0]} phase reads "
                "view.iteration, and a replay would repeat the captured iteration's value; "
                "give the term a weight that is a function of the iteration instead (a "
                "graph is captured per value), or run this Step without CUDA graphs"
            )
        moved = (after[0] - before[0], after[1] - before[1], after[2] - before[2])
        if moved[:2] != (1, kind[0]):
            raise RuntimeError(  # iteration_kind and the schedule disagree: a ganstep bug
                f"CUDA graph capture: an iteration of kind {kind} moved the step counters "
                f"by {moved}; please report this"
            )
        return _Captured(graph, logs, moved, optimizer_settings(self.optimizers))


class GraphedStep:
    """``step`` replayed from CUDA graphs on the shapes of ``real``; call it like the
    Step: each call is one iteration, the first ``warmup`` of each kind eager. Where
    the tensors or layers the graphs read are replaced (the Step's or an optimizer's
    ``load_state_dict``, a model moved with ``.to`` or given a new layer) or a
    parameter is frozen or unfrozen (``requires_grad``), the next call drops the
    graphs: each kind is checked, run eagerly and captured again.

    Args:
        step: the Step to capture.
        real: an example of what one call takes (a tensor, ``(x, y)`` for a
            conditional Step, a list of those for several D steps); later calls must
            match its structure, shapes, dtypes and device. Each call's data is copied
            into the graph's own copy of it.
        warmup: eager iterations of each kind before its graph is captured, on a side
            stream, so that lazily created state (optimizer moments, cuDNN plans)
            exists at capture.
        generators: a list of the extra CUDA generators the iteration draws from
            (e.g. the one behind ``latent``), registered with each graph so replays
            advance them; one on another device than the models' is refused.
    """

    def __init__(
        self,
        step: Step,
        real: object,
        warmup: int = 3,
        generators: Sequence[torch.Generator] = (),
    ) -> None:
        check_capturable(step)  # before the input, which it may say why not to give
        step.batches_of(real)  # what the Step would refuse, refused now
        self.step = step
        self.static = StaticInput(real)
        self.graphs = IterationGraphs(step, lambda: step(self.static.value), warmup, generators)

    def __call__(self, real: object) -> dict[str, Tensor]:
        """Copy ``real`` into the graph's input and run one iteration."""
        self.static.fill(real)
        return self.graphs()

    def recapture(self) -> None:
        """Drop every graph, after a change they cannot see: a hook registered on G or
        D, a Python number your code inside the iteration reads (a replay repeats the
        capture's kernels and values). The next calls of each kind run eagerly, with
        the change, then capture it."""
        self.graphs.drop()


class StaticInput:
    """A copy of ``example`` (a tensor, or lists, tuples and dicts of them) that stays
    where it is: a graph reads its input from there, and each call's data is copied in."""

    def __init__(self, example: object) -> None:
        self.value = _tree_map(lambda t: t.clone(), example)
        self.leaves = _leaves(self.value)

    def fill(self, new: object) -> None:
        """Copy ``new`` in; it must have the example's structure, shapes and dtypes."""
        batches = _leaves(new)
        if len(batches) != len(self.leaves):
            raise ValueError(
                f"a captured step takes {len(self.leaves)} tensor(s) per call, as it was "
                f"built on; got {len(batches)}"
            )
        for target, batch in zip(self.leaves, batches, strict=True):
            if batch.shape != target.shape or batch.dtype != target.dtype:
                raise ValueError(
                    f"a captured step takes batches of shape {tuple(target.shape)} "
                    f"{target.dtype}, got {tuple(batch.shape)} {batch.dtype}"
                )
            target.copy_(batch, non_blocking=True)


def _leaves(tree: object) -> list[Tensor]:
    """The tensors of ``tree`` (a tensor, or lists, tuples and dicts of them), in order."""
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, dict):
        return [t for key in sorted(tree) for t in _leaves(tree[key])]
    if isinstance(tree, list | tuple):
        return [t for item in tree for t in _leaves(item)]
    raise TypeError(f"a captured step takes tensors (in lists, tuples, dicts); got {tree!r}")


def _tree_map(fn: Callable[[Tensor], Tensor], tree: object) -> object:
    if isinstance(tree, Tensor):
        return fn(tree)
    if isinstance(tree, dict):
        return {key: _tree_map(fn, value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(_tree_map(fn, item) for item in tree)
    raise TypeError(f"a captured step takes tensors (in lists, tuples, dicts); got {tree!r}")
