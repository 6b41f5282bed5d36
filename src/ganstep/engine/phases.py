"""Phases: the building blocks of every schedule, each owning exactly one set of gradients.

A phase is one optimizer step of D (``d_phase``), of G (``g_phase``), of both at the
same parameters from one shared forward (``joint_phase``; the fused variant is in
:mod:`ganstep.engine.fused`), or of one side on its lazy regularizer (``lazy_phase``). Every
phase follows one outline (:func:`run_phase`) and computes the gradients of the sides
it steps and nothing else:

- the other side's parameters do not require grad while it runs (``frozen``), and
  are restored exactly as the user had them afterwards;
- backward calls name their ``inputs``, so no gradient leaks into a side whose
  optimizer is not about to step;
- G runs without a graph when its output is not needed for G's update.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor

from .batch import Batch
from .errors import NonFiniteError
from .fakes import (
    FakesAfterReal,
    Latents,
    MicroBatches,
    detach,
    draw,
    generate,
    images_at_latents,
)
from .game import Game
from .losses import d_call, d_loss, d_outputs, early_penalty, g_loss, own_step_penalty, scores
from .objectives import Logs, has_penalty
from .regularizers import PathLength, Regularizer
from .sides import Side
from .views import View, add_terms, any_reads_real, detached

# One micro-batch's part of a phase: (real, fake, k) -> its logs, its gradients added.
MicroBatchStep = Callable[[Batch, Batch | None, int], Logs]


def guard(game: Game, **losses: Tensor) -> None:
    """With ``game.options.check_finite``, raise before any optimizer steps on a non-finite loss."""
    if not game.options.check_finite:
        return
    for name, loss in losses.items():
        if not torch.isfinite(loss).all():
            raise NonFiniteError(f"{name} is {loss.item()}; no optimizer stepped on it")


def micro_batch_share(loss: Tensor, k: int) -> Tensor:
    """A micro-batch's part of a phase's loss: the mean over k equal micro-batches."""
    return loss if k == 1 else loss / k


def mean_logs(parts: list[Logs]) -> Logs:
    """The logs of a phase's micro-batches as one: each the mean of its k values."""
    if len(parts) == 1:
        return parts[0]
    return {key: sum(p[key] for p in parts) / len(parts) for key in parts[0]}


def run_phase(
    game: Game,
    sides: list[Side],
    real: MicroBatches,
    fake: list,
    micro: MicroBatchStep,
    *,
    lazy=False,
    closed: list[bool] | None = None,
) -> Logs:
    """The outline every phase shares: clear the gradients of the ``sides`` it steps,
    add each micro-batch's (``micro``), step each side once, and return the mean of
    the micro-batches' logs. Around each side's optimizer step run the user's hooks
    for this phase (``"d"``, ``"g"``, or ``"d_reg"``, ``"g_reg"`` for a ``lazy`` phase,
    in which every weight of the sides takes part in the step). Each side's step is
    followed by its lazy regularization when due. Where ``micro`` put True in
    ``closed`` (``d_step_if`` said no), no side steps."""
    for side in sides:
        side.zero_grad()
    k = len(real)
    parts = [micro(r, f, k) for r, f in zip(real, fake, strict=True)]
    if closed:  # D's step was decided against: its losses logged, nothing stepped
        return mean_logs(parts)
    if lazy:  # as SG2-ADA's `real_logits * 0`: every weight of G or D takes this step
        for p in (p for side in sides for p in side.module_params()):
            if p.grad is None:
                p.grad = torch.zeros_like(p)
    for side in sides:
        phase = f"{side.key}_reg" if lazy else side.key
        side.step(game.options.sync, game.hook("before", phase))
        if side is game.d and not lazy:
            game.options.objective.after_d_step(side.module)  # WGAN's clipping, before any hook
        after = game.hook("after", phase)
        if after is not None:
            after(side.module)
    logs = mean_logs(parts)
    if not lazy:
        for side in sides:
            logs.update(regularize_after(game, side, real))
    return logs


def _requiring_grad(batch: Batch) -> Batch:
    # a view, not a leaf: module hooks (FlopCounterMode) accept it
    return batch.with_x(batch.x.detach().requires_grad_(True).view_as(batch.x))


def real_for_d(game: Game, real: Batch) -> Batch:
    """The real batch of a D step: requiring grad when R1 or the objective's penalty
    reads its forward's graph."""
    objective = game.options.objective
    regularizer = objective.regularizer
    if (regularizer is not None and regularizer.in_loss()) or (
            objective.penalty_at == "loss_forwards"):  # fmt: skip
        return _requiring_grad(real)
    return real


def fake_for_d(game: Game, fake: Batch) -> Batch:
    """The fake batch of D's loss forwards: requiring grad where the penalty reads its
    forward's graph."""
    if game.options.objective.penalty_at == "loss_forwards" and not fake.x.requires_grad:
        return _requiring_grad(fake)
    return fake


def inputs_for_d(game: Game, real: Batch, fake: Batch) -> tuple[Batch, Batch]:
    """The real and fake batch of D's loss forwards (:func:`real_for_d`,
    :func:`fake_for_d`)."""
    return real_for_d(game, real), fake_for_d(game, fake)


def pooled(game: Game, fake: Batch) -> Batch:
    """``fake``, or with a fake pool what the pool gives in its place."""
    pool = game.options.fake_pool
    return fake if pool is None else fake.with_x(pool.query(fake.x))


def d_phase(game: Game, real: MicroBatches, fake: MicroBatches | list[FakesAfterReal]) -> Logs:
    """One step of D on ``real`` and ``fake`` (already cut from G's graph, or made by
    :class:`~ganstep.engine.fakes.FakesAfterReal` after D's real forward; with a fake
    pool, D sees what the pool gives in place of ``fake``). The objective acts on D first
    (:meth:`~ganstep.engine.objectives.Objective.before_d_step`)."""
    game.options.objective.before_d_step(game.d.module)  # WGAN(clamp_at="before")
    if game.keeps_d_step_real:  # this step's outputs on its real batches, for G's terms
        game.d_step_real.clear()
    if game.options.fake_pool is not None:  # every micro-batch's before D's forwards
        fake = [f if isinstance(f, FakesAfterReal) else pooled(game, f) for f in fake]
    closed: list[bool] = []
    logs = run_phase(game, [game.d], real, fake, partial(d_micro_batch, game, closed=closed),
                     closed=closed)  # fmt: skip
    if game.options.objective.penalty_at == "own_step":  # the fakes that step read
        seen = [detach(f.made)[0] if isinstance(f, FakesAfterReal) else f for f in fake]
        logs.update(penalty_phase(game, real, seen))
    return logs


def penalty_phase(game: Game, real: MicroBatches, fake: MicroBatches) -> Logs:
    """With ``penalty_at = "own_step"`` (SAGAN's WGAN-GP): the objective's penalty in a D
    step of its own, right after D's step on its losses, on the real and fake batches
    that step read, at D's updated weights; nothing elsewhere. D's optimizer steps on
    the penalty alone (its ``"d_reg"`` hooks around it), logged as ``gp``."""
    if not has_penalty(game.options.objective):
        return {}
    side, k = game.d, len(real)
    side.zero_grad()
    parts = []
    for r, f in zip(real, fake, strict=True):
        with game.precision.autocast():
            penalty = own_step_penalty(game, r, f)
        guard(game, gp=penalty)
        side.backward(micro_batch_share(penalty, k))
        parts.append({"gp": penalty.detach()})
    side.step(game.options.sync, game.hook("before", "d_reg"))
    after = game.hook("after", "d_reg")
    if after is not None:
        after(side.module)
    return mean_logs(parts)


def d_phase_making_fakes(
    game: Game, real: MicroBatches, latents: list[Latents] | None = None, *, graph: bool = False
) -> tuple[Logs, list[Latents], MicroBatches]:
    """One step of D on fakes G makes for it from ``latents`` (drawn when ``None``):
    before D's forwards, or after D's forward on the real batch where the Step's
    ``d_order`` is ``"real_g_fake"`` (unless D is called once on both batches, which
    ``"auto"`` chooses only for a D that draws no random numbers: the order is then
    the same computation). Returns the step's logs, the latents, and G's fakes (with
    G's graph where ``graph``, for a G step that reuses them)."""
    if game.options.d_order == "real_g_fake" and not game.concat_d_calls():
        later = FakesAfterReal(game, real, latents, graph)
        logs = d_phase(game, real, [later])
        return logs, later.latents, later.made
    latents = draw(game, real) if latents is None else latents
    fake = generate(game, latents, real, graph=graph)
    return d_phase(game, real, detach(fake)), latents, fake


def d_micro_batch(game: Game, real: Batch, fake: Batch | FakesAfterReal, k: int,
                  closed: list[bool] | None = None) -> Logs:  # fmt: skip
    """One micro-batch of D's step: D on real and fake, L_D, its share of D's gradients;
    with ``d_step_if``, none where it says no (True put in ``closed``; logged as
    ``d_step``, 1 or 0)."""
    given = real
    with game.precision.autocast():
        if isinstance(fake, FakesAfterReal):  # d_order="real_g_fake": G between D's forwards
            real = real_for_d(game, real)
            out_real = d_call(game, real, game.real_forward_eager())
            fake = fake_for_d(game, pooled(game, fake()))
            out_fake = d_call(game, fake, game.fake_forward_eager())
            early = None  # (a penalty before D's forwards is refused with this order)
        else:
            real, fake = inputs_for_d(game, real, fake)
            early = early_penalty(game, real, fake)
            out_real, out_fake = d_outputs(game, real, fake)
        view = View("D", real, fake, out_real, out_fake, game.progress.iteration)
        loss, logs, _, _ = d_loss(game, view, early)
    guard(game, loss_d=loss)
    if game.keeps_d_step_real:  # (its forward ran, whether D steps or not)
        game.d_step_real.append((given, detached(out_real), game.progress.iteration))
    if game.options.d_step_if is not None and closed is not None:
        steps = d_steps_here(game.options.d_step_if, view)
        logs["d_step"] = loss.new_tensor(float(steps)).detach()
        if not steps:
            closed.append(True)
            return logs
    game.d.backward(micro_batch_share(loss, k))
    return logs


def d_steps_here(gate: Callable[[View], object], view: View) -> bool:
    """What ``d_step_if`` says of this D step (a bool, or a tensor of one element read on
    the host)."""
    said = gate(view)
    if isinstance(said, torch.Tensor) and said.numel() != 1:
        raise ValueError(
            f"d_step_if must return a bool or a tensor of one element (whether D steps); "
            f"it returned a tensor of shape {tuple(said.shape)}"
        )
    try:
        return bool(said)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"d_step_if must return a bool or a tensor of one element (whether D steps); "
            f"it returned {type(said).__name__} ({e})"
        ) from e


def g_phase(game: Game, fake: MicroBatches, real: MicroBatches) -> Logs:
    """One step of G on ``fake`` (which carries G's graph); D only passes gradients through."""
    with game.d.frozen():
        return run_phase(game, [game.g], real, fake, partial(g_micro_batch, game))


def g_micro_batch(game: Game, real: Batch, fake: Batch, k: int) -> Logs:
    """One micro-batch of G's step: D's forwards (on real without a graph, when L_G
    reads it; as the Step's ``g_forwards`` lists them, where given), L_G from the last
    of each kind, its share of G's gradients."""
    options = game.options
    needs_real = options.objective.g_needs_real or any_reads_real(options.g_terms)
    forwards = options.g_forwards or (("real", "fake") if needs_real else ("fake",))
    last_real = len(forwards) - 1 - forwards[::-1].index("real") if "real" in forwards else -1
    last_fake = len(forwards) - 1 - forwards[::-1].index("fake")
    with game.precision.autocast():
        out_real = d_step_real(game, real) if game.keeps_d_step_real else None
        s_real = None
        for i, forward in enumerate(forwards):
            if i == last_fake:
                out_fake = d_call(game, fake)
                continue
            with torch.no_grad():  # D(x) is a constant for G; a thrown-away D(G(z)) too
                out = d_call(game, real if forward == "real" else fake)
            if i == last_real and needs_real:
                out_real, s_real = out, scores(game, out, real.x)
        s_fake = scores(game, out_fake, fake.x)
        view = View("G", real, fake, out_real, out_fake, game.progress.iteration)
        loss, logs = g_loss(game, view, s_real, s_fake)
    guard(game, loss_g=loss)
    game.g.backward(micro_batch_share(loss, k))
    logs["loss_g"] = loss.detach()
    return logs


def d_step_real(game: Game, real: Batch) -> object:
    """D's output on ``real`` as this call's last D step computed it, detached, for a G
    term marked :func:`~ganstep.engine.views.reads_d_step_real` (taken: one G step reads
    it once); raises where no D step on that batch came before G's in this call."""
    kept = game.d_step_real.pop(0) if game.d_step_real else None
    if kept is None or kept[0] is not real or kept[2] != game.progress.iteration:
        game.d_step_real.clear()
        raise ValueError(
            "a G term marked reads_d_step_real reads D's output on the real batch from the "
            "D step before G's on that batch in the same call, and there was none: G's "
            "step comes first (g_first, or a simultaneous step forwarding D in a loop) or "
            "has a real batch of its own (fresh_real). Use reads_real there: G's phase "
            "then forwards D on the real batch itself"
        )
    return kept[1]


def joint_phase(game: Game, real: MicroBatches, fake: MicroBatches) -> Logs:
    """One step of D and one of G at the same parameters, from one D forward on ``fake``.

    D's forward on the fake batch is shared: L_D's backward takes D's weight gradients
    from it, L_G's backward takes the gradient at G's output from it. Each backward
    names its inputs, so neither loss reaches the other side. The graph is kept
    between the two backward calls only, because both read it.
    """
    logs = run_phase(game, [game.d, game.g], real, fake, partial(joint_micro_batch, game))
    if game.options.objective.penalty_at == "own_step":
        logs.update(penalty_phase(game, real, detach(fake)))
    return logs


def joint_micro_batch(game: Game, real: Batch, fake: Batch, k: int) -> Logs:
    """One micro-batch of the joint step: D's forwards once, L_D and L_G from them, a
    backward for each into its own side."""
    real, fake = inputs_for_d(game, real, fake)
    with game.precision.autocast():
        early = early_penalty(game, real, fake)
        out_real, out_fake = d_outputs(game, real, fake)
        view = View("joint", real, fake, out_real, out_fake, game.progress.iteration)
        loss_d, logs, s_real, s_fake = d_loss(game, view, early)
        loss_g, g_logs = g_loss(game, view, s_real, s_fake)
    guard(game, loss_d=loss_d, loss_g=loss_g)
    game.d.backward(micro_batch_share(loss_d, k), retain_graph=True)
    game.g.backward(micro_batch_share(loss_g, k))
    logs.update(g_logs)
    logs["loss_g"] = loss_g.detach()
    return logs


def separate_phases(game: Game, real: MicroBatches, fake: MicroBatches) -> Logs:
    """Both gradients at (g_t, d_t), with the loop's D forwards in PyTorch-GAN's order:
    G's step on ``fake`` (D forwarded for G's loss), then D's step on the same fake
    batch cut from G's graph, with forwards of its own. For a D whose forward draws
    random numbers or advances state (Dropout, spectral norm), sharing one forward
    between the two losses would change what each forward computes."""
    logs = g_phase(game, fake, real)
    logs.update(d_phase(game, real, detach(fake)))
    return logs


def regularize_after(game: Game, side: Side, real: MicroBatches) -> Logs:
    """Count the side's step; run its lazy regularizer after it when due: R1 for D on
    the real batch, path length for G on a fresh z."""
    if side is game.info:
        return {}
    regularizer = game.regularizer_of(side)
    steps = game.progress.count_update(side.key)
    if regularizer is None or not regularizer.due(steps):
        return {}
    if side is game.d:
        return lazy_phase(game, side, regularizer, real, partial(_r1_loss, game, regularizer))
    # SG2-ADA's Greg phase draws a batch's z of its own; rosinality's n // shrink rows
    if regularizer.z_draw == "shrunk":
        real = [b.rows(slice(0, regularizer.rows(b.n))) for b in real]
    latents = draw(game, real)
    return lazy_phase(game, side, regularizer, latents, partial(_path_length, game, regularizer))


def lazy_phase(
    game: Game,
    side: Side,
    regularizer: Regularizer,
    inputs: list,
    penalty_of: Callable[[object], Tensor],
) -> Logs:
    """A lazy regularizer's own step of ``side`` (StyleGAN2): each micro-batch's penalty
    (``penalty_of`` its input: a real batch, or G's z), weighted by the regularizer's
    interval, then one optimizer step in which every weight of the side takes part.
    Logged under the regularizer's ``log_key`` (``gp`` for R1, ``pl`` for path length)."""
    micro = partial(lazy_micro_batch, game, side, regularizer, penalty_of)
    return run_phase(game, [side], inputs, [None] * len(inputs), micro, lazy=True)


def lazy_micro_batch(
    game: Game,
    side: Side,
    regularizer: Regularizer,
    penalty_of: Callable[[object], Tensor],
    item: object,
    _: None,
    k: int,
) -> Logs:
    """One micro-batch of a lazy step: the penalty, weighted by the interval, backward."""
    penalty = penalty_of(item)
    guard(game, **{regularizer.log_key: penalty})
    side.backward(micro_batch_share(penalty * regularizer.every, k))
    return {regularizer.log_key: penalty.detach()}


def _r1_loss(game: Game, regularizer: Regularizer, real: Batch) -> Tensor:
    """R1 on its own forward of D on the real batch (the lazy phase's; eager, as
    compiled code has no double backward)."""
    x = real.x.detach().requires_grad_(True).view_as(real.x)
    with game.precision.autocast():
        found = scores(game, d_call(game, real.with_x(x), eager=True), x)
        game.observe_real(found, d_step=False)
        return regularizer.penalty(x, sum(s.sum() for s in found))


def _path_length(game: Game, regularizer: PathLength, latents: Latents) -> Tensor:
    """Path length on the phase's z (its first ``n // shrink`` rows where a batch's z was
    drawn): G's image from them and the latents the gradient is taken at."""
    img, ws = images_at_latents(game, latents, regularizer)
    with game.precision.autocast():  # as the forward: G's image may be half precision
        return regularizer.penalty(img, ws)


def info_phase(game: Game, real: MicroBatches) -> Logs:
    """InfoGAN's third step (PyTorch-GAN's ``optimizer_info``): fresh latents (from
    ``info_latent``, else ``latent``), G's fakes from them, D forwarded on them with a
    graph into G and D, the info terms (which read ``view.fake.z`` and ``view.d_fake``:
    the codes and D's Q heads), one step of the info optimizer over the parameters it
    holds. Logged as ``loss_info`` and by term."""
    latents = draw(game, real, game.options.info_latent)
    return run_phase(game, [game.info], real, latents, partial(info_micro_batch, game))


def info_micro_batch(game: Game, real: Batch, latents: Latents, k: int) -> Logs:
    """One micro-batch of the info step: G's fakes from ``latents`` with a graph, D's Q
    heads on them, the info terms, their share of the info optimizer's gradients."""
    (fake,) = generate(game, [latents], [real], graph=True)
    with game.precision.autocast():
        out = d_call(game, fake)
        zero = torch.zeros((), device=fake.x.device)
        view = View("info", real, fake, None, out, game.progress.iteration)
        loss, logs = add_terms(zero, game.options.info_terms, view)
    guard(game, loss_info=loss)
    game.info.backward(micro_batch_share(loss, k))
    logs["loss_info"] = loss.detach()
    return logs
