"""Objectives: the losses of D and G, written on D's scores.

An objective sees D's adversarial output (see :mod:`ganstep.engine.views`) only through
:meth:`Objective.score`, which turns it into scores: one number per sample (a logit,
or BEGAN's reconstruction error), or a map of them per sample (PatchGAN). Losses are
means over all scores, exactly as defined in the docstring of each class. State
(BEGAN's ``k``) stays a tensor on the device: no ``.item()`` anywhere, so a step never
waits for the GPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checks import non_negative, scale_factor
from .registry import resolve
from .regularizers import R1, WithR1
from .regularizers import lazy_regularization as lazy_regularization  # its old home

Logs = dict[str, Tensor]


class Objective:
    """Base class. Subclasses define ``d_loss`` and ``g_loss`` on scores.

    Attributes:
        name: the registry name (``"ns"``, ``"began"``, ...).
        g_needs_real: ``True`` when L_G uses D's scores on the real batch. Those
            scores are constants for G: schedules compute them without a graph.
    """

    name = ""
    g_needs_real = False
    # The D-side regularizer taken from the D(real) forward (R1), or None; objectives
    # without R1 read as r1 = 0, r1_every = 1.
    # Why the losses are not means over samples (so micro-batches cannot sum to the
    # batch), or None: accumulation is refused where this is set.
    batch_coupled: str | None = None
    regularizer: R1 | None = None
    r1 = 0.0
    r1_every = 1
    # D's output is scores (one per sample, or a map); False for BEGAN's autoencoder,
    # whose output is shaped like the sample.
    reads_scores = True
    # Whether h_G'(s) / h_D'(s) is one constant wherever D's slope is not 0: then the
    # fused step is exact for a map of scores per sample too.
    constant_ratio = False
    # Whether h_D'(s) is one nonzero constant (the Wasserstein losses): the fused step
    # then knows on the host that no sample needs D's extra pass (no device sync).
    constant_slopes = False
    # Why the fused simultaneous step cannot use this objective; None when it can.
    not_fusable: str | None = "its L_G is not a per-sample multiple of L_D at the fake scores"
    # The losses apply a sigmoid to D's scores (BCE with logits): a D whose output comes
    # out of a sigmoid is refused (ganstep.engine.views.ends_in_sigmoid), as a probability read
    # as a logit trains on the sigmoid of a probability.
    applies_sigmoid = False
    # When D's step runs the penalty: "after" its loss forwards (:meth:`penalty`, on D
    # forwards of its own, as most loops add it), "before" them (DualGAN's),
    # "loss_forwards" (:meth:`penalty_on_outputs`: it reads those forwards, WGAN-div's),
    # or "own_step": in a D step of its own right after D's step on its losses, on the
    # same batches at D's updated weights (SAGAN's WGAN-GP).
    penalty_at = "after"
    # The losses read D's scores only through their batch means, linearly, so a D that
    # returns that mean itself (the WGAN authors' netD: ``output.mean(0).view(1)``) gives
    # them exactly; its one number is then read as the batch's scores.
    takes_batch_mean = False

    def score(self, out: Tensor, inp: Tensor) -> Tensor:
        """The scores of D's adversarial output ``out`` on ``inp``: shape ``(n,)`` for one
        logit per sample, or ``(n, ...)`` for a map of logits per sample (PatchGAN)."""
        n = inp.shape[0]
        if out.dim() == 0 or out.shape[0] != n:
            # one number for the batch: D averaged its scores itself (the WGAN authors'
            # netD returns output.mean(0))
            if out.numel() == 1 and self.takes_batch_mean:
                return out.reshape(1)  # D's mean over the batch, which the losses take
            one = (" (one number for the whole batch: return D's scores before their mean, "
                   "which the losses take)" if out.numel() == 1 and n > 1 else "")  # fmt: skip
            raise ValueError(
                f"objective {self.name!r} needs D's adversarial output to have one row per "
                f"sample, shape ({n},) or ({n}, ...), but D returned shape {tuple(out.shape)} "
                f"for a batch of {n}{one}"
            )
        return out.reshape(n) if out.numel() == n else out

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        """L_D from the scores of the real and the fake batch."""
        raise NotImplementedError

    def penalty(self, D: Callable[[Tensor], Tensor], real: Tensor, fake: Tensor) -> Tensor | None:
        """An extra term of L_D that needs D forwarded on other samples (WGAN-GP's
        interpolates); ``None`` if there is none.

        ``D(x)`` gives D's adversarial output on samples ``x`` (at the real batch's
        condition, for a conditional Step: a penalty differentiates with respect to x
        only). ``fake`` is cut from G's graph: a penalty trains D only. It runs after D's
        loss forwards, or before them where ``penalty_at = "before"``.
        """
        return None

    def penalty_on_outputs(
        self, real: Tensor, real_out: Tensor, fake: Tensor, fake_out: Tensor
    ) -> Tensor | None:
        """With ``penalty_at = "loss_forwards"``: an extra term of L_D read from D's loss
        forwards, with no D forward of its own; ``None`` if there is none.

        ``real_out`` and ``fake_out`` are D's adversarial outputs on ``real`` and
        ``fake``, and both inputs require grad, so ``torch.autograd.grad(real_out, real,
        ..., create_graph=True)`` is D's gradient at the real batch (WGAN-div's). ``fake``
        is cut from G's graph in a step of D alone and carries it in ``simultaneous()``;
        either way the penalty trains D only.
        """
        return None

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        """L_G from the scores of the fake batch (and, if ``g_needs_real``, the real one)."""
        raise NotImplementedError

    def fake_slopes(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        """Per fake score s: D's slope h_D'(s) and the ratio h_G'(s) / h_D'(s).

        For objectives whose fake terms are means of per-sample functions,
        L_D = ... + mean(h_D(s)) and L_G = mean(h_G(s)), so G's gradient at each fake
        sample is the ratio times D's; the fused simultaneous step relies on it. The
        ratio is computed in closed form, so it stays accurate where h_D'(s) is tiny;
        where h_D'(s) is 0 it may be infinite (the step handles those samples apart).
        """
        raise ValueError(f"the fused step cannot use objective {self.name!r}: {self.not_fusable}")

    def before_d_step(self, D: nn.Module) -> None:
        """Act on D right before each of its steps' forwards (the WGAN authors' weight
        clipping, at the top of their D loop)."""

    def after_d_step(self, D: nn.Module) -> None:
        """Act on D right after each of its optimizer steps (WGAN's weight clipping)."""

    def end_iteration(self, logs: Logs) -> Logs:
        """Update the objective's state from one iteration's logs; return extra logs."""
        return {}

    def state_dict(self) -> dict:
        """The objective's state (empty for stateless objectives)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        if state:
            raise ValueError(f"objective {self.name!r} has no state, got keys {sorted(state)}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _bce(p: Tensor, target: float) -> Tensor:
    """``BCELoss`` of probabilities ``p`` against a constant target (the mean)."""
    return F.binary_cross_entropy(p, torch.full_like(p, target))


def _mean_bce_with_logits(a: Tensor, target: float) -> Tensor:
    """``BCEWithLogitsLoss`` of logits ``a`` against a constant target (the mean)."""
    return F.binary_cross_entropy_with_logits(a, torch.full_like(a, target))


class NS(WithR1, Objective):
    """Non-saturating GAN (BCE with logits).

    L_D = mean(softplus(-D(x))) + mean(softplus(D(G(z)))),
    L_G = mean(softplus(-D(G(z)))). ``r1 > 0`` adds the R1 penalty to L_D (as for
    ``lsgan`` and ``hinge``), reported as ``gp``, taken from the D forward on the real
    batch that L_D already runs. ``r1_every = k > 1`` is lazy R1 (StyleGAN2): a
    separate step of D on the penalty alone, weighted k, every k-th D step; build D's
    optimizer with :func:`lazy_regularization`.

    ``probabilities=True`` declares a D whose output is a probability (it ends in a
    ``Sigmoid``, as PyTorch-GAN's and the DCGAN example's Ds do with ``BCELoss``): the
    same losses on probabilities p, L_D = BCE(p_real, 1) + BCE(p_fake, 0) and L_G =
    BCE(p_fake, 1), computed as ``BCELoss`` computes them (logs clamped at -100). Without
    it a D ending in a sigmoid is refused, since a probability read as a logit trains on
    the sigmoid of a probability.

    ``real_label`` < 1 is one-sided label smoothing (Salimans et al., 2016): D's target
    for the real batch, ``BCEWithLogitsLoss`` (or ``BCELoss``) against ``real_label``
    instead of 1, as ``real_loss(D_out, smooth=True)`` of Udacity's GAN notebooks writes
    it (0.9). G's target stays 1 unless ``g_label`` moves it: ``g_label`` < 1 is G's
    target for D's scores of its fakes, where a script trains G against the smoothed
    label too (rasbt/deeplearning-models' ``gan-conv-smoothing.ipynb``: both steps
    against ``valid*0.9``). :class:`Minimax` and :class:`BGAN`, whose G losses have no
    target, refuse it. ``fake_label`` > 0 is D's target for the fakes (two-sided label
    smoothing): the DCGAN example's forks that set its ``real_label = 0.9`` and
    ``fake_label = 0.1`` (its G step fills ``real_label`` too: ``g_label=0.9``), and
    pytorch-CycleGAN-and-pix2pix's ``GANLoss(target_real_label, target_fake_label)``.

    ``bce_with_logits=True`` computes the same losses as ``BCEWithLogitsLoss`` (its
    functional form) computes them, against targets 1 and 0, as scripts that call it
    write them: equal in exact arithmetic, a softplus rounds otherwise, and where a
    gradient is 0 but for rounding (a bias before BatchNorm, which subtracts it with the
    batch's mean) Adam makes that rounding a step of its own.
    """

    name = "ns"
    not_fusable = None
    applies_sigmoid = True
    takes_g_label = True  # L_G is a BCE against a target (1, or g_label)

    def __init__(
        self, r1: float = 0.0, r1_every: int = 1, probabilities: bool = False,
        real_label: float = 1.0, bce_with_logits: bool = False, g_label: float = 1.0,
        fake_label: float = 0.0,
    ) -> None:  # fmt: skip
        super().__init__(r1, r1_every)
        for name, value in (("probabilities", probabilities), ("bce_with_logits", bce_with_logits)):
            if not isinstance(value, bool):
                raise ValueError(f"{self.name} {name} must be True or False, got {value!r}")
        if probabilities and bce_with_logits:
            raise ValueError(
                f"{self.name} bce_with_logits computes the losses of D's logits; "
                "probabilities=True takes BCELoss of its probabilities: choose one"
            )
        self.bce_with_logits = bce_with_logits
        for name, value, what in (
            ("real_label", real_label, "D's target for real samples"),
            ("g_label", g_label, "G's target for its fakes' scores"),
        ):
            ok = not isinstance(value, bool) and isinstance(value, int | float)
            if not (ok and 0 < value <= 1):
                raise ValueError(
                    f"{self.name} {name} ({what}) must be a number in (0, 1], got {value!r}"
                )
        ok = not isinstance(fake_label, bool) and isinstance(fake_label, int | float)
        if not (ok and 0 <= fake_label < 1):
            raise ValueError(
                f"{self.name} fake_label (D's target for fake samples) must be a number in "
                f"[0, 1), got {fake_label!r}"
            )
        if g_label != 1 and not self.takes_g_label:
            raise ValueError(
                f"{self.name}'s G loss has no target: g_label (G's target for its fakes' "
                f"scores) is NS's, got {g_label!r}"
            )
        self.probabilities, self.real_label = probabilities, float(real_label)
        self.g_label, self.fake_label = float(g_label), float(fake_label)
        if self.fake_label:  # D's slope at a fake is sigmoid(s) - fake_label: not -G's
            self.constant_ratio = False
        if probabilities:
            self.applies_sigmoid = False
            self.not_fusable = "its losses on probabilities have no closed-form slope ratio here"

    def __repr__(self) -> str:
        shown = super().__repr__()[:-1]
        shown += ", probabilities=True" if self.probabilities else ""
        shown += f", real_label={self.real_label}" if self.real_label != 1.0 else ""
        shown += ", bce_with_logits=True" if self.bce_with_logits else ""
        shown += f", g_label={self.g_label}" if self.g_label != 1.0 else ""
        shown += f", fake_label={self.fake_label}" if self.fake_label else ""
        return shown + ")"

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        if self.probabilities:
            return _bce(real, self.real_label) + _bce(fake, self.fake_label), {}
        if self.bce_with_logits:
            return _mean_bce_with_logits(real, self.real_label) + _mean_bce_with_logits(
                fake, self.fake_label), {}  # fmt: skip
        # against a label other than 1 or 0, as BCEWithLogitsLoss computes it
        on_real = (_mean_bce_with_logits(real, self.real_label) if self.real_label != 1.0
                   else F.softplus(-real).mean())  # fmt: skip
        on_fake = (_mean_bce_with_logits(fake, self.fake_label) if self.fake_label
                   else F.softplus(fake).mean())  # fmt: skip
        return on_real + on_fake, {}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        if self.probabilities:
            return _bce(fake, self.g_label), {}
        if self.bce_with_logits or self.g_label != 1.0:  # as BCEWithLogitsLoss computes it
            return _mean_bce_with_logits(fake, self.g_label), {}
        return F.softplus(-fake).mean(), {}

    def fake_slopes(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        # Where D's target for the fakes is fake_label t_f, h_D = BCE(s, t_f), whose
        # slope sigmoid(s) - t_f is 0 at sigmoid(s) = t_f (the ratio is infinite there:
        # those samples take D's extra pass); against 0, each loss's closed form.
        if self.fake_label:
            d_slope = torch.sigmoid(fake) - self.fake_label
            return d_slope, self.g_slope(fake) / d_slope
        return self.slopes_against_0(fake)

    def slopes_against_0(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        """The fused step's slopes with D's target for the fakes 0."""
        # h_D = softplus(s), h_G = softplus(-s): -sigmoid(-s) / sigmoid(s) = -exp(-s);
        # against G's target t, h_G = t softplus(-s) + (1 - t) softplus(s), whose ratio is
        # (sigmoid(s) - t) / sigmoid(s) = (1 - t) - t exp(-s)
        if self.g_label == 1.0:
            return torch.sigmoid(fake), -torch.exp(-fake)
        t = self.g_label
        return torch.sigmoid(fake), (1.0 - t) - t * torch.exp(-fake)

    def g_slope(self, fake: Tensor) -> Tensor:
        """h_G'(s), L_G's slope per fake score (against G's target t: sigmoid(s) - t)."""
        return torch.sigmoid(fake) - self.g_label


class Minimax(NS):
    """The original minimax GAN: L_D as in :class:`NS`, L_G = -mean(softplus(D(G(z))))."""

    name = "minimax"
    constant_ratio = True
    takes_g_label = False

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        if self.probabilities:
            return -_bce(fake, 0.0), {}
        if self.bce_with_logits:
            return -_mean_bce_with_logits(fake, 0.0), {}
        return -F.softplus(fake).mean(), {}

    def g_slope(self, fake: Tensor) -> Tensor:
        return -torch.sigmoid(fake)

    def slopes_against_0(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        return torch.sigmoid(fake), torch.full_like(fake, -1.0)  # h_G = -h_D


class BGAN(NS):
    """Boundary-seeking GAN (Hjelm et al., 2018; PyTorch-GAN's ``bgan.py``): L_D as in
    :class:`NS`, L_G = 0.5 mean((log D(G(z)) - log(1 - D(G(z))))^2), which on D's
    logits s is 0.5 mean(s^2). With ``probabilities=True`` it is computed from D's
    probabilities p as ``bgan.py``'s ``boundary_seeking_loss`` does, 0.5
    mean((log p - log(1 - p))^2)."""

    name = "bgan"
    takes_g_label = False

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        if self.probabilities:
            return 0.5 * torch.mean((torch.log(fake) - torch.log(1 - fake)) ** 2), {}
        return 0.5 * fake.square().mean(), {}

    def g_slope(self, fake: Tensor) -> Tensor:
        return fake

    def slopes_against_0(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        # h_D = softplus(s), h_G = s^2 / 2: s / sigmoid(s) = s (1 + exp(-s))
        return torch.sigmoid(fake), fake * (1 + torch.exp(-fake))


_LARGEST = torch.finfo(torch.float64).max  # a finite target (an int past it is not a float)


class LSGAN(WithR1, Objective):
    """Least squares GAN with targets 0 and 1.

    L_D = 0.5 mean((D(x)-1)^2) + 0.5 mean(D(G(z))^2), L_G = 0.5 mean((D(G(z))-1)^2).

    ``real_label``, ``fake_label`` and ``g_label`` move the targets (the LSGAN paper's
    b, a and c): L_D = 0.5 mean((D(x) - real_label)^2) + 0.5 mean((D(G(z)) -
    fake_label)^2), L_G = 0.5 mean((D(G(z)) - g_label)^2), as pytorch-CycleGAN-and-pix2pix's
    ``GANLoss("lsgan", target_real_label, target_fake_label)`` computes them (its G
    loss against the real label: ``g_label`` equal to ``real_label``), or the paper's
    ``(-1, 1, 0)`` coding.
    """

    name = "lsgan"
    not_fusable = None

    def __init__(
        self, r1: float = 0.0, r1_every: int = 1, real_label: float = 1.0,
        fake_label: float = 0.0, g_label: float = 1.0,
    ) -> None:  # fmt: skip
        super().__init__(r1, r1_every)
        for name, value, what in (
            ("real_label", real_label, "D's target for real samples"),
            ("fake_label", fake_label, "D's target for fake samples"),
            ("g_label", g_label, "G's target for its fakes' scores"),
        ):
            ok = not isinstance(value, bool) and isinstance(value, int | float)
            if not (ok and abs(value) <= _LARGEST):
                raise ValueError(f"{self.name} {name} ({what}) must be a finite number, "
                                 f"got {value!r}")  # fmt: skip
        if real_label == fake_label:
            raise ValueError(
                f"{self.name} real_label and fake_label are D's targets for real and fake "
                f"samples: equal ({real_label!r}), D has nothing to tell apart"
            )
        self.real_label, self.fake_label = float(real_label), float(fake_label)
        self.g_label = float(g_label)
        # targets of the user's; with the defaults the losses keep their forms (no
        # subtraction of 0, one kernel fewer a loss)
        self.targets = (self.real_label, self.fake_label, self.g_label) != (1.0, 0.0, 1.0)

    def __repr__(self) -> str:
        shown = super().__repr__()[:-1]
        for name, default in (("real_label", 1.0), ("fake_label", 0.0), ("g_label", 1.0)):
            value = getattr(self, name)
            shown += f", {name}={value}" if value != default else ""
        return shown + ")"

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        if self.targets:
            return (0.5 * (real - self.real_label).square().mean()
                    + 0.5 * (fake - self.fake_label).square().mean()), {}  # fmt: skip
        return 0.5 * (real - 1).square().mean() + 0.5 * fake.square().mean(), {}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        if self.targets:
            return 0.5 * (fake - self.g_label).square().mean(), {}
        return 0.5 * (fake - 1).square().mean(), {}

    def fake_slopes(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        # h_D = s^2 / 2, h_G = (s - 1)^2 / 2; the ratio is infinite at s = 0 (at s =
        # fake_label for targets of the user's: h_D' = s - a, h_G' = s - c)
        if self.targets:
            d_slope = fake - self.fake_label
            return d_slope, (fake - self.g_label) / d_slope
        return fake, (fake - 1) / fake


class Hinge(WithR1, Objective):
    """Hinge loss: L_D = mean(relu(1-D(x))) + mean(relu(1+D(G(z)))), L_G = -mean(D(G(z))).

    ``g_hinge=True``: G's loss a hinge too, L_G = mean(relu(1 - D(G(z)))), as
    LynnHo/DCGAN-LSGAN-WGAN-GP-DRAGAN-Pytorch's ``hinge_v1`` writes it
    (``torch.max(1 - f_logit, torch.zeros_like(f_logit)).mean()``): G's gradient stops
    where D scores a fake above 1.
    """

    name = "hinge"
    not_fusable = None
    constant_ratio = True  # -1 wherever relu(1 + s) has slope 1; the rest go apart

    def __init__(self, r1: float = 0.0, r1_every: int = 1, g_hinge: bool = False) -> None:
        super().__init__(r1, r1_every)
        if not isinstance(g_hinge, bool):
            raise ValueError(f"{self.name} g_hinge must be True or False, got {g_hinge!r}")
        self.g_hinge = g_hinge
        if g_hinge:  # the ratio is -1 below 1 and 0 above: not one constant
            self.constant_ratio = False

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + (", g_hinge=True)" if self.g_hinge else ")")

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        return F.relu(1 - real).mean() + F.relu(1 + fake).mean(), {}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        if self.g_hinge:
            return F.relu(1 - fake).mean(), {}
        return -fake.mean(), {}

    def fake_slopes(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        # relu(1 + s) has slope 0 for s <= -1 (as autograd computes it): the ratio -1
        # holds only where D's slope is 1; the step treats the other samples apart.
        # G's hinge relu(1 - s) has slope -1 below 1 and 0 from 1 on (as autograd's).
        if self.g_hinge:
            return (fake > -1).to(fake.dtype), -(fake < 1).to(fake.dtype)
        return (fake > -1).to(fake.dtype), torch.full_like(fake, -1.0)


class Wasserstein(Objective):
    """The Wasserstein critic's losses: L_D = mean(D(G(z))) - mean(D(x)),
    L_G = -mean(D(G(z))); :class:`WGAN` and :class:`WGANGP` keep D Lipschitz each
    their way.

    Linear in the batch means of D's scores, so a D that returns its scores' mean
    itself (one number for the batch) is read exactly (``takes_batch_mean``).

    ``sign``: -1 trains the critic the other way round, L_D = mean(D(x)) -
    mean(D(G(z))) and L_G = mean(D(G(z))), as the WGAN authors' ``main.py`` does
    (``errD_real.backward(one)``, ``errD_fake.backward(mone)``, ``errG.backward(one)``):
    D of that loop is -D of this one, and the losses it logs are these."""

    # named in messages; not in OBJECTIVES, since its D needs a Lipschitz bound of the
    # user's own (spectral norm), which a name alone cannot give
    name = "wasserstein"
    constant_ratio = True
    constant_slopes = True
    not_fusable = None
    sign = 1  # (WGANGP: always 1)

    def __init__(self, sign: int = 1) -> None:
        if sign not in (1, -1) or isinstance(sign, bool):
            raise ValueError(
                f"{self.name} sign must be 1 (D scores real samples high) or -1 (low, the "
                f"WGAN authors' main.py), got {sign!r}"
            )
        self.sign = int(sign)

    @property
    def takes_batch_mean(self) -> bool:  # type: ignore[override]
        """True unless a penalty reads D's gradient at each sample (WGAN-GP's, a
        subclass's own), which D's mean over the batch does not give."""
        return (type(self).penalty is Objective.penalty
                and type(self).penalty_on_outputs is Objective.penalty_on_outputs)  # fmt: skip

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        if self.sign < 0:  # as errD = errD_real - errD_fake, not its negation
            return real.mean() - fake.mean(), {}
        return fake.mean() - real.mean(), {}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        return (fake.mean() if self.sign < 0 else -fake.mean()), {}

    def fake_slopes(self, fake: Tensor) -> tuple[Tensor, Tensor]:
        return torch.full_like(fake, float(self.sign)), torch.full_like(fake, -1.0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'' if self.sign == 1 else 'sign=-1'})"


# WGANGP's two ways to make its interpolates from e (see its ``interpolate``)
INTERPOLATIONS = ("mix", "difference")


class WGANGP(Wasserstein):
    """WGAN with gradient penalty on random interpolates.

    L_D = mean(D(G(z))) - mean(D(x)) + weight * mean((||grad D(x_hat)||_2 - 1)^2),
    x_hat = e x + (1 - e) G(z) with e ~ U[0, 1] per sample (drawn with ``torch.rand``
    from the global generator, one draw per D step); L_G = -mean(D(G(z))).
    The penalty is reported as ``gp``.

    ``alpha``: where e comes from instead, ``alpha(shape)`` returning e of that shape
    (``(n, 1, ..., 1)``), e.g. numpy's draw as PyTorch-GAN's scripts make it,
    ``lambda shape: torch.from_numpy(rng.random(shape))``; it is moved to the batch's
    dtype and device.

    ``eps``: the norm as ``sqrt(sum(grad ** 2) + eps)``, as the many loops that write
    ``torch.sqrt(torch.sum(gradients ** 2, dim=1) + 1e-12)`` ("to avoid sqrt 0") take
    it (EmilienDupont/wgan-gp's ``_gradient_penalty``); 0 (default): ``norm(2)``.

    ``interpolate``: how x_hat is made from e. ``"mix"`` (default): ``e * x + (1 - e) *
    G(z)``, as PyTorch-GAN's and caogang/wgan-gp's loops write it. ``"difference"``:
    ``x + e * (G(z) - x)``, as the WGAN-GP authors' code (``real_data + alpha *
    differences``) and its ports (LynnHo's ``_sample_line``) write it: the point
    ``"mix"`` makes of 1 - e, so on the same draws the two part.

    ``flatten``: True (default): the norm of each sample's whole gradient. False: the
    norm over dim 1 alone of the gradient shaped as D's input, then the mean over
    samples and positions, as loops that write ``gradients.norm(2, dim=1)`` on image
    batches compute it (Zeleni9/pytorch-wgan: a norm over channels at each pixel); the
    same where D's input is flat, ``(n, features)``.

    ``one_sided``: penalize norms above ``center`` alone, ``max(0, ||grad|| - 1)^2``
    (WGAN-LP, Petzka et al., 2018: LynnHo/DCGAN-LSGAN-WGAN-GP-DRAGAN-Pytorch's ``lp``,
    ``torch.max(torch.zeros_like(norm), norm - 1)**2``). ``center``: the norm the
    penalty pulls toward, 1 (default) or another; 0 is the zero-centered penalty
    ``||grad||^2`` at the interpolates (LynnHo's ``0-gp``).

    ``penalty_at``: ``"after"`` (default: the class's) D's loss forwards, in D's step;
    ``"before"`` them, in D's step (PyTorch-GAN's ``dualgan.py``: a D with BatchNorm sees
    the interpolates first); or
    ``"own_step"``: in a D step of its own right after D's step on its losses, on the
    same real and fake batches at D's updated weights, D's optimizer stepping on the
    penalty alone (heykeetae/Self-Attention-GAN's ``trainer.py``: ``d_loss.backward()``,
    ``d_optimizer.step()``, then ``(lambda_gp * d_loss_gp).backward()``, another
    ``d_optimizer.step()``). CycleStep, BicycleStep and CUDA graphs refuse it.
    """

    name = "wgan_gp"
    # The penalty reads the fake batch too, but cut from G's graph, so it adds
    # nothing to the gradient at the fake samples that the fused step rescales.

    def __init__(
        self, weight: float = 10.0, alpha: Callable[[tuple[int, ...]], Tensor] | None = None,
        eps: float = 0.0, interpolate: str = "mix", flatten: bool = True,
        penalty_at: str | None = None, one_sided: bool = False, center: float = 1.0,
    ) -> None:  # fmt: skip
        self.weight = non_negative(weight, f"{self.name} weight")
        if not isinstance(one_sided, bool):
            raise ValueError(f"{self.name} one_sided must be True or False, got {one_sided!r}")
        self.one_sided = one_sided
        self.center = non_negative(center, f"{self.name} center")
        if self.center == float("inf"):
            raise ValueError(f"{self.name} center must be a number >= 0, got {center!r}")
        if penalty_at is not None:  # (None: the class's, which a subclass may set)
            if penalty_at not in ("after", "before", "own_step"):
                raise ValueError(
                    f"{self.name} penalty_at must be 'after' or 'before' (D's loss forwards, "
                    "in D's step) or 'own_step' (in a D step of its own after it, SAGAN's), "
                    f"got {penalty_at!r}"
                )
            self.penalty_at = penalty_at
        if alpha is not None and not callable(alpha):
            raise TypeError(f"{self.name} alpha must be callable (alpha(shape)), got {alpha!r}")
        self.alpha = alpha
        self.eps = non_negative(eps, f"{self.name} eps")
        if interpolate not in INTERPOLATIONS:
            raise ValueError(
                f"{self.name} interpolate must be one of {INTERPOLATIONS} (e * x + (1 - e) * "
                f"G(z), or x + e * (G(z) - x)), got {interpolate!r}"
            )
        self.interpolate = interpolate
        if not isinstance(flatten, bool):
            raise ValueError(f"{self.name} flatten must be True or False, got {flatten!r}")
        self.flatten = flatten

    def _weights(self, real: Tensor) -> Tensor:
        """The interpolation weights e, one per sample, shaped to broadcast over it."""
        shape = (real.shape[0],) + (1,) * (real.dim() - 1)
        if self.alpha is None:
            return torch.rand(shape, dtype=real.dtype, device=real.device)
        e = torch.as_tensor(self.alpha(shape))
        if tuple(e.shape) != shape:
            raise ValueError(
                f"{self.name} alpha(shape) must return weights of shape {shape}, got "
                f"{tuple(e.shape)}"
            )
        return e.to(dtype=real.dtype, device=real.device)

    def penalty(self, D: Callable[[Tensor], Tensor], real: Tensor, fake: Tensor) -> Tensor:
        e = self._weights(real)
        if self.interpolate == "mix":
            x_hat = e * real + (1 - e) * fake
        else:  # the WGAN-GP authors' real_data + alpha * differences
            x_hat = real + e * (fake - real)
        x_hat = x_hat.requires_grad_(True)
        scores = self.score(D(x_hat), x_hat)
        (grad,) = torch.autograd.grad(scores.sum(), x_hat, create_graph=True)
        flat = grad.reshape(grad.shape[0], -1) if self.flatten else grad
        if self.eps:
            norms = torch.sqrt(torch.sum(flat**2, dim=1) + self.eps)
        else:
            norms = flat.norm(2, dim=1)
        off = norms - self.center  # (1.0 by default: the very subtraction norms - 1 makes)
        if self.one_sided:  # (LynnHo's torch.max(torch.zeros_like(norm), norm - 1)**2)
            off = off.clamp(min=0)
        return self.weight * off.square().mean()

    def __repr__(self) -> str:
        alpha = "" if self.alpha is None else f", alpha={self.alpha!r}"
        eps = f", eps={self.eps!r}" if self.eps else ""
        form = f", interpolate={self.interpolate!r}" if self.interpolate != "mix" else ""
        form += "" if self.flatten else ", flatten=False"
        form += f", penalty_at={self.penalty_at!r}" if self.penalty_at != "after" else ""
        form += ", one_sided=True" if self.one_sided else ""
        form += f", center={self.center!r}" if self.center != 1.0 else ""
        return f"WGANGP(weight={self.weight}{alpha}{eps}{form})"


# when WGAN clamps D's weights: after each D step, or before each D step's forwards
CLAMP_AT = ("after", "before")


class WGAN(Wasserstein):
    """WGAN with weight clipping (Arjovsky et al.; PyTorch-GAN ``wgan.py``).

    L_D = mean(D(G(z))) - mean(D(x)), L_G = -mean(D(G(z))); after each D step every
    parameter of D is clamped to [-clip, clip] (as ``p.data.clamp_``).

    The WGAN authors' own ``main.py`` (martinarjovsky/WassersteinGAN) writes it another
    way, which these options give: ``sign=-1`` (see :class:`Wasserstein`), and

    ``clamp_at``: ``"after"`` (default) each D step, or ``"before"`` each D step's
    forwards, as ``main.py`` clamps at the top of its D loop: G's step then reads D as
    the last D step left it, unclamped, and D's first step clamps the weights D starts
    from.

    A D that returns its scores' batch mean (``main.py``'s ``output.mean(0).view(1)``)
    is read as it is (the losses are linear in those means).
    """

    name = "wgan"

    def __init__(self, clip: float = 0.01, sign: int = 1, clamp_at: str = "after") -> None:
        super().__init__(sign)
        self.clip = non_negative(clip, f"{self.name} clip")
        if clamp_at not in CLAMP_AT:
            raise ValueError(
                f"{self.name} clamp_at must be one of {CLAMP_AT} (after each D step, or "
                f"before its forwards as the WGAN authors' main.py), got {clamp_at!r}"
            )
        self.clamp_at = clamp_at

    def _clamp(self, D: nn.Module) -> None:
        with torch.no_grad():
            for p in D.parameters():
                p.clamp_(-self.clip, self.clip)

    def before_d_step(self, D: nn.Module) -> None:
        if self.clamp_at == "before":
            self._clamp(D)

    def after_d_step(self, D: nn.Module) -> None:
        if self.clamp_at == "after":
            self._clamp(D)

    def __repr__(self) -> str:
        more = "" if self.sign == 1 else f", sign={self.sign}"
        more += "" if self.clamp_at == "after" else f", clamp_at={self.clamp_at!r}"
        return f"WGAN(clip={self.clip}{more})"


class Relativistic(Objective):
    """The relativistic family (Jolicoeur-Martineau, 2018): D judges how much more real
    a real sample looks than the fakes, L_G the reverse. L_G reads D's real scores as
    constants (at the D of G's step, forwarded without a graph into D's weights).

    Subclasses give ``f(a, target)``, the loss of the relative score ``a`` for a real
    (``target = 1``) or fake (``target = 0``) verdict, and ``average``: compare with the
    other batch's mean (Ra*: ``a = r - mean(f)``) or pair sample i with sample i
    (RSGAN: ``a = r_i - f_i``). With averaging,
    L_D = (mean f(r - mean(f), 1) + mean f(f - mean(r), 0)) / 2 and
    L_G = (mean f(f - mean(r), 1) + mean f(r - mean(f), 0)) / 2, as AlexiaJM's and
    BasicSR's ESRGAN code write them.

    Args:
        detach_mean: in L_D, read the other batch's mean score as a constant, as
            BasicSR's ESRGAN does (``fake_d_pred.detach()``, ``real_d_pred.detach()``);
            D's gradient then omits the path through the means. Averaged losses only.
        g_real_term: L_G has the real batch's term ``f(r - mean(f), 0)`` too (the
            default); ``False``: L_G = mean f(f - mean(r), 1) alone, as PyTorch-GAN's
            ``esrgan.py`` writes it. Averaged losses only.
        per_location: for a D that returns a map of scores per sample (PatchGAN), the
            other batch's mean is taken over the batch at each location of the map
            (``mean(0, keepdim=True)``, PyTorch-GAN's ``esrgan.py``) instead of over
            every score of the batch. The same for one score per sample. Averaged
            losses only.
    """

    g_needs_real = True
    average = True
    not_fusable = "its L_G reads D's real scores and couples the samples through their means"
    batch_coupled = "each sample is compared with the mean score of the other batch"

    def __init__(
        self, detach_mean: bool = False, g_real_term: bool = True, per_location: bool = False
    ) -> None:
        options = {"detach_mean": detach_mean, "g_real_term": g_real_term,
                   "per_location": per_location}  # fmt: skip
        for option, value in options.items():
            if not isinstance(value, bool):
                raise ValueError(f"{self.name} {option} must be True or False, got {value!r}")
        changed = [o for o, v in options.items() if v != (o == "g_real_term")]
        if changed and not self.average:
            raise ValueError(
                f"{self.name} pairs samples: it has no mean, so {', '.join(changed)} does not apply"
            )
        self.detach_mean, self.g_real_term, self.per_location = (
            detach_mean,
            g_real_term,
            per_location,
        )

    def f(self, a: Tensor, target: float) -> Tensor:
        raise NotImplementedError

    def _pairs(self, real: Tensor, fake: Tensor) -> None:
        if not self.average and real.shape != fake.shape:
            raise ValueError(
                f"objective {self.name!r} pairs the i-th real score with the i-th fake one: "
                f"their shapes must match, got {tuple(real.shape)} and {tuple(fake.shape)}"
            )

    def _mean(self, scores: Tensor) -> Tensor:
        """The batch's mean score that the other batch is compared with."""
        return scores.mean(0, keepdim=True) if self.per_location else scores.mean()

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        self._pairs(real, fake)
        if not self.average:
            return self.f(real - fake, 1.0).mean(), {}
        mean_r, mean_f = self._mean(real), self._mean(fake)
        if self.detach_mean:
            mean_r, mean_f = mean_r.detach(), mean_f.detach()
        return (self.f(real - mean_f, 1.0).mean() + self.f(fake - mean_r, 0.0).mean()) / 2, {}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        if real is None:
            raise ValueError(f"objective {self.name!r} needs D's scores on the real batch for L_G")
        self._pairs(real, fake)
        if not self.average:
            return self.f(fake - real, 1.0).mean(), {}
        loss = self.f(fake - self._mean(real), 1.0).mean()
        if not self.g_real_term:
            return loss, {}
        return (loss + self.f(real - self._mean(fake), 0.0).mean()) / 2, {}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(detach_mean={self.detach_mean}, g_real_term="
                f"{self.g_real_term}, per_location={self.per_location})")  # fmt: skip


def _bce_with_logits(a: Tensor, target: float) -> Tensor:
    """softplus(-a) for a real verdict, softplus(a) for a fake one, per element, computed
    as ``BCEWithLogitsLoss`` computes them (AlexiaJM's, BasicSR's and PyTorch-GAN's
    relativistic losses): a softplus rounds otherwise, and where a gradient is 0 or
    nearly (the relative losses cancel, as for a last bias), Adam makes that rounding a
    step of its own, which the port's float32 check of such a loop then sees."""
    return F.binary_cross_entropy_with_logits(a, torch.full_like(a, target), reduction="none")


class RSGAN(Relativistic):
    """Relativistic standard GAN: L_D = mean softplus(-(r_i - f_i)),
    L_G = mean softplus(-(f_i - r_i)) (BCE with logits on the paired differences)."""

    name = "rsgan"
    applies_sigmoid = True
    average = False
    batch_coupled = None  # pairs sample i with sample i: a mean over pairs

    def f(self, a: Tensor, target: float) -> Tensor:
        return _bce_with_logits(a, target)


class RaSGAN(Relativistic):
    """Relativistic average standard GAN (ESRGAN's GAN loss; ``RaSGAN(detach_mean=True)``
    is BasicSR's form, ``RaSGAN(g_real_term=False, per_location=True)`` PyTorch-GAN's
    ``esrgan.py``): f(a, 1) = softplus(-a),
    f(a, 0) = softplus(a), i.e. BCE with logits against 1 and 0."""

    name = "rasgan"
    applies_sigmoid = True

    def f(self, a: Tensor, target: float) -> Tensor:
        return _bce_with_logits(a, target)


class RaLSGAN(Relativistic):
    """Relativistic average LSGAN: f(a, 1) = (a - 1)^2, f(a, 0) = (a + 1)^2."""

    name = "ralsgan"

    def f(self, a: Tensor, target: float) -> Tensor:
        return (a - 1).square() if target else (a + 1).square()


class RaHinge(Relativistic):
    """Relativistic average hinge: f(a, 1) = relu(1 - a), f(a, 0) = relu(1 + a)."""

    name = "rahinge"

    def f(self, a: Tensor, target: float) -> Tensor:
        return F.relu(1 - a) if target else F.relu(1 + a)


class BEGAN(Objective):
    """BEGAN: D is an autoencoder and L(v) = mean|v - D(v)|.

    L_D = L(x) - k_t L(G(z)), L_G = L(G(z)),
    k_{t+1} = clip(k_t + lambda_k (gamma L(x) - L(G(z))), 0, 1) once per iteration,
    with L(x) from the iteration's (last) D step and L(G(z)) from its (last) G step,
    as the BEGAN paper and the which-first post's loops do. Also reports the convergence measure
    ``m_global`` = L(x) + |gamma L(x) - L(G(z))| and the updated ``k``. An iteration
    that updates only one of D and G leaves ``k`` unchanged.
    """

    name = "began"
    reads_scores = False
    not_fusable = "the ratio of L_G to L_D at a fake sample is -1/k_t, infinite while k_t = 0"

    def __init__(self, gamma: float = 0.5, lambda_k: float = 0.001, k0: float = 0.0) -> None:
        if not 0 < float(gamma) <= 1:
            raise ValueError(f"began gamma must be in (0, 1], got {gamma!r}")
        if not float(lambda_k) >= 0:
            raise ValueError(f"began lambda_k must be >= 0, got {lambda_k!r}")
        if not 0 <= float(k0) <= 1:
            raise ValueError(f"began k0 must be in [0, 1], got {k0!r}")
        self.gamma = float(gamma)
        self.lambda_k = float(lambda_k)
        self.k = torch.tensor(float(k0))

    def score(self, out: Tensor, inp: Tensor) -> Tensor:
        _check_autoencoder(self.name, out, inp)
        return (inp - out).abs().reshape(inp.shape[0], -1).mean(1)

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        # Follow the data's device and dtype, so float64 runs keep k in float64.
        self.k = self.k.to(device=real.device, dtype=real.dtype)
        l_real = real.mean()
        return l_real - self.k * fake.mean(), {"l_real": l_real.detach()}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        return fake.mean(), {}

    def end_iteration(self, logs: Logs) -> Logs:
        if "l_real" not in logs or "loss_g" not in logs:
            return {"k": self.k.clone()}
        l_real, l_fake = logs["l_real"], logs["loss_g"]
        balance = self.gamma * l_real - l_fake
        # In place: a captured CUDA graph keeps reading this very tensor.
        self.k.copy_((self.k + self.lambda_k * balance).clamp(0.0, 1.0))
        return {"k": self.k.clone(), "m_global": l_real + balance.abs()}

    def state_dict(self) -> dict:
        return {"k": self.k.detach().clone()}

    def load_state_dict(self, state: dict) -> None:
        if set(state) != {"k"}:
            raise ValueError(f"began state needs exactly the key 'k', got {sorted(state)}")
        self.k = torch.as_tensor(state["k"]).detach().clone()

    def __repr__(self) -> str:
        return f"BEGAN(gamma={self.gamma}, lambda_k={self.lambda_k})"


class EBGAN(Objective):
    """EBGAN (Zhao et al., 2017): D is an autoencoder, and a sample's energy is its
    reconstruction error E(v) = mean((D(v) - v)^2) over the sample's elements.

    L_D = mean E(x) + max(0, margin - mean E(G(z))), L_G = mean E(G(z)): the hinge
    takes the fake batch's mean energy, as PyTorch-GAN's ``ebgan.py`` and the paper's
    TensorFlow codes write it. ``detach_target=True`` reads the fakes as constants
    where they are the reconstruction's target (``ebgan.py``'s ``MSELoss(recon_imgs,
    gen_imgs.detach())``): G's gradient then flows through D's reconstruction alone;
    by default it flows through both, as the paper's ``||Dec(Enc(v)) - v||``. The
    pulling-away term of EBGAN-PT reads D's embedding of the fakes: a G term,
    :func:`ganstep.engine.views.pull_away`.
    """

    name = "ebgan"
    reads_scores = False
    not_fusable = "its hinge takes the fake batch's mean energy"
    batch_coupled = "its hinge takes the fake batch's mean energy"

    def __init__(self, margin: float = 1.0, detach_target: bool = False) -> None:
        self.margin = scale_factor(margin, f"{self.name} margin", zero=True)
        if not isinstance(detach_target, bool):
            raise ValueError(f"ebgan detach_target must be True or False, got {detach_target!r}")
        self.detach_target = detach_target

    def score(self, out: Tensor, inp: Tensor) -> Tensor:
        _check_autoencoder(self.name, out, inp)
        target = inp.detach() if self.detach_target else inp
        return (out - target).square().reshape(inp.shape[0], -1).mean(1)

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        # relu, not clamp: no gradient where the fakes' energy is the margin itself, as
        # ebgan.py adds the hinge only where it is above 0
        return real.mean() + torch.relu(self.margin - fake.mean()), {}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        return fake.mean(), {}

    def __repr__(self) -> str:
        detach = ", detach_target=True" if self.detach_target else ""
        return f"EBGAN(margin={self.margin}{detach})"


def _check_autoencoder(name: str, out: Tensor, inp: Tensor) -> None:
    """Refuse a D whose output is not shaped like its input (an autoencoder's is)."""
    if out.shape != inp.shape:
        raise ValueError(
            f"objective {name!r} needs D to be an autoencoder, D(x) shaped like x: "
            f"got D(x) of shape {tuple(out.shape)} for x of shape {tuple(inp.shape)}"
        )


class Softmax(Objective):
    """SoftmaxGAN (the SoftmaxGAN graph post), logits as energies.

    With Z_B = sum(exp(-D(x))) + sum(exp(-D(G(z)))) over both batches:
    L_D = mean(D(x)) + log Z_B,
    L_G = (sum(D(x)) + sum(D(G(z)))) / (2n) + log Z_B, where D(x) is a constant for G.
    log Z_B is computed with ``logsumexp`` (same value, no overflow).
    """

    name = "softmax"
    g_needs_real = True
    not_fusable = "its log-partition couples every sample, and L_G needs D's real scores"
    batch_coupled = "its log-partition sums over every sample of both batches"

    def d_loss(self, real: Tensor, fake: Tensor) -> tuple[Tensor, Logs]:
        return real.mean() + torch.logsumexp(torch.cat([-real.flatten(), -fake.flatten()]), 0), {}

    def g_loss(self, fake: Tensor, real: Tensor | None = None) -> tuple[Tensor, Logs]:
        if real is None:
            raise ValueError("objective 'softmax' needs D's scores on the real batch for L_G")
        both = torch.cat([real.flatten(), fake.flatten()])
        return both.sum() / both.numel() + torch.logsumexp(-both, 0), {}


# Lower-case aliases: objectives are named the way users spell them.
minimax, ns, lsgan, hinge = Minimax, NS, LSGAN, Hinge
wgan_gp, began, softmax, wgan = WGANGP, BEGAN, Softmax, WGAN
rsgan, rasgan, ralsgan, rahinge = RSGAN, RaSGAN, RaLSGAN, RaHinge
bgan, ebgan = BGAN, EBGAN

# The objectives that take R1 (they inherit WithR1), in the order messages name them.
R1_OBJECTIVES = tuple(cls.name for cls in (NS, Minimax, LSGAN, Hinge, BGAN))

# Every objective by name, in the order messages list them.
_ALL = (minimax, ns, lsgan, hinge, wgan_gp, began, softmax, wgan, rsgan, rasgan, ralsgan, rahinge,
        bgan, ebgan)  # fmt: skip
OBJECTIVES: dict[str, type[Objective]] = {cls.name: cls for cls in _ALL}

# The objectives whose D is an autoencoder (its output shaped like its input).
AUTOENCODER_OBJECTIVES = tuple(cls.name for cls in _ALL if not cls.reads_scores)


PENALTY_AT = ("after", "before", "loss_forwards", "own_step")


def get_objective(spec: str | Objective) -> Objective:
    """Return an objective from its name or pass an :class:`Objective` through."""
    objective = resolve(spec, OBJECTIVES, Objective, "objective")
    if objective.penalty_at not in PENALTY_AT:
        raise ValueError(
            f"objective {objective.name or type(objective).__name__!r} has penalty_at="
            f"{objective.penalty_at!r}; choose one of {', '.join(PENALTY_AT)}"
        )
    return objective


def has_penalty(objective: Objective) -> bool:
    """Whether ``objective`` defines a penalty of its own (WGAN-GP's, or a user's)."""
    method = "penalty_on_outputs" if objective.penalty_at == "loss_forwards" else "penalty"
    return getattr(type(objective), method) is not getattr(Objective, method)
