"""What D may return, and the one view of a phase's outputs that loss terms read.

D may return

- a tensor: the adversarial output, one score per sample (``(n,)`` or ``(n, 1)``) or a
  map of scores per sample of any shape ``(n, ...)`` (PatchGAN); each adversarial loss
  is then the mean over all its elements, as pix2pix's ``GANLoss`` computes it;
- a tuple ``(adversarial, *extras)``: the first element is the adversarial output
  (a tensor or a list, as here), the others (ACGAN's class logits, features for
  feature matching) are read only by loss terms;
- a list of tensors: every element is adversarial (a multi-scale D); their losses
  are summed, as pix2pixHD does.

Objectives read only the adversarial output. A loss term reads the :class:`View` of
its phase: the real and fake batches with their conditions and D's whole outputs on
them, as the phase already computed them; a term never causes a forward of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from torch import Tensor

from .batch import Batch
from .checks import Weight, weight, weight_at

# Keys a phase logs itself: a term may not take them.
RESERVED = ("loss_d", "loss_g", "gp", "l_real", "k", "m_global")


def adversarial(out: object) -> list[Tensor]:
    """The adversarial output(s) of D's ``out``, by the rule above."""
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, tuple) and out and isinstance(out[0], Tensor | list):
        return adversarial(out[0])
    if isinstance(out, list) and out and all(isinstance(o, Tensor) for o in out):
        return list(out)
    raise TypeError(
        f"D returned {type(out).__name__}: it must return a tensor (scores or a map of "
        "scores per sample), a tuple (adversarial output, *extras) or a list of tensors "
        "(a multi-scale D)"
    )


def check_adversarial(out: object, n: int, d_map: bool) -> None:
    """Refuse a 2-D adversarial output ``(n, k)``, ``k > 1``, unless declared a map:
    it is more often class logits or features read as scores by mistake."""
    for o in adversarial(out):
        if o.dim() != 2 or o.shape[0] != n or o.shape[1] == 1 or d_map:
            continue
        where = "the first element of D's tuple" if isinstance(out, tuple) else "D's output"
        raise ValueError(
            f"{where} has shape {tuple(o.shape)}: {o.shape[1]} numbers per sample where one "
            "score is read. A map of scores per sample: Step(..., d_map=True). Class logits "
            "or features: return (score, *extras), the score first, shape (n,) or (n, 1). "
            f"(D returned {_short(describe(out))}.)"
        )


# Autograd nodes that only move or reshape values: a sigmoid behind them is still D's
# last operation (the DCGAN example's ``Sigmoid`` then ``view(-1, 1).squeeze(1)``).
_RESHAPES = ("View", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Permute", "Transpose",
             "Select", "Slice", "Split", "Unbind", "Expand", "Clone", "Alias")  # fmt: skip


def ends_in_sigmoid(out: Tensor) -> bool:
    """Whether ``out`` was computed by a sigmoid (``nn.Sigmoid``, ``torch.sigmoid``),
    behind reshapes only: D returned probabilities. Read from the autograd graph, so
    only outputs with one (a forward that records gradients) tell."""
    node = out.grad_fn
    while node is not None:
        name = type(node).__name__
        if name.startswith("Sigmoid"):
            return True
        if not name.startswith(_RESHAPES) or not node.next_functions:
            return False
        node = node.next_functions[0][0]
    return False


def check_logits(out: Tensor, objective: str) -> None:
    """Refuse probabilities where ``objective`` reads logits (it applies a sigmoid)."""
    if not ends_in_sigmoid(out):
        return
    if objective in ("ns", "minimax"):
        fix = (
            f"Drop D's final Sigmoid, or declare it: objective=ganstep.objectives.{objective}("
            "probabilities=True) takes BCELoss on probabilities, as PyTorch-GAN's scripts "
            "and the DCGAN example write it"
        )
    else:
        fix = "Drop D's final Sigmoid: relative scores are differences of logits"
    raise ValueError(
        f"D's adversarial output comes out of a sigmoid (a probability), and objective "
        f"{objective!r} reads logits (it applies its own sigmoid, as BCEWithLogitsLoss "
        f"does): it would train on the sigmoid of a probability. {fix}."
    )


@dataclass(frozen=True, eq=False)
class View:
    """One phase's tensors, for loss terms: ``real`` and ``fake`` (:class:`Batch`, with
    ``.x``, ``.c``, the fake's latent ``.z`` and ``.extra``: a real batch's extra
    targets, G's extra outputs), D's outputs ``d_real`` and ``d_fake`` exactly as D
    returned them, and the ``iteration``. Reading an output the phase did not compute
    raises, naming the phase."""

    phase: str
    real: Batch
    fake: Batch
    d_real_out: object = None
    d_fake_out: object = None
    # The iteration being run (read through ``iteration``).
    _iteration: int = 0

    @property
    def iteration(self) -> int:
        """The iteration being run, counting from 0 (taming's global_step, a warm-up's
        count)."""
        if _iteration_reads is not None:
            _iteration_reads.append(self.phase)
        return self._iteration

    @property
    def d_real(self) -> object:
        return self._read(self.d_real_out, "real")

    @property
    def d_fake(self) -> object:
        return self._read(self.d_fake_out, "fake")

    def _read(self, out: object, which: str) -> object:
        if out is None:
            raise ValueError(
                f"a loss term of the {self.phase} phase reads D's output on the {which} batch, "
                "which that phase does not compute unless a term asks for it: wrap the "
                "term in ganstep.engine.views.reads_real(fn), and G's phase forwards D on the real "
                "batch without a graph into D (as feature matching needs), or in "
                "reads_d_step_real(fn), and it reads D's step's own output on that batch"
            )
        return out


Term = Callable[[View], Tensor]

# While :func:`iteration_reads` watches: the phases whose terms read View.iteration.
_iteration_reads: list[str] | None = None


@contextlib.contextmanager
def iteration_reads() -> Iterator[list[str]]:
    """Within: the list of the phases whose loss terms read ``View.iteration``, one entry
    a read. A CUDA graph records an iteration's kernels with the numbers they took then,
    so a term that computes with the iteration would be replayed with the recorded one
    (a weight that is a function of the iteration is not such a read: graphs are kept
    per its value)."""
    global _iteration_reads
    outer, _iteration_reads = _iteration_reads, []
    try:
        yield _iteration_reads
    finally:
        _iteration_reads = outer


def reads_real(fn: Term) -> Term:
    """Mark a G term that reads D's output on the real batch (``view.d_real``): G's
    phase then forwards D on the real batch, without a graph into D's weights, for it
    (D's outputs there are constants for G). Without the mark G's phase forwards D on
    the fakes only, and reading ``view.d_real`` raises. Use it as a decorator or a call:
    ``g_terms={"fm": reads_real(lambda v: ...)}`` (HiFi-GAN's feature matching, which
    compares D's features on the fakes with those on the real batch)."""
    fn.reads_d_real = True
    return fn


def reads_d_step_real(fn: Term) -> Term:
    """Mark a G term that reads D's output on the real batch as D's step computed it,
    before D's update (``view.d_real``, detached): MelGAN's feature matching compares
    D's features on the fakes with those its D step kept (``D_real``), not with a
    forward at D's new weights. G's phase then forwards D on the fakes only: one D
    forward fewer than :func:`reads_real`. In ``d_first`` it is the last D step's, on
    the real batch G's step is judged with; in a simultaneous step's joint phase, the
    forward both losses share. G's step without a D step on its batch before it in the
    call (``g_first``; a simultaneous step forwarding D in a loop, G's phase first;
    ``fresh_real``) raises."""
    fn.reads_d_real = "d_step"
    return fn


def detached(out: object) -> object:
    """D's output with every tensor in it detached, its tuples, lists and dicts kept."""
    if isinstance(out, Tensor):
        return out.detach()
    if isinstance(out, (tuple, list)):
        return type(out)(detached(o) for o in out)
    if isinstance(out, dict):
        return {k: detached(v) for k, v in out.items()}
    return out


def any_reads_real(terms: dict[str, tuple[Weight, Term]]) -> bool:
    """Whether one of ``terms`` was marked with :func:`reads_real` (D forwarded on the
    real batch in G's phase)."""
    return any(getattr(fn, "reads_d_real", False) is True for _, fn in terms.values())


def any_reads_d_step_real(terms: dict[str, tuple[Weight, Term]]) -> bool:
    """Whether one of ``terms`` was marked with :func:`reads_d_step_real`."""
    return any(getattr(fn, "reads_d_real", False) == "d_step" for _, fn in terms.values())


def feature_matching(features: Callable[[object], Tensor] = lambda out: out[1]) -> Term:
    """Salimans et al.'s feature matching as a G term: the mean over features of
    ``(mean_i f(G(z_i)) - mean_i f(x_i))^2``, ``f`` read from D's output by
    ``features`` (default: the second element of D's tuple ``(score, features)``).
    D's features on the real batch are constants for G."""

    def term(view: View) -> Tensor:
        fake = features(view.d_fake)
        real = features(view.d_real).detach()
        return (fake.flatten(1).mean(0) - real.flatten(1).mean(0)).square().mean()

    return reads_real(term)


def pull_away(embedding: Callable[[object], Tensor] = lambda out: out[1]) -> Term:
    """EBGAN's pulling-away term as a G term: the mean cosine similarity of D's
    embeddings of two distinct fakes, (sum_ij S_ij - n) / (n (n - 1)) with S_ij the
    cosine of embeddings i and j, read from D's output on the fakes by ``embedding``
    (default: the second element of D's tuple ``(reconstruction, embedding)``).
    PyTorch-GAN's ``ebgan.py`` weighs it 0.1: ``g_terms={"pt": (0.1, pull_away())}``."""

    def term(view: View) -> Tensor:
        e = embedding(view.d_fake).flatten(1)
        n = e.shape[0]
        if n < 2:
            raise ValueError(f"the pulling-away term compares two fakes or more; got {n}")
        unit = e / e.square().sum(1, keepdim=True).sqrt()
        return ((unit @ unit.t()).sum() - n) / (n * (n - 1))

    return term


def _short(text: str, most: int = 120) -> str:
    return text if len(text) <= most else text[: most - 5] + " ...)"


def describe(out: object) -> str:
    """D's output in a few words: a tensor's shape, or a tuple's or list's parts."""
    if isinstance(out, Tensor):
        return f"a tensor {tuple(out.shape)}"
    if isinstance(out, tuple | list):
        inner = ", ".join(describe(o) for o in out)
        return f"a {type(out).__name__} of {len(out)} ({inner})"
    return type(out).__name__


def normalize_terms(terms: object, owner: str) -> dict[str, tuple[Weight, Term]]:
    """``{"name": fn}`` or ``{"name": (weight, fn)}`` as ``{"name": (weight, fn)}``; a
    weight is a number >= 0 or a function of the iteration giving one."""
    if terms is None:
        return {}
    if not isinstance(terms, dict):
        raise TypeError(f"{owner} must be a dict of name: fn or name: (weight, fn)")
    out = {}
    for name, spec in terms.items():
        if not isinstance(name, str) or name in RESERVED:
            raise ValueError(f"{owner}: the name {name!r} is taken; choose another")
        w, fn = spec if isinstance(spec, tuple) and len(spec) == 2 else (1.0, spec)
        if isinstance(w, bool) or not (isinstance(w, int | float) or callable(w)):
            raise TypeError(f"{owner}[{name!r}] must be fn or (weight, fn), got {spec!r}")
        if not callable(fn):
            raise TypeError(f"{owner}[{name!r}] must be fn or (weight, fn), got {spec!r}")
        out[name] = (weight(w, f"{owner}[{name!r}]'s weight"), fn)
    return out


def add_terms(
    loss: Tensor, terms: dict[str, tuple[Weight, Term]], view: View
) -> tuple[Tensor, dict[str, Tensor]]:
    """``loss`` plus each weighted term (a weight that is a function of the iteration is
    read at ``view.iteration``); the logs hold each weighted term by its name."""
    logs = {}
    # a weight's iteration is read past View.iteration: a graph is kept per its value
    iteration = view._iteration if isinstance(view, View) else view.iteration
    for name, (w, fn) in terms.items():
        w = weight_at(w, iteration, f"the weight of term {name!r}")
        try:
            value = fn(view)
        except (IndexError, KeyError, TypeError, AttributeError) as e:
            shown = describe(view.d_fake_out if view.d_fake_out is not None else view.d_real_out)
            raise ValueError(
                f"loss term {name!r} of the {view.phase} phase failed ({type(e).__name__}: {e}); "
                f"D returned {shown}: does the term read an output D does not return?"
            ) from e
        if not isinstance(value, Tensor) or value.numel() != 1:
            raise ValueError(f"loss term {name!r} must return a scalar tensor, got {value!r}")
        term = w * value.reshape(())
        logs[name] = term.detach()
        loss = loss + term
    return loss, logs
