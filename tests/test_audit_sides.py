"""`ganstep audit` on CycleGAN's loops: two generators in one optimizer and two
discriminators (in one optimizer, or an optimizer each) read as G's side and D's, each
module's calls a pass of its own, one side's steps in a row one step of that side, and
the CycleStep that computes the update order named, by the script's names, in the
CycleStep's argument order (its D_A judges its G_A's outputs)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest
import torch
from helpers import ganstep, seeded_ganstep

SCRIPTS = Path(__file__).parent / "audit_scripts"


def audited(tmp_path: Path, script: Path, *args) -> tuple:
    """The audit's output and its JSON report (each run its own file)."""
    out = tmp_path / f"report{len(list(tmp_path.glob('report*.json')))}.json"
    proc = ganstep("audit", script, "--json", out, *args, cache=tmp_path, cwd=tmp_path,
                   check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


def written(tmp_path: Path, source: str) -> Path:
    script = tmp_path / "cycle.py"
    script.write_text(source)
    return script


def test_pytorch_gan_cyclegan_is_read_as_two_sides(tmp_path):
    """PyTorch-GAN's cyclegan.py as written: one Adam over G_AB and G_BA, an Adam per D,
    D_A's step then D_B's, each D on its buffer of past fakes. Six G calls (two identity,
    two fakes, two reconstructions), six D calls (two in G's loss, two per D step); D's
    weight gradients of G's loss taken and never stepped, as the script leaves both Ds
    trainable in G's step."""
    proc, r = audited(tmp_path, SCRIPTS / "pytorch_gan_cyclegan.py")
    assert r["order"] == "simultaneous" and r["iterations"] == 2
    assert r["forwards"] == {"G": 6, "D": 6} and r["backwards"] == {"G": 6, "D": 6}
    # in the order the script first calls them: G_BA's identity forward comes first
    assert r["sides"] == {"G": ["G_BA", "G_AB"], "D": ["D_B", "D_A"]}
    assert r["schedule"] == (
        'CycleStep(G_AB, G_BA, D_B, D_A, opt_g, opt_d, discriminator_order=("D_B", "D_A"), '
        'g_order=("idt_B", "idt_A", "fake_B", "fake_A", "rec_A", "rec_B"))'
    )  # its identity maps first (the order counts for a G with state or draws)
    (hazard,) = r["hazards"]
    assert hazard.startswith("D's weight gradients were computed in G's step and never stepped")
    assert 0 < r["wasted_flops"] < r["total_flops"]
    assert r["regularization"] == {"G": 0, "D": 0}  # (D's steps on pooled fakes: its own)
    assert (
        "sides: G is G_AB and G_BA (one optimizer), D is D_B (judging G_AB's outputs) and "
        "D_A (an optimizer each: one over both is CycleStep's opt_d"
    ) in proc.stdout


def test_junyanz_cyclegan_with_its_ds_frozen_wastes_nothing(tmp_path):
    """pytorch-CycleGAN-and-pix2pix's CycleGANModel: both Ds switched off in G's step,
    one Adam over both Ds, D_A's loss first; without the identity terms G runs four
    times."""
    proc, r = audited(tmp_path, SCRIPTS / "junyanz_cyclegan.py")
    assert r["order"] == "simultaneous" and r["hazards"] == [] and r["wasted_flops"] == 0
    assert r["forwards"] == {"G": 6, "D": 6}
    assert r["sides"] == {"G": ["self.netG_A", "self.netG_B"], "D": ["self.netD_A", "self.netD_B"]}
    call = "CycleStep(self.netG_A, self.netG_B, self.netD_A, self.netD_B, opt_g, opt_d)"
    assert r["schedule"] == call
    assert "(one optimizer): CycleGAN's two sides" in proc.stdout
    _, r = audited(tmp_path, SCRIPTS / "junyanz_cyclegan.py", "--", "--lambda_identity", 0)
    assert r["forwards"] == {"G": 4, "D": 6} and r["schedule"] == call


LOOP_HEAD = """
import itertools

import torch
from torch import nn

torch.manual_seed(0)
G_AB, G_BA = nn.Linear(2, 2), nn.Linear(2, 2)
D_A, D_B = nn.Linear(2, 1), nn.Linear(2, 1)
optimizer_G = torch.optim.Adam(itertools.chain(G_AB.parameters(), G_BA.parameters()), 1e-3)
mse = nn.MSELoss()
"""

CHAINED_PAIRS = (
    LOOP_HEAD
    + """
optimizer_D = torch.optim.Adam(itertools.chain(D_A.parameters(), D_B.parameters()), 1e-3)
for i in range(20):
    real_A, real_B = torch.randn(8, 2), torch.randn(8, 2)
    fake_B, fake_A = G_AB(real_A), G_BA(real_B)
    optimizer_G.zero_grad()
    cycle = (G_BA(fake_B) - real_A).abs().mean() + (G_AB(fake_A) - real_B).abs().mean()
    loss_G = mse(D_B(fake_B), torch.ones(8, 1)) + mse(D_A(fake_A), torch.ones(8, 1)) + 10 * cycle
    loss_G.backward()
    optimizer_G.step()
    optimizer_D.zero_grad()
    loss_D = (mse(D_A(real_A), torch.ones(8, 1)) + mse(D_A(fake_A.detach()), torch.zeros(8, 1))
              + mse(D_B(real_B), torch.ones(8, 1)) + mse(D_B(fake_B.detach()), torch.zeros(8, 1)))
    loss_D.backward()
    optimizer_D.step()
"""
)


def test_chained_pairs_without_a_pool_recompute_ds_forwards_on_the_fakes(tmp_path):
    """A CycleGAN loop written in a few lines (once refused: "the audit reads one G and
    one D"): no pool, so each D's forward on the detached fakes in D's step repeats its
    forward in G's step at the same parameters; D_A (judging G_BA's fakes) steps first."""
    proc, r = audited(tmp_path, written(tmp_path, CHAINED_PAIRS))
    assert r["order"] == "simultaneous"
    assert r["forwards"] == {"G": 4, "D": 6}
    assert r["schedule"] == (
        'CycleStep(G_AB, G_BA, D_B, D_A, opt_g, opt_d, discriminator_order=("D_B", "D_A"), '
        'g_order=("fake_B", "fake_A", "rec_A", "rec_B"))'
    )  # both fakes, then both reconstructions: DiscoGAN's order
    assert len(r["hazards"]) == 2
    assert r["hazards"][1].startswith("D was forwarded again on the same input at the same")


def test_a_d_first_cycle_with_g_every_other_iteration(tmp_path):
    """DualGAN's order: each D on fakes of the iteration's G, then G on every second
    iteration with its forwards anew: CycleStep(order="d_first", g_every=2)."""
    source = (
        LOOP_HEAD
        + """
optimizer_D_A = torch.optim.Adam(D_A.parameters(), 1e-3)
optimizer_D_B = torch.optim.Adam(D_B.parameters(), 1e-3)
for i in range(20):
    real_A, real_B = torch.randn(8, 2), torch.randn(8, 2)
    fake_A, fake_B = G_BA(real_B), G_AB(real_A)
    optimizer_D_A.zero_grad()
    (D_A(fake_A.detach()).mean() - D_A(real_A).mean()).backward()
    optimizer_D_A.step()
    optimizer_D_B.zero_grad()
    (D_B(fake_B.detach()).mean() - D_B(real_B).mean()).backward()
    optimizer_D_B.step()
    if i % 2 == 0:
        optimizer_G.zero_grad()
        fake_A, fake_B = G_BA(real_B), G_AB(real_A)
        cycle = (G_BA(fake_B) - real_A).abs().mean() + (G_AB(fake_A) - real_B).abs().mean()
        (-D_A(fake_A).mean() - D_B(fake_B).mean() + 10 * cycle).backward()
        optimizer_G.step()
"""
    )
    _, r = audited(tmp_path, written(tmp_path, source), "--iterations", 3)
    assert r["order"] == "d_first"
    assert r["schedule"] == ('CycleStep(G_AB, G_BA, D_B, D_A, opt_g, opt_d, order="d_first", '
                             'g_every=2, discriminator_order=("D_B", "D_A"), '
                             'g_order=("fake_A", "fake_B", "rec_A", "rec_B"))')  # fmt: skip


def test_a_cycle_whose_d_steps_on_fakes_of_the_stepped_g_is_named_unmatched(tmp_path):
    """G's step, then D's on fakes made anew by the stepped generators: g_first, which
    CycleStep does not run; the sides are still read, no schedule named."""
    source = CHAINED_PAIRS.replace(
        "    optimizer_D.zero_grad()\n",
        "    optimizer_D.zero_grad()\n    fake_B, fake_A = G_AB(real_A), G_BA(real_B)\n",
    )
    proc, r = audited(tmp_path, written(tmp_path, source))
    assert r["order"] == "g_first" and r["schedule"] is None
    assert r["sides"] == {"G": ["G_AB", "G_BA"], "D": ["D_B", "D_A"]}
    assert "ganstep: no CycleStep matches this update order." in proc.stdout


def test_two_optimizers_each_over_a_g_and_a_d_are_not_read_as_sides(tmp_path):
    """Each optimizer over a generator and a discriminator: no split into a side called
    on the other's outputs; the audit says it cannot tell G from D."""
    source = CHAINED_PAIRS.replace(
        "itertools.chain(G_AB.parameters(), G_BA.parameters())",
        "itertools.chain(G_AB.parameters(), D_B.parameters())",
    ).replace(
        "itertools.chain(D_A.parameters(), D_B.parameters())",
        "itertools.chain(D_A.parameters(), G_BA.parameters())",
    )
    proc = ganstep("audit", written(tmp_path, source), cache=tmp_path, cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert (
        "cycle.py was stopped by the audit after 4 optimizer step(s), each of one optimizer "
        "over several modules at once (D_A and G_BA; D_B and G_AB): two optimizers over two "
        "modules each, but not CycleGAN's two sides"
    ) in proc.stderr, proc.stderr


NATSU_INFOGAN = """
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
netG, discriminator = nn.Linear(3 + 4, 6), nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.1))
netD, netQ = nn.Sequential(nn.Linear(8, 1), nn.Sigmoid()), nn.Linear(8, 4)
optimD = torch.optim.Adam([{"params": discriminator.parameters()}, {"params": netD.parameters()}])
optimG = torch.optim.Adam([{"params": netG.parameters()}, {"params": netQ.parameters()}])
bce, ce = nn.BCELoss(), nn.CrossEntropyLoss()
for data in torch.randn(4, 5, 6):
    optimD.zero_grad()
    loss_real = bce(netD(discriminator(data)).view(-1), torch.ones(5))
    loss_real.backward()
    idx = np.random.randint(4, size=5)
    noise = torch.cat((torch.randn(5, 3), nn.functional.one_hot(torch.from_numpy(idx), 4)), 1)
    fake_data = netG(noise)
    loss_fake = bce(netD(discriminator(fake_data.detach())).view(-1), torch.zeros(5))
    loss_fake.backward()
    optimD.step()
    optimG.zero_grad()
    output = discriminator(fake_data)
    G_loss = bce(netD(output).view(-1), torch.ones(5)) + ce(netQ(output), torch.from_numpy(idx))
    G_loss.backward()
    optimG.step()
"""


ONE_D_Q_HEAD = """
import numpy as np
import torch
from torch import nn


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.1)), nn.Linear(8, 1)

    def forward(self, x):
        features = self.body(x)
        return torch.sigmoid(self.head(features)).view(-1), features


torch.manual_seed(0)
netG, netD, netQ = nn.Linear(3 + 4, 6), D(), nn.Linear(8, 4)
optimD = torch.optim.Adam(netD.parameters())
optimG = torch.optim.Adam([*netG.parameters(), *netQ.parameters()])
bce, ce = nn.BCELoss(), nn.CrossEntropyLoss()
for data in torch.randn(4, 5, 6):
    optimD.zero_grad()
    idx = np.random.randint(4, size=5)
    noise = torch.cat((torch.randn(5, 3), nn.functional.one_hot(torch.from_numpy(idx), 4)), 1)
    fake_data = netG(noise)
    loss_d = bce(netD(data)[0], torch.ones(5)) + bce(netD(fake_data.detach())[0], torch.zeros(5))
    loss_d.backward()
    optimD.step()
    optimG.zero_grad()
    probs, features = netD(fake_data)
    (bce(probs, torch.ones(5)) + ce(netQ(features), torch.from_numpy(idx))).backward()
    optimG.step()
"""


def test_a_q_head_in_gs_optimizer_is_named_with_the_step_that_takes_it(tmp_path):
    """Natsu6767/InfoGAN-PyTorch's sides: optimD over D's body and D head, optimG over G
    and the Q head on the body's features. The audit does not read such sides (it said
    it cannot tell G from D, and no more); it now names the head, G and the page whose
    Step trains them. So where D is one module and G's optimizer holds the head: the
    audit could not tell G from D, or, told, "ran no complete iteration", and no more."""
    proc = ganstep("audit", written(tmp_path, NATSU_INFOGAN), cache=tmp_path, cwd=tmp_path,
                   check=False)  # fmt: skip
    assert proc.returncode != 0
    hint = ("If netQ is a head on D's features trained with G (InfoGAN's Q head), a Step "
            "takes it in opt_g beside G (netG), with D one module that returns its features "
            "too: docs/loops.md#infogan-in-one-g-step")  # fmt: skip
    assert f"so the audit cannot tell G from D. {hint}" in proc.stderr, proc.stderr
    # D one module returning its features, netQ in G's optimizer: named however the
    # audit is told which modules are G and D
    for flags in ((), ("--G", "netG", "--D", "netD")):
        proc = ganstep("audit", written(tmp_path, ONE_D_Q_HEAD), *flags, cache=tmp_path,
                       cwd=tmp_path, check=False)  # fmt: skip
        assert proc.returncode != 0 and hint in proc.stderr, proc.stderr


def test_an_encoder_trained_with_g_in_one_optimizer_is_read_as_gs_side(tmp_path):
    """A VAE-GAN's one optimizer over its encoder and decoder: the two are G's side (D is
    called on the decoder's outputs, neither on D's), read in D's order; no Step trains
    such a side, and the report says so rather than naming one."""
    source = """
import itertools

import torch
from torch import nn

torch.manual_seed(0)
E, G, D = nn.Linear(4, 2), nn.Linear(2, 4), nn.Linear(4, 1)
opt_eg = torch.optim.Adam(itertools.chain(E.parameters(), G.parameters()), 1e-3)
opt_d = torch.optim.Adam(D.parameters(), 1e-3)
bce = nn.BCEWithLogitsLoss()
for i in range(20):
    x = torch.randn(8, 4)
    recon = G(E(x))
    opt_d.zero_grad()
    (bce(D(x), torch.ones(8, 1)) + bce(D(recon.detach()), torch.zeros(8, 1))).backward()
    opt_d.step()
    opt_eg.zero_grad()
    (bce(D(recon), torch.ones(8, 1)) + (recon - x).pow(2).mean()).backward()
    opt_eg.step()
"""
    proc, r = audited(tmp_path, written(tmp_path, source))
    assert r["order"] == "d_first" and r["schedule"] is None
    assert r["sides"] == {"G": ["E", "G"], "D": ["D"]}
    assert r["forwards"] == {"G": 2, "D": 3}
    assert "ganstep: no ganstep Step trains these sides" in proc.stdout
    assert "g_and_heads" not in r  # D judges the decoder's outputs, fed by E from data


def test_pytorch_gan_aae_names_the_step_that_trains_its_encoder_and_decoder(tmp_path):
    """PyTorch-GAN's aae.py: one Adam over its encoder and decoder (G's side), D judging
    the encoder's codes alone and the decoder called on them in G's loss alone. The
    audit had said no Step trains such sides; a Step does (G the encoder, the decoder in
    its optimizer and a G term: docs/loops.md#aae, equal to the script in
    tests/test_pytorch_gan_loops.py), and the report names it; --port says it does not
    write it. CycleGAN's side, each generator judged, is not read so."""
    proc, r = audited(tmp_path, SCRIPTS / "pytorch_gan_aae.py", "--iterations", 3, "--port")
    assert r["order"] == "simultaneous" and r["sides"] == {"G": ["encoder", "decoder"],
                                                           "D": ["discriminator"]}  # fmt: skip
    assert r["g_and_heads"] == {"judged": "encoder", "heads": ["decoder"],
                                "schedule": "simultaneous()"}  # fmt: skip
    advice = ("a Step trains these sides with G = encoder (the module whose outputs D judges) "
              "and schedule simultaneous(): decoder, called on encoder's outputs in G's loss "
              "alone, goes in G's terms (g_terms), G's optimizer holding its parameters as the "
              "script's does; docs/loops.md shows PyTorch-GAN's aae.py so (#aae: its "
              "encoder's inputs the Step's condition, D's real batch a prior sample) and "
              "pixelda.py (#pixelda: its source images and z the condition, its classifier "
              "in a G term)")  # fmt: skip
    assert f"  ganstep: {advice}.\n" in proc.stdout
    assert "no ganstep Step trains these sides" not in proc.stdout
    assert r["port"]["code"] is None
    assert r["port"]["notes"] == [
        "its G and D are sides of several modules: the port maps a G of one module, so write "
        f"the Step by hand: {advice}"
    ]
    _, cycle = audited(tmp_path, SCRIPTS / "pytorch_gan_cyclegan.py")
    assert cycle["sides"] and "g_and_heads" not in cycle


def test_pytorch_gan_pixelda_names_its_generator_and_its_classifier(tmp_path):
    """PyTorch-GAN's pixelda.py: optimizer_G over its generator and its task classifier,
    D judging the generator's images alone, the classifier called on them (and on the
    source images) in G's loss alone: the Step of docs/loops.md#pixelda, equal to the
    script in tests/test_pytorch_gan_loops.py. Its passes are the script's: G's three
    forwards (the generator, the classifier twice), D's three, D's weight gradients in
    G's step wasted."""
    proc, r = audited(tmp_path, SCRIPTS / "pytorch_gan_pixelda.py", "--iterations", 3, "--port")
    assert r["order"] == "simultaneous" and r["sides"] == {"G": ["generator", "classifier"],
                                                           "D": ["discriminator"]}  # fmt: skip
    assert r["g_and_heads"] == {"judged": "generator", "heads": ["classifier"],
                                "schedule": "simultaneous()"}  # fmt: skip
    assert r["forwards"] == {"G": 3, "D": 3}
    assert any("D's weight gradients were computed in G's step" in h for h in r["hazards"])
    assert ("a Step trains these sides with G = generator (the module whose outputs D "
            "judges) and schedule simultaneous(): classifier, called on generator's outputs "
            "in G's loss alone, goes in G's terms (g_terms)") in proc.stdout  # fmt: skip
    assert "#pixelda: its source images and z the condition" in proc.stdout
    assert r["port"]["code"] is None and "write the Step by hand" in r["port"]["notes"][0]


def ported(tmp_path: Path, script: str, *args) -> tuple:
    proc, r = audited(tmp_path, SCRIPTS / script, "--verify", 3, "--", *args)
    return proc, r["port"]


def run_printed(code: str, script: str, *args: str, size: int = 8) -> dict:
    """The printed code run among the script's own names (its models built, no training:
    ``args`` say so), then called once on a batch of each domain (``size`` square); its
    logs."""
    saved = sys.argv
    sys.argv = [script, *args]
    try:
        names = runpy.run_path(str(SCRIPTS / script), run_name="__main__")
    finally:
        sys.argv = saved
    if "model" in names:  # junyanz's: the update is CycleGANModel's, its names self.*
        names["self"] = names["model"]
    names["torch"] = torch
    exec(code, names)  # noqa: S102 - the port's printed code, as a user pastes it
    shape = (2, 1, size, size)
    return names["step"](torch.rand(shape) * 2 - 1, torch.rand(shape) * 2 - 1)


def test_junyanz_cyclegan_ports_to_its_cycle_step(tmp_path):
    """--verify 3: lsgan with G's loss as MSE (g_scale=2), cycle weight 10 read from G's
    first loss, identity half of it, the pool CycleGAN's (it did not draw in 3
    iterations, which a note says); equal to the script's run in float32, the printed
    code runnable among the script's names."""
    _, port = ported(tmp_path, "junyanz_cyclegan.py")
    assert port["max_difference"] <= 1e-5 and port["equal_in"] == "float32"
    assert port["code"].splitlines()[2] == (
        "step = CycleStep(self.netG_A, self.netG_B, self.netD_A, self.netD_B, "
        'self.optimizer_G, self.optimizer_D, objective="lsgan", g_scale=2.0, d_scale=1.0, '
        "cycle=10.0, identity=0.5, fake_pool=50)"
    )
    assert port["notes"] == [
        "the script's pool of past fakes did not draw in 3 iteration(s), so its size is not "
        "seen: CycleGAN's 50 printed"
    ]
    logs = run_printed(port["code"], "junyanz_cyclegan.py", "--n_epochs", "0")
    assert {"loss_g", "loss_d", "cycle_a", "idt_b"} <= set(logs)


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("junyanz_cyclegan.py", ("--lambda_identity", 0.3), "cycle=10.0, identity=0.3"),
        # its lambda_id is the identity L1s' weight (averaged): 2 / 2 over the cycle's 5
        ("pytorch_gan_cyclegan.py", ("--buffer_size", 2, "--lambda_id", 2),
         "cycle=5.0, identity=0.2"),
    ],
)  # fmt: skip
def test_the_identity_weight_is_read_from_gs_first_gradient(tmp_path, script, args, expected):
    """Not the codebases' default half of the cycle weight: G's first gradient is linear
    in the cycle and identity weights, and the script's Adam moment after its first step
    gives both (a half would part)."""
    _, port = ported(tmp_path, script, *args)
    assert port["max_difference"] <= 1e-5 and port["equal_in"] == "float32", port["notes"]
    assert expected in port["code"]


def test_a_smaller_pool_drawing_as_the_scripts_at_first_does_not_end_the_pool_search(tmp_path):
    """PyTorch-GAN's CycleGAN with a pool of 2, seeded 13: a pool of 1 draws as the script's
    through the first iteration, then parts at the second in G's states too (D's step
    moved G's next one). That is a pool of another size, not the objective: the search
    goes on to 2, equal in float32. (The search once stopped there, the objective taken
    for the fault; the port then fell back on its float64 run, and about one unseeded
    run in fifty of the test above failed.)"""
    out = tmp_path / "report.json"  # (seeded: the script's pool draws the same each run)
    seeded_ganstep(13, "audit", SCRIPTS / "pytorch_gan_cyclegan.py", "--json", out, "--verify",
                   3, "--", "--buffer_size", 2, "--lambda_id", 2, cache=tmp_path,
                   cwd=tmp_path)  # fmt: skip
    port = json.loads(out.read_text())["port"]
    assert port["equal_in"] == "float32" and port["max_difference"] <= 1e-5, port["notes"]
    assert "identity=0.2, fake_pool=2," in port["code"] and port["notes"] == []


def test_pytorch_gan_cyclegan_ports_with_its_pool_read_where_it_drew(tmp_path):
    """Its buffer of 2 draws in the first iteration: a pool of 50 parts in D's states
    alone, and the size that draws as the script's is found; its D optimizers become one
    over both, printed; its identity maps first (g_order)."""
    _, port = ported(tmp_path, "pytorch_gan_cyclegan.py", "--buffer_size", 2)
    assert port["max_difference"] <= 1e-5 and port["notes"] == []
    code = port["code"].splitlines()
    assert code[2] == (
        "opt_d = torch.optim.Adam([*D_B.parameters(), *D_A.parameters()], lr=0.0002, "
        "betas=(0.5, 0.999))  # one over both Ds"
    )
    assert code[3] == (
        'step = CycleStep(G_AB, G_BA, D_B, D_A, optimizer_G, opt_d, objective="lsgan", '
        "g_scale=1.0, d_scale=1.0, cycle=5.0, identity=0.5, fake_pool=2, "
        'discriminator_order=("D_B", "D_A"), g_order=("idt_B", "idt_A", "fake_B", "fake_A", '
        '"rec_A", "rec_B"))'
    )
    no_training = ("--epoch", "200", "--n_epochs", "200")  # (its epochs from 200 to 200)
    assert "loss_d_b" in run_printed(port["code"], "pytorch_gan_cyclegan.py", *no_training)


def test_cyclegan_with_bce_and_no_pool_ports_on_its_float64_run(tmp_path):
    """gan_mode vanilla (BCE: ns with D's loss halved), lambda 7, no pool: every candidate
    parts in the float32 run, the right one by Adam's steps on the rounding of biases
    before InstanceNorm (their gradient 0 in exact arithmetic); in the float64 run it is
    equal with those entries left out, which a note names with the script's own moves."""
    _, port = ported(tmp_path, "junyanz_cyclegan.py", "--gan_mode", "vanilla", "--lambda_A", 7,
                     "--lambda_B", 7, "--pool_size", 0)  # fmt: skip
    assert port["equal_in"] == "float64" and port["float64_difference"] <= 1e-12
    assert 1e-5 < port["max_difference"] < 1e-2
    assert (
        port["code"]
        .splitlines()[2]
        .endswith(
            'objective="ns", g_scale=1.0, d_scale=0.5, cycle=7.0, identity=0.5, fake_pool=None)'
        )
    )
    left_out = next(n for n in port["notes"] if n.startswith("not compared:"))
    assert "G_A.1.bias by" in left_out and "D_A.2.bias by" in left_out
    assert "G_A.0.weight" not in left_out


def test_cyclegan_with_gan_mode_wgangp_ports_to_the_wasserstein_losses(tmp_path):
    """gan_mode wgangp: GANLoss's -mean / mean of D's map and no penalty (CycleGAN never
    calls cal_gradient_penalty), D's loss halved. Hinge's G loss is the same, its D loss
    not: the one CycleStep equal is Wasserstein(), imported in the printed code, which
    runs among the script's names."""
    _, port = ported(tmp_path, "junyanz_cyclegan.py", "--gan_mode", "wgangp")
    assert port["max_difference"] <= 1e-5 and port["equal_in"] == "float32"
    code = port["code"].splitlines()
    assert code[1] == "from ganstep.engine.objectives import Wasserstein"
    options = "objective=Wasserstein(), g_scale=1.0, d_scale=0.5, cycle=10.0, identity=0.5"
    assert code[3].endswith(f"{options}, fake_pool=50)")
    logs = run_printed(port["code"], "junyanz_cyclegan.py", "--gan_mode", "wgangp",
                       "--n_epochs", "0")  # fmt: skip
    assert {"loss_g", "loss_d", "cycle_a"} <= set(logs)


def test_pytorch_gan_discogan_ports_with_its_pixelwise_term(tmp_path):
    """discogan.py: lsgan averaged (g_scale 1), its averaged cycle L1s (cycle 0.5) and
    pixelwise translation L1 (added with weight 1) read from G's first loss with the
    term tried, no identity maps, no pool, its Ds' order and G's forwards' (Dropout's
    masks). Its convs before InstanceNorm part the float32 run by float32's rounding:
    equal in the float64 run. The printed code defines the term and runs."""
    _, port = ported(tmp_path, "pytorch_gan_discogan.py")
    assert port["equal_in"] == "float64" and port["float64_difference"] <= 1e-12
    code = port["code"].splitlines()
    assert code[0] == "import torch.nn.functional as F"
    assert code[4].startswith("def pixelwise(v):")
    assert code[-2] == (
        'step = CycleStep(G_AB, G_BA, D_B, D_A, optimizer_G, opt_d, objective="lsgan", '
        "g_scale=1.0, d_scale=1.0, cycle=0.5, identity=0.0, fake_pool=None, "
        'discriminator_order=("D_B", "D_A"), g_order=("fake_B", "fake_A", "rec_A", "rec_B"), '
        'g_terms={"pixelwise": pixelwise})'
    )
    logs = run_printed(port["code"], "pytorch_gan_discogan.py", "--n_epochs", "0", size=16)
    assert {"loss_g", "pixelwise", "cycle_a", "loss_d_b"} <= set(logs)


def test_pytorch_gan_dualgan_ports_with_its_penalty_first_and_numpys_alpha(tmp_path):
    """dualgan.py with --n_critic 2: both Ds' step first, each WGAN-GP penalty before its
    D's loss forwards (its D's BatchNorm sees the interpolates first) with alpha from
    np.random.random in float32, G's step every 2nd iteration. The audit's iterations
    are G's periods (D, G, then D, D, G; its two D optimizers' steps one D step): each of
    the script's iterations is one CycleStep call, 5 verified over 3 periods, numpy's
    generator set as the script's was."""
    _, port = ported(tmp_path, "pytorch_gan_dualgan.py", "--n_critic", 2)
    assert port["max_difference"] == 0 and port["iterations"] == 5
    code = port["code"].splitlines()
    assert code[:3] == ["import numpy as np", "from ganstep.engine.cycle import CycleStep",
                        "from ganstep.engine.objectives import WGANGP"]  # fmt: skip
    assert code[5].endswith(
        "objective=WGANGP(weight=10.0, alpha=lambda shape: torch.from_numpy(np.random.random("
        'shape)).float(), penalty_at="before"), g_scale=1.0, d_scale=1.0, cycle=10.0, '
        'identity=0.0, fake_pool=None, order="d_first", g_every=2, discriminator_order=("D_B", '
        '"D_A"), g_order=("fake_A", "fake_B", "rec_A", "rec_B"))'
    )
    logs = run_printed(port["code"], "pytorch_gan_dualgan.py", "--n_epochs", "0", size=32)
    assert {"loss_d", "gp_a", "gp_b", "loss_g"} <= set(logs)


def test_chained_pairs_port_with_their_summed_losses_read(tmp_path):
    """The few-line CycleGAN: each D's MSE losses summed (twice ganstep's lsgan: d_scale
    2, read from its first D loss), G's MSEs (g_scale 2), ``10 * cycle`` with no identity
    maps and no pool, both fakes then both reconstructions."""
    _, r = audited(tmp_path, written(tmp_path, CHAINED_PAIRS), "--verify", 3)
    assert r["port"]["max_difference"] <= 1e-5
    assert r["port"]["code"].splitlines()[2] == (
        'step = CycleStep(G_AB, G_BA, D_B, D_A, optimizer_G, optimizer_D, objective="lsgan", '
        "g_scale=2.0, d_scale=2.0, cycle=10.0, identity=0.0, fake_pool=None, "
        'discriminator_order=("D_B", "D_A"), g_order=("fake_B", "fake_A", "rec_A", "rec_B"))'
    )
