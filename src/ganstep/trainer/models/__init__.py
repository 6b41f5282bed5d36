"""Plain ``nn.Module`` generators and discriminators that users can import."""

from __future__ import annotations

import math

from torch import Tensor, nn

from ...engine.objectives import AUTOENCODER_OBJECTIVES
from ...engine.registry import check_name
from .began import BEGANDecoder, BEGANDiscriminator, BEGANEncoder
from .conditional import ConditionalGenerator, ProjectionDiscriminator
from .dcgan import DCGANDiscriminator, DCGANGenerator
from .mlp import MLP
from .packing import PackedGenerator, pack, packed_shape

MODELS = ("mlp", "dcgan", "began")


class ImageMLP(nn.Module):
    """An MLP generator whose output is reshaped to images in [-1, 1] (tanh)."""

    def __init__(self, z_dim: int, shape: tuple[int, ...], hidden: tuple[int, ...]):
        super().__init__()
        self.shape = shape
        self.mlp = MLP(z_dim, math.prod(shape), hidden)

    def forward(self, z: Tensor) -> Tensor:
        return self.mlp(z).tanh().reshape(z.shape[0], *self.shape)


class Autoencoder(nn.Module):
    """An MLP autoencoder (BEGAN's D for vector or flattened data)."""

    def __init__(self, shape: tuple[int, ...], hidden: int, code: int):
        super().__init__()
        self.shape = shape
        d = math.prod(shape)
        self.mlp = MLP(d, d, (hidden, code, hidden), activation=nn.ELU)

    def forward(self, x: Tensor) -> Tensor:
        return self.mlp(x).reshape(x.shape[0], *self.shape)


def image_size(shape: tuple[int, ...]) -> int:
    """The convolutional models' size for images of ``shape`` (C, H, W): 32 or 64."""
    return 32 if max(shape[1:]) <= 32 else 64


def build_models(
    name: str,
    shape: tuple[int, ...],
    objective: str,
    z_dim: int,
    width: int,
    classes: int | None = None,
    pack: int = 1,
) -> tuple[nn.Module, nn.Module]:
    """G and D of model ``name`` for samples of ``shape``.

    ``began`` pairs only with the objectives of an autoencoder D (``began``,
    ``ebgan``); with ``mlp`` they get an MLP autoencoder D. ``shape`` of images
    must already be the model size (see :func:`image_size`). With ``classes``, the
    class-conditional DCGAN: ``G(z, y)`` and a projection ``D(x, y)``. With ``pack``
    above 1, D takes packs of that many samples (:mod:`.packing`); G is unchanged.
    """
    check_name("model", name, MODELS)
    images = len(shape) == 3
    autoencoder = objective in AUTOENCODER_OBJECTIVES
    if pack > 1 and (classes is not None or name == "began" or autoencoder):
        raise ValueError("packing needs an unconditional G and a D that scores samples, not began")
    d_shape = packed_shape(shape, pack)
    if classes is not None:
        if name != "dcgan" or not images or autoencoder:
            raise ValueError(
                f"conditional training uses the dcgan model on images with a logit objective; "
                f"got model {name!r}, objective {objective!r}"
            )
        channels, size = shape[0], image_size(shape)
        return (
            ConditionalGenerator(z_dim, classes, width, channels, size),
            ProjectionDiscriminator(classes, width, channels, size, objective != "wgan_gp"),
        )
    if name != "mlp" and not images:
        raise ValueError(f"model {name!r} needs images; use --model mlp for {shape} vectors")
    if (name == "began") != autoencoder and name != "mlp":
        raise ValueError(
            f"objective {objective!r} needs an autoencoder D: use model 'began' (or 'mlp')"
            if autoencoder else
            "the 'began' model (an autoencoder D) goes with the objectives of an autoencoder "
            f"({', '.join(AUTOENCODER_OBJECTIVES)}) and only with them; got objective "
            f"{objective!r}"
        )  # fmt: skip
    if name == "mlp":
        hidden = (width, width, width)
        G = ImageMLP(z_dim, shape, hidden) if images else MLP(z_dim, shape[0], hidden)
        if autoencoder:
            return G, Autoencoder(shape, width, max(2, width // 4))
        return G, MLP(math.prod(d_shape), 1, hidden, activation=nn.LeakyReLU)
    channels, size = shape[0], image_size(shape)
    if name == "dcgan":
        return (
            DCGANGenerator(z_dim, width, channels, size),
            DCGANDiscriminator(width, d_shape[0], size, batchnorm=objective != "wgan_gp"),
        )
    return (
        BEGANDecoder(z_dim, width, channels, size),
        BEGANDiscriminator(z_dim, width, channels, size),
    )


__all__ = [
    "MODELS",
    "Autoencoder",
    "BEGANDecoder",
    "BEGANDiscriminator",
    "BEGANEncoder",
    "ConditionalGenerator",
    "ProjectionDiscriminator",
    "DCGANDiscriminator",
    "DCGANGenerator",
    "ImageMLP",
    "MLP",
    "PackedGenerator",
    "build_models",
    "image_size",
    "pack",
    "packed_shape",
]
