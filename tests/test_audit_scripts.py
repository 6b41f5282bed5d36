"""`ganstep audit SCRIPT -- ARGS` on training scripts written the way public GAN
scripts are (tests/audit_scripts/: module-level argparse and loop, no main guard,
netG/netD or generator/discriminator), each audited unmodified with its own
arguments. The expected FLOPs are worked out by hand from the scripts' linear layers.

FlopCounterMode counts 2*n*a*b per n x a by a x b matrix product and nothing for
biases and activations, so with batch n, latent 8, hidden 32 and data 16:
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
import torch
from helpers import ganstep, seeded_ganstep
from test_audit import SCRIPT_HEAD

SCRIPTS = Path(__file__).parent / "audit_scripts"
# torch 2.5's dispatch modes (the FLOP count) cannot return BigGAN's Tensor subclass z_
subclass_counted = pytest.mark.skipif(torch.__version__ < "2.6", reason="needs torch >= 2.6")
N, NZ, NH, NX = 32, 8, 32, 16


def mm(a: int, b: int) -> int:
    """FLOPs of one n x a by a x b product."""
    return 2 * N * a * b


G_FORWARD = mm(NZ, NH) + mm(NH, NX)  # 49,152
G_WHOLE_BACKWARD = mm(NZ, NH) + mm(NH, NX) + mm(NH, NX)  # weights + layer 2's input: 81,920
D_FORWARD = mm(NX, NH) + mm(NH, 1)  # 34,816
D_WEIGHT_GRADS = mm(NX, NH) + mm(NH, 1)
D_BACKWARD_FROM_DATA = D_WEIGHT_GRADS + mm(NH, 1)  # no gradient for the data: 36,864
D_BACKWARD_TO_G = D_BACKWARD_FROM_DATA + mm(NX, NH)  # on to the fake batch: 69,632


def audited(tmp_path: Path, script: str, *script_args, iterations=2, status=0,
            cold=False) -> tuple:  # fmt: skip
    out = tmp_path / f"{script}.json"
    proc = ganstep("audit", SCRIPTS / f"{script}.py", "--iterations", iterations, "--json", out,
                   "--", *script_args, cache=tmp_path, cwd=tmp_path, check=False,
                   cold=cold)  # fmt: skip
    assert proc.returncode == status, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


def test_dcgan_example_unmodified(tmp_path):
    # cold: the audit in a new interpreter, as a user starts it (the others fork warm)
    proc, r = audited(tmp_path, "dcgan_example", "--batchSize", N, "--niter", 3,
                      "--outf", tmp_path, cold=True)  # fmt: skip
    # the script ran as itself: its argparse saw its own arguments, its prints and files
    assert "niter=3" in proc.stdout and "[0/3][1/10] Loss_D:" in proc.stdout
    assert "[0/3][2/10]" not in proc.stdout  # stopped at iteration 3's first step
    assert torch.load(tmp_path / "fake_samples_epoch_000.pt").shape == (N, NX)
    assert r["order"] == "d_first" and r["schedule"] == "d_first()" and r["pattern"] is None
    assert r["forwards"] == {"G": 1, "D": 3} and r["backwards"] == {"G": 1, "D": 3}
    # the sample forward on fixed noise (batch 0 only) is no training pass
    assert r["other_forwards"] == {"G": 0.5, "D": 0} and r["other_flops"] == G_FORWARD
    iteration = (G_FORWARD + G_WHOLE_BACKWARD + 3 * D_FORWARD + 2 * D_BACKWARD_FROM_DATA
                 + D_BACKWARD_TO_G)  # fmt: skip
    assert r["total_flops"] == 2 * iteration + G_FORWARD
    assert r["wasted_flops"] == 2 * D_WEIGHT_GRADS  # D's weight gradients in G's step
    (hazard,) = r["hazards"]
    assert hazard.startswith("D's weight gradients were computed in G's step and never stepped")
    assert r["error"] is None and r["iterations"] == 2


def test_pytorch_gan_g_first_unmodified(tmp_path):
    proc, r = audited(tmp_path, "pytorch_gan_dcgan", "--batch_size", N, "--sample_interval", 1)
    assert torch.load(tmp_path / "images_1.pt").shape == (25, NX)  # its own sample files
    # G steps first, D then trains on the fake G made before its step: both gradients
    # at the iteration's starting parameters
    assert r["order"] == "simultaneous" and r["schedule"] == "simultaneous()"
    assert r["forwards"] == {"G": 1, "D": 3} and r["backwards"] == {"G": 1, "D": 3}
    # D's weight gradients in G's step, and D(gen_imgs.detach()) recomputes D(gen_imgs)
    assert r["wasted_flops"] == 2 * (D_WEIGHT_GRADS + D_FORWARD)
    assert len(r["hazards"]) == 2
    assert "D was forwarded again on the same input at the same parameters" in r["hazards"][1]


def test_wgan_gp_n_critic_and_penalty_unmodified(tmp_path):
    proc, r = audited(tmp_path, "wgan_gp", "--batch_size", N, "--n_critic", 5)
    # G after batch 0, then after every 5th: iterations of 1 and 5 D steps, the Step's
    # g_every (one D step a call, G's every 5th call from the first)
    assert r["order"] == "d_first" and r["schedule"] == "d_first(g_every=5)"
    assert r["pattern"] == ("G's step after D's first, then after every 5th (an n_critic loop "
                            "from the first batch): D steps per iteration 1, 5")  # fmt: skip
    # per D step: G once, D on real, fake and interpolates; per G step: G and D again
    assert r["forwards"] == {"G": (6 + 2) / 2, "D": (6 * 3 + 2) / 2}
    # D's backward: real, fake, the penalty's autograd.grad; G's: each D step's, G's step
    assert r["backwards"] == {"G": 4, "D": 10}
    assert r["double_backwards"] == {"G": 0, "D": 3}  # d_loss through each penalty's grad
    # six whole backwards through G for D's loss (z needs no gradient), D's weight
    # gradients in the two G steps, and G(z) recomputed from the same z in each G step
    assert r["wasted_flops"] == 6 * G_WHOLE_BACKWARD + 2 * D_WEIGHT_GRADS + 2 * G_FORWARD
    assert r["hazards"][0].startswith("a whole backward through G ran in D's step")
    assert r["error"] is None


def test_softmax_gan_crash_keeps_what_ran_before(tmp_path):
    proc, r = audited(tmp_path, "softmax_gan", "--batch_size", N, status=3)
    assert r["error"].startswith("RuntimeError: one of the variables needed")
    assert r["location"].endswith("softmax_gan.py:58: g_loss.backward()")
    assert "the loop crashed at" in proc.stdout
    assert r["iterations"] == 1 and r["forwards"] == {"G": 1, "D": 2}
    inplace, leak = r["hazards"]
    assert "backward #0 ran with retain_graph=True" in inplace
    assert "then opt_d.step() changed those weights in place" in inplace
    assert leak.startswith("G's gradients still held those of backward #0 (D's loss")
    assert r["order"] == "simultaneous" and r["schedule"] == "simultaneous()"


def test_began_late_crash_keeps_the_waste(tmp_path):
    proc, r = audited(tmp_path, "began", "--batch_size", N, status=3)
    assert r["error"].startswith("IndexError: invalid index of a 0-dim tensor")
    assert r["location"].endswith("began.py:64: M = (d_loss_real + torch.abs(diff)).data[0]")
    assert r["order"] == "simultaneous" and r["iterations"] == 1
    d_forward = mm(NX, NH) + mm(NH, NX)  # D is an autoencoder
    # D's weight gradients in G's step, and D(gen_imgs.detach()) recomputed
    assert r["wasted_flops"] == 2 * d_forward
    assert [h.split(" (")[0] for h in r["hazards"]] == [
        "D's weight gradients were computed in G's step and never stepped",
        "D was forwarded again on the same input at the same parameters",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--G", "nothing_here"], "the script has no 'nothing_here'"),
        (["--G", "opt", "--D", "netD"], "--G opt is a Namespace, not a torch.nn.Module"),
    ],
)
def test_bad_names(tmp_path, args, message):
    proc = ganstep("audit", SCRIPTS / "dcgan_example.py", *args, "--", "--outf", tmp_path,
                   cache=tmp_path, cwd=tmp_path, check=False)  # fmt: skip
    assert proc.returncode == 1 and proc.stderr.startswith("ganstep: error: ")
    assert message in proc.stderr and proc.stderr.count("\n") == 1


def test_named_g_and_d_agree_with_the_found_ones(tmp_path):
    out = tmp_path / "r.json"
    ganstep("audit", SCRIPTS / "dcgan_example.py", "--G", "netG", "--D", "netD", "--json", out,
            "--", "--batchSize", N, "--outf", tmp_path, cache=tmp_path, cwd=tmp_path)  # fmt: skip
    assert json.loads(out.read_text())["wasted_flops"] == 2 * D_WEIGHT_GRADS


@pytest.mark.parametrize(
    "source, message",
    [
        ("x = (\n", "broken.py:1: not valid Python"),
        ("import sys\nsys.exit(2)\n",
         "broken.py:2: sys.exit(2): the script exited with status 2, before G and D were found"),
        ("import nowhere_to_be_found\n",
         "broken.py:1: import nowhere_to_be_found: ModuleNotFoundError: No module named"),
        # it ends without training: said so (naming G and D would not help)
        ("import torch\nG = torch.nn.Linear(2, 2)\nG(torch.ones(1, 2))\n",
         "broken.py ran to its end before any optimizer step: nothing to audit"),
        # it trains one module only: G and D cannot be told apart
        ("import torch\nG = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(G.parameters(), 0.1)\n"
         "for _ in range(3):\n    G(torch.ones(1, 2)).sum().backward()\n    opt.step()\n",
         "could not tell which modules are G and D"),
        # D stepped by an optimizer over G and D (no InfoGAN's info step: D has none of its own)
        ("import itertools, torch\nG, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)\n"
         "opt_g = torch.optim.SGD(G.parameters(), 0.1)\n"
         "opt = torch.optim.SGD(itertools.chain(G.parameters(), D.parameters()), 0.1)\n"
         "for _ in range(5):\n    fake = G(torch.ones(1, 2))\n    opt_g.zero_grad()\n"
         "    D(fake).sum().backward()\n    opt_g.step()\n    opt.zero_grad()\n"
         "    D(fake.detach()).sum().backward()\n    opt.step()\n",
         "D took no optimizer step of its own: one optimizer over G's and D's parameters "
         "together stepped 2 time(s) (broken.py:12: opt.step()) in its place"),
    ],
)  # fmt: skip
def test_scripts_that_cannot_be_audited(tmp_path, source, message):
    script = tmp_path / "broken.py"
    script.write_text(source)
    proc = ganstep("audit", script, cache=tmp_path, cwd=tmp_path, check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("ganstep: error: ")
    assert message in proc.stderr


@subclass_counted
def test_biggan_with_its_distribution_tensors_and_g_d_wrapper(tmp_path):
    """BigGAN-PyTorch's step as written: z_ and y_ are a tensor subclass (they broke the
    FLOP counter when it ran around the whole script), G and D are called inside one
    G_D module (its calls are G's and D's, not G.shared's beside them), and each D step
    runs D once on torch.cat([G_z, x]) with G under no_grad (those G forwards fed D's
    step: not logging)."""
    proc, r = audited(tmp_path, "biggan", "--batch_size", N, "--num_D_steps", 2)
    assert r["error"] is None and r["iterations"] == 2
    assert r["order"] == "d_first" and r["schedule"] == "d_first(d_steps=2)"
    assert r["d_concat"] is True and r["d_order"] == "fake_first"
    assert r["forwards"] == {"G": 3, "D": 3} and r["backwards"] == {"G": 1, "D": 3}
    assert r["other_forwards"] == {"G": 0, "D": 0}
    assert r["wasted_flops"] == 0 and r["hazards"] == []
    assert 'concat=True, d_order="fake_first"' in proc.stdout


@pytest.mark.parametrize("version", ["2.5.1", "2.13.0"])
def test_a_subclass_the_audit_cannot_count_is_said_to_be_the_audits(monkeypatch, version):
    """torch 2.5 raises in a dispatch mode handing back a Tensor subclass (BigGAN's z_
    through the FLOP count): the audit says it is its own limit, not the script's."""
    from torch.torch_version import TorchVersion

    from ganstep.tools.audit_script import _describe

    monkeypatch.setattr(torch, "__version__", TorchVersion(version))
    error = RuntimeError(
        "Creating a new Tensor subclass Distribution but the raw Tensor object is already "
        "associated to a python object of type Tensor"
    )
    said = _describe(error)
    assert said.startswith("RuntimeError: Creating a new Tensor subclass Distribution")
    assert ("not the script: torch 2.5.1 cannot pass a Tensor subclass through it; audit "
            "with torch >= 2.6" in said) is (version == "2.5.1")  # fmt: skip


def test_stylegan2_ada_with_modules_frozen_between_phases(tmp_path):
    """StyleGAN2-ADA's loop as written: G and D built with requires_grad_(False) (the
    audit's gradient hooks failed on them), phases Gboth, Dmain (fakes from a z of its
    own, then real) and a lazy Dreg every 4th iteration stepping Dmain's optimizer, over
    batch_gpu rounds. The Dreg steps are regularization, not part of the order."""
    proc, r = audited(tmp_path, "stylegan2_ada", "--batch", N, "--batch_gpu", N // 2,
                      iterations=4)  # fmt: skip
    assert r["error"] is None and r["iterations"] == 4
    assert r["order"] == "g_first" and r["schedule"] == "g_first()" and r["pattern"] is None
    assert r["regularization"] == {"G": 0, "D": 0.25}
    assert r["d_order"] == "fake_first" and r["d_concat"] is False
    assert r["forwards"]["G"] == 4  # two rounds in Gboth, two in Dmain
    assert r["double_backwards"]["D"] == 2 / 4  # R1's gradient, in Dreg's two rounds
    assert r["wasted_flops"] == 0 and r["hazards"] == []
    assert "regularization steps of their own" in proc.stdout


SPLIT_G = """
import torch
import torch.nn as nn

torch.manual_seed(0)  # (the port's difference from the script depends on the draws)

class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.mapping = nn.Sequential(MAPPING, nn.ReLU())
        self.synthesis = nn.Linear(32, 16)

    def forward(self, z):
        return self.synthesis(self.mapping(z))


G = Generator()
D = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
data = torch.rand(320, 16)
ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
for i in range(10):
    real = data[32 * i : 32 * (i + 1)]
    z = torch.randn(32, 8)
    opt_d.zero_grad()
    d_loss = bce(D(real), ones) + bce(D(D_FAKE), zeros)
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(G.synthesis(G.mapping(z))), ones)
    g_loss.backward()
    opt_g.step()
    SAMPLE
"""


def split_g(wasteful: bool) -> str:
    """SPLIT_G as a loop that recomputes G and backpropagates D's loss through it, or
    as one with BatchNorm in G's mapping that detaches the fakes for D's step and
    reuses them, then samples in training mode (moving the BatchNorm's statistics)."""
    if wasteful:
        return (SPLIT_G.replace("MAPPING", "nn.Linear(8, 32)").replace("SAMPLE", "")
                .replace("D_FAKE", "G.synthesis(G.mapping(z))"))  # fmt: skip
    # (no bias before the BatchNorm: its gradient is 0 but for rounding, which Adam scales up)
    mapping = "nn.Linear(8, 32, bias=False), nn.BatchNorm1d(32)"
    sample = "with torch.no_grad():\n        sample = G.synthesis(G.mapping(torch.randn(4, 8)))"
    made = "    fake = G.synthesis(G.mapping(z))\n    opt_d.zero_grad()"
    return (SPLIT_G.replace("MAPPING", mapping).replace("SAMPLE", sample)
            .replace("D_FAKE", "fake.detach()").replace("    opt_d.zero_grad()", made)
            .replace("D(G.synthesis(G.mapping(z)))", "D(fake)"))  # fmt: skip


@pytest.mark.parametrize("wasteful", [True, False])
def test_a_loop_calling_gs_parts_reads_as_one_calling_g(tmp_path, wasteful):
    """G's mapping and synthesis called by the loop itself (as StyleGAN2-ADA's loss calls
    them) are G's calls: the same passes, FLOPs, waste and hazards as the same loop
    calling G(z), and a port verified on G (the sample's parts called on its copies)."""
    parts = split_g(wasteful)
    whole_calls = re.sub(r"G\.synthesis\(G\.mapping\((.*?)\)\)", r"G(\1)", parts)
    assert "G.mapping(z)" in parts and "G.mapping" not in whole_calls
    reports = {}
    for name, source in (("parts", parts), ("whole", whole_calls)):
        script, out = tmp_path / f"{name}.py", tmp_path / f"{name}.json"
        script.write_text(source)
        ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
        reports[name] = json.loads(out.read_text())
    found = reports["parts"]
    for key in ("forwards", "backwards", "total_flops", "wasted_flops", "hazards", "order",
                "other_forwards", "other_flops"):  # fmt: skip
        assert found[key] == reports["whole"][key], key
    assert found["port"]["code"] and "schedule=d_first()" in found["port"]["code"]
    assert found["port"]["max_difference"] <= 1e-6
    if wasteful:  # the whole backward through G in D's step, both parts, once a call:
        # 2 * 32 * (8 * 32 for the mapping's weights + 32 * 16 for the synthesis's weights
        # and its input)
        assert found["forwards"] == {"G": 2, "D": 3}
        assert found["hazards"][0].startswith("a whole backward through G ran in D's step "
                                              "for gradients nobody stepped (2 time(s), "
                                              "8.192e-05 ")  # fmt: skip
    else:
        assert found["forwards"] == {"G": 1, "D": 3} and found["other_forwards"]["G"] > 0
        assert any("outside its update" in note for note in found["port"]["notes"])


def test_style_mixing_of_gs_parts_ports_to_a_printed_wrapper(tmp_path):
    """StyleGAN2-ADA's run_G with its style mixing (--style_mixing_prob 0.9, its configs'
    default but cifar's): a second z mapped and mixed into the first one's ws in place,
    at a cutoff drawn from torch's generator, before the synthesis. The port prints a
    StyleMixedG module making those draws in that order (the class it verified, run from
    that text), equal over 5 iterations in float32 and in float64."""
    out = tmp_path / "mixing.json"
    ganstep("audit", SCRIPTS / "stylegan2_ada.py", "--port", "--verify", 5, "--json", out,
            "--", "--batch", 8, "--batch_gpu", 4, "--style_mixing_prob", 0.9, cache=tmp_path,
            cwd=tmp_path)  # fmt: skip
    port = json.loads(out.read_text())["port"]
    assert "class StyleMixedG(torch.nn.Module):" in port["code"]
    assert "ws[:, cutoff:] = self.G.mapping(torch.randn_like(z), *c)[:, cutoff:]" in port["code"]
    assert "StyleMixedG(G, 0.9), D, phases[0]['opt'], opt," in port["code"]
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12
    assert not any("failed beside the script's names" in note for note in port["notes"])


def test_path_length_steps_of_g_port_to_a_g_regularizer(tmp_path):
    """StyleGAN2-ADA's G phases as its configs but cifar's run them: Gmain, then Greg
    every 4th iteration (path length on half of each batch_gpu round's z, at G.mapping's
    ws, its mean moved each round, its optimizer's lr and betas scaled by mb_ratio).
    The audit keeps g_first (Greg moved G's version, not the order); the port prints
    PathLength(4.0, 4) (weight 2 over 2 added rounds) at G's parts, equal over 5
    iterations in float32 and float64; over 3 (Dreg's every 2nd) it says Greg's interval
    does not show."""
    flags = ("--", "--batch", 8, "--batch_gpu", 4, "--G_reg_interval", 4, "--pl_weight", 2)
    out = tmp_path / "pl.json"
    ganstep("audit", SCRIPTS / "stylegan2_ada.py", "--port", "--verify", 5, "--json", out,
            *flags, cache=tmp_path, cwd=tmp_path)  # fmt: skip
    r = json.loads(out.read_text())
    assert r["schedule"] == "g_first()" and r["regularization_at"] == {"G": [0, 4], "D": [0, 4]}
    port = r["port"]
    assert "from ganstep.engine.regularizers import PathLength" in port["code"]
    assert ("g_regularizer=PathLength(4.0, 4, mapping=G.mapping, synthesis=G.synthesis),"
            in port["code"])  # fmt: skip
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12
    assert not any("failed beside the script's names" in note for note in port["notes"])
    # (D's Dreg every 2nd iteration: its interval shows over 3, G's Greg's does not)
    ganstep("audit", SCRIPTS / "stylegan2_ada.py", "--port", "--verify", 3, "--json", out,
            "--force", *flags, "--D_reg_interval", 2, cache=tmp_path,
            cwd=tmp_path)  # fmt: skip
    assert json.loads(out.read_text())["port"]["notes"] == [
        "G's steps of its own (path length) ran at iteration(s) [0]: its interval shows from "
        "two of them, the first at iteration 0; verify more iterations"]  # fmt: skip


def test_g_parts_mixed_three_ways_are_named_not_mapped(tmp_path):
    """Three mappings mixed into one ws before the synthesis: not StyleGAN2's two, said."""
    mixed = ("ws = G.mapping(z)\n    ws[:, 16:] = G.mapping(torch.randn_like(z))[:, 16:]\n"
             "    ws[:, 24:] = G.mapping(torch.randn_like(z))[:, 24:]\n"
             "    fake = G.synthesis(ws)")  # fmt: skip
    source = split_g(False).replace("fake = G.synthesis(G.mapping(z))", mixed)
    script, out = tmp_path / "three.py", tmp_path / "three.json"  # (a Linear last: its ws
    script.write_text(source.replace("nn.ReLU())", "nn.ReLU(), nn.Linear(32, 32))"))  # mixed)
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    assert json.loads(out.read_text())["port"]["notes"] == [
        "the script calls G's parts itself, and not as one chain per call of G (3 calls on "
        "data before a part takes their output; StyleGAN2's style mixing mixes two): not "
        "mapped"]  # fmt: skip


# --- audit --port / --verify: the Step that equals the script, verified -----------------


def ported(tmp_path: Path, script: str, *script_args, flag=("--port",)) -> tuple:
    """The audit of ``script`` with ``flag`` (3 iterations unless it says), its output and
    its JSON's port."""
    out = tmp_path / f"{script}.json"
    proc = ganstep("audit", SCRIPTS / f"{script}.py", "--iterations", 3, "--json", out, *flag,
                   "--", *script_args, cache=tmp_path, cwd=tmp_path, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())["port"]


def test_port_prints_the_dcgan_examples_step_verified_and_runnable(tmp_path):
    """The DCGAN example: BCELoss on a Sigmoid D, D first, G on the same fakes. The
    printed Step equals the script's update over the audited iterations (parameters,
    Adam states), and the code runs when pasted beside the script's names."""
    proc, port = ported(tmp_path, "dcgan_example", "--batchSize", N, "--niter", 3,
                        "--outf", tmp_path, flag=("--verify", 3))  # fmt: skip
    assert "this Step equals the script's update over 3 iteration(s)" in proc.stdout
    assert port["max_difference"] <= 1e-6 and port["iterations"] == 3
    assert port["float64_difference"] <= 1e-12  # its run again with float64 as the default
    code = port["code"]
    assert "objective=NS(probabilities=True)" in code and "schedule=d_first()" in code
    assert "netG, netD, optimizerG, optimizerD" in code and "d_scale" not in code
    torch.manual_seed(0)
    netG = torch.nn.Linear(NZ, NX)
    netD = torch.nn.Sequential(torch.nn.Linear(NX, 1), torch.nn.Sigmoid())
    names = {"torch": torch, "netG": netG, "netD": netD,
             "optimizerG": torch.optim.Adam(netG.parameters()),
             "optimizerD": torch.optim.Adam(netD.parameters())}  # fmt: skip
    exec(code, names)  # noqa: S102 - the code the port printed
    logs = names["step"](torch.rand(4, NX))
    assert {"loss_d", "loss_g"} <= set(logs)


def test_the_dcgan_example_with_a_dropout_d_ports_to_real_g_fake(tmp_path):
    """The example's lines with Dropout in netD (as tutorials add it): D's real forward
    draws its masks before the noise and G's call. Every candidate parted ("no Step
    found"); the printed Step makes its fakes after D's real forward, 0 apart, and its
    float64 repeat too."""
    source = (SCRIPTS / "dcgan_example.py").read_text()
    out_layer = "nn.Linear(nh, 1)"
    dropped = source.replace(f"True), {out_layer}", f"True), nn.Dropout(0.3), {out_layer}")
    assert dropped != source
    script, out = tmp_path / "dcgan_dropout.py", tmp_path / "dcgan_dropout.json"
    script.write_text(dropped)
    proc = ganstep("audit", script, "--iterations", 3, "--json", out, "--verify", 3, "--",
                   "--batchSize", N, "--niter", 3, "--outf", tmp_path, cache=tmp_path,
                   cwd=tmp_path)  # fmt: skip
    assert "this Step equals the script's update over 3 iteration(s)" in proc.stdout
    port = json.loads(out.read_text())["port"]
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12
    assert "schedule=d_first()" in port["code"]
    assert 'd_order="real_g_fake",' in port["code"]


PORTED = {  # script: what its verified Step must say
    # PyTorch-GAN's G-first loop: its (real + fake) / 2 is d_scale=0.5 (Adam's moments
    # tell the scale apart)
    "pytorch_gan_dcgan": ("objective=NS(probabilities=True)", "schedule=simultaneous()",
                          "d_scale=0.5"),
    # MSE against 1 and 0 on a D without Sigmoid: least squares, G's twice ganstep's
    "pytorch_gan_lsgan": ("objective=LSGAN()", "schedule=simultaneous()", "g_scale=2.0"),
    # numpy's z and labels into G(z, labels), D(img, labels) with Dropout: the replayed
    # generator states give D the script's masks
    "pytorch_gan_cgan": ("objective=LSGAN()", "condition=lambda n: torch.randint(0, 4, (n,))",
                         "step((real_batch, its_labels))"),
    # a D step per batch with torch.rand's interpolation weights, G every 5th batch on
    # the same z: the penalty draws what the script drew
    "wgan_gp": ("objective=WGANGP(10.0)",
                "schedule=d_first(g_every=5, reuse_fake=False, reuse_z=True)",
                "once per real batch"),
    # RMSprop, D's weights clamped after each of its steps
    "pytorch_gan_wgan": ("objective=WGAN(clip=0.01)", "d_first(g_every=5, reuse_fake=False"),
    # the WGAN authors' main.py: its D returns its batch mean and is trained to score
    # real samples low, clamped at the top of each D step (G's step reads it unclamped);
    # every G iteration takes the epoch's 6 batches (fewer than its 100 Diters)
    # Self-Attention-GAN's trainer: D's optimizer stepped on its losses, then again on the
    # gradient penalty alone; G and D return attention maps beside their outputs
    "sagan": ('objective=WGANGP(10.0, penalty_at="own_step")',
              "schedule=d_first(reuse_fake=False)", "self.G, self.D, self.g_optimizer"),
    "martinarjovsky_wgan": ('objective=WGAN(clip=0.01, sign=-1, clamp_at="before")',
                            "schedule=d_first(d_steps=6, reuse_fake=False)",
                            "(6 real batches: one per D step)"),
    # BigGAN: G(z, G.shared(y)) through G_D, D once on cat([G_z, x]) with cat([gy, dy]),
    # 2 D steps on a fresh z each, then G on a fresh z; optimizers as G.optim, D.optim
    "biggan": ("class GOfLabels(torch.nn.Module)", "return self.G(z, self.G.shared(y))",
               "GOfLabels(G), D, G.optim, D.optim", "objective=Hinge()",
               "schedule=d_first(d_steps=2, reuse_fake=False)",
               "condition=lambda n: torch.randint(0, 4, (n,))", "concat=True",
               'd_order="fake_first"', "(2 real batches: one per D step)"),
    # StyleGAN2-ADA: phases Gboth, Dmain (fakes first) and Dreg every 4th iteration on
    # Dmain's optimizer, each over 2 batch_gpu rounds whose means it adds, z for all
    # phases drawn at once, labels with no columns
    "stylegan2_ada": ("objective=NS(r1=2.0, r1_every=4)", "schedule=g_first()",
                      "condition=lambda n: torch.zeros(n, 0)", 'd_order="fake_first"',
                      "accumulate=2,", "d_scale=2.0", "g_scale=2.0",
                      "G, D, phases[0]['opt'], opt",
                      "G.requires_grad_(True)\nD.requires_grad_(True)"),
    # G(source) with Dropout, D(target, source), MSE and 100 x L1 to the target
    "pytorch_gan_pix2pix": ("objective=LSGAN()", 'latent=None', 'condition="real"',
                            'g_terms={"l1": (100.0, ', "g_scale=2.0",
                            "step((target_batch, source_batch))"),
    # an autoencoder D returning (reconstruction, embedding): EBGAN's hinge at the margin,
    # the fakes detached as G's target, the pulling-away term; D's BatchNorm1d statistics
    # moved at each of its three forwards an iteration
    "pytorch_gan_ebgan": ("objective=EBGAN(1, detach_target=True)", "schedule=simultaneous()",
                          'g_terms={"pt": (0.1, views.pull_away())}', 'd_forwards="loop"',
                          "from ganstep.engine import views\n"),
}  # fmt: skip


# --verify runs the script again with torch's default dtype float64: these scripts
# make everything with torch's default, or name their float32 torch.FloatTensor
# (PyTorch-GAN's, the WGAN authors'), which that run makes the double one; BigGAN casts
# its z to float32 itself
IN_FLOAT64 = {
    "sagan",
    "pytorch_gan_dcgan",
    "pytorch_gan_lsgan",
    "wgan_gp",
    "pytorch_gan_pix2pix",
    "stylegan2_ada",
    "pytorch_gan_cgan",
    "pytorch_gan_wgan",
    "martinarjovsky_wgan",
    "pytorch_gan_ebgan",
}


def biggan_names() -> dict:
    """Stand-ins for biggan.py's G and D (an Embedding ``shared`` in G, optimizers held
    as ``optim``), for its printed code to run beside."""

    class G(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.shared, self.out = torch.nn.Embedding(4, 4), torch.nn.Linear(8 + 4, NX)
            self.optim = torch.optim.Adam(self.parameters())

        def forward(self, z, y):
            return self.out(torch.cat([z, y], 1))

    class D(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear, self.embed = torch.nn.Linear(NX, 1), torch.nn.Embedding(4, 1)
            self.optim = torch.optim.Adam(self.parameters())

        def forward(self, x, y):
            return self.linear(x) + self.embed(y)

    return {"torch": torch, "G": G(), "D": D()}


RUN_BESIDE = {"biggan": (biggan_names, [(torch.rand(4, NX), torch.randint(4, (4,)))] * 2)}


# StyleGAN2-ADA's Dreg runs at iterations 0 and 4: its interval shows from the fifth
VERIFY = {"stylegan2_ada": 5}
# the largest float32 difference each script's Step may show (1e-6 unless named): SAGAN's
# penalty step sums D's gradients in another order than its script, and Adam with beta1 =
# 0 carries float32's last bits into its moments (2.3e-6 on its seeded data, 1e-6 to 4e-6
# on others; the port's own tolerance is 1e-5); in float64 it is within 1e-12 (IN_FLOAT64)
FLOAT32_GAP = {"sagan": 1e-5}
# the scripts keeping a copy of G that follows it (an EMA), which the Step leaves alone
KEEPS_A_COPY_OF_G = {"stylegan2_ada": "G_ema"}


@pytest.mark.parametrize("script", [pytest.param(s, marks=subclass_counted) if s == "biggan"
                                    else s for s in PORTED])  # fmt: skip
def test_verify_3_finds_each_scripts_step_equal(tmp_path, script):
    n = VERIFY.get(script, 3)
    proc, port = ported(tmp_path, script, flag=("--verify", n))
    assert port["max_difference"] is not None, port["notes"]  # no Step printed: why
    assert port["max_difference"] <= FLOAT32_GAP.get(script, 1e-6), port["notes"]
    assert port["iterations"] == n
    for fragment in PORTED[script]:
        assert fragment in port["code"], port["code"]
    # the loop's forwards only for ebgan.py's D, whose BatchNorm1d statistics move at each
    # of the three D forwards of its simultaneous update (pytorch_gan_dcgan's D has none)
    assert ('d_forwards="loop"' in port["code"]) == (script == "pytorch_gan_ebgan")
    # the port ran its printed code among the script's globals: it would have said so
    assert not any("failed beside the script's names" in note for note in port["notes"])
    copies = [note for note in port["notes"] if "of G's architecture" in note]
    assert copies == (
        [
            f"the script keeps {KEEPS_A_COPY_OF_G[script]} beside G, of G's architecture and not "
            "G's parameters (an EMA of G?): the Step does not update it; keep the script's "
            "lines that do after each call of step(...)"
        ]
        if script in KEEPS_A_COPY_OF_G
        else []
    )
    if script in RUN_BESIDE:  # the printed code (a wrapper class too) runs as pasted
        make, batch = RUN_BESIDE[script]
        names = make()
        exec(port["code"], names)  # noqa: S102 - the code the port printed
        assert {"loss_d", "loss_g"} <= set(names["step"](batch))
    float64 = port["notes"][-1]
    assert float64.startswith("float64 (the script run again, torch's default dtype float64")
    if script in IN_FLOAT64:
        assert port["float64_difference"] <= 1e-12, float64
        assert "equal too, largest difference" in float64
    else:  # said why, never passed off as equal
        assert port["float64_difference"] is None
        assert ": not repeated, " in float64 or ": not equal to 1e-12: " in float64, float64


def test_sagans_hinge_loop_ports_with_one_d_step(tmp_path):
    """Self-Attention-GAN's trainer with --adv_loss hinge: no penalty step, its D once an
    iteration, 0 apart in float32 and float64."""
    proc, port = ported(tmp_path, "sagan", "--adv_loss", "hinge", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    assert "objective=Hinge()" in port["code"] and "penalty_at" not in port["code"]
    assert "schedule=d_first(reuse_fake=False)" in port["code"]


def test_sagans_own_biases_port_on_its_float64_run(tmp_path):
    """sagan.py with sagan_models.py's own biases (G's transposed convolutions before
    BatchNorm, the attention's g_ before its row softmax): their gradients are float32's
    rounding alone, which Adam makes steps of, so every Step parts from the script's
    float32 run. --verify searches its float64 run too, where the penalty's step of its
    own equals to 1e-12, and says where float32 parted and how far the script itself moved
    that bias in each run; --port alone finds none and says what --verify would do."""
    proc, port = ported(tmp_path, "sagan", "--own_biases", flag=("--verify", 3))
    assert port["equal_in"] == "float64", port["notes"]
    assert port["max_difference"] > 1e-5 and port["float64_difference"] <= 1e-12
    assert 'objective=WGANGP(10.0, penalty_at="own_step")' in port["code"]
    assert "schedule=d_first(reuse_fake=False)" in port["code"]
    assert "this Step equals the script's update run in float64 over 3" in proc.stdout
    said = port["notes"][-1]
    assert said.startswith("float64 (the script run again, torch's default dtype float64): "
                           "this Step equals it, largest difference")  # fmt: skip
    moved = re.search(r"moved self\.G\.(\S+) by (\S+) in float32 and by (\S+) in float64", said)
    assert moved is not None, said
    assert moved[1].endswith(".bias") and float(moved[3]) < 1e-9 < float(moved[2])
    assert "its gradient is float32's rounding alone" in said
    (tmp_path / "port").mkdir()
    proc, port = ported(tmp_path / "port", "sagan", "--own_biases", flag=("--port",))
    assert port["code"] is None and port["equal_in"] == "float32"
    assert port["notes"][-1].startswith("--verify N (in place of --port) runs the search again")


def test_a_varying_number_of_d_steps_ports_to_each_batch(tmp_path):
    """main.py over an epoch of 130 batches: 100 D steps, then the epoch's last 30,
    then 100 again. No count of D steps equals that; d_steps="each_batch", called with
    each iteration's batches, does."""
    proc, port = ported(tmp_path, "martinarjovsky_wgan", "--n_batches", 130, "--batchSize", 2,
                        flag=("--verify", 3))  # fmt: skip
    assert "pattern: irregular: D steps per iteration 100, 30, 100" in proc.stdout
    assert port["max_difference"] == 0, port["notes"]
    assert 'schedule=d_first(d_steps="each_batch", reuse_fake=False)' in port["code"]
    assert ("step([real_batch, ...])  (the iteration's real batches, one D step each: 30 or "
            "100 in the iterations audited)") in port["code"]  # fmt: skip


def test_port_says_when_its_printed_code_fails_beside_the_scripts_names(tmp_path):
    """A script that imports torch as ``th``: the printed Step (its ``torch.randn``) is
    still the verified one, and the port says that as printed it fails there."""
    source = (SCRIPTS / "pytorch_gan_lsgan.py").read_text().replace("torch", "th")
    script = tmp_path / "th_lsgan.py"
    script.write_text(source.replace("import th\n", "import torch as th\n"))
    out = tmp_path / "report.json"
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    port = json.loads(out.read_text())["port"]
    assert "objective=LSGAN()" in port["code"] and port["max_difference"] <= 1e-6
    assert port["notes"] == ["the code below was verified as a Step, but as printed it failed "
                             "beside the script's names (NameError: name 'torch' is not "
                             "defined): please report it"]  # fmt: skip


def test_port_of_lazy_r1_says_when_its_interval_does_not_show_yet(tmp_path):
    """Over 3 iterations StyleGAN2-ADA's Dreg ran once (iteration 0): R1 every 3, 4 or
    16 steps would all equal it, so none is printed."""
    proc, port = ported(tmp_path, "stylegan2_ada")
    assert port["code"] is None
    assert port["notes"] == ["D's steps of its own (lazy R1) ran at iteration(s) [0]: its "
                             "interval shows from two of them, the first at iteration 0; "
                             "verify more iterations"]  # fmt: skip


def test_port_names_what_it_cannot_map_instead_of_guessing(tmp_path):
    """StyleGAN2-ADA's loop with an optimizer of its own for the Dreg phase (two Adams
    over D's parameters, each with its moments): no Step has that, and it is said."""
    source = (SCRIPTS / "stylegan2_ada.py").read_text()
    shared = 'dict(name=name + "reg", module=module, opt=opt, interval=reg_interval)'
    own = shared.replace("opt=opt,", "opt=torch.optim.Adam(module.parameters()),")
    assert shared in source
    script = tmp_path / "two_d_optimizers.py"
    script.write_text(source.replace(shared, own))
    out = tmp_path / "report.json"
    proc = ganstep("audit", script, "--iterations", 3, "--port", "--json", out,
                   cache=tmp_path, cwd=tmp_path)  # fmt: skip
    port = json.loads(out.read_text())["port"]
    assert port["code"] is None
    assert port["notes"] == ["D's parameters are in 2 optimizers: the port maps one each"]
    assert "no Step found that equals this script's update" in proc.stdout


@pytest.mark.parametrize("args, message", [
    (("--verify", "0"), "--verify must be at least 1 iteration, got 0"),
    (("--port", "--function", "step"), "--port replays a script's own run"),
])  # fmt: skip
def test_port_flags_are_checked(tmp_path, args, message):
    proc = ganstep("audit", SCRIPTS / "dcgan_example.py", *args, cache=tmp_path, cwd=tmp_path,
                   check=False)  # fmt: skip
    assert proc.returncode != 0 and message in proc.stderr


def test_port_says_where_each_candidate_parts_from_a_loss_it_does_not_know(tmp_path):
    """SmoothL1Loss is no objective ganstep has: no Step is printed, and each candidate
    says at which iteration and in which tensor it parted from the script; --verify's
    search on the script's float64 run finds none either."""
    source = (SCRIPTS / "pytorch_gan_lsgan.py").read_text()
    script = tmp_path / "smooth_l1_gan.py"
    script.write_text(source.replace("torch.nn.MSELoss()", "torch.nn.SmoothL1Loss()"))
    out = tmp_path / "report.json"
    proc = ganstep("audit", script, "--verify", 2, "--json", out, cache=tmp_path, cwd=tmp_path,
                   check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    port = json.loads(out.read_text())["port"]
    assert port["code"] is None and port["notes"][0] == (
        "no objective, scale and term tried equals the losses this script takes (D's at "
        "smooth_l1_gan.py:81: d_loss.backward(); G's at smooth_l1_gan.py:73: "
        "g_loss.backward()): not mapped")  # fmt: skip
    assert port["notes"][1] == "each schedule and objective tried:"
    assert all("they part at iteration 0, most in " in note for note in port["notes"][2:-1])
    assert port["notes"][-1] == ("float64 (the script run again, torch's default dtype "
                                 "float64): no Step tried equals that run either")  # fmt: skip
    assert port["equal_in"] == "float32"
    assert "no Step found that equals this script's update" in proc.stdout


@subclass_counted
def test_hinge_inside_its_margin_is_told_from_wasserstein_by_the_losses_taken(tmp_path):
    """While every score is inside the hinge's margin (|s| < 1), Hinge(), Hinge(g_hinge=True),
    RaHinge() and Wasserstein() give G and D the same gradients: the models cannot tell
    them apart (biggan.py's port said so about once in 40 runs of its random data). The
    losses the script backpropagated can: its hinge L_D is 2 above the Wasserstein one
    there, and G's hinge 1 above its -mean. Here D's output is scaled by 1e-3, so that
    every score stays inside."""
    source = (SCRIPTS / "biggan.py").read_text()
    line = "return self.linear(h) + torch.sum(self.embed(y) * h, 1, keepdim=True)"
    assert line in source
    script = tmp_path / "biggan_small_scores.py"
    script.write_text(source.replace(line, line.replace("return ", "return 1e-3 * (") + ")"))
    out = tmp_path / "port.json"
    ganstep("audit", script, "--iterations", 3, "--json", out, "--verify", 3, cache=tmp_path,
            cwd=tmp_path)  # fmt: skip
    port = json.loads(out.read_text())["port"]
    assert "objective=Hinge()" in port["code"] and port["max_difference"] <= 1e-6
    assert port["notes"][0] == (
        "4 candidates equal the script in its models; their loss values told them apart: "
        "this one's L_D and L_G are the values the script's backward passes took at each "
        "iteration")  # fmt: skip


def test_a_step_is_told_apart_by_its_losses_only_where_the_scripts_are_known():
    from ganstep.tools.port import _losses_taken

    script = [{"D": [3.0, 2.5], "G": [0.5]}, {"D": [2.0, 1.8], "G": [0.4]}]
    hinge = [[{"loss_d": 2.5, "loss_g": 0.5}], [{"loss_d": 1.8 + 1e-6, "loss_g": 0.4}]]
    wasserstein = [[{"loss_d": 0.5, "loss_g": 0.5}], [{"loss_d": -0.2, "loss_g": 0.4}]]
    assert _losses_taken(hinge, script) and not _losses_taken(wasserstein, script)
    # a value the script's backward passes did not show (a gradient given, a loss of
    # several numbers) tells nothing: no candidate is ruled out by it
    unknown = [{"D": [None, 2.5], "G": [0.5]}, {"D": [None], "G": []}]
    assert _losses_taken(wasserstein, unknown)
    assert not _losses_taken([[{"loss_d": 0.5, "loss_g": 0.7}], [{}]], unknown)  # G's known
    assert _losses_taken([[{}], [{}]], script)  # nothing logged: nothing to tell


def test_the_loss_a_backward_took_is_read_only_where_it_is_plain_numbers():
    from ganstep.tools.audit import _loss_value

    assert _loss_value([torch.tensor(2.0), torch.tensor(0.5)], {}) == 2.5  # summed roots
    assert _loss_value([torch.tensor(1.0)], {"gradient": torch.tensor(2.0)}) is None
    assert _loss_value([torch.ones(2)], {}) is None  # a loss of several numbers
    assert _loss_value([torch.tensor(3)], {}) is None  # not floating
    assert _loss_value([torch.empty((), device="meta")], {}) is None  # no value: no failure


def test_port_of_crashed_loops_verifies_only_whole_updates_and_says_so(tmp_path):
    """began.py crashes after both steps and k's update of its first batch: two BEGANs
    (gamma 0.5 and 0.75) equal that iteration in the models, and the script's global k
    tells them apart (gamma acts on k first). With gamma 0.6 neither's k is the script's:
    none printed. softmax_gan.py crashes before G steps: nothing of its own to verify
    against."""
    out = tmp_path / "began.json"
    proc = ganstep("audit", SCRIPTS / "began.py", "--port", "--verify", 3, "--json", out,
                   cache=tmp_path, cwd=tmp_path, check=False)  # fmt: skip
    port = json.loads(out.read_text())["port"]
    assert proc.returncode == 3 and port["iterations"] == 1
    assert "objective=BEGAN(gamma=0.75),  # D's output is shaped like its input" in port["code"]
    assert port["notes"][:2] == [
        "verified over the 1 iteration(s) before the script's loop crashed",
        "2 candidates equal the script in its models; their objective's state told them apart: "
        "this one's equals the script's global k at each iteration's end"]  # fmt: skip
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12
    assert not any("failed beside the script's names" in note for note in port["notes"])
    other = tmp_path / "began_06.py"
    other.write_text((SCRIPTS / "began.py").read_text().replace("gamma = 0.75", "gamma = 0.6"))
    out = tmp_path / "began_06.json"
    ganstep("audit", other, "--port", "--json", out, cache=tmp_path, cwd=tmp_path, check=False)
    port = json.loads(out.read_text())["port"]
    assert port["code"] is None and port["notes"][0] == (
        "2 Steps equal the script over 1 iteration(s), which cannot tell them apart (the "
        "script's loop crashed after them: fix it to verify more):")  # fmt: skip
    assert [n.split(", ")[1].split(" ")[0] for n in port["notes"][1:3]] == [
        "BEGAN(gamma=0.5)", "BEGAN(gamma=0.75)"]  # fmt: skip
    assert port["notes"][3].startswith("--verify N (in place of --port) runs the search again")
    out = tmp_path / "softmax.json"
    ganstep("audit", SCRIPTS / "softmax_gan.py", "--port", "--json", out, cache=tmp_path,
            cwd=tmp_path, check=False)  # fmt: skip
    assert json.loads(out.read_text())["port"]["notes"] == [
        "the script's loop crashed before G and D had both stepped: no update of its own to "
        "verify against"]  # fmt: skip


def test_dataloader_workers_of_an_audited_script_leave_no_tracebacks(tmp_path):
    """The DCGAN example with two DataLoader workers (pytorch/examples' default): the
    audit stops the script with its workers running; they end without a word."""
    source = (SCRIPTS / "dcgan_example.py").read_text()
    script = tmp_path / "dcgan_workers.py"
    script.write_text(source.replace("shuffle=True)", "shuffle=True, num_workers=2)"))
    assert "num_workers=2" in script.read_text()
    proc = ganstep("audit", script, "--port", "--", "--batchSize", N, "--niter", 3, "--outf",
                   tmp_path, cache=tmp_path, cwd=tmp_path, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "this Step equals the script's update over 2 iteration(s)" in proc.stdout


ACGAN_LIKE = """
import torch
import torch.nn as nn

G = nn.Sequential(nn.Linear(8, 16), nn.Tanh())


class D(nn.Module):  # ACGAN's D: (validity, class logits), no label in
    def __init__(self):
        super().__init__()
        self.body, self.adv, self.cls = nn.Linear(16, 8), nn.Linear(8, 1), nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return torch.sigmoid(self.adv(h)), self.cls(h)


D = D()
opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce, ce = nn.BCELoss(), nn.CrossEntropyLoss()
for _ in range(5):
    x, y = torch.rand(4, 16), torch.randint(3, (4,))
    opt_g.zero_grad()
    fake = G(torch.randn(4, 8))
    v, c = D(fake)
    (bce(v, torch.ones_like(v)) + ce(c, y)).backward()
    opt_g.step()
    opt_d.zero_grad()
    v_real, c_real = D(x)
    v_fake, _ = D(fake.detach())
    (bce(v_real, torch.ones_like(v_real)) + ce(c_real, y)
     + bce(v_fake, torch.zeros_like(v_fake))).backward()
    opt_d.step()
"""


def test_port_names_a_d_with_more_outputs_than_its_scores(tmp_path):
    """Class logits beside D's scores where G takes no labels: not ACGAN's, and SGAN's
    only on labels a DataLoader gave. Its first output is tried as its scores (the losses
    here read the others: none equals), and the first note says why the rest was left
    unread."""
    script = tmp_path / "acgan_like.py"
    script.write_text(ACGAN_LIKE)
    out = tmp_path / "report.json"
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    port = json.loads(out.read_text())["port"]
    assert port["code"] is None
    assert port["notes"][0] == (
        "D returns more than its scores (a tuple or list): the real batches' labels were not "
        "found beside them in a DataLoader's batches, so its class loss on them is not mapped "
        "(G takes none: SGAN's class output, the fakes a class of their own); its first "
        "output was tried as its scores")  # fmt: skip


SAGAN_LIKE = """
# heykeetae/Self-Attention-GAN's trainer.py step (hinge): G and D each return their
# output and two attention maps, which no loss reads
import torch
from torch import nn

torch.manual_seed(0)


class G(nn.Module):
    def __init__(self):
        super().__init__()
        self.net, self.attn = nn.Linear(8, 16), nn.Linear(16, 16)

    def forward(self, z):
        out = self.net(z)
        p1 = torch.softmax(self.attn(out), -1)
        return out * p1, p1, p1


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.last = nn.Linear(16, 16), nn.Linear(16, 1)

    def forward(self, x):
        h = torch.relu(self.body(x))
        p1 = torch.softmax(h, -1)
        return self.last(h * p1).squeeze(), p1, p1


G, D = G(), D()
g_optimizer = torch.optim.Adam(G.parameters(), 1e-4, [0.0, 0.9])
d_optimizer = torch.optim.Adam(D.parameters(), 4e-4, [0.0, 0.9])
for step in range(5):
    real_images = torch.rand(8, 16)
    d_out_real, dr1, dr2 = D(real_images)
    d_loss_real = torch.nn.ReLU()(1.0 - d_out_real).mean()
    z = torch.randn(real_images.size(0), 8)
    fake_images, gf1, gf2 = G(z)
    d_out_fake, df1, df2 = D(fake_images)
    d_loss_fake = torch.nn.ReLU()(1.0 + d_out_fake).mean()
    d_loss = d_loss_real + d_loss_fake
    d_optimizer.zero_grad()
    g_optimizer.zero_grad()
    d_loss.backward()
    d_optimizer.step()
    z = torch.randn(real_images.size(0), 8)
    fake_images, _, _ = G(z)
    g_out_fake, _, _ = D(fake_images)
    g_loss_fake = -g_out_fake.mean()
    d_optimizer.zero_grad()
    g_optimizer.zero_grad()
    g_loss_fake.backward()
    g_optimizer.step()
"""


def test_a_d_returning_attention_maps_beside_its_scores_ports(tmp_path):
    """SAGAN's G and D return (output, attention, attention): the port stopped at "D
    returns more than its scores". Its first output read as the scores, the maps unread,
    Hinge() equals the script."""
    port = port_of_source(tmp_path, "sagan_like", SAGAN_LIKE)
    assert_verified(port)
    assert "objective=Hinge()" in port["code"]
    assert "schedule=d_first(reuse_fake=False)" in port["code"]


def test_acgans_printed_step_runs_and_keeps_the_scripts_sample_calls(tmp_path):
    """PyTorch-GAN's acgan samples G in training mode at batch 0 (its BatchNorm's
    statistics move): the port makes that call on its copy too, says so, and its code
    runs beside the script's names."""
    proc, port = ported(tmp_path, "pytorch_gan_acgan", "--batch_size", N,
                        flag=("--verify", 3))  # fmt: skip
    assert port["max_difference"] <= 1e-6, port["notes"]
    # D(x) -> (Sigmoid validity, Softmax classes), G(z, labels) from numpy, BCE and
    # CE: the class terms at the script's weights, the real labels from its DataLoader
    for fragment in ("objective=NS(probabilities=True)", "d_conditional=False",
                     'g_terms={"aux": (0.5, ', 'd_terms={"aux_real": (0.25, ',
                     '"aux_fake": (0.25, ', "d_scale=0.25", "g_scale=0.5",
                     "step((real_batch, its_labels))"):  # fmt: skip
        assert fragment in port["code"], port["code"]
    note, float64 = port["notes"]
    assert note.startswith("the script's 1 call(s) of G or D outside its update")
    # its float64 repeat, with the script's torch.FloatTensor the double one (as written,
    # its labels' BCE failed there: "Found dtype Float but expected Double")
    assert float64.endswith("its torch.FloatTensor as torch.DoubleTensor): equal too, largest "
                            "difference 0 (<= 1e-12)")  # fmt: skip
    assert port["float64_difference"] == 0
    torch.manual_seed(0)

    class G(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.out = torch.nn.Embedding(4, 8), torch.nn.Linear(8, NX)

        def forward(self, z, labels):
            return self.out(self.emb(labels) * z)

    class D(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.adv, self.aux = torch.nn.Linear(NX, 1), torch.nn.Linear(NX, 4)

        def forward(self, x):
            return torch.sigmoid(self.adv(x)), self.aux(x)

    generator, discriminator = G(), D()
    names = {"torch": torch, "generator": generator, "discriminator": discriminator,
             "optimizer_G": torch.optim.Adam(generator.parameters()),
             "optimizer_D": torch.optim.Adam(discriminator.parameters())}  # fmt: skip
    exec(port["code"], names)  # noqa: S102 - the code the port printed
    logs = names["step"]((torch.rand(4, NX), torch.randint(4, (4,))))
    assert {"loss_d", "loss_g", "aux", "aux_real", "aux_fake"} <= set(logs)


AMP_LOOP = f"""{SCRIPT_HEAD}ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)

for i in range(4):
    real = torch.randn(32, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fake = G(torch.randn(32, 4))
        opt_d.zero_grad()
        loss_d = bce(D(real).float(), ones) + bce(D(fake.detach()).float(), zeros)
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = bce(D(fake).float(), ones)
        loss_g.backward()
        opt_g.step()
"""


FP32_LOOP_BF16_SAMPLE = f"""{SCRIPT_HEAD}ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
fixed = torch.randn(8, 4)

for i in range(4):
    real = torch.randn(32, 2)
    fake = G(torch.randn(32, 4))
    opt_d.zero_grad()
    loss_d = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), ones).backward()
    opt_g.step()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        sample = G(fixed)
"""


def test_a_script_stepping_inside_its_autocast_block(tmp_path):
    """A script whose iteration is one autocast block, optimizer steps inside: D's
    forward in G's step reads D's weights cast before D's step (named with its line);
    D's unstepped weight gradients are still counted (D re-run under autocast on G's
    bfloat16 fakes); and the port says it does not map autocast, where it is, instead
    of listing every candidate as parting."""
    script, out = tmp_path / "amp_gan.py", tmp_path / "amp.json"
    script.write_text(AMP_LOOP)
    proc = ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["order"] == "d_first" and report["wasted_flops"] > 0
    assert report["hazards"][1] == (
        "D was forwarded inside a torch.autocast block after D's optimizer step in that "
        "block (2 time(s), first in iteration 0 at amp_gan.py:22: loss_g = "
        "bce(D(fake).float(), ones)): autocast casts each weight once per block, so that "
        "forward ran at D's weights from before the step. End the block before each "
        "optimizer step (autocast the forwards and losses only), or give ganstep's Step "
        "precision='bf16'."
    )
    assert report["port"]["code"] is None and report["port"]["notes"] == [
        "G ran under torch.autocast to bfloat16 (amp_gan.py:16: fake = G(torch.randn(32, "
        "4))), in a block where a forward read weights cast before an optimizer step (the "
        "hazard above): no Step computes that update; end the block before each step and "
        "port again: not mapped"
    ]
    assert "not mapped" in proc.stdout


def amp_update(dtype: str, scaled: bool = False, d_autocast: bool = True) -> str:
    """An AMP loop as PyTorch's AMP recipe writes one: forwards and losses in an autocast
    block, each optimizer step after it; with ``scaled``, a GradScaler per optimizer;
    without ``d_autocast``, G alone in the block."""
    block = f'torch.autocast("cpu", dtype=torch.{dtype})'
    d_block = block if d_autocast else "contextlib.nullcontext()"

    def stepped(side: str) -> str:
        if not scaled:
            return f"    loss_{side}.backward()\n    opt_{side}.step()\n"
        return (f"    scaler_{side}.scale(loss_{side}).backward()\n"
                f"    scaler_{side}.step(opt_{side})\n    scaler_{side}.update()\n")  # fmt: skip

    return (
        f"import contextlib\n{SCRIPT_HEAD}"
        'scaler_d, scaler_g = torch.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")\n'
        "ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)\n\n"
        "for i in range(4):\n"
        "    real = torch.randn(32, 2)\n"
        f"    with {block}:\n"
        f"        fake = G(torch.randn(32, 4)){'' if d_autocast else '.float()'}\n"
        f"    with {d_block}:\n"
        "        loss_d = bce(D(real), ones) + bce(D(fake.detach()), zeros)\n"
        "    opt_d.zero_grad()\n"
        f"{stepped('d')}"
        f"    with {d_block}:\n"
        "        loss_g = bce(D(fake), ones)\n"
        "    opt_g.zero_grad()\n"
        f"{stepped('g')}"
    )


@pytest.mark.parametrize(("dtype", "scaled", "precision"),
                         [("bfloat16", False, "bf16"), ("float16", True, "fp16")])  # fmt: skip
def test_an_amp_loop_ports_to_a_step_of_its_precision(tmp_path, dtype, scaled, precision):
    """The AMP recipe's loop (autocast around the forwards and losses, the steps after
    it; fp16 with a GradScaler per optimizer) is the Step with that precision: its own
    autocast makes the same casts, 0 apart in float32; in float64, where autocast
    changes nothing, 1e-12 apart too. The printed code says where the autocast was."""
    script, out = tmp_path / "amp_update.py", tmp_path / "amp.json"
    script.write_text(amp_update(dtype, scaled))
    ganstep("audit", script, "--verify", 3, "--json", out, cache=tmp_path, cwd=tmp_path)
    port = json.loads(out.read_text())["port"]
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12
    assert (
        f'precision="{precision}",  # G and D ran under torch.autocast to {dtype}, as the '
        "script's (amp_update.py:18: fake = G(torch.randn(32, 4)))" in port["code"]
    )
    assert "schedule=d_first()" in port["code"] and "objective=NS()" in port["code"]
    scaling = [n for n in port["notes"] if "GradScaler of its own" in n]
    assert len(scaling) == (precision == "fp16")


SPLIT_AMP_LOOP = f"""{SCRIPT_HEAD}ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
bf16 = dict(device_type="cpu", dtype=torch.bfloat16)

for i in range(4):
    real = torch.randn(32, 2)
    opt_d.zero_grad()
    with torch.autocast(**bf16):
        loss_real = bce(D(real), ones)
    loss_real.backward()
    with torch.autocast(**bf16):
        fake = G(torch.randn(32, 4))
        loss_fake = bce(D(fake.detach()), zeros)
    loss_fake.backward()
    opt_d.step()
    opt_g.zero_grad()
    with torch.autocast(**bf16):
        loss_g = bce(D(fake), ones)
    loss_g.backward()
    opt_g.step()
"""


@pytest.mark.parametrize("flag", ["--port", "--verify"])
def test_an_amp_loop_casting_d_per_forward_is_told_apart_by_its_rounding(tmp_path, flag):
    """The DCGAN example's loop under autocast as it is often written: a block and a
    backward per D forward. Each cast's bfloat16 gradient comes back to float32 before
    the script sums them, where a Step's phase (one block, one backward) sums them in
    bfloat16: no Step equals its float32 run. --port says so and what --verify does;
    --verify finds the Step equal in float64 (where autocast changes nothing) and names
    bfloat16's rounding, not float32's, with the two forwards' lines."""
    script, out = tmp_path / "split_amp.py", tmp_path / "split.json"
    script.write_text(SPLIT_AMP_LOOP)
    args = ("--port", "--iterations", 3) if flag == "--port" else ("--verify", 3)
    text = ganstep("audit", script, *args, "--json", out, cache=tmp_path, cwd=tmp_path).stdout
    port = json.loads(out.read_text())["port"]
    said = (
        "D's step in iteration 0 took its gradient from 2 casts of D's weights to bfloat16 "
        "(split_amp.py:18: loss_real = bce(D(real), ones); split_amp.py:22: loss_fake = "
        "bce(D(fake.detach()), zeros): forwards in autocast blocks or backward calls of "
        "their own), each brought back to float32 before the script summed them"
    )
    assert sum(said in n for n in port["notes"]) == 1
    if flag == "--port":
        assert port["code"] is None
        assert any(n.startswith("--verify N") and "(and by bfloat16's" in n for n in port["notes"])
        return
    assert port["equal_in"] == "float64" and port["float64_difference"] <= 1e-12
    assert port["max_difference"] > 1e-5
    assert 'precision="bf16"' in port["code"] and "schedule=d_first()" in port["code"]
    assert "bfloat16's rounding under the script's autocast (see the notes)" in text


INSTANCE_NOISE_LOOP = f"""{SCRIPT_HEAD}ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)


def noisy(x, sigma=0.1):  # instance noise, on the real and the fake batches alike
    return x + sigma * torch.randn_like(x)


for i in range(4):
    real = torch.randn(32, 2)
    fake = G(torch.randn(32, 4))
    opt_d.zero_grad()
    loss_d = bce(D(noisy(real)), ones) + bce(D(noisy(fake.detach())), zeros)
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(noisy(fake)), ones).backward()
    opt_g.step()
"""


def test_diffaugment_readme_loop_ports_to_its_own_augmentation(tmp_path):
    """data-efficient-gans' README loop: every D call given DiffAugment(batch,
    policy=policy), the script's own function. The port named it "changed by the
    script's own calls: not mapped"; it now prints that call as the Step's augment=
    (run among the script's names), given the real batches before it: 0 apart over 3
    iterations, in float64 too."""
    proc, port = ported(tmp_path, "diffaugment_readme", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert "augment=lambda x: DiffAugment(x, policy=policy),  # the script's change" in code
    assert "schedule=d_first(reuse_fake=False)" in code and "objective=NS()" in code


def test_diffaugment_on_the_real_batch_before_g_ports_to_real_g_fake(tmp_path):
    """The README loop in the DCGAN example's order: D on the augmented real batch, then
    z and G, then D on the augmented fakes. The Step's augmentation of the real batch
    draws from the generator's state before the script's first draw in that call (then
    z's draw, then the fakes' augmentation), with d_order="real_g_fake": 0 apart."""
    source = (SCRIPTS / "diffaugment_readme.py").read_text()
    real_first = (
        "        z = torch.randn(reals.size(0), 8)\n        fakes = Generator(z)\n"
        "        real_scores = Discriminator(DiffAugment(reals, policy=policy))\n"
    )
    assert real_first in source
    real_g_fake = (
        "        real_scores = Discriminator(DiffAugment(reals, policy=policy))\n"
        "        z = torch.randn(reals.size(0), 8)\n        fakes = Generator(z)\n"
    )
    port = port_of_source(tmp_path, "dcgan_order", source.replace(real_first, real_g_fake),
                          "--verify", "3")  # fmt: skip
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    assert 'd_order="real_g_fake"' in port["code"]
    assert "augment=lambda x: DiffAugment(x, policy=policy)," in port["code"]


def test_junyanz_pix2pix_is_read_and_ported_to_a_paired_d(tmp_path):
    """pytorch-CycleGAN-and-pix2pix's pix2pix gives D the source and the image joined
    along the channels. The audit took that join for data (no fake batch in D's step):
    order "other", a lazy regularization step of D's that is not there, and no Step.
    A join past the batch's dimension is the fakes' (each sample with its source): the
    audit reads d_first with the fakes first, and the port prints a PairedD wrapper
    (made from that very text), condition="real", the L1 term and d_scale=0.5: the
    reference.pix2pix mapping, equal in float32 and float64."""
    out = tmp_path / "report.json"
    ganstep("audit", SCRIPTS / "junyanz_pix2pix.py", "--verify", 3, "--json", out,
            cache=tmp_path, cwd=tmp_path)  # fmt: skip
    report = json.loads(out.read_text())
    assert report["order"] == "d_first" and report["d_order"] == "fake_first"
    assert report["regularization"] == {"G": 0, "D": 0}
    assert report["forwards"] == {"G": 1, "D": 3}
    port = report["port"]
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert "self.netG, PairedD(self.netD), self.optimizer_G, self.optimizer_D," in code
    assert "        return self.D(torch.cat((c, x), 1))" in code
    for line in (
        "schedule=d_first(),",
        'condition="real",',
        "latent=None,",
        'g_terms={"l1": (100.0,',
        'd_order="fake_first",',
        "d_scale=0.5,",
    ):
        assert line in code, code


def test_lynnhos_wgan_gp_ports_to_its_interpolation(tmp_path):
    """LynnHo's penalty interpolates as real + alpha * (fake - real), the WGAN-GP
    authors' form: every WGANGP candidate parted ("no objective ... equals the
    losses"). WGANGP(interpolate="difference") is tried too, and equals, 0 apart in
    float32 and float64."""
    proc, port = ported(tmp_path, "lynnho_wgan_gp", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert 'objective=WGANGP(10.0, interpolate="difference"),' in code
    assert "schedule=d_first(reuse_fake=False)," in code
    assert "G, D, G_optimizer, D_optimizer," in code


def beside_pytorch_gans_names(code: str, G: torch.nn.Module, D: torch.nn.Module,
                              **more: object) -> dict:  # fmt: skip
    """The names a PyTorch-GAN script's printed Step runs among (its ``generator``,
    ``discriminator`` and their Adams, infogan.py's ``optimizer_info`` over both, and
    ``more``), stand-ins ``G`` and ``D``, after the code ran."""
    names = {"torch": torch, "generator": G, "discriminator": D,
             "optimizer_G": torch.optim.Adam(G.parameters()),
             "optimizer_D": torch.optim.Adam(D.parameters()),
             "optimizer_info": torch.optim.Adam([*G.parameters(), *D.parameters()]),
             **more}  # fmt: skip
    exec(code, names)  # noqa: S102 - the code the port printed
    return names


def test_pytorch_gans_wgan_gp_as_written_ports_with_numpys_alpha(tmp_path):
    """wgan_gp.py as its file is written draws z and the penalty's alpha from numpy's
    global generator (Tensor(np.random.random((n, 1, 1, 1)))): torch's alpha parted in
    every candidate ("no objective ... equals the losses"). numpy's generator drew
    between D's calls in D's step, so the candidates draw alpha from it too, with its
    state replayed at each of G's calls: 0 apart, the printed code importing numpy and
    running beside the script's names; wgan_gp.py with torch's draws is offered no such
    candidate."""
    proc, port = ported(tmp_path, "pytorch_gan_wgan_gp", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["iterations"] == 3, port["notes"]
    code = port["code"]
    assert code.startswith("import numpy as np\n")
    assert ("objective=WGANGP(10.0, alpha=lambda shape: torch.from_numpy(np.random.random("
            "shape)).float()),") in code  # fmt: skip
    assert "schedule=d_first(g_every=5, reuse_fake=False, reuse_z=True)," in code
    G, D = torch.nn.Linear(8, 64), torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 1))
    assert "gp" in beside_pytorch_gans_names(code, G, D)["step"](torch.rand(4, 64))
    _, torchs = ported(tmp_path, "wgan_gp", flag=("--verify", 3))
    assert "np.random" not in torchs["code"] and "WGANGP(10.0)," in torchs["code"]


def test_pytorch_gans_wgan_div_ports_to_its_penalty_read_from_the_loss_forwards(tmp_path):
    """wgan_div.py takes D's gradients at the real images (made to require grad) and at
    G's fakes of D's loss forwards (kept in G's graph), no points of its own: read as
    WGAN-div's penalty (it was read as R1 at the real batch, and nothing ported). The
    printed objective is a class of the user's own (ganstep has no WGAN-div), as
    docs/loops.md writes it; its Step equals the script's run to the bit, and the
    printed code runs beside the script's names."""
    proc, port = ported(tmp_path, "pytorch_gan_wgan_div", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["iterations"] == 3, port["notes"]
    code = port["code"]
    assert "from ganstep.engine.objectives import Wasserstein\n\n\nclass WGANDiv(" in code
    assert "    objective=WGANDiv(k=2, p=6),  # D's step took a double backward at the real" in code
    assert "schedule=d_first(g_every=5, reuse_fake=False, reuse_z=True)," in code
    G = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Unflatten(1, (1, 8, 8)))
    D = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 1))
    names = beside_pytorch_gans_names(code, G, D)
    before = [p.clone() for p in D.parameters()]
    logs = names["step"](torch.rand(4, 1, 8, 8))
    assert logs["gp"] > 0  # the printed class's penalty ran in D's step, which moved D
    assert any(not torch.equal(a, b) for a, b in zip(before, D.parameters(), strict=True))


INFO_CAT = ('"cat": (1.0, lambda v: torch.nn.functional.cross_entropy(v.d_fake[1], '
            "v.fake.z[1].argmax(1))),")  # fmt: skip
INFO_CON = '"con": (0.1, lambda v: torch.nn.functional.mse_loss(v.d_fake[2], v.fake.z[2])),'


def test_pytorch_gans_infogan_ports_with_its_info_step(tmp_path):
    """infogan.py steps a third Adam over G's and D's parameters on its information loss
    (was "G's parameters are in 2 optimizers"). The audit names that step and counts its
    passes; the port reads its terms' weights from the script's first info gradient
    (cross-entropy of D's label head to G's labels, 1; squared error of its code head
    to G's code, 0.1), replays the script's draws for it, and prints the info step's own
    draws (its code from normal(-1, 1), not G's step's uniform): 0 apart, in float64
    too, and the printed code runs beside the script's names."""
    proc, port = ported(tmp_path, "pytorch_gan_infogan", flag=("--verify", 3))
    r = json.loads((tmp_path / "pytorch_gan_infogan.json").read_text())
    assert r["order"] == "simultaneous" and r["info_steps"] == 1
    assert r["forwards"] == {"G": 2, "D": 4} and r["backwards"] == {"G": 2, "D": 4}
    assert "  info steps: 1 per iteration (pytorch_gan_infogan.py:" in proc.stdout
    (hazard,) = r["hazards"]  # its D has Dropout: no forward recomputed, no info step waste
    assert hazard.startswith("D's weight gradients were computed in G's step and never stepped")
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    code = port["code"]
    assert "objective=LSGAN()," in code and "schedule=simultaneous()," in code
    assert "g_scale=2.0," in code and 'd_forwards="loop",' in code
    assert "    info_optimizer=optimizer_info,  # the script's optimizer over G's and D's" in code
    assert f"        {INFO_CAT}\n        {INFO_CON}\n    }},\n" in code
    one_hot = "torch.nn.functional.one_hot(torch.randint(0, 4, (n,)), 4).to(torch.float32)"
    assert f"    latent=lambda n: (torch.randn(n, 8), {one_hot}, torch.rand(n, 2) * 2 - 1)," in code
    assert (f"    info_latent=lambda n: (torch.randn(n, 8), {one_hot}, torch.randn(n, 2) - 1),"
            "  # the info step's own draws") in code  # fmt: skip

    class G(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(8 + 4 + 2, 16)

        def forward(self, noise, labels, code):
            return self.net(torch.cat((noise, labels, code), -1))

    class D(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = torch.nn.ModuleList(torch.nn.Linear(16, k) for k in (1, 4, 2))

        def forward(self, img):
            return tuple(head(img) for head in self.heads)

    logs = beside_pytorch_gans_names(code, G(), D())["step"](torch.rand(4, 16))
    assert {"loss_info", "cat", "con"} <= set(logs)


@pytest.mark.parametrize("change", ["weight", "loss"])
def test_infogans_info_terms_are_read_not_assumed(tmp_path, change):
    """The info terms' weights come from the script's gradient (lambda_con 0.5 prints
    0.5); a continuous loss outside the terms tried (L1) is named, not ported."""
    source = (SCRIPTS / "pytorch_gan_infogan.py").read_text()
    if change == "weight":
        port = port_of_source(tmp_path, "infogan", source.replace("lambda_con = 0.1",
                                                                  "lambda_con = 0.5"))  # fmt: skip
        assert_verified(port)
        assert INFO_CON.replace("0.1", "0.5") in port["code"]
    else:
        l1 = source.replace("continuous_loss = torch.nn.MSELoss()",
                            "continuous_loss = torch.nn.L1Loss()")  # fmt: skip
        port = port_of_source(tmp_path, "infogan", l1)
        assert port["code"] is None
        (note,) = port["notes"]
        assert note.startswith("the info step's gradient is not a weighted sum of the terms "
                               "tried (lambda v: torch.nn.functional.cross_entropy(")  # fmt: skip


SR_CONTENT = ('"content": (1.0, lambda v: torch.nn.functional.l1_loss(feature_extractor('
              "v.fake.x), feature_extractor(v.real.x).detach())),")  # fmt: skip


def test_pytorch_gans_srgan_ports_with_its_content_loss_and_its_low_resolution_batches(
        tmp_path):  # fmt: skip
    """srgan.py: G given each dict batch's "lr" (copied into a tensor made once), D its
    "hr"; G's loss a content loss (L1 of a feature network no optimizer trains, on the
    fakes and on the real batch) plus 1e-3 MSE. G's input is read as data beside the
    real batch, not a draw (latent=None, the pairs given to the Step); the content term
    and the adversarial loss's scale from the script's first G gradient: LSGAN() with
    g_scale=0.002, as docs/loops.md's SRGAN Step; 0 apart in float32 and float64, and
    the printed code runs beside the script's names. Seeded: its data is random, and on
    some draws its feature network gives G no gradient (the next test)."""
    port = seeded_port(tmp_path, 0, SCRIPTS / "pytorch_gan_srgan.py", "--iterations", 3,
                       "--verify", 3)  # fmt: skip
    r = json.loads((tmp_path / "pytorch_gan_srgan.json").read_text())
    # its VGG's weights require grad and no optimizer holds them: their gradients, waste
    (features,) = [h for h in r["hazards"] if h.startswith("feature_extractor's weight")]
    assert ("computed in G's step and no optimizer steps them (3 time(s), " in features
            and "(feature_extractor.requires_grad_(False))" in features)  # fmt: skip
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    code = port["code"]
    assert "objective=LSGAN()," in code and "schedule=simultaneous()," in code
    assert ("    latent=None,  # G's one input is each DataLoader batch's [\"lr\"], beside the "
            'real batch at ["hr"]: no z\n    condition="real",') in code  # fmt: skip
    assert "d_conditional=False," in code and 'd_forwards="loop",' in code
    assert f"        {SR_CONTENT}  # feature_extractor's features" in code
    assert "    g_scale=0.002,  # the script scales G's loss by this" in code
    assert code.endswith('once per iteration: step((batch["hr"], batch["lr"]))')
    G = torch.nn.Sequential(torch.nn.Upsample(scale_factor=4), torch.nn.Conv2d(1, 1, 3, 1, 1))
    D = torch.nn.Conv2d(1, 1, 3, 2, 1)
    features = torch.nn.Conv2d(1, 2, 3, 1, 1)
    step = beside_pytorch_gans_names(code, G, D, feature_extractor=features)["step"]
    logs = step((torch.rand(2, 1, 16, 16), torch.rand(2, 1, 4, 4)))
    assert logs["content"] > 0


def test_a_g_term_that_gave_no_gradient_is_weighed_on_the_float64_run(tmp_path):
    """srgan.py on the data of seed 100: its feature network's ReLU is off on every fake
    of the audited iterations (G's fakes close to one value at its init), so its content
    loss gives G no gradient and no weight of it can be read: --port prints the Step
    without it, equal to that run, and says so; --verify weighs it on the float64 run
    (other draws, where it gives one), and prints the Step with it, equal in both."""
    script = SCRIPTS / "pytorch_gan_srgan.py"
    port = seeded_port(tmp_path, 100, script, "--iterations", 3, "--port")
    assert port["max_difference"] == 0 and "content" not in port["code"], port["notes"]
    assert ("the script's feature_extractor's content loss gave G no gradient in its first "
            "iteration (every entry 0") in port["notes"][-1]  # fmt: skip
    assert "--verify N weighs it on the script's float64 run" in port["notes"][-1]
    (tmp_path / "pytorch_gan_srgan.json").unlink()
    port = seeded_port(tmp_path, 100, script, "--iterations", 3, "--verify", 3)
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    assert f"        {SR_CONTENT}  # feature_extractor's features" in port["code"]
    assert "    g_scale=0.002,  # the script scales G's loss by this" in port["code"]
    assert ("    g_terms={  # weights as the script's float64 run's first G gradient "
            "says") in port["code"]  # fmt: skip
    (said,) = [n for n in port["notes"] if n.startswith("float64")]
    assert ("LSGAN() d_scale=1.0 g_scale=0.002 parts from it: the script's feature_extractor's "
            "content loss gave G no gradient in the script's own run (no weight read there), "
            "and this run's first G gradient weighs it (content=1.0); so weighed, the Step "
            "equals it (largest difference 0 <= 1e-12)") in said  # fmt: skip


def test_a_g_term_that_gives_a_gradient_only_later_is_named_and_weighed_on_the_float64_run(
        tmp_path):  # fmt: skip
    """srgan.py on the data of seed 100 over 16 iterations: its feature network's ReLU,
    off on every fake at first, wakes at iteration 15, so the Step without the content
    term (all that G's first gradient can say) parts there. --port had said no Step
    equals and not why; it now names the term it left out. --verify weighs the term on the
    float64 run, whose Step equals the script's own run too: printed as equal in both,
    its comment naming the run that weighed the term (it had printed it as equal in
    float64 alone, "float32's rounding" parting it by 0)."""
    script = SCRIPTS / "pytorch_gan_srgan.py"
    port = seeded_port(tmp_path, 100, script, "--iterations", 16, "--port")
    assert port["code"] is None
    assert ("the script's feature_extractor's content loss gave G no gradient in its first "
            "iteration (every entry 0: a ReLU off on every fake, say), so no weight of it can "
            "be read there and the Steps tried left it out: where it gives one in a later "
            "iteration, they part there") in port["notes"][1]  # fmt: skip
    assert any("LSGAN() d_scale=1.0 g_scale=0.002: they part at iteration 15" in n
               for n in port["notes"])  # fmt: skip
    (tmp_path / "pytorch_gan_srgan.json").unlink()
    port = seeded_port(tmp_path, 100, script, "--verify", 16)
    assert f"        {SR_CONTENT}  # feature_extractor's features" in port["code"]
    assert_equal_in_both(port, "    g_terms={  # weights as the script's float64 run's first G "
                         "gradient says", "the Steps tried there left out a G term that gave G "
                         "no gradient in the script's first iteration, and this run's first G "
                         "gradient weighs it")  # fmt: skip


def assert_equal_in_both(port: dict, printed: str, why: str) -> None:
    """``port`` found by --verify's float64 search and equal to the script's own run too,
    0 apart in both, ``printed`` in its code, its float64 note ending with ``why``."""
    assert port["equal_in"] == "float32", port["notes"]
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    assert printed in port["code"], port["code"]
    (said,) = [n for n in port["notes"] if n.startswith("float64")]
    assert said.endswith(
        "this Step equals it, largest difference 0 (<= 1e-12), and the script's own run too "
        f"(largest difference 0 <= 1e-05), which no Step tried there equalled: {why}"
    ), said


@pytest.mark.parametrize(("change", "shown"), [
    (("1e-3 * loss_GAN", "5e-3 * loss_GAN"), "    g_scale=0.01,"),
    (("criterion_content = torch.nn.L1Loss()", "criterion_content = torch.nn.MSELoss()"),
     '"content_mse": (1.0, lambda v: torch.nn.functional.mse_loss(feature_extractor('),
    (("feature_extractor = FeatureExtractor()",
      "feature_extractor = FeatureExtractor().requires_grad_(False)"), SR_CONTENT),
])  # fmt: skip
def test_srgans_adversarial_scale_and_content_loss_are_read_not_assumed(tmp_path, change,
                                                                        shown):  # fmt: skip
    """Its G loss's scale and its content loss are read from its gradient; its feature
    network frozen, the same Step, and no gradient of it wasted. Seeded: on some of its
    random data (1 seed in 24, the frozen network's) a bias whose gradient is rounding
    alone parts the Step from the script in float32, which --verify's float64 run
    decides; the test reads the port of one data draw."""
    source = (SCRIPTS / "pytorch_gan_srgan.py").read_text()
    assert change[0] in source
    script = tmp_path / "srgan.py"
    script.write_text(source.replace(*change))
    port = seeded_port(tmp_path, 0, script, "--port")
    assert_verified(port)
    assert shown in port["code"]
    hazards = json.loads((tmp_path / "srgan.json").read_text())["hazards"]
    assert any("feature_extractor" in h for h in hazards) != ("requires_grad_" in change[1])


def seeded_port(tmp_path: Path, seed: int, script: Path, *flag: object) -> dict:
    """The port of ``script`` (``flag``: the audit's flags, then ``--`` and the script's),
    every generator seeded ``seed`` first: its own draws (its data) the same each run."""
    out = tmp_path / f"{script.stem}.json"
    seeded_ganstep(seed, "audit", script, "--json", out, *flag, cache=tmp_path, cwd=tmp_path)
    return json.loads(out.read_text())["port"]


def test_pytorch_gans_esrgan_ports_past_its_warm_up_to_a_per_location_rasgan(tmp_path):
    """esrgan.py past its warm-up (--warmup_batches 0): G's loss the content loss, 5e-3
    times RaSGAN's two terms with each batch's mean at each location of D's map, and 1e-2
    times the pixel L1; D's real map read without a graph in G's step first. With its D's
    convolution before BatchNorm and its last one made bias-free (docs/loops.md#esrgan:
    their biases' gradients are float32's rounding alone), the Step is printed, equal in
    float32: RaSGAN(per_location=True), read at g_scale 0.005 with its terms from G's
    first gradient, g_forwards=("real", "fake"). (Seeded: on some random data its
    one-term G loss, RaSGAN(g_real_term=False, ...), equals it too over 2 iterations: see
    the next test.)"""
    port = seeded_port(tmp_path, 0, bias_free_esrgan(tmp_path), "--port", "--",
                       "--warmup_batches", 0)  # fmt: skip
    assert port["max_difference"] <= 1e-5, port["notes"]  # (the port's float32 tolerance)
    code = port["code"]
    assert "    objective=RaSGAN(per_location=True),  # relativistic losses" in code
    assert '"l1": (0.01, lambda v: torch.nn.functional.l1_loss(v.fake.x, v.real.x)),' in code
    assert f"        {SR_CONTENT}  # feature_extractor's features" in code
    assert "    g_scale=0.005,  # the script scales G's loss by this" in code
    assert ('    g_forwards=("real", "fake"),  # D forwarded in G\'s step as the script does\n'
            in code)  # fmt: skip
    assert code.endswith('once per iteration: step((batch["hr"], batch["lr"]))')


def bias_free_esrgan(tmp_path: Path) -> Path:
    """esrgan.py with its D's convolution before BatchNorm and its last one bias-free
    (their gradients are float32's rounding alone: docs/loops.md#esrgan)."""
    source = (SCRIPTS / "pytorch_gan_esrgan.py").read_text()
    for conv in ("nn.Conv2d(4, 4, 3, 2, 1)", "nn.Conv2d(4, 1, 3, 1, 1)"):
        assert source.count(f"{conv},") == 1
        source = source.replace(f"{conv},", f"{conv[:-1]}, bias=False),")
    (tmp_path / "esrgan.py").write_text(source)
    return tmp_path / "esrgan.py"


def test_two_steps_equal_in_float32_are_told_apart_by_the_float64_run(tmp_path):
    """On this data (seed 8) both of ESRGAN's G-loss forms equal the script over 2
    iterations in float32: RaSGAN's real term is a small part of G's gradient beside its
    content loss. --port says so and prints neither, naming --verify; --verify's float64
    run tells them apart (was: "2 Steps equal ... verify more iterations" there too), and
    the Step printed is the one equal there, to 1e-12."""
    script = bias_free_esrgan(tmp_path)
    port = seeded_port(tmp_path, 8, script, "--port", "--", "--warmup_batches", 0)
    assert port["code"] is None
    assert port["notes"][0].startswith("2 Steps equal the script over 2 iteration(s), which "
                                       "cannot tell them apart")  # fmt: skip
    assert port["notes"][-1].endswith("whose tolerance (1e-12) may tell them apart")
    (tmp_path / "esrgan.json").unlink()
    port = seeded_port(tmp_path, 8, script, "--verify", 2, "--", "--warmup_batches", 0)
    assert port["max_difference"] <= 1e-5 and port["float64_difference"] <= 1e-12
    assert "    objective=RaSGAN(per_location=True),  # relativistic losses" in port["code"]
    (said,) = [n for n in port["notes"] if n.startswith("float64")]
    assert "this Step equals it, largest difference" in said
    assert "and alone of the 2 Steps that equal the script's own run to 1e-05" in said
    assert "RaSGAN(g_real_term=False, per_location=True)" in said


def test_esrgans_d_as_written_equals_that_step_in_float64(tmp_path):
    """As written, its D's convolution before BatchNorm and its last one have biases,
    whose gradients are 0 in exact arithmetic (BatchNorm takes the mean out; the
    relativistic loss compares scores that all carry the last bias) and float32's
    rounding in the script, which Adam makes steps of (docs/loops.md#esrgan): the same
    Step, equal in the float64 repeat, the note naming the bias (seeded: on other data
    the float32 run parts there past what the float64 repeat can mend, and no Step is
    printed)."""
    port = seeded_port(tmp_path, 4, SCRIPTS / "pytorch_gan_esrgan.py", "--verify", 3, "--",
                       "--warmup_batches", 0)  # fmt: skip
    assert port["equal_in"] == "float64" and port["float64_difference"] <= 1e-12
    assert "objective=RaSGAN(per_location=True)," in port["code"]
    assert "    g_scale=0.005," in port["code"]
    assert "0 in exact arithmetic: a bias before BatchNorm" in port["notes"][0]


def test_esrgans_warm_up_is_named_as_one_not_read_as_a_lazy_regularizer(tmp_path):
    """Its first --warmup_batches steps are G's alone, on its pixel loss: the port said
    "G's steps of its own (path length) ran at iteration(s) [0] ... verify more
    iterations", which no number of iterations mends. It names the warm-up, by line."""
    _, port = ported(tmp_path, "pytorch_gan_esrgan", "--warmup_batches", 2)
    assert port["code"] is None
    assert port["notes"] == [
        "G stepped 2 time(s) on a loss through no D (pytorch_gan_esrgan.py:118: "
        "optimizer_G.step()) before any step on an adversarial loss: a warm-up (esrgan.py's "
        "--warmup_batches), which a Step does not run; run it as a loop of its own before "
        "the Step, and audit the script past it (its warm-up set to 0)"
    ]


SGAN_AUX_REAL = (
    'd_terms={"aux_real": (0.25, lambda v: torch.nn.functional.cross_entropy('
    'v.d_real[1], v.real.extra["label"])),'
)
SGAN_AUX_FAKE = (
    '"aux_fake": (0.25, lambda v: torch.nn.functional.cross_entropy(v.d_fake[1], '
    "v.d_fake[1].new_full((v.fake.n,), 4, dtype=torch.long)))},"
)


def test_pytorch_gans_sgan_ports_with_the_fakes_as_a_class_of_their_own(tmp_path):
    """sgan.py as written: an unconditional G(z) (with a label embedding it never calls),
    D(x) returning (validity, num_classes + 1 class probabilities), D's class loss on the
    real batch to its DataLoader labels and on the fakes to the extra class num_classes.
    Was "its class output is mapped where G alone takes the fakes' labels (ACGAN's)...
    no Step found". The port gives the labels to the Step as a dict batch's extra target
    and prints D's two terms: 0 apart, in float64 too, and the code runs beside the
    script's names."""
    proc, port = ported(tmp_path, "pytorch_gan_sgan", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    code = port["code"]
    for fragment in ("objective=NS(probabilities=True),", "schedule=simultaneous(),",
                     "    latent=lambda n: torch.randn(n, 8),", f"    {SGAN_AUX_REAL}\n",
                     f"             {SGAN_AUX_FAKE}", "    d_scale=0.25,",
                     'iteration: step({"x": real_batch, "label": its_labels})'):  # fmt: skip
        assert fragment in code, code
    assert "g_scale" not in code and "g_terms" not in code and "condition=" not in code

    class D(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.adv, self.aux = torch.nn.Linear(NX, 1), torch.nn.Linear(NX, 5)

        def forward(self, img):
            return torch.sigmoid(self.adv(img)), self.aux(img)

    step = beside_pytorch_gans_names(code, torch.nn.Linear(8, NX), D())["step"]
    logs = step({"x": torch.rand(4, NX), "label": torch.randint(4, (4,))})
    assert {"loss_d", "loss_g", "aux_real", "aux_fake"} <= set(logs)


@pytest.mark.parametrize("change", ["weight", "no_class_left"])
def test_sgans_class_terms_are_read_not_assumed(tmp_path, change):
    """D's class terms at the script's weight (its aux losses doubled: 0.5 printed, D's
    scale still 0.25); real labels that reach D's last class leave the fakes none of
    their own: named, no Step."""
    source = (SCRIPTS / "pytorch_gan_sgan.py").read_text()
    if change == "weight":
        doubled = source.replace("+ auxiliary_loss(real_aux, labels)",
                                 "+ 2 * auxiliary_loss(real_aux, labels)").replace(
                                 "+ auxiliary_loss(fake_aux, fake_aux_gt)",
                                 "+ 2 * auxiliary_loss(fake_aux, fake_aux_gt)")  # fmt: skip
        port = port_of_source(tmp_path, "sgan", doubled)
        assert_verified(port)
        assert SGAN_AUX_REAL.replace("0.25", "0.5") in port["code"]
        assert SGAN_AUX_FAKE.replace("0.25", "0.5") in port["code"]
        assert "    d_scale=0.25," in port["code"]
    else:
        every_class = source.replace("torch.randint(opt.num_classes, (",
                                     "torch.randint(opt.num_classes + 1, (")  # fmt: skip
        port = port_of_source(tmp_path, "sgan", every_class)
        assert port["code"] is None
        assert port["notes"][0] == (
            "D returns more than its scores (a tuple or list): its class output has 5 columns "
            "and the real labels reach 4, so no last class is left for the fakes (SGAN's): "
            "not mapped; its first output was tried as its scores")  # fmt: skip


def test_pytorch_gans_context_encoder_ports_with_its_weights_read(tmp_path):
    """context_encoder.py as written: its dataset masks a random square of each image with
    numpy in __getitem__ and gives (img, masked_img, masked_part); G inpaints the part
    from the masked image, a PatchGAN D judges parts, G's loss 0.001 * MSE + 0.999 * L1.
    The L1 was tried at 100, 10 and 1 only ("no objective, scale and term tried
    equals"); an image-to-image G's L1 is now weighted as the script's first G gradient
    says, its adversarial scale with it: 0 apart, in float64 too, the sample from its
    validation loader made on the copies, and the code runs beside the script's names."""
    proc, port = ported(tmp_path, "pytorch_gan_context_encoder", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    assert port["notes"][0].startswith("the script's 1 call(s) of G or D outside its update")
    code = port["code"]
    for fragment in ("objective=LSGAN(),", "schedule=simultaneous(),", "    latent=None,",
                     '    condition="real",', "    d_conditional=False,",
                     '    g_terms={"l1": (0.999, lambda v: torch.nn.functional.l1_loss(v.fake.x, '
                     "v.real.x))},  # G's L1 to the target, weighted as the script's ",
                     "    g_scale=0.002,",
                     "once per iteration: step((batch[2], batch[1]))"):  # fmt: skip
        assert fragment in code, code
    # its own run's first G gradient, or its float64 run's where float32's rounding read
    # the L1 otherwise (its data is new each run, the launcher seeding it from the OS: the
    # next test pins that draw)
    assert re.search(r"weighted as the script's (float64 run's )?first G gradient says", code)
    assert "d_scale" not in code  # 0.5 * (real + fake) of MSE: ganstep's LSGAN
    G = torch.nn.Conv2d(1, 1, 3, 2, 1)  # a 32-pixel image in, a 16-pixel part out
    step = beside_pytorch_gans_names(code, G, torch.nn.Conv2d(1, 1, 3, 2, 1))["step"]
    logs = step((torch.rand(4, 1, 16, 16), torch.rand(4, 1, 32, 32)))
    assert {"loss_d", "loss_g", "l1"} <= set(logs)


def test_weights_float32_reads_otherwise_are_read_on_the_float64_run_and_equal_both(tmp_path):
    """context_encoder.py on the data of seed 9 (one such draw failed CI): float32's
    rounding of G's first gradient reads the L1 at 1.0 beside g_scale 0.002, and every Step
    tried parts; --verify's float64 run reads 0.999, and that Step equals the script's own
    run too, 0 apart. It is printed as equal in both, its comment naming the run that
    weighed its terms (it had been printed as equal in float64 alone, "parts by 0")."""
    script = SCRIPTS / "pytorch_gan_context_encoder.py"
    port = seeded_port(tmp_path, 9, script, "--iterations", 3, "--verify", 3)
    assert_equal_in_both(port, '    g_terms={"l1": (0.999, lambda v: torch.nn.functional.l1_loss('
                         "v.fake.x, v.real.x))},  # G's L1 to the target, weighted as the "
                         "script's float64 run's first G gradient says", "there G's terms were "
                         "weighed from its own first G gradient, whose float32 rounding read "
                         "them otherwise, and this run's reads the weights printed")  # fmt: skip


def test_pytorch_gans_ccgan_ports_with_gs_inputs_as_the_script_names_them(tmp_path):
    """ccgan.py as written: G(masked_imgs, imgs_lr), the first made by the script's own
    apply_random_mask(imgs) (numpy's squares set to -1), the second from its DataLoader's
    dict beside D's real batch; D(x) alone. Every Step tried raised "this Step is
    conditional, so a real batch is a pair (x, c)": G's two inputs were read as a z and a
    condition. Neither is a draw (one sits in the batch beside the real images, the other
    keeps most of their values), so each real batch is given with them as its
    condition, named as the script names them at G's call: 0 apart in float32 and
    float64, no L1 read where G's loss has none, and the code runs beside its names."""
    proc, port = ported(tmp_path, "pytorch_gan_ccgan", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] == 0, port["notes"]
    code = port["code"]
    for fragment in ("objective=LSGAN(),", "schedule=simultaneous(),",
                     "    latent=None,  # G's inputs are data the script gives it "
                     "(pytorch_gan_ccgan.py:205: gen_imgs = generator(masked_imgs, imgs_lr)): "
                     "no z\n", '    condition="real",', "    d_conditional=False,",
                     "    g_scale=2.0,",
                     "once per iteration: step((real_batch, (masked_imgs, imgs_lr)))"):  # fmt: skip
        assert fragment in code, code
    assert code.count("condition=") == 1 and "g_terms" not in code

    class G(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 1, 3, 1, 1)

        def forward(self, x, x_lr):
            return self.conv(torch.cat((x, torch.nn.functional.interpolate(x_lr, 16)), 1))

    step = beside_pytorch_gans_names(code, G(), torch.nn.Conv2d(1, 1, 3, 2, 1))["step"]
    imgs = torch.rand(4, 1, 16, 16)
    logs = step((imgs, (imgs.clone(), torch.rand(4, 1, 4, 4))))
    assert {"loss_d", "loss_g"} <= set(logs)


def test_gs_inputs_whose_names_cannot_be_read_are_said_so(tmp_path):
    """ccgan.py with G's call over two lines: its inputs are still data, but the names a
    Step's call would take cannot be read at that line; the note says so, by line."""
    source = (SCRIPTS / "pytorch_gan_ccgan.py").read_text()
    call = "gen_imgs = generator(masked_imgs, imgs_lr)"
    assert source.count(call) == 1
    port = port_of_source(tmp_path, "ccgan", source.replace(
        call, "gen_imgs = generator(\n            masked_imgs, imgs_lr\n        )"))  # fmt: skip
    assert port["code"] is None and port["notes"] == [
        "G's 2 inputs are data, not draws (beside the real batch in its DataLoader's batch, or "
        "that batch made over), which a Step is given as each real batch's condition; their "
        "names could not be read at G's call (ccgan.py:205: gen_imgs = generator(: a call "
        "over several lines, or unpacked): not mapped"]  # fmt: skip


def test_a_pix2pix_l1_weight_scripts_rarely_use_is_read(tmp_path):
    """pix2pix.py with lambda_pixel = 50 (not 100, 10 or 1, the weights tried before):
    read from G's gradient, printed as 50.0."""
    source = (SCRIPTS / "pytorch_gan_pix2pix.py").read_text()
    port = port_of_source(tmp_path, "pix2pix", source.replace("lambda_pixel = 100",
                                                              "lambda_pixel = 50"))  # fmt: skip
    assert_verified(port)
    assert '    g_terms={"l1": (50.0, lambda v: ' in port["code"]


def test_esrgans_warm_up_is_left_out_of_the_audits_report(tmp_path):
    """Its warm-up steps (G on its pixel loss, no D) were G's "regularization steps of
    their own" (0.67 per iteration) and in G's passes (1.67 forwards): now a warm-up line
    by line, and every figure of the report (passes, FLOPs, hazards, order) as without
    the warm-up."""
    runs = []
    for warm in (2, 0):
        out = tmp_path / f"warm_{warm}.json"
        proc = ganstep("audit", SCRIPTS / "pytorch_gan_esrgan.py", "--json", out, "--",
                       "--warmup_batches", warm, cache=tmp_path, cwd=tmp_path)  # fmt: skip
        runs.append((proc.stdout, json.loads(out.read_text())))
    (warm_text, warm), (plain_text, plain) = runs
    assert warm["warm_up"] == 2 and plain["warm_up"] == 0
    assert ("  warm-up: G stepped 2 time(s) on a loss through no D (pytorch_gan_esrgan.py:118: "
            "optimizer_G.step()) before any adversarial step") in warm_text  # fmt: skip
    assert warm["regularization"] == {"G": 0.0, "D": 0.0}
    for key in ("order", "forwards", "backwards", "hazards", "schedule"):
        assert warm[key] == plain[key], key
    assert warm["total_flops"] == plain["total_flops"]
    assert "regularization steps" not in warm_text


def test_pytorch_gans_dragan_is_told_its_d_learns_from_its_penalty_alone(tmp_path):
    """dragan.py as written: D's loss forwarded on the real batch and the fakes, then
    ``gradient_penalty.backward()`` alone. The first hazard names the step by its line;
    those two forwards are the ones no step used, and D's steps read as a penalty's own.
    The port prints no Step, and says how ganstep writes such an update."""
    out = tmp_path / "dragan.json"
    ganstep("audit", SCRIPTS / "pytorch_gan_dragan.py", "--verify", 3, "--json", out,
            cache=tmp_path, cwd=tmp_path)  # fmt: skip
    r = json.loads(out.read_text())
    assert r["hazards"][0].startswith(
        "D's optimizer stepped 3 time(s) (optimizer_D.step()) on a penalty alone, though D "
        "was forwarded on G's output before it in that step and no backward took that forward"
    )
    assert r["other_forwards"] == {"G": 0, "D": 2} and r["regularization"] == {"G": 0, "D": 1}
    assert r["d_steps_skipped"] == 0  # its D steps on the penalty are D steps: none skipped
    assert r["port"]["code"] is None and r["port"]["notes"] == [
        "no ganstep schedule matches this update order (see above): D stepped on its penalty "
        "alone (the first hazard), which a Step writes as its D loss weighted 0 (d_scale=0) "
        "beside a penalty of your own; docs/loops.md#dragan shows it for PyTorch-GAN's "
        "dragan.py"
    ]


def test_pytorch_gans_relativistic_gan_is_told_its_g_loss_was_replaced(tmp_path):
    """relativistic_gan.py as written: its relativistic G loss, from D on the real batch
    (detached) and on the fakes, is overwritten by BCE on a third forward of D on the same
    fakes. Those two forwards are the ones no step used; the one on the fakes is named."""
    proc, r = audited(tmp_path, "pytorch_gan_relativistic_gan", iterations=3)
    assert r["other_forwards"] == {"G": 0, "D": 2} and r["order"] == "simultaneous"
    assert any(h.startswith("D was forwarded on G's output in G's step and nothing was "
                            "backpropagated from that forward (3 time(s), ")
               for h in r["hazards"])  # fmt: skip


def test_pytorch_gans_bgan_ports_to_the_boundary_seeking_loss(tmp_path):
    """bgan.py as written: G's step first on 0.5 mean((log D - log(1 - D))^2) of D's
    Sigmoid output, D's step on the fakes detached, its BCE halved: BGAN on D's
    probabilities, D's loss scaled by a half, 0 apart. Its float64 repeat failed at G's
    first layer (z made float32 by ``Tensor = torch.FloatTensor``: "not repeated"); run
    again with that name doubled, it is 0 apart there too, and the note says how it ran."""
    proc, port = ported(tmp_path, "pytorch_gan_bgan", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["iterations"] == 3, port["notes"]
    assert port["float64_difference"] == 0 and port["notes"] == [
        "float64 (the script run again, torch's default dtype float64, its torch.FloatTensor "
        "as torch.DoubleTensor): equal too, largest difference 0 (<= 1e-12)"
    ]
    assert "    objective=BGAN(probabilities=True),  # D's output comes out" in port["code"]
    assert "schedule=simultaneous()," in port["code"] and "d_scale=0.5," in port["code"]


def test_the_float64_repeats_doubled_float_tensor_is_undone_after_it():
    """torch.FloatTensor is the double one inside a doubled repeat, and float32's again
    after it, the default dtype too, even where the script raised."""
    from ganstep.tools.audit_script import _float64_default

    before = torch.FloatTensor, torch.cuda.FloatTensor, torch.get_default_dtype()
    with pytest.raises(RuntimeError), _float64_default(float_tensor_doubled=True):
        assert torch.FloatTensor(2).dtype == torch.float64 == torch.get_default_dtype()
        assert torch.cuda.FloatTensor is torch.cuda.DoubleTensor
        raise RuntimeError("the script failed")
    assert (torch.FloatTensor, torch.cuda.FloatTensor, torch.get_default_dtype()) == before
    assert torch.FloatTensor(2).dtype == torch.float32


@pytest.mark.parametrize(("args", "objective"), [((), "RSGAN"), (("--rel_avg_gan",), "RaSGAN")])
def test_pytorch_gans_relativistic_gan_ports_with_its_replaced_g_loss(tmp_path, args, objective):
    """relativistic_gan.py as written (paired, and averaged with --rel_avg_gan): D's
    relativistic loss, G's the plain BCE it ends with, and D forwarded in G's step as
    the script forwards it (its Dropout2d masks and BatchNorm statistics move at each):
    a printed subclass of ganstep's relativistic objective as docs/loops.md writes it,
    g_forwards=("real", "fake", "fake"); equal in its float64 repeat, and in float32 but
    for rounding (the script's paired loss is (BCE(r - f, 1) + BCE(f - r, 0)) / 2, the
    Step's one term: they part by up to 5e-5 in float32 in some unseeded runs, where
    the port decides in float64), and the printed code runs beside the script's names."""
    proc, port = ported(tmp_path, "pytorch_gan_relativistic_gan", *args, flag=("--verify", 3))
    assert port["float64_difference"] <= 1e-12, port["notes"]
    assert port["max_difference"] <= 1e-3 and port["equal_in"] in ("float32", "float64")
    code = port["code"]
    assert f"import {objective}\n\n\nclass {objective}PlainG({objective}):" in code
    assert f"    objective={objective}PlainG(),  # relativistic losses for D; G's" in code
    assert '    g_forwards=("real", "fake", "fake"),  # D forwarded in G\'s step' in code
    G = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Unflatten(1, (1, 8, 8)))
    D = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 1))
    names = beside_pytorch_gans_names(code, G, D)
    assert {"loss_d", "loss_g"} <= set(names["step"](torch.rand(4, 1, 8, 8)))
    scores = torch.tensor([0.3, -1.2])  # G's loss the plain one, with no real scores
    loss, _ = names[f"{objective}PlainG"]().g_loss(scores)
    assert torch.equal(loss, torch.nn.functional.binary_cross_entropy_with_logits(
        scores, torch.ones(2)))  # fmt: skip


def test_zeleni9s_wgan_gp_ports_to_its_per_pixel_norm_and_float32_weights(tmp_path):
    """Zeleni9's penalty takes the norm over channels of the image gradient (no
    flatten) and draws its weights as torch.FloatTensor(...).uniform_: no candidate
    equalled. WGANGP(flatten=False) is tried where D's input is an image; in the float64
    repeat its float32 draw parts from torch.rand's, and the variant drawing in float32
    equals both runs and is printed."""
    proc, port = ported(tmp_path, "zeleni9_wgan_gp", flag=("--verify", 3))
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12, port["notes"]
    assert ("objective=WGANGP(10.0, alpha=lambda shape: torch.rand(shape, dtype=torch.float32)"
            ", flatten=False),") in port["code"]  # fmt: skip
    assert "schedule=d_first(d_steps=5, reuse_fake=False)," in port["code"]


def test_a_loop_with_instance_noise_is_read_and_ported_to_augment(tmp_path):
    """G's fakes with noise added before D: the audit reads the loop's order (it read
    "other" with a lazy regularization step of D's that is not there). The noise is
    added in each of D's calls (real and fake, D's step and G's): the port gives the
    Step that change as its augment= (the port named the noise, not mapped, before),
    verified, with its line."""
    script, out = tmp_path / "noise.py", tmp_path / "noise.json"
    script.write_text(INSTANCE_NOISE_LOOP)
    ganstep("audit", script, "--verify", "3", "--json", out, cache=tmp_path, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["order"] == "d_first" and report["forwards"] == {"G": 1, "D": 3}
    assert report["regularization"] == {"G": 0, "D": 0}
    port = report["port"]
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12, port["notes"]
    assert (
        "    augment=lambda x: noisy(x),  # the script's change of each batch in D's calls "
        "(noise.py:22: loss_d = bce(D(noisy(real)), ones) + bce(D(noisy(fake.detach())), zeros))"
    ) in port["code"]


def test_noise_added_on_a_line_of_its_own_is_read_as_the_steps_augment(tmp_path):
    """The real batch's noise added on a line of its own (``noisy_real = noisy(real)``,
    after G's draw, then ``D(noisy_real)``), the fakes' in D's call: the port read a
    change in D's call only, and said "not mapped". It reads the assignment too, with the
    generator's state before its draw: the same augment=, and the script's order of
    draws (z, then the real batch's noise)."""
    source = INSTANCE_NOISE_LOOP.replace(
        "    opt_d.zero_grad()\n", "    noisy_real = noisy(real)\n    opt_d.zero_grad()\n"
    ).replace("D(noisy(real))", "D(noisy_real)")
    port = port_of_source(tmp_path, "noise", source, "--port", "--verify", "3")
    assert_verified(port)
    assert "augment=lambda x: noisy(x),  # the script's change" in port["code"]
    assert "d_order" not in port["code"]  # z before the real batch's noise, as the Step draws


def test_a_batch_written_over_by_its_own_noise_is_named_not_ported(tmp_path):
    """``real = noisy(real)``: the real batch before the noise is gone, so the Step
    cannot be given it; the note names the line that wrote over it."""
    source = INSTANCE_NOISE_LOOP.replace(
        "    opt_d.zero_grad()\n", "    real = noisy(real)\n    opt_d.zero_grad()\n"
    ).replace("D(noisy(real))", "D(real)")
    port = port_of_source(tmp_path, "noise", source)
    assert port["code"] is None and port["notes"] == [
        "D was given G's output changed by the script's own calls (noise.py:23: loss_d = "
        "bce(D(real), ones) + bce(D(noisy(fake.detach())), zeros)); the Steps tried give D "
        "G's output as it is, or changed as every batch D's losses read is, in D's call "
        "itself or assigned to a name of its own before it (noise or an augmentation of "
        "each batch is a Step's augment=, with draws of its own; anything else belongs in "
        "G); the batch before the change is gone where the script wrote over it (noise.py:"
        "21: real = noisy(real)): a change under another name, or in D's call, is read: "
        "not mapped"
    ]


D_EVAL_IN_G_STEP = """
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Dropout(0.3), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), 1e-3)
opt_d = torch.optim.Adam(D.parameters(), 1e-3)
bce = nn.BCEWithLogitsLoss()
for it in range(10):
    real = torch.randn(32, 2)
    fake = G(torch.randn(32, 4))
    D.train()
    opt_d.zero_grad()
    (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
    opt_d.step()
    D.eval()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(32, 1)).backward()
    opt_g.step()
"""


def test_d_in_eval_mode_in_gs_step_is_named_not_blamed_on_the_losses(tmp_path):
    """D.eval() before G's step, D.train() before D's, with Dropout in D: no Step forwards
    D in two modes, and the port said no objective equals the losses. It names the
    modes, with the line of D's first forward in eval mode."""
    port = port_of_source(tmp_path, "d_eval", D_EVAL_IN_G_STEP)
    assert port["code"] is None
    assert port["notes"][0] == (
        "D ran in eval mode in some of the update's forwards (d_eval.py:20: bce(D(fake), "
        "torch.ones(32, 1)).backward()) and in training mode in others: a Step forwards "
        "each module in the mode it is in, in every phase, so where its layers read the "
        "mode (Dropout, BatchNorm) no Step computes that update: not mapped"
    )
    assert not any("no objective, scale and term" in note for note in port["notes"])


def test_d_in_eval_mode_in_gs_step_ports_where_no_layer_reads_the_mode(tmp_path):
    """The same loop with a D whose layers do not read the mode: its update is a Step's."""
    port = port_of_source(tmp_path, "d_eval", D_EVAL_IN_G_STEP.replace("nn.Dropout(0.3), ", ""))
    assert_verified(port)
    assert "schedule=d_first()" in port["code"]


TRAINER_WITH_EMA = """
import copy

import torch
from torch import nn


class Trainer:
    def __init__(self):
        torch.manual_seed(0)
        self.G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        self.D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.G_ema = copy.deepcopy(self.G)
        self.opt_g = torch.optim.Adam(self.G.parameters(), 1e-3)
        self.opt_d = torch.optim.Adam(self.D.parameters(), 1e-3)

    def train(self):
        bce = nn.BCEWithLogitsLoss()
        for it in range(10):
            real = torch.randn(32, 2)
            fake = self.G(torch.randn(32, 4))
            self.opt_d.zero_grad()
            (bce(self.D(real), torch.ones(32, 1))
             + bce(self.D(fake.detach()), torch.zeros(32, 1))).backward()
            self.opt_d.step()
            self.opt_g.zero_grad()
            bce(self.D(fake), torch.ones(32, 1)).backward()
            self.opt_g.step()
            with torch.no_grad():
                for p_ema, p in zip(self.G_ema.parameters(), self.G.parameters()):
                    p_ema.lerp_(p, 0.01)


Trainer().train()
"""


def test_a_trainers_copy_of_g_that_follows_it_is_named_in_a_note(tmp_path):
    """A trainer class keeping self.G_ema, moved toward G after each G step: the Step
    equals the update and leaves the copy alone, and a note says to keep its lines (the
    port said nothing of it)."""
    port = port_of_source(tmp_path, "trainer", TRAINER_WITH_EMA)
    assert_verified(port)
    assert port["notes"][-1] == (
        "the script keeps self.G_ema beside G, of G's architecture and not G's parameters "
        "(an EMA of G?): the Step does not update it; keep the script's lines that do after "
        "each call of step(...)"
    )


def test_torchs_averaged_model_of_g_is_named_in_a_note(tmp_path):
    """torch.optim.swa_utils.AveragedModel(G) with an EMA, updated after G's step: its
    state is its copy's and a count, named by the copy it holds."""
    source = f"""{SCRIPT_HEAD}
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

ema = AveragedModel(G, multi_avg_fn=get_ema_multi_avg_fn(0.99))
for it in range(10):
    real, fake = torch.randn(32, 2), G(torch.randn(32, 4))
    opt_d.zero_grad()
    (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(32, 1)).backward()
    opt_g.step()
    ema.update_parameters(G)
"""
    port = port_of_source(tmp_path, "averaged", source)
    assert_verified(port)
    assert port["notes"][-1].startswith("the script keeps ema beside G, of G's architecture")


PROGAN_CALLS = """
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.old, self.new = nn.Linear(4, 2), nn.Linear(4, 2)

    def forward(self, x, alpha, steps):  # the faded-in block beside the last one
        return alpha * self.new(x) + (1 - alpha) * self.old(x)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(2, 1)

    def forward(self, x, alpha, steps):
        return self.body(x)


torch.manual_seed(0)
gen, critic = Generator(), Discriminator()
opt_gen = torch.optim.Adam(gen.parameters(), 1e-3, betas=(0.0, 0.99))
opt_critic = torch.optim.Adam(critic.parameters(), 1e-3, betas=(0.0, 0.99))
alpha, step = 1e-5, 1
for it in range(20):
    real = torch.randn(16, 2)
    noise = torch.randn(16, 4)
    fake = gen(noise, alpha, step)
    critic_real = critic(real, alpha, step)
    critic_fake = critic(fake.detach(), alpha, step)
    loss_critic = -(torch.mean(critic_real) - torch.mean(critic_fake)) + 0.001 * torch.mean(
        critic_real**2
    )
    opt_critic.zero_grad()
    loss_critic.backward()
    opt_critic.step()
    gen_fake = critic(fake, alpha, steps=step)
    loss_gen = -torch.mean(gen_fake)
    opt_gen.zero_grad()
    loss_gen.backward()
    opt_gen.step()
    alpha = min(alpha + 0.01, 1)
"""


@pytest.mark.parametrize("g_step_call", ["critic(fake, alpha, steps=step)",
                                         "critic(fake, alpha, step)"])  # fmt: skip
def test_progans_modules_called_with_alpha_and_step_are_audited(tmp_path, g_step_call):
    """Aladdin Persson's ProGAN (Machine-Learning-Collection, ProGAN/train.py) calls
    gen(noise, alpha, step) and critic(real, alpha, step). The audit crashed with a
    traceback: its estimate of the critic's wasted backward called a copy of the critic
    on tensors alone. It re-calls it with the plain arguments the call had, and where
    it cannot (steps= given as a keyword, which module hooks do not see), it takes a
    forward's FLOPs per gradient. The port reads the plain values by the forward's
    parameter names (the keyword too) and equals the loop, alpha growing each iteration,
    with G and D in an AtStage given the script's values before each call, and ProGAN's
    drift as a D term on the Wasserstein losses."""
    script, out = tmp_path / "progan.py", tmp_path / "progan.json"
    script.write_text(PROGAN_CALLS.replace("critic(fake, alpha, steps=step)", g_step_call))
    ganstep("audit", script, "--verify", 3, "--json", out, cache=tmp_path, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["order"] == "d_first" and report["forwards"] == {"G": 1, "D": 3}
    assert report["wasted_flops"] > 0  # D's weight gradients in G's step
    port = report["port"]
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12
    code = port["code"]
    assert "G_at = AtStage(gen, alpha=1e-05, steps=1)" in code
    assert "D_at = AtStage(critic, alpha=1e-05, steps=1)" in code
    assert "objective=Wasserstein()" in code and "schedule=d_first()" in code
    assert 'd_terms={"drift": (0.001, lambda v: v.d_real.pow(2).mean())}' in code
    assert code.endswith(
        "once per iteration: G_at.arguments = dict(alpha=alpha, steps=step); D_at.arguments"
        " = dict(alpha=alpha, steps=step) (the script's step, not this Step: rename one); "
        "step(real_batch)"
    )


def test_plain_values_taken_by_a_forwards_kwargs_are_not_mapped(tmp_path):
    """A value a forward takes through ``**kwargs`` has no parameter of its own to be
    given by: the port names it as not mapped (it had printed ``options={'steps': 1}``
    as a name of D's forward)."""
    script, out = tmp_path / "progan.py", tmp_path / "progan.json"
    source = PROGAN_CALLS.replace(
        "    def forward(self, x, alpha, steps):\n        return self.body(x)",
        "    def forward(self, x, alpha, **options):\n        return self.body(x)",
    ).replace("alpha, step)", "alpha, steps=step)")
    assert source.count("**options") == 1 and "critic(real, alpha, steps=step)" in source
    script.write_text(source)
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    assert json.loads(out.read_text())["port"]["notes"] == [
        "D is called with arguments besides its tensors: they are taken by its forward's "
        "*args or **kwargs, not by names of their own: not mapped"
    ]


def test_plain_values_that_differ_within_an_iteration_are_not_mapped(tmp_path):
    """A Step calls D with one set of plain values a call: a loop that gives D's calls
    in one iteration two alphas is named as not mapped, with the values."""
    script, out = tmp_path / "progan.py", tmp_path / "progan.json"
    script.write_text(PROGAN_CALLS.replace("critic(fake, alpha, steps=step)",
                                           "critic(fake, alpha * 2, steps=step)"))  # fmt: skip
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    assert json.loads(out.read_text())["port"]["notes"] == [
        "D is called with other plain values within iteration 0 ([{'alpha': 1e-05, 'steps': "
        "1}, {'alpha': 1e-05, 'steps': 1}, {'alpha': 2e-05, 'steps': 1}]): a Step calls it "
        "with one set a call: not mapped"
    ]


def test_the_largest_of_a_tiny_ds_weights_is_not_read_as_wgans_clipping(tmp_path):
    """A D of three parameters (Linear(2, 1)): its largest weight alone is a third of
    them, which the port took for WGAN's clipping bound, trying WGAN alone (every
    candidate parted). A bound needs two weights on it at least."""
    head = SCRIPT_HEAD.replace(
        "D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))",
        "D = nn.Linear(2, 1)",
    )
    assert head != SCRIPT_HEAD
    source = f"""{head}
for it in range(10):
    real, fake = torch.randn(8, 2), G(torch.randn(8, 4))
    opt_d.zero_grad()
    (bce(D(real), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))).backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(8, 1)).backward()
    opt_g.step()
"""
    port = port_of_source(tmp_path, "tiny_d", source)
    assert_verified(port)
    # (its BCEWithLogitsLoss form: NS() equals it within tolerance, this to the bit)
    assert "objective=NS(bce_with_logits=True)" in port["code"], port["code"]
    assert port["max_difference"] == 0


def test_a_d_returning_a_dict_is_named_not_a_failure_of_the_port(tmp_path):
    """D returns {"logits": ...}: the port said "the port failed (TypeError ...)", as if
    ganstep had broken; it names what a Step reads D's scores from."""
    source = f"""{SCRIPT_HEAD}
class DictD(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = D

    def forward(self, x):
        return {{"logits": self.body(x)}}


netD = DictD()
for it in range(10):
    real, fake = torch.randn(8, 2), G(torch.randn(8, 4))
    opt_d.zero_grad()
    (bce(netD(real)["logits"], torch.ones(8, 1))
     + bce(netD(fake.detach())["logits"], torch.zeros(8, 1))).backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(netD(fake)["logits"], torch.ones(8, 1)).backward()
    opt_g.step()
"""
    port = port_of_source(tmp_path, "dict_d", source)
    assert port["code"] is None
    assert port["notes"] == [
        "D returns a dict (keys logits): a Step reads D's scores from a tensor, a tuple "
        "(scores, *extras) or a list (one per scale): not mapped"
    ]


KEYWORD_CALLS = f"""{SCRIPT_HEAD}
class ByName(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return self.body(x)


netG, netD = ByName(G), ByName(D)
for it in range(10):
    real = torch.randn(8, 2)
    fake = netG(x=torch.randn(8, 4))
    opt_d.zero_grad()
    (bce(netD(x=real), torch.ones(8, 1)) + bce(netD(x=fake.detach()), torch.zeros(8, 1))).backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(netD(x=fake), torch.ones(8, 1)).backward()
    opt_g.step()
"""


GLOBAL_HOOK = torch.nn.modules.module.register_module_forward_hook


@pytest.mark.skipif(
    "with_kwargs" not in inspect.signature(GLOBAL_HOOK).parameters,
    reason="this torch's global module hooks do not see keyword arguments",
)
def test_modules_called_by_keyword_are_read_as_called_positionally(tmp_path):
    """netG(x=z), netD(x=real): the audit saw no input (global hooks get positional
    arguments), read the order as "other" with a lazy regularization step of D's that
    is not there, and found no Step. It reads the tensors given by keyword too."""
    script, out = tmp_path / "by_name.py", tmp_path / "by_name.json"
    script.write_text(KEYWORD_CALLS)
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["order"] == "d_first" and report["regularization"] == {"G": 0, "D": 0}
    assert_verified(report["port"])
    assert "schedule=d_first()" in report["port"]["code"]


def test_autocast_on_g_alone_is_named_not_ported(tmp_path):
    """A Step's precision autocasts every forward of its phases: a script that autocasts
    G's forward and not D's is no Step's, and the port says which forward did not. The
    audit reads the loop's order all the same: D's input cast from G's bfloat16 output
    (new storage) is G's fake batch, not a real one (it read "other" before)."""
    script, out = tmp_path / "amp_g.py", tmp_path / "amp.json"
    script.write_text(amp_update("bfloat16", d_autocast=False))
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["order"] == "d_first" and report["forwards"] == {"G": 1, "D": 3}
    port = report["port"]
    assert port["code"] is None and port["notes"] == [
        "G ran under torch.autocast to bfloat16 (amp_g.py:18: fake = G(torch.randn(32, "
        "4)).float()) and D did not, in iteration 0: a Step's precision autocasts every "
        "forward of its phases: not mapped"
    ]


def test_a_sample_under_autocast_outside_the_update_is_no_reason_not_to_port(tmp_path):
    """A float32 update whose sample grid is drawn under autocast (a forward no step
    used) ports and verifies: only the update's own forwards under autocast stop it."""
    script, out = tmp_path / "sampling.py", tmp_path / "sampling.json"
    script.write_text(FP32_LOOP_BF16_SAMPLE)
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert not any("autocast" in h for h in report["hazards"])
    assert "schedule=d_first()" in report["port"]["code"]
    assert report["port"]["max_difference"] <= 1e-6


def port_of_source(tmp_path: Path, name: str, source: str, *flag,
                   script_args: tuple = ()) -> dict:  # fmt: skip
    """The port of a script written here (``name``.py, from ``source``), audited with
    ``flag`` (``--port`` unless given), the script given ``script_args``."""
    script, out = tmp_path / f"{name}.py", tmp_path / f"{name}.json"
    script.write_text(source)
    ganstep("audit", script, *(flag or ("--port",)), "--json", out, "--", *script_args,
            cache=tmp_path, cwd=tmp_path)  # fmt: skip
    return json.loads(out.read_text())["port"]


def assert_verified(port: dict) -> None:
    """A Step was printed, within float32's tolerance of the script."""
    assert port["max_difference"] is not None, port["notes"]
    assert port["max_difference"] <= 1e-6, port["notes"]


def test_pytorch_gans_cogan_ports_through_modules_joining_its_domains(tmp_path):
    """cogan.py: its coupled G returns an image of each domain, its coupled D is called on
    both together. --port had said "D takes a condition that G does not"; it now gives
    the Step G and D through two printed modules, BothDomains (G's images joined along
    the channels) and EachDomain (D on each domain's channels, both scores per sample:
    d_map=True), each real batch the script's two joined: equal in float32 and float64
    (docs/loops.md#cogan shows the same Step beside the script), D's Dropout2d and
    BatchNorm as its three calls make them, and the code runs among the script's names.
    Seeded: its convolutions before BatchNorm have biases whose gradients are float32's
    rounding (docs/loops.md#esrgan), which part the Step from the script by nearly 1e-5 on
    some data (9.4e-6 on seed 1's; past 1e-5, --verify's float64 run decides)."""
    script = SCRIPTS / "pytorch_gan_cogan.py"
    port = seeded_port(tmp_path, 2, script, "--iterations", 3, "--verify", 3)
    report = json.loads((tmp_path / "pytorch_gan_cogan.json").read_text())
    assert report["order"] == "simultaneous" and report["forwards"] == {"G": 1, "D": 3}
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] == 0, port["notes"]
    code = port["code"]
    for fragment in ("class BothDomains(torch.nn.Module):", "class EachDomain(torch.nn.Module):",
                     "    BothDomains(coupled_generators), EachDomain(coupled_discriminators, "
                     "(3, 3)), optimizer_G, optimizer_D,",
                     "objective=LSGAN(),", "schedule=simultaneous(),", "    g_scale=2.0,",
                     "    d_map=True,", '    d_forwards="loop",',
                     "step(torch.cat((real_batch_1, real_batch_2), 1))"):  # fmt: skip
        assert fragment in code, code

    class Coupled(torch.nn.Module):  # stand-ins of the script's coupled modules: a head
        def __init__(self, head, domains):  # for each of D's images, or each of G's on z
            super().__init__()
            self.head, self.domains = head, domains

        def forward(self, *x):
            return tuple(self.head(t) for t in (x * self.domains if len(x) == 1 else x))

    image = torch.nn.Sequential(torch.nn.Linear(4, 3 * 8 * 8), torch.nn.Unflatten(1, (3, 8, 8)))
    G = Coupled(image, 2)
    D = Coupled(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 1)), 2)
    names = {"torch": torch, "coupled_generators": G, "coupled_discriminators": D,
             "optimizer_G": torch.optim.Adam(G.parameters()),
             "optimizer_D": torch.optim.Adam(D.parameters())}  # fmt: skip
    exec(code, names)  # noqa: S102 - the code the port printed
    logs = names["step"](torch.cat((torch.rand(5, 3, 8, 8), torch.rand(5, 3, 8, 8)), 1))
    assert {"loss_d", "loss_g"} <= set(logs)


def test_a_d_step_under_a_condition_is_read_as_one_and_named_so(tmp_path):
    """simple-pytorch-3dgan's trainer.py steps D only while its accuracy is below 0.8:
    where it skipped D's step, G stepped twice with D's forwards and loss between and no
    backward. The audit had read that as irregular G steps and advised
    d_first(g_steps=5); it now says D's step was skipped (in how many of the script's
    iterations), names d_step_if, and --port, which does not read the condition, says to
    write that Step by hand (docs/loops.md#3d-gan: equal to the script, seeded so that
    D's accuracy reaches 0.8 within the iterations audited)."""
    out = tmp_path / "r.json"
    proc = seeded_ganstep(0, "audit", SCRIPTS / "xchhuang_3dgan.py", "--iterations", 3,
                          "--port", "--json", out, cache=tmp_path, cwd=tmp_path)  # fmt: skip
    r = json.loads(out.read_text())
    assert r["order"] == "d_first" and r["schedule"] is None
    skipped = r["d_steps_skipped"]
    assert skipped >= 1 and r["pattern"].startswith(
        f"D's step skipped in {skipped} of the script's {3 + skipped} iterations: D forwarded "
        "on a real batch and on G's fakes and its loss taken, but no backward")  # fmt: skip
    assert "g_steps" not in proc.stdout
    advice = "ganstep: a d_first() Step takes D's step under a condition with d_step_if="
    assert advice in proc.stdout
    assert r["port"]["code"] is None and r["port"]["notes"][0].startswith(
        f"D's step was skipped in {skipped} of the script's iterations (see above): the port "
        "does not read the condition, so write the Step by hand")  # fmt: skip
