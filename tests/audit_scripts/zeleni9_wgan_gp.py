# ruff: noqa: B007, E501, F841  (written as pytorch-wgan writes it)
"""Zeleni9/pytorch-wgan's ``models/wgan_gradient_penalty.py`` ``train`` made small: D's
parameters switched on, per critic step (``critic_iter`` 5) ``D.zero_grad()``, a
``torch.rand`` z drawn and overwritten, ``d_loss_real.backward(mone)``, a ``torch.randn``
z, ``d_loss_fake.backward(one)``, and ``calculate_gradient_penalty`` on the batches'
``.data`` (``eta = torch.FloatTensor(b, 1, 1, 1).uniform_(0, 1)``, ``eta * real + (1 -
eta) * fake``, ``gradients.norm(2, dim=1)`` of the image gradient: a norm over channels
at each pixel); then D switched off and G's step with ``backward(mone)``. Small
convolutional D and a linear G on random 4x4 images."""

import torch
import torch.nn as nn
from torch import autograd

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 3 * 4 * 4), nn.Tanh(), nn.Unflatten(1, (3, 4, 4)))
D = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(8 * 16, 1))
d_optimizer = torch.optim.Adam(D.parameters(), lr=1e-4, betas=(0.5, 0.999))
g_optimizer = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.5, 0.999))
batch_size, lambda_term, critic_iter = 8, 10, 5
one = torch.tensor(1, dtype=torch.float)
mone = one * -1


def calculate_gradient_penalty(real_images, fake_images):
    eta = torch.FloatTensor(batch_size, 1, 1, 1).uniform_(0, 1)
    eta = eta.expand(batch_size, real_images.size(1), real_images.size(2), real_images.size(3))
    interpolated = eta * real_images + ((1 - eta) * fake_images)
    interpolated = autograd.Variable(interpolated, requires_grad=True)
    prob_interpolated = D(interpolated)
    gradients = autograd.grad(
        outputs=prob_interpolated,
        inputs=interpolated,
        grad_outputs=torch.ones(prob_interpolated.size()),
        create_graph=True,
        retain_graph=True,
    )[0]
    grad_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * lambda_term
    return grad_penalty


for g_iter in range(100):
    for p in D.parameters():
        p.requires_grad = True
    for d_iter in range(critic_iter):
        D.zero_grad()
        images = torch.rand(batch_size, 3, 4, 4) * 2 - 1
        z = torch.rand((batch_size, 8))
        d_loss_real = D(images)
        d_loss_real = d_loss_real.mean()
        d_loss_real.backward(mone)
        z = torch.randn(batch_size, 8)
        fake_images = G(z)
        d_loss_fake = D(fake_images)
        d_loss_fake = d_loss_fake.mean()
        d_loss_fake.backward(one)
        gradient_penalty = calculate_gradient_penalty(images.data, fake_images.data)
        gradient_penalty.backward()
        d_optimizer.step()
    for p in D.parameters():
        p.requires_grad = False
    G.zero_grad()
    z = torch.randn(batch_size, 8)
    fake_images = G(z)
    g_loss = D(fake_images)
    g_loss = g_loss.mean()
    g_loss.backward(mone)
    g_optimizer.step()
