"""Class-conditional DCGAN: G(z, y) with a class embedding, a projection D(x, y)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .dcgan import DCGANDiscriminator, DCGANGenerator


class ConditionalGenerator(nn.Module):
    """``G(z, y)``: the DCGAN generator on z next to a learned embedding of class y
    (the cGAN way; BigGAN feeds the embedding to conditional BatchNorm instead)."""

    def __init__(self, z_dim: int, classes: int, width: int, channels: int, size: int):
        super().__init__()
        self.embed = nn.Embedding(classes, classes)  # a learned code the size of a one-hot
        self.net = DCGANGenerator(z_dim + classes, width, channels, size)

    def forward(self, z: Tensor, y: Tensor) -> Tensor:
        return self.net(torch.cat([z, self.embed(y)], 1))


class ProjectionDiscriminator(nn.Module):
    """``D(x, y) = f(h(x)) + <embed(y), sum(h(x))>`` (Miyato and Koyama's projection D)
    on the DCGAN discriminator: h its 4x4 features, summed over positions as SNGAN and
    BigGAN do, f its own last layer, so that the unconditional part is exactly the
    DCGAN D. The embedding starts at std 1/sqrt(features). (Mean pooling, or an
    embedding at DCGAN's std 0.02, leave the class term too weak: on MNIST G then
    learns the classes late and collapses within each.)"""

    def __init__(self, classes: int, width: int, channels: int, size: int, batchnorm: bool):
        super().__init__()
        dcgan = DCGANDiscriminator(width, channels, size, batchnorm)
        self.body, self.out = dcgan.net[:-1], dcgan.net[-1]
        self.embed = nn.Embedding(classes, self.out.in_channels)
        nn.init.normal_(self.embed.weight, std=self.out.in_channels**-0.5)

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        h = self.body(x)
        projection = (self.embed(y) * h.sum((2, 3))).sum(1)
        return self.out(h).reshape(x.shape[0]) + projection
