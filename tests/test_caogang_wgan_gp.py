"""caogang/wgan-gp's ``gan_mnist.py`` (commit 02ec5e2), the PyTorch port of the WGAN-GP
authors' code: five D steps an iteration, each on its own real batch with three backward
calls (``backward(mone)`` on D's real mean, ``backward(one)`` on the fakes', the penalty's
own), flat images that D views as images. It equals ``WGANGP(10.0)`` with
``d_first(d_steps=5, reuse_fake=False)`` in float64; ``ganstep audit`` runs it as written
(tests/audit_scripts/caogang_wgan_gp.py), names why it fails on PyTorch >= 0.4 and how
its users fix it, and ports the fixed script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import ganstep
from helpers.wild import assert_same_sides
from torch import nn

from ganstep import Step, d_first, reference
from ganstep.engine.objectives import WGANGP

Z, SIDE, N = 6, 8, 4
SCRIPT = Path(__file__).parent / "audit_scripts" / "caogang_wgan_gp.py"


class FlatG(nn.Module):
    """gan_mnist.py's Generator in small: Linear and ReLU, a transposed convolution, a
    Sigmoid, the image returned flat (``output.view(-1, OUTPUT_DIM)``)."""

    def __init__(self):
        super().__init__()
        self.preprocess = nn.Sequential(nn.Linear(Z, 4 * 4 * 4), nn.ReLU(True))
        self.deconv_out = nn.ConvTranspose2d(4, 1, 2, stride=2)

    def forward(self, z):
        out = self.preprocess(z).view(-1, 4, 4, 4)
        return torch.sigmoid(self.deconv_out(out)).view(-1, SIDE * SIDE)


class FlatD(nn.Module):
    """Its Discriminator in small: the flat input viewed as an image, a strided
    convolution and ReLU, a Linear, the scores as ``out.view(-1)``."""

    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(1, 4, 5, stride=2, padding=2), nn.ReLU(True))
        self.output = nn.Linear(4 * 4 * 4, 1)

    def forward(self, x):
        out = self.main(x.view(-1, 1, SIDE, SIDE))
        return self.output(out.view(-1, 4 * 4 * 4)).view(-1)


def sides(dtype: torch.dtype):
    """Two identical (G, D, Adam, Adam) with its settings (lr 1e-4, betas (0.5, 0.9))."""
    made = []
    for _ in range(2):
        torch.manual_seed(0)
        G, D = FlatG().to(dtype), FlatD().to(dtype)
        made.append((G, D, torch.optim.Adam(G.parameters(), 1e-4, betas=(0.5, 0.9)),
                     torch.optim.Adam(D.parameters(), 1e-4, betas=(0.5, 0.9))))  # fmt: skip
    return made


def run(dtype: torch.dtype, iterations: int = 4, critic_iters: int = 5):
    theirs, ours = sides(dtype)
    gen = torch.Generator().manual_seed(3)
    batches = [torch.rand(N, SIDE * SIDE, generator=gen, dtype=dtype)
               for _ in range(iterations * critic_iters)]  # fmt: skip
    latent = lambda n: torch.randn(n, Z, dtype=dtype)  # noqa: E731
    torch.manual_seed(9)
    expected = reference.caogang_wgan_gp(*theirs, batches, latent, critic_iters=critic_iters)
    # its alpha: torch.rand(BATCH_SIZE, 1), float32 whatever the images
    step = Step(*ours, objective=WGANGP(10.0, alpha=lambda shape: torch.rand(shape)),
                schedule=d_first(d_steps=critic_iters, reuse_fake=False),
                latent=latent)  # fmt: skip
    torch.manual_seed(9)
    got = [step(batches[i : i + critic_iters]) for i in range(0, len(batches), critic_iters)]
    return ours, theirs, got, expected


def test_gan_mnist_equals_d_first_with_five_d_steps_in_float64():
    """Parameters, Adam's states (five D steps an iteration) and the losses it logs:
    D_cost (the last D step's, penalty included), G_cost, the penalty."""
    ours, theirs, got, expected = run(torch.float64)
    assert_same_sides(ours, theirs)
    assert ours[3].state_dict()["state"][0]["step"].item() == 5 * len(got)
    for logs, source in zip(got, expected, strict=True):
        assert logs["loss_d"].item() == pytest.approx(source["loss_d"], rel=1e-12)
        assert logs["loss_g"].item() == pytest.approx(source["loss_g"], rel=1e-12)
        assert logs["gp"].item() == pytest.approx(source["gp"], rel=1e-12)


def test_gan_mnist_in_float32_adds_its_three_gradients_as_the_step_adds_them():
    """In float32 its three backward calls per D step sum D's gradients in another order
    than the Step's one: within float32's rounding."""
    ours, theirs, *_ = run(torch.float32, iterations=2)
    for mine, source in zip(ours[:2], theirs[:2], strict=True):
        for p, q in zip(mine.parameters(), source.parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_the_audit_names_why_gan_mnist_fails_on_todays_pytorch(tmp_path):
    """As written, its one = torch.FloatTensor([1]) (PyTorch 0.3) meets a 0-dim mean at
    the first D_real.backward(mone): the audit says where, what it means and the fix."""
    proc = ganstep("audit", SCRIPT, "--port", cache=tmp_path, cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert "caogang_wgan_gp.py:165: D_real.backward(mone): RuntimeError: Mismatch in shape" in (
        proc.stderr
    )
    assert ("since PyTorch 0.4 a mean or a sum has shape (), where 0.3 gave (1,), as the "
            "script expects; give backward() a 0-dim one (one = torch.tensor(1.0) for one = "
            "torch.FloatTensor([1]), its mone = one * -1 follows)") in proc.stderr  # fmt: skip


def test_gan_mnist_with_its_users_fix_ports_verified(tmp_path):
    """With one = torch.tensor(1.0): d_first(d_steps=5), fresh noise for G, WGANGP(10.0),
    within float32's tolerance and 1e-12 in float64 (the script run again)."""
    out = tmp_path / "port.json"
    ganstep("audit", SCRIPT, "--verify", 3, "--json", out, "--", "--one_as_scalar",
            cache=tmp_path, cwd=tmp_path)  # fmt: skip
    port = json.loads(out.read_text())["port"]
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12, port["notes"]
    assert "objective=WGANGP(10.0)" in port["code"]
    assert "schedule=d_first(d_steps=5, reuse_fake=False)" in port["code"]
    assert "netG, netD, optimizerG, optimizerD" in port["code"]
    assert "(5 real batches: one per D step)" in port["code"]


def test_the_report_of_a_loop_that_crashes_so_later_explains_it(tmp_path):
    """The same gradient of shape (1,) in G's step alone: D's five steps are reported,
    the crash in G's backward too, with what it means."""
    source = SCRIPT.read_text()
    script = tmp_path / "g_crashes.py"
    script.write_text(
        source.replace("    G.backward(mone)", "    G.backward(torch.FloatTensor([-1]))")
    )
    proc = ganstep("audit", script, "--iterations", 1, "--", "--one_as_scalar", cache=tmp_path,
                   cwd=tmp_path, check=False)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    crashed = proc.stdout.split("  the loop crashed at ", 1)[1].splitlines()
    assert crashed[0].endswith("G.backward(torch.FloatTensor([-1])): RuntimeError: Mismatch in "
                               "shape: grad_output[0] has a shape of torch.Size([1]) and "
                               "output[0] has a shape of torch.Size([]).")  # fmt: skip
    assert crashed[1].startswith("  (the crash: backward() was given a gradient of shape (1,) "
                                 "for a 0-dim loss: since PyTorch 0.4")  # fmt: skip
