"""InfoGAN as PyTorch-GAN writes it: a tuple latent (z, label, code), D(x) with Q heads,
and the info step as a third phase of the Step (float64)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers.wild import assert_losses, assert_same, run_step
from torch import nn

from ganstep import Step, reference, simultaneous

N, Z, K, C, X = 6, 3, 3, 2, 4  # batch, noise, classes, continuous codes, sample width


class InfoG(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z + K + C, 8), nn.ReLU(), nn.Linear(8, X))

    def forward(self, noise, labels, code):
        return self.net(torch.cat((noise, labels, code), -1))


class InfoD(nn.Module):
    """PyTorch-GAN's D: a body with Dropout, then validity, label and code heads."""

    def __init__(self, dropout: float):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X, 8), nn.LeakyReLU(0.2), nn.Dropout(dropout))
        self.adv_layer, self.aux_layer, self.latent_layer = (
            nn.Linear(8, 1), nn.Linear(8, K), nn.Linear(8, C))  # fmt: skip

    def forward(self, img):
        out = self.body(img)
        return self.adv_layer(out), self.aux_layer(out), self.latent_layer(out)


def sides(dropout: float):
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = InfoG().double(), InfoD(dropout).double()
        adam = lambda params: torch.optim.Adam(params, 0.01, betas=(0.5, 0.9))  # noqa: E731
        out.append((G, D, adam(G.parameters()), adam(D.parameters()),
                    adam([*G.parameters(), *D.parameters()])))  # fmt: skip
    return out


def latent_codes():
    gen = torch.Generator().manual_seed(1)

    def latent(n):
        z = torch.randn(n, Z, generator=gen, dtype=torch.float64)
        labels = F.one_hot(torch.randint(K, (n,), generator=gen), K).double()
        code = torch.rand(n, C, generator=gen, dtype=torch.float64) * 2 - 1
        return z, labels, code

    return latent


def batches(count: int):
    gen = torch.Generator().manual_seed(3)
    return [torch.randn(N, X, generator=gen, dtype=torch.float64) for _ in range(count)]


INFO_TERMS = {
    "cat": (1.0, lambda v: F.cross_entropy(v.d_fake[1], v.fake.z[1].argmax(1))),
    "con": (0.1, lambda v: F.mse_loss(v.d_fake[2], v.fake.z[2])),
}


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_infogan_equals_pytorch_gan(dropout):
    theirs, ours = sides(dropout)
    reals = batches(4)
    torch.manual_seed(5)
    expected = reference.pytorch_gan_infogan(*theirs, reals, latent_codes())
    G, D, opt_g, opt_d, opt_info = ours
    steps = []
    step = Step(G, D, opt_g, opt_d, objective="lsgan", g_scale=2.0, schedule=simultaneous(),
                latent=latent_codes(), info_optimizer=opt_info, info_terms=INFO_TERMS,
                after_step={"info": steps.append})  # fmt: skip
    torch.manual_seed(5)
    got = run_step(step, reals)
    assert_losses(got, expected, keys=("loss_d", "loss_g", "loss_info"))
    assert_same(G, theirs[0])
    assert_same(D, theirs[1])
    for a, b in zip(opt_info.state_dict()["state"].values(),
                    theirs[4].state_dict()["state"].values(), strict=True):  # fmt: skip
        torch.testing.assert_close(a["exp_avg"], b["exp_avg"])
    assert len(steps) == 4 and {"cat", "con"} <= set(got[0])


def test_info_step_steps_only_what_its_optimizer_holds():
    _, (G, D, opt_g, opt_d, _) = sides(0.0)
    q_heads = [*D.aux_layer.parameters(), *D.latent_layer.parameters()]
    opt_info = torch.optim.SGD([*G.parameters(), *q_heads], 0.1)
    body = [p.detach().clone() for p in D.body.parameters()]
    step = Step(G, D, opt_g, opt_d, objective="lsgan", schedule=simultaneous(),
                latent=latent_codes(), info_optimizer=opt_info, info_terms=INFO_TERMS,
                before_step={"info": lambda m: body.append(
                    [p.detach().clone() for p in D.body.parameters()])})  # fmt: skip
    step(batches(1)[0])
    before_info = body[-1]
    for p, q in zip(D.body.parameters(), before_info, strict=True):
        assert torch.equal(p, q)  # D's body moved in D's step, not in the info step


def test_info_arguments_are_checked():
    _, (G, D, opt_g, opt_d, opt_info) = sides(0.0)
    kwargs = dict(objective="lsgan", schedule="simultaneous", latent=latent_codes())
    with pytest.raises(ValueError, match="both info_optimizer and info_terms"):
        Step(G, D, opt_g, opt_d, info_optimizer=opt_info, **kwargs)
    stranger = torch.optim.SGD([nn.Parameter(torch.zeros(1))], 0.1)
    with pytest.raises(ValueError, match="only G's and D's parameters"):
        Step(G, D, opt_g, opt_d, info_optimizer=stranger, info_terms=INFO_TERMS, **kwargs)
