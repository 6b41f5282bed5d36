"""Step: one GAN training iteration = objective + schedule + models + optimizers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import torch
from torch import Tensor, nn
from torch.optim import Optimizer

from . import distributed as data_parallel
from . import real_input
from .augment import get_augment
from .batch import Batch, Condition
from .checks import Weight, flag, positive_int, refused_block, weight
from .compiled import compiled
from .d_observer import DObserver
from .d_profile import DProfile
from .errors import NonFiniteError
from .game import Game, Hook, check_hooks
from .objectives import Objective, get_objective
from .options import Options, Progress
from .phases import info_phase
from .pool import FakePool
from .precision import Precision
from .regularizers import Regularizer
from .schedules import Schedule, get_schedule
from .sides import Side
from .steady import Steady, steady_for
from .step_checks import (
    check_compile_fits,
    check_d_arity,
    check_d_order_fits,
    check_d_step_if,
    check_g_forwards,
    check_g_regularizer,
    check_models,
    check_objective_fits,
    check_optimizer,
    check_options,
    check_outside,
    check_sources,
    info_step,
    loss_terms,
    outside_params,
)
from .views import Term, View

Terms = dict[str, Term | tuple[float, Term]]  # extra loss terms: {"name": fn or (weight, fn)}

# Keys of Step.state_dict() present when the Step has that part (ADA, a pool, path length).
OPTIONAL_STATE = ("augment", "fake_pool", "g_regularizer")


class Step:
    """One full GAN training iteration per call, with the fewest passes its schedule allows.

    Args:
        G: the generator, any ``nn.Module`` mapping a batch of z to a batch of samples.
        D: the discriminator, any ``nn.Module``: one logit per sample, or for ``began``
            and ``ebgan`` an autoencoder whose output is shaped like its input.
        opt_g: any ``torch.optim.Optimizer`` holding G's trainable parameters (and not
            D's). It may hold parameters of neither G nor D too (a head G's loss terms
            call: InfoGAN's Q head beside D's body, which Natsu6767's ``optimG`` holds
            with G's): G's backward passes add to them, and G's steps move them.
        opt_d: the same for D's parameters (and not G's); both optimizers may not hold
            one parameter of neither.
        objective: a name (``minimax``, ``ns``, ``lsgan``, ``hinge``, ``wgan_gp``,
            ``wgan``, ``began``, ``softmax``, ``rsgan``, ``rasgan``, ``ralsgan``,
            ``rahinge``, ``bgan``, ``ebgan``) or an
            :class:`~ganstep.engine.objectives.Objective`.
        schedule: a name (``d_first``, ``g_first``, ``simultaneous``) or a
            :class:`~ganstep.engine.schedules.Schedule` with options, e.g. ``d_first(d_steps=5)``.
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
            condition through every schedule. See :mod:`ganstep.engine.views` for what D may
            return (a score per sample, a PatchGAN map, a tuple with extra heads, a
            multi-scale list).
        g_terms: extra terms of L_G, ``{"name": fn}`` or
            ``{"name": (weight, fn)}``; ``fn(view)`` returns a scalar from the phase's
            :class:`~ganstep.engine.views.View` (real and fake batches with their extras, D's
            outputs on them, the iteration) and never runs a forward of D of its own.
            Each is logged, weighted, by its name. A G term that reads D on the real
            batch is marked :func:`~ganstep.engine.views.reads_real` (D forwarded on it
            in G's phase) or :func:`~ganstep.engine.views.reads_d_step_real` (D's step's
            own output on it, before D's update: MelGAN's).
        d_terms: the same for L_D.
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
            BatchNorm in training mode, since that changes the math. ``"auto"``: once
            where that is the loop's math (D observed to treat each sample alone, draw
            no random numbers and change no state; no ``augment``), twice otherwise,
            decided again whenever D's train/eval mode changes. ``"joint"``: once,
            whatever D is: a BatchNorm D then normalizes the real and the fake batch
            together, which is the math of a loop that calls D on them joined
            (``D(torch.cat([real, fake]))``, as Keras-style loops do).
        precision: ``fp32`` (default), ``bf16`` (autocast) or ``fp16`` (autocast with a
            loss scaler per optimizer; a step whose gradients overflow is skipped).
            Under bf16 and fp16 the losses are computed in float32.
        distributed: data parallel over torch.distributed's default process group
            (initialised by the caller, e.g. under torchrun): G and D are broadcast from
            rank 0 now, and each phase averages the gradients of the module it steps
            across processes before stepping it. See :mod:`ganstep.engine.distributed`.
            ``False``: every process trains its own G and D. Left unsaid (``None``), a
            Step that finds itself in a process group of more than one process at its
            first call refuses to train (each process would train alone, unknowingly,
            as under Lightning's DDP strategy, whose reducer does not see the Step's
            backward passes).
        compile: ``True`` (or a backend name such as ``"inductor"``, ``"aot_eager"``)
            runs G's and D's forwards through ``torch.compile``; their parameters stay
            the user's. D is compiled without AOTAutograd's donated buffers, because
            the simultaneous order runs two backward passes through one D forward. A
            penalty's own forwards (lazy R1, WGAN-GP's, G's path length) run
            uncompiled, since compiled code has no double backward, and so does D's
            loss forward on the real batch where R1 on every step reads it (the fake
            batch's too where D's forward changes its buffers, as BatchNorm does); a
            penalty read from both loss forwards (``penalty_at="loss_forwards"``) is
            refused.
            ``False`` (default) runs them eagerly.
        d_order: the order of D's forwards in a D step: ``"real_first"`` (default;
            PyTorch-GAN) or ``"fake_first"`` (pix2pix, StyleGAN2-ADA's Dmain, BigGAN's
            ``D(cat([G_z, x]))``), with G's fakes made before both; or
            ``"real_g_fake"``: D on the real batch, then G makes the fakes (z drawn
            then), then D on them, as the PyTorch DCGAN example's and Udacity's GAN
            notebook's lines run. It applies where a D step makes fakes of its own
            (``d_first``'s and ``g_first``'s D steps, ``simultaneous``'s D-only
            iterations), and is refused with ``concat=True``, ``accumulate > 1`` and a
            penalty run before D's loss forwards. ``concat=True`` concatenates in the
            order given. With a D that draws random numbers or advances state, only the
            loop's own order is exact; ``"real_g_fake"`` matters where D's forward on
            the real batch draws from the generator that z or G's forward draw from
            (a Dropout D, and ``torch.randn`` z or a Dropout G).
        d_forwards: ``"auto"`` (default): merge two D forwards of the loop into one
            (``simultaneous``'s shared forward on the fake batch, the fused step) only
            where D's profile allows it, i.e. D draws no random numbers and changes
            nothing its next forward reads; otherwise forward D as the loop does.
            ``"loop"``: always the loop's forwards (a BatchNorm D then ends with the
            loop's running statistics too). ``"merged"``: merge whatever D is (its
            random draws and power iterations then advance once where the loop's
            advance twice; the parameters differ from the loop's).
        g_forwards: G's step's D forwards as the loop writes them, in order: ``"real"``
            (D on the real batch, without a graph) and ``"fake"``; L_G reads the last of
            each, the others are forwarded and thrown away, as loops that compute a loss
            and then overwrite it do (PyTorch-GAN's ``relativistic_gan.py``: ``("real",
            "fake", "fake")``). Only where D draws random numbers or changes state does
            a thrown-away forward change anything (its masks, BatchNorm's statistics).
            ``None`` (default): what L_G reads, D on the real batch first where it does.
            With ``simultaneous()`` it runs G's phase of its own (as
            ``d_forwards="loop"``).
        d_profile: what D is, where observation cannot decide: a
            :class:`~ganstep.engine.d_profile.DProfile`, or a dict of some of its fields
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
            :class:`~ganstep.engine.augment.Adaptive` or any callable ``x -> x``. It draws
            from torch's global generator, so D is forwarded as the loop does (no
            merged forwards unless ``d_forwards="merged"``; no fused step). See
            :mod:`ganstep.engine.augment`.
        g_regularizer: G's lazy regularizer, a :class:`~ganstep.engine.regularizers.PathLength`
            (StyleGAN2's path length): after every ``every``-th G step, a phase of its
            own on a fresh z, with its own optimizer step of G (hooks ``"g_reg"``). Its
            running mean is in :meth:`state_dict`. D's regularizer is the objective's
            (``ns(r1=..., r1_every=...)``); both share one lazy phase.
        info_optimizer: with ``info_terms``, InfoGAN's info step, after each iteration's
            D and G steps (PyTorch-GAN's ``optimizer_info`` over G's and D's parameters): a
            fresh latent (the latent returns a tuple such as ``(z, label, code)``), G's
            fakes from it, D on them with a graph into both, and the weighted
            ``info_terms`` (``{"name": (weight, fn)}``, ``fn(view)`` reading
            ``view.fake.z`` and ``view.d_fake``, D's Q heads), one step of
            ``info_optimizer``, which may hold any of G's and D's parameters (hook
            ``"info"``). Logged as ``loss_info`` and by term. Give both or neither.
        info_terms: the info step's terms (see ``info_optimizer``).
        info_latent: the info step's own ``latent(n)``, where the loop draws its latents
            otherwise than G's step does (PyTorch-GAN's ``infogan.py`` draws labels, then
            z, then the code, from another distribution); ``None``: ``latent``.
        fake_pool: keep this many past fakes and show D's steps a random stored one in
            place of about half of each new fake batch, once the pool is full (CycleGAN's
            ``ImagePool``, 50; Python's ``random`` draws, as theirs). ``None``: off.
            Unconditional batches only; G's steps see the new fakes. See
            :mod:`ganstep.engine.pool`.
        before_step: the user's hooks before optimizer steps, by phase:
            ``{"d": fn, "g": fn, "d_reg": fn, "g_reg": fn, "info": fn}``, each called as
            ``fn(module)`` with the module that phase steps (``fn(module, iteration)``
            when it takes two arguments). ``"d"`` and ``"g"`` are the
            adversarial steps (in ``simultaneous`` both run after one shared backward),
            ``"d_reg"`` and ``"g_reg"`` the lazy regularization steps, ``"info"``
            InfoGAN's (its module: G and D in an ``nn.ModuleList``). ``before_step``
            sees the phase's final gradients, unscaled under fp16 and averaged across
            processes (gradient clipping); ``after_step`` runs after the step (weight
            clipping, EMA of G's weights). ``wgan``'s own clipping runs before them.
        after_step: the user's hooks after optimizer steps, as ``before_step``.
        log_scores: also return D's mean adversarial score on the real and the fake
            batch of the last D step and the mean of their signs (``score_real``,
            ``score_fake``, ``sign_real``, ``sign_fake``; StyleGAN2-ADA logs these), from
            the forwards the step runs anyway, on the device.
        d_step_if: a function of the D step's :class:`~ganstep.engine.views.View`
            (after its forwards and losses) that says whether D steps: where it
            returns false (or a one-element tensor that is), D's gradients are not
            taken and its optimizer does not step; its forwards were run (BatchNorm's
            statistics move) and its loss is logged, with ``d_step`` (1 or 0). The 3D-GAN
            trains D only while its accuracy is below 0.8 (``lambda v: ((v.d_real >=
            0.5).sum() + (v.d_fake <= 0.5).sum()) / (2 * v.real.n) < 0.8``). It reads
            the answer on the host (a sync per D step); ``d_first`` and ``g_first`` only,
            one batch a step, one process.
        check_finite: raise :class:`~ganstep.engine.errors.NonFiniteError` at the first real
            batch with a NaN or infinite value (before anything is updated) or the first
            non-finite loss (before any optimizer steps on it), naming which. Off by
            default: each check waits for the device. Without it a NaN in the data
            reaches G's and D's parameters silently.

    Calling ``step(real)`` runs one iteration. ``real`` is one batch (a tensor) when
    the schedule has one D step per iteration; with ``d_steps = k`` it is a list or
    tuple of ``k`` batches, one per D step in order (see :attr:`real_batches`); with
    ``d_steps="each_batch"`` a list of any length but 0, one D step for each. Fake
    batches have the size of the real batch they are compared with.

    Returns a dict of detached tensors on the device (no host sync): ``loss_d``,
    ``loss_g`` (of the last D and G step; an iteration that updates only one module
    reports only its loss), plus ``gp`` for ``wgan_gp`` and ``l_real``, ``k`` (after the
    update), ``m_global`` for ``began``, and ``d_step`` with ``d_step_if``.

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
        concat: bool | str = False, precision: str = "fp32", distributed: bool | None = None,
        compile: bool | str = False, check_finite: bool = False, accumulate: int = 1,
        d_order: str = "real_first", d_forwards: str = "auto",
        g_forwards: tuple[str, ...] | None = None,
        d_profile: DProfile | dict[str, bool] | None = None, d_map: bool = False,
        augment: str | Callable[[Tensor], Tensor] | None = None,
        fake_pool: int | None = None, g_regularizer: Regularizer | None = None,
        info_optimizer: Optimizer | None = None, info_terms: Terms | None = None,
        info_latent: Callable[[int], tuple[Tensor, ...]] | None = None,
        before_step: dict[str, Hook] | None = None, after_step: dict[str, Hook] | None = None,
        log_scores: bool = False, d_step_if: Callable[[View], object] | None = None,
    ) -> None:
        # fmt: on
        check_models(G, D, opt_g, opt_d)
        check_sources(latent, condition)
        check_options(concat, distributed, check_finite, d_order, d_forwards, d_map,
                       d_conditional, fake_pool, condition)  # fmt: skip
        check_d_arity(D, condition, d_conditional)
        self.accumulate = positive_int(accumulate, "accumulate")
        objective = get_objective(objective)
        self.schedule = get_schedule(schedule)
        g_terms, d_terms = loss_terms(g_terms, d_terms)
        check_objective_fits(objective, self.accumulate, g_terms, g_scale)
        check_d_order_fits(d_order, concat, self.accumulate, objective)
        check_compile_fits(compile, objective)
        self.precision = Precision(precision, next(G.parameters()).device.type)
        self.distributed, self._group_checked = bool(distributed), distributed is not None
        info = info_step(G, D, info_optimizer, info_terms, info_latent, latent, self.precision)
        g_outside, d_outside = outside_params(opt_g, G, D), outside_params(opt_d, G, D)
        check_outside(g_outside, d_outside)
        if distributed:
            data_parallel.broadcast_module(G)
            data_parallel.broadcast_module(D)
            data_parallel.broadcast_tensors([*g_outside, *d_outside])
        options = Options(
            objective, latent, condition=condition, g_terms=g_terms, d_terms=d_terms,
            d_scale=weight(d_scale, "d_scale"), g_scale=weight(g_scale, "g_scale"),
            d_conditional=d_conditional, concat=concat, d_order=d_order, d_map=d_map,
            d_forwards=d_forwards, augment=get_augment(augment), check_finite=check_finite,
            g_forwards=check_g_forwards(g_forwards, objective, g_terms),
            fake_pool=None if fake_pool is None else FakePool(fake_pool),
            g_regularizer=check_g_regularizer(g_regularizer, latent),
            before_step=check_hooks(before_step, "before_step"),
            after_step=check_hooks(after_step, "after_step"),
            log_scores=flag(log_scores, "log_scores", TypeError), info_terms=info.terms,
            info_latent=info.latent, sync=data_parallel.GradientAverager() if distributed else None,
            d_step_if=check_d_step_if(d_step_if, self.schedule, self.accumulate, distributed,
                                      objective),
        )  # fmt: skip
        # The Step owns its progress; the game (what the phases read) shares it.
        self.progress = Progress()
        self.game = Game(Side("G", compiled(G, compile), opt_g, self.precision, outside=g_outside),
                         Side("D", compiled(D, compile, donate=False), opt_d, self.precision,
                              outside=d_outside),
                         options, self.progress, info=info.side)  # fmt: skip
        self._d_observer = DObserver(D, d_profile, self.game, self.schedule)
        self._models = (G, D, opt_g, opt_d)
        self._param_ids = self._parameter_ids()
        # the plain iteration from the second call on (None: each call takes the general path)
        self._steady: Steady | None = None
        # times load_state_dict ran: state tensors it replaced are not those a captured
        # CUDA graph reads (GraphedStep captures again)
        self.state_loads = 0

    def _parameter_ids(self) -> tuple:
        G, D = self._models[:2]
        return _ids(G.parameters(), D.parameters())

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

    def check_parameters(self) -> None:
        """Where a module registered a parameter or submodule since the last check (a
        layer may have been replaced), check that G's and D's parameters are still
        their optimizers' (each call does; a CUDA graph's replays do it too)."""
        g, d = self.game.g, self.game.d
        if g.params_moved() or d.params_moved():
            self._check_same_parameters(g.all_params(), d.all_params())

    def _check_same_parameters(self, g_params: list[Tensor], d_params: list[Tensor]) -> None:
        """A parameter replaced after the Step was built (``G.fc = nn.Linear(...)``) is in
        no optimizer and would never train: say so at the next call."""
        if _ids(g_params, d_params) == self._param_ids:
            return
        G, D, opt_g, opt_d = self._models
        try:
            check_optimizer(opt_g, G, "G", D)
            check_optimizer(opt_d, D, "D", G)
        except ValueError as e:
            raise ValueError(
                f"G's or D's parameters changed after the Step was built, and {e} (a layer "
                "replaced later is in no optimizer and would never train)"
            ) from None
        self._param_ids = self._parameter_ids()

    @property
    def objective(self) -> Objective:
        """The objective the Step was built with (its state: BEGAN's k)."""
        return self.game.options.objective

    @property
    def iteration(self) -> int:
        """Iterations run so far: the next call runs iteration ``iteration``, counting
        from 0 (what weights that are functions of the iteration read)."""
        return self.progress.iteration

    @iteration.setter
    def iteration(self, value: int) -> None:
        self.progress.iteration = value

    @property
    def real_batches(self) -> int | None:
        """How many real batches one call takes: the schedule's D steps per iteration
        (``None`` for ``d_steps="each_batch"``: as many as the call is given)."""
        return self.schedule.real_batches

    def batches_of(self, real: object) -> list[Batch]:
        """The real batches of one call on ``real``, checked (see :mod:`.real_input`)."""
        return real_input.real_batches(real, self.schedule, self.game.options.condition is not None)

    @property
    def d_profile(self) -> DProfile | None:
        """What D was observed (or declared) to be; ``None`` before the first step."""
        return self.game.d_profile

    def observe_d(self, real: object) -> DProfile:
        """Observe D on ``real`` (what one call takes) now, instead of at the first step,
        e.g. to keep the observation's three forwards out of a measured region."""
        self._d_observer.know(self.batches_of(real)[0])
        self._steady = None  # what may be merged is decided again at the next call
        return self.game.d_profile

    def batch_of(self, item: object) -> Batch:
        """What one D step takes from a loader's item (``x``, ``(x, y)`` or ``{"x": x,
        "y": y}``): the samples and, for a conditional Step, their condition; an
        unconditional Step drops y."""
        return real_input.batch_of(item, self.game.options.condition is not None)

    def feed(self, loader: Iterable, iterations: int | None = None) -> Iterator[object]:
        """What each call takes, from ``loader`` (any iterable of batches: ``x``,
        ``(x, y)`` or ``{"x": x, "y": y}``), for ``iterations`` calls (forever if None).

        ``real_batches`` items per call, restarting ``loader`` at each epoch's end (so
        ``d_steps=5`` just works). An unconditional Step takes x and drops y.
        ``d_steps="each_batch"`` is refused: how many batches each call takes is the
        caller's loop's to say.
        """
        if self.real_batches is None:
            raise ValueError(
                f"schedule {self.schedule!r} takes as many real batches as each call is "
                "given, which feed cannot know: call step(batches) with the batches your "
                "loop gives each iteration"
            )
        return real_input.feed(loader, iterations, self.real_batches, self.batch_of)

    def __call__(self, real: Tensor | Sequence[Tensor]) -> dict[str, Tensor]:
        """Run one training iteration on ``real``; return the iteration's losses. Called
        where autograd is off (``torch.no_grad()``), inside ``torch.autocast`` on the
        models' device (the Step's ``precision`` autocasts) or, for parametrized models,
        inside ``torch.nn.utils.parametrize.cached()``, it raises RuntimeError."""
        if self._steady is not None:
            logs = self._steady(real)
            if logs is not None:
                return logs
        # (with gradients off the error would be "D's loss does not depend on D's ...")
        game = self.game
        if why := refused_block("the Step", game.precision.device_type, game.eager_modules()):
            raise RuntimeError(why)
        batches = self.batches_of(real)
        self.check_parameters()
        self._check_process_group()
        self._d_observer.know(batches[0])
        logs = self._iteration(batches)
        if self.distributed:
            logs = data_parallel.average_logs(logs)
        logs.update(self.objective.end_iteration(logs))
        self.iteration += 1
        end_iteration = getattr(self.game.options.augment, "end_iteration", None)
        if end_iteration is not None:
            reduce = data_parallel.all_reduce_sum if self.distributed else None
            logs.update(end_iteration(self.iteration, reduce))
        self._steady = steady_for(self.game, self.schedule, batches, self._models[1],
                                  self.accumulate, self.distributed)  # fmt: skip
        return logs

    def _iteration(self, batches: list[Batch]) -> dict[str, Tensor]:
        """The schedule's phases (and InfoGAN's) on the checked real ``batches``."""
        try:
            if self.game.options.check_finite:
                for i, b in enumerate(batches):
                    if b.x.is_floating_point() and not torch.isfinite(b.x).all():
                        raise NonFiniteError(
                            f"real batch {i} has NaN or infinite values; nothing was updated"
                        )
            micro_batches = [real_input.micro_batches(b, self.accumulate) for b in batches]
            logs = self.schedule.run(self.game, micro_batches, self.iteration)
            if self.game.info is not None:
                logs.update(info_phase(self.game, micro_batches[-1]))
        except NonFiniteError as e:
            raise NonFiniteError(f"iteration {self.iteration}: {e}") from None
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
            "d_updates": self.progress.d_updates,
        }
        if self.game.options.g_regularizer is not None:
            state["g_updates"] = self.progress.g_updates
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
        self.progress.d_updates = int(state.get("d_updates", 0))
        self.progress.g_updates = int(state.get("g_updates", 0))
        self.state_loads += 1

    def _stateful_options(self) -> dict:
        """The options that hold objects of their own (None where not given), by key."""
        options = self.game.options
        return {"augment": options.augment, "fake_pool": options.fake_pool,
                "g_regularizer": options.g_regularizer}  # fmt: skip

    def _optional_parts(self) -> dict:
        """The parts of its state only some Steps have, by key: each saves and loads its own."""
        return {k: v for k, v in self._stateful_options().items() if hasattr(v, "state_dict")}

    def __repr__(self) -> str:
        profile = self.game.d_profile
        found = "not observed yet" if profile is None else profile.describe()
        forwards = "merged" if self.game.merge_d_forwards() else "as the loop's"
        game = self.game
        extras = {**self._stateful_options(), "info_terms": list(game.options.info_terms) or None}
        more = "".join(f", {k}={v!r}" for k, v in extras.items() if v is not None)
        return (
            f"Step(objective={self.objective!r}, schedule={self.schedule!r}, "
            f"concat={game.options.concat!r}, d_order={game.options.d_order!r}{more}, "
            f"D: {found}; D forwards {forwards})"
        )


def _ids(g_params: Iterable[Tensor], d_params: Iterable[Tensor]) -> tuple:
    return tuple(map(id, g_params)), tuple(map(id, d_params))
