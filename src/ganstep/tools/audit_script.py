"""Audit a training script as it is: run it as ``__main__`` with its own arguments,
find its G and D, let it train N iterations, stop it, and report.

Nothing in the script changes. Before it runs, global hooks are set: every optimizer
created is noted, and every top-level module call (a module called from the
script, not from inside another module) is recorded under a provisional label. The
script is stopped (an exception it cannot catch with ``except Exception``) at the
optimizer step that begins iteration N + 1. Afterwards G and D are named: the two
modules that optimizers train, D being the one that consumed the other's output
(its input was G's output, or a backward went through D and then G); ``--G`` and
``--D`` name them when that is ambiguous. An iteration is the first-stepping
module's steps followed by the other's (``d_first(d_steps=5)``: five D steps, one G
step).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import linecache
import math
import os
import random
import re
import runpy
import signal
import sys
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils import parametrize

from ..engine.checks import positive_int
from ..engine.d_profile import observing
from .audit import (
    INFO,
    MODULES,
    Recorder,
    Report,
    analyse,
    crash_location,
    held_ids,
    info_steps,
    known_cause,
    rng_states,
    with_tensor_kwargs,
)
from .call_argument import Draw, augmentation_at, written_over
from .cycle_port import NAMES as CYCLE_NAMES
from .cycle_port import cycle_modules, cycle_port
from .cycle_port import said as said_cycle
from .port import (
    FLOAT64_TOLERANCE,
    LEFT_OUT,
    TOLERANCE,
    Capture,
    Port,
    _verifiable,
    among,
    float64_variants,
    global_names,
    not_compared,
    parted_line,
    path_to,
    refit_said,
    rounding_entries,
    script_moved,
    split_casts,
    tied,
)
from .port import port as port_of
from .sides import (
    GAndItsHeads,
    fed_by,
    find_sides,
    g_and_its_heads,
    merge_phases,
    read_as_sides,
    read_cycle,
    side_members,
)


class AuditError(ValueError):
    """The script could not be audited (not loadable, no G and D found, or it failed
    before training began)."""


class _Stop(BaseException):
    """Raised at the step that begins the iteration after the last one audited; a
    BaseException so that the script's ``except Exception`` does not swallow it."""


class _Timeout(BaseException):
    """The script ran past the audit's time limit (raised by the timer's signal)."""


class _Exit(BaseException):
    """The script called ``os._exit``: end the run here instead of the process, so that
    the report is still made."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _module_holding(held: set[int], spaces: list[dict]) -> nn.Module | None:
    """The first module named in ``spaces`` (a public name), or one of its submodules,
    whose parameters are exactly those of ids ``held``; None where none is."""
    tops = [v for space in spaces for k, v in list(space.items())
            if isinstance(v, nn.Module) and k[:1] != "_"]  # fmt: skip
    for top in tops:
        for module in top.modules():
            if {id(p) for p in module.parameters()} == held:
                return module
    return None


class ScriptRecorder(Recorder):
    """A recorder fed by global module hooks, labelling modules as it meets them."""

    def __init__(self, iterations: int) -> None:
        super().__init__()
        self.scoped_flops = True
        self.limit = iterations
        self.depth = 0
        self.calls: list[tuple[str, tuple] | None] = []
        self.scopes: list[set[int] | None] = []  # per open call: a container's parts
        self.optimizers: list[torch.optim.Optimizer] = []
        self.forks = 0  # child processes the script forked (their steps are not seen)
        self.leader: str | None = None
        self.leader_joint = False  # the leader's optimizer steps several modules
        self.joint_seen = False  # an optimizer over several modules has stepped
        self.followed = False
        self.completed = 0
        # a float64 repeat run with torch.FloatTensor as torch.DoubleTensor (_float64_run)
        self.float_tensor_doubled = False
        self.namespace: dict | None = None  # the script's globals, seen while it runs
        # the locals of the function whose loop took the first step (a train() of the
        # script's), as they were then; None before it, {} for a loop at the top level.
        # Once both G and D have stepped: those of the innermost function whose call
        # holds both first steps (the loop that calls a train_discriminator() and a
        # train_generator() of the script's)
        self.loop_names: dict | None = None
        self._step_frames: dict[str, list] | None = {}  # each first step's script frames
        self.stop_seq: int | None = None  # where the audit stopped the script
        # modules whose forward the script may call itself (``netG.forward(x)``, as
        # pix2pixHD calls its G and D), which torch's module hooks do not see: by id; the
        # classes whose forward was wrapped to see those calls, and the forward each had
        # of its own (None: inherited); the modules whose hooked call is open, innermost
        # last
        self.direct: dict[int, nn.Module] = {}
        self.wrapped: dict[type, object] = {}
        self.open_modules: list[nn.Module] = []
        self.stop_thread: int | None = None  # the thread it stopped there
        self.exit_code: int | None = None  # how it ended, when it ended by itself
        self.exit_how = ""  # said of that end: "ran to its end", "called os._exit(0)"
        self.undo: Callable[[], None] = lambda: None  # remove the audit's hooks
        # Called when the script goes on after the stop (it swallowed it: a bare except,
        # ``except BaseException``); the command line reports and leaves the process.
        self.on_swallowed: Callable[[], object] | None = None
        self.capture: Capture | None = None  # what --port keeps to replay the update
        self.script_file: str | None = None  # the audited script's path, as its frames name it
        # the folders the script made (os.mkdir, so os.makedirs and Path.mkdir too); a
        # repeat of the run (--verify's float64) is given those of the first run as made
        self.made_folders: set[str] = set()
        self.made_before: set[str] = set()
        # --port: the latest draws from torch's generator, where the script was at each
        # (the state before an augmentation in D's call: call_argument.augmentation_at)
        self.draws: deque[Draw] = deque(maxlen=256)

    def __enter__(self) -> ScriptRecorder:
        if self.capture is not None:
            self.provenance.before_draw = self._before_draw
        return super().__enter__()

    def _before_draw(self) -> None:
        at = tuple((id(f), f.f_lasti) for f in self._script_frames())
        if at:
            self.draws.append((rng_states(), at))

    @property
    def loss_values(self) -> bool:  # the port tells candidates apart by them
        return self.capture is not None

    @property
    def scope(self) -> dict:
        """The names the script's loop sees: the locals of the function it runs in first
        (so that they name what they hold), then the script's globals."""
        names = dict(self.loop_names or {})
        for name, value in (self.namespace or {}).items():
            names.setdefault(name, value)
        return names

    def _script_frame(self):
        """The innermost frame of the audited script's own code now running, or None."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != self.script_file:
            frame = frame.f_back
        return frame

    def call_site(self) -> str | None:
        frame = self._script_frame()
        if frame is None:
            return None
        line = linecache.getline(self.script_file, frame.f_lineno).strip()
        return f"{Path(self.script_file).name}:{frame.f_lineno}: {line}"

    def add_module(self, label: str, module: nn.Module) -> None:
        super().add_module(label, module)
        if self.capture is not None:  # its state before the script's first call of it
            self.capture.module_seen(module)

    def forward_end(self, label: str, args: tuple, out: object, start: tuple,
                    module: nn.Module | None = None, keywords: dict | None = None,
                    py_state: object = None, np_state: object = None) -> None:  # fmt: skip
        super().forward_end(label, args, out, start, module, keywords)
        if self.capture is not None:
            self.capture.called(self.forwards[-1].seq, args, start[1], keywords, py_state,
                                np_state)  # fmt: skip

    def _after_step(self, opt, args, kwargs) -> None:
        super()._after_step(opt, args, kwargs)
        if self.capture is not None:
            joint = self.stepping is not None and self.stepping.joint
            self.capture.stepped(list(self.modules.values()), self.optimizers, len(self.opt_steps),
                                 opt, joint)  # fmt: skip
            if self.stepping is not None:  # (by the step's place: steps over several too)
                self.capture.at_step[self.stepping.seq] = self.capture.after_step

    def _after_stop(self) -> None:
        """The script ran on after being stopped: stop it again, or leave. Another thread
        than the stopped one (a loop run in a thread beside the main one) is stopped
        too, and has swallowed nothing."""
        if self.on_swallowed is not None and threading.get_ident() == self.stop_thread:
            self.on_swallowed()
        raise _Stop

    def trim(self) -> None:
        """Drop what was recorded after the stop (a script that swallowed it)."""
        if self.stop_seq is not None:
            cut = self.stop_seq
            self.forwards = [f for f in self.forwards if f.seq <= cut]
            self.backwards = [b for b in self.backwards if b.seq <= cut]
            self.opt_steps = [s for s in self.opt_steps if s.seq <= cut]

    def _label(self, module: nn.Module) -> str | None:
        params = list(module.parameters())
        if not params:
            return None
        label = self.owner.get(id(params[0]))
        if label is None:
            label = f"module{len(self.modules)}"
            self.add_module(label, self._whole(module))
        elif label not in self.modules:
            self.modules[label] = module
        elif self.capture is not None:  # (a lazy module's state: taken once it has values)
            self.capture.module_seen(self.modules[label])
        return label

    def _whole(self, part: nn.Module) -> nn.Module:
        """The module an optimizer trains whole that ``part`` belongs to, where the script
        calls its parts itself (StyleGAN2-ADA's loss calls ``G.mapping`` and
        ``G.synthesis``, never G): found among the script's global modules and theirs, by
        the optimizer's parameters; else ``part``."""
        first = id(next(part.parameters()))
        held = [ids for ids in map(held_ids, self.optimizers) if first in ids]
        if len(held) != 1 or {id(p) for p in part.parameters()} == held[0]:
            return part
        whole = _module_holding(held[0], [self.namespace or {}])
        return part if whole is None else whole

    def follow_direct_calls(self, opt: torch.optim.Optimizer) -> None:
        """See the calls of ``forward`` the script makes itself on the module ``opt``
        trains (``self.netG.forward(input_concat)``, pix2pixHD's), which bypass torch's
        module hooks: that module's class gets a forward that records such a call as a
        hooked one would be, and passes every other call (through ``module(x)``, or of
        another instance, a deep copy included) straight on. Undone with :meth:`unwrap`."""
        module = self._module_of(opt)
        if module is None or id(module) in self.direct:
            return
        self.direct[id(module)] = module
        cls = type(module)
        if cls in self.wrapped:
            return
        self.wrapped[cls] = cls.__dict__.get("forward")
        original = cls.forward

        def forward(this, *args, **kwargs):
            if id(this) not in self.direct or (self.open_modules and self.open_modules[-1] is this):
                return original(this, *args, **kwargs)
            self.pre(this, args)
            try:
                out = original(this, *args, **kwargs)
            except BaseException:
                self.post(this, args, None, raised=True)
                raise
            self.post(this, with_tensor_kwargs(args, kwargs), out, keywords=kwargs)
            return out

        cls.forward = forward

    def unwrap(self) -> None:
        """Give each class :meth:`follow_direct_calls` wrapped its forward back."""
        for cls, own in self.wrapped.items():
            if own is None:
                del cls.forward
            else:
                cls.forward = own
        self.wrapped.clear()

    def _module_of(self, opt: torch.optim.Optimizer) -> nn.Module | None:
        """The module whose parameters are those ``opt`` holds, among the names of the
        script's functions running now (a main() that builds G, D and their optimizers),
        its globals, and their attributes, if one is there yet."""
        main = sys.modules.get("__main__")
        spaces = [frame.f_locals for frame in self._script_frames()]
        spaces.append(self.namespace or (vars(main) if main is not None else {}))
        return _module_holding(held_ids(opt), spaces)

    def _container(self, module: nn.Module) -> bool:
        """Whether ``module`` holds the parameters of more than one optimizer (BigGAN's
        G_D around G and D): its calls are not one module's; its children's are."""
        holders = {p: i for i, opt in enumerate(self.optimizers) for p in held_ids(opt)}
        return len({holders[id(p)] for p in module.parameters() if id(p) in holders}) > 1

    def _units(self, container: nn.Module) -> set[int]:
        """The modules a container's calls are recorded as: its children, and the
        children of any child that is a container itself."""
        found: set[int] = set()
        for child in container.children():
            found |= self._units(child) if self._container(child) else {id(child)}
        return found

    def pre(self, module: nn.Module, args: tuple) -> None:
        if self.stop_seq is not None and self.depth == 0:
            self._after_stop()
        if self.namespace is None and "__main__" in sys.modules:
            self.namespace = vars(sys.modules["__main__"])
        if self.depth == 0:
            self.count_on()
        # A call is recorded unless one around it is. Inside a call of a module that
        # wraps G and D together (BigGAN's G_D), the calls of its parts are: G and D,
        # not G.shared called beside G.
        inside = any(call is not None for call in self.calls)
        scope = next((s for s in reversed(self.scopes) if s is not None), None)
        units = None
        # torch's parametrizations (parametrizations.spectral_norm) run a module each time
        # the parametrized weight is read, inside a forward or out of one: the weight's,
        # not a model's call
        weight_read = isinstance(module, parametrize.ParametrizationList)
        if inside or observing() or weight_read or (scope is not None and id(module) not in scope):
            label = None  # (observing: a Step's own one-time look at D, not the user's loop)
        elif self._container(module):
            label, units = None, self._units(module)
        else:
            label = self._label(module)
        self.depth += 1
        self.scopes.append(units)
        self.open_modules.append(module)
        if label is None:
            self.calls.append(None)
            return
        # --port: the batch a changed first argument was made from (D(augment(real)))
        frame = self._script_frame() if self.capture is not None else None
        changed = None if frame is None else augmentation_at(frame, self.draws)
        if frame is not None and changed is None and (line := written_over(frame)):
            text = linecache.getline(self.script_file, line).strip()
            changed = f"{Path(self.script_file).name}:{line}: {text}"
        # --port: Python's generator at the call too (rosinality's G draws its style
        # mixing's layer by random.randint in its forward), and numpy's where the script
        # imported it (PyTorch-GAN's penalties draw their alpha by np.random.random)
        py_state = np_state = None
        if self.capture is not None:
            numpy = sys.modules.get("numpy")
            py_state = random.getstate()
            np_state = None if numpy is None else numpy.random.get_state()
        line = None if frame is None else frame.f_lineno
        self.calls.append((label, self.forward_start(), changed, py_state, np_state, line))

    def post(self, module: nn.Module, args: tuple, out: object, raised: bool = False,
             keywords: dict | None = None) -> None:  # fmt: skip
        """After a module call: recorded, unless its forward ``raised`` (a loss module given
        targets of another shape), where the call's bookkeeping is undone alone, so that
        a script catching the error goes on with the audit's state as before the call.
        ``keywords``: those the call was given (the port keeps their plain values)."""
        self.depth -= 1
        self.scopes.pop()
        self.open_modules.pop()
        call = self.calls.pop()
        if call is not None and not raised:
            self.forward_end(call[0], args, out, call[1], module, keywords, *call[3:5])
            if call[5] is not None:  # the script's line of the call (its names there)
                self.capture.sites[self.forwards[-1].seq] = call[5]
            if isinstance(call[2], str):
                self.capture.written_over[self.forwards[-1].seq] = call[2]
            elif call[2] is not None:
                self.capture.argument_made(self.forwards[-1].seq, *call[2])
            whole = self.modules[call[0]]
            if module is not whole:  # one of its parts, called by the script itself
                self.forwards[-1].part = next(
                    (name for name, m in whole.named_modules() if m is module), ""
                )
        if self.depth == 0:
            self.count_off()

    def _script_frames(self) -> list:
        """The audited script's frames now running, innermost first."""
        frames, frame = [], self._script_frame()
        while frame is not None:
            if frame.f_code.co_filename == self.script_file:
                frames.append(frame)
            frame = frame.f_back
        return frames

    def _name_loop(self, label: str) -> None:
        """Take the loop's names at the first step of ``label`` (see ``loop_names``)."""
        if self._step_frames is None or label in self._step_frames:
            return
        frames = self._script_frames()
        others = [f for fs in self._step_frames.values() for f in fs]
        self._step_frames[label] = frames
        held = frames[0] if frames else None
        if others:  # the loop's frame: the innermost that both first steps ran inside
            held = next((f for f in frames if any(f is o for o in others)), held)
            self._step_frames = None  # (frames hold their locals: let them go)
        top = held is None or held.f_code.co_name == "<module>"
        self.loop_names = {} if top else dict(held.f_locals)

    def before_step(self, step) -> None:
        self._name_loop(step.label)
        if self.capture is not None and not step.joint:  # the numbers as the last step left them
            self.capture.before_step(len(self.opt_steps), self.namespace)
            if step.label in self.modules:  # the module about to step, as it is now
                self.capture.stepping(self.modules[step.label])
        if self.stop_seq is not None:
            self._after_stop()
        if self.leader is None:
            self.leader, self.leader_joint = step.label, step.joint
        self.joint_seen = self.joint_seen or step.joint
        # where an optimizer steps a side of several modules, another one-module step
        # beside a one-module leader is the leader's side (DualGAN's other D, with an
        # Adam each), not the other side: an iteration is G's period, as with one G and D
        kin = self.joint_seen and not step.joint and not self.leader_joint
        if step.label != self.leader and not kin:
            self.followed = True
        elif step.label == self.leader and self.followed:
            self.followed = False
            self.completed += 1
            if self.completed >= self.limit:
                self.stop_seq = self.seq
                self.stop_thread = threading.get_ident()
                raise _Stop


def _resolve(namespace: dict, name: str) -> object:
    obj: object = namespace
    for i, part in enumerate(name.split(".")):
        try:
            obj = obj[part] if i == 0 else getattr(obj, part)  # type: ignore[index]
        except (KeyError, AttributeError):
            raise AuditError(f"the script has no {name!r}") from None
    return obj


def _names(rec: ScriptRecorder) -> dict[str, str]:
    """A readable name per label: the name the script's loop sees that module by (a local,
    a global, where it sits in one of them), else its class."""
    names = {}
    scope = rec.scope
    by_id = global_names(scope)
    for label, module in rec.modules.items():  # a name, an attribute (self.G), its class
        names[label] = by_id.get(id(module)) or path_to(scope, module) or type(module).__name__
    return names


def _find_g_and_d(rec: ScriptRecorder, g_name: str | None, d_name: str | None) -> dict[str, str]:
    """{provisional label: "G" or "D"}."""
    named = {}
    for role, name in (("G", g_name), ("D", d_name)):
        if name is None:
            continue
        obj = _resolve(rec.scope, name)
        if not isinstance(obj, nn.Module):
            raise AuditError(f"--{role} {name} is a {type(obj).__name__}, not a torch.nn.Module")
        first = next(obj.parameters(), None)
        label = rec.owner.get(id(first)) if first is not None else None
        if label is None:
            raise AuditError(f"--{role} {name}: that module never ran a forward")
        named[label] = role
    if len(named) == 2:
        return named
    if not named and rec.joint_opt_steps:  # CycleGAN's generators in one optimizer
        sides = find_sides(rec)
        if sides is not None:
            return sides
    trained = set().union(*map(held_ids, rec.optimizers))
    candidates = [label for label, m in rec.modules.items()
                  if any(id(p) in trained for p in m.parameters())]  # fmt: skip
    shown = _names(rec)
    consumes = fed_by(rec)  # (consumer, producer)
    for b in rec.backwards:
        labels = list(dict.fromkeys(f.label for f in b.through))
        consumes |= {(x, y) for i, x in enumerate(labels) for y in labels[i + 1 :]}
    pairs = [(d, g) for d, g in consumes if d in candidates and g in candidates and d != g
             and (g, d) not in consumes]  # fmt: skip
    if named:
        ((label, role),) = named.items()
        pairs = [p for p in pairs if p[0 if role == "D" else 1] == label]
    if len(pairs) == 1:
        d, g = pairs[0]
        return {d: "D", g: "G"}
    found = ", ".join(shown[c] for c in candidates) or "none"
    raise AuditError(
        f"could not tell which modules are G and D (modules trained by an optimizer that "
        f"ran: {found}); name them with --G NAME --D NAME"
    )


def _rename(rec: Recorder, roles: dict[str, str], names: dict[str, str]) -> None:
    """Relabel the recording: provisional labels in ``roles`` become "G"/"D", every
    other module gets a label the analysis ignores, its name in ``names`` kept for what
    the report says of it (``rec.names``). Several labels of one role are a side
    (CycleGAN's two generators): one module of their calls (:mod:`.sides`)."""

    def new(label: str) -> str:
        return roles.get(label, f"other:{label}")

    members = side_members(rec, roles)
    if members:
        read_as_sides(rec, roles, members)
    # an info step beside G's and D's own steps (one over both in place of D's is no
    # InfoGAN's: a D step by the wrong optimizer, which the order then lacks)
    own = {roles.get(s.label) for s in rec.opt_steps}
    joint = {s.label: INFO for s in rec.joint_opt_steps
             if _over_g_and_d(s, roles) and set(MODULES) <= own}  # fmt: skip
    rec.names = {new(label): name for label, name in names.items() if label not in roles}
    rec.modules = {k if k in members else new(k): v for k, v in rec.modules.items()}
    rec.owner = {k: new(v) for k, v in rec.owner.items()}
    for f in rec.forwards:
        f.label = new(f.label)
        f.versions = {new(k): v for k, v in f.versions.items()}
    for b in rec.backwards:
        b.produced = {new(x) for x in b.produced}
        b.used_by = {joint.get(x) or new(x) for x in b.used_by}
    for s in rec.opt_steps:
        s.label = new(s.label)
    for s in rec.joint_opt_steps:  # G and D in one optimizer: an info step (audit.INFO)
        if s.label in joint:
            s.label = joint[s.label]
    if members:
        merge_phases(rec)


def _over_g_and_d(step, roles: dict[str, str]) -> bool:
    """Whether ``step``, of one optimizer over several modules, stepped G and D both."""
    return {roles.get(m) for m in step.modules} == set(MODULES)


def _stepped_together(rec: Recorder, roles: dict[str, str]) -> str | None:
    """Why no iteration was read where G or D took no step of its own, but one optimizer
    over both did (``opt = Adam(chain(G.parameters(), D.parameters()))`` stepping D's
    loss); None where that is not so."""
    together = [s for s in rec.joint_opt_steps if s.label != INFO and _over_g_and_d(s, roles)]
    alone = [m for m in MODULES if m not in {s.label for s in rec.opt_steps}]
    if not together or not alone:
        return None
    where = f" ({together[0].where})" if together[0].where else ""
    return (
        f"{' and '.join(alone)} took no optimizer step of its own: one optimizer over G's "
        f"and D's parameters together stepped {len(together)} time(s){where} in its "
        "place. The audit reads an update from G's and D's own steps (an optimizer over "
        "both beside them is InfoGAN's info step): give each its own optimizer"
    )


def _assign_iterations(rec: Recorder, crashed: bool) -> int:
    """Number each event's iteration from the G and D steps; return how many to analyse
    (complete iterations, and the one a crash interrupted)."""
    # an info step (audit.INFO) ends the iteration it follows, as a G or D step would
    steps = sorted([*(s for s in rec.opt_steps if s.label in MODULES), *info_steps(rec)],
                   key=lambda s: s.seq)  # fmt: skip
    ends: list[float] = []
    followed = False
    for i, s in enumerate(steps):
        if i > 0 and s.label == steps[0].label and followed:
            followed = False
            ends.append(steps[i - 1].seq)
        followed = followed or s.label != steps[0].label
    complete = len(ends) + (1 if steps and followed else 0)
    if steps:
        ends.append(steps[-1].seq if followed else float("inf"))
    for event in [*rec.forwards, *rec.backwards, *rec.opt_steps, *rec.joint_opt_steps]:
        event.iteration = next((k for k, end in enumerate(ends) if event.seq <= end), len(ends))
    if not crashed:
        return complete
    trailing = any(e.seq > ends[-1] for e in [*rec.forwards, *rec.backwards]) if ends else True
    return len(ends) + (1 if trailing else 0)


def audit_script(
    script: str | Path,
    args: list[str] | tuple[str, ...] = (),
    *,
    iterations: int = 2,
    G: str | None = None,
    D: str | None = None,
    on_swallowed: Callable[[Report], object] | None = None,
    timeout: float | None = None,
    port: bool = False,
    float64: bool = False,
) -> Report:
    """Run ``script`` as ``__main__`` with ``sys.argv = [script, *args]``, stop it after
    ``iterations`` iterations, and report on them.

    ``G``/``D`` name the modules (a global of the script, or a dotted path from one)
    when they cannot be found from the optimizers and the data flow. A crash of the
    script's loop is kept in the report (``error``, ``location``), with the iterations
    up to it analysed; :class:`AuditError` means there was nothing to audit.

    A script that catches the stop and runs on (a bare ``except:``) is stopped again at
    each module call and optimizer step; ``on_swallowed(report)`` is called with the
    report the first time, and should leave the process (the command line does), since
    such a loop may catch every stop.

    ``timeout``: seconds the script may run before its iterations are done (a loop that
    never trains, or waits forever); past them it is stopped and :class:`AuditError`
    says so. Needs the main thread of a POSIX process (a timer signal); None: no limit.

    ``port``: find the Step that equals the script's update over the audited
    iterations, verified on copies of its models (:mod:`ganstep.tools.port`); it is the
    report's ``port``. ``float64`` (with ``port``): where a Step was found, the script
    runs again with torch's default dtype float64 and that Step is verified on that run
    too, to :data:`~ganstep.tools.port.FLOAT64_TOLERANCE` (said in the port's notes).
    """
    with warnings.catch_warnings():  # the audit's own global module hooks: not the script's
        warnings.filterwarnings("ignore", message=COMPILED_WITH_GLOBAL_HOOKS, category=UserWarning)
        return _audited(script, args, iterations, G, D, on_swallowed, timeout, port, float64)


# torch's warning where a torch.compile'd module runs while global module hooks are set
# (the audit's, which see every module call)
COMPILED_WITH_GLOBAL_HOOKS = r"Using `torch\.compile\(module\)` when there are global hooks"


def _audited(script, args, iterations, G, D, on_swallowed, timeout, port, float64) -> Report:
    """:func:`audit_script`'s work (its warnings filtered)."""
    path = _checked(script, iterations, timeout)
    rec = ScriptRecorder(iterations)
    rec.capture = Capture() if port else None
    if on_swallowed is not None:
        rec.on_swallowed = partial(_leave, rec, on_swallowed, path, script, G, D)
    error = _run_recorded(rec, path, script, args, timeout)
    if isinstance(error, _Timeout):
        raise AuditError(
            f"{script} ran {timeout:g} s without finishing {iterations} iteration(s) (it took "
            f"{len(rec.opt_steps)} optimizer step(s) of G or D): stopped. A loop that waits or "
            "never trains? Give --timeout more seconds if it is only slow"
        )
    report = _report(rec, path, script, G, D, error)
    if port:
        report.port = _port(rec, report)
        run = lambda r: _run_recorded(r, path, script, args, timeout)  # noqa: E731
        if report.sides:  # (CycleGAN's: its own search in the float64 run)
            if float64 and _parted(report.port):
                report.port.notes.append(_cycle_in_float64(report, run, path, script, G, D, rec))
        elif float64 and report.port.chosen is not None:
            said = _in_float64(report, run, path, script, G, D, rec)  # (may replace port)
            report.port.notes.append(said)
        elif float64 and (_parted(report.port) or tied(report.port)):  # (may replace port)
            said = _decided_in_float64(report, run, path, script, G, D, rec)
            if report.port.equal_in != "float64":
                report.port.notes.append(said)
        elif _parted(report.port):
            hint = (
                "--verify N (in place of --port) runs the search again on the script run "
                "in float64 too, where a Step that parts only by float32's rounding equals"
            )
            if split := split_casts(rec, report.port.iterations):  # and autocast's
                hint += f" (and by {split[0]}'s, where autocast changes nothing): {split[1]}"
            report.port.notes.append(hint)
        elif tied(report.port):
            report.port.notes.append(
                "--verify N (in place of --port) runs the search again on the script run "
                f"in float64 too, whose tolerance ({FLOAT64_TOLERANCE:g}) may tell them apart"
            )
    return report


def _checked(script: str | Path, iterations: int, timeout: float | None) -> Path:
    """audit_script's arguments checked; the script's resolved path."""
    positive_int(iterations, "iterations")
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
        raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    path = Path(script).resolve()
    if not path.is_file():
        raise AuditError(f"{script}: no such script")
    return path


def _leave(rec: ScriptRecorder, on_swallowed: Callable[[Report], object], path: Path,
           script: str | Path, G: str | None, D: str | None) -> None:  # fmt: skip
    """A script swallowed the stop: report what was recorded to ``on_swallowed``."""
    rec.on_swallowed = None
    rec.undo()  # no hook of the audit runs while it reports
    rec.trim()
    on_swallowed(_report(rec, path, script, G, D, None))


# how the notes of a float64 repeat begin (and of one whose torch.FloatTensor was doubled)
FLOAT64_HEAD = "float64 (the script run again, torch's default dtype float64)"
FLOAT64_DOUBLED_HEAD = FLOAT64_HEAD[:-1] + ", its torch.FloatTensor as torch.DoubleTensor)"


@contextlib.contextmanager
def _float64_default(float_tensor_doubled: bool = False) -> Iterator[None]:
    """torch's default dtype float64 inside (as the script's repeat runs, and so the Step
    made on it), the one before after; with ``float_tensor_doubled``, ``torch.FloatTensor``
    the double one too, as PyTorch-GAN's scripts name their float32 (``Tensor =
    torch.FloatTensor``, ``Tensor(np.random.normal(...))``), which otherwise meets the
    float64 parameters as float32 and fails."""
    saved = torch.get_default_dtype(), torch.FloatTensor, torch.cuda.FloatTensor
    torch.set_default_dtype(torch.float64)
    if float_tensor_doubled:  # (torch.cuda's too: the scripts pick it where CUDA is)
        torch.FloatTensor, torch.cuda.FloatTensor = torch.DoubleTensor, torch.cuda.DoubleTensor
    try:
        yield
    finally:
        torch.set_default_dtype(saved[0])
        torch.FloatTensor, torch.cuda.FloatTensor = saved[1:]


def _port_in_float64(rec: ScriptRecorder, again: Report, only: tuple | None = None,
                     ignore: frozenset[str] = frozenset(),
                     refit: bool = False) -> Port:  # fmt: skip
    """The port of the float64 repeat ``rec`` (reported as ``again``) to FLOAT64_TOLERANCE,
    under the default dtype it ran with: what the Step makes too (StyleGAN2's style mixing
    draws torch.rand([]) in it: a double takes two words of the generator); the entries
    ``ignore`` names not compared; ``refit``: ``only``'s G terms weighed on this run."""
    with _float64_default(rec.float_tensor_doubled):
        return port_of(rec, again, rec.capture, _names(rec), only=only,
                       tolerance=FLOAT64_TOLERANCE, ignore=ignore, refit=refit)  # fmt: skip


def _float64_run(report: Report, run, path: Path, script, G, D,
                 first: ScriptRecorder) -> tuple[ScriptRecorder, Report, str] | str:  # fmt: skip
    """The script run again by ``run`` (silenced) with torch's default dtype float64,
    recorded and reported, with the head of its notes; or why it was not (a note). Where
    that run fails or gives G or D float32 tensors, it is run once more with
    ``torch.FloatTensor`` as the double one (PyTorch-GAN's scripts name their float32 so:
    ``Tensor(np.random.normal(...))``), taken where that gives them float64 alone."""
    repeated = _float64_once(report, run, path, script, G, D, first, doubled=False)
    if isinstance(repeated, str) or _float32_given(repeated[0]):
        again = _float64_once(report, run, path, script, G, D, first, doubled=True)
        if not isinstance(again, str) and not _float32_given(again[0]):
            return (*again, FLOAT64_DOUBLED_HEAD)
    return repeated if isinstance(repeated, str) else (*repeated, FLOAT64_HEAD)


def _kept_float32(rec: ScriptRecorder) -> str:
    """Where a backward of the float64 repeat took a loss of another floating dtype (the
    script's ``.float()`` targets keep its losses float32 under any default dtype): that,
    as the cause the repeat cannot rule out; "" otherwise."""
    kept = next((b for b in rec.backwards if b.dtypes - {torch.float64}), None)
    if kept is None:
        return ""
    dtype = str(min(kept.dtypes - {torch.float64}, key=str)).removeprefix("torch.")
    return (f"; that run's losses were not all float64 (a backward of a {dtype} loss at "
            f"{kept.where}: a tensor the script makes {dtype} itself, such as .float() "
            f"targets), so it rounds as {dtype} there and cannot decide to 1e-12")  # fmt: skip


def _float32_given(rec: ScriptRecorder) -> bool:
    """Whether a call of G or D in the run was given a floating tensor not float64."""
    return any(isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64
               for args, _ in rec.capture.calls.values() for t in args)  # fmt: skip


def _float64_once(report: Report, run, path: Path, script, G, D, first: ScriptRecorder,
                  doubled: bool) -> tuple[ScriptRecorder, Report] | str:  # fmt: skip
    """One float64 run of :func:`_float64_run`, ``torch.FloatTensor`` doubled or not."""
    rec = ScriptRecorder(report.iterations)
    rec.capture = Capture()
    rec.made_before = first.made_folders
    rec.float_tensor_doubled = doubled
    try:
        with _float64_default(doubled):
            silent = io.StringIO()
            with contextlib.redirect_stdout(silent), contextlib.redirect_stderr(silent):
                error = run(rec)
            again = _report(rec, path, script, G, D, error)
    except AuditError as e:
        return f"{FLOAT64_HEAD}: not repeated, the run found no G and D to audit ({e})"
    if error is not None and report.error is None:
        return f"{FLOAT64_HEAD}: not repeated, the script fails so ({_describe(error)})"
    kept = [(n, p.dtype) for m in rec.modules.values() for n, p in m.named_parameters()
            if p.is_floating_point() and p.dtype != torch.float64]  # fmt: skip
    if kept:
        return (f"{FLOAT64_HEAD}: not repeated, the script makes its parameters {kept[0][1]} "
                f"itself ({kept[0][0]}...)")  # fmt: skip
    return rec, again


def _in_float64(report: Report, run, path: Path, script, G, D, first: ScriptRecorder) -> str:
    """The script run again by ``run`` (:func:`_float64_run`), and the Step found in
    ``report.port`` verified on that run: what came of it. Where it parts there and a
    variant of its candidate that float32 cannot tell from it
    (``port.float64_variants``) equals in float64, the variant, verified again on
    ``first`` (the float32 run), replaces it in ``report.port``."""
    found = report.port
    repeated = _float64_run(report, run, path, script, G, D, first)
    if isinstance(repeated, str):
        return repeated
    rec, again, head = repeated
    try:
        again.port = _port_in_float64(rec, again, only=found.chosen)
    except Exception as e:  # the report and the float32 port stand without it
        return f"{head}: the repeat failed ({_describe(e)})"
    if again.port.code is None:
        why = again.port.notes[-1]
        if "they part at iteration" not in why:  # it raised: the run's inputs, not the math
            return f"{head}: not repeated, the Step refuses that run's inputs ({why})"
        swapped = (_float64_variant(report, again, rec, first)
                   or _float64_refit(report, again, rec, first))  # fmt: skip
        if swapped is not None:
            return f"{head}: {swapped}"
        return f"{head}: not equal to {FLOAT64_TOLERANCE:g}: {why}{_kept_float32(rec)}"
    found.float64_difference = again.port.max_difference
    return (
        f"{head}: equal too, largest difference {found.float64_difference:.3g} "
        f"(<= {FLOAT64_TOLERANCE:g})"
    )


def _float64_variant(report: Report, again: Report, rec: ScriptRecorder,
                     first: ScriptRecorder) -> str | None:  # fmt: skip
    """Where a float64 variant of the chosen candidate equals the float64 run: that
    Step, verified on the float32 run too, put in ``report.port``; what was done (None
    where no variant equals)."""
    schedule, candidate = report.port.chosen
    for variant in float64_variants(candidate):
        tried = _port_in_float64(rec, again, only=(schedule, variant))
        if _adopted(report, first, tried, (schedule, variant)):
            return (
                f"{candidate.objective} parts from it, {variant.objective} equals it (largest "
                f"difference {tried.max_difference:.3g} <= {FLOAT64_TOLERANCE:g}): the Step "
                f"printed takes {variant.objective}, which float32 cannot tell apart"
            )
    return None


def _float64_refit(report: Report, again: Report, rec: ScriptRecorder,
                   first: ScriptRecorder) -> str | None:  # fmt: skip
    """Where the chosen candidate left G terms unread (no gradient through them in the
    script's own run: ``Candidate.unread``): their weights read from the float64 run, and
    that Step, equal there and verified on the float32 run too, put in ``report.port``;
    what was done (None where it does not equal)."""
    chosen = report.port.chosen
    if not chosen[1].unread:
        return None
    tried = _port_in_float64(rec, again, only=chosen, refit=True)
    if not _adopted(report, first, tried, tried.chosen):
        return None
    return refit_said(chosen, tried.chosen, tried.max_difference)


def _adopted(report: Report, first: ScriptRecorder, tried: Port, chosen: tuple) -> bool:
    """Where ``tried`` (a port of the float64 run) found a Step and ``chosen`` equals the
    script's own run too: that Step put in ``report.port``, with ``tried``'s difference as
    its float64 one; whether it was."""
    if tried.code is None:
        return False
    found = port_of(first, report, first.capture, _names(first), only=chosen)
    if found.code is None:  # (float32 tells apart what float64 cannot: not expected)
        return False
    found.float64_difference = tried.max_difference  # (its own notes: the same kinds)
    report.port = found
    return True


def _parted(found: Port) -> bool:
    """Whether no Step was found and some candidate ran and parted from the script (not
    all refused its models or inputs): where float32's rounding may be all that parts
    them."""
    return found.code is None and any("they part at iteration" in n for n in found.notes)


def _decided_in_float64(report: Report, run, path: Path, script, G, D,
                        first: ScriptRecorder) -> str:  # fmt: skip
    """Where every Step tried parted from the script's own (float32) run: the search
    repeated on its float64 run (:func:`_float64_run`), to FLOAT64_TOLERANCE. Where a
    Step equals there, it is put in ``report.port`` as equal in float64, with its
    difference in the float32 run, where that is most, and how far the script's two runs
    moved that entry themselves (a bias whose gradient is 0 in exact arithmetic, before
    BatchNorm or a softmax over its rows, moves by Adam's steps on rounding alone in
    float32, by nothing in float64); what came of it. Where several Steps equal the
    float32 run instead, :func:`_tie_broken`."""
    repeated = _float64_run(report, run, path, script, G, D, first)
    if isinstance(repeated, str):
        return repeated
    rec, again, head = repeated
    labels = tied(report.port)  # several equal the float32 run: float64 may tell them apart
    rounding = {}
    try:
        there = _port_in_float64(rec, again)
        # again, but for the entries Adam moved on rounding alone (not where several equal)
        if there.code is None and not labels:
            rounding = _rounding(first, report, rec, again, lambda r, _: [
                (_names(r)[role], r.modules[role]) for role in ("G", "D")])  # fmt: skip
            if rounding:
                there = _port_in_float64(rec, again, ignore=frozenset(rounding))
    except Exception as e:  # the float32 port stands without it
        return f"{head}: the search failed there ({_describe(e)})"
    if labels:
        return _tie_broken(report, there, head, first, labels)
    if there.code is None:
        return f"{head}: no Step tried equals that run either"
    if rounding:
        there.notes.append(not_compared(rounding))
    where = parted_line(report.port.notes, there.chosen) or ""
    found = port_of(first, report, first.capture, _names(first), only=there.chosen,
                    tolerance=math.inf)  # fmt: skip
    if found.code is None:  # (it ran on the float64 run: not expected)
        return f"{head}: a Step equals that run, but not the script's own: {where}"
    if found.max_difference <= TOLERANCE:  # the script's own run's too, untried there
        return _equal_in_both(report, there, found, head)
    key = re.search(r"most in (\S+) \(", where)
    moved = [script_moved(r, r.capture, _names(r), key[1]) if key else None
             for r in (first, rec)]  # fmt: skip
    said = (f"{head}: this Step equals it, largest difference "
            f"{there.max_difference:.3g} (<= {FLOAT64_TOLERANCE:g}); in the script's own "
            f"float32 run every Step tried parted (past {TOLERANCE:g}), this one so: "
            f"{where}")  # fmt: skip
    if None not in moved:
        said += (f"; the script itself moved {key[1]} by {moved[0]:.3g} in float32 and by "
                 f"{moved[1]:.3g} in float64")  # fmt: skip
        if moved[1] <= NOISE_MOVED * moved[0]:
            said += (": its gradient is float32's rounding alone (0 in exact arithmetic: a "
                     "bias before BatchNorm or a softmax over its rows), which Adam makes "
                     "steps of, and no computation in another order can follow it")  # fmt: skip
    if split := split_casts(first, report.port.iterations):  # autocast's rounding
        found.rounding = f"{split[0]}'s rounding under the script's autocast"
        said += f": {split[1]}"
    found.notes = [n for n in there.notes if n not in found.notes] + found.notes + [said]
    found.float64_difference, found.equal_in = there.max_difference, "float64"
    report.port = found
    return said


def _equal_in_both(report: Report, there: Port, found: Port, head: str) -> str:
    """Where the Step found equal to the script's float64 run (``there``) equals its own
    float32 run too (``found``), though no Step the search tried there did (it left out
    a G term that gave G no gradient in the script's first iteration, or read G's terms'
    weights otherwise from float32's rounding of G's first gradient): that Step put in
    ``report.port``, equal in both; what came of it."""
    if any(LEFT_OUT in n for n in report.port.notes):
        why = (": the Steps tried there left out a G term that gave G no gradient in the "
               "script's first iteration, and this run's first G gradient weighs it")  # fmt: skip
    elif found.chosen[1].g_fit:
        why = (": there G's terms were weighed from its own first G gradient, whose "
               "float32 rounding read them otherwise, and this run's reads the weights "
               "printed")  # fmt: skip
    else:
        why = ""
    said = (f"{head}: this Step equals it, largest difference {there.max_difference:.3g} (<= "
            f"{FLOAT64_TOLERANCE:g}), and the script's own run too (largest difference "
            f"{found.max_difference:.3g} <= {TOLERANCE:g}), which no Step tried there "
            f"equalled{why}")  # fmt: skip
    found.notes = [n for n in there.notes if n not in found.notes] + found.notes
    found.float64_difference = there.max_difference
    report.port = found
    return said  # (the caller notes it)


def _tie_broken(report: Report, there: Port, head: str, first: ScriptRecorder,
                labels: list[str]) -> str:  # fmt: skip
    """Where several Steps equal the script's float32 run (``labels``), the search on its
    float64 run (``there``): where one of them alone equals that, to FLOAT64_TOLERANCE
    (their difference a small part of a gradient, within float32's tolerance, past
    float64's), it is put in ``report.port`` as found in the float32 run; what came of
    it."""
    if there.code is None:
        more = tied(there)
        return (f"{head}: {len(more)} Steps equal that run too, which cannot tell them apart"
                if more else f"{head}: none of them equals that run")  # fmt: skip
    if not among(labels, there.chosen):
        return f"{head}: a Step equals that run, but none of those {len(labels)}"
    found = port_of(first, report, first.capture, _names(first), only=there.chosen)
    if found.code is None:  # (it equalled in the search: not expected)
        return f"{head}: a Step equals that run, but not the script's own"
    found.float64_difference = there.max_difference
    report.port = found
    return (f"{head}: this Step equals it, largest difference {there.max_difference:.3g} (<= "
            f"{FLOAT64_TOLERANCE:g}), and alone of the {len(labels)} Steps that equal the "
            f"script's own run to {TOLERANCE:g} ({'; '.join(labels)})")  # fmt: skip


# the float64 run's move of an entry at most this part of the float32 run's: its float32
# moves are rounding (a gradient of 1e-17 against Adam's eps of 1e-8 moves by nothing)
NOISE_MOVED = 1e-3


def _rounding(first: ScriptRecorder, report: Report, rec: ScriptRecorder, again: Report,
              modules: Callable[[ScriptRecorder, Report], list[tuple[str, nn.Module]]],
              ) -> dict[str, tuple[float, float]]:  # fmt: skip
    """:func:`rounding_entries` of the script's float32 run ``first`` and float64 run
    ``rec`` (reported as ``report`` and ``again``) over the iterations both verify, in
    the ``modules`` (each as (name, module)) of each."""
    last = min(_verifiable(first, report), _verifiable(rec, again)) - 1
    runs = [(modules(r, r_report), r.capture,
             max(s.seq for s in r.opt_steps if s.iteration == last))
            for r, r_report in ((first, report), (rec, again))]  # fmt: skip
    return rounding_entries(*runs, NOISE_MOVED)


def _port(rec: ScriptRecorder, report: Report) -> Port:
    """The port of the audited script; a failure of its own is said, not raised (the
    report stands without it)."""
    if report.sides:
        return _cycle_port(rec, report)
    try:
        return port_of(rec, report, rec.capture, _names(rec))
    except Exception as e:
        return Port(None, report.iterations, notes=[
            f"the port failed ({type(e).__name__}: {e}); the report above stands"])  # fmt: skip


def _cycle_port(rec: ScriptRecorder, report: Report, tolerance: float = TOLERANCE,
                ignore: frozenset[str] = frozenset()) -> Port:  # fmt: skip
    """The port of a script read as two sides: CycleGAN's, its CycleStep verified
    (:mod:`.cycle_port`); any other, what stands in the way."""
    n = _verifiable(rec, report)
    if report.cycle is None or report.schedule is None or n == 0:
        why = ("no CycleStep matches its update order" if report.cycle is not None else
               "a Step takes one G and one D, CycleStep two of each")  # fmt: skip
        heads = report.g_and_heads
        if heads is not None:  # the Step is written by hand: the port maps a G of one module
            why = f"the port maps a G of one module, so write the Step by hand: {heads.advice()}"
        return Port(None, n, notes=[f"its G and D are sides of several modules: {why}"])
    try:
        return cycle_port(rec, report, rec.capture, n, tolerance, ignore)
    except Exception as e:
        return Port(None, n, notes=[
            f"the port failed ({type(e).__name__}: {e}); the report above stands"])  # fmt: skip


def _cycle_in_float64(report: Report, run, path: Path, script, G, D,
                      first: ScriptRecorder) -> str:  # fmt: skip
    """Where every CycleStep tried parted from the script's own (float32) run: the search
    repeated on its float64 run, to FLOAT64_TOLERANCE; a CycleStep equal there is put in
    ``report.port`` as equal in float64, with where it parted in the float32 run (a
    bias before InstanceNorm, whose gradient is float32's rounding alone, which Adam
    makes steps of); what came of it."""
    repeated = _float64_run(report, run, path, script, G, D, first)
    if isinstance(repeated, str):
        return repeated
    rec, again, run_head = repeated
    if again.cycle is None or again.schedule != report.schedule:
        return f"{run_head}: not searched, the run reads otherwise ({again.schedule})"
    rounding = _rounding(first, report, rec, again, lambda r, r_report: list(
        zip(CYCLE_NAMES, cycle_modules(r, r_report.cycle), strict=True)))  # fmt: skip
    try:
        there = _cycle_port(rec, again, FLOAT64_TOLERANCE, frozenset(rounding))
    except Exception as e:  # the float32 port stands without it
        return f"{run_head}: the search failed there ({_describe(e)})"
    if there.code is None:
        return f"{run_head}: no CycleStep tried equals that run either"
    if rounding:
        there.notes.append(not_compared(rounding))
    head = said_cycle(there.step_options) + ": "
    where = next((t.removeprefix(head) for t in report.port.notes if t.startswith(head)), "")
    gap = re.search(r"\(([0-9.e+-]+)\)$", where)
    note = (f"{run_head}: this CycleStep equals it, largest difference "
            f"{there.max_difference:.3g} (<= {FLOAT64_TOLERANCE:g}); in the script's own "
            f"float32 run every CycleStep tried parted (past {TOLERANCE:g}), this one so: "
            f"{where or 'not tried there'}")  # fmt: skip
    there.notes.append(note)
    there.float64_difference, there.equal_in = there.max_difference, "float64"
    there.max_difference = float(gap[1]) if gap else math.inf
    report.port = there
    return note


def _untrained(rec: ScriptRecorder, script) -> str:
    """Why a script that ended on its own took no step of G or D the audit could read."""
    if rec.forks:
        return (
            f"{script} {rec.exit_how} after starting {rec.forks} child process(es) "
            "(os.fork, multiprocessing), and took no optimizer step itself: its training "
            "seems to run in a child, which the audit does not follow; audit the function "
            "the child runs (--function), or run the loop in the main process"
        )
    if rec.joint_opt_steps:
        return _joint(script, rec)
    if rec.unowned_steps:
        return (
            f"{script} {rec.exit_how} after {rec.unowned_steps} optimizer step(s) on the "
            "parameters of modules the audit never saw called: a module whose forward the "
            "script calls itself (model.forward(x)) is seen where the script's own code "
            "holds it (a global, a local of its running functions, or their attributes) "
            "when its optimizer is made; call model(x), or make the optimizer where the "
            "script holds the module"
        )
    return (
        f"{script} {rec.exit_how} before any optimizer step: nothing to audit (does it "
        "train, with the arguments given after --?)"
    )


def _report(rec: ScriptRecorder, path: Path, script, G, D, error) -> Report:
    """The report of what ``rec`` recorded; ``error``: what the script raised, if any."""
    location = crash_location(error, str(path)) if error is not None else None
    unread = not rec.opt_steps and (not rec.joint_opt_steps or find_sides(rec) is None)
    if error is None and unread and (rec.exit_code is not None or rec.joint_opt_steps):
        raise AuditError(_untrained(rec, script))
    head = _head_beside_g(rec)  # (read before the labels are renamed)
    try:
        roles = _find_g_and_d(rec, G, D)
    except AuditError as e:
        if error is not None:
            raise AuditError(f"{location or script}: {_describe(error)}, before G and D "
                             "were found") from error  # fmt: skip
        raise AuditError(f"{script}: {e}{_ended(rec)}{head}") from None
    names, members = _names(rec), side_members(rec, roles)
    heads = g_and_its_heads(rec, roles, members)  # (by the labels before the renaming)
    _rename(rec, roles, names)
    done = _assign_iterations(rec, error is not None)
    if done == 0 and (both := _stepped_together(rec, roles)):
        raise AuditError(both)
    if done == 0:
        raise AuditError(
            f"{script} ran no complete iteration of G and D steps{_ended(rec)}: nothing to "
            f"audit (does it train, with the arguments given after --?){head}"
        )
    report = analyse(rec, done, error, location)
    if members:
        schedule = report.schedule  # (of G's side as one G)
        _read_sides(report, rec, names, roles, members)
        if heads is not None and report.cycle is None:
            judged, others = heads
            report.g_and_heads = GAndItsHeads(names[judged], tuple(names[h] for h in others),
                                              schedule)  # fmt: skip
    return report


def _read_sides(report: Report, rec: ScriptRecorder, names: dict, roles: dict,
                members: dict) -> None:  # fmt: skip
    """Say which modules each side is (``names``: the script's name of each provisional
    label, in the order the script first called them; ``members``: the sides of several),
    and the CycleStep of a CycleGAN's update in place of the schedule read for one G and
    one D."""
    report.sides = {m: [name for label, name in names.items() if roles.get(label) == m]
                    for m in MODULES}  # fmt: skip
    schedule = report.schedule or ""
    d_steps = re.search(r"(?:d_steps|g_every)=(\d+)", schedule)  # D steps to a G step
    order = report.order if schedule and "g_steps" not in schedule else "other"
    report.cycle = read_cycle(rec, names, members, order, int(d_steps[1]) if d_steps else 1)
    report.schedule = (report.cycle.call() or None) if report.cycle is not None else None


def _ended(rec: ScriptRecorder) -> str:
    """How the script ended, when it ended by itself, for a message."""
    if rec.exit_code is None:
        return ""
    return f" (the script {rec.exit_how} after {len(rec.opt_steps)} optimizer step(s))"


def _run_recorded(
    rec: ScriptRecorder, path: Path, script, args, timeout: float | None = None
) -> BaseException | None:
    """Run the script as ``__main__`` under ``rec``'s hooks, its argv ``args``; what it
    raised (None when it ran to its end, exited with 0 or was stopped by ``rec``).
    Everything it changed in this process (argv, path, cwd, the hooks, ``os._exit``) is
    put back."""
    saved = sys.argv, list(sys.path), os.getcwd(), os._exit
    rec.script_file = str(path)
    streams = sys.stdout, sys.stderr  # the report is printed on them, whatever the script did
    unpatch, unpatch_mkdir = _patch_torch(rec), _patch_mkdir(rec)

    def exit_now(code: int = 0) -> None:  # os._exit would leave without a report
        raise _Exit(code)

    original_excepthook = threading.excepthook

    def quiet_stop(hook_args) -> None:  # a training thread ended by the audit's stop
        if not issubclass(hook_args.exc_type, _Stop):
            original_excepthook(hook_args)

    sys.argv = [str(script), *args]
    sys.path.insert(0, str(path.parent))  # its own imports, as python would
    os._exit = exit_now
    threading.excepthook = quiet_stop
    pre = nn.modules.module.register_module_forward_pre_hook(rec.pre)
    post = _post_hook(rec)
    undone = []

    def undo() -> None:
        if undone:
            return
        undone.append(True)
        pre.remove()
        post.remove()
        rec.unwrap()
        rec.__exit__(None, None, None)
        unpatch()
        unpatch_mkdir()
        threading.excepthook = original_excepthook
        sys.argv, sys.path[:], os._exit = saved[0], saved[1], saved[3]
        os.chdir(saved[2])
        sys.stdout, sys.stderr = _reopened(streams[0], 1), _reopened(streams[1], 2)
        _FORKS.recorder = None

    rec.undo = undo
    _FORKS.recorder = rec  # a fork: the child runs un-instrumented, the parent counts it
    rec.__enter__()
    timer = _time_limit(timeout)
    try:
        return _run_as_main(rec, path, script)
    except _Timeout as e:
        return e
    finally:
        timer()
        undo()


def _post_hook(rec: ScriptRecorder):
    """``rec.post`` after every module call, given the tensors passed by keyword too
    (``D(x=real)``) where torch's global hooks take keywords (torch 2.11 does, 2.5
    does not: there a call by keywords alone is not seen)."""
    register = nn.modules.module.register_module_forward_hook
    if "with_kwargs" not in inspect.signature(register).parameters:
        return register(rec.post, always_call=True)

    def post(module: nn.Module, args: tuple, kwargs: dict, out: object = _RAISED) -> None:
        if out is _RAISED:  # torch calls it (module, args, result) where the forward raised
            rec.post(module, args, None, raised=True)
        else:
            rec.post(module, with_tensor_kwargs(args, kwargs), out, keywords=kwargs)

    return register(post, with_kwargs=True, always_call=True)


_RAISED = object()  # no output: the module's forward raised


def _patch_torch(rec: ScriptRecorder) -> Callable[[], None]:
    """Note each optimizer the script makes (and, for ``--port``, its state then and
    the batches its DataLoaders give it); returns what undoes it."""
    original_init = torch.optim.Optimizer.__init__
    loader_iter = torch.utils.data.dataloader._BaseDataLoaderIter
    original_next = loader_iter.__next__

    def noting_init(opt, *a, **k):
        original_init(opt, *a, **k)
        rec.optimizers.append(opt)
        rec.follow_direct_calls(opt)
        if rec.capture is not None:
            rec.capture.optimizer_made(opt)

    def noting_next(it):  # the real labels of a D that is not given them (ACGAN's)
        batch = original_next(it)
        if rec.capture is not None:
            rec.capture.batch_given(batch)
        return batch

    def unpatch() -> None:
        torch.optim.Optimizer.__init__ = original_init
        loader_iter.__next__ = original_next

    torch.optim.Optimizer.__init__ = noting_init
    loader_iter.__next__ = noting_next
    return unpatch


def _patch_mkdir(rec: ScriptRecorder) -> Callable[[], None]:
    """Note each folder the script makes (``os.mkdir``, which ``os.makedirs`` and
    ``Path.mkdir`` call); where ``rec`` repeats a run, a folder that run made is taken as
    made (a script's ``os.makedirs(logdir)`` would stop its second run, not its first);
    returns what undoes it."""
    original = os.mkdir

    def noting_mkdir(path, *args, **kwargs):
        if kwargs.get("dir_fd") is not None:  # a path relative to a descriptor: not noted
            return original(path, *args, **kwargs)
        where = os.path.abspath(os.fspath(path))
        if where in rec.made_before and os.path.isdir(where):
            return None
        original(path, *args, **kwargs)
        rec.made_folders.add(where)
        return None

    def unpatch() -> None:
        os.mkdir = original

    os.mkdir = noting_mkdir
    return unpatch


def _reopened(stream, fd: int):
    """``stream``, or if the script closed it, a new one on a copy of ``fd`` (1 or 2)."""
    if not getattr(stream, "closed", False):
        return stream
    try:
        return os.fdopen(os.dup(fd), "w", encoding=getattr(stream, "encoding", None) or "utf-8",
                         errors="backslashreplace")  # fmt: skip
    except OSError:  # the descriptor itself is gone: nothing to print on
        return stream


class _Forks:
    """Told of every os.fork (os.register_at_fork cannot be undone, so it is registered
    once): the child stops being audited, the parent counts the children."""

    def __init__(self) -> None:
        self.recorder: ScriptRecorder | None = None
        os.register_at_fork(after_in_child=self._child, after_in_parent=self._parent)

    def _child(self) -> None:
        if self.recorder is not None and self.recorder.undo is not None:
            self.recorder.undo()
            self.recorder = None

    def _parent(self) -> None:
        if self.recorder is not None:
            self.recorder.forks += 1


_FORKS = _Forks()


def _time_limit(seconds: float | None) -> Callable[[], None]:
    """Raise :class:`_Timeout` in the main thread after ``seconds``; return what stops the
    timer. No limit without a main thread's timer signal (or with ``seconds`` None)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds is None or not usable:
        return lambda: None

    def expire(signum, frame) -> None:
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def stop() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return stop


def _run_as_main(rec: ScriptRecorder, path: Path, script) -> BaseException | None:
    """``runpy`` the script; note on ``rec`` how it ended; return what it raised that
    the audit reports (None when it ran to its end, exited with 0 or was stopped)."""
    try:
        runpy.run_path(str(path), run_name="__main__")
        rec.exit_code, rec.exit_how = 0, "ran to its end"
    except _Stop:
        pass
    except SyntaxError as e:
        if e.filename == str(path):
            raise AuditError(f"{script}:{e.lineno}: not valid Python ({e.msg})") from None
        return e
    except (SystemExit, _Exit) as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        called = f"called os._exit({code})" if isinstance(e, _Exit) else None
        rec.exit_code = code
        rec.exit_how = called or ("exited with status 0" if code == 0 else f"exited with "
                                  f"status {code}")  # fmt: skip
        if code != 0:
            return e
    except Exception as e:  # the script's own failure: analysed below
        return e
    return None


# torch 2.5's dispatch modes (the audit's FLOP count is one) cannot hand a Tensor
# subclass back (BigGAN's Distribution z): the op fails under the audit alone
_SUBCLASS_UNDER_A_MODE = "Creating a new Tensor subclass"


def _joint(script: str | Path, rec: ScriptRecorder) -> str:
    """Why a script whose every optimizer step was over several modules is not audited;
    two optimizers over two modules each are CycleGAN's (its two generators chained in
    one, its two discriminators in the other), which ganstep's CycleStep trains."""
    names = global_names(rec.scope)

    def name(label: str) -> str:  # the script's name of the module (model.netG_A)
        module = rec.modules[label]
        return names.get(id(module)) or path_to(rec.scope, module) or label

    spans = sorted(sorted(map(name, labels)) for labels in {s.modules for s in rec.joint_opt_steps})
    named = "; ".join(" and ".join(labels) for labels in spans)
    how = rec.exit_how or "was stopped by the audit"
    said = (f"{script} {how} after {len(rec.joint_opt_steps)} optimizer step(s), each of one "
            f"optimizer over several modules at once ({named})")  # fmt: skip
    if len(spans) == 2 and all(len(labels) == 2 for labels in spans):
        return (
            f"{said}: two optimizers over two modules each, but not CycleGAN's two sides "
            "(its generators in one optimizer, each called on the other's outputs, its "
            "discriminators on theirs and never the other way round), so the audit cannot "
            f"tell G from D{_head_beside_g(rec)}"
        )
    return f"{said}: the audit reads G's and D's steps apart; give each its own optimizer"


def _head_beside_g(rec: ScriptRecorder) -> str:
    """Where one optimizer holds a module called on draws alone (G) and a head called on
    an output of a module it does not hold that was called on G's (InfoGAN's Q head on
    D's body, which Natsu6767's optimG holds with netG): what a Step takes for it, as the
    end of a sentence; else ""."""
    pairs = fed_by(rec)  # (consumer, producer)
    fed = {consumer for consumer, _ in pairs}
    owned = {label: {id(p) for p in m.parameters()} for label, m in rec.modules.items()}
    names = _names(rec)
    for held in map(held_ids, rec.optimizers):
        mine = [label for label, ids in owned.items() if ids and ids <= held]
        for g, head in ((g, h) for g in mine if g not in fed for h in mine if h != g):
            if any(c == head and d not in mine and (d, g) in pairs for c, d in pairs):
                return (f". If {names[head]} is a head on D's features trained with G "
                        f"(InfoGAN's Q head), a Step takes it in opt_g beside G ({names[g]}), "
                        "with D one module that returns its features too: "
                        "docs/loops.md#infogan-in-one-g-step; the audit does not read such a "
                        "head yet")  # fmt: skip
    return ""


def _describe(error: BaseException) -> str:
    if isinstance(error, SystemExit | _Exit):
        return f"the script exited with status {error.code}"
    text = f"{type(error).__name__}: {error}".splitlines()[0]
    if _SUBCLASS_UNDER_A_MODE in text and torch.__version__ < "2.6":
        text += (f" (the audit's FLOP count, not the script: torch {torch.__version__} "
                 "cannot pass a Tensor subclass through it; audit with torch >= 2.6)")  # fmt: skip
    cause = known_cause(error)
    return text if cause is None else f"{text} ({cause})"
