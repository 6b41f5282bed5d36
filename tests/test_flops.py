"""Passes saved, counted exactly with FlopCounterMode on a DCGAN-shaped pair (32x32)."""

from __future__ import annotations

import pytest
import torch
from helpers import flops
from helpers.dcgan import N, d_costs, dcgan_pair, latent

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.sides import frozen


@pytest.fixture
def real():
    return torch.randn(N, 3, 32, 32)


@pytest.mark.parametrize("batchnorm", [True, False])
def test_d_first_saves_exactly_d_weight_gradients_in_g_phase(real, batchnorm):
    _, weight_grads = d_costs(real)
    G, D, opt_g, opt_d = dcgan_pair(batchnorm)
    ref = flops(lambda: reference.dcgan_example(G, D, opt_g, opt_d, [real], latent))
    step = Step(*dcgan_pair(batchnorm), objective="ns", schedule="d_first", latent=latent)
    step.observe_d(real)  # once, outside the measured step (see test_d_profile)
    ours = flops(lambda: step(real))
    assert ref - ours == weight_grads


@pytest.mark.parametrize("batchnorm", [True, False])
def test_simultaneous_saves_one_d_forward_and_d_weight_gradients(real, batchnorm):
    forward, weight_grads = d_costs(real)
    G, D, opt_g, opt_d = dcgan_pair(batchnorm)
    ref = flops(lambda: reference.pytorch_gan_g_first(G, D, opt_g, opt_d, [real], latent))
    step = Step(*dcgan_pair(batchnorm), objective="ns", schedule="simultaneous", latent=latent)
    step.observe_d(real)
    ours = flops(lambda: step(real))
    assert ref - ours == forward + weight_grads


def test_g_first_matches_lightning_which_already_freezes(real):
    """Lightning's toggle_optimizer already does the minimal passes: ganstep costs the same."""
    G, D, opt_g, opt_d = dcgan_pair()
    ref = flops(lambda: reference.lightning_g_first(G, D, opt_g, opt_d, [real], latent))
    step = Step(*dcgan_pair(), objective="ns", schedule="g_first", latent=latent)
    step.observe_d(real)
    assert flops(lambda: step(real)) == ref


def backward_flops(module, x: torch.Tensor, *, input_grad: bool, weight_grads: bool) -> int:
    """FLOPs of one backward through ``module`` at ``x`` (its forward excluded)."""
    x = x.detach().requires_grad_(input_grad)

    def forward_backward():
        module(x).sum().backward()

    if weight_grads:
        return flops(forward_backward) - flops(lambda: module(x))
    with frozen(module):
        return flops(forward_backward) - flops(lambda: module(x))


def test_d_first_fresh_z_keeps_d_loss_out_of_g(real):
    """The backward memo's way 1 backpropagates D's loss into G (no detach) and D's weights in G's
    step; ganstep's D step stops at D's first layer and its G step skips D's weights."""
    G, D, opt_g, opt_d = dcgan_pair()
    ref = flops(lambda: reference.backward_memo_way1(G, D, opt_g, opt_d, [real], latent))
    step = Step(*dcgan_pair(), objective="ns", schedule=d_first(reuse_fake=False), latent=latent)
    step.observe_d(real)
    ours = flops(lambda: step(real))
    G, D, _, _ = dcgan_pair()
    d_first_layer_input = backward_flops(D, real, input_grad=True, weight_grads=True) - (
        backward_flops(D, real, input_grad=False, weight_grads=True)
    )
    d_weights = backward_flops(D, real, input_grad=True, weight_grads=True) - (
        backward_flops(D, real, input_grad=True, weight_grads=False)
    )
    g_backward = backward_flops(G, latent(N), input_grad=False, weight_grads=True)
    assert ref - ours == d_first_layer_input + g_backward + d_weights


def test_fused_simultaneous_saves_the_second_backward_through_d(real):
    """Unfused, G's gradient needs its own backward through D (input gradients only);
    fused, D's one backward also yields the gradient at its input, which costs only
    its first layer's input gradient on top."""
    _, D, _, _ = dcgan_pair(batchnorm=False)
    x = torch.randn_like(real)
    with_input = flops(lambda: D(x.clone().requires_grad_(True)).sum().backward())
    first_layer_input = with_input - flops(lambda: D(x).sum().backward())
    with frozen(D):  # a forward and the input gradients of every layer
        input_only = flops(lambda: D(x.clone().requires_grad_(True)).sum().backward())
    input_only -= flops(lambda: D(x))
    unfused = Step(*dcgan_pair(batchnorm=False), objective="ns", schedule="simultaneous",
                   latent=latent)  # fmt: skip
    fused = Step(*dcgan_pair(batchnorm=False), objective="ns",
                 schedule=simultaneous(fused=True), latent=latent)  # fmt: skip
    unfused.observe_d(real)
    fused.observe_d(real)
    saved = flops(lambda: unfused(real)) - flops(lambda: fused(real))
    assert first_layer_input > 0
    assert saved == input_only - first_layer_input
