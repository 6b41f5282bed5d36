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

from .objectives import Logs, Objective
from .precision import Precision

# Layers that mix the samples of a batch: with them, D(cat(real, fake)) is not
# D(real) next to D(fake), so real and fake may not share one D call.
SAMPLE_MIXING = (nn.modules.batchnorm._BatchNorm,)


def sample_mixing_layers(module: nn.Module) -> list[str]:
    """Names of the layers of ``module`` that mix samples in their current mode."""
    return [
        name or type(m).__name__
        for name, m in module.named_modules()
        if isinstance(m, SAMPLE_MIXING) and m.training
    ]


@dataclass
class Pair:
    """What the phases act on: both modules, their optimizers, the objective and z."""

    G: nn.Module
    D: nn.Module
    opt_g: torch.optim.Optimizer
    opt_d: torch.optim.Optimizer
    objective: Objective
    latent: Callable[[int], Tensor]
    concat: bool = False
    precision: Precision = field(default_factory=Precision)
    # Called with the parameters a phase is about to step, after their backward
    # (data parallel training averages their gradients across processes there).
    sync: Callable[[list[nn.Parameter]], None] | None = None
    _mixing: list[nn.Module] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._mixing = [m for m in self.D.modules() if isinstance(m, SAMPLE_MIXING)]

    def mixes_samples(self) -> bool:
        """Whether D has a sample-mixing layer in training mode now (cheap: per call)."""
        return any(m.training for m in self._mixing)

    def check_concat(self) -> None:
        """Refuse one D call on real and fake while D has a sample-mixing layer."""
        if self.concat and self.mixes_samples():
            layers = ", ".join(sample_mixing_layers(self.D))
            raise ValueError(
                "concat=True runs D once on cat(real, fake), which changes the math when D "
                f"mixes samples; D has BatchNorm in training mode ({layers}). "
                "Use concat=False, or put those layers in eval mode."
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


def draw(pair: Pair, n: int) -> Tensor:
    """One batch of z from the user's ``latent``, checked."""
    z = pair.latent(n)
    if not isinstance(z, Tensor) or z.dim() == 0 or z.shape[0] != n:
        got = tuple(z.shape) if isinstance(z, Tensor) else type(z).__name__
        raise ValueError(f"latent({n}) must return a tensor with {n} rows, got {got}")
    return z


def generate(pair: Pair, z: Tensor, like: Tensor, *, graph: bool) -> Tensor:
    """G(z), with G's graph only when G's update will need it; checked against ``like``."""
    with pair.precision.autocast(), torch.set_grad_enabled(graph):
        fake = pair.G(z)
    dtypes = (like.dtype, pair.precision.dtype)  # autocast may give G's output its dtype
    if fake.shape[1:] != like.shape[1:] or fake.dtype not in dtypes or fake.device != like.device:
        raise ValueError(
            f"the real batch does not match G's output: real samples are {tuple(like.shape[1:])} "
            f"{like.dtype} on {like.device}, G produces {tuple(fake.shape[1:])} {fake.dtype} "
            f"on {fake.device}"
        )
    return fake


def scores(pair: Pair, real: Tensor, fake: Tensor) -> tuple[Tensor, Tensor]:
    """D's per-sample scores on the real and the fake batch (one D call if ``concat``).

    Under autocast the scores are cast to float32: the losses are computed in full
    precision whatever D ran in.
    """
    if pair.concat:
        pair.check_concat()
        both = torch.cat([real, fake.to(real.dtype)])
        out = pair.D(both)
        n = real.shape[0]
        return _score(pair, out[:n], real), _score(pair, out[n:], fake)
    return _score(pair, pair.D(real), real), _score(pair, pair.D(fake), fake)


def _score(pair: Pair, out: Tensor, inp: Tensor) -> Tensor:
    s = pair.objective.score(out, inp)
    return s if pair.precision.dtype is None else s.float()


def _d_loss(pair: Pair, real: Tensor, fake_cut: Tensor, s_real: Tensor, s_fake: Tensor):
    loss, logs = pair.objective.d_loss(s_real, s_fake)
    penalty = pair.objective.penalty(pair.D, real, fake_cut)
    if penalty is not None:
        logs["gp"] = penalty.detach()
        loss = loss + penalty
    logs["loss_d"] = loss.detach()
    return loss, logs


def d_phase(pair: Pair, real: Tensor, fake: Tensor) -> Logs:
    """One step of D on ``real`` and ``fake`` (already cut from G's graph)."""
    pair.opt_d.zero_grad(set_to_none=True)
    with pair.precision.autocast():
        loss, logs = _d_loss(pair, real, fake, *scores(pair, real, fake))
    torch.autograd.backward(pair.precision.scale(loss, "d"), inputs=trainable(pair.D))
    update(pair, "d")
    return logs


def g_phase(pair: Pair, fake: Tensor, real: Tensor) -> Logs:
    """One step of G on ``fake`` (which carries G's graph); D only passes gradients through."""
    objective = pair.objective
    pair.opt_g.zero_grad(set_to_none=True)
    with frozen(pair.D):
        with pair.precision.autocast():
            s_real = None
            if objective.g_needs_real:
                with torch.no_grad():  # D(x) is a constant for G
                    s_real = _score(pair, pair.D(real), real)
            loss, logs = objective.g_loss(_score(pair, pair.D(fake), fake), s_real)
        torch.autograd.backward(pair.precision.scale(loss, "g"), inputs=trainable(pair.G))
    update(pair, "g")
    logs["loss_g"] = loss.detach()
    return logs


def joint_phase(pair: Pair, real: Tensor, fake: Tensor) -> Logs:
    """One step of D and one of G at the same parameters, from one D forward on ``fake``.

    D's forward on the fake batch is shared: L_D's backward takes D's weight gradients
    from it, L_G's backward takes the gradient at G's output from it. Each backward
    names its inputs, so neither loss reaches the other module. The graph is kept
    between the two backward calls only, because both read it.
    """
    objective = pair.objective
    pair.opt_d.zero_grad(set_to_none=True)
    pair.opt_g.zero_grad(set_to_none=True)
    precision = pair.precision
    with precision.autocast():
        s_real, s_fake = scores(pair, real, fake)
        loss_d, logs = _d_loss(pair, real, fake.detach(), s_real, s_fake)
        s_real_g = s_real.detach() if objective.g_needs_real else None
        loss_g, g_logs = objective.g_loss(s_fake, s_real_g)
    d_params = trainable(pair.D)
    torch.autograd.backward(precision.scale(loss_d, "d"), inputs=d_params, retain_graph=True)
    torch.autograd.backward(precision.scale(loss_g, "g"), inputs=trainable(pair.G))
    update(pair, "d")
    update(pair, "g")
    logs.update(g_logs)
    logs["loss_g"] = loss_g.detach()
    return logs


def check_fusable(pair: Pair) -> None:
    """Refuse the fused step where it would not be exact (say why)."""
    objective = pair.objective
    if objective.not_fusable is not None:
        raise ValueError(
            f"simultaneous(fused=True) cannot use objective {objective.name!r}: "
            f"{objective.not_fusable}. Use simultaneous() without fused."
        )
    if pair.mixes_samples():
        layers = sample_mixing_layers(pair.D)
        raise ValueError(
            "simultaneous(fused=True) rescales D's gradient per sample, which is exact only "
            f"when D does not mix samples; D has BatchNorm in training mode ({', '.join(layers)}). "
            "Use simultaneous() without fused, or a D without BatchNorm."
        )


def _rows(values: Tensor, like: Tensor) -> Tensor:
    """``values`` (n,) shaped to broadcast over the samples of ``like``."""
    return values.reshape((-1,) + (1,) * (like.dim() - 1))


def fused_joint_phase(pair: Pair, real: Tensor, fake: Tensor) -> Logs:
    """:func:`joint_phase` with one backward pass through D instead of two.

    With L_D = ... + mean(h_D(s_i)) and L_G = mean(h_G(s_i)) over the fake scores s_i,
    G's gradient at fake sample i is h_G'(s_i) / h_D'(s_i) times D's (FusedProp,
    arXiv 2004.03335). So one backward of L_D, taking the gradient at the fake batch
    on the way, gives D's weight gradients and, rescaled per sample, G's gradient at
    its output; G's backward starts from there.

    Where D's slope h_D'(s_i) is 0 or too small for the product to keep its precision
    (hinge below -1, a saturated ns logit, LSGAN at 0), the rescaled gradient would be
    lost. Those samples alone go through D once more for G's gradient; that check
    reads one flag on the host.
    """
    objective = pair.objective
    check_fusable(pair)
    pair.opt_d.zero_grad(set_to_none=True)
    pair.opt_g.zero_grad(set_to_none=True)
    precision = pair.precision
    fake_in = fake.detach().requires_grad_(True)
    with precision.autocast():
        s_real, s_fake = scores(pair, real, fake_in)
        loss_d, logs = _d_loss(pair, real, fake.detach(), s_real, s_fake)
    torch.autograd.backward(precision.scale(loss_d, "d"), inputs=[*trainable(pair.D), fake_in])
    s_fake = s_fake.detach()
    loss_g, g_logs = objective.g_loss(s_fake)
    d_slope, ratio = objective.fake_slopes(s_fake)
    # D's backward carries weight h_D'(s_i) / n (times D's loss scale) per sample; below
    # sqrt(tiny) of the dtype it runs in, it may underflow on the way to the fake batch.
    scale_d = precision.factor("d", fake)
    weight = d_slope.abs() * scale_d / fake.shape[0]
    hard = ~torch.isfinite(ratio) | (weight < torch.finfo(fake_in.dtype).tiny ** 0.5)
    ratio = torch.where(hard, torch.zeros_like(ratio), ratio)
    # fake_in.grad carries D's loss scale; G's backward must carry G's.
    rescale = precision.factor("g", fake) / scale_d
    grad_in = fake_in.grad if fake_in.grad is not None else torch.zeros_like(fake_in)
    roots, grads = [fake], [(grad_in * _rows(ratio * rescale, fake_in)).to(fake.dtype)]
    if hard.any():
        idx = hard.nonzero().squeeze(1)
        with frozen(pair.D), precision.autocast():
            s_hard = _score(pair, pair.D(fake[idx]), fake[idx])
        # L_G is a mean over the n fakes: the hard ones carry weight len(idx) / n.
        roots.append(precision.scale(objective.g_loss(s_hard)[0], "g"))
        grads.append(torch.full_like(roots[-1], idx.numel() / fake.shape[0]))
    torch.autograd.backward(roots, grads, inputs=trainable(pair.G))
    update(pair, "d")
    update(pair, "g")
    logs.update(g_logs)
    logs["loss_g"] = loss_g.detach()
    return logs
