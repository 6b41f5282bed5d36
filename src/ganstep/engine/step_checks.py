"""The checks of Step's arguments, each raising an error that names the argument and
what to give instead; run once, when the Step is built."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from . import distributed as data_parallel
from .checks import flag
from .game import D_FORWARDS, D_ORDERS
from .objectives import Objective, has_penalty
from .precision import Precision
from .regularizers import Regularizer
from .schedules import Simultaneous
from .sides import Side, trainable
from .views import any_reads_d_step_real, any_reads_real, normalize_terms


def check_optimizer(opt: object, module: nn.Module, own: str, other: nn.Module) -> None:
    other_name = "D" if own == "G" else "G"
    arg = f"opt_{own.lower()}"
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"{arg} must be a torch.optim.Optimizer, got {type(opt).__name__}")
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    stolen = [name for name, p in other.named_parameters() if id(p) in held]
    if stolen:
        raise ValueError(
            f"{arg} holds {other_name}'s parameters ({', '.join(stolen[:3])}): "
            "were opt_g and opt_d swapped?"
        )
    missing = [
        name for name, p in module.named_parameters() if p.requires_grad and id(p) not in held
    ]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ValueError(
            f"{arg} does not hold {own}'s trainable parameters {', '.join(missing[:3])}{more}; "
            f"build it from {own}.parameters()"
        )


def outside_params(opt: torch.optim.Optimizer, G: nn.Module,
                   D: nn.Module) -> tuple[nn.Parameter, ...]:  # fmt: skip
    """The parameters ``opt`` holds that are neither G's nor D's (a head a side's loss
    terms call: InfoGAN's Q head beside D's body, which Natsu6767's ``optimG`` holds with
    G's), in the optimizer's order: that side's backward passes add to them too."""
    ours = {id(p) for p in (*G.parameters(), *D.parameters())}
    return tuple(p for group in opt.param_groups for p in group["params"] if id(p) not in ours)


def check_outside(g_outside: tuple[nn.Parameter, ...], d_outside: tuple[nn.Parameter, ...]) -> None:
    """Refuse a parameter beside G and D that both optimizers hold: each side's step
    would move it, on gradients each side's backward adds to it."""
    shared = {id(p) for p in g_outside} & {id(p) for p in d_outside}
    if shared:
        raise ValueError(
            f"opt_g and opt_d both hold {len(shared)} parameter(s) of neither G nor D: each "
            "side's step would move them. Give such a module (a head a loss term calls) to "
            "the optimizer of the side whose loss trains it"
        )


def check_compile_fits(compile: object, objective: Objective) -> None:
    """torch.compile's autograd (AOTAutograd) has no double backward, which gradient
    penalties take. A penalty on D forwards of its own (lazy R1, WGAN-GP's, G's path
    length) runs them on the uncompiled module, as R1 on every step runs D's loss forward
    on the real batch (``Game.real_forward_eager``); one that reads both loss forwards
    (``penalty_at="loss_forwards"``) would leave nothing of D's step compiled: refuse it
    now rather than at the first penalty, after compiling."""
    if compile is False or compile == "eager":
        return
    if objective.penalty_at == "loss_forwards" and has_penalty(objective):
        raise ValueError(
            f"compile={compile!r}: torch.compile does not support the double backward that "
            f"{objective.name}'s penalty on D's loss forwards takes; use penalty_at='after' "
            "(its own forwards, run uncompiled), compile=False or the 'eager' backend"
        )


def check_models(G: object, D: object, opt_g: object, opt_d: object) -> None:
    for arg, module in (("G", G), ("D", D)):
        if not isinstance(module, nn.Module):
            raise TypeError(f"{arg} must be a torch.nn.Module, got {type(module).__name__}")
        if not trainable(module):
            raise ValueError(f"{arg} has no trainable parameters")
    if G is D:
        raise ValueError("G and D must be two different modules")
    check_apart(G, D, "G", "D")
    check_apart(D, G, "D", "G")
    check_optimizer(opt_g, G, "G", D)
    check_optimizer(opt_d, D, "D", G)


def check_apart(outer: nn.Module, inner: nn.Module, name: str, other: str) -> None:
    """Refuse a side that holds the other's parameters (a module wrapping G and D): its
    optimizer check would ask for the other's parameters in its optimizer."""
    mine = {id(p) for p in outer.parameters()}
    shared = [n for n, p in inner.named_parameters() if id(p) in mine]
    if not shared:
        return
    path = next((n for n, m in outer.named_modules() if m is inner), None)
    held = f"{name}.{path} is {other}" if path else f"{name} holds {other}'s {shared[0]}"
    raise ValueError(
        f"{name} contains {other}'s parameters ({held}): a module wrapping both, such as "
        f"BigGAN's G_D, cannot be one side. Pass the {name} inside it, whose parameters "
        f"opt_{name.lower()} holds, and {other} apart"
    )


def check_sources(latent: object, condition: object) -> None:
    """Where z and the fakes' conditions come from."""
    if latent is not None and not callable(latent):
        raise TypeError(f"latent must be callable as latent(n), got {type(latent).__name__}")
    if latent is not None and not _takes_one_argument(latent):
        raise TypeError(
            "latent must take the batch size: latent(n) returns n z, e.g. "
            "lambda n: torch.randn(n, dim)"
        )
    if condition is not None and condition != "real" and not callable(condition):
        raise ValueError(
            f"condition must be None, 'real' or a sampler condition(n), got {condition!r}"
        )
    if latent is None and condition is None:
        raise ValueError(
            "latent=None means G takes no z (image-to-image, G(c)): give it a condition, "
            "e.g. condition='real' for pix2pix's source images"
        )


def check_d_arity(D: nn.Module, condition: object, d_conditional: object) -> None:
    """A conditional Step calls D(x, c), or D(x) with ``d_conditional=False``: say which
    D's ``forward`` takes before a raw TypeError from inside the first step does."""
    try:
        signature = inspect.signature(D.forward)
    except (TypeError, ValueError):  # no signature to read: the first call will tell
        return
    if condition is None or not isinstance(d_conditional, bool):
        return
    takes = lambda *args: _binds(signature, args)  # noqa: E731
    if d_conditional and not takes(0, 0) and takes(0):
        given = f"condition={condition!r}" if isinstance(condition, str) else "a condition sampler"
        raise ValueError(
            f"this Step is conditional ({given}) and calls D(x, c), but D's "
            f"forward{signature} takes x alone: pass d_conditional=False when G alone takes "
            "the condition and D predicts it (ACGAN, InfoGAN), or give D the condition"
        )
    if not d_conditional and not takes(0) and takes(0, 0):
        raise ValueError(
            f"d_conditional=False calls D(x), but D's forward{signature} needs the condition "
            "too: leave d_conditional=True to call D(x, c)"
        )


def _binds(signature: inspect.Signature, args: tuple) -> bool:
    try:
        signature.bind(*args)
    except TypeError:
        return False
    return True


def _takes_one_argument(fn: Callable) -> bool:
    """Whether ``fn(n)`` binds (True where Python cannot tell, e.g. some builtins)."""
    try:
        inspect.signature(fn).bind(1)
    except TypeError:
        return False
    except ValueError:  # no signature to read
        return True
    return True


def check_g_regularizer(regularizer: object, latent: object) -> Regularizer | None:
    if regularizer is None:
        return None
    if not isinstance(regularizer, Regularizer) or regularizer.side != "G":
        raise TypeError(
            f"g_regularizer must be a G-side regularizer such as ganstep.engine.regularizers."
            f"PathLength(), got {regularizer!r}"
        )
    if latent is None:
        raise ValueError("g_regularizer draws z for its phase: it needs a latent")
    return regularizer


# concat's names: "auto" (once where that is the loop's math), "joint" (once whatever D is)
CONCATS = ("auto", "joint")


def check_options(
    concat,
    distributed,
    check_finite,
    d_order,
    d_forwards,
    d_map,
    d_conditional,
    fake_pool,
    condition,
):
    if fake_pool is not None and condition is not None:
        raise ValueError(
            "fake_pool keeps fake samples without their conditions: it works with "
            "unconditional batches (condition=None)"
        )
    said = False if distributed is None else distributed  # None: not said (see Step)
    if not (isinstance(concat, bool) or isinstance(concat, str) and concat in CONCATS):
        raise TypeError(f'concat must be True, False, "auto" or "joint", got {concat!r}')
    flags = {"distributed": said, "d_map": d_map, "check_finite": check_finite,
             "d_conditional": d_conditional}  # fmt: skip
    for name, value in flags.items():
        flag(value, name, TypeError)
    if d_order not in D_ORDERS:
        raise ValueError(f"d_order must be one of {D_ORDERS}, got {d_order!r}")
    if d_forwards not in D_FORWARDS:
        raise ValueError(f"d_forwards must be one of {D_FORWARDS}, got {d_forwards!r}")
    if check_finite and distributed:
        raise ValueError(
            "check_finite=True with distributed=True would stop one process and leave "
            "the others waiting in a collective; check the losses Step returns instead"
        )
    if distributed and not data_parallel.active():
        raise ValueError(
            "distributed=True needs torch.distributed's default process group with more "
            "than one process: call torch.distributed.init_process_group first (torchrun "
            "sets up its environment)"
        )


G_FORWARDS = ("real", "fake")


def check_g_forwards(g_forwards: object, objective: Objective,
                     g_terms: dict) -> tuple[str, ...] | None:  # fmt: skip
    """``g_forwards`` as a tuple of ``"real"`` and ``"fake"`` with a ``"fake"`` (L_G's)
    and a ``"real"`` where L_G reads D on the real batch; ``None`` passes through."""
    needs_real = objective.g_needs_real or any_reads_real(g_terms)
    if g_forwards is None:
        return None
    if isinstance(g_forwards, str) or not isinstance(g_forwards, (tuple, list)):
        raise TypeError(
            f'g_forwards must be a tuple of "real" and "fake", such as ("real", "fake", '
            f'"fake"), got {g_forwards!r}'
        )
    forwards = tuple(g_forwards)
    unknown = [f for f in forwards if f not in G_FORWARDS]
    if unknown:
        raise ValueError(f'g_forwards holds "real" and "fake" only, got {unknown[0]!r}')
    if "fake" not in forwards:
        raise ValueError('g_forwards needs a "fake" forward: L_G reads D on the fakes')
    if needs_real and "real" not in forwards:
        raise ValueError(
            'g_forwards needs a "real" forward: the objective (or a reads_real term) reads D '
            "on the real batch in G's loss"
        )
    return forwards


def loss_terms(g_terms: object, d_terms: object) -> tuple[dict, dict]:
    """G's and D's terms, normalized; a name in both is refused, since an iteration's
    logs keep one value per name."""
    g_terms, d_terms = normalize_terms(g_terms, "g_terms"), normalize_terms(d_terms, "d_terms")
    shared = sorted(set(g_terms) & set(d_terms))
    if shared:
        raise ValueError(
            f"g_terms and d_terms both name {shared}: an iteration's logs keep one value "
            "per name, so one would hide the other; name them apart (g_cls, d_cls)"
        )
    return g_terms, d_terms


def check_objective_fits(
    objective: Objective, accumulate: int, g_terms: dict, g_scale: object
) -> None:
    """What the objective rules out: accumulation of batch-coupled losses, and G terms
    or a G scale for BEGAN (whose k_t reads L_G itself)."""
    if accumulate > 1 and objective.batch_coupled is not None:
        raise ValueError(
            f"accumulate={accumulate} sums micro-batches' gradients, which equals the "
            f"whole batch's only for losses that are means over samples; objective "
            f"{objective.name!r} is not ({objective.batch_coupled}): use "
            "accumulate=1"
        )
    if (g_terms or g_scale != 1) and objective.name == "began":
        raise ValueError("began's k_t reads L_G itself: extra G terms or a g_scale would change it")
    if any_reads_d_step_real(g_terms) and (objective.g_needs_real or any_reads_real(g_terms)):
        why = ("objective " + repr(objective.name) + " reads D's real scores in L_G"
               if objective.g_needs_real else "a term marked reads_real reads it too")  # fmt: skip
        raise ValueError(
            "a G term marked reads_d_step_real reads D's output on the real batch from D's "
            f"step, and {why}, from a forward in G's phase: G's loss reads it from one place"
        )


def check_d_order_fits(d_order: str, concat: object, accumulate: int,
                       objective: Objective) -> None:  # fmt: skip
    """What ``d_order="real_g_fake"`` (G called between D's two forwards) rules out:
    one D call on both batches, z drawn for a whole batch before its micro-batches, and
    a penalty on the fakes run before D's loss forwards."""
    if d_order != "real_g_fake":
        return
    clash = None
    if concat is True or concat == "joint":
        clash = (f"concat={concat!r} forwards D once on both batches: use concat=False (or "
                 '"auto")')  # fmt: skip
    elif accumulate > 1:
        clash = (f"accumulate={accumulate} draws z for the whole batch before its "
                 "micro-batches: use accumulate=1")  # fmt: skip
    elif objective.penalty_at == "before" and has_penalty(objective):
        clash = (f"objective {objective.name!r} runs its penalty on the fakes before D's "
                 "loss forwards")  # fmt: skip
    if clash is not None:
        raise ValueError(
            "d_order='real_g_fake' makes a D step's fakes after D's forward on the real "
            f"batch, and {clash}"
        )


def check_d_step_if(d_step_if: object, schedule: object, accumulate: int, distributed: object,
                    objective: Objective) -> Callable | None:  # fmt: skip
    """``d_step_if``: None or a function of the D step's view, where D steps of their own
    (``d_first``, ``g_first``) are decided once per step, in one process, counted by
    nothing else (a lazy R1, a penalty step of its own)."""
    if d_step_if is None:
        return None
    if not callable(d_step_if):
        raise TypeError(
            "d_step_if must be a function of the D step's view returning whether D steps "
            f"(lambda v: ...), got {type(d_step_if).__name__}"
        )
    clash = None
    if isinstance(schedule, Simultaneous):
        clash = ("simultaneous() takes D's and G's gradients from one forward: use "
                 "d_first() or g_first(), whose D steps are their own")  # fmt: skip
    elif accumulate > 1:
        clash = f"accumulate={accumulate} would decide per micro-batch: use accumulate=1"
    elif distributed:
        clash = ("each process could decide otherwise, and D's gradients are averaged "
                 "across processes: decide on the batch of every process in your loop")  # fmt: skip
    elif objective.r1_every > 1 or objective.penalty_at == "own_step":
        clash = (f"objective {objective!r} steps D on its penalty by D's own steps or "
                 "after them")  # fmt: skip
    if clash is not None:
        raise ValueError(f"d_step_if decides whether each D step is taken, and {clash}")
    return d_step_if


class InfoStep(NamedTuple):
    """InfoGAN's third side, checked: its Side (None without one), loss terms and
    latents (None: the Step's latent)."""

    side: Side | None
    terms: dict
    latent: Callable | None


def info_step(
    G: nn.Module,
    D: nn.Module,
    opt: object,
    terms: object,
    latent: object,
    step_latent: object,
    precision: Precision,
) -> InfoStep:
    """InfoGAN's info step from Step's ``info_*`` arguments: an optimizer over (some of)
    G's and D's parameters, its terms and, optionally, its own latents."""
    if opt is None and terms is None:
        if latent is not None:
            raise ValueError("info_latent draws the info step's latents: it needs "
                             "info_optimizer and info_terms")  # fmt: skip
        return InfoStep(None, {}, None)
    if latent is not None:
        check_sources(latent, None)
    if opt is None or not terms:
        raise ValueError("InfoGAN's info step needs both info_optimizer and info_terms")
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"info_optimizer must be a torch.optim.Optimizer, got {opt!r}")
    if step_latent is None:
        raise ValueError("InfoGAN's info step draws fresh latents: it needs a latent")
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    ours = {id(p) for p in (*G.parameters(), *D.parameters())}
    if not held <= ours:
        raise ValueError("info_optimizer must hold only G's and D's parameters")
    precision.add_scaler("info")
    both = nn.ModuleList([G, D])
    side = Side("info", both, opt, precision, frozenset(held))
    return InfoStep(side, normalize_terms(terms, "info_terms"), latent)
