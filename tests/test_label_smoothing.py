"""One-sided label smoothing, ``NS(real_label=...)``: D's target for real samples below
1 (Salimans et al., 2016), as Udacity's GAN notebook writes it (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import X_DIM, real_batches
from helpers.wild import assert_losses, assert_same_sides, run_step
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, d_first, g_first, reference, simultaneous
from ganstep.engine.objectives import NS, Minimax

Z_SIZE = 5


class UdacityD(nn.Module):
    """The notebook's Discriminator, narrow: leaky ReLUs with Dropout(0.3) between."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(X_DIM, 16), nn.Linear(16, 8), nn.Linear(8, 1)
        self.dropout = nn.Dropout(0.3)

    def forward(self, x):
        x = self.dropout(nn.functional.leaky_relu(self.fc1(x), 0.2))
        x = self.dropout(nn.functional.leaky_relu(self.fc2(x), 0.2))
        return self.fc3(x)


def sides():
    """Two identical (G, D, opt_g, opt_d) in float64. G has no Dropout, so the default
    d_order (G's fakes made before D's forwards) equals the notebook; with its G's
    Dropout too, d_order="real_g_fake" does (tests/test_real_g_fake.py)."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(Z_SIZE, 8), nn.LeakyReLU(0.2), nn.Linear(8, X_DIM),
                          nn.Tanh()).double()  # fmt: skip
        D = UdacityD().double()
        made.append((G, D, torch.optim.Adam(G.parameters(), 0.002),
                     torch.optim.Adam(D.parameters(), 0.002)))  # fmt: skip
    return made


def notebook_run(theirs, ours, **options) -> tuple[list, list, Step]:
    """The notebook's loop on ``theirs`` and its Step on ``ours`` (``options`` added):
    z from the same numpy draws, Dropout's masks from torch's generator seeded alike;
    the notebook rescales each batch itself (x * 2 - 1), the Step is given them
    rescaled. Each one's losses, and the Step."""
    reals = [x.sigmoid() for x in real_batches(5, dtype=torch.float64)]  # images in [0, 1)
    torch.manual_seed(7)
    expected = reference.udacity_gan_mnist(*theirs, reals, np.random.RandomState(3), Z_SIZE)
    rng = np.random.RandomState(3)
    latent = lambda n: torch.from_numpy(rng.uniform(-1, 1, size=(n, Z_SIZE)))  # noqa: E731
    step = Step(*ours, objective=NS(real_label=0.9), schedule=d_first(reuse_fake=False),
                latent=latent, **options)  # fmt: skip
    torch.manual_seed(7)
    return run_step(step, [x * 2 - 1 for x in reals]), expected, step


def test_real_label_equals_udacitys_gan_notebook():
    """The notebook's loop: BCEWithLogitsLoss against 0.9 on D's real scores, 0 on the
    fakes, 1 in G's step on fresh z (numpy's uniform), D's Dropout masks in its order."""
    theirs, ours = sides()
    got, expected, _ = notebook_run(theirs, ours)
    assert_same_sides(ours, theirs)
    assert_losses(got, expected)


@pytest.mark.parametrize("schedule", [d_first(), g_first(), simultaneous()],
                         ids=["d_first", "g_first", "simultaneous"])  # fmt: skip
@pytest.mark.parametrize("probabilities", [False, True])
def test_real_label_moves_only_ds_real_term(schedule, probabilities):
    """L_D's real term is the BCE against the label, its fake term and L_G are NS's: the
    logged L_D is that sum, the logged L_G the plain NS one."""
    torch.manual_seed(0)
    G = nn.Linear(Z_SIZE, X_DIM).double()
    layers = [nn.Linear(X_DIM, 1), *([nn.Sigmoid()] if probabilities else [])]
    D = nn.Sequential(*layers).double()
    step = Step(G, D, torch.optim.SGD(G.parameters(), 0.0), torch.optim.SGD(D.parameters(), 0.0),
                objective=NS(real_label=0.8, probabilities=probabilities), schedule=schedule,
                latent=lambda n: torch.zeros(n, Z_SIZE, dtype=torch.float64))  # fmt: skip
    real = real_batches(1, dtype=torch.float64)[0]
    logs = step(real)
    with torch.no_grad():
        r, f = D(real).squeeze(1), D(G(torch.zeros(len(real), Z_SIZE, dtype=torch.float64)))
        if probabilities:
            bce = nn.functional.binary_cross_entropy
            want_d = bce(r, torch.full_like(r, 0.8)) + bce(f, torch.zeros_like(f))
            want_g = bce(f, torch.ones_like(f))
        else:
            bce = nn.functional.binary_cross_entropy_with_logits
            want_d = bce(r, torch.full_like(r, 0.8)) + bce(f, torch.zeros_like(f))
            want_g = bce(f, torch.ones_like(f))
    assert logs["loss_d"].item() == pytest.approx(want_d.item(), rel=1e-12)
    assert logs["loss_g"].item() == pytest.approx(want_g.item(), rel=1e-12)


def test_the_default_label_computes_what_ns_computed():
    """real_label=1.0 is NS as it was, bit for bit (its losses' ops are unchanged)."""
    r, f = torch.randn(8), torch.randn(8)
    assert torch.equal(NS().d_loss(r, f)[0], torch.nn.functional.softplus(-r).mean()
                       + torch.nn.functional.softplus(f).mean())  # fmt: skip
    assert repr(NS()) == "NS(r1=0.0, r1_every=1)"
    assert repr(Minimax(real_label=0.9)) == "Minimax(r1=0.0, r1_every=1, real_label=0.9)"


@given(st.one_of(st.floats(allow_nan=True), st.integers(), st.booleans(), st.text()))
def test_a_label_outside_0_to_1_is_refused_by_name(label):
    if not isinstance(label, bool) and isinstance(label, int | float) and 0 < label <= 1:
        assert NS(real_label=label).real_label == float(label)
        return
    with pytest.raises(ValueError, match=r"real_label \(D's target for real samples\)"):
        NS(real_label=label)
