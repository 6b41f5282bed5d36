"""ProGAN as aladdinpersson/Machine-Learning-Collection trains it (``reference.persson_progan``):
G and the critic called ``(x, alpha, step)`` with a fade-in ``alpha`` that grows every
batch, a critic with a minibatch-std feature (its output on a batch depends on the whole
batch), WGAN-GP, and ProGAN's drift term ``0.001 * mean(D(x) ** 2)``. A Step equals it
with G and D wrapped so that it calls them with the loop's ``(alpha, step)``, the drift
as a D term."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers.wild import assert_same_sides
from torch import nn

from ganstep import Step, d_first, reference
from ganstep.engine.objectives import WGANGP

Z, WIDTH = 8, 6


class Generator(nn.Module):
    """A two-resolution ProGAN generator in the source's shape (not its code): z of shape
    (n, Z, 1, 1) to 4x4, one block to 8x8, an RGB layer for each, and at ``steps=1`` the
    fade-in ``tanh(alpha * new + (1 - alpha) * upscaled)``."""

    def __init__(self) -> None:
        super().__init__()
        self.initial = nn.Sequential(nn.ConvTranspose2d(Z, WIDTH, 4), nn.LeakyReLU(0.2))
        self.block = nn.Sequential(nn.Conv2d(WIDTH, WIDTH, 3, padding=1), nn.LeakyReLU(0.2))
        self.rgb = nn.ModuleList([nn.Conv2d(WIDTH, 1, 1), nn.Conv2d(WIDTH, 1, 1)])

    def forward(self, x, alpha, steps):
        out = self.initial(x)
        if steps == 0:
            return self.rgb[0](out)
        upscaled = F.interpolate(out, scale_factor=2, mode="nearest")
        out = self.block(upscaled)
        return torch.tanh(alpha * self.rgb[1](out) + (1 - alpha) * self.rgb[0](upscaled))


class Critic(nn.Module):
    """The mirror of :class:`Generator`, with the source's minibatch standard deviation
    (one feature map of the batch's mean std) before its last block."""

    def __init__(self) -> None:
        super().__init__()
        self.rgb = nn.ModuleList([nn.Conv2d(1, WIDTH, 1), nn.Conv2d(1, WIDTH, 1)])
        self.block = nn.Sequential(nn.Conv2d(WIDTH, WIDTH, 3, padding=1), nn.LeakyReLU(0.2))
        self.final = nn.Sequential(nn.Conv2d(WIDTH + 1, WIDTH, 4), nn.LeakyReLU(0.2),
                                   nn.Conv2d(WIDTH, 1, 1))  # fmt: skip

    def forward(self, x, alpha, steps):
        if steps == 0:
            out = F.leaky_relu(self.rgb[0](x), 0.2)
        else:
            down = F.leaky_relu(self.rgb[0](F.avg_pool2d(x, 2)), 0.2)
            out = F.avg_pool2d(self.block(F.leaky_relu(self.rgb[1](x), 0.2)), 2)
            out = alpha * out + (1 - alpha) * down
        std = torch.std(out, dim=0).mean().repeat(out.shape[0], 1, *out.shape[2:])
        return self.final(torch.cat([out, std], dim=1)).view(out.shape[0], -1)


class AtStage(nn.Module):
    """A ProGAN module called as the Step calls G and D (``G(z)``, ``D(x)``), with the
    loop's fade-in and resolution as attributes set before each iteration."""

    def __init__(self, net: nn.Module, alpha: float, steps: int) -> None:
        super().__init__()
        self.net, self.alpha, self.steps = net, alpha, steps

    def forward(self, x):
        return self.net(x, self.alpha, self.steps)


def sides():
    """Two identical float64 (G, critic, Adam(0, 0.99)) sides, as the source builds them."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        gen, critic = Generator().double(), Critic().double()
        made.append((gen, critic, torch.optim.Adam(gen.parameters(), 1e-3, betas=(0.0, 0.99)),
                     torch.optim.Adam(critic.parameters(), 1e-3, betas=(0.0, 0.99))))  # fmt: skip
    return made


def batches(count: int, steps: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    side = 4 * 2**steps
    return [torch.rand(8, 1, side, side, generator=gen, dtype=torch.float64) * 2 - 1
            for _ in range(count)]  # fmt: skip


def drift(view) -> torch.Tensor:
    """ProGAN's drift term: the mean of D's squared scores on the real batch."""
    return view.d_real.pow(2).mean()


def latent(n: int) -> torch.Tensor:  # the source's torch.randn(n, Z_DIM, 1, 1)
    return torch.randn(n, Z, 1, 1, dtype=torch.float64)


@pytest.mark.parametrize("steps", [1, 0])
def test_persson_progan_equals_a_step_on_its_staged_modules(steps):
    """Four batches at one resolution, alpha growing from 0.2 by 0.25 a batch: every
    parameter and Adam moment equal to 1e-12 in float64, and each batch's losses, penalty
    and alpha. The source draws its penalty's beta in the default dtype (float32 here):
    ``WGANGP``'s ``alpha=`` draws it so too."""
    theirs, ours = sides()
    data, dataset_size, epochs = batches(4, steps), 64, 1
    torch.manual_seed(5)
    expected = reference.persson_progan(
        *theirs, data, latent, step=steps, alpha=0.2, dataset_size=dataset_size,
        progressive_epochs=epochs,
    )  # fmt: skip
    gen, critic, opt_gen, opt_critic = ours
    G, D = AtStage(gen, 0.2, steps), AtStage(critic, 0.2, steps)
    step = Step(G, D, opt_gen, opt_critic, schedule=d_first(), latent=latent,
                objective=WGANGP(10.0, alpha=lambda shape: torch.rand(shape)),
                d_terms={"drift": (0.001, drift)})  # fmt: skip
    torch.manual_seed(5)
    alpha, got = 0.2, []
    for real in data:
        G.alpha = D.alpha = alpha
        got.append({"alpha": alpha, **{k: v.item() for k, v in step(real).items()}})
        alpha = min(alpha + len(real) / ((epochs * 0.5) * dataset_size), 1)
    assert [row["alpha"] for row in expected] == pytest.approx([0.2, 0.45, 0.7, 0.95])
    assert_same_sides(ours, theirs)
    for mine, source in zip(got, expected, strict=True):
        assert mine["alpha"] == source["alpha"]
        assert mine["loss_g"] == pytest.approx(source["loss_g"], rel=1e-12)
        assert mine["loss_d"] == pytest.approx(source["loss_d"], rel=1e-12)
        # ganstep logs the penalty and the drift as weighted (the drift's a part of
        # loss_d), the source its penalty unweighted
        assert mine["gp"] == pytest.approx(10.0 * source["gp"], rel=1e-12)


def test_the_drift_term_and_the_fade_in_are_what_make_it_equal():
    """Without the drift term, or with alpha left at its first value, the Step parts
    from the source: each is part of the update."""
    for change in ("no drift", "alpha fixed"):
        theirs, ours = sides()
        data = batches(3, 1)
        torch.manual_seed(5)
        reference.persson_progan(*theirs, data, latent, step=1, alpha=0.2, dataset_size=64,
                                 progressive_epochs=1)  # fmt: skip
        gen, critic, opt_gen, opt_critic = ours
        G, D = AtStage(gen, 0.2, 1), AtStage(critic, 0.2, 1)
        terms = {} if change == "no drift" else {"drift": (0.001, drift)}
        step = Step(G, D, opt_gen, opt_critic, schedule=d_first(), latent=latent,
                    objective=WGANGP(10.0, alpha=lambda shape: torch.rand(shape)),
                    d_terms=terms)  # fmt: skip
        torch.manual_seed(5)
        alpha = 0.2
        for real in data:
            G.alpha = D.alpha = alpha if change == "no drift" else 0.2
            step(real)
            alpha = min(alpha + len(real) / 32, 1)
        with pytest.raises(AssertionError):
            assert_same_sides(ours, theirs)
