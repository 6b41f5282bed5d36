"""What the reference loops share: tutorials' losses, WGAN-GP's penalty, and the
shapes of their arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

Batches = Sequence[Tensor]
Latent = Callable[[int], Tensor]


RELATIVISTIC = ("rsgan", "rasgan", "ralsgan", "rahinge")


def relativistic_loss(name: str, y_pred: Tensor, y_pred_fake: Tensor) -> Tensor:
    """AlexiaJM's RelativisticGAN losses (``GAN_losses_iter.py``) for D, written on the
    scores of the batch that should look real (``y_pred``) and of the other one; G's
    loss is the same with the two swapped."""
    y, y2 = torch.ones_like(y_pred), torch.zeros_like(y_pred)
    if name == "rsgan":
        return F.binary_cross_entropy_with_logits(y_pred - y_pred_fake, y)
    if name == "rasgan":
        bce = F.binary_cross_entropy_with_logits
        return (bce(y_pred - torch.mean(y_pred_fake), y)
                + bce(y_pred_fake - torch.mean(y_pred), y2)) / 2  # fmt: skip
    if name == "ralsgan":
        return (torch.mean((y_pred - torch.mean(y_pred_fake) - y) ** 2)
                + torch.mean((y_pred_fake - torch.mean(y_pred) + y) ** 2)) / 2  # fmt: skip
    return (torch.mean(F.relu(1.0 - (y_pred - torch.mean(y_pred_fake))))
            + torch.mean(F.relu(1.0 + (y_pred_fake - torch.mean(y_pred))))) / 2  # fmt: skip


# The objectives the reference loops below write as tutorials do (ganstep bench's).
TUTORIAL_OBJECTIVES = ("minimax", "ns", "lsgan", "hinge", "wgan_gp", "began", "softmax",
                       *RELATIVISTIC, "ebgan")  # fmt: skip


class _Losses:
    """Each objective as tutorials write it, on D's raw outputs; BEGAN's k_t as the paper."""

    def __init__(self, name: str, gamma: float = 0.5, lambda_k: float = 0.001) -> None:
        if name not in TUTORIAL_OBJECTIVES:
            raise ValueError(
                f"unknown objective {name!r}; choose one of: {', '.join(TUTORIAL_OBJECTIVES)}"
            )
        self.name, self.gamma, self.lambda_k = name, gamma, lambda_k
        self.g_needs_real = name == "softmax" or name in RELATIVISTIC
        self.kt = 0.0
        self.d_loss1: Tensor | None = None  # BEGAN's L(x) of this iteration's D step
        self.g_loss: Tensor | None = None  # BEGAN's L(G(z)) of this iteration's G step
        self.history: list[dict[str, float]] = []
        self.row: dict[str, float] = {}

    def d(self, D: nn.Module, real: Tensor, fake: Tensor, real_out: Tensor, fake_out: Tensor):
        """D's loss; ``fake`` is the fake batch cut from G (for WGAN-GP's interpolates)."""
        ones, zeros = torch.ones_like(real_out), torch.zeros_like(fake_out)
        if self.name in ("ns", "minimax"):
            loss = F.binary_cross_entropy_with_logits(
                real_out, ones
            ) + F.binary_cross_entropy_with_logits(fake_out, zeros)
        elif self.name == "lsgan":
            loss = 0.5 * F.mse_loss(real_out, ones) + 0.5 * F.mse_loss(fake_out, zeros)
        elif self.name == "hinge":
            loss = torch.relu(1.0 - real_out).mean() + torch.relu(1.0 + fake_out).mean()
        elif self.name == "wgan_gp":
            gp = gradient_penalty(D, real, fake)
            loss = torch.mean(fake_out) - torch.mean(real_out) + 10 * gp
        elif self.name == "began":
            self.d_loss1 = F.l1_loss(real_out, real)
            loss = self.d_loss1 - self.kt * F.l1_loss(fake_out, fake)
        elif self.name in RELATIVISTIC:
            loss = relativistic_loss(self.name, real_out, fake_out)
        elif self.name == "ebgan":  # margin 1, as PyTorch-GAN's at batches up to 64
            loss = F.mse_loss(real_out, real) + torch.relu(1.0 - F.mse_loss(fake_out, fake))
        else:  # softmax
            z_b = torch.sum(torch.exp(-real_out)) + torch.sum(torch.exp(-fake_out))
            loss = torch.mean(real_out) + torch.log(z_b)
        self.row["loss_d"] = loss.item()
        return loss

    def g(self, fake: Tensor, fake_out: Tensor, real_out: Tensor | None = None):
        """G's loss; ``real_out`` is D's output on the real batch (softmax only)."""
        if self.name == "ns":
            loss = F.binary_cross_entropy_with_logits(fake_out, torch.ones_like(fake_out))
        elif self.name == "minimax":
            loss = -F.binary_cross_entropy_with_logits(fake_out, torch.zeros_like(fake_out))
        elif self.name == "lsgan":
            loss = 0.5 * F.mse_loss(fake_out, torch.ones_like(fake_out))
        elif self.name in ("hinge", "wgan_gp"):
            loss = -torch.mean(fake_out)
        elif self.name == "began":
            loss = self.g_loss = F.l1_loss(fake_out, fake)
        elif self.name in RELATIVISTIC:  # the same loss with the roles swapped
            loss = relativistic_loss(self.name, fake_out, real_out)
        elif self.name == "ebgan":
            loss = F.mse_loss(fake_out, fake)
        else:  # softmax
            b = 1 / (2 * fake_out.size(0))
            z_b = torch.sum(torch.exp(-real_out)) + torch.sum(torch.exp(-fake_out))
            loss = torch.sum(real_out) * b + torch.sum(fake_out) * b + torch.log(z_b)
        self.row["loss_g"] = loss.item()
        return loss

    def end_iteration(self) -> None:
        """Record the iteration; update BEGAN's k_t as the paper does (not the which-first
        post's typos)."""
        if self.name == "began":
            if self.d_loss1 is not None and self.g_loss is not None:
                diff = self.gamma * self.d_loss1.item() - self.g_loss.item()
                self.kt = min(max(self.kt + self.lambda_k * diff, 0.0), 1.0)
            self.row["k"] = self.kt
            self.d_loss1 = self.g_loss = None
        self.history.append(self.row)
        self.row = {}


def gradient_penalty(D: nn.Module, real: Tensor, fake: Tensor) -> Tensor:
    """WGAN-GP's penalty (unweighted) as tutorials write it: one ``torch.rand`` weight per
    sample, D on the interpolates, ``autograd.grad`` with a graph, the mean squared
    distance of the gradients' norms from 1."""
    alpha = torch.rand(real.size(0), *[1] * (real.dim() - 1), dtype=real.dtype, device=real.device)
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_interpolates = D(interpolates)
    gradients = torch.autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=torch.ones_like(d_interpolates),
        create_graph=True,
        retain_graph=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def _set_requires_grad(module: nn.Module, flag: bool) -> None:
    for p in module.parameters():
        p.requires_grad_(flag)


# The batches of the conditional and image-to-image loops: (x, y) pairs, y class labels
# or, for pix2pix, (target image, source image).
Pairs = Sequence[tuple[Tensor, Tensor]]


def _bce(out: Tensor, target: float) -> Tensor:
    return F.binary_cross_entropy_with_logits(out, torch.full_like(out, target))


def _as_floats(array: np.ndarray, like: Tensor) -> Tensor:
    """A numpy draw as the scripts' ``FloatTensor(...)`` makes it: float32 there, the
    batch's dtype here (so that the tests can run in float64)."""
    return torch.from_numpy(array).to(dtype=like.dtype, device=like.device)


def _one_hot(y: np.ndarray, num_columns: int, like: Tensor) -> Tensor:
    """InfoGAN's ``to_categorical``: one-hot rows of ``y``, as floats."""
    y_cat = np.zeros((y.shape[0], num_columns))
    y_cat[range(y.shape[0]), y] = 1.0
    return _as_floats(y_cat, like)
