"""A multilayer perceptron: G and D for 2D toy data and flattened images."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn


class MLP(nn.Module):
    """``in_dim -> hidden... -> out_dim`` with an activation (and optional BatchNorm) between.

    As G: ``MLP(z_dim, data_dim)``; as D: ``MLP(data_dim, 1)``; as BEGAN's
    autoencoder D: ``MLP(data_dim, data_dim, hidden=(h, bottleneck, h))``.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        hidden: Sequence[int] = (128, 128),
        *,
        activation: type[nn.Module] = nn.ReLU,
        batchnorm: bool = False,
    ) -> None:
        super().__init__()
        if in_dim < 1 or out_dim < 1 or any(h < 1 for h in hidden):
            raise ValueError(f"MLP sizes must be positive, got {in_dim}, {list(hidden)}, {out_dim}")
        layers: list[nn.Module] = []
        width = in_dim
        for h in hidden:
            layers.append(nn.Linear(width, h))
            if batchnorm:
                layers.append(nn.BatchNorm1d(h))
            layers.append(activation())
            width = h
        layers.append(nn.Linear(width, out_dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x.flatten(1))
