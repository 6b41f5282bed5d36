"""BEGAN (Berthelot et al., 2017): decoder G and autoencoder D with ELU conv blocks.

The decoder maps an h-vector through a dense layer to n x 8 x 8, then repeats
(conv 3x3, ELU, conv 3x3, ELU, nearest upsampling) up to the image size. The
encoder mirrors it with stride-2 convolutions for subsampling, its width growing
by n per scale, and ends in a dense layer to the embedding of size h.
"""

from __future__ import annotations

from torch import Tensor, nn


def _scales(size: int) -> int:
    if size not in (32, 64):
        raise ValueError(f"BEGAN size must be 32 or 64, got {size}")
    return 2 if size == 32 else 3  # 8x8 -> size


def _block(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, 1, 1), nn.ELU(), nn.Conv2d(cout, cout, 3, 1, 1), nn.ELU()]


class BEGANDecoder(nn.Module):
    """``(n, h)`` to images ``(n, channels, size, size)``; BEGAN's G and D's second half."""

    def __init__(self, h: int = 64, width: int = 32, channels: int = 3, size: int = 32):
        super().__init__()
        self.width = width
        self.fc = nn.Linear(h, width * 8 * 8)
        layers: list[nn.Module] = []
        for _ in range(_scales(size)):
            layers += _block(width, width) + [nn.Upsample(scale_factor=2, mode="nearest")]
        layers += _block(width, width) + [nn.Conv2d(width, channels, 3, 1, 1)]
        self.net = nn.Sequential(*layers)

    def forward(self, z: Tensor) -> Tensor:
        return self.net(self.fc(z.flatten(1)).reshape(z.shape[0], self.width, 8, 8))


class BEGANEncoder(nn.Module):
    """Images to an embedding of size h."""

    def __init__(self, h: int = 64, width: int = 32, channels: int = 3, size: int = 32):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(channels, width, 3, 1, 1), nn.ELU()]
        ch = width
        for scale in range(1, _scales(size) + 1):
            layers += _block(ch, ch) + [nn.Conv2d(ch, width * (scale + 1), 3, 2, 1), nn.ELU()]
            ch = width * (scale + 1)
        layers += _block(ch, ch)
        self.net = nn.Sequential(*layers)
        self.fc = nn.Linear(ch * 8 * 8, h)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.net(x).flatten(1))


class BEGANDiscriminator(nn.Module):
    """BEGAN's D: an autoencoder, D(x) shaped like x."""

    def __init__(self, h: int = 64, width: int = 32, channels: int = 3, size: int = 32):
        super().__init__()
        self.encoder = BEGANEncoder(h, width, channels, size)
        self.decoder = BEGANDecoder(h, width, channels, size)

    def forward(self, x: Tensor) -> Tensor:
        return self.decoder(self.encoder(x))
