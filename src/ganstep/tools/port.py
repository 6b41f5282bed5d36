"""``ganstep audit --port``: from an audited script to the Step that equals its update,
found by verification on the script's own models, batches and random draws.

While the script runs (:class:`Capture`), the audit keeps what it needs to replay the
update: each module's state when the script first called it, each optimizer's state
when the script made it, every top-level call's arguments with torch's generator
state at that call, and every module's and optimizer's state after each optimizer
step. Afterwards (:func:`port`), copies of G and D start from the first states, new
optimizers of the script's kinds from theirs, and every candidate Step (the audit's
schedule, on ``g_batch=k`` times the rows where G's calls took two sizes, G's step
regenerating from the D step's z where G was given a z again (``reuse_z``), or the n_critic
loop its ``d_steps=k`` may be, with each objective, loss scale and, for image-to-image,
L1 weight that could be the script's) runs the audited
iterations on the real batches the script gave D, ``latent`` (or, without z, each
call) returning what the script gave G and setting torch's generator to its state at
that call (so that a penalty's draws and Dropout masks follow the script's stream);
each optimizer step of the copies takes the settings the script's took at its step of
that count (a learning-rate scheduler's rates).
A D given G's condition filled over the image (one constant map per entry of G's
one-hot vector) is given it through a printed ``FilledD``, the real batches' conditions
as G takes them; fakes made for their iteration's real conditions take
``condition="real"``. A G whose inputs are data, not draws (beside the real batch in
the DataLoader's batch, or that batch made over: ccgan.py's masked images), is given
them as each real batch's condition, named as the script names them at G's call.
A D returning (scores, class logits) beside a G given the fakes' labels is ACGAN's: its
class terms are tried at the scripts' weights, on the real labels the script's
DataLoader gave beside each real batch; beside a G given none it is SGAN's, the fakes a
class of their own (D's last), the real labels given the Step as a dict batch's extra
target. The script's calls of G or D outside its update after an iteration's steps (a
sample grid in training mode, which moves BatchNorm's statistics) are made on the
copies where it made them. A script whose update ran G
and D under ``torch.autocast`` to bfloat16 or float16 is tried with the Step's own
``precision`` (``"bf16"``, ``"fp16"``), which autocasts the forwards of each phase. A
G whose parts the script calls itself (StyleGAN2-ADA's ``G.mapping``, then
``G.synthesis``) is called whole on the call's inputs, or through a printed
``StyleMixedG`` where two mappings are mixed (style mixing); G's own lazy steps
(StyleGAN2-ADA's Greg) are tried as a path length, at the latents G returns where its
calls there were given a keyword its others were not (rosinality's
``return_latents=True``). A G given one or two z in a list (rosinality's
``mixing_noise``) is replayed with Python's generator as it was at each of G's calls,
where G draws its mixing layer.
Each iteration's end is compared with the script's states there (and each optimizer
step with the script's same step while the copies step in the script's order: a step
more than ROUNDING_GAP apart ends the candidate's run); where several
candidates are equal there, an objective's one number of state (BEGAN's k) is compared
with the script's number globals, and then the losses each candidate logged with the
values the script's backward passes took (hinge and Wasserstein inside the hinge's
margin), where that tells them apart. The one candidate
whose parameters, buffers and optimizer states stay within :data:`TOLERANCE` of the
script's is printed as code, with the largest difference; where none or several do,
none is printed, and what stood in the way is said (where each parts, or which several
the iterations cannot tell apart). Nothing is guessed: every choice printed was
verified, and the draws it prints are described from what the script drew (their law,
read from their values: the script may have drawn them with numpy).
"""

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import json
import linecache
import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import partial
from itertools import product
from pathlib import Path
from types import ModuleType

import torch
from torch import Tensor, nn
from torch.nn.parameter import is_lazy

from ..engine.objectives import (
    BEGAN,
    BGAN,
    EBGAN,
    LSGAN,
    NS,
    RSGAN,
    WGAN,
    WGANGP,
    Hinge,
    Minimax,
    Objective,
    RaHinge,
    RaLSGAN,
    RaSGAN,
    Wasserstein,
)
from ..engine.regularizers import PathLength, WithR1
from ..engine.schedules import d_first, g_first, simultaneous
from ..engine.step import Step
from ..engine.views import (
    adversarial,
    ends_in_sigmoid,
    pull_away,
    reads_d_step_real,
    reads_real,
)
from .audit import (
    GATED_D_STEP,
    PENALTY_ALONE,
    STALE_CAST,
    info_steps,
    phase_forwards,
    warm_up_steps,
)
from .copies import module_copy
from .sides import first_step

# float32's rounding after a few Adam steps, the order of sums being another one's
TOLERANCE = 1e-5
# float64's: the same sums in another order, amplified by a few Adam steps
FLOAT64_TOLERANCE = 1e-12
# a loss value the script backpropagated against a Step's (relative, past 1): the same
# formula in another order of ops, or the script's sum of several backward passes
LOSS_TOLERANCE = 1e-4
TRIED = "each schedule and objective tried:"
# the note of a search that found several Steps equal to the script (tied())
TIED = "which cannot tell them apart"
# DataLoader batches kept at most (an audit of a few iterations takes a few per iteration)
MAX_BATCHES = 1000


@dataclass
class Capture:
    """What the audit keeps for the port while the script runs."""

    first_state: dict[int, dict[str, Tensor]] = field(default_factory=dict)  # by id(module)
    made_state: dict[int, dict] = field(default_factory=dict)  # by id(optimizer)
    calls: dict[int, tuple[tuple, list[Tensor]]] = field(default_factory=dict)  # by seq
    after_step: dict[int, dict] = field(default_factory=dict)  # by id: the latest state
    # by id(module): its state just before its latest step, where a clamp at the top of
    # D's loop (the WGAN authors' main.py) shows, which G's step then reads undone
    before_step_state: dict[int, dict] = field(default_factory=dict)
    # after the step that made len(opt_steps) so: every module's and optimizer's state
    history: dict[int, dict[int, dict]] = field(default_factory=dict)
    # the tensors of each batch the script's DataLoaders gave it (the real labels of a D
    # that does not take them: ACGAN's classifier loss reads them), and each one's place
    # in its batch as code: '["hr"]' in a dict, "[1]" in a tuple
    batches: list[tuple[Tensor, ...]] = field(default_factory=list)
    batch_places: list[tuple[str, ...]] = field(default_factory=list)
    # the batches of one tensor the DataLoaders gave (``batches`` keeps the others): with
    # those, whether D's real batch came as a DataLoader gave it, or made from one
    single_batches: list[Tensor] = field(default_factory=list)
    # the script's number globals before each optimizer step (by the steps taken before
    # it) and where its run ended: state it keeps beside its models (BEGAN's k)
    numbers: dict[int, dict[str, float]] = field(default_factory=dict)
    numbers_end: dict[str, float] = field(default_factory=dict)
    # by id(optimizer): after each of its steps (by the steps recorded then), its param
    # groups' settings (lr, betas...), which a learning-rate scheduler of the script's sets
    settings: dict[int, list[tuple[int, list[dict]]]] = field(default_factory=dict)

    # by seq: where the script changed a call's first argument in the call (an
    # augmentation, instance noise), that change as a function of the batch (code), the
    # batch before it, and torch's generator states before the change's first draw (None
    # where it drew none)
    arguments: dict[int, tuple[str, Tensor, list[Tensor] | None]] = field(default_factory=dict)
    # by seq: the script's line of the call (the names it gives its inputs there)
    sites: dict[int, int] = field(default_factory=dict)
    # by seq: where a call's first argument was a name the script had written over with a
    # change of its own batch (``real = augment(real)``), that line (file:line: text)
    written_over: dict[int, str] = field(default_factory=dict)
    # by seq: the keywords of plain values a call was given (rosinality's G(noise,
    # return_latents=True)), and the calls whose first tensor was rows cut from a larger
    # one (StyleGAN2-ADA's Greg on gen_z[:batch_size]) rather than drawn whole
    keywords: dict[int, dict[str, object]] = field(default_factory=dict)
    cut: set[int] = field(default_factory=set)
    # by seq: Python's random state at the call (random.getstate()), and numpy's global
    # one where the script imported numpy (np.random.get_state())
    py_states: dict[int, object] = field(default_factory=dict)
    np_states: dict[int, object] = field(default_factory=dict)
    # by the recorded step's seq (steps over several modules too): everyone's state after it
    at_step: dict[int, dict] = field(default_factory=dict)
    # after a step over several modules (InfoGAN's info step) taken when len(opt_steps)
    # was k: everyone's state, by k (``history`` keeps the k-th step's own)
    joint_after: dict[int, dict] = field(default_factory=dict)

    def module_seen(self, module: nn.Module) -> None:
        """``module``'s state at its first call with values: a lazy module's first call
        gives its parameters theirs, so its state is taken at its next."""
        if id(module) in self.first_state:
            return
        state = module.state_dict()
        if not any(is_lazy(v) for v in state.values() if isinstance(v, Tensor)):
            self.first_state[id(module)] = _cloned(state)

    def optimizer_made(self, opt: torch.optim.Optimizer) -> None:
        self.made_state[id(opt)] = copy.deepcopy(opt.state_dict())

    def called(self, seq: int, args: tuple, rng: list[Tensor], keywords: dict | None = None,
               py_state: object = None, np_state: object = None) -> None:  # fmt: skip
        kept = tuple(_kept(a) for a in args)
        self.calls[seq] = (kept, rng)
        if py_state is not None:
            self.py_states[seq] = py_state
        if np_state is not None:
            self.np_states[seq] = np_state
        plain = {k: v for k, v in (keywords or {}).items() if type(v) in PLAIN_VALUES}
        if plain:
            self.keywords[seq] = plain
        first = next((t for a in args for t in (a if type(a) in (list, tuple) else [a])
                      if isinstance(t, Tensor)), None)  # fmt: skip
        if first is not None and _rows_cut(first):
            self.cut.add(seq)

    def argument_made(self, seq: int, template: str, value: object, state: object) -> None:
        if isinstance(value, Tensor):
            self.arguments[seq] = (template, _plain(value), state)

    def batch_given(self, batch: object) -> None:
        if isinstance(batch, dict):  # (SRGAN's dataset: {"lr": ..., "hr": ...})
            items = [(f"[{json.dumps(k)}]", v) for k, v in batch.items() if isinstance(k, str)]
        elif isinstance(batch, (tuple, list)):
            items = [(f"[{i}]", v) for i, v in enumerate(batch)]
        else:
            items = [("", batch)]
        items = [(place, _plain(t)) for place, t in items if isinstance(t, Tensor)]
        if len(items) == 1 and len(self.single_batches) < MAX_BATCHES:
            self.single_batches.append(items[0][1])
        if len(items) > 1 and len(self.batches) < MAX_BATCHES:
            self.batches.append(tuple(t for _, t in items))
            self.batch_places.append(tuple(place for place, _ in items))

    def before_step(self, steps: int, namespace: dict | None) -> None:
        if namespace is not None and steps not in self.numbers:
            self.numbers[steps] = _numbers(namespace)

    def stepping(self, module: nn.Module) -> None:
        self.before_step_state[id(module)] = _cloned(module.state_dict())

    def stepped(self, modules: list[nn.Module], optimizers: list, steps: int,
                opt: torch.optim.Optimizer, joint: bool = False) -> None:  # fmt: skip
        """After ``opt``'s step, the ``steps``-th one recorded (or, ``joint``, a step over
        several modules after it): everyone's state, and the settings ``opt`` stepped
        with."""
        states = {id(m): _cloned(m.state_dict()) for m in modules}
        states.update({id(opt): copy.deepcopy(opt.state_dict()) for opt in optimizers})
        self.after_step = states
        (self.joint_after if joint else self.history)[steps] = states
        self.settings.setdefault(id(opt), []).append((steps, _settings(opt)))

    def end_state(self, steps: int) -> dict:
        """Everyone's state where an iteration whose last G or D step was the
        ``steps``-th ends: after the info step that followed it, if one did."""
        return self.joint_after.get(steps, self.history[steps])


def _settings(opt: torch.optim.Optimizer) -> list[dict]:
    """Each param group's settings (all but its parameters), as copies."""
    return [copy.deepcopy({k: v for k, v in g.items() if k != "params"})
            for g in opt.param_groups]  # fmt: skip


def _numbers(namespace: dict) -> dict[str, float]:
    return {k: float(v) for k, v in namespace.items()
            if type(v) in (int, float) and not k.startswith("_")}  # fmt: skip


def _plain(t: Tensor) -> Tensor:
    """A copy of ``t`` as a plain tensor (BigGAN's z is a Tensor subclass whose methods
    need attributes a copy lacks). With subclasses' ``__torch_function__`` off, the copy
    is a Tensor: ``as_subclass`` refuses a plain tensor before torch 2.6."""
    with torch._C.DisableTorchFunctionSubclass():
        return t.detach().clone()


# the keyword values a call's record keeps (a flag such as return_latents=True)
PLAIN_VALUES = (bool, int, float, str, type(None))


def _rows_cut(t: Tensor) -> bool:
    """Whether ``t`` is rows cut from a tensor of more rows and as many dimensions (a view:
    ``z[:k]``, ``z.split(k)``), not one drawn whole or unbound from a stack."""
    base = t._base
    return base is not None and base.dim() == t.dim() and base.shape[0] > t.shape[0]


def _kept(a: object) -> object:
    """A call's argument as the port keeps it: a tensor, or those of a list or tuple
    (rosinality's ``generator([z])``), copied plain."""
    if isinstance(a, Tensor):
        return _plain(a)
    if type(a) in (list, tuple) and any(isinstance(t, Tensor) for t in a):
        return type(a)(_plain(t) if isinstance(t, Tensor) else t for t in a)
    return a


def _cloned(state: dict) -> dict:
    return {k: v.detach().clone() if isinstance(v, Tensor) else v for k, v in state.items()}


@dataclass
class Port:
    """The Step that equals the script (``code``), verified over ``iterations`` with
    ``max_difference``; or ``code`` None and ``notes`` saying what stood in the way."""

    code: str | None
    iterations: int
    max_difference: float | None = None
    notes: list[str] = field(default_factory=list)
    # the (schedule, candidate) printed; the largest difference of its float64 repeat
    chosen: tuple | None = field(default=None, repr=False)
    float64_difference: float | None = None
    # the run it was found equal on: "float32" (the script's own); "float64" where it
    # parts from that by float32's rounding alone and equals the script's float64 repeat
    # (``max_difference`` stays the script's own run's, past TOLERANCE then), and what
    # rounding parts them there
    equal_in: str = "float32"
    rounding: str = "float32's rounding"
    # a CycleStep's options where one was found (tools.cycle_port): its label in notes
    step_options: dict | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {"code": self.code, "iterations": self.iterations,
                "max_difference": self.max_difference, "notes": self.notes,
                "float64_difference": self.float64_difference,
                "equal_in": self.equal_in}  # fmt: skip

    def __str__(self) -> str:
        if self.code is None:
            head = "ganstep audit --port: no Step found that equals this script's update"
            return "\n".join([head, *(f"  - {n}" for n in self.notes)])
        if self.equal_in == "float64":
            head = (f"ganstep audit --port: this Step equals the script's update run in "
                    f"float64 over {self.iterations} iteration(s) (largest difference in "
                    f"parameters, buffers and optimizer states: {self.float64_difference:.3g}); "
                    f"in the script's float32 run it parts by {self.max_difference:.3g}, "
                    f"{self.rounding} (see the notes)")  # fmt: skip
        else:
            head = (f"ganstep audit --port: this Step equals the script's update over "
                    f"{self.iterations} iteration(s) (largest difference in parameters, "
                    f"buffers and optimizer states: {self.max_difference:.3g})")  # fmt: skip
        return "\n".join([head, *(f"  note: {n}" for n in self.notes), "", self.code])


@dataclass(frozen=True)
class Candidate:
    """An objective and loss scales to try, as code and as objects, and why."""

    objective: str
    make: type[Objective] | object
    d_scale: float
    g_scale: float
    why: str
    l1: float | None = None  # image-to-image: the weight of G's L1 to the target
    # D's class output (ACGAN): the weights of its cross-entropy in G's and in D's loss
    classifier: tuple[float, float] | None = None
    # D's class output with an extra class for the fakes (SGAN, G unconditional): that
    # class, and the weight of each batch's cross-entropy in D's loss (G's has none)
    fake_class: tuple[int, float] | None = None
    accumulate: int = 1  # micro-batches per step (StyleGAN2-ADA's batch_gpu rounds)
    summed: bool = False  # the script adds its micro-batches' means: scales times their count
    # the script's global holding the objective's one number of state (BEGAN's k),
    # verified beside the models at each iteration's end
    state_in: str | None = None
    # G's parts called as StyleGAN2-ADA's run_G does, its style mixing at this probability
    style_mixing: float | None = None
    # G's lazy path length regularization (StyleGAN2-ADA's Greg): its weight and interval
    path_length: tuple[float, int] | None = None
    # EBGAN-PT: the weight of the pulling-away term on D's embedding of the fakes
    pull_away: float | None = None
    # ProGAN's drift term, the mean of D's squared scores on the real batch: its weight
    drift: float | None = None
    # G's terms read from its first gradient (:func:`_fit_terms`), each (key, weight):
    # "l1", FEATURES (a multi-scale D's feature matching) or a loss module's printed name
    g_fit: tuple[tuple[str, float], ...] = ()
    # where :func:`_fit_terms`' first probe showed D's steps parting from the script's
    # whatever G's terms weigh, as the search says a candidate parts (it is not run again)
    parted: str = ""
    # G's terms the fit could not read: each gave G no gradient in the script's first
    # iteration (SRGAN's content loss through a feature network whose ReLU is 0 on every
    # fake), so any weight fits that run; left out of ``g_fit``, read again where the
    # script's float64 run gives them one (:func:`port`'s ``refit``)
    unread: tuple[str, ...] = ()
    # the run whose first G gradient ``g_fit`` was read from, as the printed code says it
    # (:func:`_fit_terms`: the script's own, or its float64 run, --verify's)
    fitted_on: str = "the script's"


# style mixing probabilities tried (StyleGAN2-ADA's StyleGAN2Loss default, and a half)
STYLE_MIXING = (0.9, 0.5)

# path length weights tried (StyleGAN2-ADA's --cfg default pl_weight), its decay and
# batch shrink (StyleGAN2Loss's defaults)
PL_WEIGHTS = (2.0,)

# WGAN-GP's penalty weights tried (the paper's 10; its toy code's 0.1, and 1)
GP_WEIGHTS = (10.0, 1.0, 0.1)

# R1 weights tried (StyleGAN2-ADA's --gamma: its configs' values and decades; Mescheder
# et al.'s 10)
R1_WEIGHTS = (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)


def float64_variants(candidate: Candidate) -> list[Candidate]:
    """The candidates that compute what ``candidate`` does but for a difference float32
    cannot show, tried where the float64 repeat parts from it: WGAN-GP's norm under an
    epsilon (``torch.sqrt(torch.sum(gradients ** 2, dim=1) + 1e-12)``), and its
    interpolation weights drawn in float32 whatever torch's default dtype
    (``torch.FloatTensor(n, 1, 1, 1).uniform_(0, 1)``, Zeleni9's)."""
    found = re.fullmatch(r'WGANGP\(([0-9.e+-]+)(, interpolate="difference"|, flatten=False)?\)',
                         candidate.objective)  # fmt: skip
    if found is None:
        return []
    w, form = float(found[1]), found[2] or ""
    options = {"interpolate": "difference" if "difference" in form else "mix",
               "flatten": "flatten" not in form}  # fmt: skip
    return [
        replace(candidate, objective=f"WGANGP({w}, eps=1e-12{form})",
                make=partial(WGANGP, w, eps=1e-12, **options),
                why=candidate.why + "; its norm as sqrt(sum(grad ** 2) + 1e-12)"),
        replace(candidate, objective=f"WGANGP({w}, alpha={FLOAT32_ALPHA}{form})",
                make=partial(WGANGP, w, alpha=_float32_alpha, **options),
                why=candidate.why + "; its interpolation weights drawn in float32, as the "
                "script draws them whatever torch's default dtype"),
    ]  # fmt: skip


# ProGAN's drift weight (Karras et al.'s eps_drift, as its ports write it)
DRIFT = 0.001


def penalty_forms(candidate: Candidate) -> list[Candidate]:
    """A WGAN-GP candidate's other penalty forms, tried where no candidate equals the
    script: one-sided (WGAN-LP, ``max(0, norm - 1) ** 2``) and zero-centered (``norm **
    2``), as LynnHo's ``lp`` and ``0-gp`` write them; and, for it or the Wasserstein
    losses alone, ProGAN's drift term in D's loss, ``0.001 * mean(D(x) ** 2)`` on the real
    batch (Aladdin Persson's ProGAN)."""
    make = candidate.make
    if candidate.drift is not None:
        return []
    if make is Wasserstein:  # (the Wasserstein losses alone: no penalty to vary)
        return [replace(candidate, drift=DRIFT)]
    if not (isinstance(make, partial) and make.func is WGANGP
            and not {"one_sided", "center"} & set(make.keywords)):  # fmt: skip
        return []
    head = candidate.objective[:-1]
    return [
        replace(candidate, objective=f"{head}, one_sided=True)",
                make=partial(make, one_sided=True),
                why=candidate.why + "; one-sided: norms above 1 alone (WGAN-LP)"),
        replace(candidate, objective=f"{head}, center=0.0)", make=partial(make, center=0.0),
                why=candidate.why + "; zero-centered: the norm pulled toward 0"),
        replace(candidate, drift=DRIFT),
    ]  # fmt: skip


# ProGAN's drift term as printed (and run: the two cannot drift apart)
DRIFT_TEXT = "lambda v: v.d_real.pow(2).mean()"


def rounding_variants(candidate: Candidate) -> list[Candidate]:
    """The candidates that compute what ``candidate`` does but round as another form of
    its losses does, tried where it parts from the script by little (``ROUNDING_GAP``):
    NS and Minimax computed as ``BCEWithLogitsLoss`` computes them (Lightning's GAN
    example), which parts from their softplus form where a gradient is rounding alone (a
    bias before BatchNorm: Adam makes it steps)."""
    found = re.fullmatch(r"(NS|Minimax)\(((?:(?:real|g)_label=[0-9.]+(?:, )?)*)\)",
                         candidate.objective)  # fmt: skip
    if found is None:
        return []
    options = {name: float(value) for name, value in re.findall(r"(\w+)=([0-9.]+)", found[2])}
    shown = (f"{found[2]}, " if found[2] else "") + "bce_with_logits=True"
    make = NS if found[1] == "NS" else Minimax
    return [replace(candidate, objective=f"{found[1]}({shown})",
                    make=partial(make, bce_with_logits=True, **options),
                    why=candidate.why + ", as BCEWithLogitsLoss computes it")]  # fmt: skip


def two_sided_variants(candidate: Candidate) -> list[Candidate]:
    """The candidate with label smoothing in both steps (D's real target and G's 0.9) with
    D's target for the fakes 0.1 too, tried where it parts from the script and no
    candidate equals it: two-sided label smoothing, the DCGAN example's ``real_label`` and
    ``fake_label`` set to 0.9 and 0.1 as its forks set them (tried after the others: in
    a few iterations Adam's steps, nearly signs of the gradients, may not tell it from
    NS's plain targets, which the losses then would)."""
    found = re.fullmatch(r"NS\(((?:probabilities=True, )?)real_label=0\.9, g_label=0\.9\)",
                         candidate.objective)  # fmt: skip
    if found is None:
        return []
    probabilities = bool(found[1])
    return [replace(candidate, objective=f"NS({found[1]}real_label=0.9, g_label=0.9, "
                                         "fake_label=0.1)",
                    make=partial(NS, probabilities=probabilities, real_label=0.9, g_label=0.9,
                                 fake_label=0.1),
                    why=candidate.why.replace(
                        "(label smoothing in both steps)",
                        "and 0.1 for fakes (two-sided label smoothing: the DCGAN example's "
                        "real_label and fake_label so set)"))]  # fmt: skip


# a candidate that parts from the script by at most this much is tried again as its
# rounding variants
ROUNDING_GAP = 1e-3

# WGANGP's alpha drawing its weights in float32 (torch.FloatTensor(...).uniform_(0, 1))
FLOAT32_ALPHA = "lambda shape: torch.rand(shape, dtype=torch.float32)"


def _float32_alpha(shape: tuple[int, ...]) -> Tensor:
    return torch.rand(shape, dtype=torch.float32)


# WGANGP's alpha drawn by numpy's global generator in float32, as PyTorch-GAN's scripts
# draw it (Tensor(np.random.random((n, 1, 1, 1))), Tensor the FloatTensor)
NUMPY_ALPHA = "lambda shape: torch.from_numpy(np.random.random(shape)).float()"


def _numpy_alpha(shape: tuple[int, ...]) -> Tensor:
    return torch.from_numpy(sys.modules["numpy"].random.random(shape)).float()


def own_step_candidates(found: list[Candidate]) -> list[Candidate]:
    """WGAN-GP's candidates with the penalty in a D step of its own after each of D's
    steps on its losses, at points other than the real batch (Self-Attention-GAN's
    trainer: ``penalty_at="own_step"``)."""
    why = "; in a D step of its own after each D step on its losses (SAGAN's trainer)"
    return [replace(c, objective=c.objective[:-1] + ', penalty_at="own_step")',
                    make=partial(c.make, penalty_at="own_step"), why=c.why + why)
            for c in found]  # fmt: skip


def with_r1(found: list[Candidate], every: int, rounds: int) -> list[Candidate]:
    """Each objective of ``found`` that takes R1, with R1 at each of :data:`R1_WEIGHTS`,
    in D's steps (``every`` 1) or in a step of its own every ``every`` D steps (lazy R1);
    where D's steps saw ``rounds`` > 1 real batches, also accumulated over that many
    micro-batches, the losses summed over them (StyleGAN2-ADA adds each round's mean) or
    averaged."""
    out = []
    for c in found:  # (label smoothing or G's hinge beside R1 is not tried: no script seen
        # does both)
        takes_r1 = c.make in (NS, LSGAN, Hinge) or (  # (not a relativistic one, nor WGAN-GP)
            isinstance(c.make, partial) and issubclass(c.make.func, WithR1)
        )
        if not takes_r1 or "real_label" in c.objective or "g_hinge" in c.objective:
            continue
        for gamma in R1_WEIGHTS:
            shown = c.objective[:-1] + (", " if c.objective[-2] != "(" else "")
            if every == 1:
                code, why = f"{shown}r1={gamma})", f"{c.why}; R1 on the real batch in D's step"
            else:
                code = f"{shown}r1={gamma}, r1_every={every})"
                why = f"{c.why}; R1 in a step of its own every {every} D steps"
            base = replace(c, objective=code, make=partial(c.make, r1=gamma, r1_every=every),
                           why=why)  # fmt: skip
            out.append(base)
            if rounds > 1:
                out += [replace(base, accumulate=rounds, d_scale=c.d_scale * s,
                                g_scale=c.g_scale * s, summed=s > 1)
                        for s in (1, rounds)]  # fmt: skip
    return out


def wgan_candidates(clip: float, clamp_at: str) -> list[Candidate]:
    """WGAN's, its weights clamped to ``clip`` where the script clamps them (after D's
    steps, or before them), D scoring real samples high (PyTorch-GAN's) or low (the
    WGAN authors' ``main.py``: ``errD_real.backward(one)``, ``errD_fake.backward(mone)``)."""
    if clamp_at == "after":
        why = f"D's weights end clamped to +-{clip:g} after its steps: WGAN's clipping"
    else:
        why = (f"D's weights are clamped to +-{clip:g} before each of its steps (G's step "
               "reads them unclamped): WGAN's clipping")  # fmt: skip
    found = []
    for sign in (1, -1):
        label = f"WGAN(clip={clip:g}" + ("" if sign == 1 else ", sign=-1")
        label += ")" if clamp_at == "after" else f', clamp_at="{clamp_at}")'
        low = "" if sign == 1 else "; D trained to score real samples low (the WGAN authors')"
        make = partial(WGAN, clip=clip, sign=sign, clamp_at=clamp_at)
        found.append(Candidate(label, make, 1.0, 1.0, why + low))
    return found


# WGAN-div's objective as the port prints it (docs/loops.md's, its k and p arguments):
# ganstep has no such objective of its own, the penalty is written as a user writes one
WGAN_DIV = """class WGANDiv(Wasserstein):  # WGAN-div: its penalty read from D's loss forwards
    name = "wgan_div"
    penalty_at = "loss_forwards"

    def __init__(self, k=2.0, p=6.0):
        super().__init__()
        self.k, self.p = k, p

    def penalty_on_outputs(self, real, real_out, fake, fake_out):
        norms = []
        for x, out in ((real, real_out), (fake, fake_out)):
            (grad,) = torch.autograd.grad(out, x, torch.ones_like(out), create_graph=True)
            norms.append(grad.reshape(grad.shape[0], -1).pow(2).sum(1) ** (self.p / 2))
        return torch.mean(norms[0] + norms[1]) * self.k / 2
"""

# WGAN-div's k and p tried: the paper's recommended pair, which its public codes take
WGAN_DIV_KP = ((2, 6),)


# a relativistic objective whose G loss is the plain non-saturating one (BCE with logits
# against 1 on D's fake scores), as a script computes it where its relativistic G loss
# is overwritten (PyTorch-GAN's relativistic_gan.py): printed as a class of the user's
# own, as docs/loops.md writes it
PLAIN_G = """class {name}PlainG({name}):  # {name}'s D loss; G's the one the script ends with
    g_needs_real = False

    def g_loss(self, fake, real=None):  # BCE with logits against 1 on D's fake scores
        loss = torch.nn.functional.binary_cross_entropy_with_logits(fake, torch.ones_like(fake))
        return loss, {{}}
"""

# the objectives the port prints as classes of the user's own: their base, their text
PRINTED_OBJECTIVES = {
    "WGANDiv": ("Wasserstein", WGAN_DIV),
    "RSGANPlainG": ("RSGAN", PLAIN_G.format(name="RSGAN")),
    "RaSGANPlainG": ("RaSGAN", PLAIN_G.format(name="RaSGAN")),
}


def printed_objective(name: str) -> type:
    """The class a printed objective's text makes (its base among ganstep's)."""
    return _made(name, PRINTED_OBJECTIVES[name][1], Wasserstein=Wasserstein, RSGAN=RSGAN,
                 RaSGAN=RaSGAN)  # fmt: skip


def plain_g_candidates() -> list[Candidate]:
    """RSGAN's and RaSGAN's D losses with G's plain non-saturating loss, where D was
    forwarded in G's step on the fakes for a loss that was replaced (the Step's
    ``g_forwards`` keeps those forwards)."""
    why = ("relativistic losses for D; G's step computed a relativistic loss, then replaced it "
           "with BCE with logits on D's fake scores")  # fmt: skip
    return [Candidate(f"{name}()", printed_objective(name), 1.0, 1.0, why)
            for name in ("RSGANPlainG", "RaSGANPlainG")]  # fmt: skip


def wgan_div_candidates() -> list[Candidate]:
    """WGAN-div's (Wu et al. 2018): the Wasserstein losses and ``k / 2`` times the mean
    of ``|grad|^p`` at the real and at the fake samples, D's gradients read from its
    loss forwards, at each of :data:`WGAN_DIV_KP`."""
    why = ("D's step took a double backward at the real and the fake batches of its loss "
           "forwards: WGAN-div's penalty")  # fmt: skip
    made = printed_objective("WGANDiv")
    return [Candidate(f"WGANDiv(k={k}, p={p})", partial(made, k=k, p=p), 1.0, 1.0, why)
            for k, p in WGAN_DIV_KP]  # fmt: skip


def candidates(d_output: Tensor, penalty: str | None, clip: float | None,
               autoencoder: bool = False, images: bool = False,
               embedding: bool = False, clamp_at: str = "after",
               numpy_alpha: bool = False) -> list[Candidate]:  # fmt: skip
    """The objectives the script's D loss could be: on probabilities where D's output
    comes out of a Sigmoid, with a gradient penalty where D's step took a double
    backward (``penalty``: ``"r1"`` where it was taken at the real batch, ``"gp"``,
    WGAN-GP's, where D was given points of its own, ``"div"``, WGAN-div's, where it was
    taken at the fakes D's loss forwards took), WGAN's clipping where D's weights
    end clamped to ``clip`` (or are so before each of its steps: ``clamp_at="before"``;
    see :func:`wgan_candidates`); the scales the public scripts use (PyTorch-GAN halves
    D's BCE, MSE is twice ganstep's halved least squares), and BEGAN's where D's output is
    shaped like its input (an autoencoder), and EBGAN's, with its pulling-away term
    where D returns an ``embedding`` beside its reconstruction. With ``images`` (D's
    input has dimensions past its features), WGAN-GP's norm over channels at each
    position too (``gradients.norm(2, dim=1)`` of the unflattened gradient); with
    ``numpy_alpha`` (numpy's global generator drew within D's steps), its interpolation
    weights drawn by numpy too."""
    if autoencoder:
        why = "D's output is shaped like its input: BEGAN's autoencoder losses"
        began = [Candidate(f"BEGAN(gamma={g})", lambda g=g: BEGAN(gamma=g), 1.0, 1.0, why)
                 for g in (0.5, 0.75)]  # fmt: skip
        return began + ebgan_candidates(d_output.shape[0], embedding)
    if clip is not None:
        return wgan_candidates(clip, clamp_at)
    if penalty == "div":  # at the real and fake batches of D's loss forwards
        return wgan_div_candidates()
    if penalty == "r1":  # at each D step, on the losses that take it
        return with_r1(candidates(d_output, None, None), 1, 1)
    if penalty == "gp":
        why = "D's step took a double backward (a gradient penalty) on Wasserstein losses"
        difference = "; its points x + e (G(z) - x), as the WGAN-GP authors' code makes them"
        return [Candidate(f"WGANGP({w})", partial(WGANGP, w), 1.0, 1.0, why)
                for w in GP_WEIGHTS] + [
            Candidate(f'WGANGP({w}, interpolate="difference")',
                      partial(WGANGP, w, interpolate="difference"), 1.0, 1.0, why + difference)
            for w in GP_WEIGHTS] + [
            Candidate(f"WGANGP({w}, flatten=False)", partial(WGANGP, w, flatten=False), 1.0,
                      1.0, why + "; its norm over channels at each pixel (norm(2, dim=1) of "
                      "the image gradient)")
            for w in GP_WEIGHTS if images] + [
            Candidate(f"WGANGP({w}, alpha={NUMPY_ALPHA})",
                      partial(WGANGP, w, alpha=_numpy_alpha), 1.0, 1.0, why + "; its "
                      "interpolation weights drawn by numpy's generator, which drew in D's "
                      "steps (np.random.random)")
            for w in GP_WEIGHTS if numpy_alpha]  # fmt: skip
    smoothed = "; D's target for real samples 0.9 (one-sided label smoothing)"
    both = "; D's target for real samples and G's for its fakes 0.9 (label smoothing in both steps)"
    if ends_in_sigmoid(d_output):
        why = "D's output comes out of a Sigmoid: BCE on its probabilities"
        found = [Candidate("NS(probabilities=True)", partial(NS, probabilities=True), d, 1.0, why)
                 for d in (1.0, 0.5)]  # fmt: skip
        return found + [
            Candidate("NS(probabilities=True, real_label=0.9)",
                      partial(NS, probabilities=True, real_label=0.9), d, 1.0, why + smoothed)
            for d in (1.0, 0.5)
        ] + [
            Candidate("NS(probabilities=True, real_label=0.9, g_label=0.9)",
                      partial(NS, probabilities=True, real_label=0.9, g_label=0.9), d, 1.0,
                      why + both)
            for d in (1.0, 0.5)
        ] + [Candidate("Minimax(probabilities=True)", partial(Minimax, probabilities=True),
                       1.0, 1.0, why + SATURATING)] + [
            Candidate("BGAN(probabilities=True)", partial(BGAN, probabilities=True), d, 1.0,
                      why + BOUNDARY_SEEKING)
            for d in (1.0, 0.5)
        ]  # fmt: skip
    why = "BCE with logits on D's output"
    found = [Candidate("NS()", NS, d, 1.0, why) for d in (1.0, 0.5)]
    found += [Candidate("NS(real_label=0.9)", partial(NS, real_label=0.9), d, 1.0, why + smoothed)
              for d in (1.0, 0.5)]  # fmt: skip
    found += [Candidate("NS(real_label=0.9, g_label=0.9)",
                        partial(NS, real_label=0.9, g_label=0.9), d, 1.0, why + both)
              for d in (1.0, 0.5)]  # fmt: skip
    found.append(Candidate("Minimax()", Minimax, 1.0, 1.0, why + SATURATING))
    found.append(Candidate("BGAN()", BGAN, 1.0, 1.0, why + BOUNDARY_SEEKING))
    found += [Candidate("LSGAN()", LSGAN, d, g, "least squares on D's output")
              for d in (1.0, 2.0) for g in (1.0, 2.0)]  # fmt: skip
    found.append(Candidate("Hinge()", Hinge, 1.0, 1.0, "hinge losses on D's output"))
    found.append(Candidate("Hinge(g_hinge=True)", partial(Hinge, g_hinge=True), 1.0, 1.0,
                           "hinge losses on D's output, G's a hinge too"))  # fmt: skip
    found.append(Candidate("Wasserstein()", Wasserstein, 1.0, 1.0, "Wasserstein losses"))
    found.append(
        Candidate(
            "Wasserstein(sign=-1)",
            partial(Wasserstein, sign=-1),
            1.0,
            1.0,
            "Wasserstein losses, D trained to score real samples low",
        )
    )
    why = "relativistic losses: D's real scores against its fake ones"
    found += [Candidate(code, make, 1.0, 1.0, why) for code, make in RELATIVISTIC]
    return found


# the weight of EBGAN-PT's pulling-away term in its public codes
PULL_AWAY = 0.1


def ebgan_candidates(n: int, embedding: bool) -> list[Candidate]:
    """EBGAN's losses at the margin its public codes take, ``max(1, batch_size / 64)``,
    the fakes as the reconstruction's target with G's gradient and without it
    (PyTorch-GAN's ``gen_imgs.detach()``), and with the pulling-away term at its codes'
    weight 0.1 where D returns an embedding beside its reconstruction."""
    margin = max(1.0, n / 64)
    why = "D's output is shaped like its input: EBGAN's energies, a hinge at the margin"
    found = []
    for detach in (False, True):
        code = f"EBGAN({margin:g}{', detach_target=True' if detach else ''})"
        more = "; the fakes as constants where they are the target" if detach else ""
        found.append(Candidate(code, partial(EBGAN, margin, detach_target=detach), 1.0, 1.0,
                               why + more))  # fmt: skip
    if embedding:
        found += [replace(c, pull_away=PULL_AWAY, why=c.why + "; the pulling-away term on "
                          "D's embedding of the fakes") for c in found]  # fmt: skip
    return found


# Goodfellow et al.'s saturating G loss, mean(log(1 - D(G(z)))), as tutorials write it
SATURATING = "; G's loss the saturating minimax one, log(1 - D(G(z)))"

# the boundary-seeking G loss (PyTorch-GAN's bgan.py)
BOUNDARY_SEEKING = "; G's loss the boundary-seeking one, 0.5 mean((log D - log(1 - D))^2)"

# the relativistic objectives tried: AlexiaJM's four, and BasicSR's and PyTorch-GAN's
# ESRGAN forms of RaSGAN
RELATIVISTIC = (
    ("RSGAN()", RSGAN),
    ("RaSGAN()", RaSGAN),
    ("RaSGAN(detach_mean=True)", partial(RaSGAN, detach_mean=True)),
    ("RaSGAN(g_real_term=False)", partial(RaSGAN, g_real_term=False)),
    ("RaLSGAN()", RaLSGAN),
    ("RaHinge()", RaHinge),
)
# RaSGAN where D returns a map of scores per sample (PatchGAN) and each batch's mean is
# taken at each location of it (PyTorch-GAN's esrgan.py: mean(0, keepdim=True)), in the
# forms of its two commits
PER_LOCATION = (
    ("RaSGAN(per_location=True)", partial(RaSGAN, per_location=True)),
    ("RaSGAN(g_real_term=False, per_location=True)",
     partial(RaSGAN, g_real_term=False, per_location=True)),
)  # fmt: skip


def with_classifier(found: list[Candidate], fake_class: int | None = None) -> list[Candidate]:
    """Each objective of ``found`` with a cross-entropy of D's class output added to G's
    and D's losses (ACGAN's), at the scales public scripts write: ``0.5 * (adv + aux)``
    in G's step, ``((adv + aux) / 2 + (adv + aux) / 2) / 2`` in D's, or unscaled. With
    ``fake_class`` (SGAN's, G given no labels), D's alone: the real batch's to its labels,
    the fakes' to that extra class (``sgan.py`` writes ACGAN's D loss); G's loss is its
    adversarial one alone."""
    terms = ("ACGAN's cross-entropy terms" if fake_class is None
             else "SGAN's cross-entropy terms, the fakes as a class of their own")  # fmt: skip
    out = []
    for objective in {c.objective: c for c in found}.values():
        f = 2.0 if objective.objective == "LSGAN()" else 1.0  # MSE is twice ganstep's
        why = f"{objective.why}; D's class output: {terms}"
        for d, g, wd in product((1.0, 0.5, 0.25), (1.0, 0.5), (1.0, 0.5, 0.25)):
            scaled = replace(objective, d_scale=d * f, g_scale=g * f, why=why)
            if fake_class is not None:
                out.append(replace(scaled, fake_class=(fake_class, wd)))
            else:
                out += [replace(scaled, classifier=(wg, wd)) for wg in (1.0, 0.5)]
    return out


@dataclass
class Replay:
    """What the audited iterations fed G and D: each iteration's real batches (a tensor,
    or ``(x, c)`` for a conditional D), G's inputs (``(z,)`` or ``(z, c)``) with
    torch's generator state at each of G's calls, and whether D took the condition."""

    reals: list[list[object]]
    zs: list[tuple[tuple[Tensor, ...], list[Tensor]]]
    d_conditional: bool = False
    ends: list[int] = field(default_factory=list)  # Capture.history's key at each end
    # G's one input is the real batch's condition (pix2pix's G(source)): no z
    image_to_image: bool = False
    # each real batch's labels where D is called D(x) and its DataLoader gave them
    labels: list[list[Tensor | None]] = field(default_factory=list)
    # D called once on cat(fake, real) ("fake_first") or cat(real, fake) ("real_first");
    # joint: a D that mixes samples (BatchNorm) normalizing the two together, as called
    concat: str | None = None
    concat_joint: bool = False
    d_order: str = "real_first"  # the order of D's forwards in its step, as the audit saw
    # the name of G's Embedding the script gives G its labels through (BigGAN's shared)
    embedding: str | None = None
    # after each iteration's steps, the script's calls of G or D outside its update (a
    # sample grid in training mode moves BatchNorm's statistics): role, the part called
    # ("" the whole), inputs, generator
    after: list[list[tuple[str, str, tuple, list[Tensor]]]] = field(default_factory=list)
    # the names of G's parts where the script calls them itself, the first on the data
    # (StyleGAN2's G.mapping, then G.synthesis); whether it calls the first twice a
    # call, mixing the two before the next (StyleGAN2's style mixing)
    g_parts: tuple[str, str] | None = None
    style_mixing: bool = False
    # which of ``zs`` are G's calls in its own lazy regularization steps (path length:
    # on the first rows of a round's z only), not judged by D
    lazy: list[bool] = field(default_factory=list)
    # those lazy calls: the keywords that made G return its latents beside its images
    # (rosinality's return_latents=True; None where G took none), whether their z was
    # drawn of its own (rosinality's mixing_noise(path_batch_size)) rather than cut from
    # a round's (StyleGAN2-ADA's), and a round's rows over theirs (path length's shrink)
    g_latents: dict[str, object] | None = None
    lazy_drawn: bool = False
    lazy_shrink: int = 2
    # G given one or two z in a list (rosinality's style mixing): each of G's calls' z
    # (``zs`` holds the first) and Python's random state at the call, which G's forward
    # draws its mixing layer from; [] where G never took two
    styles: list[tuple[Tensor, ...]] = field(default_factory=list)
    py_states: list[object] = field(default_factory=list)
    # each iteration's losses the script backpropagated for each of D's and G's steps
    # ("D"/"G": one value a step, None where its backward passes took no plain number)
    losses: list[dict[str, list[float | None]]] = field(default_factory=list)
    # each iteration's real batch D was forwarded on without a graph in G's phase (a
    # relativistic G step reading a fresh one, AlexiaJM's); [] unless each has one
    g_reals: list[object] = field(default_factory=list)
    # the script's gradient clipping before each of G's ("g") and D's ("d") steps: the
    # call on the phase's module (named G or D), and its line
    clips: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # what D was given requiring grad was its real batches: a penalty of D's step took
    # its gradient there (R1), not at points of its own (WGAN-GP's mixes)
    graded_real: bool = False
    # a penalty of D's step took D's gradient at G's outputs as D's loss forwards were
    # given them, in that phase (WGAN-div's): the penalty reads the loss forwards
    graded_fake: bool = False
    # the Step's precision: "bf16" or "fp16" where the update's forwards of G and D all
    # ran under torch.autocast to that dtype, and the first of them (its script line)
    precision: str = "fp32"
    autocast_at: str = ""
    # torch's generator states at D's forward on each real batch of each iteration:
    # where the Step makes its fakes after that forward (d_order="real_g_fake"), its
    # first draw of a call is D's, not G's at its z
    real_rng: list[list[list[Tensor]]] = field(default_factory=list)
    # a G call of the update was given the z of the G call before it (one draw, used
    # twice: G forwarded again on it)
    z_reused: bool = False
    # D's condition is G's filled over an image of this height and width (a label map
    # per class, made from G's one-hot vector); the real batches' conditions in
    # ``reals`` are then as G is given them, and the Step's D is a FilledD
    d_fill: tuple[int, int] | None = None
    # each of G's conditions was that of a real batch of its iteration (pytorch-generative-
    # model-collections' CGAN makes its fakes for the batch's labels): condition="real"
    condition_real: bool = False
    # the script's change of each batch in D's calls, as code, and the first such call's
    # line (_augment_of): the Step's augment=
    augment: tuple[str, str] | None = None
    # numpy's global generator state at each of ``zs``' calls (None where the script did
    # not import numpy), and whether it drew between D's calls within one of D's steps
    # (a penalty's alpha by np.random: PyTorch-GAN's WGAN-GP)
    np_states: list[object] = field(default_factory=list)
    numpy_in_d: bool = False
    # G or D called with plain values beside its tensors (ProGAN's ``critic(x, alpha,
    # step)``), by role: each iteration's values by the forward's parameter names, and
    # the script's code for each (its first call's): the Step's G or D is an AtStage
    staged: dict[str, list[dict[str, object]]] | None = None
    staged_text: dict[str, dict[str, str]] | None = None
    # D given G's source and the image joined along the channels, and how (_paired_d):
    # the Step's D is a PairedD, called D(x, c)
    d_pair: tuple[str, int] | None = None
    # G given its condition joined to z, and how (_joined_condition): the Step's G is a
    # JoinedG, called G(z, c)
    g_join: tuple[str, int] | None = None
    # G given its z in a list of one (G([z]), rosinality's): the Step's G is a ListedG
    g_listed: bool = False
    # G returning an image per domain and D called on them together (CoGAN's coupled
    # modules): the channels of each of D's inputs; the Step's G is a BothDomains, its D
    # an EachDomain, each real batch D's inputs joined along the channels
    coupled: tuple[int, ...] | None = None
    # the script forwarded D in each phase of a simultaneous update on its own and D's
    # forward moves statistics (BatchNorm's): d_forwards="loop" keeps them the script's
    d_forwards_loop: bool = False
    # D's forwards in G's phase, in order ("real", "fake"), where one fed no backward (a
    # loss computed, then replaced: PyTorch-GAN's relativistic_gan.py): the Step's g_forwards
    g_forwards: tuple[str, ...] | None = None
    # D returns a list per scale, each scale's features then its prediction last
    # (pix2pixHD's MultiscaleDiscriminator): the Step's D is a ScalesD
    d_scales: bool = False
    # D was forwarded on data between D's last step and G's in each iteration (a read of
    # D on the real batch in G's step)
    real_in_g_step: bool = False
    # G's one input was a module of the script's, of no trainable parameters, called on
    # each iteration's real batch (MelGAN's ``fft(x_t)``): its name; the real batches are
    # then (x, that input), read as image_to_image's pairs with D called D(x) alone
    g_from_real: str | None = None
    # G's one input came in each DataLoader batch beside D's real batch (SRGAN's
    # imgs["lr"] beside imgs["hr"]): the two places in the batch, as code; the real
    # batches are then (x, G's input), as with ``g_from_real``
    g_given: tuple[str, str] | None = None
    # G's calls, by seq (those ``zs`` holds)
    g_seqs: list[int] = field(default_factory=list)
    # G's inputs where none was a draw (each from the DataLoader's batch beside D's real
    # one, or that batch made over: ccgan.py's masked_imgs), as the script names them at
    # G's call, and that line (file:line: text); the real batches are then (x, (G's
    # inputs)), read as image_to_image's pairs with D called D(x) alone
    g_named: tuple[tuple[str, ...], str] | None = None
    # the script's loss modules of frozen parameters that G's loss called on (G's output,
    # the real target) in each iteration (pix2pixHD's VGGLoss): each one's printed name,
    # the module and its state when first called (_loss_modules)
    loss_modules: tuple[tuple[str, nn.Module, dict], ...] = ()
    # the script's modules no optimizer trains that G's loss called on G's output and
    # on the real target apart, one tensor each (SRGAN's feature_extractor: a content
    # loss between their features): each one's printed name, the module and its state
    # when first called (_feature_modules)
    feature_modules: tuple[tuple[str, nn.Module, dict], ...] = ()
    # whose optimizer ("G", "D" or another label) took each of the script's steps, in
    # order: the step taken as the k-th is Capture.history's key k
    stepped: list[str] = field(default_factory=list)
    # which of ``zs`` are G's calls in InfoGAN's info steps (audit.INFO), and that step's
    # terms as fitted (:func:`_info_terms`): each (name, weight, the term as code)
    info: list[bool] = field(default_factory=list)
    info_terms: tuple[tuple[str, float, str], ...] = ()

    @property
    def conditional(self) -> bool:
        return len(self.zs[0][0]) == 2

    @property
    def tuple_latent(self) -> bool:
        """G is given three tensors or more (InfoGAN's z, labels and code): the Step's
        latent returns them as a tuple, G called on its parts."""
        return len(self.zs[0][0]) > 2


def _same(a: object, b: object) -> bool:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    return False


def _plain_arguments(module: nn.Module, args: tuple, keywords: dict) -> dict | str:
    """The plain values a call of G or D gave beside its tensors (ProGAN's ``critic(x,
    alpha, step)``), by the names of ``module``'s forward's parameters, its plain keywords
    too (``critic(fake, alpha, steps=step)``); or why they cannot be read so."""
    first = next(i for i, a in enumerate(args) if not isinstance(a, Tensor))
    values = args[first:]
    if any(type(a) not in PLAIN_VALUES for a in values):  # (a tensor among them too)
        shown = ", ".join(repr(a)[:20] for a in values if not isinstance(a, Tensor))
        return (f"({shown}) among or after them, not plain numbers, strings or None after its "
                "tensors: not mapped")  # fmt: skip
    signature = inspect.signature(module.forward)
    try:
        bound = signature.bind(*args, **keywords)
    except (TypeError, ValueError) as e:
        return f"they do not bind to its forward's parameters ({e}): not mapped"
    named = dict(list(bound.arguments.items())[first:])
    if any(signature.parameters[name].kind in (inspect.Parameter.VAR_POSITIONAL,
                                               inspect.Parameter.VAR_KEYWORD)
           for name in named):  # fmt: skip
        return ("they are taken by its forward's *args or **kwargs, not by names of their "
                "own: not mapped")  # fmt: skip
    return named


def _stages(rec, capture: Capture, staged: dict, iterations: int) -> dict | str:
    """Replay's ``staged`` and ``staged_text`` from the plain values each update call of
    G or D gave (:func:`_plain_arguments`): the same in every call of one in an iteration
    (a Step calls G and D with one set a call); where not, why."""
    values, texts = {}, {}
    for role, by_iteration in staged.items():
        given = [plain is not None for calls in by_iteration.values() for plain, _ in calls]
        if not any(given):
            continue
        if not all(given):
            return (f"{role} is called with plain values beside its tensors in some calls of "
                    "the update and not in others: not mapped")  # fmt: skip
        values[role] = []
        for i in range(iterations):
            found = [plain for plain, _ in by_iteration.get(i, [])]
            if not found or any(p != found[0] for p in found):
                return (f"{role} is called with other plain values within iteration {i} "
                        f"({found}): a Step calls it with one set a call: not mapped")  # fmt: skip
            values[role].append(found[0])
        texts[role] = _plain_texts(rec, capture, by_iteration[0][0][1], values[role][0])
    return {"staged": values, "staged_text": texts} if values else {}


def _plain_texts(rec, capture: Capture, seq: int, plain: dict) -> dict[str, str]:
    """The script's code for each of ``plain``'s values at the call ``seq`` (``alpha``,
    ``step``), read from its line; a value's literal where the line does not say."""
    texts = {name: _literal(value) for name, value in plain.items()}
    script_file, line = getattr(rec, "script_file", None), capture.sites.get(seq)
    if script_file is None or line is None:
        return texts
    try:
        tree = ast.parse(linecache.getline(script_file, line).strip())
    except SyntaxError:  # (a call over several lines)
        return texts
    for call in (c for c in ast.walk(tree) if isinstance(c, ast.Call)):  # outermost first
        given = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg in plain}
        count = len(plain) - len(given)  # the values given by position, last
        if len(call.args) <= count or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        unnamed = [name for name in plain if name not in given]
        shown = [ast.unparse(a) for a in call.args[len(call.args) - count :]]
        return {**texts, **dict(zip(unnamed, shown, strict=True)), **given}
    return texts


def replay(rec, capture: Capture, iterations: int, d_order: str = "real_first",
           augment: tuple[str, str] | None = None, pair: tuple[str, int] | None = None,
           g_join: tuple[str, int] | None = None,
           coupled: tuple[int, ...] | None = None) -> Replay | str:  # fmt: skip
    """Each iteration's real batches (D's inputs not made by G, nor requiring grad as a
    penalty's interpolates do; the real rows of a D input concatenated with G's) and
    G's inputs with the generator states at those calls (the same z given again is one
    draw); or why not. With ``augment`` (``_augment_of``), a real batch is the one
    before the script's change in D's call; with ``pair`` (``_paired_d``), each D input
    is read as the image and G's source it joins, ``D(x, c)``; with ``g_join``
    (``_joined_condition``), G's one input as its z and condition, ``G(z, c)``; with
    ``coupled`` (:func:`_coupled`), D's inputs joined along the channels, one tensor."""
    reals: list[list[object]] = [[] for _ in range(iterations)]
    real_rng: list[list[list[Tensor]]] = [[] for _ in range(iterations)]  # at D(real)
    graded: list[list[object]] = [[] for _ in range(iterations)]  # data requiring grad
    zs: list[tuple[tuple[Tensor, ...], list[Tensor]]] = []
    np_states: list[object] = []  # numpy's, at each of zs' calls
    z_seqs, fake_labels, d_takes, concat, z_reused = [], {}, set(), set(), False
    listed: set[bool] = set()  # whether each G call was given its z in a list
    style_sets: list[tuple[Tensor, ...] | None] = []  # G's z given in a list, each call
    z_iterations: list[int] = []
    # G's and D's calls by iteration: each one's plain values beside its tensors (None
    # where it has none) and its seq
    staged: dict[str, dict[int, list[tuple[dict | None, int]]]] = {}
    groups = _call_groups(rec, iterations)
    if isinstance(groups, str):
        return groups
    parts, mixing, second = groups  # (G's parts, a style mixing's second mappings)
    for f in rec.forwards:  # (G.synthesis on G.mapping's output, a second mapping mixed
        skip = f.continues or f.seq in second  # in: the same call of G as the first's)
        if skip or f.iteration >= iterations or not f.used or f.seq not in capture.calls:
            continue
        args, rng = capture.calls[f.seq]
        styles = None
        if f.label == "G":  # G([z]) or G([z1, z2]): rosinality's StyleGAN2 gives G its z
            styles = _listed_styles(args)  # in a list, two where it mixes styles
            listed.add(styles is not None)
            args = (styles[0],) if styles is not None else args
        tensors = tuple(a for a in args if isinstance(a, Tensor))
        if f.label == "G" and g_join is not None and len(tensors) == 1:
            tensors = _split_condition(tensors[0], g_join)
        most = 3 if f.label == "G" and info_steps(rec) else 2  # (InfoGAN's G: 3)
        if f.label in ("G", "D") and not 1 <= len(tensors) <= most:
            return (f"{f.label} is called with {len(tensors)} tensors: the port maps G(z), "
                    "G(z, c), D(x) and D(x, c) so far, and G(z, c, code) beside InfoGAN's "
                    "info step")  # fmt: skip
        plain = None  # ProGAN's critic(x, alpha, step): its values by their names
        if f.label in ("G", "D") and any(not isinstance(a, Tensor) for a in args):
            plain = _plain_arguments(rec.modules[f.label], args, capture.keywords.get(f.seq, {}))
            if isinstance(plain, str):
                return f"{f.label} is called with arguments besides its tensors: {plain}"
        if f.label in ("G", "D"):
            staged.setdefault(f.label, {}).setdefault(f.iteration, []).append((plain, f.seq))
        if f.label == "G" and zs and _same(zs[-1][0], tensors):
            z_reused = True
        elif f.label == "G":
            zs.append((tensors, rng))
            np_states.append(capture.np_states.get(f.seq))
            z_seqs.append(f.seq)
            z_iterations.append(f.iteration)
            style_sets.append(styles)
        elif f.label == "D":
            if augment is not None and f.producer is None and f.seq in capture.arguments:
                _, before, state = capture.arguments[f.seq]  # the batch before the change
                tensors, rng = (before, *tensors[1:]), rng if state is None else state
            if pair is not None and len(tensors) == 1 and tensors[0].dim() >= 2 and (
                    tensors[0].shape[1] > pair[1]):  # fmt: skip
                tensors = _unpaired(tensors[0], pair)
            if coupled is not None and len(tensors) == len(coupled):  # one image a domain
                tensors = (torch.cat(tensors, 1),)
            d_takes.add(len(tensors))
            concat |= {f.concat} - {None}
            real, labels = _split_d_input(f, tensors, capture)
            if labels is not None:
                fake_labels[f.producer.seq] = labels
            if real is None and f.producer is None:  # R1's real batch, or interpolates
                real, into = (tensors[0] if len(tensors) == 1 else tensors), graded
            else:
                into = reals
            if real is not None and not (into[f.iteration]
                                         and _same(into[f.iteration][-1], real)):  # fmt: skip
                into[f.iteration].append(real)
                if into is reals:
                    real_rng[f.iteration].append(rng)
    if (not zs or len({len(t) for t, _ in zs}) != 1 or len(d_takes) != 1 or len(concat) > 1
            or len(listed) > 1):  # fmt: skip
        return "G or D is called with a varying number of tensors or orders: not mapped"
    # where D was given no other data, what required grad was its real batch (R1 takes
    # the gradient at it); beside real batches, a penalty's points (WGAN-GP's mixes)
    graded_real = any(graded) and all(not it or any(_same(g, r) for r in it)
                                      for it, grads in zip(reals, graded, strict=True)
                                      for g in grads)  # fmt: skip
    reals = [it or grads for it, grads in zip(reals, graded, strict=True)]
    if not all(reals):
        return "an audited iteration gave D no real batch of its own: not mapped"
    ends = []
    for i in range(iterations):  # the last step of G or D in iteration i
        last = max(j for j, st in enumerate(rec.opt_steps) if st.iteration == i
                   and st.label in ("G", "D"))  # fmt: skip
        ends.append(last + 1)
    lazy = _lazy_calls(rec, z_seqs)
    embedding = _embedding(rec, capture, zs, [fake_labels.get(s) for s in z_seqs])
    d_fill = None
    if embedding is None:
        given = [fake_labels.get(s) for s in z_seqs]
        d_fill = _fill_of(zs, given)
        unlike = None if d_fill is not None else _conditions_unlike(zs, given)
        if unlike is not None:
            return unlike
    if d_fill is not None:  # the real batches' conditions as G is given them
        reals = _unfilled(reals, zs[0][0][1].shape[1:])
        if isinstance(reals, str):
            return reals
    if embedding is not None:  # G's input as the labels, embedded by the wrapper
        zs = [((z[0], fake_labels[s]), rng) for (z, rng), s in zip(zs, z_seqs, strict=True)]
    image_to_image = False
    if d_takes == {2} and len(zs[0][0]) == 1:  # D takes a condition G does not
        sources = [r[1] for it in reals for r in it if isinstance(r, tuple)]
        image_to_image = all(any(_same(z[0], c) for c in sources) for z, _ in zs)
        if not image_to_image:
            return "D takes a condition that G does not: not mapped"
    clips = _clips(rec, iterations)
    if isinstance(clips, str):
        return clips
    stages = _stages(rec, capture, staged, iterations)
    if isinstance(stages, str):
        return stages
    condition_real = len(zs[0][0]) == 2 and zs[0][0][1].numel() > 0 and all(
        any(isinstance(r, tuple) and _same(z[1], r[1]) for r in reals[it])
        for (z, _), it in zip(zs, z_iterations, strict=True))  # fmt: skip
    labels = [[_labels_of(x, capture.batches) if isinstance(x, Tensor) else None
               for x in it] for it in reals]  # fmt: skip
    return Replay(reals, zs, d_takes == {2}, ends, image_to_image, labels,
                  concat=min(concat, default=None), d_order=d_order, embedding=embedding,
                  after=_calls_after(rec, capture, ends), g_parts=parts,
                  style_mixing=mixing, lazy=lazy, **_lazy_form(capture, zs, z_seqs, lazy, parts),
                  losses=_step_losses(rec, iterations), graded_real=graded_real,
                  graded_fake=_graded_fakes(rec, iterations),
                  clips=clips, g_reals=_g_phase_reals(rec, capture, iterations),
                  real_rng=real_rng, z_reused=z_reused, d_fill=d_fill,
                  condition_real=condition_real, augment=augment, d_pair=pair, coupled=coupled,
                  g_join=g_join, g_listed=listed == {True}, np_states=np_states,
                  numpy_in_d=_numpy_drew_in_d_steps(rec, capture), g_seqs=z_seqs,
                  stepped=[st.label for st in rec.opt_steps], info=_info_calls(rec, z_seqs),
                  **stages, **_mixed_styles(capture, style_sets, z_seqs))  # fmt: skip


def _graded_fakes(rec, iterations: int) -> bool:
    """Whether a penalty took D's gradient at G's outputs as D was given them in the same
    phase (no optimizer step between D's forward and the penalty): WGAN-div's, read from
    D's loss forwards, not at points of its own (WGAN-GP's mixes, made anew)."""
    for b in rec.backwards:
        if not b.inputs or b.iteration >= iterations:
            continue
        if {f.key for f in phase_forwards(rec, b.seq) if f.fed_by_g} & set(b.inputs):
            return True
    return False


def _numpy_drew_in_d_steps(rec, capture: Capture) -> bool:
    """Whether numpy's global generator moved between two of D's calls since the step
    before one of D's steps (a penalty's alpha drawn by np.random between them)."""
    after = -1
    for step in sorted(rec.opt_steps, key=lambda s: s.seq):
        since, after = after, step.seq
        if step.label != "D":
            continue
        seqs = sorted(f.seq for f in rec.forwards if f.label == "D" and since < f.seq < step.seq
                      and f.seq in capture.np_states)  # fmt: skip
        states = [capture.np_states[seq] for seq in seqs]
        for a, b in zip(states, states[1:], strict=False):
            if a[2] != b[2] or bool((a[1] != b[1]).any()):  # (its position, its words)
                return True
    return False


def _g_phase_reals(rec, capture: Capture, iterations: int) -> list[object]:
    """Each iteration's one D forward on data without a graph, after D's last step and
    before G's (AlexiaJM's G step reads D on a real batch of its own, D frozen); [] unless
    every iteration has one."""
    found = []
    for i in range(iterations):
        between = _d_then_g(rec, i)
        if between is None:
            return []
        d, g = between
        seen = [f for f in rec.forwards if f.label == "D" and not f.used and f.producer is None
                and not f.input_grad and d < f.seq < g and f.seq in capture.calls]  # fmt: skip
        if len(seen) != 1:
            return []
        tensors = tuple(_call_tensors(capture, seen[0].seq))
        found.append(tensors[0] if len(tensors) == 1 else tensors)
    return found


def _clips(rec, iterations: int) -> dict[str, tuple[str, str | None]] | str:
    """The gradient clipping the script called before each step of G and of D in the
    ``iterations``, by phase (``"g"``, ``"d"``): the same call before every step of that
    side, on all of its parameters; or why it is not mapped."""
    found: dict[str, tuple[str, str | None]] = {}
    for role in ("G", "D"):
        ids = frozenset(id(p) for p in rec.modules[role].parameters())
        steps = [st for st in rec.opt_steps if st.label == role and st.iteration < iterations]
        before, calls = 0, []
        for st in steps:  # the clipping of the role's gradients since its step before
            calls.append([c for c in rec.clips if before < c.seq < st.seq and c.params & ids])
            before = st.seq
        seen = [c for each in calls for c in each]
        if not seen:
            continue
        where = f" ({seen[0].where})" if seen[0].where else ""
        if any(c.params != ids for c in seen):
            return (f"the script clips the gradients of some of {role}'s parameters{where}, "
                    "not all of them: not mapped")  # fmt: skip
        if any(len(each) != 1 for each in calls) or len({c.code for c in seen}) != 1:
            return (f"the script clips {role}'s gradients{where} before some of its steps, "
                    "not once before each the same way: not mapped")  # fmt: skip
        found[role.lower()] = (seen[0].code.format(role), seen[0].where)
    return found


def _step_losses(rec, iterations: int) -> list[dict[str, list[float | None]]]:
    """For each iteration, what the script backpropagated for each step of D and of G:
    the summed loss values of the backward passes that step used since that role's
    step before (None where one of them took no plain number, or none was recorded)."""
    out: list[dict[str, list[float | None]]] = [{"D": [], "G": []} for _ in range(iterations)]
    before = {"D": -1, "G": -1}
    for st in rec.opt_steps:
        if st.label not in before:
            continue
        values = [b.value for b in rec.backwards
                  if st.label in b.used_by and before[st.label] < b.seq < st.seq]  # fmt: skip
        before[st.label] = st.seq
        if st.iteration < iterations:
            known = values and None not in values
            out[st.iteration][st.label].append(sum(values) if known else None)
    return out


def _call_groups(rec, iterations: int) -> tuple[tuple[str, str] | None, bool, set[int]] | str:
    """Where the script calls G's parts itself: the names of its first part (called on
    data) and of the later one, whether each used call of the later part took two calls
    of the first (StyleGAN2-ADA's style mixing: a second z mapped and mixed into the
    first one's ws before the synthesis), and the seqs of those second calls; or why
    the calls are not one or two per call of G."""
    per_call, extra, pending, names = set(), set(), [], set()
    for f in rec.forwards:
        if f.label != "G" or not f.part or f.iteration >= iterations:
            continue
        if not f.continues:
            pending.append(f)
        elif pending:
            if f.used:
                per_call.add(len(pending))
                extra |= {g.seq for g in pending[1:]}
                names |= {(g.part, f.part) for g in pending}
            pending = []
    if per_call <= {1} and len(names) <= 1:
        return (names.pop() if names else None), False, set()
    if per_call == {2} and len(names) == 1:
        return names.pop(), True, extra
    counts = " or ".join(str(k) for k in sorted(per_call))
    return (
        f"the script calls G's parts itself, and not as one chain per call of G ({counts} "
        "calls on data before a part takes their output; StyleGAN2's style mixing mixes "
        "two): not mapped"
    )


def _lazy_calls(rec, z_seqs: list[int]) -> list[bool]:
    """For each of G's calls at ``z_seqs``: whether no D judged what it made (a call in
    G's own regularization step: StyleGAN2-ADA's Greg)."""
    judged = {f.producer.head.seq for f in rec.forwards
              if f.label == "D" and f.fed_by_g}  # fmt: skip
    return [seq not in judged for seq in z_seqs]


def _info_calls(rec, z_seqs: list[int]) -> list[bool]:
    """For each of G's calls at ``z_seqs``: whether it was in an info step's phase (after
    the G or D step before that step)."""
    seqs = {f.seq for s in info_steps(rec) for f in phase_forwards(rec, s.seq, "G")}
    return [seq in seqs for seq in z_seqs]


def _lazy_form(capture: Capture, zs: list, z_seqs: list[int], lazy: list[bool],
               parts: tuple[str, str] | None) -> dict:  # fmt: skip
    """Replay's ``g_latents``, ``lazy_drawn`` and ``lazy_shrink`` from G's lazy calls. The
    keywords read as G's latents are those the lazy calls were given with a value no
    judged call had (StyleGAN3's update_emas=False is Gmain's too), and only where the
    script calls G whole (where it calls G's parts the latents are the mapping's)."""
    seqs = [s for s, is_lazy in zip(z_seqs, lazy, strict=True) if is_lazy]
    if not seqs:
        return {}
    judged = [s for s, is_lazy in zip(z_seqs, lazy, strict=True) if not is_lazy]
    given = {pair for s in judged for pair in capture.keywords.get(s, {}).items()}
    extra = [{k: v for k, v in capture.keywords.get(s, {}).items() if (k, v) not in given}
             for s in seqs]  # fmt: skip
    rows = [len(z[0]) for (z, _), is_lazy in zip(zs, lazy, strict=True)]
    round_rows = next((n for n, is_lazy in zip(rows, lazy, strict=True) if not is_lazy), 0)
    lazy_rows = next(n for n, is_lazy in zip(rows, lazy, strict=True) if is_lazy)
    shrink = max(1, round_rows // max(lazy_rows, 1))
    same = parts is None and extra[0] and all(e == extra[0] for e in extra)
    return {
        "g_latents": extra[0] if same else None,
        "lazy_drawn": not any(s in capture.cut for s in seqs),
        "lazy_shrink": shrink if round_rows // shrink == lazy_rows else 2,  # else: unmapped
    }


def _split_d_input(f, tensors: tuple[Tensor, ...], capture: Capture) -> tuple[object, object]:
    """A D call's real batch (``x`` or ``(x, c)``, None where it has none) and the labels
    it judged G's fakes with (None where it did not take labels, or judged no fakes)."""
    if f.producer is None:  # data; or, requiring grad, a penalty's interpolates
        real = None if f.input_grad else tensors[0] if len(tensors) == 1 else tensors
        return real, None
    if f.producer.label != "G":
        return None, None
    if f.concat is None:
        return None, tensors[1] if len(tensors) == 2 else None
    made = next(a for a in capture.calls[f.producer.seq][0] if isinstance(a, Tensor)).shape[0]
    total = tensors[0].shape[0]
    fake, real = ((slice(0, made), slice(made, total)) if f.concat == "fake_first"
                  else (slice(total - made, total), slice(0, total - made)))  # fmt: skip
    rows = tuple(t[real] for t in tensors)
    return (rows[0] if len(rows) == 1 else rows), tensors[1][fake] if len(tensors) == 2 else None


def _embedding(rec, capture: Capture, zs: list, labels: list) -> str | None:
    """The name of G's Embedding that made G's second input from the labels D judged
    its fakes with (BigGAN's ``G(z, G.shared(y))``), checked on the first call at G's
    first state; None where there is none."""
    G = rec.modules["G"]
    first = zs[0][0]
    if (len(first) != 2 or not first[1].is_floating_point() or labels[0] is None
            or any(c is None for c in labels)):  # fmt: skip
        return None
    twin = _copy(G, capture.first_state[id(G)])
    for name, child in twin.named_children():
        if isinstance(child, nn.Embedding):
            with torch.no_grad():
                made = child(labels[0])
            if made.shape == first[1].shape and torch.equal(made, first[1]):
                return name
    return None


def _fill_of(zs: list, labels: list) -> tuple[int, int] | None:
    """The (height, width) over which D's condition on G's fakes is G's condition filled
    (``y_vec[:, :, None, None].expand(-1, -1, h, w)``: a constant map per entry of G's
    vector, pytorch-generative-model-collections' CGAN); None where it is not so."""
    found = set()
    for (z, _), given in zip(zs, labels, strict=True):
        if len(z) != 2 or given is None or given.dim() != 4:
            return None
        c = z[1]
        if not c.is_floating_point() or c.numel() != c.shape[0] * given.shape[1]:
            return None
        if given.dtype != c.dtype or given.shape[0] != c.shape[0]:
            return None
        if not torch.equal(c.reshape(c.shape[0], -1, 1, 1).expand_as(given), given):
            return None
        found.add(tuple(given.shape[2:]))
    return found.pop() if len(found) == 1 else None


def _unfilled(reals: list[list[object]], shape: torch.Size) -> list[list[object]] | str:
    """The real batches ``(x, c)`` with each filled condition ``c`` as G is given one
    (shape ``(n, *shape)``): the value of each constant map."""
    made = []
    for batches in reals:
        row = []
        for x, c in batches:
            corner = c[:, :, :1, :1]
            if not torch.equal(corner.expand_as(c), c):
                return "D's condition on a real batch is not a constant map per entry: not mapped"
            row.append((x, corner.reshape(c.shape[0], *shape)))
        made.append(row)
    return made


def _conditions_unlike(zs: list, labels: list) -> str | None:
    """Why G's and D's conditions cannot be a Step's one condition: G given one tensor
    and D, on G's fakes, another (a one-hot vector for G and its maps for D, as
    pytorch-generative-model-collections' CGAN writes them); None where they are one."""
    for (z, _), given in zip(zs, labels, strict=True):
        if len(z) == 2 and given is not None and not _same(z[1], given):
            return (f"G is given a condition of shape {tuple(z[1].shape)} and D, on G's "
                    f"fakes, one of shape {tuple(given.shape)}: a Step gives both the same "
                    "condition (a wrapper of D making its own from G's would take it): not "
                    "mapped")  # fmt: skip
    return None


class _Embedded(nn.Module):
    """``G(z, G.<name>(y))``: a G given its labels' embedding by the script."""

    def __init__(self, G: nn.Module, name: str) -> None:
        super().__init__()
        self.G, self.name = G, name

    def forward(self, z: Tensor, y: Tensor) -> Tensor:
        return self.G(z, getattr(self.G, self.name)(y))


def _calls_after(rec, capture: Capture, ends: list[int]) -> list[list[tuple]]:
    """Per iteration, the calls of G or D outside the update made after its last step
    and before the next iteration's first forward of the update."""
    firsts: dict[int, int] = {}
    for f in rec.forwards:
        if f.used:
            firsts.setdefault(f.iteration, f.seq)
    after: list[list[tuple]] = [[] for _ in ends]
    for f in rec.forwards:
        if f.label not in ("G", "D") or f.used or f.seq not in capture.calls:
            continue
        for i, end in enumerate(ends):
            if rec.opt_steps[end - 1].seq < f.seq < firsts.get(i + 1, float("inf")):
                after[i].append((f.label, f.part, *capture.calls[f.seq]))
    return after


def _labels_of(x: Tensor, batches: list[tuple[Tensor, ...]]) -> Tensor | None:
    """The one integer vector beside ``x`` in the DataLoader batch that gave it (its
    values: a script may cast it), or None."""
    for batch in batches:
        if any(t.shape == x.shape and torch.equal(t.to(x.device, x.dtype), x) for t in batch):
            found = [t for t in batch if t.dim() == 1 and len(t) == len(x)
                     and not t.is_floating_point()]  # fmt: skip
            return found[0] if len(found) == 1 else None
    return None


def _set_rng(states: list[Tensor]) -> None:
    torch.random.set_rng_state(states[0])
    if len(states) > 1:
        torch.cuda.set_rng_state_all(states[1:])


def _set_numpy_state(state: object) -> None:
    """numpy's global generator as the capture kept it (None: the script had no numpy)."""
    if state is not None:
        sys.modules["numpy"].random.set_state(state)


def _copy(module: nn.Module, state: dict) -> nn.Module:
    twin = module_copy(module)
    twin.load_state_dict(state)
    return twin


def _optimizer_like(opt, made_state: dict, original: nn.Module, twin: nn.Module,
                    *more: tuple[nn.Module, nn.Module]):  # fmt: skip
    """An optimizer of ``opt``'s kind over ``twin``'s parameters (and those of each
    further ``(original, twin)`` pair in ``more``: the info step's over G and D), in the
    state the script made ``opt`` in."""
    twin_of = {id(p): q for a, b in ((original, twin), *more)
               for p, q in zip(a.parameters(), b.parameters(), strict=True)}  # fmt: skip
    groups = [{**{k: v for k, v in g.items() if k != "params"},
               "params": [twin_of[id(p)] for p in g["params"]]}
              for g in opt.param_groups]  # fmt: skip
    new = type(opt)(groups)
    new.load_state_dict(made_state)
    for group in new.param_groups:  # trainable, whatever the script left them switched to
        for p in group["params"]:
            p.requires_grad_(True)
    return new


def _named_leaves(value: object, name: str) -> Iterator[tuple[str, Tensor]]:
    if isinstance(value, Tensor):
        yield name, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _named_leaves(v, f"{name}.{k}" if name else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _named_leaves(v, f"{name}[{i}]")


def difference(mine: dict, theirs: dict, name: str = "") -> tuple[float, str]:
    """The largest absolute difference between two states' tensors and where it is (inf
    where they differ in shape or in what they hold)."""
    a, b = list(_named_leaves(mine, name)), list(_named_leaves(theirs, name))
    if [k for k, _ in a] != [k for k, _ in b]:
        return float("inf"), f"{name} (other entries)"
    worst = (0.0, name)
    for (key, x), (_, y) in zip(a, b, strict=True):
        if x.shape != y.shape or (not x.is_floating_point() and not torch.equal(x, y)):
            return float("inf"), key
        if x.is_floating_point() and x.numel():
            gap = float((x.double() - y.double()).abs().max())
            worst = max(worst, (gap, key))
    return worst


def rounding_entries(first: tuple, again: tuple, noise: float) -> dict[str, tuple[float, float]]:
    """The module entries whose move over the audited iterations in the script's float64
    run is at most ``noise`` times their move in its float32 run: a gradient of float32's
    rounding alone (0 in exact arithmetic: a bias before InstanceNorm), which Adam makes
    steps of. ``first``, ``again``: each run's (modules, each as (name, module), capture,
    last step's place). By name (``name.key``, as :func:`difference` names entries), with
    the two moves."""
    found = {}
    moved = []
    for modules, capture, end in (first, again):
        run = {}
        for name, module in modules:
            start, last = capture.first_state[id(module)], capture.at_step[end][id(module)]
            for key, value in start.items():
                if value.is_floating_point() and value.numel():
                    run[f"{name}.{key}"] = float((last[key].double() - value.double()).abs().max())
        moved.append(run)
    for key, move32 in moved[0].items():
        move64 = moved[1].get(key)
        if move64 is not None and move32 > 0 and move64 <= noise * move32:
            found[key] = (move32, move64)
    return found


def not_compared(rounding: dict[str, tuple[float, float]]) -> str:
    """The note naming the entries :func:`rounding_entries` found, left out of a float64
    comparison."""
    moves = "; ".join(f"{k} by {a:.3g} in float32, {b:.3g} in float64"
                      for k, (a, b) in sorted(rounding.items()))  # fmt: skip
    return ("not compared: the entries whose gradient is float32's rounding alone (0 in "
            "exact arithmetic: a bias before InstanceNorm), which Adam makes steps of, as "
            f"the script's own two runs moved them: {moves}")  # fmt: skip


def parted_line(notes: list[str], chosen: tuple) -> str | None:
    """Where the (schedule, candidate) ``chosen`` parted from the script, as a search's
    notes (each candidate's line) say: ``they part at iteration i, most in KEY (gap)``;
    its line without G's fitted terms where it had none there (:func:`_fit_terms` ended
    it, or a probe failed)."""
    schedule, candidate = chosen
    for label in (_label(schedule, candidate), _label(schedule, replace(candidate, g_fit=()))):
        found = next((n.removeprefix(label + ": ") for n in notes
                      if n.startswith(label + ": ")), None)  # fmt: skip
        if found is not None:
            return found
    return None


def tied(found: Port) -> list[str]:
    """The labels of the Steps that all equal the script where the search found several
    (its note "N Steps equal the script over n iteration(s), which cannot tell them
    apart"), or []."""
    if found.code is None and found.notes and TIED in found.notes[0]:
        return found.notes[1:]
    return []


def among(labels: list[str], chosen: tuple) -> bool:
    """Whether the (schedule, candidate) ``chosen`` is one of ``labels`` (its G terms, read
    from a gradient, may be read apart by another run: its label without them will do)."""
    schedule, candidate = chosen
    plain = _label(schedule, replace(candidate, g_fit=()))
    return _label(schedule, candidate) in labels or any(
        label == plain or label.startswith(plain + " ") for label in labels
    )


def script_moved(rec, capture: Capture, names: dict[str, str], key: str) -> float | None:
    """How far the script's own run moved the entry ``key`` of G's or D's state (named
    as :func:`difference` names it, ``self.G.l1.0.bias``) from its first state to its
    state after its last optimizer step recorded; None where ``key`` is none of them."""
    if not capture.history:
        return None
    last = capture.history[max(capture.history)]
    for role in ("G", "D"):
        module, name = rec.modules[role], names.get(role, role) + "."
        if not key.startswith(name) or id(module) not in last:
            continue
        first = capture.first_state.get(id(module), {}).get(key.removeprefix(name))
        end = last[id(module)].get(key.removeprefix(name))
        if isinstance(first, Tensor) and isinstance(end, Tensor) and first.is_floating_point():
            return float((end.double() - first.double()).abs().max())
    return None


@dataclass
class _Script:
    """The script's G and D, their optimizers and names, as the audit found them."""

    G: nn.Module
    D: nn.Module
    opt_g: torch.optim.Optimizer
    opt_d: torch.optim.Optimizer
    names: dict[str, str]
    namespace: dict = field(default_factory=dict)  # the names its loop sees (ScriptRecorder.scope)
    # the optimizer over G's and D's parameters that took InfoGAN's info step, if one did
    opt_info: torch.optim.Optimizer | None = None


def _find(rec, names: dict[str, str], stepped: set[int]) -> _Script | str:
    """The script's G, D and the optimizers that stepped them (by ``id`` in
    ``stepped``: one the script made and never stepped is not G's or D's), named; an
    optimizer holding both G's and D's parameters is the info step's (InfoGAN's)."""
    G, D = rec.modules["G"], rec.modules["D"]
    found = {}
    holds = {role: {id(p) for p in module.parameters()} for role, module in (("G", G), ("D", D))}

    def holding(o: torch.optim.Optimizer, role: str) -> bool:
        return any(id(p) in holds[role] for g in o.param_groups for p in g["params"])

    both = [o for o in rec.optimizers if id(o) in stepped and holding(o, "G") and holding(o, "D")]
    if len(both) > 1:
        return f"G's and D's parameters are in {len(both)} optimizers together: not mapped"
    for role in ("G", "D"):
        held = [o for o in rec.optimizers if id(o) in stepped and holding(o, role)
                and o not in both]  # fmt: skip
        if len(held) != 1:
            return f"{role}'s parameters are in {len(held)} optimizers: the port maps one each"
        found[role] = held[0]
    namespace = rec.scope
    by_id = global_names(namespace)
    shown = {"G": names.get("G", "G"), "D": names.get("D", "D")}
    for role, module in (("G", G), ("D", D)):  # a global, the module's attribute (BigGAN's)
        attribute = next((k for k, v in vars(module).items() if v is found[role]), None)
        held = (f"{shown[role]}.{attribute}" if attribute  # or in a global list of dicts
                else path_to(namespace, found[role]) or _wrapping(namespace, found[role])
                or f"opt_{role.lower()}")  # fmt: skip
        shown[f"opt_{role.lower()}"] = by_id.get(id(found[role]), held)
    if both:
        shown["opt_info"] = by_id.get(id(both[0]), path_to(namespace, both[0]) or "opt_info")
    return _Script(G, D, found["G"], found["D"], shown, namespace, both[0] if both else None)


def _wrapping(namespace: dict, opt: torch.optim.Optimizer) -> str | None:
    """A name of the script's whose ``optimizer`` is ``opt``, as code: Lightning's
    ``optimizer_g, optimizer_d = self.optimizers()`` in a ``training_step`` name
    LightningOptimizers, whose property ``optimizer`` is the optimizer that steps."""
    for name, value in namespace.items():
        if not name.startswith("_") and isinstance(
                getattr(type(value), "optimizer", None), property):  # fmt: skip
            try:
                if value.optimizer is opt:
                    return f"{name}.optimizer"
            except Exception:  # a property that cannot be read here
                continue
    return None


def global_names(namespace: dict) -> dict[int, str]:
    """By ``id``, the first public global naming each object of a script's globals (not
    a later loop variable left naming it: StyleGAN2-ADA's phase loop leaves ``module``)."""
    found: dict[int, str] = {}
    for name, value in namespace.items():
        if not name.startswith("_"):
            found.setdefault(id(value), name)
    return found


def path_to(namespace: dict, target: object) -> str | None:
    """Where ``target`` sits two levels deep in a list, dict, module or plain object of
    the script's names, as code: StyleGAN2-ADA's ``phases[0]["opt"]``, a trainer class's
    ``self.generator``; None where it does not."""

    def items(value: object) -> list[tuple[str, object]]:
        if isinstance(value, dict):
            return [(f"[{k!r}]", v) for k, v in value.items() if isinstance(k, str)]
        if isinstance(value, (list, tuple)):  # (the first entries: not a whole dataset)
            return [(f"[{i}]", v) for i, v in enumerate(value[:100])]
        if isinstance(value, nn.Module):  # its modules, then what else it holds (pix2pixHD's
            held = [(f".{k}", v) for k, v in vars(value).items() if not k.startswith("_")]
            return [(f".{k}", v) for k, v in value.named_children()] + held  # optimizers)
        if isinstance(value, (Tensor, type, ModuleType)) or not hasattr(value, "__dict__"):
            return []
        return [(f".{k}", v) for k, v in vars(value).items() if not k.startswith("_")]

    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        for first, inner in items(value):
            if inner is target:
                return f"{name}{first}"
            second = next((k for k, v in items(inner) if v is target), None)
            if second is not None:
                return f"{name}{first}{second}"
    return None


def schedules(audited: str, g_batch: int = 1, fresh_real: bool = False,
              z_reused: bool = False, varying: bool = False) -> list[tuple[str, bool]]:  # fmt: skip
    """The schedules that could be the script's, each with whether a Step call takes one
    real batch per D step: the audit's; for a ``d_first`` the same with G's step on a z
    of its own (``reuse_fake=False``, BigGAN's), on ``g_batch`` times the rows where G's
    calls took two sizes (SNGAN's ``batch_size * 2``), on a real batch of its own
    (``fresh_real``, AlexiaJM's), or on fakes made anew from the D step's z where G was
    given a z again (``reuse_z=True``: znxlwm's collection, ``G_ = self.G(z_)`` in both
    steps; with G steps ``g_steps=k``, each on that z: ``g_steps_share_z=True``); and
    for its ``d_first(d_steps=k)``
    the n_critic loop that steps G on every k-th batch from the first (PyTorch-GAN's ``i %
    n_critic == 0``, G forwarded again on the same z), whose first audited iteration has
    one D step. Where the audited iterations took ``varying`` numbers of D steps (the
    WGAN authors' 100, then ``Diters``, cut at an epoch's end), ``d_steps="each_batch"``
    in place of its count, called with each iteration's batches, is tried too."""
    # the audit's n_critic loop (one D step, then k an iteration) as its k-step iterations
    audited = re.sub(r"^d_first\(g_every=(\d+)\)$", r"d_first(d_steps=\1)", audited)
    found = [(audited, False)]
    if audited.startswith("d_first(") and "reuse_fake" not in audited:  # G on a fresh z
        fresh = audited[:-1] + (", " if audited != "d_first()" else "") + "reuse_fake=False"
        found.append((fresh + ")", False))
        if g_batch > 1:
            found.append((f"{fresh}, g_batch={g_batch})", False))
        if fresh_real:
            found.append((f"{fresh}, fresh_real=True)", False))
        if z_reused:
            found.append((f"{fresh}, reuse_z=True)", False))
    if z_reused and re.fullmatch(r"d_first\(.*g_steps=\d+.*\)", audited):
        # each G step on the D step's z (DCGAN-tensorflow's g_optim run twice on batch_z),
        # the first reusing the D step's fakes or making them anew (G's statistics)
        found.append((audited[:-1] + ", g_steps_share_z=True)", False))
        found.append((audited[:-1] + ", reuse_fake=False, g_steps_share_z=True)", False))
    if varying:
        found += [(re.sub(r"d_steps=\d+", 'd_steps="each_batch"', code), per_batch)
                  for code, per_batch in found if re.search(r"d_steps=\d+", code)]  # fmt: skip
    match = re.fullmatch(r"d_first\(d_steps=(\d+)\)", audited)
    if match:
        found.append((f"d_first(g_every={match[1]}, reuse_fake=False, reuse_z=True)", True))
    return found


def _run(script: _Script, capture: Capture, data: Replay, schedule: tuple[str, bool],
         candidate: Candidate, iterations: int, tolerance: float = TOLERANCE,
         objective_states: list | None = None, logged: list | None = None,
         twins: list | None = None, steps: list[str] | None = None,
         ignore: frozenset[str] = frozenset()) -> tuple[float, str]:  # fmt: skip
    """The largest difference from the script's states at the end of each of
    ``iterations`` (the candidate Step called once per audited iteration, or with
    ``schedule[1]`` once per real batch, on copies of the script's models and its
    replayed inputs), and where they first part (empty if they do not). The objective's
    state at each iteration's end is appended to ``objective_states``, and the losses
    each call logged (L_D and L_G) to ``logged``, a list an iteration, if given; the
    copies (G, D and their optimizers) are put in ``twins``, and "G" or "D" in
    ``steps`` at each of their optimizers' steps, in order, if given. The entries
    ``ignore`` names (:func:`rounding_entries`) are not compared at iterations' ends.

    While the copies' optimizers step in the order the script's did, each step is
    compared with the script's same step (:func:`_parted_at_step`): where one parts by
    more than ROUNDING_GAP (and ``tolerance``), the run ends there, no later step
    mending what one step of G or D made apart."""
    G = _copy(script.G, capture.first_state[id(script.G)])
    D = _copy(script.D, capture.first_state[id(script.D)])
    opt_g = _optimizer_like(script.opt_g, capture.made_state[id(script.opt_g)], script.G, G)
    opt_d = _optimizer_like(script.opt_d, capture.made_state[id(script.opt_d)], script.D, D)
    opt_info = None
    if script.opt_info is not None:  # InfoGAN's, over G's and D's copies
        made = capture.made_state[id(script.opt_info)]
        opt_info = _optimizer_like(script.opt_info, made, script.G, G, (script.D, D))
    twins_of_run = (G, D, opt_g, opt_d, opt_info)
    if twins is not None:
        twins[:] = [G, D, opt_g, opt_d]
    steps = [] if steps is None else steps
    beyond = max(tolerance, ROUNDING_GAP)
    for opt, role, module in ((opt_g, "G", G), (opt_d, "D", D)):
        check = partial(_parted_at_step, script, capture, data, steps, role, module, opt, beyond)
        opt.register_step_post_hook(lambda *_, check=check: check())
    for twin, theirs in ((opt_g, script.opt_g), (opt_d, script.opt_d), (opt_info, script.opt_info)):
        if twin is not None:
            _follow_settings(twin, capture.settings.get(id(theirs), []))
    queue, drawn = _queue(data, candidate), []
    np_queue = list(data.np_states) or [None] * len(queue)
    styled = list(zip(data.styles, data.py_states, strict=True))

    def take(numpy_there: bool = True) -> tuple:  # the script's next G call, and numpy's
        state = np_queue.pop(0)  # generator as it was there (a penalty's alpha draws later)
        if numpy_there:
            _set_numpy_state(state)
        return queue.pop(0)

    def latent(n: int) -> Tensor | tuple[Tensor, ...]:  # the script's G calls until n rows
        calls = [take()]  # (its rounds, joined: numpy's as at the first)
        while sum(len(c[0][0]) for c in calls) < n:
            calls.append(take(numpy_there=False))
        _set_rng(calls[0][1])
        drawn[:] = [torch.cat(parts) for parts in zip(*(c[0] for c in calls), strict=True)]
        if styled:  # one or two z, and Python's generator where G draws its mixing layer
            styles, py_state = styled.pop(0)
            # (a Step joining several calls' z into one draw, accumulating, is not mapped
            # with styles: the first call's rows fall short of n, which the Step refuses)
            del styled[: len(calls) - 1]
            if py_state is not None:
                random.setstate(py_state)
            return tuple(t.clone() for t in styles)
        if data.tuple_latent:  # G(z, c, code): InfoGAN's
            return tuple(t.clone() for t in drawn)
        return drawn[0].clone()

    def condition(n: int) -> Tensor:  # called right after latent: G's second input
        return drawn[1].clone()

    if data.image_to_image:  # G(source): the real batch's condition, no z
        sources = {"latent": None, "condition": "real"}
    else:
        given = "real" if data.condition_real else condition
        sources = {"latent": latent, "condition": given if data.conditional else None}
    if data.augment is not None:  # the printed text, among the script's names
        sources["augment"] = eval(data.augment[0], dict(script.namespace))  # noqa: S307
    if opt_info is not None:  # the info step draws the script's next G call, as G's step
        sources.update(info_latent=latent)
    staged = {"G": _staged(G, data, "G"), "D": _staged(D, data, "D")}
    step = _step(staged["G"], staged["D"], opt_g, opt_d, data, schedule[0], candidate, sources,
                 opt_info)  # fmt: skip
    worst = (0.0, "")
    for i in range(iterations):
        for role, values in (data.staged or {}).items():  # as the script gave them there
            staged[role].arguments = dict(values[i])
        calls_logged: list[dict[str, float]] = []
        calls = _step_calls(data, candidate, schedule[1], step.schedule.real_batches, i)
        for j, call in enumerate(calls):
            if isinstance(call, str):
                return float("inf"), call
            if data.image_to_image:  # G draws (Dropout) from where the script's G did
                _set_rng(take()[1])
            elif _g_between(data, candidate):  # D's real forward draws first, as the script's
                _set_rng(data.real_rng[i][j if schedule[1] else 0])
            try:
                logs = step(call)
            except _Parted as parted:
                gap, key = parted.args
                return gap, _parts(i, (gap, key))
            calls_logged.append({k: float(logs[k]) for k in ("loss_d", "loss_g") if k in logs})
        if logged is not None:
            logged.append(calls_logged)
        here = _gap(script, capture.end_state(data.ends[i]), twins_of_run, ignore)
        worst = max(worst, here)
        if here[0] > tolerance:  # parted: the later iterations tell nothing more
            return here[0], _parts(i, here)
        if objective_states is not None:
            objective_states.append(step.objective.state_dict())
        if candidate.state_in is not None:  # its state as the script's global holds it
            here = _state_gap(step, capture, data.ends[i], candidate.state_in)
            if not here[0] <= tolerance:
                return here[0], f"they part at iteration {i}, {here[1]}"
            worst = max(worst, (here[0], candidate.state_in))
        for role, part, args, states in data.after[i]:  # as the script did: buffers move
            _set_rng(states)  # (on the part of G or D it called: "" the whole)
            with torch.no_grad():
                (G if role == "G" else D).get_submodule(part)(*args)
    return worst[0], ""


def _parts(iteration: int, gap: tuple[float, str]) -> str:
    """Where a candidate parts, as the search's lines say it (:func:`parted_line`)."""
    return f"they part at iteration {iteration}, most in {gap[1]} ({gap[0]:.3g})"


class _Parted(Exception):
    """A copy's optimizer step parted from the script's same step: (gap, where)."""


def _parted_at_step(script: _Script, capture: Capture, data: Replay, steps: list[str],
                    role: str, module: nn.Module, opt: torch.optim.Optimizer,
                    beyond: float) -> None:  # fmt: skip
    """After a step of ``role``'s copy ``module`` by ``opt``: noted in ``steps``, and
    where every step so far was taken by the optimizer the script's was, ``module``'s
    parameters and ``opt``'s state compared with the script's after its same step;
    :class:`_Parted` where they part by more than ``beyond``. (Parameters only: a
    buffer moves at a forward, whose place between steps a Step may choose.)"""
    steps.append(role)
    k = len(steps)
    if beyond == float("inf") or steps != data.stepped[:k] or k not in capture.history:
        return
    gap = _role_gap(script, capture.history[k], role, module, opt)
    if gap is not None and gap[0] > beyond:
        raise _Parted(*gap)


def _role_gap(script: _Script, states: dict, role: str, module: nn.Module,
              opt: torch.optim.Optimizer) -> tuple[float, str] | None:  # fmt: skip
    """How far ``role``'s copy ``module`` (its parameters) and its optimizer ``opt`` (its
    state) are from the script's in ``states``, and where (as :func:`_gap` names it);
    None where the copy has a parameter the script's state lacks."""
    own, own_opt = (script.D, script.opt_d) if role == "D" else (script.G, script.opt_g)
    theirs = states[id(own)]
    mine = {key: p.detach() for key, p in module.named_parameters()}
    if not mine.keys() <= theirs.keys():
        return None
    return max(difference(mine, {key: theirs[key] for key in mine}, script.names[role]),
               difference(opt.state_dict()["state"], states[id(own_opt)]["state"],
                          script.names[f"opt_{role.lower()}"]))  # fmt: skip


def _follow_settings(twin: torch.optim.Optimizer, taken: list[tuple[int, list[dict]]]) -> None:
    """Before each of ``twin``'s steps, the settings the script's optimizer took its step
    of that count with (the rates its learning-rate scheduler set), in order."""
    queue = [groups for _, groups in taken]

    def before(opt, args, kwargs) -> None:
        if queue:
            for group, settings in zip(opt.param_groups, queue.pop(0), strict=True):
                group.update(copy.deepcopy(settings))

    twin.register_step_pre_hook(before)


def _settings_changed(rec, script: _Script, capture: Capture,
                      iterations: int) -> tuple[str, bool]:  # fmt: skip
    """What of G's and D's optimizers' settings the script changed over ``iterations``
    (a learning-rate scheduler's rates), as a note ("" where nothing changed), and
    whether that is mapped: not where they changed between two steps of one iteration,
    which a Step's one call cannot take."""
    changed = []
    for role in ("opt_g", "opt_d"):
        at = capture.settings.get(id(getattr(script, role)), [])
        kept = len(rec.opt_steps)  # (not the steps of a script that swallowed the stop)
        taken = [(rec.opt_steps[k - 1].iteration, groups) for k, groups in at if k <= kept]
        taken = [(i, groups) for i, groups in taken if i < iterations]
        name = script.names[role]
        for (i, before), (j, after) in zip(taken, taken[1:], strict=False):
            if i == j and before != after:
                return (f"{name}'s settings changed between two of its steps in iteration {i} "
                        "(a learning-rate scheduler stepped inside the update); a Step's call "
                        "steps with one setting: not mapped"), False  # fmt: skip
        if taken and taken[0][1] != taken[-1][1]:
            first, last = taken[0][1][0], taken[-1][1][0]  # the first param group's
            shown = ", ".join(f"{k} {_setting(first[k])} to {_setting(last.get(k))}"
                              for k in sorted(first) if first[k] != last.get(k))  # fmt: skip
            changed.append(f"{name}'s {shown or 'settings'}")
    if not changed:
        return "", True
    return (f"the script changed its optimizers' settings between iterations ("
            f"{'; '.join(changed)} over {iterations} iteration(s): a learning-rate scheduler); "
            "the copies stepped with the script's settings at each step: keep the script's "
            "scheduler steps where they are, between calls of step(...)"), True  # fmt: skip


def _setting(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


def _queue(data: Replay, candidate: Candidate) -> list[tuple[tuple[Tensor, ...], list]]:
    """G's calls for the Step to draw, in order. With a path length, its calls on the
    first rows of a round only (the script's Greg: ``gen_z[:batch_size]``) padded with
    zeros to a round's rows, as the Step draws a round and takes its first rows."""
    if candidate.path_length is None or not any(data.lazy) or data.lazy_drawn:
        return list(data.zs)
    rows = next(len(z[0]) for (z, _), lazy in zip(data.zs, data.lazy, strict=True) if not lazy)
    return [(tuple(_padded(t, rows) for t in z), rng) if lazy else (z, rng)
            for (z, rng), lazy in zip(data.zs, data.lazy, strict=True)]  # fmt: skip


def _padded(t: Tensor, rows: int) -> Tensor:
    return torch.cat([t, t.new_zeros((rows - len(t), *t.shape[1:]))]) if len(t) < rows else t


def _gap(script: _Script, ends: dict, twins: tuple,
         ignore: frozenset[str] = frozenset()) -> tuple[float, str]:  # fmt: skip
    """The largest difference of the copies ``twins`` (G, D, their optimizers, and the info
    step's optimizer or None) from the script's states ``ends`` (at an iteration's end),
    and where; the module entries ``ignore`` names (``name.key``) left out, and their
    parameters' optimizer states."""
    G, D, opt_g, opt_d, opt_info = twins
    names, pairs = script.names, []
    if opt_info is not None:  # (its parameters are G's and D's, compared below)
        pairs.append((opt_info.state_dict()["state"], ends[id(script.opt_info)]["state"],
                      names["opt_info"]))  # fmt: skip
    for twin, own, opt, their_opt, role in ((G, script.G, opt_g, script.opt_g, "G"),
                                            (D, script.D, opt_d, script.opt_d, "D")):  # fmt: skip
        name = names[role]
        left = {key for key in ends[id(own)] if f"{name}.{key}" in ignore}
        left_ids = {id(p) for key, p in own.named_parameters() if key in left}
        order = [p for group in their_opt.param_groups for p in group["params"]]
        left_states = {i for i, p in enumerate(order) if id(p) in left_ids}
        pairs += [(_without(twin.state_dict(), left), _without(ends[id(own)], left), name),
                  (_without(opt.state_dict()["state"], left_states),
                   _without(ends[id(their_opt)]["state"], left_states),
                   names[f"opt_{role.lower()}"])]  # fmt: skip
    return max(difference(mine, theirs, name) for mine, theirs, name in pairs)


def _without(state: dict, keys: set) -> dict:
    return {k: v for k, v in state.items() if k not in keys} if keys else state


def _state_gap(step: Step, capture: Capture, end: int, name: str) -> tuple[float, str]:
    """How far the Step's objective's one number of state is from the script's global
    ``name`` after its ``end`` optimizer steps, and where."""
    ours = _number_state(step.objective.state_dict())
    theirs = _numbers_at(capture, end).get(name, float("nan"))
    gap = _relative_gap(ours, theirs) if ours is not None else float("inf")
    return gap, f"in the objective's state and the script's {name} ({ours} and {theirs})"


def _fails_beside(code: str, script: _Script, data: Replay, schedule: tuple[str, bool],
                  candidate: Candidate) -> str | None:  # fmt: skip
    """Why the printed code fails when run among the script's globals, its Step called
    on the first audited iteration's batches (None where it runs). The script's own
    models take that step: its run is over."""
    names = dict(script.namespace)
    try:
        exec(code, names)  # noqa: S102 - ganstep's own printed code
        step = names["step"]
        step(_step_calls(data, candidate, schedule[1], step.schedule.real_batches, 0)[0])
    except Exception as e:
        return f"{type(e).__name__}: {e}".splitlines()[0]
    return None


def _g_between(data: Replay, candidate: Candidate) -> bool:
    """Whether the candidate's Step makes its D steps' fakes after D's real forward
    (refused with accumulation, whose z is drawn for the whole batch first)."""
    return data.d_order == "real_g_fake" and candidate.accumulate == 1


def _schedule(code: str):
    return eval(code, {"d_first": d_first, "g_first": g_first,  # noqa: S307 - ganstep's own text
                       "simultaneous": simultaneous})  # fmt: skip


def _step(G, D, opt_g, opt_d, data: Replay, code: str, candidate: Candidate,
          sources: dict, opt_info: torch.optim.Optimizer | None = None) -> Step:  # fmt: skip
    """The candidate's Step on the copies, fed by ``sources`` (latent, condition); with
    ``opt_info``, InfoGAN's info step by it, on the fitted terms (``data.info_terms``)."""
    options = _terms(candidate, data)
    if opt_info is not None:  # the terms made from the very text printed
        terms = {name: (weight, Printed(text).fn) for name, weight, text in data.info_terms}
        options.update(info_optimizer=opt_info, info_terms=terms)
    if data.concat is not None:  # one D call on the real and fake rows, in the script's order
        options.update(concat="joint" if data.concat_joint else True, d_order=data.concat)
    elif data.d_order == "fake_first" or _g_between(data, candidate):
        options.update(d_order=data.d_order)
    if candidate.accumulate > 1:
        options.update(accumulate=candidate.accumulate)
    if candidate.path_length is not None:  # at G's mapped latents where G is called in parts
        parts = {} if data.g_parts is None else {
            "mapping": G.get_submodule(data.g_parts[0]),
            "synthesis": G.get_submodule(data.g_parts[1])}  # fmt: skip
        if data.g_latents is not None:  # the printed call itself: the two cannot drift
            parts = {"images_and_latents": eval(_latents_call(data, "G"), {"G": G})}  # noqa: S307
        options.update(g_regularizer=PathLength(*candidate.path_length, **parts,
                                                **_path_length_rows(data)))  # fmt: skip
    g = G if data.embedding is None else _Embedded(G, data.embedding)
    if data.g_join is not None or data.g_listed:  # the printed class: the two cannot drift
        g = _made(*_g_wrapper(data))(G)
    if data.coupled is not None:  # the printed class: the two cannot drift
        g = _made("BothDomains", BOTH_DOMAINS)(G)
        options.update(d_map=True)
    D = _d_taking(D, data)
    if candidate.style_mixing is not None:  # the printed class itself: the two cannot drift
        g = _made("StyleMixedG", _mixing_wrapper(*data.g_parts))(G, candidate.style_mixing)
    if data.precision != "fp32":
        options.update(precision=data.precision)
    if data.d_forwards_loop:
        options.update(d_forwards="loop")
    if data.g_forwards is not None:
        options.update(g_forwards=data.g_forwards)
    if data.clips:  # the hooks made from the very text printed
        options.update(before_step={phase: eval(hook, {"torch": torch})  # noqa: S307
                                    for phase, hook in _clip_hooks(data).items()})  # fmt: skip
    return Step(g, D, opt_g, opt_d, objective=candidate.make(), schedule=_schedule(code),
                d_scale=candidate.d_scale, g_scale=candidate.g_scale,
                d_conditional=data.d_conditional, **sources, **options)  # fmt: skip


def _clip_hooks(data: Replay) -> dict[str, str]:
    """The Step's ``before_step`` hooks that clip as the script did, as code by phase."""
    return {phase: f"lambda {phase.upper()}: {code}" for phase, (code, _) in data.clips.items()}


def _step_calls(data: Replay, candidate: Candidate, per_batch: bool, k: int,
                i: int) -> list:  # fmt: skip
    """What the Step is called with in audited iteration ``i``: a real batch, or a list
    of one per each of its schedule's ``k`` D steps (one batch per call where
    ``per_batch``); a string where the iteration has too few."""
    given = data.reals[i]
    if k is None:  # d_steps="each_batch": the iteration's batches, one D step each
        k = len(given)
    if not per_batch and k > len(given) and data.g_reals:  # G's step's own (fresh_real)
        given = [*given, data.g_reals[i]]
    elif _one_batch_for_d_steps(data, per_batch, k):  # the critic k times on one batch
        given = given * k
    if candidate.classifier is not None:  # D's class terms read the real labels
        given = list(zip(given, data.labels[i], strict=True))
    if candidate.fake_class is not None:  # beside x, as an extra target: G takes none
        given = [{"x": x, "label": y} for x, y in zip(given, data.labels[i], strict=True)]
    if candidate.accumulate > 1:  # the rounds' real batches, joined: one Step call
        given = [_joined(given)]
    calls = []
    for reals in [[r] for r in given] if per_batch else [given]:
        if len(reals) < k:
            return [f"iteration {i}: {len(reals)} real batch(es) for {k}"]
        calls.append(reals[0] if k == 1 else list(reals[:k]))
    return calls


def _one_batch_for_d_steps(data: Replay, per_batch: bool, k: int) -> bool:
    """Whether the script gave its ``k`` D steps of an iteration one real batch, the same
    each time (a critic loop inside the batch loop, Aladdin Persson's WGAN-GP): the Step
    is then called with that batch ``k`` times."""
    return (not per_batch and k is not None and k > 1 and not data.g_reals
            and all(len(it) == 1 for it in data.reals))  # fmt: skip


def _joined(batches: list) -> object:
    """Real batches (tensors, or tuples of them) as one."""
    if isinstance(batches[0], Tensor):
        return torch.cat(batches)
    return tuple(torch.cat(parts) for parts in zip(*batches, strict=True))


def _terms(candidate: Candidate, data: Replay) -> dict:
    """The Step's ``g_terms``/``d_terms`` for ``candidate``'s extra losses."""
    if candidate.g_fit:
        return {"g_terms": {_term_name(key): (weight, _fitted_term(key, data))
                            for key, weight in candidate.g_fit}}  # fmt: skip
    if candidate.l1 is not None:
        return {"g_terms": {"l1": (candidate.l1, _l1)}}
    if candidate.pull_away is not None:
        return {"g_terms": {"pt": (candidate.pull_away, pull_away())}}
    if candidate.drift is not None:
        return {"d_terms": {"drift": (candidate.drift, Printed(DRIFT_TEXT).fn)}}
    if candidate.classifier is not None:
        g, d = candidate.classifier
        return {"g_terms": {"aux": (g, _class_loss("fake"))},
                "d_terms": {"aux_real": (d, _class_loss("real")),
                            "aux_fake": (d, _class_loss("fake"))}}  # fmt: skip
    if candidate.fake_class is not None:  # the terms made from the very text printed
        weight = candidate.fake_class[1]
        return {"d_terms": {name: (weight, Printed(text).fn)
                            for name, text in _fake_class_terms(candidate).items()}}  # fmt: skip
    return {}


# the keys of a multi-scale D's feature matching among a candidate's fitted G terms: D's
# features on the real batch from a forward in G's phase (pix2pixHD's, in a simultaneous
# update the D step's own), or from D's step before its update (MelGAN's D_real)
FEATURES = "features"
FEATURES_D_STEP = "features from D's step"

# pix2pixHD's GAN feature matching (its loss_G_GAN_Feat), as the port prints it and makes
# its Steps' term from: each scale's features on the fakes against those on the real
# pairs, constants for G
FEATURE_MATCHING = """@reads_real
def feature_matching(v):  # L1 of D's features on the fakes to those on the real batch
    return sum(
        torch.nn.functional.l1_loss(fake, real.detach())
        for fakes, reals in zip(v.d_fake[1], v.d_real[1], strict=True)
        for fake, real in zip(fakes, reals, strict=True)
    )
"""


# a fitted G term's key for a feature network's content loss: CONTENT, then its loss
# ("l1" or "mse", torch.nn.functional's l1_loss and mse_loss on the features of the fakes
# and of the real target, the latter detached), then the network's printed name
CONTENT = "content:"
CONTENT_LOSSES = {"l1": "l1_loss", "mse": "mse_loss"}


def _content_text(key: str) -> str:
    """A content term's function as the port prints it (its key: see CONTENT)."""
    kind, name = key.removeprefix(CONTENT).split(":", 1)
    return (f"lambda v: torch.nn.functional.{CONTENT_LOSSES[kind]}({name}(v.fake.x), "
            f"{name}(v.real.x).detach())")  # fmt: skip


def _term_name(key: str) -> str:
    """A fitted G term's name in the Step's ``g_terms`` (a loss module's: its attribute)."""
    if key in (FEATURES, FEATURES_D_STEP):
        return FEATURES
    if key.startswith(CONTENT):
        return "content" if key.startswith(f"{CONTENT}l1:") else "content_mse"
    return key.rsplit(".", 1)[-1] if key != "l1" else key


def _feature_matching(key: str) -> str:
    """The feature matching's printed text, marked as ``key`` reads D's real features."""
    mark = "@reads_d_step_real" if key == FEATURES_D_STEP else "@reads_real"
    return FEATURE_MATCHING.replace("@reads_real", mark)


def _fitted_term(key: str, data: Replay) -> Callable:
    """The term of a fitted G term's ``key``: pix2pix's L1, the feature matching made
    from the very text printed, or a copy of the script's loss module as first called,
    on G's output and the real target."""
    if key == "l1":
        return _l1
    if key in (FEATURES, FEATURES_D_STEP):
        return Printed(_feature_matching(key)).fn
    if key.startswith(CONTENT):  # the printed function, run on a copy of the network
        name = key.split(":", 2)[2]
        _, module, state = next(m for m in data.feature_modules if m[0] == name)
        return eval(_content_text(key), {"torch": torch, name: _copy(module, state)})  # noqa: S307
    _, module, state = next(m for m in data.loss_modules if m[0] == key)
    twin = _copy(module, state)
    return lambda view: twin(view.fake.x, view.real.x)


class Printed:
    """A function of the port's candidates made from the very code the port prints: a
    definition (shown by its name, as the printed call refers to it) or an expression
    (shown as itself)."""

    def __init__(self, text: str) -> None:
        scope = {"F": torch.nn.functional, "torch": torch, "np": sys.modules.get("numpy"),
                 "reads_real": reads_real, "reads_d_step_real": reads_d_step_real}  # fmt: skip
        definition = re.match(r"(?:@\w+\n)?def (\w+)\(", text)
        if definition:
            self.name = definition[1]
            exec(text, scope)  # noqa: S102 - the definition the port prints
            self.fn = scope[self.name]
        else:
            self.name, self.fn = text, eval(text, scope)  # noqa: S307 - as printed
        self.text = text

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self) -> str:
        return self.name


def _fake_class_terms(candidate: Candidate) -> dict[str, str]:
    """SGAN's D terms as the port prints them: the cross-entropy of D's class output on
    the real batch to its labels (the batch's extra target ``"label"``) and on the fakes
    to their class of their own."""
    ce = "torch.nn.functional.cross_entropy"
    fakes = f"v.d_fake[1].new_full((v.fake.n,), {candidate.fake_class[0]}, dtype=torch.long)"
    return {"aux_real": f'lambda v: {ce}(v.d_real[1], v.real.extra["label"])',
            "aux_fake": f"lambda v: {ce}(v.d_fake[1], {fakes})"}  # fmt: skip


def _class_loss(which: str):
    """ACGAN's term: cross-entropy of D's class output on the ``which`` batch to its
    labels (the fakes': those G was given)."""

    def loss(view) -> Tensor:
        out = view.d_fake if which == "fake" else view.d_real
        return torch.nn.functional.cross_entropy(out[1], getattr(view, which).c)

    return loss


def _verifiable(rec, report) -> int:
    """How many iterations can be verified: all, or after a crash those before it in
    which both G and D stepped (the script's own update, whole)."""
    if report.error is None:
        return report.iterations
    count = 0
    for i in range(report.iterations):
        if {s.label for s in rec.opt_steps if s.iteration == i} >= {"G", "D"}:
            count += 1
        else:
            break
    return count


def _coupled(rec) -> tuple[int, ...] | None:
    """The channels of each of D's inputs where a call of D on G's output was given
    another output of that G call beside it (CoGAN's ``coupled_discriminators(gen_imgs1,
    gen_imgs2)``) and every call of D took tensors of the same shapes, alike but in their
    channels (dimension 1); else None. The Step then takes G and D through
    :data:`BOTH_DOMAINS`' modules, each real batch D's inputs joined along the channels."""
    found, shapes = False, set()
    for f in rec.forwards:
        if f.label != "D":
            continue
        shapes.add(tuple(shape for shape, _ in f.inputs))
        if f.producer is None or f.producer.label != "G" or not f.rest:
            continue
        found |= any(rec.made_by.get(key[0]) is f.producer for key in f.rest[0])
    if not found or len(shapes) != 1:
        return None
    (inputs,) = shapes
    if len(inputs) < 2 or any(len(i) < 2 or i[0] != inputs[0][0] or i[2:] != inputs[0][2:]
                              for i in inputs):  # fmt: skip
        return None
    return tuple(i[1] for i in inputs)


BOTH_DOMAINS = '''class BothDomains(torch.nn.Module):
    """G's images, one a domain, joined along the channels: one batch of fakes."""

    def __init__(self, coupled):
        super().__init__()
        self.coupled = coupled

    def forward(self, z):
        return torch.cat(self.coupled(z), 1)


class EachDomain(torch.nn.Module):
    """D on each domain's channels, as the script calls it, its scores side by side."""

    def __init__(self, coupled, channels):
        super().__init__()
        self.coupled, self.channels = coupled, channels

    def forward(self, x):
        return torch.cat(self.coupled(*x.split(self.channels, 1)), 1)


'''


def port(rec, report, capture: Capture, names: dict[str, str], *,
         only: tuple | None = None, tolerance: float = TOLERANCE,
         ignore: frozenset[str] = frozenset(), refit: bool = False) -> Port:  # fmt: skip
    """The verified Step of an audited script (see the module's docstring); with
    ``only`` (a found Port's ``chosen``), that Step alone, verified to ``tolerance``,
    and with ``refit`` too, the weights of its G terms (those it left ``unread`` too)
    read again from this run's first G gradient; the entries ``ignore`` names not
    compared (:func:`rounding_entries`)."""
    n = _verifiable(rec, report)
    warm_up = _warm_up(rec)
    if warm_up is not None:
        return Port(None, n, notes=[warm_up])
    if report.schedule is None:
        if report.d_steps_skipped:  # (a D step under a condition: no schedule alone)
            return Port(None, n, notes=[
                f"D's step was skipped in {report.d_steps_skipped} of the script's iterations "
                f"(see above): the port does not read the condition, so write the Step by "
                f"hand: {GATED_D_STEP}"])  # fmt: skip
        why = "no ganstep schedule matches this update order (see above)"
        if any(PENALTY_ALONE in h for h in report.hazards):  # dragan.py's
            why += (": D stepped on its penalty alone (the first hazard), which a Step writes as "
                    "its D loss weighted 0 (d_scale=0) beside a penalty of your own; "
                    "docs/loops.md#dragan shows it for PyTorch-GAN's dragan.py")  # fmt: skip
        return Port(None, n, notes=[why])
    if n == 0:
        return Port(None, n, notes=["the script's loop crashed before G and D had both "
                                    "stepped: no update of its own to verify against"])  # fmt: skip
    notes = []
    capture.numbers_end = _numbers(rec.namespace or {})  # as the script's run left them
    script = _find(rec, names, set(capture.settings))
    coupled = _coupled(rec)  # (G's images of two domains, D called on both together)
    pair, g_join = (None, None) if coupled else (_paired_d(rec, capture, n), None)
    if pair is None and not coupled:  # a condition joined to G's z, or its maps to D's image
        g_join, pair = _joined_condition(rec, capture, n)
    augment = None if pair is not None or coupled else _augment_of(rec, capture, n)
    # an augmentation's draws in D's real call, then z's, then the fakes': as D's own
    d_order = "real_g_fake" if augment is not None and report.d_g_between else report.step_d_order
    data = replay(rec, capture, n, d_order, augment, pair, g_join, coupled)
    precision = _precision(rec, n, report.hazards)
    changed = None if augment is not None or pair is not None else _changed(rec, capture, n)
    notes += [problem for problem in (script, data, precision, changed)
              if isinstance(problem, str)]  # fmt: skip
    if notes:
        return Port(None, n, notes=notes)
    settings, mapped = _settings_changed(rec, script, capture, n)
    if not mapped:
        return Port(None, n, notes=[settings])
    if script.opt_info is not None:
        state = torch.random.get_rng_state()
        try:
            info = _info_terms(rec, script, capture, data)
        finally:
            torch.random.set_rng_state(state)
        if isinstance(info, str):
            return Port(None, n, notes=[info])
        data = replace(data, info_terms=info)
    if precision is not None:  # the script's autocast, as the Step's own in each phase
        data = replace(data, precision=precision[0], autocast_at=precision[1])
    if _forwards_kept(report):
        data = replace(data, d_forwards_loop=True)
    data = replace(data, g_forwards=_g_forwards(rec, n))
    if data.concat is not None and report.d_profile is not None and report.d_profile.mixing:
        data = replace(data, concat_joint=True)
    state = torch.random.get_rng_state()
    try:
        made = _g_input_made(script, capture, data, n)
        given = _g_input_given(capture, data, n) if made is None else None
        if made is not None or given is not None:  # the real batches as (x, G's input),
            reals = [[(x, g_in)] for [x], ((g_in,), _)  # D called D(x)
                     in zip(data.reals, data.zs, strict=True)]  # fmt: skip
            data = replace(data, reals=reals, image_to_image=True, d_conditional=False,
                           g_from_real=made, g_given=given)  # fmt: skip
        named = _g_inputs_named(rec, capture, data, n)
        if isinstance(named, str):
            return Port(None, n, notes=[named])
        if named is not None:  # the real batches as (x, (G's inputs)), D called D(x)
            reals = [[(x, inputs)] for [x], (inputs, _) in zip(data.reals, data.zs, strict=True)]
            data = replace(data, reals=reals, image_to_image=True, d_conditional=False,
                           g_named=named)  # fmt: skip
        if _scale_lists(_d_output(script, capture, data)):  # (D may draw: within the try)
            data = replace(data, d_scales=True, real_in_g_step=_real_in_g_step(rec, n))
        data = replace(data, loss_modules=_loss_modules(rec, capture, n, names, data),
                       feature_modules=_feature_modules(rec, capture, n, names, data))  # fmt: skip
        # G's first moments: what the search's fit and the refit read G's terms from
        moments = first_g_moments(rec, capture, script.opt_g) if only is None or refit else None
        if only is None:
            tried, unread = _tried(script, capture, data, report, moments)
        else:
            chosen = _refitted(script, capture, data, only, moments) if refit else only
            tried, unread = [chosen], None
        if isinstance(tried, str):
            return Port(None, n, notes=[tried])
        found = _search(script, capture, data, report, n, tried, tolerance,
                        vary=only is None, ignore=ignore)  # fmt: skip
    finally:
        torch.random.set_rng_state(state)
    none_equal = found.code is None and found.notes[0] == TRIED
    if none_equal:  # name the losses' lines
        modes = _modes_mixed(rec, n)  # (or the modes its G or D ran in, where they part)
        found.notes.insert(0, _loss_lines(rec) if modes is None else modes)
        if unread is not None:  # what D returned besides its scores was left unread
            found.notes.insert(0, f"{unread}; its first output was tried as its scores")
        left_out = [c for _, c in tried if c.unread]  # (where a later iteration parts them)
        if left_out:
            found.notes.insert(1, _left_out_note(left_out[0]))
    if found.code is not None and found.chosen[1].unread:
        found.notes.append(_unread_note(found.chosen[1]))
    if settings and found.code is not None:
        found.notes.append(settings)
    made_real = (None if pair or coupled  # (the caller joins the real batches itself)
                 else _real_made(rec, capture, n, augmented=augment is not None))  # fmt: skip
    if made_real is not None and found.code is not None:
        found.notes.append(_real_made_note(made_real, ported=True))
    elif made_real is not None and none_equal:  # (after the losses' lines)
        found.notes.insert(1, _real_made_note(made_real, ported=False))
    copies = _copies_of_g(script) if found.code is not None else None
    if copies is not None:
        found.notes.append(copies)
    adapter = (_lightning_module(script) or _accelerate(script)) if found.code else None
    if adapter is not None:
        found.notes.append(adapter)
    if found.code is not None and data.precision == "fp16":
        found.notes.append(
            "precision='fp16' scales each side's loss with a GradScaler of its own (torch's "
            "defaults): the verification compares models and optimizers, not the script's "
            "loss scaling (a scaler shared by G and D grows twice as often)"
        )
    return found


def _refitted(script: _Script, capture: Capture, data: Replay, chosen: tuple,
              moments: dict[int, Tensor] | None) -> tuple:  # fmt: skip
    """``chosen`` (schedule, candidate) with its G terms' weights, those it left unread
    too, fitted again to this run's first G ``moments`` (as it is where there are none)."""
    schedule, candidate = chosen
    keys = [key for key, _ in candidate.g_fit] + list(candidate.unread)
    if not keys or moments is None:
        return chosen
    bare = replace(candidate, g_fit=(), unread=())
    return schedule, _fit_terms(script, capture, data, schedule, bare, keys, moments)


def _in_float64(script: _Script) -> bool:
    """Whether the script's G is in float64 (its float64 run, --verify's)."""
    return any(p.dtype == torch.float64 for p in script.G.parameters())


def _unread_terms(candidate: Candidate) -> str:
    """A candidate's unread G terms, as the port's notes name them."""
    return ", ".join(dict.fromkeys(
        f"{key.split(':', 2)[2]}'s content loss" if key.startswith(CONTENT) else _term_name(key)
        for key in candidate.unread))  # fmt: skip


def _unread_said(candidate: Candidate, then: str) -> str:
    """The port's note on G terms whose weight the script's run could not give
    (:attr:`Candidate.unread`), ``then`` saying what came of it."""
    return (f"the script's {_unread_terms(candidate)} gave G no gradient in its first "
            "iteration (every entry 0: a ReLU off on every fake, say), so no weight of it can "
            f"be read there{then}; --verify N weighs it on the script's float64 run (other "
            "draws)")  # fmt: skip


def _unread_note(candidate: Candidate) -> str:
    """What the port says of a found Step's unread G terms."""
    return _unread_said(candidate, ": left out, and this Step equals the run without it, "
                                   "which may not hold on other data")  # fmt: skip


# how the notes of a port that found no Step say the Steps tried left out an unread term
LEFT_OUT = "the Steps tried left it out"


def _left_out_note(candidate: Candidate) -> str:
    """What the port says where no Step was found and the Steps tried left out G terms
    that gave G no gradient in the script's first iteration (:attr:`Candidate.unread`)."""
    return _unread_said(candidate, f" and {LEFT_OUT}: where it gives one in a later "
                                   "iteration, they part there")  # fmt: skip


def refit_said(chosen: tuple, refitted: tuple, difference: float) -> str:
    """What the float64 run's verification says where ``chosen`` left G terms unread and
    ``refitted`` (the same Step, their weights read from that run) equals it."""
    unread = chosen[1].unread
    read = [f"{_term_name(key)}={_weight_text(w)}" for key, w in refitted[1].g_fit
            if key in unread]  # fmt: skip
    return (f"{_label(*chosen)} parts from it: the script's {_unread_terms(chosen[1])} gave G "
            "no gradient in the script's own run (no weight read there), and this run's first G "
            f"gradient weighs it ({', '.join(read) or 'none'}); so weighed, the Step equals it "
            f"(largest difference {difference:.3g} <= {FLOAT64_TOLERANCE:g}) and the script's "
            "own run: the Step printed")  # fmt: skip


def _warm_up(rec) -> str | None:
    """Why the script's first steps are no Step's: G stepped on a loss through no D
    before any step of G or D on an adversarial one (a warm-up: esrgan.py's
    ``--warmup_batches``, its pixel loss alone); None where it did not."""
    warm = warm_up_steps(rec)
    if not warm:
        return None
    at = f" ({warm[0].where})" if warm[0].where else ""
    return (f"G stepped {len(warm)} time(s) on a loss through no D{at} before any step on an "
            "adversarial loss: a warm-up (esrgan.py's --warmup_batches), which a Step does not "
            "run; run it as a loop of its own before the Step, and audit the script past it "
            "(its warm-up set to 0)")  # fmt: skip


def _g_input_made(script: _Script, capture: Capture, data: Replay,
                  iterations: int) -> str | None:  # fmt: skip
    """The name of the module of the script's (no parameter of it trained) that made G's
    one input from each iteration's one real batch, where one did (MelGAN's ``s_t =
    fft(x_t).detach()``): each such module the script's loop sees, a copy of it called
    on the batches, equal to the bit; else None."""
    one_batch = all(len(it) == 1 and isinstance(it[0], Tensor) for it in data.reals)
    if data.image_to_image or data.conditional or len(data.zs) != iterations or not one_batch:
        return None
    trained = {id(p) for opt in (script.opt_g, script.opt_d)
               for group in opt.param_groups for p in group["params"]}  # fmt: skip
    for name, module in script.namespace.items():
        if (name.startswith("_") or not isinstance(module, nn.Module) or module is script.G
                or module is script.D or any(id(p) in trained or p.requires_grad
                                             for p in module.parameters())):  # fmt: skip
            continue
        twin = module_copy(module)
        try:
            with torch.no_grad():
                made = [twin(it[0]) for it in data.reals]
        except Exception:  # a module that takes no such batch: not it
            continue
        if all(_same(m, z[0]) for m, (z, _) in zip(made, data.zs, strict=True)):
            return name
    return None


def _g_input_given(capture: Capture, data: Replay, iterations: int) -> tuple[str, str] | None:
    """Where G's one input sat in each iteration's DataLoader batch beside D's one real
    batch (SRGAN's ``imgs["lr"]`` beside ``imgs["hr"]``, the values copied or cast by the
    script): (the real batch's place, G's input's place), the same in every iteration;
    else None. G's input is then data, not a draw."""
    one_batch = all(len(it) == 1 and isinstance(it[0], Tensor) for it in data.reals)
    if data.image_to_image or data.conditional or len(data.zs) != iterations or not one_batch:
        return None
    found = set()
    for [x], ((g_in,), _) in zip(data.reals, data.zs, strict=True):
        both = [(_place(x, b, p), _place(g_in, b, p))
                for b, p in zip(capture.batches, capture.batch_places, strict=True)]  # fmt: skip
        both = [pair for pair in both if None not in pair and pair[0] != pair[1]]
        if not both:
            return None
        found.add(both[0])
    return found.pop() if len(found) == 1 else None


def _place(t: Tensor, batch: tuple[Tensor, ...], places: tuple[str, ...]) -> str | None:
    """Where ``t``'s values sit in a DataLoader's ``batch`` (its ``places`` as code), or
    None."""
    return next((p for u, p in zip(batch, places, strict=True) if u.shape == t.shape
                 and torch.equal(u.to(t.device, t.dtype), t)), None)  # fmt: skip


def _g_inputs_named(rec, capture: Capture, data: Replay,
                    iterations: int) -> tuple[tuple[str, ...], str] | str | None:  # fmt: skip
    """G's inputs where every call of G was given data, not a draw: each input sat in a
    DataLoader batch beside D's one real batch, or is that batch made over (its shape,
    most of its values kept: ccgan.py's ``apply_random_mask(imgs)``); as the script
    names them at G's call, one line for every call (``generator(masked_imgs,
    imgs_lr)``), and that line (file:line: text). Why not, where they are data whose
    names cannot be read there; else None."""
    one_batch = all(len(it) == 1 and isinstance(it[0], Tensor) for it in data.reals)
    if (data.image_to_image or not data.conditional or data.tuple_latent
            or len(data.zs) != iterations or not one_batch):  # fmt: skip
        return None
    for [x], (inputs, _) in zip(data.reals, data.zs, strict=True):
        for t in inputs:
            beside = any(_place(x, b, p) is not None and _place(t, b, p) is not None
                         for b, p in zip(capture.batches, capture.batch_places,
                                         strict=True))  # fmt: skip
            made_over = (t.shape == x.shape and t.is_floating_point()
                         and float((t == x.to(t.dtype)).float().mean()) > 0.5)  # fmt: skip
            if not (beside or made_over):
                return None
    lines = {capture.sites.get(seq) for seq in data.g_seqs}
    script_file = getattr(rec, "script_file", None)
    head = (f"G's {len(data.zs[0][0])} inputs are data, not draws (beside the real batch in "
            "its DataLoader's batch, or that batch made over), which a Step is given as "
            "each real batch's condition")  # fmt: skip
    if len(lines) != 1 or None in lines or script_file is None:
        return (f"{head}; G's calls are not all on one line of the script, whose names a "
                "Step's call would take: not mapped")  # fmt: skip
    line = lines.pop()
    text = linecache.getline(script_file, line).strip()
    names = _call_arguments(text, len(data.zs[0][0]))
    where = f"{Path(script_file).name}:{line}: {text}"
    if names is None:
        return (f"{head}; their names could not be read at G's call ({where}: a call over "
                "several lines, or unpacked): not mapped")  # fmt: skip
    return names, where


def _call_arguments(text: str, count: int) -> tuple[str, ...] | None:
    """The arguments, as code, of the one call of ``count`` positional arguments and no
    keywords on the line ``text``; None where it does not parse or holds none or more."""
    try:
        tree = ast.parse(text)
    except SyntaxError:  # (a call over several lines)
        return None
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and len(c.args) == count
             and not c.keywords
             and not any(isinstance(a, ast.Starred) for a in c.args)]  # fmt: skip
    return tuple(ast.unparse(a) for a in calls[0].args) if len(calls) == 1 else None


def _real_in_g_step(rec, iterations: int) -> bool:
    """Whether every iteration forwarded D on data (not G's output) between D's last
    step before G's and G's step (HiFi-GAN's ``mpd(y, y_g_hat)``; MelGAN's G reads the
    D step's ``D_real`` instead)."""
    for i in range(iterations):
        between = _d_then_g(rec, i)
        if between is None or not any(f.label == "D" and f.producer is None
                                      and between[0] < f.seq < between[1]
                                      for f in rec.forwards):  # fmt: skip
            return False
    return True


def _d_then_g(rec, iteration: int) -> tuple[int, int] | None:
    """The places of D's last step before G's and of G's first step in ``iteration``;
    None where there is no G step, or no D step before it."""
    steps = [st for st in rec.opt_steps if st.iteration == iteration]
    g = next((st.seq for st in steps if st.label == "G"), None)
    d = max((st.seq for st in steps if st.label == "D" and st.seq < (g or 0)), default=None)
    return None if d is None else (d, g)


def _loss_modules(rec, capture: Capture, iterations: int, names: dict[str, str],
                  data: Replay) -> tuple[tuple[str, nn.Module, dict], ...]:  # fmt: skip
    """The script's modules of frozen parameters (none requiring grad) that its update
    called on G's output and the real target, in every iteration of an image-to-image
    update, their output used by a step (pix2pixHD's ``criterionVGG(fake_image,
    real_image)``): each one's name, the module and its state when first called."""
    if not data.image_to_image:
        return ()
    seen: dict[str, set[int]] = {}
    for f in rec.forwards:
        module = rec.modules.get(f.label)
        if (f.label in ("G", "D") or module is None or f.iteration >= iterations
                or not f.used or f.changed or f.seq not in capture.calls):  # fmt: skip
            continue
        params = list(module.parameters())
        given = _call_tensors(capture, f.seq)
        targets = [r[0] for r in data.reals[f.iteration] if isinstance(r, tuple)]
        if (params and not any(p.requires_grad for p in params) and len(given) == 2
                and f.fed_by_g and any(_same(given[1], t) for t in targets)):  # fmt: skip
            seen.setdefault(f.label, set()).add(f.iteration)
    return tuple((names[label], rec.modules[label], capture.first_state[id(rec.modules[label])])
                 for label, its in seen.items()
                 if len(its) == iterations and label in names)  # fmt: skip


def _feature_modules(rec, capture: Capture, iterations: int, names: dict[str, str],
                     data: Replay) -> tuple[tuple[str, nn.Module, dict], ...]:  # fmt: skip
    """The script's modules that no optimizer of its trains which its update called, in
    every iteration of an image-to-image update, on G's output (a call a step's gradient
    went through) and on the real target, one tensor each (SRGAN's
    ``feature_extractor(gen_hr)`` and ``feature_extractor(imgs_hr)``, whose features its
    content loss compares): each one's name, the module and its state when first
    called."""
    if not data.image_to_image:
        return ()
    trained = {id(p) for opt in rec.optimizers for group in opt.param_groups
               for p in group["params"]}  # fmt: skip
    on_fake: dict[str, set[int]] = {}
    on_real: dict[str, set[int]] = {}
    for f in rec.forwards:
        module = rec.modules.get(f.label)
        if (f.label in ("G", "D") or module is None or f.iteration >= iterations or f.changed
                or f.seq not in capture.calls or f.continues):  # fmt: skip
            continue
        given = _call_tensors(capture, f.seq)
        params = list(module.parameters())
        if len(given) != 1 or not params or any(id(p) in trained for p in params):
            continue
        targets = [r[0] for r in data.reals[f.iteration] if isinstance(r, tuple)]
        if f.fed_by_g and f.used:
            on_fake.setdefault(f.label, set()).add(f.iteration)
        elif any(_same(given[0], t) for t in targets):
            on_real.setdefault(f.label, set()).add(f.iteration)
    every = set(range(iterations))
    return tuple((names[label], rec.modules[label], capture.first_state[id(rec.modules[label])])
                 for label, its in on_fake.items()
                 if its == on_real.get(label) == every and label in names)  # fmt: skip


def _g_forwards(rec, iterations: int) -> tuple[str, ...] | None:
    """D's forwards in G's phase of each iteration (after the step before G's), in order,
    as a Step's ``g_forwards`` ("fake": on G's output, "real": on data), where one of them
    fed no backward (a loss computed, then replaced: PyTorch-GAN's relativistic_gan.py)
    and every iteration's are alike; else None."""
    found = set()
    for i in range(iterations):
        g_step = next((s for s in rec.opt_steps if s.iteration == i and s.label == "G"), None)
        if g_step is None:
            return None
        calls = [f for f in phase_forwards(rec, g_step.seq) if not f.continues]
        if all(f.used for f in calls):
            return None
        found.add(tuple("fake" if f.fed_by_g else "real" for f in calls))
    return found.pop() if len(found) == 1 else None


def _forwards_kept(report) -> bool:
    """Whether the Step must forward D as the script did: a simultaneous update whose
    G step forwarded D on the fakes apart from D's step (three D forwards an iteration
    where a Step merges two), with a D whose forward moves statistics no forward reads
    in training mode (BatchNorm's running ones): merged, the parameters would equal and
    the statistics not."""
    profile = report.d_profile
    return (
        profile is not None
        and profile.eval_state
        and (report.schedule or "").startswith("simultaneous")
        and report.forwards["D"] > 2
    )


# the autocast dtypes a Step's precision runs G's and D's forwards in, and their names
PRECISIONS = {torch.bfloat16: "bf16", torch.float16: "fp16"}
DTYPE_NAMES = {name: str(dtype).removeprefix("torch.") for dtype, name in PRECISIONS.items()}


def _precision(rec, iterations: int, hazards: list[str]) -> tuple[str, str] | str | None:
    """The Step's precision for a script whose update ran G and D under torch.autocast:
    (``"bf16"`` or ``"fp16"``, where the first such forward is); ``None`` where none
    did; or why the script's autocast is not mapped. A Step's precision autocasts every
    forward of its phases, so each of the update's G and D forwards must have run under
    autocast to one dtype. (A sample taken under autocast outside the update is no
    reason.)"""
    update = _update_forwards(rec, iterations, "G", "D")
    cast = [f for f in update if f.autocast is not None]
    if not cast:
        return None
    first = cast[0]
    at = f" ({first.where})" if first.where else ""
    dtype = str(first.autocast).removeprefix("torch.")
    if any(STALE_CAST in h for h in hazards):  # the hazard above says where and why
        return (
            f"{first.label} ran under torch.autocast to {dtype}{at}, in a block where a "
            "forward read weights cast before an optimizer step (the hazard above): no "
            "Step computes that update; end the block before each step and port again: "
            "not mapped"
        )
    plain = next((f for f in update if f.autocast is None), None)
    if plain is not None:
        return (
            f"{first.label} ran under torch.autocast to {dtype}{at} and {plain.label} did "
            f"not, in iteration {plain.iteration}: a Step's precision autocasts every "
            "forward of its phases: not mapped"
        )
    if {f.autocast for f in cast} != {first.autocast} or first.autocast not in PRECISIONS:
        found = sorted({str(f.autocast).removeprefix("torch.") for f in cast})
        return (
            f"G and D ran under torch.autocast to {', '.join(found)}{at}: a Step's precision "
            "is one of bfloat16 ('bf16') and float16 ('fp16'): not mapped"
        )
    return PRECISIONS[first.autocast], first.where


def split_casts(rec, iterations: int) -> tuple[str, str] | None:
    """Where the script's update ran under torch.autocast and a step of G or D took its
    gradient from more than one cast of its weights (forwards in autocast blocks of their
    own, or backward calls of their own), that step, said as why a Step's precision parts
    from the script by the reduced dtype's rounding: the script brings each cast's gradient
    back to float32 before summing them, where a Step's phase is one autocast block and one
    backward, whose forwards share one cast (or are one forward, on the joined batch) and
    so meet in the reduced dtype: (the dtype's name, what is said). None where no step
    did."""
    casts: dict[tuple[str, int], dict[tuple[int, int], object]] = {}
    for b in rec.backwards:
        for f in b.through:
            if f.autocast is not None and f.label in b.used_by and b.iteration < iterations:
                key = (b.index, f.cast_block)
                casts.setdefault((f.label, b.iteration), {}).setdefault(key, f)
    for (label, iteration), found in casts.items():
        if len(found) < 2:
            continue
        first, second = list(found.values())[:2]
        dtype = str(first.autocast).removeprefix("torch.")
        lines = "; ".join(f.where for f in (first, second) if f.where)
        return dtype, (
            f"{label}'s step in iteration {iteration} took its gradient from {len(found)} "
            f"casts of {label}'s weights to {dtype} ({lines}: forwards in autocast blocks or "
            "backward calls of their own), each brought back to float32 before the script "
            "summed them; a Step's precision runs each phase as one autocast block and one "
            f"backward, where those gradients meet in {dtype} (one autocast block around a "
            "step's forwards and losses, then one backward, as PyTorch's AMP recipe writes "
            "it, is the Step's update)"
        )
    return None


def _update_forwards(rec, iterations: int, *labels: str) -> list:
    """The forwards of ``labels`` ("G", "D") in the audited iterations' update (not a
    sample, not a log), in order."""
    return [f for f in rec.forwards if f.label in labels and f.used and f.iteration < iterations]


def _paired_d(rec, capture: Capture, iterations: int) -> tuple[str, int] | None:
    """Where each of D's update calls was given one tensor joining G's input of its
    iteration and an image along the channels (pix2pix as junyanz writes it:
    ``netD(torch.cat((real_A, fake_B), 1))``): whether the source came first
    (``"source_first"``, else ``"source_last"``) and its channels; None otherwise. A
    penalty's points may be given D as they are (the verification tells)."""
    sources: dict[int, list[Tensor]] = {}
    for f in _update_forwards(rec, iterations, "G"):
        if f.seq in capture.calls:
            sources.setdefault(f.iteration, []).extend(_call_tensors(capture, f.seq)[:1])
    orders = set()
    for f in _update_forwards(rec, iterations, "D"):
        given = _call_tensors(capture, f.seq)
        order = _pair_order(given[0], sources.get(f.iteration, [])) if len(given) == 1 else None
        if order is None and not (f.producer is None and f.input_grad):
            return None
        orders |= {order} - {None}
    return orders.pop() if len(orders) == 1 else None


def _call_tensors(capture: Capture, seq: int) -> list[Tensor]:
    """The tensors a recorded call was given, in order (none where it is not recorded)."""
    return [a for a in capture.calls.get(seq, ((),))[0] if isinstance(a, Tensor)]


def _pair_order(joined: Tensor, sources: list[Tensor]) -> tuple[str, int] | None:
    """How ``joined`` holds one of ``sources`` beside an image in its channels (dim 1):
    ``("source_first", channels)`` or ``("source_last", channels)``; None if it does not."""
    for c in sources:
        if (c.dim() < 2 or joined.dim() != c.dim() or joined.shape[0] != c.shape[0]
                or joined.shape[2:] != c.shape[2:] or joined.shape[1] <= c.shape[1]):  # fmt: skip
            continue
        k = c.shape[1]
        if torch.equal(joined[:, :k], c):
            return "source_first", k
        if torch.equal(joined[:, -k:], c):
            return "source_last", k
    return None


def _unpaired(joined: Tensor, pair: tuple[str, int]) -> tuple[Tensor, Tensor]:
    """``(image, source)`` of a D input joined as ``pair`` says (``_paired_d``)."""
    order, k = pair
    if order == "source_first":
        return joined[:, k:], joined[:, :k]
    return joined[:, :-k], joined[:, -k:]


def _joined_condition(rec, capture: Capture, iterations: int
                      ) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:  # fmt: skip
    """Where the script joins a condition to G's z (``G(torch.cat([z, c], 1))``) or its
    maps to D's image (``D(torch.cat([x, c_maps], 1))``), as cDCGAN tutorials write it:
    how G's one input holds its condition (``("condition_last", k)`` or
    ``("condition_first", k)``: its k columns) and how D's one input holds the maps
    (``("source_last", k)`` or ``("source_first", k)``: its k channels, a constant map
    per entry of G's condition on the fakes, per entry of the batch's on the real
    batches); ``(None, None)`` where neither is so. A call given its condition apart
    (``G(z, c)``, ``D(x, c_maps)``) reads that one."""
    g_calls = {f.seq: _call_tensors(capture, f.seq)
               for f in _update_forwards(rec, iterations, "G")
               if f.seq in capture.calls}  # fmt: skip
    d_calls = [(f, _call_tensors(capture, f.seq)) for f in _update_forwards(rec, iterations, "D")
               if f.seq in capture.calls and not (f.producer is None and f.input_grad)]  # fmt: skip
    fakes = [(g_calls.get(f.producer.seq), given) for f, given in d_calls
             if f.producer is not None]  # fmt: skip
    if not fakes or any(g is None or not 1 <= len(g) <= 2 for g, _ in fakes):
        return None, None
    g_join = d_join = None
    for g, given in fakes:
        joins = _condition_joins(g, given)
        if joins is None or (g_join, d_join) not in ((None, None), joins):
            return None, None
        g_join, d_join = joins
    if d_join is not None and not all(  # the real batches' maps: constant over the image
            _constant_maps(_unpaired(given[0], d_join)[1]) for f, given in d_calls
            if f.producer is None and len(given) == 1):  # fmt: skip
        return None, None
    return g_join, d_join


def _condition_joins(g: list[Tensor], d: list[Tensor]
                     ) -> tuple[tuple[str, int] | None, tuple[str, int] | None] | None:  # fmt: skip
    """How one G call's inputs ``g`` and D's inputs ``d`` on its fakes hold G's condition
    (``_joined_condition``), where one of them joins it; None where neither does."""
    if len(g) == 2 and len(d) == 2:
        return None
    if len(d) == 2:  # G(cat([z, c])), D(x, c_maps)
        maps = d[1]
        options = [(None, maps)] if maps.dim() == 4 and _constant_maps(maps) else []
    elif d[0].dim() == 4:  # D(cat([x, c_maps]))
        options = [
            ((order, k), part)
            for k in range(d[0].shape[1] - 1, 0, -1)  # all maps
            for order in ("source_first", "source_last")
            for part in [_unpaired(d[0], (order, k))[1]]
            if _constant_maps(part)
        ]
    else:
        return None
    for d_join, maps in options:
        entries = maps[:, :, 0, 0]
        k = entries.shape[1]
        if len(g) == 2:  # (G's condition of any shape: (n, k), or (n, k, 1, 1) images)
            c = g[1].reshape(g[1].shape[0], -1) if g[1].dim() else g[1]
            if c.shape == entries.shape and torch.equal(c, entries):
                return None, d_join
            continue
        z = g[0]
        if z.dim() != 2 or z.shape[1] <= k or z.shape[0] != entries.shape[0]:
            continue
        if torch.equal(z[:, -k:], entries):
            return ("condition_last", k), d_join
        if torch.equal(z[:, :k], entries):
            return ("condition_first", k), d_join
    return None


def _constant_maps(maps: Tensor) -> bool:
    """Whether each sample's channel of ``maps`` (n, k, h, w) is one value over the image."""
    return maps.dim() == 4 and maps.shape[2] * maps.shape[3] > 1 and torch.equal(
        maps[:, :, :1, :1].expand_as(maps), maps)  # fmt: skip


def _listed_styles(args: tuple) -> tuple[Tensor, ...] | None:
    """The z of a G call given them as one list (or tuple) of one or two tensors:
    ``G([z])``, or ``G([z1, z2])`` where rosinality's G mixes two styles; else None."""
    if len(args) == 1 and type(args[0]) in (list, tuple) and 1 <= len(args[0]) <= 2 and all(
            isinstance(t, Tensor) for t in args[0]):  # fmt: skip
        return tuple(args[0])
    return None


def _mixed_styles(capture: Capture, style_sets: list, z_seqs: list[int]) -> dict:
    """Replay's ``styles`` and ``py_states`` where G was given its z in a list at every call
    and two at some."""
    if None in style_sets or not any(len(styles) > 1 for styles in style_sets):
        return {}
    return {"styles": style_sets, "py_states": [capture.py_states.get(s) for s in z_seqs]}


def _split_condition(z: Tensor, join: tuple[str, int]) -> tuple[Tensor, Tensor]:
    """``(z, c)`` of G's one input joined as ``join`` says (``_joined_condition``)."""
    order, k = join
    return (z[:, :-k], z[:, -k:]) if order == "condition_last" else (z[:, k:], z[:, :k])


def _augment_of(rec, capture: Capture, iterations: int) -> tuple[str, str] | None:
    """Where the script gave D G's output changed in the call itself, and every batch
    of D's losses so (real and fake, in D's and G's steps): the change, one function of
    the batch as code (a Step's ``augment=``), and the line of D's first such call; None
    otherwise (``_changed`` says why). A penalty's points (WGAN-GP's interpolates) may
    be given D as they are: the Step augments them, and the verification tells."""
    calls = _update_forwards(rec, iterations, "D")
    if not any(f.changed for f in calls):
        return None
    losses = [f for f in calls if not (f.producer is None and f.input_grad)]
    made = {capture.arguments.get(f.seq, ("",))[0] for f in losses}
    if len(made) != 1 or "" in made:
        return None
    return made.pop(), next((f.where for f in losses if f.changed), "")


def _changed(rec, capture: Capture, iterations: int) -> str | None:
    """Why a script that gave D G's output changed by calls of its own (instance noise,
    an augmentation, an activation outside G) is not ported: the Steps tried give D G's
    output as it is."""
    calls = _update_forwards(rec, iterations, "D")
    f = next((f for f in calls if f.changed), None)
    if f is None:
        return None
    at = f" ({f.where})" if f.where else ""
    over = next((capture.written_over[f.seq] for f in calls if f.seq in capture.written_over),
                None)  # fmt: skip
    over = (f"; the batch before the change is gone where the script wrote over it ({over}):"
            " a change under another name, or in D's call, is read") if over else ""  # fmt: skip
    return (
        f"D was given G's output changed by the script's own calls{at}; the Steps tried "
        "give D G's output as it is, or changed as every batch D's losses read is, in D's "
        "call itself or assigned to a name of its own before it (noise or an augmentation "
        "of each batch is a Step's augment=, with draws of its own; anything else belongs "
        f"in G){over}: not mapped"
    )


def _real_made(rec, capture: Capture, iterations: int, augmented: bool = False) -> str | None:
    """Where D was given its real batch not as a DataLoader gave it but made from it
    (instance noise, a reshape: ``D(real + sigma * torch.randn_like(real))``, or ``real =
    real + noise`` written over before D's call): that, with the change and its line;
    where D's call does not show the change (D called in a function of the script's
    own), the change read from the batch's values (:func:`_made_from`), or else that the
    batch is none of the DataLoader's. With ``augmented`` (the Step takes the script's
    change of every batch D reads as ``augment=``), the batch that change was applied to
    is the one compared. None where D was given its real batches as they came (cast or
    copied), or no DataLoader was seen."""
    script_file = getattr(rec, "script_file", None)
    loaded = [*capture.single_batches, *(t for batch in capture.batches for t in batch)]
    for f in _update_forwards(rec, iterations, "D"):
        if f.producer is not None or f.input_grad:  # G's output, or a penalty's points
            continue
        if augmented:  # the batch before the change, as the Step is given it
            given = [capture.arguments[f.seq][1]] if f.seq in capture.arguments else []
        else:
            given = _call_tensors(capture, f.seq)[:1]
        if not given or not loaded or any(_place(given[0], (t,), ("",)) is not None
                                          for t in loaded):  # fmt: skip
            continue
        if f.seq in capture.written_over:
            return (f"D was given its real batch made from the DataLoader's and written over "
                    f"before D's call ({capture.written_over[f.seq]})")  # fmt: skip
        line = capture.sites.get(f.seq)
        if script_file is None or line is None:
            continue
        at = f"{Path(script_file).name}:{line}: {linecache.getline(script_file, line).strip()}"
        if f.seq in capture.arguments and not augmented:
            return (f"D was given its real batch made from the DataLoader's, as "
                    f"`{capture.arguments[f.seq][0]}` ({at})")  # fmt: skip
        made = next(filter(None, (_made_from(given[0], t) for t in loaded)), None)
        batch = ("the real batch that the script's change of D's batches (augment= below) "
                 "was applied to" if augmented else "D's real batch")  # fmt: skip
        if made is not None:  # made in lines the audit cannot read it from (a function's)
            return (f"{batch} was made from the DataLoader's x, read from its values as "
                    f"`{made}` (D's call: {at})")  # fmt: skip
        return (f"{batch} is none of the DataLoader's tensors, made in lines the audit cannot "
                f"read from D's call ({at})")  # fmt: skip
    return None


def _made_from(given: Tensor, loaded: Tensor) -> str | None:
    """``given`` as code of ``x``, a DataLoader's tensor ``loaded`` of as many values,
    where its values are that tensor's rescaled (``x * 2 - 1``: a fit of ``a x + b``
    within float32's rounding) or reshaped; None otherwise."""
    if (given.numel() != loaded.numel() or given.numel() < 2 or not given.is_floating_point()
            or not loaded.is_floating_point()):  # fmt: skip
        return None
    x, y = loaded.detach().flatten().double().cpu(), given.detach().flatten().double().cpu()
    spread = float(x.var(correction=0))
    if spread == 0:
        return None
    a = float(((x - x.mean()) * (y - y.mean())).mean()) / spread
    b = float(y.mean()) - a * float(x.mean())
    scale = max(1.0, float(y.abs().max()))
    if float((a * x + b - y).abs().max()) > 1e-5 * scale:
        return None
    whole = round(1 / a) if a != 0 else 0  # x / 255 reads better than x * 0.00392157
    if abs(a - 1) <= 1e-6:
        shown = "x"
    elif abs(whole) > 1 and abs(1 / a - whole) <= 1e-6 * abs(whole):
        shown = f"x / {whole}"
    else:
        shown = f"x * {a:.6g}"
    if abs(b) > 1e-6 * scale:  # (a fit's rounding is no offset)
        shown += f" {'-' if b < 0 else '+'} {abs(b):.6g}"
    if tuple(given.shape) != tuple(loaded.shape):
        dims = [str(d) for d in given.shape]
        if given.dim() and loaded.dim() and given.shape[0] == loaded.shape[0]:
            dims[0] = "len(x)"  # a batch of its own size, whatever the loader's last one
            dims[1:] = ["-1"] if given.dim() == 2 else dims[1:]
        shape = ", ".join(dims)
        shown = f"({shown}).reshape({shape})" if shown != "x" else f"x.reshape({shape})"
    return None if shown == "x" else shown


def _real_made_note(made: str, ported: bool) -> str:
    """What ``made`` (:func:`_real_made`) means for a port found (``ported``) or not."""
    if ported:
        return (f"{made}: the Step was verified on each real batch as the script made it, so "
                "give step(...) the batch made so (real_batch below), as the script makes it "
                "before each call")  # fmt: skip
    return (
        f"{made}; the Steps tried were given each real batch so made, which equals no "
        "script whose other losses read the batch as it came (an L1 term against it) or "
        "whose change draws between D's own draws (Dropout): a change of the real batch "
        "alone is no Step's option (augment= changes every batch D reads)"
    )


def _copies_of_g(script: _Script) -> str | None:
    """The script's modules of G's architecture beside G whose parameters are not G's
    (an EMA of G: StyleGAN's and BigGAN's G_ema, torch's ``AveragedModel(G)``, whose
    ``module`` is the copy), which the Step does not update: a note to keep the
    script's lines that do. Looked for among its names and the attributes of its
    ``self`` (a trainer's ``self.G_ema``)."""
    G, D = script.G, script.D
    mine = G.state_dict()
    shapes = {k: v.shape for k, v in mine.items()}
    found: dict[int, str] = {}
    for name, value in script.namespace.items():
        inside = vars(value).items() if name == "self" and hasattr(value, "__dict__") else ()
        for shown, module in [(name, value), *((f"{name}.{k}", v) for k, v in inside)]:
            if (not isinstance(module, nn.Module) or module is G or module is D
                    or id(module) in found or shown.startswith("_")):  # fmt: skip
                continue
            inner = getattr(module, "module", None)  # torch's AveragedModel(G) holds its copy
            theirs = (inner if isinstance(inner, nn.Module) else module).state_dict()
            same_shapes = {k: v.shape for k, v in theirs.items()} == shapes
            if same_shapes and any(not torch.equal(theirs[k], v) for k, v in mine.items()):
                found[id(module)] = shown
    if not found:
        return None
    names = ", ".join(found.values())
    return (
        f"the script keeps {names} beside G, of G's architecture and not G's parameters (an "
        "EMA of G?): the Step does not update it; keep the script's lines that do after "
        "each call of step(...)"
    )


def _lightning_module(script: _Script) -> str | None:
    """Where the update ran in a LightningModule's method (its ``self``): a note that
    ``ganstep.lightning.GANModule`` runs the Step as its ``training_step``, built once,
    and how the printed Step's parts go there."""
    owner = script.namespace.get("self")
    if not _is_a(owner, "LightningModule", ("lightning.", "pytorch_lightning.")):
        return None
    return (
        f"the update is a LightningModule's ({type(owner).__name__}): "
        "ganstep.lightning.GANModule runs the Step as its training_step, built once at "
        "the fit's start; subclass it in place of LightningModule, with self.G and self.D "
        f"set to {script.names['G']} and {script.names['D']}, configure_optimizers "
        "returning (opt_g, opt_d), and step_options() returning the Step's options below "
        "(objective, schedule, latent and the rest) as a dict"
    )


def _is_a(value: object, name: str, modules: tuple[str, ...]) -> bool:
    """Whether ``value``'s class or a base is the class ``name`` of a package in
    ``modules`` (read by name: the package need not be installed to ask)."""
    return any(c.__name__ == name and c.__module__.startswith(modules)
               for c in type(value).__mro__)  # fmt: skip


def _accelerate(script: _Script) -> str | None:
    """Where the script's loop sees an Accelerator of Hugging Face Accelerate: a note
    that ``ganstep.accelerate.prepare`` builds the Step, G and D left out of
    ``accelerator.prepare``."""
    name = next((k for k, v in script.namespace.items()
                 if not k.startswith("_") and _is_a(v, "Accelerator", ("accelerate.",))),
                None)  # fmt: skip
    if name is None:
        return None
    return (
        f"the script runs under Accelerate ({name}): ganstep.accelerate.prepare({name}, G, "
        "D, opt_g, opt_d, loader, **options) builds the Step, with G, D and their "
        f"optimizers as they were before {name}.prepare (its DistributedDataParallel "
        "would all-reduce in every backward, beside the Step's own) and the Step's options "
        "below as keywords; it returns (step, loader): step(real) for each real batch"
    )


def _modes_mixed(rec, iterations: int) -> str | None:
    """Where the update forwarded G or D in eval mode in some calls and training mode in
    others (``D.eval()`` before G's step): what no Step does, named with the line of the
    first forward in eval mode."""
    for role in ("D", "G"):
        update = _update_forwards(rec, iterations, role)
        resting = next((f for f in update if not f.training), None)
        if resting is not None and any(f.training for f in update):
            at = f" ({resting.where})" if resting.where else ""
            return (
                f"{role} ran in eval mode in some of the update's forwards{at} and in "
                "training mode in others: a Step forwards each module in the mode it is in, "
                "in every phase, so where its layers read the mode (Dropout, BatchNorm) no "
                "Step computes that update: not mapped"
            )
    return None


def _loss_lines(rec) -> str:
    """Where the script's losses whose form no candidate matched were taken: the lines
    of the first iteration's backward passes that G's and D's steps used."""
    lines = []
    for role in ("D", "G"):
        sites = dict.fromkeys(b.where for b in rec.backwards if b.iteration == 0
                              and role in b.used_by and b.where)  # fmt: skip
        if sites:
            lines.append(f"{role}'s at " + ", ".join(sites))
    where = "; ".join(lines) or "lines not found in the script"
    return (
        f"no objective, scale and term tried equals the losses this script takes "
        f"({where}): not mapped"
    )


def _d_output(script: _Script, capture: Capture, data: Replay) -> object:
    """What D, as the Step is given it, returns on the first real batch: trainable,
    whatever the script left it switched to (a G step with D frozen stopped it), so
    that its output's graph tells whether a Sigmoid made it."""
    copied = _copy(script.D, capture.first_state[id(script.D)]).requires_grad_(True)
    probe = _d_taking(_staged(copied, data, "D"), data)
    with torch.enable_grad():
        real = data.reals[0][0]
        if isinstance(real, tuple):  # (x, c): D(x, c), or D(x) where G alone takes c
            return probe(*real) if data.d_conditional else probe(real[0])
        return probe(real)


def _scale_lists(out: object) -> bool:
    """Whether D's ``out`` is a list of lists of tensors: each scale's outputs, its
    prediction last (pix2pixHD's MultiscaleDiscriminator)."""
    return (isinstance(out, list) and bool(out)
            and all(isinstance(o, list) and o and all(isinstance(t, Tensor) for t in o)
                    for o in out))  # fmt: skip


def _tried(script: _Script, capture: Capture, data: Replay, report,
           g_moments: dict[int, Tensor] | None) -> tuple[list[tuple] | str,
                                                         str | None]:  # fmt: skip
    """Each (schedule, candidate) that could be the script's update, or why none is; and
    why D's outputs besides its scores were left unread (None where D returns its scores
    alone, or ACGAN's class logits beside them). ``g_moments``: G's optimizer's moments
    after the script's first G step (:func:`first_g_moments`), where G's terms are read
    from its gradient (:func:`_fit_terms`)."""
    whole, real = _d_output(script, capture, data), data.reals[0][0]
    # a D returning more than its scores: ACGAN's class logits where they can be mapped,
    # else its first output read as the scores, the others unread (SAGAN's attention
    # maps; a verified Step shows that the script's losses read them not); a multi-scale
    # D's features, read by its feature matching where G's gradient says so
    if isinstance(whole, list) and whole and all(isinstance(w, list) for w in whole):
        return ("D returns a list of lists, not each a scale's tensors (pix2pixHD's "
                "multi-scale D returns each scale's features, then its prediction): "
                "not mapped"), None  # fmt: skip
    if isinstance(whole, dict):  # ({"logits": ...}): no Step reads D's scores by a key
        return (f"D returns a dict (keys {', '.join(map(str, list(whole)[:4]))}): a Step reads "
                "D's scores from a tensor, a tuple (scores, *extras) or a list (one per "
                "scale): not mapped"), None  # fmt: skip
    unmapped = (None if isinstance(whole, Tensor) or data.d_scales
                else _classifier_unmapped(whole, data))  # fmt: skip
    d_out = adversarial(whole)[0]
    # a double backward in D's steps is a gradient penalty; in steps of its own, lazy R1
    penalty = None
    if report.double_backwards.get("D", 0) > 0 and not report.regularization.get("D"):
        penalty = "div" if data.graded_fake else "r1" if data.graded_real else "gp"
    x = real if isinstance(real, Tensor) else real[0]
    clip, clamp_at = _clip(script.D, capture.after_step[id(script.D)]), "after"
    before = capture.before_step_state.get(id(script.D))
    if clip is None and before is not None:  # clamped at the top of D's loop, if at all
        clip, clamp_at = _clip(script.D, before), "before"
    found = candidates(d_out, penalty, clip,
                       autoencoder=(isinstance(real, Tensor) and not data.d_scales
                                    and d_out.shape == real.shape), images=x.dim() > 2,
                       embedding=isinstance(whole, tuple) and len(whole) == 2
                       and not data.d_scales,
                       clamp_at=clamp_at, numpy_alpha=data.numpy_in_d)  # fmt: skip
    if (data.g_forwards is not None and penalty is None and clip is None
            and not ends_in_sigmoid(d_out)):  # fmt: skip
        found += plain_g_candidates()  # G's loss replaced: a relativistic D's, G's plain
        if "real" in data.g_forwards and d_out[0].numel() > 1:  # D's real map read in G's
            why = ("relativistic losses: D's real scores against its fake ones, each batch's "
                   "mean at each location of D's map")  # fmt: skip
            found += [Candidate(code, make, 1.0, 1.0, why) for code, make in PER_LOCATION]
    # G's terms read from its gradient where D has scales, G's loss took loss modules or
    # an image-to-image G's L1 to the target (context_encoder.py's 0.999 beside 0.001)
    fitted = (_fit_keys(data, whole) if data.d_scales or data.loss_modules
              or data.feature_modules or data.image_to_image and g_moments is not None
              else None)  # fmt: skip
    if data.image_to_image and fitted is None:  # no moment to read: the weights scripts use
        found = [replace(c, l1=w) for c in found for w in (100.0, 10.0, 1.0)]
    if not isinstance(whole, Tensor) and unmapped is None and not data.d_scales:
        # G given the fakes' labels: ACGAN's; G given none: SGAN's, the last class the fakes'
        found = with_classifier(found, None if data.conditional else whole[1].shape[1] - 1)
    if data.style_mixing:
        found = [replace(c, style_mixing=p) for c in found for p in STYLE_MIXING]
    at = report.regularization_at.get("D") or []
    if at:  # D's steps of their own: lazy R1 every k-th, from the first
        every = _interval(at, "D", "lazy R1")
        if isinstance(every, str):
            return every, None
        if every == 1 and not data.graded_real:  # at points of its own, after each D step
            found = own_step_candidates(candidates(d_out, "gp", None, images=x.dim() > 2))
        else:
            found = with_r1(found, every, len(data.reals[0]))
        if not found:
            return ("its lazy regularization of D is mapped as R1 on NS, LSGAN or hinge "
                    "losses", None)  # fmt: skip
    g_at = report.regularization_at.get("G") or []
    if g_at:  # G's steps of their own: lazy path length every k-th, from the first
        every = _interval(g_at, "G", "path length")
        if isinstance(every, str):
            return every, None
        found = [replace(c, path_length=(w * (len(data.reals[0]) if c.summed else 1), every))
                 for c in found for w in PL_WEIGHTS]  # fmt: skip
    fresh_real = bool(data.g_reals)
    # G's real batch of its own matters only to losses that read it (a logging forward
    # of D on data would otherwise make two equal candidates of every other one)
    varying = len({len(reals) for reals in data.reals}) > 1  # D steps an iteration
    tried = [(s, c) for s in schedules(report.schedule, _g_batch(data), fresh_real,
                                       data.z_reused, varying)
             for c in found if "fresh_real" not in s[0] or c.make().g_needs_real]  # fmt: skip
    if fitted:
        if g_moments is None:
            return ("G's terms (" + ", ".join(map(_term_name, fitted)) + ") are weighted as "
                    "G's first gradient says, which G's optimizer keeps no moment of "
                    "(Adam's, SGD's momentum) from a first step: not mapped"), None  # fmt: skip
        tried = [(s, _fit_terms(script, capture, data, s, c, _keys_for(fitted, s[0], data),
                                g_moments)) for s, c in tried]  # fmt: skip
        # (two scales of one objective fitted to one: tried once)
        tried = [t for i, t in enumerate(tried) if t not in tried[:i]]
    return tried, unmapped


def _keys_for(keys: list[str], schedule: str, data: Replay) -> list[str]:
    """``keys`` for a candidate of ``schedule``: in a D-first update whose G step forwarded
    D on no data, the feature matching reads D's step's real outputs (MelGAN's D_real)."""
    if schedule.startswith("d_first") and not data.real_in_g_step:
        return [FEATURES_D_STEP if key == FEATURES else key for key in keys]
    return keys


# the largest denominator a fitted weight is read as a fraction with (a script's 1 / num_D)
WEIGHT_DENOMINATORS = 12


def _fit_keys(data: Replay, whole: object) -> list[str]:
    """The G terms whose weights are read from G's gradient: pix2pix's L1 (image to
    image), a multi-scale D's feature matching (where its scales have features), each
    loss module of the script's (``Replay.loss_modules``)."""
    keys = ["l1"] if data.image_to_image else []
    if data.d_scales and any(whole[1]):
        keys.append(FEATURES)
    return (keys + [name for name, _, _ in data.loss_modules]
            + [f"{CONTENT}{kind}:{name}" for name, _, _ in data.feature_modules
               for kind in CONTENT_LOSSES])  # fmt: skip


def _fit_terms(script: _Script, capture: Capture, data: Replay, schedule: tuple[str, bool],
               candidate: Candidate, keys: list[str],
               theirs: dict[int, Tensor]) -> Candidate:  # fmt: skip
    """``candidate`` with the weights of G's terms ``keys`` that the script's first G
    gradient says (``theirs``: :func:`first_g_moments`). G's gradient, and so its
    optimizer's first moment, is linear in them: the candidate's Step on the first
    iteration without the terms, and with each alone at weight 1, give the adversarial
    part and each term's, and the weights are the least squares fit of the script's
    moment (:func:`_read_weight`); a term whose weight is not above 1e-4 of the largest
    is left out, and one whose probe gave G no gradient at all is ``unread`` (any weight
    fits this run). ``candidate`` as it is where a probe fails (verification then says
    where it parts), and with ``parted`` where the first probe's D steps part from the
    script's by more than a rounding form could (:func:`_d_parted`): no weight of G's
    terms can bring them back, and the search takes that as the candidate's run."""
    moments = []
    for probe in [(), *(((key, 1.0),) for key in keys)]:
        twins: list = []
        steps: list[str] = []
        try:
            _, where = _run(script, capture, data, schedule, replace(candidate, g_fit=probe),
                            1, float("inf"), twins=twins, steps=steps)  # fmt: skip
        except Exception:  # a candidate the script's models refuse: verification says so
            return candidate
        parted = "" if probe or where else _d_parted(script, capture.end_state(data.ends[0]),
                                                     twins, steps)  # fmt: skip
        if parted:
            return replace(candidate, parted=parted)
        ours = _moments(twins[2].state_dict()["state"])
        if ours is None or ours.keys() != theirs.keys():
            return candidate
        moments.append(_moment_vector(ours, theirs))
    base = moments[0]
    terms = [m - base for m in moments[1:]]
    whole = _moment_vector(theirs, theirs)
    fit = _least_squares(terms, whole - base)
    g_scale = candidate.g_scale
    if _left(terms, fit, whole - base, whole) > SCALE_REFIT:  # G's adversarial loss at
        scaled = _least_squares([base, *terms], whole)  # another scale: read it too
        if scaled[0] > 0 and _left([base, *terms], scaled, whole, whole) <= SCALE_REFIT:
            g_scale, fit = _read_weight(candidate.g_scale * scaled[0]), scaled[1:]
    weights = tuple((key, w) for key, w in zip(keys, _weights_read(fit, terms, whole),
                                               strict=True) if w is not None)  # fmt: skip
    unread = tuple(key for key, column in zip(keys, terms, strict=True) if not column.any())
    run = "the script's float64 run's" if _in_float64(script) else "the script's"
    return replace(candidate, g_fit=weights, g_scale=g_scale, unread=unread, fitted_on=run)


# the share of the script's first G moment a fit of G's terms may leave (float32's
# rounding leaves about 1e-7): past it at the candidate's own g_scale, G's adversarial
# loss is read at a scale of its own too (SRGAN's 1e-3 beside its content loss)
SCALE_REFIT = 1e-3


def _moment_vector(moments: dict[int, Tensor], like: dict[int, Tensor]) -> Tensor:
    """``moments`` (:func:`_moments`) as one float64 vector over ``like``'s entries, in
    their order, zeros where ``moments`` has none (a term reaching some parameters only)."""
    return torch.cat([moments.get(i, torch.zeros_like(like[i])).double().flatten()
                      for i in sorted(like)])  # fmt: skip


def _weights_read(fit: list[float], columns: list[Tensor] | None = None,
                  whole: Tensor | None = None) -> list[float | None]:  # fmt: skip
    """Each fitted weight as the script's (:func:`_read_weight`), or None where it is not
    above 1e-4 of the largest, or (given the fit's ``columns`` and the ``whole`` they were
    fitted to) its part of the whole is not above TERM_FLOOR: a term the script does not
    have (ccgan.py's G has no L1 to the target: fitted alone, 1e-17)."""
    largest = max(fit)
    parts = ([abs(w) * float(c.norm()) / max(float(whole.norm()), 1e-30)
              for w, c in zip(fit, columns, strict=True)]
             if columns is not None and whole is not None else [1.0] * len(fit))  # fmt: skip
    return [_read_weight(w) if w > 0 and w > 1e-4 * largest and part > TERM_FLOOR else None
            for w, part in zip(fit, parts, strict=True)]  # fmt: skip


# a fitted G term's part of the script's first G moment at most this: float32's rounding
# (about 1e-7 of it), not a term of the script's
TERM_FLOOR = 1e-6


def _least_squares(columns: list[Tensor], target: Tensor) -> list[float]:
    """The weights of ``columns`` whose sum is nearest ``target``."""
    system = torch.stack(columns, dim=1)
    return torch.linalg.lstsq(system, target.unsqueeze(1)).solution.flatten().tolist()


def _left(columns: list[Tensor], weights: list[float], target: Tensor, whole: Tensor) -> float:
    """What a fit leaves of ``target``, as a share of ``whole``'s norm."""
    fitted = sum((w * c for w, c in zip(weights, columns, strict=True)), torch.zeros_like(target))
    return float((fitted - target).norm() / whole.norm().clamp_min(1e-30))


def _d_parted(script: _Script, ends: dict, twins: list, steps: list[str]) -> str:
    """Where D's parameters and optimizer (of ``twins``, after an iteration whose
    optimizer steps were ``steps``) part from the script's at that iteration's end
    (``ends``) by more than ROUNDING_GAP, as :func:`_run` says it; "" where they do not,
    or where a D step came after a G step: only D's steps before G's first are the
    same whatever G's loss (its terms and their weights) is."""
    first_g = steps.index("G") if "G" in steps else len(steps)
    if "D" not in steps[:first_g] or "D" in steps[first_g:]:
        return ""
    gap = _role_gap(script, ends, "D", twins[1], twins[3])
    if gap is None or gap[0] <= ROUNDING_GAP:
        return ""
    return _parts(0, gap)


def _read_weight(weight: float) -> float:
    """A fitted weight as the script's: the fraction of the smallest denominator up to
    :data:`WEIGHT_DENOMINATORS` within 1e-4 of it (5.0, 10 / 3), else its 2 digits
    within 1e-3 of it (a small term's weight beside a large one is fitted to about 3
    digits: esrgan.py's pixel loss at 1e-2 beside its content loss at 1), else its 4
    digits."""
    for denominator in range(1, WEIGHT_DENOMINATORS + 1):
        numerator = round(weight * denominator)
        if numerator and abs(numerator / denominator - weight) <= 1e-4 * weight:
            return numerator / denominator
    two = float(f"{weight:.2g}")
    return two if abs(two - weight) <= 1e-3 * abs(weight) else float(f"{weight:.4g}")


# InfoGAN's info terms tried, on D's outputs after its first (its Q heads) on the fakes,
# against G's inputs after its first (labels, codes) of the same shape: cross-entropy to
# a one-hot input's classes (infogan.py's categorical loss), squared error to any input
# (its continuous one)
INFO_TERMS = {
    "cat": "lambda v: torch.nn.functional.cross_entropy(v.d_fake[{j}], v.fake.z[{i}].argmax(1))",
    "con": "lambda v: torch.nn.functional.mse_loss(v.d_fake[{j}], v.fake.z[{i}])",
}


def _one_hot(t: Tensor) -> bool:
    """Rows of 0s and one 1 in floats: a class one-hot, as G is given one."""
    return (t.is_floating_point() and t.dim() == 2 and t.shape[1] > 1
            and bool(((t == 0) | (t == 1)).all()) and bool((t.sum(1) == 1).all()))  # fmt: skip


def _info_terms(rec, script: _Script, capture: Capture,
                data: Replay) -> tuple[tuple[str, float, str], ...] | str:  # fmt: skip
    """The info step's terms and weights, read from the script's first one: G and D
    copied as they were before it, G called on that step's inputs, D on G's output (each
    with torch's generator as at the script's call), each of :data:`INFO_TERMS` that
    fits their shapes backpropagated alone into a copy of the info optimizer, whose
    first moment is linear in the gradient; the weights are the least squares fit of the
    script's moment (:func:`_read_weight`), kept where above 1e-4 of the largest. Or why
    they cannot be read."""
    step = info_steps(rec)[0]
    g_calls = [f for f in phase_forwards(rec, step.seq, "G") if f.used and not f.continues]
    d_calls = [f for f in phase_forwards(rec, step.seq, "D") if f.used and f.fed_by_g]
    if len(g_calls) != 1 or len(d_calls) != 1:
        return (f"the info step ({step.where or 'an optimizer over G and D'}) called G "
                f"{len(g_calls)} and D {len(d_calls)} time(s): the port maps one call of "
                "each (InfoGAN's)")  # fmt: skip
    before = sum(st.seq < step.seq for st in rec.opt_steps)
    states, after = capture.history.get(before), capture.at_step.get(step.seq)
    theirs = None if after is None else _moments(after[id(script.opt_info)]["state"])
    if states is None or theirs is None or capture.made_state[id(script.opt_info)]["state"]:
        return ("the info step's optimizer keeps no first moment after its first step (Adam's, "
                "SGD's momentum), which its terms' weights are read from: not mapped")  # fmt: skip
    G = _copy(script.G, states[id(script.G)])
    D = _copy(script.D, states[id(script.D)])
    z_args, g_rng = capture.calls[g_calls[0].seq]
    z = tuple(a for a in z_args if isinstance(a, Tensor))
    _set_rng(g_rng)
    fake = G(*z)
    _set_rng(capture.calls[d_calls[0].seq][1])
    out = D(fake)
    if not isinstance(out, tuple | list) or len(out) < 2:
        return "D returns one output in the info step: no Q head to read its terms from"
    tried = [(kind, j, i) for j, o in enumerate(out[1:], 1) for i, t in enumerate(z[1:], 1)
             if t.shape == o.shape for kind in ("cat", "con")
             if kind == "con" or _one_hot(t)]  # fmt: skip
    if not tried:
        return ("no output of D past its first has the shape of one of G's inputs past its "
                "first: the info step's terms are not mapped")  # fmt: skip
    view = argparse.Namespace(d_fake=out, fake=argparse.Namespace(z=z))
    texts = [INFO_TERMS[kind].format(j=j, i=i) for kind, j, i in tried]
    params = [*G.parameters(), *D.parameters()]
    grads = [torch.autograd.grad(Printed(text)(view), params, retain_graph=True,
                                 allow_unused=True) for text in texts]  # fmt: skip
    moments = []
    for grad in grads:  # (after every gradient: a step changes the weights the graph saved)
        opt = _optimizer_like(script.opt_info, capture.made_state[id(script.opt_info)],
                              script.G, G, (script.D, D))  # fmt: skip
        for p, g in zip(params, grad, strict=True):
            p.grad = g
        opt.step()
        ours = _moments(opt.state_dict()["state"])  # (a term alone reaches its head only)
        if ours is None or not ours.keys() <= theirs.keys():
            return "the info step's gradients reach other parameters than the script's: not mapped"
        moments.append(_moment_vector(ours, theirs))
    target = _moment_vector(theirs, theirs)
    fit = _least_squares(moments, target)
    residual = _left(moments, fit, target, target)
    if residual > 1e-3:
        tried_text = ", ".join(texts)
        return (f"the info step's gradient is not a weighted sum of the terms tried "
                f"({tried_text}; {residual:.2g} of it left): not mapped")  # fmt: skip
    kept = [((kind, j), w, text) for (kind, j, _), w, text
            in zip(tried, _weights_read(fit), texts, strict=True) if w is not None]  # fmt: skip
    kinds = [kind for (kind, _), _, _ in kept]
    return tuple((kind if kinds.count(kind) == 1 else f"{kind}{j}", weight, text)
                 for (kind, j), weight, text in kept)  # fmt: skip


def first_g_moments(rec, capture: Capture, opt_g) -> dict[int, Tensor] | None:
    """By index in ``opt_g``'s state dict, its moment after the script's first G step
    (:func:`_moments`), linear in G's first gradient; None where G's optimizer keeps
    none or had stepped before the script's first recorded step."""
    step = first_step(rec, "G")
    if step is None or step.seq not in capture.at_step or capture.made_state[id(opt_g)]["state"]:
        return None
    return _moments(capture.at_step[step.seq][id(opt_g)]["state"])


def _moments(state: dict) -> dict[int, Tensor] | None:
    """Each parameter's moment in an optimizer's state after its first step: Adam's
    exp_avg ((1 - beta1) times the gradient), SGD's momentum buffer (the gradient); None
    where one has none, or has stepped more than once."""
    found = {i: s.get("exp_avg", s.get("momentum_buffer")) for i, s in state.items()}
    once = all(float(s.get("step", 1)) == 1 for s in state.values())
    return found if found and once and all(m is not None for m in found.values()) else None


def _g_batch(data: Replay) -> int:
    """How many times the rows of G's other calls its largest calls took, where G's calls
    (not counting its lazy steps) took two sizes, one a multiple of the other; else 1."""
    rows = {len(z[0]) for (z, _), lazy in zip(data.zs, data.lazy, strict=True) if not lazy}
    if len(rows) != 2:
        return 1
    small, large = sorted(rows)
    return large // small if large % small == 0 else 1


def _interval(at: list[int], role: str, what: str) -> int | str:
    """The interval of ``role``'s steps of its own (``what``), from the iterations
    ``at`` they ran in: every k-th from the first; or why it does not show."""
    gaps = {b - a for a, b in zip(at, at[1:], strict=False)}
    if len(at) < 2 or len(gaps) != 1 or at[0] != 0:
        return (
            f"{role}'s steps of its own ({what}) ran at iteration(s) {at}: its interval "
            "shows from two of them, the first at iteration 0; verify more iterations"
        )
    return gaps.pop()


def _label(schedule: tuple[str, bool], candidate: Candidate) -> str:
    extra = "" if candidate.l1 is None else f" l1={candidate.l1}"
    if candidate.classifier is not None:
        extra += " class terms G {} D {}".format(*candidate.classifier)
    if candidate.fake_class is not None:
        extra += " class terms D {1} (fakes: class {0})".format(*candidate.fake_class)
    if candidate.accumulate > 1:
        extra += f" accumulate={candidate.accumulate}"
    if candidate.style_mixing is not None:
        extra += f" style_mixing={candidate.style_mixing}"
    if candidate.path_length is not None:
        extra += " path_length={}/{}".format(*candidate.path_length)
    if candidate.pull_away is not None:
        extra += f" pull_away={candidate.pull_away}"
    if candidate.drift is not None:
        extra += f" drift={candidate.drift}"
    extra += "".join(f" {_term_name(k)}={_weight_text(w)}" for k, w in candidate.g_fit)
    return (f"{schedule[0]}, {candidate.objective} d_scale={candidate.d_scale} "
            f"g_scale={candidate.g_scale}{extra}")  # fmt: skip


def _then(first: list, more: Callable[[], list]) -> Iterator:
    """``first``'s items, then those of ``more()`` asked when ``first`` is done."""
    yield from first
    yield from more()


def _search(script: _Script, capture: Capture, data: Replay, report, n: int,
            tried: list[tuple], tolerance: float, vary: bool = True,
            ignore: frozenset[str] = frozenset()) -> Port:  # fmt: skip
    """Every candidate run (where none equals, then the rounding variants of those that
    part by little, the penalty forms of the WGAN-GP ones, :func:`penalty_forms`, and the
    two-sided label smoothing of NS's smoothed ones, :func:`two_sided_variants`);
    the one that equals the script printed (with ``vary``, its rounding variant where
    that is nearer still), or none where none does, or where several do (the iterations
    verified cannot tell them apart)."""
    parted, equal, states, logged, raised, near, forms = [], [], {}, {}, [], [], []
    for schedule, candidate in _then(tried, lambda: [] if equal else near + forms):
        label = _label(schedule, candidate)
        if candidate.parted:  # its D steps parted in a probe of G's terms (_fit_terms)
            parted.append(f"{label}: {candidate.parted}")
            continue
        states[label], logged[label] = [], []
        try:
            gap, where = _run(script, capture, data, schedule, candidate, n, tolerance,
                              objective_states=states[label], logged=logged[label],
                              ignore=ignore)  # fmt: skip
        except Exception as e:  # a candidate the script's models refuse: not it
            # the same refusal by each objective is one error, whichever names itself
            error = re.sub(r"objective '\w*' ", "each objective ", f"{type(e).__name__}: {e}")
            raised.append(error.splitlines()[0])
            parted.append(f"{label}: {type(e).__name__}: {e}".splitlines()[0])
            continue
        if gap <= tolerance:
            equal.append((gap, schedule, candidate, label))
        else:
            parted.append(f"{label}: {where}")
            if gap <= ROUNDING_GAP:
                near.extend((schedule, v) for v in rounding_variants(candidate))
            forms.extend((schedule, v) for v in penalty_forms(candidate))
            forms.extend((schedule, v) for v in two_sided_variants(candidate))
    equal = _fewest_passes(equal, data.image_to_image)
    told = (_told_apart(equal, states, capture, data.ends, tolerance)
            or _told_apart_by_losses(equal, logged, data.losses))  # fmt: skip
    if told is not None:
        told_from, (equal, how) = len(equal), ([told[0]], told[1])
    if len(equal) == 1:
        gap, schedule, candidate, _ = equal[0]
        if gap > 0 and vary:  # its form rounding as the script's, where one is (BCEWithLogitsLoss)
            gap, candidate = _nearer_variant(script, capture, data, schedule, candidate, n,
                                             tolerance, gap, ignore)  # fmt: skip
        note = [] if report.error is None else [
            f"verified over the {n} iteration(s) before the script's loop crashed"]  # fmt: skip
        if told is not None:
            note.append(f"{told_from} candidates equal the script in its models; {how}")
        outside = sum(len(calls) for calls in data.after)
        if outside:
            note.append(f"the script's {outside} call(s) of G or D outside its update (a "
                        "sample, a log) were made on the copies too, where it made them (in "
                        "training mode they move BatchNorm's statistics): keep them in the "
                        "loop")  # fmt: skip
        code = _code(script, schedule, candidate, data)
        failed = _fails_beside(code, script, data, schedule, candidate)
        if failed:
            note.append(f"the code below was verified as a Step, but as printed it failed "
                        f"beside the script's names ({failed}): please report it")  # fmt: skip
        return Port(code, n, gap, note, chosen=(schedule, candidate))
    if equal:
        more = ("the script's loop crashed after them: fix it to verify more" if report.error
                else "verify more iterations")  # fmt: skip
        return Port(None, n, notes=[f"{len(equal)} Steps equal the script over {n} "
                                    f"iteration(s), {TIED} ({more}):",
                                    *(e[3] for e in equal)])  # fmt: skip
    if len(set(raised)) == 1 and len(raised) == len(parted):  # the inputs, not the losses
        return Port(None, n, notes=[
            f"every Step tried raised the same error on the script's models and inputs "
            f"({raised.pop()}): not mapped", TRIED, *parted])  # fmt: skip
    if len(set(raised)) == 1 and len(raised) > len(parted) / 2:  # (a D the others refuse)
        ran = len(parted) - len(raised)
        return Port(None, n, notes=[
            f"every Step tried but {ran} raised the same error on the script's models and "
            f"inputs ({raised.pop()}), and those {ran} part from the script: not mapped",
            TRIED, *parted])  # fmt: skip
    return Port(None, n, notes=[TRIED, *parted])


def _nearer_variant(script: _Script, capture: Capture, data: Replay, schedule: tuple,
                    candidate: Candidate, n: int, tolerance: float, gap: float,
                    ignore: frozenset[str] = frozenset()) -> tuple[float, Candidate]:  # fmt: skip
    """The (gap, candidate) of the chosen Step's rounding variant where it parts from the
    script by less than the chosen one (NS() within tolerance, its BCEWithLogitsLoss
    form to the bit); else the chosen one's."""
    for variant in rounding_variants(candidate):
        try:
            found, _ = _run(script, capture, data, schedule, variant, n, tolerance,
                            objective_states=[], logged=[], ignore=ignore)  # fmt: skip
        except Exception:  # a variant the script's models refuse: not it
            continue
        if found < gap:
            return found, variant
    return gap, candidate


def _fewest_passes(equal: list[tuple], image_to_image: bool = False) -> list[tuple]:
    """``equal`` less each ``d_first`` Step that makes G's first fakes anew from the D
    step's z (``reuse_fake=False`` with ``reuse_z`` or ``g_steps_share_z``; or from the
    same source, ``image_to_image``) whose candidate equals too with G's step reusing
    the D step's fakes: a G that draws nothing and keeps no statistics computes the same
    fakes twice from one input, so the Step that makes them once is the script's update
    with a forward and a backward of G fewer."""

    def once(code: str) -> str:  # the same Step reusing the D step's fakes
        code = re.sub(r", reuse_z=True|reuse_z=True, |reuse_z=True", "", code)
        return re.sub(r", reuse_fake=False|reuse_fake=False, |reuse_fake=False", "", code)

    def remakes(code: str) -> bool:
        return (code.startswith("d_first(") and "reuse_fake=False" in code
                and ("reuse_z=True" in code or "g_steps_share_z=True" in code
                     or image_to_image))  # fmt: skip

    def chosen(candidate: Candidate) -> str:  # its objective, scales and terms
        return _label(("", False), candidate)

    kept = {(code, chosen(c)) for _, (code, per_batch), c, _ in equal if not per_batch}
    return [e for e in equal if not (remakes(e[1][0]) and not e[1][1]
                                     and (once(e[1][0]), chosen(e[2])) in kept)]  # fmt: skip


def _told_apart(equal: list[tuple], states: dict[str, list[dict]], capture: Capture,
                ends: list[int], tolerance: float) -> tuple | None:  # fmt: skip
    """Of several candidates equal in the models, the one whose objective's state (BEGAN's
    k, which its gamma moves) a global of the script holds at every iteration's end, with
    that global as its ``state_in``, and the note saying so; None where not exactly one
    does."""
    if len(equal) < 2:
        return None
    kept = []
    for gap, schedule, candidate, label in equal:
        names = _kept_by_script(states[label], capture, ends, tolerance)
        if names:
            why = (f"{candidate.why}; its state equals the script's {names[0]} at each "
                   "iteration's end")  # fmt: skip
            kept.append((gap, schedule, replace(candidate, state_in=names[0], why=why), label))
    if len(kept) != 1:
        return None
    return kept[0], (f"their objective's state told them apart: this one's equals the "
                     f"script's global {kept[0][2].state_in} at each iteration's end")  # fmt: skip


def _told_apart_by_losses(equal: list[tuple], logged: dict[str, list],
                          losses: list[dict]) -> tuple | None:  # fmt: skip
    """Of several candidates equal in the models, the one whose every logged L_D and L_G
    is a loss the script backpropagated for a step of D or G in that iteration (hinge
    and Wasserstein() give D the same gradients while every score is inside the hinge's
    margin, and their L_D differ by 2 there), and the note saying so; None where not
    exactly one is."""
    if len(equal) < 2:
        return None
    kept = [entry for entry in equal if _losses_taken(logged[entry[3]], losses)]
    if len(kept) != 1:
        return None
    gap, schedule, candidate, label = kept[0]
    why = f"{candidate.why}; its losses are the values the script backpropagated"
    return (gap, schedule, replace(candidate, why=why), label), (
        "their loss values told them apart: this one's L_D and L_G are the values the "
        "script's backward passes took at each iteration"
    )


def _losses_taken(logged: list[list[dict[str, float]]], losses: list[dict]) -> bool:
    """Whether each loss in ``logged`` (a list of the Step's calls' logs an iteration) is
    one the script took for a step of that role in that iteration, where it is known."""
    for calls, script in zip(logged, losses, strict=False):
        for logs in calls:
            for key, role in (("loss_d", "D"), ("loss_g", "G")):
                theirs = script.get(role) or [None]
                if (
                    key in logs
                    and None not in theirs
                    and not any(
                        abs(logs[key] - v) <= LOSS_TOLERANCE * max(1.0, abs(v)) for v in theirs
                    )
                ):
                    return False
    return True


def _kept_by_script(states: list[dict], capture: Capture, ends: list[int],
                    tolerance: float) -> list[str]:  # fmt: skip
    """The script's number globals equal to the objective's one number of state at each
    iteration's end (none where that state is 0 throughout: a 0 tells nothing)."""
    values = [_number_state(state) for state in states]
    if not values or None in values or not any(values):
        return []
    seen = [_numbers_at(capture, end) for end in ends[: len(values)]]
    return sorted(name for name in seen[0] if all(
        name in numbers and _relative_gap(v, numbers[name]) <= tolerance
        for v, numbers in zip(values, seen, strict=True)))  # fmt: skip


def _number_state(state: dict) -> float | None:
    """An objective's one number of state (BEGAN's ``k``), or None."""
    if len(state) == 1:
        (value,) = state.values()
        if isinstance(value, Tensor) and value.numel() == 1:
            return float(value)
    return None


def _numbers_at(capture: Capture, end: int) -> dict[str, float]:
    """The script's number globals after its ``end`` optimizer steps: as the next step
    found them, or where its run ended."""
    return capture.numbers.get(end, capture.numbers_end)


def _relative_gap(ours: float, theirs: float) -> float:
    """Relative to the script's value, or to 1e-3 below it (BEGAN's k starts near 0)."""
    return abs(ours - theirs) / max(abs(theirs), 1e-3)


def _classifier_unmapped(outputs: object, data: Replay) -> str | None:
    """Why a D returning more than its scores is not mapped as ACGAN's (its scores and
    class logits, G given the fakes' labels, D called D(x) on real batches whose labels
    its DataLoader gave), or None where it is."""
    head = "D returns more than its scores (a tuple or list)"
    if not (
        isinstance(outputs, (tuple, list))
        and len(outputs) == 2
        and all(isinstance(o, Tensor) for o in outputs)
        and outputs[1].dim() == 2
    ):
        return (f"{head}, not (scores, class logits): the loss terms of its other outputs "
                "are not mapped")  # fmt: skip
    acgan = (data.conditional and not data.d_conditional
             and not data.zs[0][0][1].is_floating_point())  # fmt: skip
    if not (acgan or not data.conditional and not data.image_to_image):
        return (f"{head}: its class output is mapped where G alone takes the fakes' labels "
                "(ACGAN's G(z, labels), D(x)) or none (SGAN's G(z), the fakes a class of "
                "their own), not here")  # fmt: skip
    if any(label is None for it in data.labels for label in it):
        mapped = ("" if acgan else " (G takes none: SGAN's class output, the fakes a class "
                  "of their own)")  # fmt: skip
        return (
            f"{head}: the real batches' labels were not found beside them in a "
            f"DataLoader's batches, so its class loss on them is not mapped{mapped}"
        )
    top = max(int(label.max()) for it in data.labels for label in it)
    if not acgan and top >= outputs[1].shape[1] - 1:
        return (f"{head}: its class output has {outputs[1].shape[1]} columns and the real "
                f"labels reach {top}, so no last class is left for the fakes (SGAN's): "
                "not mapped")  # fmt: skip
    return None


def _l1(view) -> Tensor:
    """pix2pix's pixelwise term: L1 of G's output to the real target."""
    return torch.nn.functional.l1_loss(view.fake.x, view.real.x)


def _clip(D: nn.Module, end: dict[str, Tensor]) -> float | None:
    """The bound D's weights end clamped to, where a tenth of them and at least two sit
    on it (WGAN's clipping leaves most there; the largest of a few weights alone is no
    bound), rounded to 6 digits; else None."""
    names = {name for name, _ in D.named_parameters()}
    weights = torch.cat([v.detach().reshape(-1).abs().float() for k, v in end.items()
                         if k in names])  # fmt: skip
    if weights.numel() == 0:
        return None
    bound = float(weights.max())
    at_bound = weights == weights.max()
    on_it = float(at_bound.float().mean())
    return float(f"{bound:.6g}") if on_it > 0.1 and at_bound.sum() >= 2 and bound > 0 else None


def _code(script: _Script, schedule: tuple[str, bool], candidate: Candidate,
          data: Replay) -> str:  # fmt: skip
    """The Step as code a person pastes into the script, a comment per choice (the
    draws described from what the script drew: its own draws were replayed)."""
    if data.g_named is not None:
        sources = (
            f"    latent=None,  # G's inputs are data the script gives it ({data.g_named[1]}): "
            "no z\n"
            '    condition="real",  # each fake made from its real batch\'s G inputs\n'
            "    d_conditional=False,  # D is called D(x): G alone takes them"
        )
    elif data.g_given is not None:
        real, g_in = data.g_given
        sources = (
            f"    latent=None,  # G's one input is each DataLoader batch's {g_in}, beside the "
            f"real batch at {real}: no z\n"
            '    condition="real",  # each fake made from its real batch\'s input\n'
            "    d_conditional=False,  # D is called D(x): G alone takes it"
        )
    elif data.g_from_real is not None:
        sources = (
            f"    latent=None,  # G's one input is {data.g_from_real}(real_batch), as the "
            "script makes it: no z\n"
            '    condition="real",  # each fake made from its real batch\'s input\n'
            "    d_conditional=False,  # D is called D(x): G alone takes it"
        )
    elif data.image_to_image:
        sources = (
            "    latent=None,  # G's one input is the source of the real pair: no z\n"
            '    condition="real",  # each fake made for its real pair\'s source'
        )
    elif data.styles:
        sources = _styles_line(data, script.namespace)
    elif data.tuple_latent:
        sources = _tuple_latent_line(data, "latent")
    else:
        sources = _latent_line(data.zs[0][0][0])
    make = candidate.objective.split("(")[0]
    names = script.names
    code, per_batch = schedule
    where = ("the script's n_critic loop: G on every k-th batch from the first, on the same z"
             if per_batch else "the audit's update order")  # fmt: skip
    if "g_steps_share_z=True" in code:
        where += "; each G step on the D step's z, as the script"
    elif "reuse_z=True" in code and not per_batch:
        where += "; G's step makes its fakes anew from the D step's z, as the script does"
    elif "reuse_fake=False" in code and not per_batch:
        where += "; G's step on a z of its own, as the script draws one"
    if "fresh_real=True" in code:
        where += ", and on a real batch of its own"
    times = re.search(r"g_batch=(\d+)", code)
    if times:
        where += f", of {times[1]} times the D step's rows"
    each = "real batch" if per_batch else "iteration"
    labelled = data.d_conditional or candidate.classifier is not None
    batch = "(real_batch, its_labels)" if labelled else "real_batch"
    if candidate.fake_class is not None:
        batch = '{"x": real_batch, "label": its_labels}'
    if data.image_to_image:
        batch = "(target_batch, source_batch)"
    if data.g_from_real is not None:
        batch = f"(real_batch, {data.g_from_real}(real_batch))"
    if data.g_given is not None:
        batch = "(batch{}, batch{})".format(*data.g_given)
    if data.g_named is not None:
        batch = f"(real_batch, ({', '.join(data.g_named[0])}))"
    if data.coupled is not None:  # each domain's real batch, joined as EachDomain splits them
        joined = ", ".join(f"real_batch_{i + 1}" for i in range(len(data.coupled)))
        batch = f"torch.cat(({joined}), 1)"
    call, k = f"step({batch})", _schedule(code).real_batches
    if _one_batch_for_d_steps(data, per_batch, k):
        call = f"step([{batch}] * {k})  (the script's one real batch for each of its {k} D steps)"
    elif k is None:
        counts = sorted({len(reals) for reals in data.reals})
        call = (f"step([{batch}, ...])  (the iteration's real batches, one D step each: "
                f"{' or '.join(map(str, counts))} in the iterations audited)")  # fmt: skip
    elif k > 1 and not per_batch:
        own = ", then G's step's own" if "fresh_real=True" in code else ""
        call = f"step([{batch}, ...])  ({k} real batches: one per D step{own})"
    g, d, wrapper = names["G"], names["D"], ""
    if data.embedding is not None:
        g, wrapper = f"GOfLabels({g})", _wrapper(data.embedding)
    if data.g_join is not None or data.g_listed:
        name, text = _g_wrapper(data)
        g, wrapper = f"{name}({g})", wrapper + text
    if data.d_pair is not None:
        d, wrapper = f"PairedD({d})", wrapper + _pair_wrapper(data.d_pair[0])
    if data.coupled is not None:  # G's images of each domain, D on them together
        g, d = f"BothDomains({g})", f"EachDomain({d}, {data.coupled})"
        wrapper += BOTH_DOMAINS
        call += "  (the real batches D was given together, joined along the channels)"
    if data.d_fill is not None:
        d, wrapper = f"FilledD({d})", wrapper + _fill_wrapper(*data.d_fill)
        call += "  (its labels as G is given them; FilledD fills them for D)"
    if data.d_scales:
        d, wrapper = f"ScalesD({d})", wrapper + SCALES_WRAPPER
    if data.staged:  # ProGAN's alpha and step, given anew each iteration
        g, d, wrapper, call = _staged_code(data, g, d, wrapper, call)
    features = next((key for key, _ in candidate.g_fit if _term_name(key) == FEATURES), None)
    if features is not None:
        wrapper += f"\n{_feature_matching(features)}\n\n"
    if candidate.style_mixing is not None:
        g = f"StyleMixedG({g}, {candidate.style_mixing})"
        wrapper = _mixing_wrapper(*data.g_parts)
    if make in PRINTED_OBJECTIVES:  # an objective of the user's own, printed
        make, text = PRINTED_OBJECTIVES[make]
        wrapper += f"\n{text}\n\n"
    regularizer = ("" if candidate.path_length is None
                   else "from ganstep.engine.regularizers import PathLength\n")  # fmt: skip
    views_import = "" if candidate.pull_away is None else "from ganstep.engine import views\n"
    if features is not None:
        mark = "reads_d_step_real" if features == FEATURES_D_STEP else "reads_real"
        views_import += f"from ganstep.engine.views import {mark}\n"
    frozen = [names[r] for r, m in (("G", script.G), ("D", script.D))
              if not all(p.requires_grad for p in m.parameters())]  # fmt: skip
    if frozen:  # StyleGAN2-ADA builds them so; BigGAN toggles them in its step
        wrapper += "".join(f"{name}.requires_grad_(True)\n" for name in frozen) + (
            "# (the script switches their gradients off between its phases; the Step needs "
            "them on, and takes only G's gradients in G's step itself)\n\n"
        )
    return (
        ("import random\n\n" if data.styles else "")
        + ("import numpy as np\n" if "np.random" in candidate.objective else "")
        + f"from ganstep import Step, {code.split('(')[0]}\n{views_import}"
        f"from ganstep.engine.objectives import {make}\n{regularizer}\n{wrapper}"
        f"step = Step(\n"
        f"    {g}, {d}, {names['opt_g']}, {names['opt_d']},\n"
        f"    objective={candidate.objective},  # {candidate.why}\n"
        f"    schedule={code},  # {where}\n"
        f"{sources}"
        f"{_options(candidate, data, names['G'], names.get('opt_info', 'opt_info'))}\n"
        f")\n"
        f"# then, in place of the script's update, once per {each}: {call}"
    )


def _options(candidate: Candidate, data: Replay, g_name: str = "G",
             opt_info: str = "opt_info") -> str:  # fmt: skip
    """The Step's lines after its sources: conditions, terms, D's calls, loss scales."""
    more = ""
    if data.image_to_image and candidate.l1 is not None:
        more += f"\n    g_terms={{{_l1_entry(candidate.l1)}}},  # G's L1 to the target"
    if tuple(key for key, _ in candidate.g_fit) == ("l1",):  # one line, as a chosen weight's
        more += (f"\n    g_terms={{{_l1_entry(_weight_text(candidate.g_fit[0][1]))}}},  # G's L1 "
                 f"to the target, weighted as {candidate.fitted_on} first G gradient "
                 "says")  # fmt: skip
    elif candidate.g_fit:
        more += f"\n    g_terms={{  # weights as {candidate.fitted_on} first G gradient says"
        more += "".join(f"\n        {_fitted_line(key, weight)}" for key, weight in candidate.g_fit)
        more += "\n    },"
    if data.coupled is not None:
        more += "\n    d_map=True,  # EachDomain's scores: one a domain, per sample"
    if data.conditional and data.condition_real:
        more += ('\n    condition="real",  # each fake made for its real batch\'s condition, as '
                 "the script makes them")  # fmt: skip
    elif data.conditional and data.g_named is None:  # (G's inputs named: in the sources)
        more += "\n    " + _condition_line(torch.cat([z[1] for z, _ in data.zs]))
        if not data.d_conditional:
            more += "\n    d_conditional=False,  # D is called D(x): G alone takes the condition"
    if candidate.pull_away is not None:
        more += (f'\n    g_terms={{"pt": ({candidate.pull_away}, views.pull_away())}},  # '
                 "EBGAN-PT's pulling-away term on D's embedding of the fakes")  # fmt: skip
    if candidate.drift is not None:
        more += (f'\n    d_terms={{"drift": ({candidate.drift}, {DRIFT_TEXT})}},  # ProGAN\'s '
                 "drift term: D's scores on the real batch, squared")  # fmt: skip
    if candidate.classifier is not None:
        g, d = candidate.classifier
        ce = "torch.nn.functional.cross_entropy"
        more += (
            f'\n    g_terms={{"aux": ({g}, lambda v: {ce}(v.d_fake[1], v.fake.c))}},'
            "  # D's class output on the fakes, to the labels G was given"
            f'\n    d_terms={{"aux_real": ({d}, lambda v: {ce}(v.d_real[1], v.real.c)),'
            f'\n             "aux_fake": ({d}, lambda v: {ce}(v.d_fake[1], v.fake.c))}},'
            "  # and in D's loss, the real batches' to their labels"
        )
    if candidate.fake_class is not None:
        terms = _fake_class_terms(candidate)
        w = candidate.fake_class[1]
        more += (
            f'\n    d_terms={{"aux_real": ({w}, {terms["aux_real"]}),'
            f'\n             "aux_fake": ({w}, {terms["aux_fake"]})}},'
            "  # D's class output: the real batches' to their labels, the fakes' to a class "
            "of their own"
        )
    if data.augment is not None:
        at = f" ({data.augment[1]})" if data.augment[1] else ""
        more += (f"\n    augment={data.augment[0]},  # the script's change of each batch in "
                 f"D's calls{at}")  # fmt: skip
    if data.concat is not None:
        first = "fakes'" if data.concat == "fake_first" else "reals'"
        joint = ('"joint",  # D is called once on the fake and real rows together, and '
                 "mixes them (its BatchNorm), as the script's call" if data.concat_joint
                 else "True,  # D is called once on the fake and real rows together")  # fmt: skip
        more += (
            f"\n    concat={joint}"
            f'\n    d_order="{data.concat}",  # the {first} rows first, as the script concatenates'
        )
    if data.concat is None and data.d_order == "fake_first":
        more += '\n    d_order="fake_first",  # D\'s step forwards the fakes first, as the script'
    if _g_between(data, candidate):
        more += ('\n    d_order="real_g_fake",  # D\'s step calls G between its forwards on the '
                 "real and the fake batch, as the script")  # fmt: skip
    if candidate.accumulate > 1:
        k = candidate.accumulate
        summed = (f"; it adds its rounds' means, so its loss weights (R1's too) read x{k} here"
                  if candidate.summed else "")  # fmt: skip
        more += (f"\n    accumulate={k},  # each step over the script's {k} rounds of a "
                 f"batch, gradients summed{summed}")  # fmt: skip
    if candidate.path_length is not None:
        weight, every = candidate.path_length
        parts = (
            ""
            if data.g_parts is None
            else ", mapping={0}.{1}, synthesis={0}.{2}".format(g_name, *data.g_parts)
        )
        if data.g_latents is not None:
            parts = f", images_and_latents={_latents_call(data, g_name)}"
        parts += "".join(f", {k}={_literal(v)}" for k, v in _path_length_rows(data).items())
        k = candidate.accumulate
        summed = f" (its {k} rounds' penalties added: x{k})" if candidate.summed else ""
        share = {1: "all", 2: "half"}.get(data.lazy_shrink, f"1/{data.lazy_shrink}")
        rows = (f"a z of its own, {share} of a round's rows" if data.lazy_drawn
                else f"{share} of each round's z")  # fmt: skip
        at = " at the latents G returns" if data.g_latents is not None else ""
        more += (f"\n    g_regularizer=PathLength({weight}, {every}{parts}),  # G's steps of "
                 f"its own every {every} G steps: path length{summed}{at}, its mean moved by "
                 f"0.01 a round, on {rows}")  # fmt: skip
    if data.d_forwards_loop:
        more += ('\n    d_forwards="loop",  # D forwarded in each phase as the script does: its '
                 "BatchNorm statistics move at each forward")  # fmt: skip
    if data.g_forwards is not None:
        shown = ", ".join(f'"{f}"' for f in data.g_forwards)
        shown += "," * (len(data.g_forwards) == 1)  # (a tuple of one)
        more += f"\n    g_forwards=({shown}),  # D forwarded in G's step as the script does"
        if data.g_forwards.count("fake") > 1:
            more += (", G's loss on the last fake one (the others' losses computed, then "
                     "replaced)")  # fmt: skip
    if data.precision != "fp32":
        at = f" ({data.autocast_at})" if data.autocast_at else ""
        more += (f'\n    precision="{data.precision}",  # G and D ran under torch.autocast '
                 f"to {DTYPE_NAMES[data.precision]}, as the script's{at}")  # fmt: skip
    if data.clips:
        hooks = ", ".join(f'"{phase}": {hook}' for phase, hook in _clip_hooks(data).items())
        lines = "; ".join(where for _, where in data.clips.values() if where)
        more += (f"\n    before_step={{{hooks}}},  # the script clips the gradients before "
                 f"each step{f' ({lines})' if lines else ''}")  # fmt: skip
    if data.info_terms:
        more += _info_lines(data, opt_info)
    if candidate.d_scale != 1.0:
        more += f"\n    d_scale={candidate.d_scale},  # the script scales D's loss by this"
    if candidate.g_scale != 1.0:
        more += f"\n    g_scale={candidate.g_scale},  # the script scales G's loss by this"
    return more


def _info_lines(data: Replay, opt_info: str = "opt_info") -> str:
    """The Step's info step as code: the script's optimizer over G and D, the fitted
    terms, and the info step's own draws where they are not G's step's."""
    lines = (f"\n    info_optimizer={opt_info},  # the script's optimizer over G's and D's "
             "parameters: InfoGAN's info step after each iteration's steps"
             "\n    info_terms={  # weights as the script's first info gradient says")  # fmt: skip
    for name, weight, text in data.info_terms:
        lines += f'\n        "{name}": ({weight!r}, {text}),'
    lines += "\n    },"
    if data.tuple_latent and _tuple_draws(data, True)[1] != _tuple_draws(data, False)[1]:
        lines += "\n" + _tuple_latent_line(data, "info_latent")
    return lines


def _fitted_line(key: str, weight: float) -> str:
    """A fitted G term's entry in the printed ``g_terms``, with a comment."""
    name, shown = _term_name(key), _weight_text(weight)
    if key == "l1":
        return f"{_l1_entry(shown)},  # G's L1 to the target"
    if name == FEATURES:
        return f'"{name}": ({shown}, feature_matching),  # D\'s features, fakes vs real ones'
    if key.startswith(CONTENT):
        network = key.split(":", 2)[2]
        return (f'"{name}": ({shown}, {_content_text(key)}),  # {network}\'s features, fakes '
                "vs the real batch's")  # fmt: skip
    return f'"{name}": ({shown}, lambda v: {key}(v.fake.x, v.real.x)),  # a frozen loss module'


def _l1_entry(weight: object) -> str:
    """pix2pix's L1 term as the printed ``g_terms`` holds it, at ``weight`` (as shown)."""
    return f'"l1": ({weight}, lambda v: torch.nn.functional.l1_loss(v.fake.x, v.real.x))'


def _weight_text(weight: float) -> str:
    """A weight as printed: its repr, or the fraction it is where that is shorter
    (``10 / 3``: a weight of 1 / num_D the script computes)."""
    shown = repr(weight)
    fraction = Fraction(weight).limit_denominator(WEIGHT_DENOMINATORS)
    if len(shown) > 8 and float(fraction) == weight:
        return f"{fraction.numerator} / {fraction.denominator}"
    return shown


def _wrapping_class(name: str, held: str, doc: str, inputs: str, returned: str) -> str:
    """The text of a module class ``name`` holding the script's G or D (``held``), whose
    forward of ``inputs`` returns ``returned``: a wrapper the port prints and makes its
    Steps from, so that the two cannot drift."""
    return (
        f"\nclass {name}(torch.nn.Module):\n"
        f'    """{doc}"""\n\n'
        f"    def __init__(self, {held}):\n"
        "        super().__init__()\n"
        f"        self.{held} = {held}\n\n"
        f"    def forward(self, {inputs}):\n"
        f"        return {returned}\n\n\n"
    )


def _wrapper(name: str) -> str:
    """The module that gives G its labels' embedding as the script does."""
    return _wrapping_class(
        "GOfLabels", "G",
        f"G(z, G.{name}(y)): G given its labels' embedding, as the script calls it.",
        "z, y", f"self.G(z, self.G.{name}(y))",
    )  # fmt: skip


STAGED_WRAPPER = '''
class AtStage(torch.nn.Module):
    """G or D called as a Step calls it (G(z), D(x)) with the plain values the script
    gives it beside its tensors (ProGAN's alpha and step), set before each call."""

    def __init__(self, net, **arguments):
        super().__init__()
        self.net, self.arguments = net, arguments

    def forward(self, *inputs):
        return self.net(*inputs, **self.arguments)


'''


def _staged_code(data: Replay, g: str, d: str, wrapper: str, call: str) -> tuple[str, ...]:
    """The printed Step's G and D, wrappers and call where the script gives G or D plain
    values beside its tensors: each an ``AtStage`` (``G_at``, ``D_at``) made with the
    first iteration's values, set to the script's before each call."""
    made, told = "", []
    for role in ("G", "D"):
        if role not in data.staged:
            continue
        first = ", ".join(f"{k}={_literal(v)}" for k, v in data.staged[role][0].items())
        made += f"{role}_at = AtStage({g if role == 'G' else d}, {first})\n"
        texts = ", ".join(f"{k}={v}" for k, v in data.staged_text[role].items())
        told.append(f"{role}_at.arguments = dict({texts})")
        g, d = ("G_at", d) if role == "G" else (g, "D_at")
    clash = any(v == "step" for texts in data.staged_text.values() for v in texts.values())
    told[-1] += " (the script's step, not this Step: rename one)" if clash else ""
    return g, d, wrapper + STAGED_WRAPPER + made + "\n", "; ".join([*told, call])


def _staged(module: nn.Module, data: Replay, role: str) -> nn.Module:
    """``module`` as an ``AtStage`` made from the very text printed, holding the plain
    values of the script's first iteration, where the script gives ``role`` some; else
    ``module``."""
    if data.staged is None or role not in data.staged:
        return module
    return _made("AtStage", STAGED_WRAPPER)(module, **data.staged[role][0])


def _d_taking(D: nn.Module, data: Replay) -> nn.Module:
    """D as the Step is given it: a ``FilledD`` made from the very text printed where the
    script fills G's condition for D, a ``PairedD`` where it joins G's source and the
    image for D, an ``EachDomain`` where it calls D on G's images of each domain together
    (:func:`_coupled`), in a ``ScalesD`` where D returns a list per scale; else D itself."""
    if data.d_pair is not None:
        D = _made("PairedD", _pair_wrapper(data.d_pair[0]))(D)
    if data.coupled is not None:
        D = _made("EachDomain", BOTH_DOMAINS)(D, data.coupled)
    if data.d_fill is not None:
        D = _made("FilledD", _fill_wrapper(*data.d_fill))(D)
    return _made("ScalesD", SCALES_WRAPPER)(D) if data.d_scales else D


def _made(name: str, text: str, **scope: object) -> type:
    """The class ``name`` that the printed ``text`` makes (a wrapper of G or D, an
    objective), among ``scope``'s names and torch."""
    made: dict = {"torch": torch, **scope}
    exec(text, made)  # noqa: S102 - ganstep's own text
    return made[name]


def _latents_call(data: Replay, g: str) -> str:
    """PathLength's ``images_and_latents`` as code: G called on z as the script called
    it in its path length steps, with the keywords that made it return its latents."""
    z = "list(z)" if data.g_listed else "*z"
    keywords = "".join(f", {k}={_literal(v)}" for k, v in (data.g_latents or {}).items())
    return f"lambda *z: {g}({z}{keywords})"


def _literal(value: object) -> str:
    """A plain value as the printed code writes it (strings in double quotes)."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _path_length_rows(data: Replay) -> dict[str, object]:
    """PathLength's ``shrink`` and ``z_draw`` where the script's differ from the defaults."""
    rows: dict[str, object] = {}
    if data.lazy_shrink != 2:
        rows["shrink"] = data.lazy_shrink
    if data.lazy_drawn:
        rows["z_draw"] = "shrunk"
    return rows


def _g_wrapper(data: Replay) -> tuple[str, str]:
    """The name and text of the module that gives G its condition joined to z, in the
    script's order (``JoinedG``), or its z in a list of one (``ListedG``)."""
    if data.g_join is None and data.styles:
        return "ListedG", _wrapping_class(
            "ListedG", "G",
            "G(*z): its one or two z in a list (two where it mixes styles), as the script "
            "calls G (rosinality's StyleGAN2).",
            "*z", "self.G(list(z))",
        )  # fmt: skip
    if data.g_join is None:
        return "ListedG", _wrapping_class(
            "ListedG", "G",
            "G([z]): z in a list of one, as the script calls G (rosinality's StyleGAN2 without "
            "style mixing).",
            "z", "self.G([z])",
        )  # fmt: skip
    joined = "[z, c]" if data.g_join[0] == "condition_last" else "[c, z]"
    return "JoinedG", _wrapping_class(
        "JoinedG", "G",
        f"G(z, c) as torch.cat({joined}, 1): the condition beside z, as the script joins them "
        "for G.",
        "z, c", f"self.G(torch.cat({joined}, 1))",
    )  # fmt: skip


def _fill_wrapper(height: int, width: int) -> str:
    """The module that gives D its condition filled over the image, as the script does."""
    return _wrapping_class(
        "FilledD", "D",
        "D(x, c) with G's condition c filled over the image: one constant map per entry, as "
        "the script fills it for D.",
        "x, c", f"self.D(x, c.reshape(c.shape[0], -1, 1, 1).expand(-1, -1, {height}, {width}))",
    )  # fmt: skip


def _pair_wrapper(order: str) -> str:
    """The module that gives D G's source (or a condition's maps) and the image joined
    along the channels, in the script's order."""
    joined = "(c, x)" if order == "source_first" else "(x, c)"
    return _wrapping_class(
        "PairedD", "D",
        f"D(x, c) as torch.cat({joined}, 1): c (a source image, or a condition's maps) beside "
        "the image in its channels, as the script joins them for D.",
        "x, c", f"self.D(torch.cat({joined}, 1))",
    )  # fmt: skip


# the module giving a Step a multi-scale D's outputs as it reads them (a list is a
# multi-scale D's predictions; a tuple's second element, extras a term reads)
SCALES_WRAPPER = """
class ScalesD(torch.nn.Module):
    \"\"\"D's outputs as (each scale's prediction, each scale's features): the script's D
    returns a list per scale, its features first and its prediction last.\"\"\"

    def __init__(self, D):
        super().__init__()
        self.D = D

    def forward(self, *inputs):
        scales = self.D(*inputs)
        return [scale[-1] for scale in scales], [scale[:-1] for scale in scales]


"""


def _mixing_wrapper(first: str, then: str) -> str:
    """The module that calls G's parts as the script does, with StyleGAN2-ADA's style
    mixing (training/loss.py's run_G): its draws, in its order, from torch's generator."""
    return (
        "\nclass StyleMixedG(torch.nn.Module):\n"
        f'    """G.{then}(ws) of ws = G.{first}(z, ...), whose entries from a random cutoff on '
        f'are, with probability p, those of G.{first} of a second z (style mixing)."""\n\n'
        "    def __init__(self, G, p):\n"
        "        super().__init__()\n"
        "        self.G, self.p = G, p\n\n"
        "    def forward(self, z, *c):\n"
        f"        ws = self.G.{first}(z, *c)\n"
        "        cutoff = torch.empty([], dtype=torch.int64, device=ws.device)"
        ".random_(1, ws.shape[1])\n"
        "        mixed = torch.rand([], device=ws.device) < self.p\n"
        "        cutoff = torch.where(mixed, cutoff, torch.full_like(cutoff, ws.shape[1]))\n"
        f"        ws[:, cutoff:] = self.G.{first}(torch.randn_like(z), *c)[:, cutoff:]\n"
        f"        return self.G.{then}(ws)\n\n\n"
    )


# the standard deviation of uniform(-1, 1)
UNIFORM_STD = 3**-0.5


def _spread_unlike(seen: Tensor, std: float) -> bool:
    """Whether the values' spread is not that of a law of standard deviation ``std``: off
    by more than a fifth and by more than 4 standard errors of a normal sample's."""
    n = seen.numel()
    return n > 1 and abs(float(seen.std()) / std - 1) > max(0.2, 4 / (2 * n) ** 0.5)


def _draw(z: Tensor) -> tuple[str, str]:
    """A draw of ``z``'s rows as code, and its law, read from the values the script drew
    (with numpy, often): uniform on [0, 1) or [-1, 1), normal (about a mean of its own
    where the values sit away from 0: infogan.py's code, normal(-1, 1); with a standard
    deviation of its own where theirs is far from 1: the 3D-GAN's normal(0, 0.33), whose
    values all lie in [-1, 1] but are not uniform there), or a float one-hot of
    classes."""
    shape = ", ".join(str(s) for s in z.shape[1:])
    if _one_hot(z):
        k, dtype = z.shape[1], str(z.dtype).removeprefix("torch.")
        return (f"torch.nn.functional.one_hot(torch.randint(0, {k}, (n,)), {k}).to(torch.{dtype})",
                f"one-hot labels of {k} classes")  # fmt: skip
    if not bool((z < 0).any()):  # [0, 1): torch.rand's
        return f"torch.rand(n, {shape})", "uniform on [0, 1)"
    seen = z.double().flatten()
    within = bool((z.abs() <= 1).all()) and z.numel() > 1
    if within and not _spread_unlike(seen, UNIFORM_STD):  # np.random.uniform(-1, 1)'s
        return f"torch.rand(n, {shape}) * 2 - 1", "uniform on [-1, 1)"
    # a mean of its own where it is 5 standard errors from 0 (a batch of 4 draws from
    # normal(0, 1) often sits 0.4 off), read to the nearest half; a spread of its own to
    # two significant figures
    error = float(seen.std() / seen.numel() ** 0.5) if seen.numel() > 1 else float("inf")
    mean = round(float(seen.mean()) * 2) / 2 if abs(float(seen.mean())) > 5 * error else 0.0
    std = float(f"{float(seen.std()):.2g}") if _spread_unlike(seen, 1.0) else 1.0
    draw, law = f"torch.randn(n, {shape})", "normal"
    if std != 1.0:
        draw, law = f"{draw} * {std:g}", f"normal with a standard deviation of {std:g}"
    if mean == 0:
        return draw, law
    shift = f"{'+' if mean > 0 else '-'} {abs(mean):g}"
    return f"{draw} {shift}", f"{law} about {mean:g}"


def _seen(z: Tensor) -> str:
    """The mean and spread of the values the script drew, as the printed comment says."""
    if z.numel() <= 1:
        return "one value"
    return f"mean {float(z.float().mean()):.2f}, std {float(z.float().std()):.2f}"


def _latent_line(z: Tensor) -> str:
    """``latent=...`` drawing G's input as the script's looked (its draws were replayed):
    its law read from their range, not the script's draw (numpy's, often), said so."""
    shape = ", ".join(str(s) for s in z.shape[1:])
    draw, law = _draw(z)
    seen = _seen(z)
    return (
        f"    latent=lambda n: {draw},  # G's input: shape (n, {shape}), {z.dtype}, {law} as "
        f"read from the script's z ({seen})"
    )


def _tuple_draws(data: Replay, info: bool) -> tuple[list[Tensor], list[tuple[str, str]]]:
    """Each of G's several inputs over its calls in G's steps (``info``: in the info
    steps), and its draw as :func:`_draw` reads it."""
    calls = [z for (z, _), here in zip(data.zs, data.info or [False] * len(data.zs),
                                       strict=True) if here == info]  # fmt: skip
    parts = [torch.cat(part) for part in zip(*calls, strict=True)]
    return parts, [_draw(t) for t in parts]


def _tuple_latent_line(data: Replay, name: str) -> str:
    """``latent=...`` (or ``info_latent=...``) drawing G's several inputs as the script's
    calls in G's step (in its info steps) looked."""
    info = name == "info_latent"
    parts, draws = _tuple_draws(data, info)
    shown = "; ".join(f"(n, {', '.join(map(str, t.shape[1:]))}) {law} ({_seen(t)})"
                      for t, (_, law) in zip(parts, draws, strict=True))  # fmt: skip
    whose = "the info step's own draws" if info else "G's inputs"
    codes = ", ".join(code for code, _ in draws)
    return (f"    {name}=lambda n: ({codes}),  # {whose}: {shown}, {parts[0].dtype}, as read "
            "from the script's")  # fmt: skip


def _styles_line(data: Replay, namespace: dict) -> str:
    """``latent=...`` drawing one or two z as rosinality's ``mixing_noise`` does (two, from
    one draw, with the mixing probability), the probability read from the script's names
    where one says so (``args.mixing``), else the share of G's calls seen mixing."""
    z = data.zs[0][0][0]
    shape = ", ".join(str(s) for s in z.shape[1:])
    mixed = sum(len(styles) > 1 for styles in data.styles)
    found = _mixing_probability(namespace)
    if found is None:
        prob, said = round(mixed / len(data.styles), 2), (
            f"the share of G's calls seen mixing, {mixed} of {len(data.styles)}: set the "
            "script's own")  # fmt: skip
    else:
        prob, said = found[1], f"the script's {found[0]}"
    return (
        f"    latent=lambda n: (tuple(torch.randn(2, n, {shape}).unbind(0)) if random.random() "
        f"< {prob} else (torch.randn(n, {shape}),)),  # G's styles: two z with probability "
        f"{prob} ({said}), else one, of shape (n, {shape}), {z.dtype}, drawn as rosinality's "
        "mixing_noise draws them"
    )


def _mixing_probability(namespace: dict) -> tuple[str, float] | None:
    """A number in [0, 1] the script names as its style mixing's (a global, or an
    attribute of its parsed arguments, whose name holds "mixing"), and that name."""
    for name, value in namespace.items():
        values = vars(value).items() if isinstance(value, argparse.Namespace) else [(None, value)]
        for attribute, v in values:
            held = f"{name}.{attribute}" if attribute is not None else name
            if "mixing" in held.split(".")[-1] and type(v) is float and 0 <= v <= 1:
                return held, v
    return None


def _condition_line(c: Tensor) -> str:
    """``condition=...`` drawing what the script's fakes were made for, as seen."""
    if not c.is_floating_point():
        low, high = int(c.min()), int(c.max())
        return (
            f"condition=lambda n: torch.randint({low}, {high + 1}, (n,)),  # G's second "
            f"input: labels from {low} to {high} (those the script drew), {c.dtype}"
        )
    shape = ", ".join(str(s) for s in c.shape[1:])
    k = c.shape[1] if c.dim() >= 2 else 0
    # a class one-hot, as G's input (n, k) or an image's (n, k, 1, 1)
    if k > 1 and c.numel() == c.shape[0] * k and _one_hot(c.reshape(c.shape[0], k)):
        labels = c.reshape(c.shape[0], k).argmax(1)
        low, high = int(labels.min()), int(labels.max())
        dtype = str(c.dtype).removeprefix("torch.")
        return (
            f"condition=lambda n: torch.nn.functional.one_hot(torch.randint({low}, "
            f"{high + 1}, (n,)), {k}).to(torch.{dtype}).reshape(n, {shape}),  # G's second "
            f"input: one-hot labels of {k} classes ({low} to {high} seen in the script's "
            "draws)"
        )
    if c.numel() == 0:  # no label at all (StyleGAN2-ADA's unconditional c)
        return f"condition=lambda n: torch.zeros(n, {shape}),  # G's second input: empty, as given"
    return (
        f"condition=lambda n: ...,  # G's second input: shape (n, {shape}), {c.dtype}: "
        "draw it as the script does"
    )
