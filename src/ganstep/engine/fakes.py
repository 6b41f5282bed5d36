"""G's side of a step, the one place G is called: z and the fakes' conditions, drawn
once per batch, the fake batches G makes from them (with G's graph only where G's update
needs it), and the images path length differentiates at G's latents."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from .batch import Batch, Condition, split_rows
from .game import Game
from .regularizers import PathLength

# One batch as the k micro-batches a phase accumulates over (k = 1 without accumulation).
MicroBatches = list[Batch]


@dataclass(frozen=True, eq=False)
class Latents:
    """What G is called with for one fake batch: z (``None`` without a latent; a tuple
    when ``latent`` returns one, such as InfoGAN's ``(z, code)``) and the condition the
    fakes are made for."""

    z: Condition
    c: Condition = None

    def args(self) -> list[Tensor]:
        """G's arguments: the latent's parts, then the condition's (a tuple condition,
        such as StarGAN's (image, target labels), is unpacked: ``G(x, c)``)."""
        return [*_parts(self.z), *_parts(self.c)]

    def described(self) -> str:
        """G's call as it was made, its arguments' shapes and dtypes."""
        names = [*_names("z", self.z), *_names("c", self.c)]
        shown = [f"{name}: {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
                 for name, t in zip(names, self.args(), strict=True)]  # fmt: skip
        return f"G({', '.join(shown)})"


def _parts(value: Condition) -> list[Tensor]:
    return [] if value is None else [value] if isinstance(value, Tensor) else list(value)


def _names(name: str, value: Condition) -> list[str]:
    if value is None or isinstance(value, Tensor):
        return [name] * (value is not None)
    return [f"{name}[{i}]" for i in range(len(value))]


def draw(
    game: Game, real: MicroBatches, latent: Callable[[int], Condition] | None = None
) -> list[Latents]:
    """z from the user's ``latent`` (or the ``latent`` given: InfoGAN's info step's own)
    and the fakes' conditions, for a batch like ``real``: one draw for the whole batch,
    split as ``real`` is into micro-batches (so that accumulating over them sees exactly
    the z of one big batch)."""
    sizes = [b.n for b in real]
    n = sum(sizes)
    zs = [None] * len(real)
    latent = latent or game.options.latent
    if latent is not None:
        zs = [part.c for part in split_rows(_latent(game, latent, n), sizes)]
    cs = [b.c if game.options.condition == "real" else None for b in real]
    if callable(game.options.condition):
        c = game.options.condition(n)
        if isinstance(c, list):
            c = tuple(c)
        whole = Batch(torch.empty(n, 0), c)
        whole.check(f"condition({n})")
        cs = [part.c for part in split_rows(whole, sizes)]
    return [Latents(zi, ci) for zi, ci in zip(zs, cs, strict=True)]


def _latent(game: Game, latent: Callable[[int], Condition], n: int) -> Batch:
    """One draw of ``latent(n)``: a tensor or a tuple of tensors with n rows each, held
    as the condition of an empty batch so that it splits into micro-batches as one."""
    return Batch(torch.empty(n, 0), checked_latent(game, latent(n), n))


def checked_latent(game: Game, z: object, n: int) -> Condition:
    """What ``latent(n)`` returned, checked: a tensor with n rows, or a tuple of such
    (a list is taken as one); raises naming latent and z otherwise."""
    if isinstance(z, list):
        z = tuple(z)
    parts = [z] if isinstance(z, Tensor) else list(z) if isinstance(z, tuple) else None
    if not parts or any(not isinstance(t, Tensor) or t.dim() == 0 or t.shape[0] != n
                        for t in parts):  # fmt: skip
        shape = lambda t: tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__  # noqa: E731
        got = [shape(t) for t in parts] if parts else type(z).__name__
        raise ValueError(
            f"latent({n}) must return a tensor with {n} rows, or a tuple of such "
            f"(z, code), got {got}"
        )
    _check_latent_tensors(game, n, parts)
    return z


def _check_latent_tensors(game: Game, n: int, parts: list[Tensor]) -> None:
    """z is a floating tensor of G's dtype on G's device; other parts (labels, codes)
    are on G's device: torch's own errors about these name neither latent nor z."""
    weight = game.g.all_params()[0]
    z = parts[0]
    if not z.is_floating_point():
        raise TypeError(
            f"latent({n}) returned z of dtype {z.dtype}: z must be floating point "
            f"({weight.dtype}, as G's parameters), e.g. torch.randn(n, dim)"
        )
    if weight.is_floating_point() and z.dtype != weight.dtype:
        raise TypeError(
            f"latent({n}) returned z of dtype {z.dtype}, G's parameters are {weight.dtype}: "
            f"make z {weight.dtype} (torch.randn(n, dim, dtype={weight.dtype}))"
        )
    for i, t in enumerate(parts):
        if t.device != weight.device:
            which = "z" if i == 0 else f"part {i} of its tuple"
            raise ValueError(
                f"latent({n}) returned {which} on {t.device}, G is on {weight.device}: draw "
                f"it there (device={str(weight.device)!r})"
            )


def generate(
    game: Game, latents: list[Latents], like: MicroBatches, *, graph: bool
) -> MicroBatches:
    """G's fake batch for ``latents``, one G call per micro-batch, with G's graph only when
    G's update will need it; checked against ``like``. G is called ``G(z)``,
    ``G(z, c)`` or ``G(c)``."""
    return [_generate(game, one, b, graph) for one, b in zip(latents, like, strict=True)]


def _generate(game: Game, latents: Latents, like: Batch, graph: bool) -> Batch:
    try:
        with game.precision.autocast(), torch.set_grad_enabled(graph):
            fake = game.g.module(*latents.args())
    except TypeError as e:
        fits = _signature_fits(game.g.module, latents.args())
        if fits is None:
            raise
        raise TypeError(
            f"ganstep called {latents.described()}, which G's forward{fits} does not take "
            f"({e}). G is called G(z), G(z, c) or G(c), a tuple condition unpacked: "
            "G(z, c0, c1); a latent that returns a tuple is unpacked likewise"
        ) from e
    except RuntimeError as e:
        # torch's shape errors name matrices and channels, not z: say where z came from
        words = ("shape", "size", "channels", "dimension")
        if latents.z is None or isinstance(e, torch.OutOfMemoryError):
            raise
        if not any(w in str(e) for w in words):
            raise
        z = latents.z if isinstance(latents.z, Tensor) else latents.z[0]
        shapes = (
            tuple(z.shape) if isinstance(latents.z, Tensor) else [tuple(t.shape) for t in latents.z]
        )
        order = _condition_first(game.g.module, latents)
        raise ValueError(
            f"G failed on z of shape {shapes} from latent({z.shape[0]}): "
            f"{str(e).splitlines()[0]}. " + (order or "Does latent(n) return the input G takes?")
        ) from e
    fake, extra = checked_fake(game, fake, like)
    return Batch(fake, latents.c, latents.z, extra)


# the names G's forward gives its noise, where a script names it so
_NOISE_NAMES = ("z", "noise", "latent", "latents", "z_noise", "noise_z")


def _condition_first(G: object, latents: Latents) -> str | None:
    """Why G failed, where its forward names its noise after the condition's place
    (PixelDA's ``generator(img, z)``): ganstep calls ``G(z, c)``, so z went to the
    condition's parameter. None where its signature says nothing of the kind."""
    if latents.c is None:
        return None
    signature = _signature(G)
    if signature is None:
        return None
    names = list(signature.parameters)
    z_count = len(_parts(latents.z))
    noise = [i for i, name in enumerate(names) if name.lower() in _NOISE_NAMES]
    if not noise or noise[0] < z_count:
        return None
    taken = ", ".join(names[:z_count])
    return (
        f"ganstep calls G(z, c), and G's forward{signature} names its noise "
        f"{names[noise[0]]!r} after {taken!r}, so z went to {taken!r}: where G takes its "
        "condition first, give z with the condition (latent=None, each real batch's "
        "condition (c, z), drawn before the call: docs/loops.md#pixelda) or wrap G in a "
        "module whose forward(z, c) calls it in its order"
    )


def _signature(G: object) -> inspect.Signature | None:
    """G's forward's signature; None where it cannot be read (a builtin)."""
    try:
        return inspect.signature(G.forward if isinstance(G, torch.nn.Module) else G)
    except (TypeError, ValueError):
        return None


def _signature_fits(G: object, args: list) -> str | None:
    """G's forward's signature, as text, where ``args`` do not bind to it; None where they
    do (the TypeError came from inside G) or its signature cannot be read."""
    signature = _signature(G)
    if signature is None:
        return None
    try:
        signature.bind(*args)
    except TypeError:
        return str(signature)
    return None


def checked_fake(game: Game, fake: object, like: Batch) -> tuple[Tensor, tuple | None]:
    """G's output for ``like``'s rows, checked: its samples (shaped, typed and placed as
    ``like``'s) and its extra outputs (``None`` unless G returned a tuple)."""
    x = like.x
    dtypes = (x.dtype, game.precision.dtype)  # autocast may give G's output its dtype
    extra = None
    if isinstance(fake, tuple) and fake and isinstance(fake[0], Tensor):
        fake, extra = fake[0], fake[1:]  # (samples, *extras): VQGAN's codebook loss
    if not isinstance(fake, Tensor):
        raise TypeError(
            f"G must return a tensor of samples, or a tuple (samples, *extras) whose extras "
            f"loss terms read as view.fake.extra; got {type(fake).__name__}"
        )
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
    return fake, extra


class FakesAfterReal:
    """A D step's fakes, made when the step asks for them: after D's forward on the real
    batch (``d_order="real_g_fake"``), as the PyTorch DCGAN example's lines run. z is
    drawn then too, unless ``latents`` are given (a z to reuse). Calling it makes them
    and returns D's fake batch, cut from G's graph; ``latents`` and ``made`` (G's
    output, with its graph where ``graph``) stay for the schedule. One micro-batch:
    the order is refused with accumulation."""

    def __init__(self, game: Game, real: MicroBatches, latents: list[Latents] | None,
                 graph: bool) -> None:  # fmt: skip
        self.game, self.real, self.latents, self.graph = game, real, latents, graph
        self.made: MicroBatches | None = None

    def __call__(self) -> Batch:
        if self.latents is None:
            self.latents = draw(self.game, self.real)
        self.made = generate(self.game, self.latents, self.real, graph=self.graph)
        (fake,) = detach(self.made)
        return fake


def g_batch_like(real: MicroBatches, times: int) -> MicroBatches:
    """Batches shaped like ``real``'s with ``times`` as many rows, to make fakes for (G's
    step on a multiple of the real batch); their samples are never read."""
    return [Batch(b.x.new_empty((b.n * times, *b.x.shape[1:]))) for b in real]


def detach(fake: MicroBatches) -> MicroBatches:
    """``fake`` cut from G's graph (its condition is data and carries no graph; G's
    extra outputs, which would carry it, are left behind: only G's terms read them)."""
    return [Batch(f.x.detach(), f.c, f.z) for f in fake]


def images_at_latents(
    game: Game, latents: Latents, regularizer: PathLength
) -> tuple[Tensor, Tensor]:
    """G's images from ``latents`` (their first ``n // shrink`` rows where the phase drew a
    batch's z), with a graph from the latents path length differentiates at: those
    ``images_and_latents`` returns, ``mapping``'s output w (StyleGAN2's G split into
    mapping and synthesis), else z made a leaf. Returns ``(images, latents)``."""
    n = latents.z.shape[0] if isinstance(latents.z, Tensor) else latents.z[0].shape[0]
    head = Batch(torch.empty(n, 0), latents.c, latents.z)
    if regularizer.z_draw == "batch":
        head = head.rows(slice(0, regularizer.rows(n)))
    with game.precision.autocast():
        if regularizer.images_and_latents is not None:
            return _images_and_latents(regularizer, Latents(head.z, head.c))
        if regularizer.mapping is not None:
            ws = regularizer.mapping(*Latents(head.z, head.c).args())
            return regularizer.synthesis(ws), ws
        first = head.z if isinstance(head.z, Tensor) else head.z[0]
        ws = first.detach().requires_grad_(True)
        z = ws if isinstance(head.z, Tensor) else (ws, *head.z[1:])
        img = game.g.eager(*Latents(z, head.c).args())  # double backward: not compiled
    return (img[0] if isinstance(img, tuple) else img), ws  # (samples, *extras)


def _images_and_latents(regularizer: PathLength, latents: Latents) -> tuple[Tensor, Tensor]:
    """``images_and_latents``' call on ``latents``, its answer checked: two tensors, the
    latents in the images' graph (else autograd.grad's own error names neither)."""
    out = regularizer.images_and_latents(*latents.args())
    if not (isinstance(out, tuple | list) and len(out) == 2
            and all(isinstance(t, Tensor) for t in out)):  # fmt: skip
        got = (
            [type(t).__name__ for t in out] if isinstance(out, tuple | list) else type(out).__name__
        )
        raise TypeError(
            f"PathLength images_and_latents must return (images, latents), two tensors; got {got}"
        )
    img, ws = out
    if not ws.requires_grad:
        raise ValueError(
            "PathLength images_and_latents returned latents outside the images' graph: "
            "return the latents G made the images from (rosinality's G(noise, "
            "return_latents=True)), with G's parameters requiring grad"
        )
    return img, ws
