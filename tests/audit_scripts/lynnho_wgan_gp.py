# ruff: noqa: B007, E501  (written as DCGAN-LSGAN-WGAN-GP-DRAGAN-Pytorch writes it)
"""LynnHo/DCGAN-LSGAN-WGAN-GP-DRAGAN-Pytorch made small, run as
``--adversarial_loss_mode wgan --gradient_penalty_mode 1-gp
--gradient_penalty_sample_mode line --n_d 1``: ``train.py``'s ``train_G`` and
``train_D`` (``G(z).detach()`` first, D on the real batch then on the fakes) and its
loop (G's step where D's optimizer's step count is a multiple of ``n_d``), with
``gan/loss.py``'s ``get_wgan_losses_fn`` and ``gan/gradient_penalty.py``'s
``_sample_line`` (``real + alpha * (fake - real)``, as the WGAN-GP authors' code makes
its interpolates) and 1-gp; linear layers on random data."""

import functools

import torch
from torch import nn

torch.manual_seed(0)
n_d = 1
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
G_optimizer = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
D_optimizer = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
data_loader = torch.utils.data.DataLoader(
    torch.randn(160, 2), batch_size=16, shuffle=True, drop_last=True
)


def get_wgan_losses_fn():
    def d_loss_fn(r_logit, f_logit):
        r_loss = -r_logit.mean()
        f_loss = f_logit.mean()
        return r_loss, f_loss

    def g_loss_fn(f_logit):
        f_loss = -f_logit.mean()
        return f_loss

    return d_loss_fn, g_loss_fn


def _gradient_penalty(f, real, fake=None, penalty_type="1-gp", sample_mode="line"):
    def _sample_line(real, fake):
        shape = [real.size(0)] + [1] * (real.dim() - 1)
        alpha = torch.rand(shape, device=real.device)
        sample = real + alpha * (fake - real)
        return sample

    sample = _sample_line(real, fake)
    sample.requires_grad = True
    pred = f(sample)
    grad = torch.autograd.grad(pred, sample, grad_outputs=torch.ones_like(pred), create_graph=True)[
        0
    ]
    grad_norm = grad.view(grad.size(0), -1).norm(p=2, dim=1)
    gp = ((grad_norm - 1) ** 2).mean()
    return gp


d_loss_fn, g_loss_fn = get_wgan_losses_fn()


def train_G():
    G.train()
    D.train()
    z = torch.randn(16, 4)
    x_fake = G(z)
    x_fake_d_logit = D(x_fake)
    G_loss = g_loss_fn(x_fake_d_logit)
    G.zero_grad()
    G_loss.backward()
    G_optimizer.step()
    return {"g_loss": G_loss}


def train_D(x_real):
    G.train()
    D.train()
    z = torch.randn(16, 4)
    x_fake = G(z).detach()
    x_real_d_logit = D(x_real)
    x_fake_d_logit = D(x_fake)
    x_real_d_loss, x_fake_d_loss = d_loss_fn(x_real_d_logit, x_fake_d_logit)
    gp = _gradient_penalty(functools.partial(D), x_real, x_fake)
    D_loss = (x_real_d_loss + x_fake_d_loss) + gp * 10.0
    D.zero_grad()
    D_loss.backward()
    D_optimizer.step()
    return {"d_loss": x_real_d_loss + x_fake_d_loss, "gp": gp}


for ep in range(10):
    for x_real in data_loader:
        D_loss_dict = train_D(x_real)
        if D_optimizer.state_dict()["state"][0]["step"] % n_d == 0:
            G_loss_dict = train_G()
