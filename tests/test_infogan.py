"""InfoGAN as PyTorch-GAN writes it: a tuple latent (z, label, code), D(x) with Q heads,
and the info step as a third phase of the Step (float64)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.wild import (
    assert_losses,
    assert_same_sides,
    run_step,
)
from torch import nn

from ganstep import Step, d_first, reference, simultaneous
from ganstep.engine.objectives import NS

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


class InfoGAsWritten(nn.Module):
    """infogan.py's G in small: cat(noise, labels, code), BatchNorm, LeakyReLU."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z + K + C, 8), nn.BatchNorm1d(8, 0.8),
                                 nn.LeakyReLU(0.2), nn.Linear(8, X))  # fmt: skip

    def forward(self, noise, labels, code):
        return self.net(torch.cat((noise, labels, code), -1))


class InfoDAsWritten(nn.Module):
    """infogan.py's D in small: Dropout and BatchNorm in the body, validity, a label head
    ending in a Softmax (which its CrossEntropyLoss reads as logits) and a code head."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(X, 8), nn.LeakyReLU(0.2), nn.Dropout(0.25),
                                  nn.BatchNorm1d(8, 0.8))  # fmt: skip
        self.adv_layer = nn.Sequential(nn.Linear(8, 1))
        self.aux_layer = nn.Sequential(nn.Linear(8, K), nn.Softmax(dim=1))
        self.latent_layer = nn.Sequential(nn.Linear(8, C))

    def forward(self, img):
        out = self.body(img)
        return self.adv_layer(out), self.aux_layer(out), self.latent_layer(out)


def numpy_latents(seed: int):
    """infogan.py's two ways of drawing from ``np.random``: G's step draws z, labels, a
    uniform code; the info step labels, z, then a code from normal(-1, 1)."""
    rng = np.random.RandomState(seed)

    def one_hot(y):
        return F.one_hot(torch.from_numpy(y), K).double()

    def latent(n):
        z = torch.from_numpy(rng.normal(0, 1, (n, Z)))
        labels = one_hot(rng.randint(0, K, n))
        return z, labels, torch.from_numpy(rng.uniform(-1, 1, (n, C)))

    def info_latent(n):
        labels = one_hot(rng.randint(0, K, n))
        z = torch.from_numpy(rng.normal(0, 1, (n, Z)))
        return z, labels, torch.from_numpy(rng.normal(-1, 1, (n, C)))

    return latent, info_latent


def as_written_sides():
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = InfoGAsWritten().double(), InfoDAsWritten().double()
        adam = lambda params: torch.optim.Adam(params, 0.01, betas=(0.5, 0.9))  # noqa: E731
        out.append((G, D, adam(G.parameters()), adam(D.parameters()),
                    adam(itertools.chain(G.parameters(), D.parameters()))))  # fmt: skip
    return out


def test_infogan_as_written_equals_simultaneous_with_the_info_steps_own_draws():
    """infogan.py as its author wrote it (numpy's draws in its two orders, the info
    step's code from normal(-1, 1), Dropout and BatchNorm in D, a Softmax label head):
    parameters, BatchNorm statistics and all three Adams' states equal."""
    theirs, ours = as_written_sides()
    reals = batches(4)
    torch.manual_seed(5)  # Dropout's masks
    expected = reference.pytorch_gan_infogan(*theirs, reals, np.random.RandomState(3), Z, K, C)
    latent, info_latent = numpy_latents(3)
    G, D, opt_g, opt_d, opt_info = ours
    step = Step(G, D, opt_g, opt_d, objective="lsgan", g_scale=2.0, schedule=simultaneous(),
                latent=latent, info_optimizer=opt_info, info_terms=INFO_TERMS,
                info_latent=info_latent)  # fmt: skip
    torch.manual_seed(5)
    got = run_step(step, reals)
    assert_losses(got, expected, keys=("loss_d", "loss_g", "loss_info"))
    assert_same_sides(ours, theirs)


def test_the_info_step_drawing_from_latent_is_another_loop():
    """Before info_latent, the info step called ``latent`` again (z, labels, uniform
    code): off the script by about 1e-3 after 4 iterations."""
    theirs, ours = as_written_sides()
    reals = batches(4)
    torch.manual_seed(5)
    reference.pytorch_gan_infogan(*theirs, reals, np.random.RandomState(3), Z, K, C)
    latent, _ = numpy_latents(3)
    G, D, opt_g, opt_d, opt_info = ours
    step = Step(G, D, opt_g, opt_d, objective="lsgan", g_scale=2.0, schedule=simultaneous(),
                latent=latent, info_optimizer=opt_info, info_terms=INFO_TERMS)  # fmt: skip
    torch.manual_seed(5)
    run_step(step, reals)
    assert not torch.allclose(G.net[0].weight, theirs[0].net[0].weight, atol=1e-6)


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_info_terms_train_with_one_latent_for_both_steps(dropout):
    """A loop whose info step draws as G's does: ``latent`` serves both."""
    _, ours = sides(dropout)
    G, D, opt_g, opt_d, opt_info = ours
    steps = []
    step = Step(G, D, opt_g, opt_d, objective="lsgan", g_scale=2.0, schedule=simultaneous(),
                latent=latent_codes(), info_optimizer=opt_info, info_terms=INFO_TERMS,
                after_step={"info": steps.append})  # fmt: skip
    got = run_step(step, batches(4))
    assert len(steps) == 4 and {"cat", "con", "loss_info"} <= set(got[0])


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
    with pytest.raises(ValueError, match="info_latent draws the info step's latents"):
        Step(G, D, opt_g, opt_d, info_latent=latent_codes(), **kwargs)
    with pytest.raises(TypeError, match="latent must take the batch size"):
        Step(G, D, opt_g, opt_d, info_optimizer=opt_info, info_terms=INFO_TERMS,
             info_latent=lambda: None, **kwargs)  # fmt: skip
    stranger = torch.optim.SGD([nn.Parameter(torch.zeros(1))], 0.1)
    with pytest.raises(ValueError, match="only G's and D's parameters"):
        Step(G, D, opt_g, opt_d, info_optimizer=stranger, info_terms=INFO_TERMS, **kwargs)


# Natsu6767/InfoGAN-PyTorch in small: noise (b, channels, 1, 1) of z, one 10-way code
# and two continuous codes; D a body and two heads, the Q head in G's optimizer
NZ, DIS, CON = 3, 10, 2


class NatsuG(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NZ + DIS + CON, 8), nn.ReLU(), nn.Linear(8, X))

    def forward(self, x):
        return self.net(x.flatten(1))


class QHead(nn.Module):
    """Its QHead: the code's logits, the continuous codes' means and variances."""

    def __init__(self):
        super().__init__()
        self.disc, self.mu, self.var = nn.Linear(8, DIS), nn.Linear(8, CON), nn.Linear(8, CON)

    def forward(self, x):
        return self.disc(x).squeeze(), self.mu(x).squeeze(), torch.exp(self.var(x).squeeze())


class BodyAndHead(nn.Module):
    """The Step's D: its body and D head, with the body's features for the Q head."""

    def __init__(self, body: nn.Module, head: nn.Module):
        super().__init__()
        self.body, self.head = body, head

    def forward(self, x):
        features = self.body(x)
        return self.head(features).view(-1), features


def natsu_models():
    torch.manual_seed(0)
    G = NatsuG().double()
    body = nn.Sequential(nn.Linear(X, 8), nn.LeakyReLU(0.1)).double()
    head = nn.Sequential(nn.Linear(8, 1), nn.Sigmoid()).double()
    optimizers = lambda G, body, head, q: (  # noqa: E731 - its optimD and optimG
        torch.optim.Adam([{"params": G.parameters()}, {"params": q.parameters()}], 2e-3,
                         betas=(0.5, 0.999)),
        torch.optim.Adam([{"params": body.parameters()}, {"params": head.parameters()}], 2e-3,
                         betas=(0.5, 0.999)),
    )  # fmt: skip
    return G, body, head, QHead().double(), optimizers


def natsu_info(netQ: nn.Module):
    """The info loss as G's terms, read from the noise G was given (its one-hot code and
    continuous codes) and the Q head on D's body features."""

    def nll(x, mu, var):  # its NormalNLLLoss
        logli = -0.5 * (var.mul(2 * np.pi) + 1e-6).log() - (x - mu).pow(2).div(var.mul(2.0) + 1e-6)
        return -(logli.sum(1).mean())

    def dis(v):
        return F.cross_entropy(netQ(v.d_fake[1])[0], v.fake.z[:, NZ : NZ + DIS, 0, 0].argmax(1))

    def con(v):
        _, mu, var = netQ(v.d_fake[1])
        return nll(v.fake.z[:, NZ + DIS :].view(-1, CON), mu, var)

    return {"dis": (1.0, dis), "con": (0.1, con)}


def natsu_noise(rng: np.random.RandomState):
    """Its noise_sample(1, 10, 2, NZ, n), as the user's latent."""

    def latent(n):
        z = torch.randn(n, NZ, 1, 1, dtype=torch.float64)
        dis_c = torch.zeros(n, DIS, dtype=torch.float64)
        dis_c[torch.arange(n), rng.randint(DIS, size=n)] = 1.0
        con_c = torch.rand(n, CON, 1, 1, dtype=torch.float64) * 2 - 1
        return torch.cat((z, dis_c.view(n, -1, 1, 1), con_c), dim=1)

    return latent


def test_natsu6767s_info_loss_in_gs_step_with_its_q_head_in_gs_optimizer():
    """Natsu6767/InfoGAN-PyTorch folds the info loss into G's step and lets G's optimizer
    train the Q head beside D's body (``optimG`` over ``netG`` and ``netQ``). A Step
    whose opt_g held such a head left it untrained: G's backward added to G's
    parameters alone. Parameters an optimizer holds beside G and D are now that side's
    too: equal to the source loop in float64."""
    G, body, head, q, optimizers = natsu_models()
    theirs = [G, body, head, q, *optimizers(G, body, head, q)]
    batches_ = batches(4)
    torch.manual_seed(1)
    history = reference.natsu6767_infogan(G, body, head, q, theirs[4], theirs[5], batches_,
                                          np.random.RandomState(2), num_z=NZ, num_dis_c=1,
                                          dis_c_dim=DIS, num_con_c=CON)  # fmt: skip
    G, body, head, q, optimizers = natsu_models()
    opt_g, opt_d = optimizers(G, body, head, q)
    step = Step(G, BodyAndHead(body, head), opt_g, opt_d, objective=NS(probabilities=True),
                schedule=d_first(), latent=natsu_noise(np.random.RandomState(2)),
                g_terms=natsu_info(q))  # fmt: skip
    torch.manual_seed(1)
    ours = run_step(step, batches_)
    assert_same_sides([G, body, head, q, opt_g, opt_d], theirs)
    assert_losses(ours, history)  # (G's: its adversarial loss and the info terms)
    assert {"dis", "con"} <= set(ours[0])


def test_a_head_beside_g_and_d_is_one_sides_and_not_captured():
    """Both optimizers holding a head beside G and D would step it twice; a CUDA graph's
    check for replaced parameters walks G's and D's alone: both refused, saying why."""
    from ganstep.engine.cuda_graph import check_capturable

    G, body, head, q, optimizers = natsu_models()
    D = BodyAndHead(body, head)
    opt_g, opt_d = optimizers(G, body, head, q)
    opt_d.add_param_group({"params": q.parameters()})
    with pytest.raises(ValueError, match=r"opt_g and opt_d both hold 6 parameter\(s\) of neither"):
        Step(G, D, opt_g, opt_d, objective=NS(probabilities=True), schedule=d_first(),
             latent=natsu_noise(None))  # fmt: skip
    opt_g, opt_d = optimizers(G, body, head, q)
    step = Step(G, D, opt_g, opt_d, objective=NS(probabilities=True), schedule=d_first(),
                latent=natsu_noise(np.random.RandomState(0)), g_terms=natsu_info(q))  # fmt: skip
    with pytest.raises(ValueError, match="opt_g holds parameters of neither G nor D"):
        check_capturable(step)


def test_a_head_in_ds_optimizer_is_trained_by_ds_terms_alone():
    """The other side: a head beside D in D's optimizer, which D's terms call on D's
    features of the fakes (a code read back in D's step). A hand-written d_first loop
    with one backward a step: D's loss and the head's, then G's adversarial loss alone,
    which the head takes no part in (float64, every parameter and moment)."""

    def sides():
        G, body, head, q, _ = natsu_models()
        adam = lambda *ms: torch.optim.Adam([p for m in ms for p in m.parameters()], 2e-3)  # noqa: E731
        return G, body, head, q, adam(G), adam(body, head, q)

    def read_back(q, features, z):
        return F.mse_loss(q(features)[1], z[:, NZ + DIS :, 0, 0])

    G, body, head, q, opt_g, opt_d = theirs = sides()
    rng = np.random.RandomState(4)
    latent = natsu_noise(rng)
    torch.manual_seed(1)
    for x in batches(3):
        opt_d.zero_grad()
        z = latent(x.shape[0])
        fake = G(z).detach()
        features = body(fake)
        loss_d = (F.binary_cross_entropy(head(body(x)).view(-1), torch.ones(N, dtype=x.dtype))
                  + F.binary_cross_entropy(head(features).view(-1), torch.zeros(N, dtype=x.dtype))
                  + 0.5 * read_back(q, features, z))  # fmt: skip
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        F.binary_cross_entropy(head(body(G(z))).view(-1), torch.ones(N, dtype=x.dtype)).backward()
        opt_g.step()
    G, body, head, q, opt_g, opt_d = ours = sides()
    step = Step(G, BodyAndHead(body, head), opt_g, opt_d, objective=NS(probabilities=True),
                schedule=d_first(), latent=natsu_noise(np.random.RandomState(4)),
                d_terms={"code": (0.5, lambda v: read_back(q, v.d_fake[1], v.fake.z))})  # fmt: skip
    torch.manual_seed(1)
    run_step(step, batches(3))
    assert_same_sides(ours, theirs)
