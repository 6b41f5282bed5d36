"""Which tensors of an audited loop were computed from G's output (or another module's).

The audit knows a D input is G's fake batch when it is G's output itself (the same
storage: ``fake``, ``fake.detach()``) or holds it as rows of a concatenation. Loops put
work in between: instance noise (``D(fake.detach() + sigma * torch.randn_like(fake))``),
augmentation (DiffAugment, ADA: ``D(augment(fake))``), a cast (``D(fake.float())``).
Each makes a tensor with storage of its own, which the audit took for a real batch,
and so misread the loop's order. :class:`Provenance`, a ``TorchFunctionMode`` active
while the loop runs, follows every torch call: a result is made from a module's call
(G's, once the audit knows which module is G) where that call's output went in and
everything else that went in was made in the loop from no data (random draws,
constants such as ``torch.ones``, factories of a shape such as ``torch.randn_like``)
or is smaller than the output's part (a per-sample factor, a scalar). A call that
mixes it with data of its size (WGAN-GP's interpolation of real and fake rows) makes
neither: D's input there is no fake batch. A module input made from no module's output
(a real batch, z) is data from then on.

A function mode, not a dispatch mode: a dispatch mode active around a whole script
gives every tensor a Python object, which breaks tensor subclasses (BigGAN's
Distribution). The mode holds weak references only, so it keeps nothing alive.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator

from torch import Tensor
from torch.overrides import TorchFunctionMode

# Made in the loop from no data: a draw, or a constant of a shape.
MADE = "made"
# A batch D was given that is not G's: data, whatever is computed from it.
DATA = "data"

# Calls whose result does not depend on their tensor inputs' values (only on a shape,
# dtype or device): a random draw "like" the fakes is noise, not a fake.
_LIKE = frozenset(
    {"randn_like", "rand_like", "randint_like", "zeros_like", "ones_like", "empty_like",
     "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "size",
     "dim", "numel"}
)  # fmt: skip
# Draws in place ("x.normal_()"): the result is a draw whatever x held.
_DRAWS = frozenset(
    {"normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_",
     "cauchy_", "log_normal_", "zero_", "fill_"}
)  # fmt: skip
# Calls that draw from a random generator (``before_draw`` is told of each first).
DRAWING = frozenset(
    {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
     "normal", "bernoulli", "multinomial", "poisson", "normal_", "uniform_", "bernoulli_",
     "random_", "exponential_", "geometric_", "cauchy_", "log_normal_"}
)  # fmt: skip
# Calls joining tensors along a dimension (``_joined_dim``): along the batch's, rows of
# each (the audit finds a fake batch's rows in them itself); along another, each sample
# with more beside it.
_JOINS = frozenset({"cat", "concat", "concatenate"})
# Past this many tracked tensors (at least), entries whose tensors are gone are dropped.
_PURGE_AT = 4096


class Provenance(TorchFunctionMode):
    """Follows module outputs through the loop's torch calls (see the module's docstring).

    ``output_of(t)`` says which module call's output a tensor holds directly (the
    recorder's own record, by storage); :meth:`source` then answers for any tensor:
    that call, :data:`MADE`, :data:`DATA` or None (nothing known).
    """

    def __init__(self, output_of: Callable[[Tensor], object | None],
                 latest: Callable[[object], object] | None = None) -> None:  # fmt: skip
        super().__init__()
        self.output_of = output_of
        # the latest call of the module whose call a tag is (rows of several of its calls
        # joined: a pool of its past fakes, answered for its latest); None: that tag itself
        self.latest = latest
        self.purge_at = _PURGE_AT
        # storage (device, address) -> (its tag, a weak reference to that storage: torch
        # keeps a storage's Python object while any tensor holds it, so the tag lives as
        # long as the memory does, whichever tensor holds it: a view, a detach(), a
        # tensor made in C++ on it such as ``Variable(t)``'s)
        self.tags: dict[tuple, tuple[object, weakref.ref]] = {}
        # called before each call of DRAWING (the port's: the generator's state there)
        self.before_draw: Callable[[], None] | None = None

    def source(self, t: Tensor) -> object | None:
        """The module call whose output ``t`` was made from, MADE, DATA or None."""
        try:
            found = self.output_of(t)
            ptr = _address(t)
        except Exception:  # noqa: BLE001 - no storage (sparse, a subclass's): not known
            return None
        if found is not None or ptr[1] == 0:  # (no memory: every empty tensor's address)
            return found
        entry = self.tags.get(ptr)
        if entry is None:
            return None
        if not _alive(entry[1], ptr):  # freed: that memory may be another tensor's now
            del self.tags[ptr]
            return None
        return entry[0]

    def mark_data(self, t: Tensor) -> None:
        """``t`` was given to a module as data (a real batch, z): data from now on."""
        try:
            self._tag(t, DATA)
        except Exception:  # noqa: BLE001 - no storage (a subclass's): nothing known of it
            pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if self.before_draw is not None and name in DRAWING:
            try:  # (noting must not stop the loop either)
                self.before_draw()
            except Exception:  # noqa: BLE001 - a draw not noted: the port verifies anyway
                pass
        out = func(*args, **kwargs)
        try:  # following must never change what the loop computes, nor stop it
            if name in _DRAWS:
                tag = MADE
            elif name in _JOINS and _joined_dim(args, kwargs) not in (0, None):
                tag = self._beside(list(_tensors(args, kwargs)))
            elif name in _JOINS and _joined_dim(args, kwargs) == 0:
                tag = self._rows(list(_tensors(args, kwargs)))
            else:
                tag = self._combined([] if name in _LIKE else list(_tensors(args, kwargs)))
            if tag is not None:
                self._tag_all(out, tag)
        except Exception:  # noqa: BLE001 - a tensor this cannot read: nothing known of it
            pass
        return out

    def _combined(self, inputs: list[Tensor]) -> object | None:
        """The tag of a call's result from its tensor inputs' (none: MADE)."""
        if not inputs:
            return MADE
        sources = [(self.source(t), t.numel()) for t in inputs]
        fakes = {id(s): (s, n) for s, n in sources if s not in (None, MADE, DATA)}
        if any(s is DATA for s, _ in sources):
            return None if fakes else DATA
        if len(fakes) > 1:
            return None  # two calls' outputs mixed: neither's
        if not fakes:
            return MADE if all(s is MADE for s, _ in sources) else None
        ((fake, size),) = fakes.values()
        # anything else as large as the output's part must be noise or constants made here
        others = [s for s, n in sources if s is not fake and s is not MADE and n >= size]
        return None if others else fake

    def _beside(self, inputs: list[Tensor]) -> object | None:
        """The tag of tensors joined along a dimension past the batch's: a module call's
        output with data or noise of its rows beside each sample (pix2pix's
        ``cat((real_A, fake_B), 1)``) is that call's still, its samples with their
        condition; otherwise as :meth:`_combined` says."""
        sources = [self.source(t) for t in inputs]
        fakes = {id(s): s for s in sources if s not in (None, MADE, DATA)}
        rows = {t.shape[0] if t.dim() else None for t in inputs}
        if len(fakes) == 1 and len(rows) == 1:
            return next(iter(fakes.values()))
        return self._combined(inputs)

    def _rows(self, inputs: list[Tensor]) -> object | None:
        """The tag of tensors joined along the batch's dimension: rows of calls of one
        module alone (a pool of past fakes, CycleGAN's ``torch.cat`` of stored and new
        ones) are that module's latest call's; otherwise as :meth:`_combined` says."""
        sources = [self.source(t) for t in inputs]
        calls = {id(s): s for s in sources if s not in (None, MADE, DATA)}
        only_calls = all(s not in (None, MADE, DATA) for s in sources)
        if self.latest is not None and len(calls) > 1 and only_calls:
            latest = {id(last): last for last in map(self.latest, calls.values())}
            if len(latest) == 1:
                return next(iter(latest.values()))
        return self._combined(inputs)

    def _tag_all(self, out: object, tag: object) -> None:
        for t in _tensors((out,), {}):
            self._tag(t, tag)

    def _tag(self, t: Tensor, tag: object) -> None:
        if len(self.tags) > self.purge_at:  # (as many alive again before the next purge)
            self.tags = {p: e for p, e in self.tags.items() if _alive(e[1], p)}
            self.purge_at = max(_PURGE_AT, 2 * len(self.tags))
        ptr = _address(t)
        if ptr[1] == 0:  # no memory: every empty tensor's address
            return
        entry = self.tags.get(ptr)
        if entry is None or entry[0] is not tag or not _alive(entry[1], ptr):
            self.tags[ptr] = (tag, weakref.ref(t.untyped_storage()))


def _address(t: Tensor) -> tuple:
    """Where ``t``'s memory is: its device and its storage's address there."""
    return t.device, t.untyped_storage().data_ptr()


def _alive(storage: weakref.ref, ptr: tuple) -> bool:
    """Whether the storage tagged at ``ptr`` is still allocated there."""
    held = storage()
    return held is not None and held.data_ptr() == ptr[1]


def _tensors(args: tuple, kwargs: dict) -> Iterator[Tensor]:
    """The tensors among ``args`` and ``kwargs``, and in their lists and tuples."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, list | tuple):
            yield from (v for v in value if isinstance(v, Tensor))


def _joined_dim(args: tuple, kwargs: dict) -> int | None:
    """The dimension ``torch.cat(tensors, dim)`` joins along, counted from 0 (None where
    it cannot be read)."""
    dim = kwargs.get("dim", kwargs.get("axis", args[1] if len(args) > 1 else 0))
    tensors = args[0] if args else kwargs.get("tensors", ())
    if not isinstance(dim, int) or not tensors or not isinstance(tensors[0], Tensor):
        return None
    return dim % tensors[0].dim() if tensors[0].dim() else None
