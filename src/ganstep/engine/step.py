"""Step: one GAN training iteration = objective + schedule + models + optimizers."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence

import torch
from torch import Tensor, nn
from torch.optim import Optimizer

from . import distributed as data_parallel
from .augment import get_augment
from .batch import Batch, Condition, split_rows, to_batch
from .checks import Weight, flag, positive_int, weight
from .d_profile import FIELDS, DProfile, check_declaration, profile_d
from .errors import NonFiniteError
from .game import D_FORWARDS, D_ORDERS, Game, Hook, check_hooks
from .objectives import Objective, get_objective
from .phases import info_phase
from .pool import FakePool
from .precision import Precision
from .regularizers import Regularizer
from .schedules import Schedule, get_schedule
from .sides import Side, trainable
from .views import Term, normalize_terms


def _check_optimizer(opt: object, module: nn.Module, own: str, other: nn.Module) -> None:
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


def _compiled(module: nn.Module, compile: bool | str) -> nn.Module:
    if compile is False:
        return module
    if compile is True:
        return torch.compile(module)
    if not isinstance(compile, str):
        raise TypeError(f"compile must be True, False or a backend name, got {compile!r}")
    backends = torch.compiler.list_backends(exclude_tags=())
    if compile not in backends:
        raise ValueError(f"compile: unknown backend {compile!r}; choose one of {backends}")
    return torch.compile(module, backend=compile)


def _check_compile_fits(compile: object, objective: Objective, g_regularizer: object) -> None:
    """torch.compile's autograd (AOTAutograd) has no double backward, which gradient
    penalties take: refuse now rather than at the first penalty, after compiling."""
    if compile is False or compile == "eager":
        return
    takes = []
    if objective.r1 > 0:
        takes.append(f"{objective.name}'s R1 penalty")
    if type(objective).penalty is not Objective.penalty:
        takes.append(f"{objective.name}'s gradient penalty")
    if g_regularizer is not None:
        takes.append("G's path length regularizer")
    if takes:
        raise ValueError(
            f"compile={compile!r}: torch.compile does not support the double backward that "
            f"{' and '.join(takes)} takes; use compile=False (or the 'eager' backend)"
        )


def _check_models(G: object, D: object, opt_g: object, opt_d: object) -> None:
    for arg, module in (("G", G), ("D", D)):
        if not isinstance(module, nn.Module):
            raise TypeError(f"{arg} must be a torch.nn.Module, got {type(module).__name__}")
        if not trainable(module):
            raise ValueError(f"{arg} has no trainable parameters")
    if G is D:
        raise ValueError("G and D must be two different modules")
    _check_apart(G, D, "G", "D")
    _check_apart(D, G, "D", "G")
    _check_optimizer(opt_g, G, "G", D)
    _check_optimizer(opt_d, D, "D", G)


def _check_apart(outer: nn.Module, inner: nn.Module, name: str, other: str) -> None:
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


def _check_sources(latent: object, condition: object) -> None:
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


def _check_d_arity(D: nn.Module, condition: object, d_conditional: object) -> None:
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


Terms = dict[str, Term | tuple[float, Term]]  # extra loss terms: {"name": fn or (weight, fn)}

# Keys of Step.state_dict() present when the Step has that part (ADA, a pool, path length).
OPTIONAL_STATE = ("augment", "fake_pool", "g_regularizer")


def _check_g_regularizer(regularizer: object, latent: object) -> Regularizer | None:
    if regularizer is None:
        return None
    if not isinstance(regularizer, Regularizer) or regularizer.side != "G":
        raise TypeError(
            f"g_regularizer must be a G-side regularizer such as ganstep.regularizers."
            f"PathLength(), got {regularizer!r}"
        )
    if latent is None:
        raise ValueError("g_regularizer draws z for its phase: it needs a latent")
    return regularizer


def _check_options(
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
    flags = {"concat": concat, "distributed": said, "d_map": d_map,
             "check_finite": check_finite, "d_conditional": d_conditional}  # fmt: skip
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


class Step:
    """One full GAN training iteration per call, with the fewest passes its schedule allows.

    Args:
        G: the generator, any ``nn.Module`` mapping a batch of z to a batch of samples.
        D: the discriminator, any ``nn.Module``: one logit per sample, or for ``began``
            an autoencoder whose output is shaped like its input.
        opt_g, opt_d: any ``torch.optim.Optimizer`` holding G's, resp. D's, trainable
            parameters (and not the other module's).
        objective: a name (``minimax``, ``ns``, ``lsgan``, ``hinge``, ``wgan_gp``,
            ``wgan``, ``began``, ``softmax``, ``rsgan``, ``rasgan``, ``ralsgan``,
            ``rahinge``) or an :class:`~ganstep.objectives.Objective`.
        schedule: a name (``d_first``, ``g_first``, ``simultaneous``) or a
            :class:`~ganstep.schedules.Schedule` with options, e.g. ``d_first(d_steps=5)``.
        latent: ``latent(n)`` returns a batch of n z. Step draws z only through it,
            one draw per generated batch, in the order the schedule generates them.
            ``None`` for a G without z (image-to-image: ``G(c)``; needs a condition).
        condition: ``None`` (unconditional: ``G(z)``, ``D(x)``); ``"real"``: each fake is
            made for the condition of the real sample it is compared with (pix2pix, many
            cGANs); or a sampler ``condition(n)`` of the fakes' conditions (BigGAN's
            sampled labels), called right after ``latent`` for each generated batch. A
            conditional real batch is a pair ``(x, c)``: ``c`` a tensor with n rows
            (labels, one-hot codes, source images) or a tuple of such. G is called
            ``G(z, c)`` (``G(c)`` without latent) and D ``D(x, c)``; a fake carries its
            condition through every schedule. See :mod:`ganstep.views` for what D may
            return (a score per sample, a PatchGAN map, a tuple with extra heads, a
            multi-scale list).
        g_terms, d_terms: extra terms of L_G and L_D, ``{"name": fn}`` or
            ``{"name": (weight, fn)}``; ``fn(view)`` returns a scalar from the phase's
            :class:`~ganstep.views.View` (real and fake batches with their extras, D's
            outputs on them, the iteration) and never runs a forward of D of its own.
            Each is logged, weighted, by its name. A G term that reads D on the real
            batch is marked :func:`~ganstep.views.reads_real`.
        d_scale: the factor of D's adversarial loss (pix2pix halves it: 0.5); the
            penalty and D's terms are added unscaled. 0 trains D on its terms alone.
        g_scale: the factor of G's adversarial loss, likewise (PyTorch-GAN's acgan
            writes ``0.5 * (adv + aux)``: ``g_scale=0.5`` and a term of weight 0.5);
            0 trains G on its terms alone (feature matching as Salimans et al. do).
            Every weight, these two and the terms', is a number >= 0 or a function of
            the iteration (counting from 0) returning one: taming's ``disc_start`` is
            ``d_scale=lambda t: 0.5 if t >= disc_start else 0.0``. A weight of 0 still
            steps its optimizer, on zero gradients.
        d_conditional: ``False`` calls D as ``D(x)`` even on a conditional batch: G
            alone takes the condition and D predicts it (ACGAN, InfoGAN). Terms still
            read each batch's condition from the view.
        accumulate: split each real batch (and its fakes, and their z, drawn at once)
            into ``accumulate`` equal micro-batches; every phase sums their gradients
            before its one optimizer step (one loss-scaler update, one all-reduce), as
            BigGAN's ``num_D_accumulations`` and StyleGAN2-ADA's ``batch_gpu`` do. Equal
            to one step on the whole batch wherever the losses are batch means and D
            does not mix samples; a BatchNorm layer normalizes each micro-batch by its
            own statistics (as BigGAN's does). Give the whole batch: its row count must
            divide by ``accumulate``.
        concat: run D once on ``cat(real, fake)`` in D steps. Refused when D has
            BatchNorm in training mode, since that changes the math.
        precision: ``fp32`` (default), ``bf16`` (autocast) or ``fp16`` (autocast with a
            loss scaler per optimizer; a step whose gradients overflow is skipped).
            Under bf16 and fp16 the losses are computed in float32.
        distributed: data parallel over torch.distributed's default process group
            (initialised by the caller, e.g. under torchrun): G and D are broadcast from
            rank 0 now, and each phase averages the gradients of the module it steps
            across processes before stepping it. See :mod:`ganstep.distributed`.
            ``False``: every process trains its own G and D. Left unsaid (``None``), a
            Step that finds itself in a process group of more than one process at its
            first call refuses to train (each process would train alone, unknowingly,
            as under Lightning's DDP strategy, whose reducer does not see the Step's
            backward passes).
        compile: ``True`` (or a backend name such as ``"inductor"``, ``"aot_eager"``)
            runs G's and D's forwards through ``torch.compile``; their parameters stay
            the user's. ``False`` (default) runs them eagerly.
        d_order: the order of D's forwards in a D step: ``"real_first"`` (default; the
            DCGAN example, PyTorch-GAN) or ``"fake_first"`` (pix2pix, StyleGAN2-ADA's
            Dmain, BigGAN's ``D(cat([G_z, x]))``). ``concat=True`` concatenates in this
            order. With a D that draws random numbers or advances state, only the
            loop's own order is exact.
        d_forwards: ``"auto"`` (default): merge two D forwards of the loop into one
            (``simultaneous``'s shared forward on the fake batch, the fused step) only
            where D's profile allows it, i.e. D draws no random numbers and changes
            nothing its next forward reads; otherwise forward D as the loop does.
            ``"loop"``: always the loop's forwards (a BatchNorm D then ends with the
            loop's running statistics too). ``"merged"``: merge whatever D is (its
            random draws and power iterations then advance once where the loop's
            advance twice; the parameters differ from the loop's).
        d_profile: what D is, where observation cannot decide: a
            :class:`~ganstep.d_profile.DProfile`, or a dict of some of its fields
            (``stochastic``, ``stateful``, ``eval_state``, ``mixing``) put over what is
            observed. Otherwise D is observed on the first real batch (three forwards
            without a graph, no trace left; again if D's train/eval mode changes);
            :meth:`observe_d` does it on demand.
        d_map: D's 2-D output ``(n, k)``, ``k > 1``, is a map of k scores per sample.
            Without it such an output is refused: it is more often class logits or
            features read as scores by mistake.
        augment: augmentation of every batch D sees, in every phase (real and fake, G's
            fake with G's gradient through it, R1's real batch, WGAN-GP's interpolates):
            ``"diffaugment"`` (color, translation, cutout), a DiffAugment policy
            such as ``"translation,cutout"``, ``"ada"`` (those with
            StyleGAN2-ADA's adaptive probability, logged as ``augment_p``), a
            :class:`~ganstep.augment.Adaptive` or any callable ``x -> x``. It draws
            from torch's global generator, so D is forwarded as the loop does (no
            merged forwards unless ``d_forwards="merged"``; no fused step). See
            :mod:`ganstep.augment`.
        g_regularizer: G's lazy regularizer, a :class:`~ganstep.regularizers.PathLength`
            (StyleGAN2's path length): after every ``every``-th G step, a phase of its
            own on a fresh z, with its own optimizer step of G (hooks ``"g_reg"``). Its
            running mean is in :meth:`state_dict`. D's regularizer is the objective's
            (``ns(r1=..., r1_every=...)``); both share one lazy phase.
        info_optimizer, info_terms: InfoGAN's info step, after each iteration's D and G
            steps (PyTorch-GAN's ``optimizer_info`` over G's and D's parameters): a
            fresh latent (the latent returns a tuple such as ``(z, label, code)``), G's
            fakes from it, D on them with a graph into both, and the weighted
            ``info_terms`` (``{"name": (weight, fn)}``, ``fn(view)`` reading
            ``view.fake.z`` and ``view.d_fake``, D's Q heads), one step of
            ``info_optimizer``, which may hold any of G's and D's parameters (hook
            ``"info"``). Logged as ``loss_info`` and by term. Give both or neither.
        info_latent: the info step's own ``latent(n)``, where the loop draws its latents
            otherwise than G's step does (PyTorch-GAN's ``infogan.py`` draws labels, then
            z, then the code, from another distribution); ``None``: ``latent``.
        fake_pool: keep this many past fakes and show D's steps a random stored one in
            place of about half of each new fake batch, once the pool is full (CycleGAN's
            ``ImagePool``, 50; Python's ``random`` draws, as theirs). ``None``: off.
            Unconditional batches only; G's steps see the new fakes. See
            :mod:`ganstep.pool`.
        before_step, after_step: the user's hooks around optimizer steps, by phase:
            ``{"d": fn, "g": fn, "d_reg": fn, "g_reg": fn, "info": fn}``, each called as
            ``fn(module)`` with the module that phase steps (``fn(module, iteration)``
            when it takes two arguments). ``"d"`` and ``"g"`` are the
            adversarial steps (in ``simultaneous`` both run after one shared backward),
            ``"d_reg"`` and ``"g_reg"`` the lazy regularization steps, ``"info"``
            InfoGAN's (its module: G and D in an ``nn.ModuleList``). ``before_step``
            sees the phase's final gradients, unscaled under fp16 and averaged across
            processes (gradient clipping); ``after_step`` runs after the step (weight
            clipping, EMA of G's weights). ``wgan``'s own clipping runs before them.
        log_scores: also return D's mean adversarial score on the real and the fake
            batch of the last D step and the mean of their signs (``score_real``,
            ``score_fake``, ``sign_real``, ``sign_fake``; StyleGAN2-ADA logs these), from
            the forwards the step runs anyway, on the device.
        check_finite: raise :class:`~ganstep.errors.NonFiniteError` at the first real
            batch with a NaN or infinite value (before anything is updated) or the first
            non-finite loss (before any optimizer steps on it), naming which. Off by
            default: each check waits for the device. Without it a NaN in the data
            reaches G's and D's parameters silently.

    Calling ``step(real)`` runs one iteration. ``real`` is one batch (a tensor) when
    the schedule has one D step per iteration; with ``d_steps = k`` it is a list or
    tuple of ``k`` batches, one per D step in order (see :attr:`real_batches`). Fake
    batches have the size of the real batch they are compared with.

    Returns a dict of detached tensors on the device (no host sync): ``loss_d``,
    ``loss_g`` (of the last D and G step; an iteration that updates only one module
    reports only its loss), plus ``gp`` for ``wgan_gp`` and ``l_real``, ``k`` (after the
    update), ``m_global`` for ``began``.

    The other module's parameters are switched off (``requires_grad=False``) during
    each phase and restored exactly as they were; only parameters the user left
    trainable are trained.
    """

    # fmt: off
    def __init__(
        self, G: nn.Module, D: nn.Module, opt_g: Optimizer, opt_d: Optimizer, *,
        objective: str | Objective, schedule: str | Schedule,
        latent: Callable[[int], Tensor] | None,
        condition: str | Callable[[int], Condition] | None = None,
        g_terms: Terms | None = None, d_terms: Terms | None = None,
        d_scale: Weight = 1.0, g_scale: Weight = 1.0, d_conditional: bool = True,
        concat: bool = False, precision: str = "fp32", distributed: bool | None = None,
        compile: bool | str = False, check_finite: bool = False, accumulate: int = 1,
        d_order: str = "real_first", d_forwards: str = "auto",
        d_profile: DProfile | dict[str, bool] | None = None, d_map: bool = False,
        augment: str | Callable[[Tensor], Tensor] | None = None,
        fake_pool: int | None = None, g_regularizer: Regularizer | None = None,
        info_optimizer: Optimizer | None = None, info_terms: Terms | None = None,
        info_latent: Callable[[int], tuple[Tensor, ...]] | None = None,
        before_step: dict[str, Hook] | None = None, after_step: dict[str, Hook] | None = None,
        log_scores: bool = False,
    ) -> None:
        # fmt: on
        _check_models(G, D, opt_g, opt_d)
        _check_sources(latent, condition)
        _check_options(concat, distributed, check_finite, d_order, d_forwards, d_map,
                       d_conditional, fake_pool, condition)  # fmt: skip
        _check_d_arity(D, condition, d_conditional)
        self.accumulate = positive_int(accumulate, "accumulate")
        self.objective = get_objective(objective)
        self.schedule = get_schedule(schedule)
        g_terms = normalize_terms(g_terms, "g_terms")
        d_terms = normalize_terms(d_terms, "d_terms")
        self._check_objective_fits(g_terms, g_scale)
        _check_compile_fits(compile, self.objective, g_regularizer)
        device = next(G.parameters()).device
        self.precision = Precision(precision, device.type)
        self.distributed = bool(distributed)
        self._group_checked = distributed is not None
        self.game = Game(Side("G", _compiled(G, compile), opt_g, self.precision),
                         Side("D", _compiled(D, compile), opt_d, self.precision),
                         self.objective, latent, condition=condition, g_terms=g_terms,
                         d_terms=d_terms, d_scale=weight(d_scale, "d_scale"),
                         g_scale=weight(g_scale, "g_scale"),
                         d_conditional=d_conditional, concat=concat,
                         d_order=d_order, d_forwards=d_forwards, d_map=d_map,
                         augment=get_augment(augment), check_finite=check_finite,
                         fake_pool=None if fake_pool is None else FakePool(fake_pool),
                         g_regularizer=_check_g_regularizer(g_regularizer, latent),
                         before_step=check_hooks(before_step, "before_step"),
                         after_step=check_hooks(after_step, "after_step"),
                         log_scores=flag(log_scores, "log_scores", TypeError))  # fmt: skip
        self._info_side(G, D, info_optimizer, info_terms, info_latent)
        self._declare_d(D, d_profile)
        if distributed:
            data_parallel.broadcast_module(G)
            data_parallel.broadcast_module(D)
            self.game.sync = data_parallel.GradientAverager()
        self.iteration = 0
        self._models = (G, D, opt_g, opt_d)
        self._param_ids = self._parameter_ids()

    def _parameter_ids(self) -> tuple:
        G, D = self._models[:2]
        return tuple(id(p) for p in G.parameters()), tuple(id(p) for p in D.parameters())

    def _check_process_group(self) -> None:
        """A Step not told ``distributed`` that runs in a process group of several
        processes: each would train its own G and D while the caller believes they
        train one (a plain Step in a LightningModule under Lightning's DDP strategy)."""
        if self._group_checked:
            return
        self._group_checked = True
        wrapped = any(isinstance(m, nn.parallel.DistributedDataParallel)
                      for m in self._models[:2])  # fmt: skip
        if data_parallel.active() and not wrapped:
            raise ValueError(
                f"this Step runs in a process group of {data_parallel.world_size()} "
                "processes but was not told distributed=...: each process would train its "
                "own G and D on its own batches. Give Step(distributed=True) to average "
                "each phase's gradients across them (under Lightning: subclass "
                "ganstep.lightning.GANModule, with strategy=GANStrategy()), or "
                "distributed=False if every process is meant to train alone"
            )

    def _check_same_parameters(self) -> None:
        """A parameter replaced after the Step was built (``G.fc = nn.Linear(...)``) is in
        no optimizer and would never train: say so at the next call."""
        if self._parameter_ids() == self._param_ids:
            return
        G, D, opt_g, opt_d = self._models
        try:
            _check_optimizer(opt_g, G, "G", D)
            _check_optimizer(opt_d, D, "D", G)
        except ValueError as e:
            raise ValueError(
                f"G's or D's parameters changed after the Step was built, and {e} (a layer "
                "replaced later is in no optimizer and would never train)"
            ) from None
        self._param_ids = self._parameter_ids()

    def _declare_d(self, D: nn.Module, d_profile: object) -> None:
        """What the user declared D to be: a whole profile skips the observation; then the
        checks that depend on D (concat, the schedule's fused step)."""
        self._d_declared = check_declaration(d_profile)
        self._d_module, self._d_mode = D, None  # D observed in that train/eval mode
        if isinstance(self._d_declared, dict) and set(self._d_declared) == set(FIELDS):
            self._d_declared = DProfile().declare(self._d_declared)
        if isinstance(self._d_declared, DProfile):
            self.game.d_profile = self._d_declared
        self.game.check_concat()
        self.schedule.check(self.game)

    def _check_objective_fits(self, g_terms: dict, g_scale: object) -> None:
        """What the objective rules out: accumulation of batch-coupled losses, and G terms
        or a G scale for BEGAN (whose k_t reads L_G itself)."""
        if self.accumulate > 1 and self.objective.batch_coupled is not None:
            raise ValueError(
                f"accumulate={self.accumulate} sums micro-batches' gradients, which equals the "
                f"whole batch's only for losses that are means over samples; objective "
                f"{self.objective.name!r} is not ({self.objective.batch_coupled}): use "
                "accumulate=1"
            )
        if (g_terms or g_scale != 1) and self.objective.name == "began":
            raise ValueError(
                "began's k_t reads L_G itself: extra G terms or a g_scale would change it"
            )

    def _info_side(
        self, G: nn.Module, D: nn.Module, opt: object, terms: object, latent: object
    ) -> None:
        """InfoGAN's third side: the info optimizer over (some of) G's and D's parameters."""
        if opt is None and terms is None:
            if latent is not None:
                raise ValueError("info_latent draws the info step's latents: it needs "
                                 "info_optimizer and info_terms")  # fmt: skip
            return
        if latent is not None:
            _check_sources(latent, None)
            self.game.info_latent = latent
        if opt is None or not terms:
            raise ValueError("InfoGAN's info step needs both info_optimizer and info_terms")
        if not isinstance(opt, torch.optim.Optimizer):
            raise TypeError(f"info_optimizer must be a torch.optim.Optimizer, got {opt!r}")
        if self.game.latent is None:
            raise ValueError("InfoGAN's info step draws fresh latents: it needs a latent")
        held = {id(p) for group in opt.param_groups for p in group["params"]}
        ours = {id(p) for p in (*G.parameters(), *D.parameters())}
        if not held <= ours:
            raise ValueError("info_optimizer must hold only G's and D's parameters")
        self.precision.add_scaler("info")
        both = nn.ModuleList([self.game.g.module, self.game.d.module])
        self.game.info = Side("info", both, opt, self.precision, frozenset(held))
        self.game.info_terms = normalize_terms(terms, "info_terms")

    @property
    def real_batches(self) -> int:
        """How many real batches one call takes: the schedule's D steps per iteration."""
        return self.schedule.real_batches

    def _batches(self, real: object) -> list[Batch]:
        """The real batches of one call: one item, or a list of ``real_batches`` items."""
        want = self.real_batches
        conditional = self.game.condition is not None
        if isinstance(real, list) and want == 1 and len(real) == 2 and not conditional:
            raise ValueError(
                "got a list of 2 for 1 D step: if it is a DataLoader's (x, y), this Step is "
                "unconditional; pass x alone, or use step.feed(loader), which drops y"
            )
        if isinstance(real, list) and not (want == 1 and len(real) == 2):
            items = real
        else:
            items = [real]
        if len(items) != want:
            raise ValueError(
                f"schedule {self.schedule!r} takes {want} real batch(es) per step, "
                f"{_batches_for(self.schedule)}, as a list; got {len(items)}. "
                "step.feed(loader) yields them."
            )
        batches = [to_batch(item, conditional, f"real batch {i}") for i, item in enumerate(items)]
        if want > 1 and not conditional:
            kinds = {(tuple(b.x.shape[1:]), b.x.dtype) for b in batches}
            if len(kinds) > 1:
                raise ValueError(
                    f"the {want} real batches of one step differ in shape or dtype ({kinds}): "
                    "was a DataLoader's (x, y) passed as batches? use step.feed(loader)"
                )
        for b in batches:
            if b.x.dim() < 2 or b.x.shape[0] == 0:
                raise ValueError(
                    "a real batch must have shape (n, ...) with n >= 1 and at least one "
                    f"feature dimension, got {tuple(b.x.shape)}"
                )
        return batches

    @property
    def d_profile(self) -> DProfile | None:
        """What D was observed (or declared) to be; ``None`` before the first step."""
        return self.game.d_profile

    def observe_d(self, real: object) -> DProfile:
        """Observe D on ``real`` (what one call takes) now, instead of at the first step,
        e.g. to keep the observation's three forwards out of a measured region."""
        self._know_d(self._batches(real)[0])
        return self.game.d_profile

    def _know_d(self, real: Batch) -> None:
        """Observe D (unless declared whole) when first called or when its mode changed,
        then check again what depends on it (concat, the fused step)."""
        if isinstance(self._d_declared, DProfile) or self._d_mode == self._d_module.training:
            return
        mode = self._d_module.training
        try:
            if not self.game.d_conditional:
                real = Batch(real.x)
            profile = profile_d(self._d_module, real, d_call_of)
        except Exception as e:  # the step itself then says what is wrong with the input;
            # until an observation succeeds (tried again next call), D counts as impure
            mode = None
            profile = DProfile(stochastic=True, why=(("stochastic", (
                f"not observed: D failed on the first real batch ({type(e).__name__}); "
                "treated as impure, declare d_profile to say what it is")),))  # fmt: skip
        if self._d_declared:
            profile = profile.declare(self._d_declared)
        self.game.d_profile, self._d_mode = profile, mode
        self.game.check_concat()
        self.schedule.check(self.game)

    def _micro(self, batch: Batch) -> list[Batch]:
        """``batch`` as ``accumulate`` equal micro-batches."""
        k = self.accumulate
        if batch.n % k:
            raise ValueError(
                f"accumulate={k} splits each real batch into {k} equal micro-batches; a batch "
                f"of {batch.n} rows does not divide by {k}"
            )
        return [batch] if k == 1 else split_rows(batch, [batch.n // k] * k)

    def batch_of(self, item: object) -> Batch:
        """What one D step takes from a loader's item (``x``, ``(x, y)`` or ``{"x": x,
        "y": y}``): the samples and, for a conditional Step, their condition; an
        unconditional Step drops y."""
        if self.game.condition is not None:
            return to_batch(item, True, "a batch from the loader")
        return Batch(_x_of(item))

    def feed(self, loader: Iterable, iterations: int | None = None) -> Iterator[object]:
        """What each call takes, from ``loader`` (any iterable of batches: ``x``,
        ``(x, y)`` or ``{"x": x, "y": y}``), for ``iterations`` calls (forever if None).

        ``real_batches`` items per call, restarting ``loader`` at each epoch's end (so
        ``d_steps=5`` just works). An unconditional Step takes x and drops y.
        """
        source = iter(loader)

        def take() -> object:
            nonlocal source
            try:
                item = next(source)
            except StopIteration:
                source = iter(loader)  # a new epoch
                try:
                    item = next(source)
                except StopIteration:
                    raise ValueError("the loader yields no batches") from None
            return self.batch_of(item)

        done = 0
        while iterations is None or done < iterations:
            items = [take() for _ in range(self.real_batches)]
            yield items[0] if self.real_batches == 1 else items
            done += 1

    def __call__(self, real: Tensor | Sequence[Tensor]) -> dict[str, Tensor]:
        """Run one training iteration on ``real``; return the iteration's losses."""
        batches = self._batches(real)
        self._check_same_parameters()
        self._check_process_group()
        self._know_d(batches[0])
        try:
            if self.game.check_finite:
                for i, b in enumerate(batches):
                    if b.x.is_floating_point() and not torch.isfinite(b.x).all():
                        raise NonFiniteError(
                            f"real batch {i} has NaN or infinite values; nothing was updated"
                        )
            micro = [self._micro(b) for b in batches]
            self.game.iteration = self.iteration
            logs = self.schedule.run(self.game, micro, self.iteration)
            if self.game.info is not None:
                logs.update(info_phase(self.game, micro[-1]))
        except NonFiniteError as e:
            raise NonFiniteError(f"iteration {self.iteration}: {e}") from None
        if self.distributed:
            logs = data_parallel.average_logs(logs)
        logs.update(self.objective.end_iteration(logs))
        self.iteration += 1
        end_iteration = getattr(self.game.augment, "end_iteration", None)
        if end_iteration is not None:
            reduce = data_parallel.all_reduce_sum if self.distributed else None
            logs.update(end_iteration(self.iteration, reduce))
        return logs

    def state_dict(self) -> dict:
        """Step's own state: the iteration count, the objective's state (BEGAN's k), the
        loss scalers' state (``fp16``; empty otherwise), the count of D steps (lazy R1
        regularizes every ``r1_every``-th), and where used: G's regularizer's state and
        count of G steps (``g_regularizer``, ``g_updates``), an adaptive augmentation's
        state (``augment``: ADA's p and what it observed since its last update) and the
        fake pool (``fake_pool``).

        Models and optimizers keep their own ``state_dict()``.
        """
        state = {
            "iteration": self.iteration,
            "objective": self.objective.state_dict(),
            "precision": self.precision.state_dict(),
            "d_updates": self.game.d_updates,
        }
        if self.game.g_regularizer is not None:
            state["g_updates"] = self.game.g_updates
        for key, part in self._optional_parts().items():
            state[key] = part.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (``precision`` may be absent)."""
        needed = {"iteration", "objective"}
        allowed = needed | {"precision", "d_updates", "g_updates", *OPTIONAL_STATE}
        if not isinstance(state, dict) or not needed <= set(state) <= allowed:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"Step state needs the keys 'iteration' and 'objective' (and optionally "
                f"'precision'), got {got}"
            )
        parts = self._optional_parts()
        saved = set(state) & set(OPTIONAL_STATE)
        if saved != set(parts):
            raise ValueError(
                f"the state and this Step differ in {', '.join(sorted(saved ^ set(parts)))}: "
                "load a state saved by a Step built with the same options (this Step has "
                f"{sorted(parts) or 'none of them'}, the state {sorted(saved) or 'none'})"
            )
        for key in ("iteration", "d_updates", "g_updates"):
            value = state.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Step state: {key} must be an integer >= 0, got {value!r}")
        for key, part in parts.items():
            part.load_state_dict(state[key])
        self.objective.load_state_dict(state["objective"])
        self.precision.load_state_dict(state.get("precision", self.precision.state_dict()))
        self.iteration = int(state["iteration"])
        self.game.d_updates = int(state.get("d_updates", 0))
        self.game.g_updates = int(state.get("g_updates", 0))

    def _optional_parts(self) -> dict:
        """The parts of its state only some Steps have, by key: each saves and loads its own."""
        game = self.game
        parts = {"augment": game.augment, "fake_pool": game.fake_pool,
                 "g_regularizer": game.g_regularizer}  # fmt: skip
        return {k: v for k, v in parts.items() if hasattr(v, "state_dict")}

    def __repr__(self) -> str:
        profile = self.game.d_profile
        found = "not observed yet" if profile is None else profile.describe()
        forwards = "merged" if self.game.merge_d_forwards() else "as the loop's"
        game = self.game
        extras = {"augment": game.augment, "fake_pool": game.fake_pool,
                  "g_regularizer": game.g_regularizer,
                  "info_terms": list(game.info_terms) or None}  # fmt: skip
        more = "".join(f", {k}={v!r}" for k, v in extras.items() if v is not None)
        return (
            f"Step(objective={self.objective!r}, schedule={self.schedule!r}, "
            f"concat={game.concat}, d_order={game.d_order!r}{more}, "
            f"D: {found}; D forwards {forwards})"
        )


def _batches_for(schedule: Schedule) -> str:
    """What each real batch of one call is for, in words."""
    d_steps = getattr(schedule, "d_steps", 1)
    if getattr(schedule, "fresh_real", False):
        g_steps = schedule.g_steps
        return (f"one per D step ({d_steps}) then one per G step ({g_steps}, fresh_real: G's "
                "loss reads a real batch of its own)")  # fmt: skip
    return "one per D step"


def d_call_of(D: nn.Module, batch: Batch) -> object:
    """``D(x)``, or ``D(x, c)`` for a conditional batch (D itself, not compiled)."""
    return D(batch.x) if batch.c is None else D(batch.x, batch.c)


def _x_of(item: object) -> Tensor:
    """The samples of a loader's item, its condition dropped (an unconditional Step)."""
    if isinstance(item, Batch):
        return item.x
    if isinstance(item, dict) and "x" in item:
        return item["x"]
    if isinstance(item, tuple | list) and item and isinstance(item[0], Tensor):
        return item[0]
    if isinstance(item, Tensor):
        return item
    raise TypeError(
        f"a loader batch must be x, (x, y) or {{'x': x, ...}}, got {type(item).__name__}"
    )
