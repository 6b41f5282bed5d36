"""DCGAN (Radford et al.) generator and discriminator at 32x32 or 64x64."""

from __future__ import annotations

from torch import Tensor, nn


def _blocks(size: int) -> int:
    if size not in (32, 64):
        raise ValueError(f"DCGAN size must be 32 or 64, got {size}")
    return 3 if size == 32 else 4  # stride-2 layers after (before) the 4x4 stage


class DCGANGenerator(nn.Module):
    """z of shape ``(n, z_dim)`` to images ``(n, channels, size, size)`` in [-1, 1]."""

    def __init__(self, z_dim: int = 100, width: int = 64, channels: int = 3, size: int = 32):
        super().__init__()
        n = _blocks(size)
        ch = width * 2 ** (n - 1)
        layers: list[nn.Module] = [
            nn.ConvTranspose2d(z_dim, ch, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ch),
            nn.ReLU(True),
        ]
        for _ in range(n - 1):
            layers += [
                nn.ConvTranspose2d(ch, ch // 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ch // 2),
                nn.ReLU(True),
            ]
            ch //= 2
        layers += [nn.ConvTranspose2d(ch, channels, 4, 2, 1, bias=False), nn.Tanh()]
        self.z_dim = z_dim
        self.net = nn.Sequential(*layers)

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z.reshape(z.shape[0], self.z_dim, 1, 1))


class DCGANDiscriminator(nn.Module):
    """Images ``(n, channels, size, size)`` to one logit per sample, shape ``(n,)``.

    ``batchnorm=False`` drops BatchNorm (needed for WGAN-GP, and to let real and
    fake share one D call).
    """

    def __init__(self, width: int = 64, channels: int = 3, size: int = 32, batchnorm: bool = True):
        super().__init__()
        n = _blocks(size)
        layers: list[nn.Module] = [
            nn.Conv2d(channels, width, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
        ]
        ch = width
        for _ in range(n - 1):
            layers.append(nn.Conv2d(ch, ch * 2, 4, 2, 1, bias=False))
            if batchnorm:
                layers.append(nn.BatchNorm2d(ch * 2))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            ch *= 2
        layers.append(nn.Conv2d(ch, 1, 4, 1, 0, bias=False))
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).reshape(x.shape[0])
