"""Phases: the building blocks of every schedule, each owning exactly one set of gradients.

A phase is one optimizer step of D (``d_phase``), of G (``g_phase``), or of both at
the same parameters from one shared forward (``joint_phase``). Every phase computes
the gradients of the module it updates and nothing else:

- the other module's parameters do not require grad while it runs (``frozen``),
  and are restored exactly as the user had them afterwards;
- backward calls name their ``inputs``, so no gradient leaks into a module whose
  optimizer is not about to step;
- G runs without a graph when its output is not needed for G's update.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .batch import Batch, Condition, cat, split, split_rows
from .d_profile import KNOWN_MIXING, DProfile, known_mixing_layers
from .errors import NonFiniteError
from .objectives import Logs, Objective
from .precision import Precision
from .views import Term, View, add_terms, adversarial, check_adversarial

D_ORDERS = ("real_first", "fake_first")
D_FORWARDS = ("auto", "loop", "merged")


@dataclass
class Pair:
    """What the phases act on: both modules, their optimizers, the objective and z."""

    G: nn.Module
    D: nn.Module
    opt_g: torch.optim.Optimizer
    opt_d: torch.optim.Optimizer
    objective: Objective
    latent: Callable[[int], Tensor] | None
    concat: bool = False
    precision: Precision = field(default_factory=Precision)
    # Called with the parameters a phase is about to step, after their backward
    # (data parallel training averages their gradients across processes there).
    sync: Callable[[list[nn.Parameter]], None] | None = None
    # Check each loss on the host before stepping on it (Step(check_finite=True)).
    check_finite: bool = False
    # None (unconditional), "real" (a fake is made for its real sample's condition) or
    # a sampler condition(n) of the fakes' conditions.
    condition: str | Callable[[int], Condition] | None = None
    # Extra weighted terms of L_G and L_D, and the scale of D's adversarial loss.
    g_terms: dict[str, tuple[float, Term]] = field(default_factory=dict)
    d_terms: dict[str, tuple[float, Term]] = field(default_factory=dict)
    d_scale: float = 1.0
    # D steps taken so far: lazy R1 (r1_every = k) regularizes every k-th one.
    d_updates: int = 0
    # The order of D's forwards on the real and the fake batch in a D step.
    d_order: str = "real_first"
    # "auto": merge D forwards where D's profile allows it; "loop": the loop's forwards
    # always; "merged": merge whatever D is (the user asked, knowing the difference).
    d_forwards: str = "auto"
    # What D was observed (or declared) to be; None until the first step.
    d_profile: DProfile | None = None
    # D's 2-D output (n, k) is a map of k scores per sample, not a mistake.
    d_map: bool = False
    _mixing: list[nn.Module] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._mixing = [m for m in self.D.modules() if isinstance(m, KNOWN_MIXING)]

    def mixes_samples(self) -> bool:
        """Whether D mixes samples: a BatchNorm layer in training mode now (cheap: per
        call), or D's observed or declared profile says so."""
        profiled = self.d_profile is not None and self.d_profile.mixing
        return profiled or any(m.training for m in self._mixing)

    def mixing_reason(self) -> str:
        if self.d_profile is not None and self.d_profile.mixing:
            return self.d_profile.reason("mixing")
        return f"BatchNorm in training mode ({', '.join(known_mixing_layers(self.D))})"

    def merge_d_forwards(self) -> bool:
        """Whether two D forwards of the loop may be one here (``simultaneous``)."""
        if self.d_forwards != "auto":
            return self.d_forwards == "merged"
        return self.d_profile is None or self.d_profile.mergeable

    def check_concat(self) -> None:
        """Refuse one D call on real and fake while D mixes samples."""
        if self.concat and self.mixes_samples():
            raise ValueError(
                "concat=True runs D once on cat(real, fake), which changes the math when D "
                f"mixes samples; D does: {self.mixing_reason()}. Use concat=False (or put "
                "those layers in eval mode)."
            )


def trainable(module: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``module`` that the user lets train (``requires_grad``)."""
    return [p for p in module.parameters() if p.requires_grad]


@contextmanager
def frozen(module: nn.Module) -> Iterator[None]:
    """Switch off weight gradients of ``module``; restore exactly the user's flags after."""
    params = trainable(module)
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def update(pair: Pair, who: str) -> None:
    """Step D (``who="d"``) or G (``"g"``) on the gradients its phase computed."""
    module, opt = (pair.D, pair.opt_d) if who == "d" else (pair.G, pair.opt_g)
    if pair.sync is not None:
        pair.sync(trainable(module))
    pair.precision.step(opt, who)


def guard(pair: Pair, **losses: Tensor) -> None:
    """With ``pair.check_finite``, raise before any optimizer steps on a non-finite loss."""
    if not pair.check_finite:
        return
    for name, loss in losses.items():
        if not torch.isfinite(loss).all():
            raise NonFiniteError(f"{name} is {loss.item()}; no optimizer stepped on it")


# One batch as the k micro-batches a phase accumulates over (k = 1 without accumulation).
Micro = list[Batch]


@dataclass(frozen=True, eq=False)
class Code:
    """What G is called with for one fake batch: z (``None`` without a latent) and the
    condition the fakes are made for."""

    z: Tensor | None
    c: Condition = None


def draw(pair: Pair, real: Micro) -> list[Code]:
    """z from the user's ``latent`` and the fakes' conditions, for a batch like ``real``:
    one draw for the whole batch, split as ``real`` is into micro-batches (so that
    accumulating over them sees exactly the z of one big batch)."""
    sizes = [b.n for b in real]
    n = sum(sizes)
    z = None
    if pair.latent is not None:
        z = pair.latent(n)
        if not isinstance(z, Tensor) or z.dim() == 0 or z.shape[0] != n:
            got = tuple(z.shape) if isinstance(z, Tensor) else type(z).__name__
            raise ValueError(f"latent({n}) must return a tensor with {n} rows, got {got}")
    zs = [None] * len(real) if z is None else list(torch.split(z, sizes))
    cs = [b.c if pair.condition == "real" else None for b in real]
    if callable(pair.condition):
        c = pair.condition(n)
        if isinstance(c, list):
            c = tuple(c)
        whole = Batch(torch.empty(n, 0), c)
        whole.check(f"condition({n})")
        cs = [part.c for part in split_rows(whole, sizes)]
    return [Code(zi, ci) for zi, ci in zip(zs, cs, strict=True)]


def generate(pair: Pair, codes: list[Code], like: Micro, *, graph: bool) -> Micro:
    """G's fake batch for ``codes``, one G call per micro-batch, with G's graph only when
    G's update will need it; checked against ``like``. G is called ``G(z)``,
    ``G(z, c)`` or ``G(c)``."""
    return [_generate(pair, c, b, graph) for c, b in zip(codes, like, strict=True)]


def _generate(pair: Pair, code: Code, like: Batch, graph: bool) -> Batch:
    args = [a for a in (code.z, code.c) if a is not None]
    try:
        with pair.precision.autocast(), torch.set_grad_enabled(graph):
            fake = pair.G(*args)
    except RuntimeError as e:
        # torch's shape errors name matrices and channels, not z: say where z came from
        words = ("shape", "size", "channels", "dimension")
        if code.z is None or isinstance(e, torch.OutOfMemoryError):
            raise
        if not any(w in str(e) for w in words):
            raise
        raise ValueError(
            f"G failed on z of shape {tuple(code.z.shape)} from latent({code.z.shape[0]}): "
            f"{str(e).splitlines()[0]}. Does latent(n) return the input G takes?"
        ) from e
    x = like.x
    dtypes = (x.dtype, pair.precision.dtype)  # autocast may give G's output its dtype
    if not isinstance(fake, Tensor):
        raise TypeError(f"G must return a tensor of samples, got {type(fake).__name__}")
    if fake.dim() == 0 or fake.shape[0] != like.n:
        rows = "a scalar" if fake.dim() == 0 else f"{fake.shape[0]} samples"
        raise ValueError(
            f"G returned {rows} for {like.n} z (and conditions): G must return one sample "
            "per row of its input; check G's reshapes (a view(-1, ...) with the wrong size)"
        )
    if fake.shape[1:] != x.shape[1:] or fake.dtype not in dtypes or fake.device != x.device:
        raise ValueError(
            f"the real batch does not match G's output: real samples are {tuple(x.shape[1:])} "
            f"{x.dtype} on {x.device}, G produces {tuple(fake.shape[1:])} {fake.dtype} "
            f"on {fake.device}"
        )
    return Batch(fake, code.c)


def cut(fake: Micro) -> Micro:
    """``fake`` cut from G's graph (its condition is data and carries no graph)."""
    return [f.with_x(f.x.detach()) for f in fake]


def _share(loss: Tensor, k: int) -> Tensor:
    """A micro-batch's part of a phase's loss: the mean over k equal micro-batches."""
    return loss if k == 1 else loss / k


def _mean_logs(parts: list[Logs]) -> Logs:
    """The logs of a phase's micro-batches as one: each the mean of its k values."""
    if len(parts) == 1:
        return parts[0]
    return {key: sum(p[key] for p in parts) / len(parts) for key in parts[0]}


def d_call(pair: Pair, batch: Batch) -> object:
    """D's whole output on ``batch``: ``D(x)``, or ``D(x, c)`` for a conditional batch."""
    return pair.D(batch.x) if batch.c is None else pair.D(batch.x, batch.c)


def d_outputs(pair: Pair, real: Batch, fake: Batch) -> tuple[object, object]:
    """D's outputs on the real and the fake batch, forwarded in ``pair.d_order`` (one D
    call on both, concatenated in that order, if ``concat``)."""
    if pair.concat:
        pair.check_concat()
        if pair.d_order == "fake_first":
            out_fake, out_real = split(d_call(pair, cat(fake, real)), fake.n)
            return out_real, out_fake
        return split(d_call(pair, cat(real, fake)), real.n)
    if pair.d_order == "fake_first":
        out_fake = d_call(pair, fake)
        return d_call(pair, real), out_fake
    return d_call(pair, real), d_call(pair, fake)


def scores(pair: Pair, out: object, inp: Tensor) -> list[Tensor]:
    """The objective's scores of each adversarial output of D's ``out`` on ``inp``.

    Under autocast the scores are cast to float32: the losses are computed in full
    precision whatever D ran in.
    """
    if pair.objective.reads_scores:
        check_adversarial(out, inp.shape[0], pair.d_map)
    found = [pair.objective.score(o, inp) for o in adversarial(out)]
    return found if pair.precision.dtype is None else [s.float() for s in found]


def _summed(parts: list[tuple[Tensor, Logs]]) -> tuple[Tensor, Logs]:
    """A multi-scale D's losses: summed, and so are their logs."""
    loss, logs = parts[0]
    for more, more_logs in parts[1:]:
        loss = loss + more
        logs = {k: v + more_logs[k] for k, v in logs.items()}
    return loss, logs


def _penalty(pair: Pair, real: Batch, fake_cut: Batch) -> Tensor | None:
    """The objective's penalty on D at the real condition (an interpolate mixes x only)."""

    def adversarial_of(x: Tensor) -> Tensor:
        found = adversarial(d_call(pair, real.with_x(x)))
        if len(found) == 1:
            return found[0]
        return torch.cat([o.reshape(x.shape[0], -1) for o in found], 1)

    return pair.objective.penalty(adversarial_of, real.x, fake_cut.x)


def _r1_now(pair: Pair) -> bool:
    """Whether this D step takes R1 from its own D(real) forward (not lazily)."""
    return bool(pair.objective.r1) and pair.objective.r1_every == 1


def for_d(pair: Pair, real: Batch) -> Batch:
    """The real batch of a D step: requiring grad when R1 reads its forward's graph."""
    if _r1_now(pair):  # a view, not a leaf: module hooks (FlopCounterMode) accept it
        return real.with_x(real.x.detach().requires_grad_(True).view_as(real.x))
    return real


def _d_loss(pair: Pair, real: Batch, fake_cut: Batch, out_real, out_fake, fake_out_x: Tensor):
    """L_D: the scaled adversarial loss, the penalties and D's terms; and its logs."""
    s_real, s_fake = scores(pair, out_real, real.x), scores(pair, out_fake, fake_out_x)
    loss, logs = _summed([pair.objective.d_loss(r, f) for r, f in zip(s_real, s_fake, strict=True)])
    if pair.d_scale != 1.0:
        loss = pair.d_scale * loss
    penalty = _penalty(pair, real, fake_cut)
    if _r1_now(pair):  # from the D(real) forward above: no second forward
        penalty = pair.objective.real_penalty(real.x, sum(s.sum() for s in s_real))
    if penalty is not None:
        logs["gp"] = penalty.detach()
        loss = loss + penalty
    view = View("D", real, fake_cut, out_real, out_fake)
    loss, term_logs = add_terms(loss, pair.d_terms, view)
    logs.update(term_logs)
    logs["loss_d"] = loss.detach()
    return loss, logs, s_real, s_fake


def after_d_step(pair: Pair, real: Micro) -> Logs:
    """Count the D step; every ``r1_every``-th (the 1st, the (k+1)-th, ...) of a lazy R1
    objective, run StyleGAN2's regularization phase: D forward on the real batch, the
    penalty weighted k, its own optimizer step."""
    k, due = pair.objective.r1_every, pair.d_updates % pair.objective.r1_every == 0
    pair.d_updates += 1
    if not (pair.objective.r1 and k > 1 and due):
        return {}
    pair.opt_d.zero_grad(set_to_none=True)
    params, parts = trainable(pair.D), []
    for micro in real:
        x = micro.x.detach().requires_grad_(True).view_as(micro.x)
        with pair.precision.autocast():
            found = scores(pair, d_call(pair, micro.with_x(x)), x)
            penalty = pair.objective.real_penalty(x, sum(s.sum() for s in found))
        guard(pair, gp=penalty)
        loss = _share(penalty * k, len(real))
        torch.autograd.backward(pair.precision.scale(loss, "d"), inputs=params)
        parts.append({"gp": penalty.detach()})
    for p in params:  # as SG2-ADA's `real_logits * 0`: every weight takes this step
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    update(pair, "d")
    return _mean_logs(parts)


def _g_loss(pair: Pair, real: Batch, fake: Batch, out_real, out_fake, s_real, s_fake):
    """L_G: the adversarial loss and G's terms; and its logs."""
    objective = pair.objective
    if objective.g_needs_real:
        parts = [objective.g_loss(f, r.detach()) for f, r in zip(s_fake, s_real, strict=True)]
    else:
        parts = [objective.g_loss(f) for f in s_fake]
    loss, logs = _summed(parts)
    loss, term_logs = add_terms(loss, pair.g_terms, View("G", real, fake, out_real, out_fake))
    logs.update(term_logs)
    return loss, logs


def d_phase(pair: Pair, real: Micro, fake: Micro) -> Logs:
    """One step of D on ``real`` and ``fake`` (already cut from G's graph), its gradients
    summed over the micro-batches."""
    pair.opt_d.zero_grad(set_to_none=True)
    k, parts = len(real), []
    for r, f in zip(real, fake, strict=True):
        r = for_d(pair, r)
        with pair.precision.autocast():
            out_real, out_fake = d_outputs(pair, r, f)
            loss, logs, _, _ = _d_loss(pair, r, f, out_real, out_fake, f.x)
        guard(pair, loss_d=loss)
        torch.autograd.backward(
            pair.precision.scale(_share(loss, k), "d"), inputs=trainable(pair.D)
        )
        parts.append(logs)
    update(pair, "d")
    logs = _mean_logs(parts)
    logs.update(after_d_step(pair, real))
    return logs


def g_phase(pair: Pair, fake: Micro, real: Micro) -> Logs:
    """One step of G on ``fake`` (which carries G's graph); D only passes gradients through."""
    pair.opt_g.zero_grad(set_to_none=True)
    k, parts = len(real), []
    with frozen(pair.D):
        for f, r in zip(fake, real, strict=True):
            with pair.precision.autocast():
                out_real = s_real = None
                if pair.objective.g_needs_real:
                    with torch.no_grad():  # D(x) is a constant for G
                        out_real = d_call(pair, r)
                        s_real = scores(pair, out_real, r.x)
                out_fake = d_call(pair, f)
                s_fake = scores(pair, out_fake, f.x)
                loss, logs = _g_loss(pair, r, f, out_real, out_fake, s_real, s_fake)
            guard(pair, loss_g=loss)
            scaled = pair.precision.scale(_share(loss, k), "g")
            torch.autograd.backward(scaled, inputs=trainable(pair.G))
            logs["loss_g"] = loss.detach()
            parts.append(logs)
    update(pair, "g")
    return _mean_logs(parts)


def joint_phase(pair: Pair, real: Micro, fake: Micro) -> Logs:
    """One step of D and one of G at the same parameters, from one D forward on ``fake``.

    D's forward on the fake batch is shared: L_D's backward takes D's weight gradients
    from it, L_G's backward takes the gradient at G's output from it. Each backward
    names its inputs, so neither loss reaches the other module. The graph is kept
    between the two backward calls only, because both read it.
    """
    pair.opt_d.zero_grad(set_to_none=True)
    pair.opt_g.zero_grad(set_to_none=True)
    precision = pair.precision
    k, parts = len(real), []
    for r, f in zip(real, fake, strict=True):
        r = for_d(pair, r)
        with precision.autocast():
            out_real, out_fake = d_outputs(pair, r, f)
            loss_d, logs, s_real, s_fake = _d_loss(pair, r, cut([f])[0], out_real, out_fake, f.x)
            loss_g, g_logs = _g_loss(pair, r, f, out_real, out_fake, s_real, s_fake)
        guard(pair, loss_d=loss_d, loss_g=loss_g)
        d_params = trainable(pair.D)
        scaled_d = precision.scale(_share(loss_d, k), "d")
        torch.autograd.backward(scaled_d, inputs=d_params, retain_graph=True)
        torch.autograd.backward(precision.scale(_share(loss_g, k), "g"), inputs=trainable(pair.G))
        logs.update(g_logs)
        logs["loss_g"] = loss_g.detach()
        parts.append(logs)
    update(pair, "d")
    update(pair, "g")
    logs = _mean_logs(parts)
    logs.update(after_d_step(pair, real))
    return logs


def separate_phases(pair: Pair, real: Micro, fake: Micro) -> Logs:
    """Both gradients at (g_t, d_t), with the loop's D forwards in PyTorch-GAN's order:
    G's step on ``fake`` (D forwarded for G's loss), then D's step on the same fake
    batch cut from G's graph, with forwards of its own. For a D whose forward draws
    random numbers or advances state (Dropout, spectral norm), sharing one forward
    between the two losses would change what each forward computes."""
    logs = g_phase(pair, fake, real)
    logs.update(d_phase(pair, real, cut(fake)))
    return logs


def check_fusable(pair: Pair) -> None:
    """Refuse the fused step where it would not be exact (say why)."""
    objective = pair.objective
    if objective.not_fusable is not None:
        raise ValueError(
            f"simultaneous(fused=True) cannot use objective {objective.name!r}: "
            f"{objective.not_fusable}. Use simultaneous() without fused."
        )
    if pair.g_terms or pair.d_terms:
        raise ValueError(
            "simultaneous(fused=True) rescales D's gradient at the fake batch into G's, which "
            "extra loss terms would break; use simultaneous() without fused"
        )
    if pair.mixes_samples():
        raise ValueError(
            "simultaneous(fused=True) rescales D's gradient per sample, which is exact only "
            f"when D does not mix samples; D does: {pair.mixing_reason()}. Use "
            "simultaneous() without fused."
        )
    if not pair.merge_d_forwards():
        profile = pair.d_profile
        what = "the loop's forwards were asked for (d_forwards='loop')"
        if profile is not None and pair.d_forwards == "auto":
            what = f"D is {profile.describe()}"
        raise ValueError(
            "simultaneous(fused=True) shares one D forward on the fake batch between D's "
            f"and G's losses, where the loop runs two; {what}, so they differ. Use "
            "simultaneous() without fused (exact), or d_forwards='merged' to merge anyway "
            "(then D's random draws or state advance once where the loop's advance twice)."
        )


def _rows(values: Tensor, like: Tensor) -> Tensor:
    """``values`` (n,) shaped to broadcast over the samples of ``like``."""
    return values.reshape((-1,) + (1,) * (like.dim() - 1))


def _fusable_scores(pair: Pair, s_fake: list[Tensor], n: int) -> Tensor:
    """The one adversarial output the fused step can rescale exactly, or a clear refusal."""
    if len(s_fake) != 1:
        raise ValueError(
            f"simultaneous(fused=True) needs one adversarial output; D returned {len(s_fake)} "
            "(a multi-scale D). Use simultaneous() without fused."
        )
    (s,) = s_fake
    if s.numel() != n and not pair.objective.constant_ratio:
        raise ValueError(
            f"simultaneous(fused=True) with a map of scores per sample (D gave "
            f"{tuple(s.shape)}) is exact only when L_G's slope is a constant multiple of "
            f"L_D's (minimax, hinge, wgan_gp); {pair.objective.name!r} varies per element. "
            "Use simultaneous() without fused."
        )
    return s


def fused_joint_phase(pair: Pair, real: Micro, fake: Micro) -> Logs:
    """:func:`joint_phase` with one backward pass through D instead of two.

    With L_D = ... + mean(h_D(s_i)) and L_G = mean(h_G(s_i)) over the fake scores s_i,
    G's gradient at fake sample i is h_G'(s_i) / h_D'(s_i) times D's (FusedProp,
    arXiv 2004.03335). So one backward of L_D, taking the gradient at the fake batch
    on the way, gives D's weight gradients and, rescaled per sample, G's gradient at
    its output; G's backward starts from there. With a map of scores per sample the
    ratio must be one number per sample: objectives with a constant ratio only.

    Where D's slope h_D'(s_i) is 0 or too small for the product to keep its precision
    (hinge below -1, a saturated ns logit, LSGAN at 0), the rescaled gradient would be
    lost. Those samples alone go through D once more for G's gradient; that check
    reads one flag on the host.
    """
    check_fusable(pair)
    pair.opt_d.zero_grad(set_to_none=True)
    pair.opt_g.zero_grad(set_to_none=True)
    k = len(real)
    parts = [_fused_micro(pair, r, f, k) for r, f in zip(real, fake, strict=True)]
    update(pair, "d")
    update(pair, "g")
    logs = _mean_logs(parts)
    logs.update(after_d_step(pair, real))
    return logs


def _fused_micro(pair: Pair, real: Batch, fake: Batch, k: int) -> Logs:
    """The fused step's gradients of one of k micro-batches (summed into .grad)."""
    objective = pair.objective
    precision = pair.precision
    n = fake.n
    real = for_d(pair, real)
    fake_in = fake.with_x(fake.x.detach().requires_grad_(True))
    with precision.autocast():
        out_real, out_fake = d_outputs(pair, real, fake_in)
        loss_d, logs, _, s_fake = _d_loss(pair, real, fake.with_x(fake.x.detach()), out_real,
                                          out_fake, fake_in.x)  # fmt: skip
    s = _fusable_scores(pair, s_fake, n)
    guard(pair, loss_d=loss_d)
    backward_d = precision.scale(_share(loss_d, k), "d")
    torch.autograd.backward(backward_d, inputs=[*trainable(pair.D), fake_in.x])
    s = s.detach()
    loss_g, g_logs = objective.g_loss(s)
    guard(pair, loss_g=loss_g)
    d_slope, ratio = objective.fake_slopes(s)
    # D's backward carries weight h_D'(s) / (elements * k) (times D's loss scale and
    # d_scale) per score; below sqrt(tiny) of the dtype it runs in, it may underflow.
    scale_d = precision.factor("d", fake.x) * pair.d_scale
    weight = d_slope.abs() * scale_d / (s.numel() * k)
    hard = ~torch.isfinite(ratio) | (weight < torch.finfo(fake_in.x.dtype).tiny ** 0.5)
    hard = hard.reshape(n, -1).any(1)
    ratio = torch.where(hard, torch.zeros_like(hard, dtype=ratio.dtype), ratio.reshape(n, -1)[:, 0])
    # fake_in's gradient carries D's loss scale and d_scale; G's backward must carry G's.
    rescale = precision.factor("g", fake.x) / scale_d
    grad_in = fake_in.x.grad if fake_in.x.grad is not None else torch.zeros_like(fake_in.x)
    roots, grads = [fake.x], [(grad_in * _rows(ratio * rescale, grad_in)).to(fake.x.dtype)]
    if hard.any():
        idx = hard.nonzero().squeeze(1)
        rows = fake.rows(idx)
        with frozen(pair.D), precision.autocast():
            (s_hard,) = scores(pair, d_call(pair, rows), rows.x)
        # L_G is a mean over the n fakes: the hard ones carry weight len(idx) / n.
        roots.append(precision.scale(objective.g_loss(s_hard)[0], "g"))
        grads.append(torch.full_like(roots[-1], idx.numel() / (n * k)))
    torch.autograd.backward(roots, grads, inputs=trainable(pair.G))
    logs.update(g_logs)
    logs["loss_g"] = loss_g.detach()
    return logs
