"""The audit's port, continued from tests/test_audit_scripts.py (the same helpers): loops
written here and public scripts ported and verified. A file of its own so that pytest's
two workers (``--dist loadfile``) share the port's tests."""

from __future__ import annotations

import ast
import json
import re
import runpy
import sys

import pytest
import torch
from helpers import ganstep
from test_audit import SCRIPT_HEAD
from test_audit_scripts import SCRIPTS, assert_verified, port_of_source, ported


def test_a_simultaneous_loop_with_a_batchnorm_d_ports_with_the_loops_d_forwards(tmp_path):
    """PyTorch-GAN's G-first loop with a BatchNorm1d in D: a Step merges the two forwards
    of D on the fakes, whose parameters equal the script's and whose running statistics
    do not (they move once a forward). The port said no objective equals the losses
    (they parted in num_batches_tracked); it prints d_forwards="loop"."""
    source = (SCRIPTS / "pytorch_gan_dcgan.py").read_text()
    plain = "torch.nn.LeakyReLU(0.2),\n            torch.nn.Linear(nh, 1),"
    assert plain in source
    batchnorm = plain.replace("\n", "\n            torch.nn.BatchNorm1d(nh, 0.8),\n", 1)
    port = port_of_source(tmp_path, "bn_d", source.replace(plain, batchnorm), "--verify", "3")
    assert port["max_difference"] == 0, port["notes"]
    assert port["float64_difference"] <= 1e-12
    assert 'd_forwards="loop",  # D forwarded in each phase as the script does' in port["code"]
    assert "schedule=simultaneous()" in port["code"]
    # (a D without statistics: the Step merges its forwards, and the port says nothing,
    # test_verify_3_finds_each_scripts_step_equal[pytorch_gan_dcgan])


JOINED_BATCHNORM_D = """
import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh())
D = nn.Sequential(nn.Linear(16, 32, bias=False), nn.BatchNorm1d(32), nn.LeakyReLU(0.2),
                  nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
criterion = nn.BCEWithLogitsLoss()
data = torch.rand(64, 16) * 2 - 1
for i in range(0, 64, 16):
    real = data[i:i + 16]
    fake = G(torch.randn(16, 8))
    opt_d.zero_grad()
    d_loss = criterion(D(torch.cat([real, fake.detach()])),
                       torch.cat([torch.ones(16, 1), torch.zeros(16, 1)]))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = criterion(D(fake), torch.ones(16, 1))
    g_loss.backward()
    opt_g.step()
"""


def test_a_batchnorm_d_called_on_both_batches_joined_ports_to_concat_joint(tmp_path):
    """A Keras-style loop: one D call on the real and fake batch joined, a BatchNorm D
    normalizing them together. Every Step raised (concat=True refuses a D that mixes
    samples); concat="joint" is that call's math."""
    port = port_of_source(tmp_path, "joined", JOINED_BATCHNORM_D, "--verify", "3")
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12
    assert 'concat="joint",  # D is called once on the fake and real rows together' in port["code"]
    assert 'd_order="real_first"' in port["code"]


def test_a_loop_on_bce_with_logits_ports_to_the_step_equal_to_the_bit(tmp_path):
    """stat453's train_gan_v1 takes F.binary_cross_entropy_with_logits: NS() equals it
    within float32's tolerance (6e-8 apart over 3 iterations, D's BatchNorm subtracting
    a rounding-only gradient), and its BCEWithLogitsLoss form to the bit; the port
    printed NS(), and now tries the form that rounds as the script's too, keeping the
    nearer of the two."""
    proc, port = ported(tmp_path, "rasbt_dcgan", flag=("--verify", 3))
    assert port["max_difference"] == 0, port["notes"]
    assert port["float64_difference"] <= 1e-12
    assert "objective=NS(bce_with_logits=True)" in port["code"]
    assert "model.generator, model.discriminator, optimizer_gen, optimizer_discr" in port["code"]


def test_generative_collections_gan_ports_to_reuse_z(tmp_path):
    """znxlwm/pytorch-generative-model-collections' GAN.train(): a method of a trainer
    class, z from torch.rand, G between D's forwards (BatchNorm in D: no random draws),
    and G's step forwarding G again on the D step's z_. No candidate reused that z
    ("no Step found"); d_first(reuse_fake=False, reuse_z=True) is tried where a G call
    was given the z of the one before, and equals the script."""
    proc, port = ported(tmp_path, "generative_collections_gan", flag=("--verify", 3))
    assert port["max_difference"] == 0, port["notes"]
    assert port["float64_difference"] <= 1e-12
    code = port["code"]
    assert "self.G, self.D, self.G_optimizer, self.D_optimizer," in code
    assert "schedule=d_first(reuse_fake=False, reuse_z=True)" in code
    assert "G's step makes its fakes anew from the D step's z" in code
    assert "latent=lambda n: torch.rand(n, 8)," in code
    assert "d_order" not in code  # D draws nothing: the order of its forwards and G's is free


def test_a_condition_filled_over_the_image_for_d_ports_with_a_printed_wrapper(tmp_path):
    """pytorch-generative-model-collections' CGAN gives G the batch's labels one-hot
    and D the same vector filled over the image: two conditions where a Step gives one.
    Every candidate raised (torch.cat of a 2-D and a 4-D tensor in D) under "no
    objective ... equals the losses". The port now prints a FilledD wrapper (which its
    Steps are made from), condition="real" for fakes made for the batch's labels, and a
    Step equal to the script, runnable beside its names."""
    proc, port = ported(tmp_path, "generative_collections_cgan", flag=("--verify", 3))
    assert port["max_difference"] == 0, port["notes"]
    assert port["float64_difference"] <= 1e-12
    assert not any("failed beside the script's names" in note for note in port["notes"])
    code = port["code"]
    assert "class FilledD(torch.nn.Module):" in code
    assert "return self.D(x, c.reshape(c.shape[0], -1, 1, 1).expand(-1, -1, 8, 8))" in code
    assert "self.G, FilledD(self.D), self.G_optimizer, self.D_optimizer," in code
    assert 'condition="real",' in code
    assert "schedule=d_first(reuse_fake=False, reuse_z=True)" in code


def test_the_cdcgan_tutorial_ports_with_filled_labels(tmp_path):
    """pytorch-MNIST-CelebA-cGAN-cDCGAN's loop (the cDCGAN tutorial most copied): G
    given one-hot labels as (n, 10, 1, 1) images, D the same filled over the image,
    the fakes' labels drawn in each step. The port ran every candidate into a shape
    error inside D ("no Step found"); now FilledD, a one-hot condition, 0 apart and
    its float64 repeat too."""
    proc, port = ported(tmp_path, "pytorch_mnist_cdcgan", flag=("--verify", 3))
    assert port["max_difference"] == 0, port["notes"]
    assert port["float64_difference"] <= 1e-12
    assert not any("failed beside the script's names" in note for note in port["notes"])
    code = port["code"]
    assert "G, FilledD(D), G_optimizer, D_optimizer," in code
    assert "expand(-1, -1, 16, 16)" in code
    assert "schedule=d_first(reuse_fake=False)" in code
    assert "latent=lambda n: torch.randn(n, 16, 1, 1)," in code
    assert "one_hot(torch.randint(0, 10, (n,)), 10).to(torch.float32).reshape(n, 10, 1, 1)" in code


def test_fakes_for_sampled_one_hot_labels_print_a_runnable_condition(tmp_path):
    """The CGAN script with its fakes made for labels of their own (sampled one-hot,
    filled for D), as many cGAN tutorials draw them: the condition printed was
    ``lambda n: ...``, which failed beside the script's names; now it draws one-hot
    labels of the classes seen."""
    source = (SCRIPTS / "generative_collections_cgan.py").read_text()
    pad = " " * 16
    made = f"{pad}y_fill_ = y_vec_.unsqueeze(2).unsqueeze(3).expand(self.batch_size, 3, 8, 8)\n"
    assert made in source
    sampled = source.replace(made, made + (
        f"{pad}g_vec_ = torch.zeros((self.batch_size, 3)).scatter_(\n"
        f"{pad}    1, torch.randint(0, 3, (self.batch_size, 1)), 1)\n"
        f"{pad}g_fill_ = g_vec_.unsqueeze(2).unsqueeze(3).expand(self.batch_size, 3, 8, 8)\n"
    )).replace("self.G(z_, y_vec_)", "self.G(z_, g_vec_)").replace(
        "self.D(G_, y_fill_)", "self.D(G_, g_fill_)")  # fmt: skip
    port = port_of_source(tmp_path, "cgan_sampled", sampled)
    assert port["max_difference"] == 0, port["notes"]
    assert not any("failed beside the script's names" in note for note in port["notes"])
    code = port["code"]
    assert 'condition="real"' not in code and "FilledD(self.D)" in code
    assert ("condition=lambda n: torch.nn.functional.one_hot(torch.randint(0, 3, (n,)), 3)"
            ".to(torch.float32).reshape(n, 3),") in code  # fmt: skip


def test_the_courses_cgan_with_conditions_joined_to_g_and_d_ports(tmp_path):
    """DeepLearning.AI's conditional GAN joins the one-hot labels to G's noise
    (``gen(combine_vectors(noise, one_hot))``) and their maps to each image for D
    (``disc(combine_vectors(fake, image_one_hot_labels))``): G and D each given one
    tensor, which the port read as an unconditional G and a D given G's output changed by
    the script ("not mapped"). It now splits both (the maps' channels and G's last
    columns equal on each fake), prints JoinedG and FilledD(PairedD(...)) wrappers with
    ``condition="real"``, and, with the course's BCEWithLogitsLoss on blocks whose bias
    sits before BatchNorm, ``NS(bce_with_logits=True)``: 0 apart."""
    proc, port = ported(tmp_path, "coursera_cgan")
    assert port["max_difference"] == 0, port["notes"]
    assert not any("failed beside the script's names" in note for note in port["notes"])
    code = port["code"]
    assert "JoinedG(gen), FilledD(PairedD(disc)), gen_opt, disc_opt," in code
    assert "return self.G(torch.cat([z, c], 1))" in code
    assert "return self.D(torch.cat((x, c), 1))" in code
    assert "objective=NS(bce_with_logits=True)" in code and 'condition="real",' in code
    assert 'd_order="fake_first",' in code and "d_scale=0.5," in code


def test_compiled_modules_are_audited_without_torchs_warning_of_the_audits_hooks(tmp_path):
    """``G = torch.compile(G)``: torch warns at every call of a compiled module while
    global module hooks are set (the audit's own, not the script's): a screen of
    warnings. The audit filters that one warning; the compiled G and D port as they are."""
    script = tmp_path / "compiled.py"
    script.write_text(f"""{SCRIPT_HEAD}
G, D = torch.compile(G, backend="eager"), torch.compile(D, backend="eager")
for i in range(4):
    real = torch.randn(32, 2)
    fake = G(torch.randn(32, 4))
    loss_d = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(32, 1)).backward()
    opt_g.step()
""")
    out = tmp_path / "compiled.json"
    proc = ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    assert "global hooks" not in proc.stderr, proc.stderr
    port = json.loads(out.read_text())["port"]
    assert_verified(port)
    assert "G, D, opt_g, opt_d," in port["code"]


def test_the_courses_wgan_gp_ports_with_its_critic_repeats_on_one_batch(tmp_path):
    """DeepLearning.AI's WGAN-GP: the critic stepped 5 times on one real batch, each on
    fresh noise, fakes first, epsilon drawn after its forwards, BatchNorm in the critic;
    G on fresh noise. ``WGANGP(10.0)``, ``d_first(d_steps=5, reuse_fake=False)``, called
    ``step([real_batch] * 5)``: 0 apart."""
    proc, port = ported(tmp_path, "coursera_wgan_gp")
    assert port["max_difference"] == 0, port["notes"]
    code = port["code"]
    assert "gen, crit, gen_opt, crit_opt," in code and "objective=WGANGP(10.0)," in code
    assert "schedule=d_first(d_steps=5, reuse_fake=False)," in code
    assert 'd_order="fake_first",' in code and "step([real_batch] * 5)" in code


ROSINALITY_LOOP = """
# rosinality/stylegan2-pytorch's train.py loop, made small: G given its z in a list
# (mixing_noise without style mixing, --mixing 0), D on the fakes first, its lazy R1 in a
# step of its own (with the 0 * real_pred[0] term), G on fresh z; without its path length
# regularization (its G's latents), augmentation and g_ema
import random

import torch
from torch import autograd, nn
from torch.nn import functional as F


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def d_r1_loss(real_pred, real_img):
    (grad_real,) = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


def mixing_noise(batch, latent_dim, prob, device):
    if prob > 0 and random.random() < prob:
        return torch.randn(2, batch, latent_dim, device=device).unbind(0)
    return [torch.randn(batch, latent_dim, device=device)]


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 2))

    def forward(self, styles, return_latents=False):
        return self.net(styles[0]), None


torch.manual_seed(0)
generator = Generator()
discriminator = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
d_reg_every, batch = 4, 16
d_reg_ratio = d_reg_every / (d_reg_every + 1)
g_optim = torch.optim.Adam(generator.parameters(), lr=0.002, betas=(0.0, 0.99))
d_optim = torch.optim.Adam(discriminator.parameters(), lr=0.002 * d_reg_ratio,
                           betas=(0.0 ** d_reg_ratio, 0.99 ** d_reg_ratio))
loader = iter(torch.utils.data.DataLoader(torch.randn(512, 2), batch_size=batch,
                                          shuffle=True, drop_last=True))
for i in range(20):
    real_img = next(loader)
    requires_grad(generator, False)
    requires_grad(discriminator, True)
    noise = mixing_noise(batch, 8, 0.0, "cpu")
    fake_img, _ = generator(noise)
    fake_pred = discriminator(fake_img)
    real_pred = discriminator(real_img)
    d_loss = F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()
    discriminator.zero_grad()
    d_loss.backward()
    d_optim.step()
    if i % d_reg_every == 0:
        real_img.requires_grad = True
        real_pred = discriminator(real_img)
        r1_loss = d_r1_loss(real_pred, real_img)
        discriminator.zero_grad()
        (10.0 / 2 * r1_loss * d_reg_every + 0 * real_pred[0]).backward()
        d_optim.step()
    requires_grad(generator, True)
    requires_grad(discriminator, False)
    noise = mixing_noise(batch, 8, 0.0, "cpu")
    fake_img, _ = generator(noise)
    g_loss = F.softplus(-discriminator(fake_img)).mean()
    generator.zero_grad()
    g_loss.backward()
    g_optim.step()
"""


def test_a_g_given_its_z_in_a_list_ports_with_a_printed_wrapper(tmp_path):
    """rosinality's ``generator(noise)`` with ``noise = [z]``: the port read G as called
    with no tensor ("G is called with 0 tensors"). It now prints a ListedG that calls
    G([z]), with the loop's lazy R1 and fakes-first order: 0 apart."""
    port = port_of_source(tmp_path, "rosinality", ROSINALITY_LOOP, "--port", "--iterations", "6")
    assert port["max_difference"] == 0, port["notes"]
    assert not any("failed beside the script's names" in note for note in port["notes"])
    code = port["code"]
    assert "ListedG(generator), discriminator, g_optim, d_optim," in code
    assert "return self.G([z])" in code and "objective=NS(r1=10.0, r1_every=4)" in code
    assert 'd_order="fake_first"' in code and "schedule=d_first(reuse_fake=False)" in code


def test_rosinalitys_train_py_ports_with_its_path_length(tmp_path):
    """rosinality/stylegan2-pytorch's train.py without style mixing (--mixing 0): D on the
    fakes first, lazy R1 on a forward of its own, G on fresh z, and every 4th iteration
    path length on a z of its own of half the batch, differentiated at the latents G
    returns (``generator(noise, return_latents=True)``). The port prints PathLength with
    that call and z_draw="shrunk", equal over 5 iterations in float32 and float64, and
    names g_ema as a copy the Step leaves alone. Before, the path length was taken at z:
    every candidate parted, the right one by 0.6 in G's Adam moments."""
    proc, port = ported(tmp_path, "rosinality_stylegan2", "--mixing", 0, flag=("--verify", 5))
    assert port["max_difference"] is not None, port["notes"]
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12
    code = port["code"]
    assert "ListedG(generator), discriminator, g_optim, d_optim," in code
    assert "objective=NS(r1=10.0, r1_every=4)" in code and 'd_order="fake_first"' in code
    assert ("g_regularizer=PathLength(2.0, 4, images_and_latents=lambda *z: generator(list(z), "
            'return_latents=True), z_draw="shrunk"),' in code)  # fmt: skip
    assert "on a z of its own, half of a round's rows" in code
    assert not any("failed beside the script's names" in note for note in port["notes"])
    assert any(note.startswith("the script keeps g_ema beside G") for note in port["notes"])


def test_rosinalitys_path_batch_shrink_is_read(tmp_path):
    """--path_batch_shrink 4: PathLength(..., shrink=4), equal."""
    proc, port = ported(tmp_path, "rosinality_stylegan2", "--mixing", 0, "--path_batch_shrink",
                        4, flag=("--port", "--iterations", 5))  # fmt: skip
    assert port["max_difference"] is not None and port["max_difference"] <= 1e-6, port["notes"]
    assert 'return_latents=True), shrink=4, z_draw="shrunk"),' in port["code"]
    assert "a z of its own, 1/4 of a round's rows" in port["code"]


def test_rosinalitys_style_mixing_ports(tmp_path):
    """Its default --mixing 0.9: G given two z in a list at most calls (mixing_noise's
    random.random() < 0.9), the layer they mix at drawn by random.randint in G's
    forward. The port replays Python's generator at each G call too and prints a
    ListedG taking one or two z and a latent drawing them as mixing_noise does, at the
    script's args.mixing: equal over 5 iterations in float32 and float64. Before: "G is
    called with 0 tensors", nothing mapped."""
    proc, port = ported(tmp_path, "rosinality_stylegan2", flag=("--verify", 5))
    assert port["max_difference"] is not None, port["notes"]
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12
    code = port["code"]
    assert code.startswith("import random\n") and "return self.G(list(z))" in code
    assert ("latent=lambda n: (tuple(torch.randn(2, n, 16).unbind(0)) if random.random() < 0.9 "
            "else (torch.randn(n, 16),)),  # G's styles: two z with probability 0.9 (the "
            "script's args.mixing)" in code)  # fmt: skip
    assert "images_and_latents=lambda *z: generator(list(z), return_latents=True)" in code
    assert not any("failed beside the script's names" in note for note in port["notes"])


def test_pix2pixhds_own_forward_calls_are_audited(tmp_path):
    """NVIDIA/pix2pixHD calls its G and D through ``.forward(...)`` (``self.netG.forward``),
    which torch's module hooks do not see, inside a model holding both; its D returns a
    list of lists (each scale's features, then its prediction). Before: "ran to its end
    before any optimizer step". Now: G and D's losses from one forward of G and three of
    D, both steps from the iteration's parameters (simultaneous), and the backward of
    loss_G through D's weights, zeroed before D's step, named as waste. Its port: the
    tests below."""
    out = tmp_path / "report.json"
    ganstep("audit", SCRIPTS / "nvidia_pix2pixhd.py", "--iterations", 3, "--json", out, "--",
            "--niter", 1, cache=tmp_path, cwd=tmp_path)  # fmt: skip
    r = json.loads(out.read_text())
    assert r["schedule"] == "simultaneous()" and r["forwards"] == {"G": 1.0, "D": 3.0}
    assert r["backwards"] == {"G": 1.0, "D": 3.0}
    assert r["hazards"][0].startswith("D's weight gradients were computed in G's step and "
                                      "never stepped (3 time(s), ")  # fmt: skip


def test_pix2pixhd_ports_with_its_scales_features_and_perceptual_term(tmp_path):
    """--verify 2 on pix2pixHD as written: its D returns a list per scale (features, then
    the prediction), given to the Step in a printed ScalesD beside the PairedD of its
    label map; its G terms weighted as G's first gradient says (the script's Adam
    moment after its first step): the feature matching at 1 / num_D * 4 / (n_layers_D +
    1) * lambda_feat = 5 and its VGGLoss, a module of frozen parameters called on G's
    output and the target, at lambda_feat = 10. Equal in float32 and float64. Before:
    "D returns a list of lists ...: not mapped"."""
    proc, port = ported(tmp_path, "nvidia_pix2pixhd", flag=("--verify", 2))
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert ("step = Step(\n    model.netG, ScalesD(PairedD(model.netD)), model.optimizer_G, "
            "model.optimizer_D,\n    objective=LSGAN(),") in code  # fmt: skip
    assert '"features": (5.0, feature_matching),' in code and "@reads_real\n" in code
    assert '"criterionVGG": (10.0, lambda v: model.criterionVGG(v.fake.x, v.real.x)),' in code
    assert "g_scale=2.0," in code and "schedule=simultaneous()," in code
    assert not any("failed beside the script's names" in note for note in port["notes"])
    # as a user pastes it: the Step trained on the script's batches equals the script's
    # own loop run over them (one epoch, 8 iterations: past the 2 verified)
    trained = run_fixture("nvidia_pix2pixhd", "--niter", "1")["model"]
    names = run_fixture("nvidia_pix2pixhd", "--niter", "0")
    exec(code, names)  # noqa: S102 - the port's printed code
    for data in names["dataset"]:
        names["step"]((data["image"], data["label"]))
    for ours, theirs in ((names["model"].netG, trained.netG), (names["model"].netD, trained.netD)):
        for (name, mine), other in zip(ours.state_dict().items(), theirs.state_dict().values(),
                                       strict=True):  # fmt: skip
            assert torch.allclose(mine, other, rtol=0, atol=1e-5), name


@pytest.mark.parametrize(
    ("args", "terms"),
    [
        # feat_weights 4 / 3: 1 / 2 * 4 / 3 * 3
        (("--n_layers_D", "2", "--lambda_feat", "3"),
         ['"features": (2.0, feature_matching)', '"criterionVGG": (3.0, ']),
        (("--no_ganFeat_loss",), ['"criterionVGG": (10.0, ']),  # D's scales, no features
    ],
)  # fmt: skip
def test_pix2pixhds_g_terms_are_read_from_gs_first_gradient(tmp_path, args, terms):
    """Each of the script's options that weighs or drops a G term: the terms printed are
    those its loss took, at its weights, verified over 3 iterations."""
    proc, port = ported(tmp_path, "nvidia_pix2pixhd", *args)
    assert port["max_difference"] is not None and port["max_difference"] <= 1e-5, port["notes"]
    block = port["code"].split("g_terms={")[1].split("\n    },")[0]
    printed = [line.strip() for line in block.splitlines()[1:]]
    assert len(printed) == len(terms), printed
    assert all(any(line.startswith(t) for line in printed) for t in terms), printed
    assert "ScalesD(PairedD(model.netD))" in port["code"]
    assert ("@reads_real" in port["code"]) == any("features" in t for t in terms)


def test_pix2pixhd_with_three_scales_ports_on_its_float64_run(tmp_path):
    """--num_D 3: the feature matching weighs 1 / 3 * 4 / 4 * 10, which the script
    multiplies term by term and the Step as 10 / 3 once. Every candidate parts in the
    float32 run, the right one most in a bias before InstanceNorm (its gradient 0 in
    exact arithmetic: Adam makes steps of its rounding); in the float64 run too (1.8e-11
    in that bias, as CycleGAN's did), until the entries the script's own two runs moved
    on rounding alone are left out: then it equals, and a note names them with their
    moves. Before: "no Step tried equals that run either"."""
    _, port = ported(tmp_path, "nvidia_pix2pixhd", "--num_D", "3", flag=("--verify", 3))
    assert port["equal_in"] == "float64" and port["float64_difference"] <= 1e-12, port["notes"]
    assert 1e-5 < port["max_difference"] < 1e-2
    assert '"features": (10 / 3, feature_matching),' in port["code"]
    left_out = next(n for n in port["notes"] if n.startswith("not compared:"))
    assert "model.netG.model.1.bias by" in left_out
    assert "model.netD.scale0_layer1.0.bias by" in left_out
    assert ".weight by" not in left_out and "model.netD.scale0_layer0.0.bias" not in left_out
    said = port["notes"][-1]
    assert said.startswith("float64 (the script run again, torch's default dtype float64): "
                           "this Step equals it"), said  # fmt: skip
    assert "its gradient is float32's rounding alone" in said


def test_melgan_ports_with_g_on_its_mel_and_features_from_ds_step(tmp_path):
    """descriptinc/melgan-neurips' train.py as written: G's one input is ``fft(x_t)`` of
    each real batch (a module of no trained parameters among main()'s names, which
    called on the batch gives it to the bit), so the Step takes ``(x, fft(x))`` with
    ``latent=None, condition="real", d_conditional=False``; its multi-scale D goes in a
    ScalesD; hinge (told from Wasserstein by the losses it backpropagated); its feature
    matching reads ``D_real`` from D's step, before D's update, where G's step forwarded
    D on no data: a term marked reads_d_step_real, weighted 10 * 1/3 * 4/3 = 40 / 9 as
    G's first gradient says. Equal in float32 and float64. Before: "D returns a list of
    lists ...: not mapped"."""
    proc, port = ported(tmp_path, "descript_melgan", "--epochs", "1", flag=("--verify", 2))
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert "netG, ScalesD(netD), optG, optD," in code and "objective=Hinge()," in code
    assert "latent=None,  # G's one input is fft(real_batch)" in code
    assert "d_conditional=False," in code and "@reads_d_step_real\n" in code
    assert '"features": (40 / 9, feature_matching),' in code
    assert code.endswith("step((real_batch, fft(real_batch)))")
    assert not any("failed beside the script's names" in note for note in port["notes"])


def run_fixture(script: str, *args: str) -> dict:
    """The names the fixture ``script`` leaves run as ``__main__`` with ``args``."""
    saved = sys.argv
    sys.argv = [script, *args]
    try:
        return runpy.run_path(str(SCRIPTS / f"{script}.py"), run_name="__main__")
    finally:
        sys.argv = saved


DIRECT_FORWARDS = """
import copy

import torch
from torch import nn

torch.manual_seed(0)
G, D = nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 1))
opt_g = torch.optim.SGD(G.parameters(), lr=0.1)
opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
G_ema = copy.deepcopy(G)  # made after G's optimizer: a copy of a followed module
for i in range(3):
    real, z = torch.randn(4, 2), torch.randn(4, 2)
    fake = G.forward(z)
    loss_d = D(real).mean() - D.forward(fake.detach()).mean()
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    loss_g = D.forward(G(z)).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    with torch.no_grad():
        for e, p in zip(G_ema.parameters(), G.parameters()):
            e.mul_(0.5).add_(p, alpha=0.5)
        # the copy computes with its own weights (the audit's wrapper passes it on)
        assert torch.allclose(G_ema.forward(z), z @ G_ema.weight.T + G_ema.bias)
"""


def test_forward_called_directly_is_seen_beside_hooked_calls(tmp_path):
    """``G.forward(z)`` and ``D.forward(x)`` beside ``D(real)`` and ``G(z)``: each call seen
    once (d_first, G 2 forwards, D 3), and a deep copy of G made after G's optimizer,
    called through its forward too, computes with its own weights (the script asserts
    it) and is not taken for G."""
    script = tmp_path / "direct.py"
    script.write_text(DIRECT_FORWARDS)
    out = tmp_path / "direct.json"
    ganstep("audit", script, "--json", out, cache=tmp_path, cwd=tmp_path)
    r = json.loads(out.read_text())
    assert r["schedule"] == "d_first()" and r["forwards"] == {"G": 2.0, "D": 3.0}


HIDDEN_LOOP = """
import torch
from torch import nn
{build}

def main():
    G, D, opt_g, opt_d = build()
    for i in range(3):
        loss_d = D.forward(G.forward(torch.randn(4, 2)).detach()).mean()
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        loss_g = -D.forward(G.forward(torch.randn(4, 2))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()


main()
"""

BUILD = """
def build():
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    return G, D, torch.optim.SGD(G.parameters(), lr=0.1), torch.optim.SGD(D.parameters(), lr=0.1)
"""


def test_modules_called_through_forward_in_functions_are_seen_or_named(tmp_path):
    """G and D made with their optimizers in a function of the script and called through
    ``.forward``: found among that function's names, audited (d_first, G 2 forwards).
    Made in a module the script imports, where the script's own code does not hold them
    yet: not seen, and the audit says so with what to do, instead of "before any
    optimizer step"."""
    script, out = tmp_path / "in_main.py", tmp_path / "in_main.json"
    script.write_text(HIDDEN_LOOP.format(build=BUILD))
    ganstep("audit", script, "--json", out, cache=tmp_path, cwd=tmp_path)
    r = json.loads(out.read_text())
    assert r["schedule"] == "d_first()" and r["forwards"] == {"G": 2.0, "D": 2.0}
    (tmp_path / "helper.py").write_text("import torch\nfrom torch import nn\n" + BUILD)
    script = tmp_path / "hidden.py"
    script.write_text(HIDDEN_LOOP.format(build="from helper import build\n"))
    proc = ganstep("audit", script, cache=tmp_path, cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert "after 6 optimizer step(s) on the parameters of modules the audit never saw" in (
        proc.stderr)  # fmt: skip
    assert "call model(x), or make the optimizer where the script holds the module" in (
        proc.stderr)  # fmt: skip


JOINED_CONDITIONS = """
import torch
from torch import nn

torch.manual_seed(0)
n_class, nz = 4, 6
G = nn.Sequential(nn.Linear(nz + n_class, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh(),
                  nn.Unflatten(1, (1, 4, 4)))
D = nn.Sequential(nn.Conv2d(1 + n_class, 8, 3, 1, 1), nn.LeakyReLU(0.2), nn.Flatten(),
                  nn.Linear(8 * 16, 1), nn.Sigmoid())
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
onehot = torch.eye(n_class)
bce = nn.BCELoss()
for i in range(4):
    x, y = torch.rand(16, 1, 4, 4) * 2 - 1, torch.randint(0, n_class, (16,))
    y_fill = onehot[y][:, :, None, None].expand(-1, -1, 4, 4)
    z = torch.randn(16, nz)
    y_gen = torch.randint(0, n_class, (16,))
    g_fill = onehot[y_gen][:, :, None, None].expand(-1, -1, 4, 4)
    fake = G(torch.cat([onehot[y_gen], z], 1))
    d_loss = (bce(D(torch.cat([y_fill, x], 1)), torch.ones(16, 1))
              + bce(D(torch.cat([g_fill, fake.detach()], 1)), torch.zeros(16, 1)))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(D(torch.cat([g_fill, fake], 1)), torch.ones(16, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
"""


@pytest.mark.parametrize("written", ["joined", "apart"])
def test_conditions_joined_first_or_given_apart_port(tmp_path, written):
    """The labels joined before z and their maps before the image (``torch.cat([c, z],
    1)``, ``torch.cat([maps, x], 1)``), or given apart (``G(z, c)``): either way the
    Step's wrappers join them in the script's order, 0 apart."""
    source = JOINED_CONDITIONS
    if written == "apart":
        source = source.replace("G = nn.Sequential(", "net = nn.Sequential(").replace(
            "opt_g = torch.optim.Adam(G.parameters()",
            "G = lambda z, c: net(torch.cat([c, z], 1))\nopt_g = torch.optim.Adam(net.parameters()",
        ).replace("G(torch.cat([onehot[y_gen], z], 1))", "G(z, onehot[y_gen])")  # fmt: skip
        source = source.replace("G = lambda z, c: net(torch.cat([c, z], 1))", (
            "class Net(nn.Module):\n    def __init__(self, net):\n        super().__init__()\n"
            "        self.net = net\n\n    def forward(self, z, c):\n"
            "        return self.net(torch.cat([c, z], 1))\n\n\nG = Net(net)"))  # fmt: skip
    port = port_of_source(tmp_path, written, source)
    assert port["max_difference"] == 0, port["notes"]
    code = port["code"]
    assert "FilledD(PairedD(D))" in code and "return self.D(torch.cat((c, x), 1))" in code
    assert ("JoinedG(G)" in code) == (written == "joined")
    assert "return self.G(torch.cat([c, z], 1))" in code or written == "apart"


def test_a_condition_of_d_unlike_gs_is_named(tmp_path):
    """D given a condition that is not G's, nor G's filled over the image: named as not
    mapped, not blamed on the losses."""
    source = (SCRIPTS / "generative_collections_cgan.py").read_text()
    other = source.replace("D_fake = self.D(G_, y_fill_)", "D_fake = self.D(G_, 1 - y_fill_)", 1)
    assert other.count("1 - y_fill_") == 1
    port = port_of_source(tmp_path, "cgan_other", other)
    assert port["code"] is None
    assert any("G is given a condition of shape (16, 3) and D, on G's fakes, one of shape "
               "(16, 3, 8, 8)" in note for note in port["notes"]), port["notes"]  # fmt: skip


def test_a_penalty_norm_under_an_epsilon_is_told_apart_in_float64(tmp_path):
    """EmilienDupont/wgan-gp's trainer takes its penalty's norm as sqrt(sum + 1e-12):
    float32 cannot tell WGANGP(10.0) from it, float64 can (it parted there, 2e-10). Its
    float64 repeat now tries WGANGP(10.0, eps=1e-12), which equals in both, and prints
    it."""
    proc, port = ported(tmp_path, "emilien_dupont_wgan_gp", flag=("--verify", 3))
    assert port["max_difference"] <= 1e-6, port["notes"]
    assert port["float64_difference"] <= 1e-12, port["notes"]
    assert "objective=WGANGP(10.0, eps=1e-12)," in port["code"]
    assert "schedule=d_first(d_steps=5, reuse_fake=False)" in port["code"]
    assert any("WGANGP(10.0) parts from it, WGANGP(10.0, eps=1e-12) equals it" in note
               for note in port["notes"])  # fmt: skip


def test_a_critic_stepped_k_times_on_one_batch_ports_with_that_batch_k_times(tmp_path):
    """Aladdin Persson's WGAN-GP (Machine-Learning-Collection) steps its critic 5 times
    on one real batch: every candidate stopped at "1 real batch(es) for 5". The Step is
    called with that batch 5 times (the printed call says so): 0 apart, float64 too,
    G's step on the last critic step's fakes as the script's."""
    proc, port = ported(tmp_path, "persson_wgan_gp", flag=("--verify", 3))
    assert port["max_difference"] == 0, port["notes"]
    assert port["float64_difference"] <= 1e-12
    code = port["code"]
    assert "gen, critic, opt_gen, opt_critic," in code
    assert "objective=WGANGP(10.0)" in code and "schedule=d_first(d_steps=5)," in code
    assert "step([real_batch] * 5)  (the script's one real batch for each of its 5" in code


def test_sngan_collections_ports_from_its_train_function(tmp_path):
    """pytorch-gan-collections' SNGAN loop as its author wrote it: its models, optimizers
    and LambdaLR schedulers are train()'s locals (the port printed the classes' names
    and opt_g, opt_d), D's layers use the hook-based spectral_norm, whose forward leaves
    a tensor of its graph on each (the audit's copies of D raised), G's step draws twice
    the D step's z (g_batch=2, never tried), and the rates decay at every step (the
    copies kept the first rate, and every candidate parted). The printed Step equals
    the loop with train()'s names, and the note says to keep the schedulers."""
    proc, port = ported(tmp_path, "sngan_collections", "--n_dis", 2, "--batch_size", 16,
                        "--z_dim", 8, flag=("--verify", 3))  # fmt: skip
    assert_verified(port)
    assert port["iterations"] == 3
    code = port["code"]
    assert "net_G, net_D, optim_G, optim_D," in code and "objective=Hinge()" in code
    assert "schedule=d_first(d_steps=2, reuse_fake=False, g_batch=2)" in code
    assert "of 2 times the D step's rows" in code
    assert not any("failed beside the script's names" in note for note in port["notes"])
    rates = [note for note in port["notes"] if "a learning-rate scheduler" in note]
    assert rates == [
        "the script changed its optimizers' settings between iterations (optim_G's lr "
        "0.0002 to 0.000199996; optim_D's lr 0.0002 to 0.000199996 over 3 iteration(s): a "
        "learning-rate scheduler); the copies stepped with the script's settings at each "
        "step: keep the script's scheduler steps where they are, between calls of step(...)"
    ]
    # its os.makedirs(logdir/sample) has no exist_ok: the float64 repeat stopped there
    # ("not repeated"); the folders the first run made are now taken as made
    assert port["float64_difference"] <= 1e-12, port["notes"]
    assert (tmp_path / "logs" / "SNGAN_CIFAR10_CNN" / "sample").is_dir()


MAKES_ITS_FOLDER = f"""{SCRIPT_HEAD}
import os
from pathlib import Path

os.makedirs("out/samples")
Path("out/checkpoints").mkdir()
for it in range(10):
    real = torch.randn(32, 2)
    opt_d.zero_grad()
    fake = G(torch.randn(32, 4))
    (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(32, 1)).backward()
    opt_g.step()
"""


def test_the_float64_repeat_takes_the_first_runs_folders_as_made(tmp_path):
    """A script making its folders without exist_ok (os.makedirs, Path.mkdir) ran once
    under the audit; its float64 repeat is given those folders as made, and verifies."""
    port = port_of_source(tmp_path, "makes_its_folder", MAKES_ITS_FOLDER, "--verify", "3")
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12, port["notes"]
    assert (tmp_path / "out" / "samples").is_dir() and (tmp_path / "out" / "checkpoints").is_dir()


def test_a_folder_there_before_the_audit_still_stops_the_script(tmp_path):
    """Only the first run's folders are taken as made: one there before the audit stops
    the script as it stops it without the audit."""
    (tmp_path / "out" / "samples").mkdir(parents=True)
    script, out = tmp_path / "makes_its_folder.py", tmp_path / "out.json"
    script.write_text(MAKES_ITS_FOLDER)
    proc = ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path,
                   check=False)  # fmt: skip
    assert proc.returncode != 0
    assert "FileExistsError" in proc.stdout + proc.stderr


SCHEDULED_INSIDE = f"""{SCRIPT_HEAD}
sched_d = torch.optim.lr_scheduler.ExponentialLR(opt_d, gamma=0.9)
for it in range(10):
    for _ in range(2):
        real = torch.randn(32, 2)
        opt_d.zero_grad()
        fake = G(torch.randn(32, 4)).detach()
        (bce(D(real), torch.ones(32, 1)) + bce(D(fake), torch.zeros(32, 1))).backward()
        opt_d.step()
        sched_d.step()
    opt_g.zero_grad()
    bce(D(G(torch.randn(32, 4))), torch.ones(32, 1)).backward()
    opt_g.step()
"""


def test_a_rate_changed_between_two_d_steps_of_an_iteration_is_named_not_ported(tmp_path):
    """A scheduler stepped after each of D's two steps changes D's rate inside what a
    Step does in one call: the port names it instead of trying Steps that part."""
    script, out = tmp_path / "inside.py", tmp_path / "inside.json"
    script.write_text(SCHEDULED_INSIDE)
    ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["order"] == "d_first"
    assert report["port"]["code"] is None and report["port"]["notes"] == [
        "opt_d's settings changed between two of its steps in iteration 0 (a learning-rate "
        "scheduler stepped inside the update); a Step's call steps with one setting: not "
        "mapped"
    ]


FROZEN_D_SIGMOID = """
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
bce = nn.BCELoss()
opt_g = torch.optim.Adam(G.parameters(), 1e-3)
opt_d = torch.optim.Adam(D.parameters(), 1e-3)
for it in range(50):
    real = torch.randn(32, 2) * 0.5 + 1
    for p in D.parameters():
        p.requires_grad = False
    gen = G(torch.randn(32, 8))
    loss_g = bce(D(gen), torch.ones(32, 1))
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    for p in D.parameters():
        p.requires_grad = True
    loss_d = bce(D(real), torch.ones(32, 1)) + bce(D(gen.detach()), torch.zeros(32, 1))
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
"""


def test_a_sigmoid_d_frozen_for_gs_step_ports_as_bce_on_its_probabilities(tmp_path):
    """A Keras-style loop: D's parameters switched off for G's step, G first, BCELoss on
    a Sigmoid D. The audit stops the script at a G step, D frozen: the port's look at
    D's output for a Sigmoid found no graph there, tried BCE on logits, and every
    candidate was refused or parted."""
    port = port_of_source(tmp_path, "frozen", FROZEN_D_SIGMOID, "--verify", 3)
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12
    assert "objective=NS(probabilities=True)" in port["code"]
    assert "schedule=simultaneous()" in port["code"]  # D judges the fakes of G before its step
    assert "D.requires_grad_(True)" in port["code"]


# a 2D G and D with Adam at DCGAN's settings, as the loops below begin
WIDE_HEAD = """
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
"""

HELPER_STEPS = """
# diegoalejogm/gans "Vanilla GAN" notebook (PyTorch): train_discriminator() and
# train_generator() called from the loop, the optimizer a parameter of each; made small
import torch
from torch import nn, optim
from torch.autograd.variable import Variable

torch.manual_seed(0)


class DiscriminatorNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        n_features, n_out = 16, 1
        self.hidden0 = nn.Sequential(
            nn.Linear(n_features, 32), nn.LeakyReLU(0.2), nn.Dropout(0.3)
        )
        self.hidden1 = nn.Sequential(nn.Linear(32, 16), nn.LeakyReLU(0.2), nn.Dropout(0.3))
        self.out = nn.Sequential(torch.nn.Linear(16, n_out), torch.nn.Sigmoid())

    def forward(self, x):
        return self.out(self.hidden1(self.hidden0(x)))


class GeneratorNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        n_features, n_out = 10, 16
        self.hidden0 = nn.Sequential(nn.Linear(n_features, 16), nn.LeakyReLU(0.2))
        self.out = nn.Sequential(nn.Linear(16, n_out), nn.Tanh())

    def forward(self, x):
        return self.out(self.hidden0(x))


def images_to_vectors(images):
    return images.view(images.size(0), 16)


def noise(size):
    return Variable(torch.randn(size, 10))


discriminator = DiscriminatorNet()
generator = GeneratorNet()
d_optimizer = optim.Adam(discriminator.parameters(), lr=0.0002)
g_optimizer = optim.Adam(generator.parameters(), lr=0.0002)
loss = nn.BCELoss()


def ones_target(size):
    return Variable(torch.ones(size, 1))


def zeros_target(size):
    return Variable(torch.zeros(size, 1))


def train_discriminator(optimizer, real_data, fake_data):
    N = real_data.size(0)
    optimizer.zero_grad()
    prediction_real = discriminator(real_data)
    error_real = loss(prediction_real, ones_target(N))
    error_real.backward()
    prediction_fake = discriminator(fake_data)
    error_fake = loss(prediction_fake, zeros_target(N))
    error_fake.backward()
    optimizer.step()
    return error_real + error_fake, prediction_real, prediction_fake


def train_generator(optimizer, fake_data):
    N = fake_data.size(0)
    optimizer.zero_grad()
    prediction = discriminator(fake_data)
    error = loss(prediction, ones_target(N))
    error.backward()
    optimizer.step()
    return error


data = torch.rand(160, 1, 4, 4) * 2 - 1
data_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(data, torch.zeros(160)), batch_size=16, shuffle=True
)
num_epochs = 2
for epoch in range(num_epochs):
    for n_batch, (real_batch, _) in enumerate(data_loader):
        N = real_batch.size(0)
        real_data = Variable(images_to_vectors(real_batch))
        fake_data = generator(noise(N)).detach()
        d_error, d_pred_real, d_pred_fake = train_discriminator(d_optimizer, real_data, fake_data)
        fake_data = generator(noise(N))
        g_error = train_generator(g_optimizer, fake_data)
"""


def test_steps_taken_in_helper_functions_are_named_where_the_loop_calls_them(tmp_path):
    """The loop calls train_discriminator(d_optimizer, ...) and train_generator(
    g_optimizer, ...): the port named D's optimizer ``optimizer``, the parameter of the
    helper in which D's first step ran. The names are now the loop's, whose frame holds
    both first steps."""
    port = port_of_source(tmp_path, "helpers", HELPER_STEPS)
    assert port["max_difference"] == 0, port["notes"]
    assert "generator, discriminator, g_optimizer, d_optimizer," in port["code"]
    assert not any("failed beside the script's names" in note for note in port["notes"])


G_TWICE = f"""{WIDE_HEAD}
bce = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
for it in range(20):
    real = torch.randn(32, 2) * 0.5 + 1
    z = torch.randn(32, 8)
    fake = G(z)
    opt_d.zero_grad()
    d_loss = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    d_loss.backward()
    opt_d.step()
    # Run g_optim twice to make sure that d_loss does not go to zero (different from paper)
    for _ in range(2):
        opt_g.zero_grad()
        g_loss = bce(D(G(z)), ones)
        g_loss.backward()
        opt_g.step()
"""


@pytest.mark.parametrize("batchnorm", [False, True])
def test_g_steps_on_the_d_steps_z_port_to_g_steps_share_z(tmp_path, batchnorm):
    """DCGAN-tensorflow's G optimizer run twice on the D step's z, in PyTorch: no Step
    took a second G step on that z ("no Step found"). With a G that keeps no statistics
    the first G step reuses the D step's fakes; with BatchNorm in G, whose statistics
    count each forward, it makes them anew as the script does."""
    source = G_TWICE
    if batchnorm:
        norm = "nn.Linear(8, 32, bias=False), nn.BatchNorm1d(32), nn.ReLU()"
        source = source.replace("nn.Linear(8, 32), nn.ReLU()", norm)
    port = port_of_source(tmp_path, "g_twice", source)
    assert_verified(port)
    fresh = "reuse_fake=False, " if batchnorm else ""
    assert f"schedule=d_first(g_steps=2, {fresh}g_steps_share_z=True)" in port["code"]


R1_EACH_STEP = f"""{WIDE_HEAD}
gamma = 10.0
for it in range(50):
    real = (torch.randn(32, 2) * 0.5 + 1).requires_grad_(True)
    fake = G(torch.randn(32, 8))
    d_real = D(real)
    d_fake = D(fake.detach())
    loss_d = F.softplus(-d_real).mean() + F.softplus(d_fake).mean()
    grad, = torch.autograd.grad(d_real.sum(), real, create_graph=True)
    r1 = grad.pow(2).sum(1).mean()
    opt_d.zero_grad()
    (loss_d + gamma / 2 * r1).backward()
    opt_d.step()
    loss_g = F.softplus(-D(fake)).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
"""


# the same R1 on a D forward of its own, after the loss's on the same batch
R1_OWN_FORWARD = R1_EACH_STEP.replace(
    "(torch.randn(32, 2) * 0.5 + 1).requires_grad_(True)", "torch.randn(32, 2) * 0.5 + 1"
).replace(
    "grad, = torch.autograd.grad(d_real.sum(), real, create_graph=True)",
    "grad, = torch.autograd.grad(D(real.requires_grad_(True)).sum(), real, create_graph=True)",
)


@pytest.mark.parametrize("source", [R1_EACH_STEP, R1_OWN_FORWARD], ids=["one", "own"])
def test_r1_at_each_d_step_ports_to_an_objective_with_r1(tmp_path, source):
    """R1 as Mescheder et al. and most small scripts write it: the real batch made to
    require grad, D's gradient there taken with create_graph in D's step (on the loss's
    D forward, or on one of its own). The port took that batch for a penalty's points,
    found D given no real batch, and stopped; WGAN-GP was the only penalty it tried."""
    assert source.count("requires_grad_(True)") == 1
    port = port_of_source(tmp_path, "r1", source, "--verify", 3)
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12
    assert "objective=NS(r1=10.0)" in port["code"] and "schedule=d_first()" in port["code"]
    assert "R1 on the real batch in D's step" in port["code"]


TRAINER_CLASS = """
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


class Trainer:
    def __init__(self):
        self.generator = Generator()
        self.discriminator = Discriminator()
        self.g_optim = torch.optim.Adam(self.generator.parameters(), 2e-4, betas=(0.5, 0.999))
        self.d_optim = torch.optim.Adam(self.discriminator.parameters(), 2e-4, betas=(0.5, 0.999))
        self.criterion = nn.BCEWithLogitsLoss()

    def train_step(self, real):
        n = real.size(0)
        fake = self.generator(torch.randn(n, 8))
        self.d_optim.zero_grad()
        d_loss = self.criterion(self.discriminator(real), torch.ones(n, 1)) + \
            self.criterion(self.discriminator(fake.detach()), torch.zeros(n, 1))
        d_loss.backward()
        self.d_optim.step()
        self.g_optim.zero_grad()
        g_loss = self.criterion(self.discriminator(fake), torch.ones(n, 1))
        g_loss.backward()
        self.g_optim.step()
        return d_loss.item(), g_loss.item()

    def fit(self, steps):
        for _ in range(steps):
            self.train_step(torch.randn(32, 2) * 0.5 + 1)


if __name__ == "__main__":
    torch.manual_seed(0)
    Trainer().fit(100)
"""


def test_a_trainer_class_loop_ports_with_the_names_its_method_sees(tmp_path):
    """G, D and their optimizers held as a trainer object's attributes, the update in its
    method: the port printed the classes' names and opt_g, opt_d, and its own run of the
    code beside the script's names failed. It now names them as the method does."""
    port = port_of_source(tmp_path, "trainer", TRAINER_CLASS)
    assert_verified(port)
    assert "self.generator, self.discriminator, self.g_optim, self.d_optim," in port["code"]
    assert not any("failed beside the script's names" in note for note in port["notes"])


SMOOTHED_LABELS = """
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
np.random.seed(0)  # (the port's float32 difference depends on the draws)


class Discriminator(nn.Module):
    def __init__(self, input_size, hidden_dim, output_size):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_dim * 4)
        self.fc2 = nn.Linear(hidden_dim * 4, hidden_dim * 2)
        self.fc3 = nn.Linear(hidden_dim * 2, hidden_dim)
        self.fc4 = nn.Linear(hidden_dim, output_size)

    def forward(self, x):
        x = x.view(-1, 16)
        x = F.leaky_relu(self.fc1(x), 0.2)
        x = F.leaky_relu(self.fc2(x), 0.2)
        x = F.leaky_relu(self.fc3(x), 0.2)
        return self.fc4(x)


class Generator(nn.Module):
    def __init__(self, input_size, hidden_dim, output_size):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, hidden_dim * 2)
        self.fc3 = nn.Linear(hidden_dim * 2, hidden_dim * 4)
        self.fc4 = nn.Linear(hidden_dim * 4, output_size)

    def forward(self, x):
        x = F.leaky_relu(self.fc1(x), 0.2)
        x = F.leaky_relu(self.fc2(x), 0.2)
        x = F.leaky_relu(self.fc3(x), 0.2)
        return torch.tanh(self.fc4(x))


def real_loss(D_out, smooth=False):
    batch_size = D_out.size(0)
    if smooth:
        labels = torch.ones(batch_size) * 0.9
    else:
        labels = torch.ones(batch_size)
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(D_out.squeeze(), labels)
    return loss


def fake_loss(D_out):
    batch_size = D_out.size(0)
    labels = torch.zeros(batch_size)
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(D_out.squeeze(), labels)
    return loss


z_size = 8
D = Discriminator(16, 8, 1)
G = Generator(z_size, 8, 16)
d_optimizer = optim.Adam(D.parameters(), 0.002)
g_optimizer = optim.Adam(G.parameters(), 0.002)
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.rand(320, 16), torch.zeros(320)), batch_size=32)
D.train()
G.train()
for epoch in range(100):
    for batch_i, (real_images, _) in enumerate(train_loader):
        batch_size = real_images.size(0)
        real_images = real_images * 2 - 1
        d_optimizer.zero_grad()
        D_real = D(real_images)
        d_real_loss = real_loss(D_real, smooth=True)
        z = np.random.uniform(-1, 1, size=(batch_size, z_size))
        z = torch.from_numpy(z).float()
        fake_images = G(z)
        D_fake = D(fake_images)
        d_fake_loss = fake_loss(D_fake)
        d_loss = d_real_loss + d_fake_loss
        d_loss.backward()
        d_optimizer.step()
        g_optimizer.zero_grad()
        z = np.random.uniform(-1, 1, size=(batch_size, z_size))
        z = torch.from_numpy(z).float()
        fake_images = G(z)
        D_fake = D(fake_images)
        g_loss = real_loss(D_fake)
        g_loss.backward()
        g_optimizer.step()
"""


def test_one_sided_label_smoothing_ports_to_ns_with_its_real_label(tmp_path):
    """Udacity's GAN notebook's losses and steps (``real_loss(D_real, smooth=True)``:
    BCEWithLogitsLoss against 0.9; z from numpy's uniform(-1, 1)), with models without
    its Dropout (see the next test for them). No objective tried took a real label below
    1; the z printed was torch.randn for a uniform z. With a D that draws nothing, the
    order of its forwards and G's call is left as the default."""
    port = port_of_source(tmp_path, "smoothed", SMOOTHED_LABELS)
    assert_verified(port)
    assert "objective=NS(real_label=0.9, bce_with_logits=True)" in port["code"], port["code"]
    assert "schedule=d_first(reuse_fake=False)" in port["code"]
    assert "latent=lambda n: torch.rand(n, 8) * 2 - 1," in port["code"]
    assert "d_order" not in port["code"]


def test_label_smoothing_reaching_gs_target_ports_to_ns_with_g_label(tmp_path):
    """The DCGAN example with ``real_label = 0.9``: its G step fills the same label
    (``label.fill_(real_label)``), so G is trained against 0.9 too. No objective tried
    moved G's target ("not mapped"); NS(g_label=0.9) does, 0 apart in float32 and
    float64."""
    source = (SCRIPTS / "dcgan_example.py").read_text()
    assert source.count("real_label = 1.0\n") == 1
    port = port_of_source(tmp_path, "smoothed", source.replace("real_label = 1.0\n",
                          "real_label = 0.9\n"), "--verify", "2",
                          script_args=("--niter", "1"))  # fmt: skip
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    assert "objective=NS(probabilities=True, real_label=0.9, g_label=0.9)," in port["code"]


def test_two_sided_label_smoothing_ports_to_ns_with_fake_label(tmp_path):
    """The DCGAN example with ``real_label = 0.9`` and ``fake_label = 0.1``, as its
    forks set them: D's targets 0.9 and 0.1, G's 0.9 (it fills ``real_label``). No
    objective tried moved D's target for the fakes; NS(fake_label=0.1) does, 0 apart in
    float32 and float64."""
    source = (SCRIPTS / "dcgan_example.py").read_text()
    assert source.count("real_label = 1.0\nfake_label = 0.0\n") == 1
    forked = source.replace("real_label = 1.0\nfake_label = 0.0\n",
                            "real_label = 0.9\nfake_label = 0.1\n")  # fmt: skip
    port = port_of_source(tmp_path, "two_sided", forked, "--verify", "2",
                          script_args=("--niter", "1"))  # fmt: skip
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    assert ("objective=NS(probabilities=True, real_label=0.9, g_label=0.9, fake_label=0.1),"
            in port["code"]), port["code"]  # fmt: skip


def test_rasbts_label_smoothing_notebook_ports_with_its_rescaled_batch_named(tmp_path):
    """rasbt's gan-conv-smoothing notebook: G and D against ``valid*0.9``, G's step
    first and D's on its fakes, a BatchNorm D forwarded three times, D's loss halved.
    The port prints NS with both labels (BCEWithLogitsLoss's form, 0 apart), and names
    the batch D was given made from the DataLoader's (``(features - 0.5) * 2.0`` in the
    loop, D called through the model's ``discriminator_forward``, where the audit cannot
    read the change from D's call): read from its values, x * 2 - 1. Without the note a
    user would give the Step the DataLoader's batch in [0, 1)."""
    proc, port = ported(tmp_path, "rasbt_gan_conv_smoothing", flag=("--verify", 3))
    assert port["max_difference"] == 0, port["notes"]
    code = port["code"]
    assert "objective=NS(real_label=0.9, g_label=0.9, bce_with_logits=True)," in code
    assert "schedule=simultaneous()," in code and "d_scale=0.5," in code
    assert 'd_forwards="loop",' in code
    assert "latent=lambda n: torch.rand(n, 10) * 2 - 1," in code
    [made] = [n for n in port["notes"] if n.startswith("D's real batch was made from")]
    assert "read from its values as `x * 2 - 1` (D's call: rasbt_gan_conv_smoothing.py" in made
    assert "so give step(...) the batch made so" in made
    # its float64 repeat keeps the losses float32 (valid and fake are .float()): named
    [repeat] = [n for n in port["notes"] if n.startswith("float64 (the script run again")]
    assert "not equal to 1e-12" in repeat and port["float64_difference"] is None
    assert "a backward of a float32 loss at rasbt_gan_conv_smoothing.py:" in repeat


def test_a_real_batch_made_otherwise_in_unread_lines_is_named_as_none_of_the_loaders(
    tmp_path,
):
    """rasbt's notebook with instance noise added where it rescales its batch: D's call
    (in ``discriminator_forward``) does not show the change and its values are no
    rescaling of the DataLoader's. The port is verified on the batch as D took it, so
    the note says the batch is none of the DataLoader's, for step(...) to be given it."""
    source = (SCRIPTS / "rasbt_gan_conv_smoothing.py").read_text()
    rescaled = "        features = (features - 0.5) * 2.0\n"
    assert source.count(rescaled) == 1
    noisy = rescaled[:-1] + " + 0.05 * torch.randn_like(features)\n"
    port = port_of_source(tmp_path, "noisy", source.replace(rescaled, noisy))
    assert port["max_difference"] == 0, port["notes"]
    [made] = [n for n in port["notes"] if n.startswith("D's real batch is none of")]
    assert "the DataLoader's tensors, made in lines the audit cannot read" in made
    assert "(noisy.py:" in made and "so give step(...) the batch made so" in made


@pytest.mark.parametrize(("penalty", "printed"), [
    ("(torch.max(torch.zeros_like(grad_norm), grad_norm - 1) ** 2).mean()", "one_sided=True"),
    ("(grad_norm**2).mean()", "center=0.0"),
])  # fmt: skip
def test_lynnhos_lipschitz_and_zero_centered_penalties_port(tmp_path, penalty, printed):
    """LynnHo's train.py with its wgan-lp and 0-gp penalties (its gradient_penalty.py's
    ``_lipschitz_penalty`` and ``_zero_mean_gp``): the port tried the two-sided penalty
    alone ("not mapped"); where none equals it tries each WGAN-GP candidate's one-sided
    and zero-centered forms. D's weights are doubled so that its gradients' norms are
    above 1 at some interpolates and below at others (where all are below, every
    one-sided form's penalty is 0 and the port says they tie)."""
    source = (SCRIPTS / "lynnho_wgan_gp.py").read_text()
    two_sided = "    gp = ((grad_norm - 1) ** 2).mean()\n"
    gain = "D_optimizer = torch.optim.Adam("
    assert source.count(two_sided) == 1 and source.count(gain) == 1
    source = source.replace(two_sided, f"    gp = {penalty}\n").replace(
        gain, f"with torch.no_grad():\n    for p in D.parameters():\n        p.mul_(2.0)\n{gain}"
    )
    port = port_of_source(tmp_path, "lynnho", source, "--verify", "3")
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    assert f'objective=WGANGP(10.0, interpolate="difference", {printed}),' in port["code"]


def test_a_real_batch_made_before_an_augmentation_in_unread_lines_is_named(tmp_path):
    """rasbt's notebook with instance noise added in its discriminator_forward, on every
    batch D reads: the port prints it as augment=, and the Step is given each real batch
    before that change, which the script made from the DataLoader's (x * 2 - 1): no
    note said so while an augmentation was printed; now the batch is named."""
    source = (SCRIPTS / "rasbt_gan_conv_smoothing.py").read_text()
    call = "        pred = model.discriminator(img)\n"
    assert source.count(call) == 1
    noised = call.replace("(img)", "(img + 0.05 * torch.randn_like(img))")
    port = port_of_source(tmp_path, "noised", source.replace(call, noised))
    assert port["max_difference"] == 0, port["notes"]
    assert "augment=lambda x: x + 0.05 * torch.randn_like(x)," in port["code"]
    [made] = [n for n in port["notes"] if n.startswith("the real batch that the script's")]
    assert "change of D's batches (augment= below) was applied to was made from" in made
    assert "read from its values as `x * 2 - 1`" in made and "give step(...) the batch" in made


def test_torchs_parametrizations_are_the_weights_not_modules_called(tmp_path):
    """The DCGAN example with D's layers under torch.nn.utils.parametrizations'
    spectral_norm (the API torch recommends over the hook-based one) and G's first under
    its weight_norm: each read of a parametrized weight runs a ParametrizationList,
    which the audit took for calls of modules of their own, so D's optimizer trained
    "other" modules and the script "ran no complete iteration". Those reads are the
    weights' now: D is read as stateful (its power iteration's vectors), and the port
    equals the script in float32 and float64."""
    source = (SCRIPTS / "dcgan_example.py").read_text()
    d_layers = "nn.Linear(nx, nh), nn.LeakyReLU(0.2, inplace=True), nn.Linear(nh, 1), nn.Sigmoid()"
    g_layer = "nn.Sequential(nn.Linear(nz, nh), nn.ReLU(True)"
    assert source.count(d_layers) == 1 and source.count(g_layer) == 1
    sn, wn = (f"nn.utils.parametrizations.{f}" for f in ("spectral_norm", "weight_norm"))
    spectral = d_layers.replace("nn.Linear(nx, nh)", f"{sn}(nn.Linear(nx, nh))")
    spectral = spectral.replace("nn.Linear(nh, 1)", f"{sn}(nn.Linear(nh, 1))")
    weight = g_layer.replace("nn.Linear(nz, nh)", f"{wn}(nn.Linear(nz, nh))")
    source = source.replace(d_layers, spectral).replace(g_layer, weight)
    out = tmp_path / "parametrized.json"
    script = tmp_path / "parametrized.py"
    script.write_text(source)
    proc = ganstep("audit", script, "--port", "--verify", "2", "--json", out, "--", "--niter", 1,
                   cache=tmp_path, cwd=tmp_path)  # fmt: skip
    assert "D: stateful (a forward changes main.0.parametrizations.weight.0._u" in proc.stdout
    port = json.loads(out.read_text())["port"]
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12, port["notes"]
    assert "netG, netD, optimizerG, optimizerD," in port["code"]


def test_a_lazy_module_materialized_by_a_dry_run_is_audited_and_ported(tmp_path):
    """The DCGAN example with D's first layer an nn.LazyLinear, given its shape by a
    forward on a dummy batch before the optimizers are made (as torch asks): the audit
    hooked and copied D's parameters at that first call, while they had no values, and
    the script failed under it (ValueError: Attempted to use an uninitialized
    parameter). They are followed, and D's state taken, once the first forward has
    given them values; the port equals the script."""
    source = (SCRIPTS / "dcgan_example.py").read_text()
    layer, made = "nn.Linear(nx, nh), nn.LeakyReLU(0.2", "netD = Discriminator()\n"
    assert source.count(layer) == 1 and source.count(made) == 1
    source = source.replace(layer, layer.replace("nn.Linear(nx, nh)", "nn.LazyLinear(nh)"))
    source = source.replace(made, f"{made}netD(torch.zeros(2, nx))  # its shape, for LazyLinear\n")
    port = port_of_source(tmp_path, "lazy", source, "--verify", "2", script_args=("--niter", "1"))
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    assert "netG, netD, optimizerG, optimizerD," in port["code"]


def test_yunjeys_tutorial_gan_ports_with_its_flattened_batch_named(tmp_path):
    """yunjey/pytorch-tutorial's GAN: D's real forward first, G's fakes not detached in
    D's step (reset_grad zeroes G's gradients), G's step on a fresh z, BCELoss on a
    Sigmoid D. Its batch is flattened where it is written over (``images =
    images.reshape(batch_size, -1).to(device)``), which the audit does not read as a
    change from D's call: read from the values, it is named for step(...)."""
    proc, port = ported(tmp_path, "yunjey_gan", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert "G, D, g_optimizer, d_optimizer," in code
    assert "objective=NS(probabilities=True)," in code
    assert "schedule=d_first(reuse_fake=False)," in code
    [made] = [n for n in port["notes"] if n.startswith("D's real batch was made from")]
    assert "read from its values as `x.reshape(len(x), -1)` (D's call: yunjey_gan.py:" in made
    assert "a whole backward through G ran in D's step" in proc.stdout


HINGE_V1 = """def get_hinge_v1_losses_fn():
    def d_loss_fn(r_logit, f_logit):
        r_loss = torch.max(1 - r_logit, torch.zeros_like(r_logit)).mean()
        f_loss = torch.max(1 + f_logit, torch.zeros_like(f_logit)).mean()
        return r_loss, f_loss

    def g_loss_fn(f_logit):
        f_loss = torch.max(1 - f_logit, torch.zeros_like(f_logit)).mean()
        return f_loss

    return d_loss_fn, g_loss_fn
"""


@pytest.mark.parametrize("gain", [1.0, 3.0])
def test_lynnhos_hinge_v1_ports_to_g_hinge(tmp_path, gain):
    """LynnHo's train.py with --adversarial_loss_mode hinge_v1 and no penalty: G's loss a
    hinge too (its torchprob/gan/loss.py). Where every fake scores below 1 (D as made)
    Hinge() moves the weights as it does, and the losses the script backpropagated tell
    the two apart (G's hinge is 1 above -mean); with D's weights tripled, fakes score
    above 1 and only Hinge(g_hinge=True) equals it."""
    source = (SCRIPTS / "lynnho_wgan_gp.py").read_text()
    wgan = source[source.index("def get_wgan_losses_fn():") : source.index("\n\ndef _gradient")]
    penalty = "    gp = _gradient_penalty(functools.partial(D), x_real, x_fake)\n"
    optimizer = "D_optimizer = torch.optim.Adam("
    assert source.count(penalty) == 1 and source.count(optimizer) == 1
    source = (source.replace(wgan, HINGE_V1.rstrip("\n"))
              .replace("get_wgan_losses_fn()", "get_hinge_v1_losses_fn()")
              .replace(penalty, "    gp = torch.tensor(0, dtype=x_real.dtype)\n")
              .replace(optimizer, f"with torch.no_grad():\n    for p in D.parameters():\n"
                                  f"        p.mul_({gain})\n{optimizer}"))  # fmt: skip
    port = port_of_source(tmp_path, "hinge_v1", source, "--verify", "3")
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    assert "objective=Hinge(g_hinge=True)," in port["code"], port["code"]
    told = [n for n in port["notes"] if "candidates equal the script in its models" in n]
    assert bool(told) == (gain == 1.0), port["notes"]


def with_dropout(source: str) -> str:
    """The notebook's Discriminator and Generator as it writes them: Dropout(0.3) after
    each hidden layer's leaky ReLU."""
    for last in ("nn.Linear(hidden_dim, output_size)", "nn.Linear(hidden_dim * 4, output_size)"):
        layer = f"self.fc4 = {last}\n"
        source = source.replace(layer, f"{layer}        self.dropout = nn.Dropout(0.3)\n")
    return re.sub(r"( +)(x = F\.leaky_relu\(self\.fc\d\(x\), 0\.2\)\n)",
                  r"\1\2\1x = self.dropout(x)\n", source)  # fmt: skip


def test_udacitys_notebook_with_its_dropout_ports_to_real_g_fake(tmp_path):
    """The notebook with its models' Dropout: D's real forward draws its masks, then G
    its own, then D on the fakes. No Step made its fakes after D's real forward, and
    every candidate parted ("no Step found"); the audit names the order, and the port
    prints d_order="real_g_fake", equal to the script."""
    source = with_dropout(SMOOTHED_LABELS)
    assert source.count("self.dropout(x)") == 6
    script, out = tmp_path / "notebook.py", tmp_path / "notebook.json"
    script.write_text(source)
    proc = ganstep("audit", script, "--port", "--json", out, cache=tmp_path, cwd=tmp_path)
    assert "calling G between its forwards" in proc.stdout
    assert 'd_order="real_g_fake"' in proc.stdout.split("ganstep audit --port")[0]
    report = json.loads(out.read_text())
    assert report["d_g_between"] is True and report["d_order"] == "real_first"
    port = report["port"]
    assert_verified(port)
    assert "objective=NS(real_label=0.9, bce_with_logits=True)" in port["code"], port["code"]
    assert "schedule=d_first(reuse_fake=False)" in port["code"]
    assert 'd_order="real_g_fake",  # D\'s step calls G between its forwards' in port["code"]


LIGHTNING_EXAMPLE = """
# Lightning's GAN example (examples/pytorch/domain_templates/
# generative_adversarial_net.py), GAN.training_step with manual optimization, as plain
# PyTorch: toggle_optimizer as requires_grad switches, self(z) as generator(z); its
# models small, with Dropout
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
latent_dim = 8


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(latent_dim, 32), nn.LeakyReLU(0.2),
                                   nn.Dropout(0.2), nn.Linear(32, 2), nn.Tanh())

    def forward(self, z):
        return self.model(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Dropout(0.3),
                                   nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, x):
        return self.model(x)


generator, discriminator = Generator(), Discriminator()
opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))


def adversarial_loss(y_hat, y):
    return F.binary_cross_entropy(y_hat, y)


for batch_idx in range(30):
    imgs = torch.randn(16, 2) * 0.5 + 1
    z = torch.randn(imgs.shape[0], latent_dim)
    z = z.type_as(imgs)
    # train generator
    for p in discriminator.parameters():
        p.requires_grad_(False)
    generated_imgs = generator(z)
    valid = torch.ones(imgs.size(0), 1)
    g_loss = adversarial_loss(discriminator(generator(z)), valid)
    g_loss.backward()
    opt_g.step()
    opt_g.zero_grad()
    for p in discriminator.parameters():
        p.requires_grad_(True)
    # train discriminator
    for p in generator.parameters():
        p.requires_grad_(False)
    valid = torch.ones(imgs.size(0), 1)
    real_loss = adversarial_loss(discriminator(imgs), valid)
    fake = torch.zeros(imgs.size(0), 1)
    fake_loss = adversarial_loss(discriminator(generator(z).detach()), fake)
    d_loss = (real_loss + fake_loss) / 2
    d_loss.backward()
    opt_d.step()
    opt_d.zero_grad()
    for p in generator.parameters():
        p.requires_grad_(True)
"""


def test_lightnings_gan_example_with_dropout_ports_to_g_first_real_g_fake(tmp_path):
    """G steps first (its logging call G(z), then G(z) again for the loss), then D on the
    real batch, then G(z) on the same z, then D on the fakes: with Dropout in G and D,
    g_first(reuse_z=True) with d_order="real_g_fake", 0 apart."""
    port = port_of_source(tmp_path, "lightning_example", LIGHTNING_EXAMPLE)
    assert port["max_difference"] == 0, port["notes"]
    assert "schedule=g_first(reuse_z=True)" in port["code"]
    assert 'd_order="real_g_fake",' in port["code"]
    assert "d_scale=0.5" in port["code"]


def test_lightnings_gan_example_as_written_ports_and_its_note_holds(tmp_path):
    """Lightning's example itself, under lightning.Trainer: its losses are BCE with
    logits, and its G's Linear bias before BatchNorm has a gradient of rounding alone, so
    the softplus NS parted (1e-5) and no Step was found; its optimizers were printed as
    ``opt_g``, names of configure_optimizers' (NameError beside training_step's names).
    Now ``NS(bce_with_logits=True)``, 0 apart, with ``opt_g.optimizer`` (the
    LightningOptimizer's), and a note that GANModule runs the Step: the note's recipe,
    the printed options as its step_options, trains the example's models as its fit does."""
    proc, port = ported(tmp_path, "lightning_gan_example", flag=("--verify", 3))
    assert port["max_difference"] == 0 and port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert "self.generator, self.discriminator, opt_g.optimizer, opt_d.optimizer," in code
    assert "objective=NS(bce_with_logits=True)" in code and "d_scale=0.5" in code
    assert "schedule=g_first(reuse_z=True)" in code
    assert not any("failed beside" in n for n in port["notes"])
    note = next(n for n in port["notes"] if "LightningModule" in n)
    assert "ganstep.lightning.GANModule" in note and "self.generator and self.discriminator" in note
    # the note's recipe: a GANModule on the example's models, the printed Step's options
    import importlib.util

    from ganstep.lightning import GANModule

    spec = importlib.util.spec_from_file_location("lightning_gan_example",
                                                  SCRIPTS / "lightning_gan_example.py")  # fmt: skip
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    options = _printed_options(code, vars(example))

    class Ported(GANModule):
        def __init__(self, G, D):
            super().__init__()
            self.G, self.D = G, D

        def configure_optimizers(self):
            adam = lambda m: torch.optim.Adam(m.parameters(), lr=2e-4, betas=(0.5, 0.999))  # noqa: E731
            return adam(self.G), adam(self.D)

        def step_options(self):
            return options

    fitted = []
    for ganstep_module in (False, True):
        torch.manual_seed(0)
        model = example.GAN()
        data = example.loader()
        fitting = Ported(model.generator, model.discriminator) if ganstep_module else model
        example.trainer(2).fit(fitting, data)
        opts = fitting.optimizers(use_pl_optimizer=False)
        fitted.append([*model.generator.parameters(), *model.discriminator.parameters(),
                       *(v for o in opts for st in o.state_dict()["state"].values()
                         for v in st.values())])  # fmt: skip
    assert fitting.iterations == 16
    assert all(torch.equal(a, b) for a, b in zip(*fitted, strict=True))


def test_a_loop_under_accelerate_ports_and_its_note_holds(tmp_path):
    """G, D and both optimizers given to ``accelerator.prepare``, as Accelerate's README
    gives its model: the Step names the AcceleratedOptimizers' ``.optimizer``, and a note
    says ganstep.accelerate.prepare builds it from the models as they were before. The
    note's recipe (the script's lines before its prepare, then ganstep's prepare with the
    printed options, a step per batch) trains as the script does, over its 16 iterations."""
    proc, port = ported(tmp_path, "accelerate_loop", flag=("--verify", 3))
    assert port["max_difference"] <= 1e-6 and port["float64_difference"] <= 1e-12, port["notes"]
    code = port["code"]
    assert "G, D, opt_g.optimizer, opt_d.optimizer," in code
    note = next(n for n in port["notes"] if "Accelerate" in n)
    assert "ganstep.accelerate.prepare(accelerator, G, D, opt_g, opt_d, loader" in note
    import runpy

    from ganstep.accelerate import prepare

    script = SCRIPTS / "accelerate_loop.py"
    theirs = runpy.run_path(str(script))
    source = script.read_text()
    names: dict = {}
    exec(source[: source.index("G, D, opt_g, opt_d, data = accelerator.prepare")], names)
    options = _printed_options(code, names)
    step, loader = prepare(names["accelerator"], names["G"], names["D"], names["opt_g"],
                           names["opt_d"], names["data"], **options)  # fmt: skip
    for _ in range(2):
        for real in loader:
            step(real)
    for mine, script_side in ((names["G"], theirs["G"]), (names["D"], theirs["D"])):
        for a, b in zip(mine.parameters(), script_side.parameters(), strict=True):
            assert torch.allclose(a, b, rtol=0, atol=1e-6)


def _printed_options(code: str, names: dict) -> dict:
    """The keyword arguments of the printed ``Step(...)`` call, evaluated among
    ``names`` and the printed code's imports."""
    call = next(n for n in ast.walk(ast.parse(code))
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Step")  # fmt: skip
    names = dict(names)
    exec("\n".join(line for line in code.splitlines() if line.startswith("from ")), names)
    return {k.arg: eval(ast.unparse(k.value), names) for k in call.keywords}


SATURATING_MINIMAX = """
# Goodfellow et al.'s minimax losses as tutorials write them: raw logs of a Sigmoid D,
# G's loss the saturating log(1 - D(G(z)))
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
opt_g = torch.optim.SGD(G.parameters(), lr=0.01, momentum=0.9)
opt_d = torch.optim.SGD(D.parameters(), lr=0.01, momentum=0.9)
for it in range(20):
    x = torch.randn(32, 2) * 0.5 + 1
    z = torch.randn(32, 8)
    d_loss = -torch.mean(torch.log(D(x)) + torch.log(1 - D(G(z).detach())))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    z = torch.randn(32, 8)
    g_loss = torch.mean(torch.log(1 - D(G(z))))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
"""


def test_the_saturating_minimax_loss_ports_to_minimax(tmp_path):
    """No candidate took G's saturating loss ("no Step found"); Minimax is tried."""
    port = port_of_source(tmp_path, "minimax", SATURATING_MINIMAX)
    assert_verified(port)
    assert "objective=Minimax(probabilities=True)" in port["code"]


BOUNDARY_SEEKING = """
# eriklindernoren/PyTorch-GAN implementations/bgan/bgan.py, its models made small and
# random images in place of MNIST
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

torch.manual_seed(0)
np.random.seed(0)
latent_dim = 8
img_shape = (1, 4, 4)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        self.model = nn.Sequential(
            *block(latent_dim, 16, normalize=False), *block(16, 32),
            nn.Linear(32, int(np.prod(img_shape))), nn.Tanh()
        )

    def forward(self, z):
        img = self.model(z)
        return img.view(img.shape[0], *img_shape)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(int(np.prod(img_shape)), 32), nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(32, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 1), nn.Sigmoid()
        )

    def forward(self, img):
        return self.model(img.view(img.shape[0], -1))


def boundary_seeking_loss(y_pred, y_true):
    return 0.5 * torch.mean((torch.log(y_pred) - torch.log(1 - y_pred)) ** 2)


discriminator_loss = torch.nn.BCELoss()
generator = Generator()
discriminator = Discriminator()
data = torch.rand(64, *img_shape) * 2 - 1
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(data, torch.zeros(64)), batch_size=16, shuffle=True
)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=0.0002, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=0.0002, betas=(0.5, 0.999))
Tensor = torch.FloatTensor
for epoch in range(3):
    for i, (imgs, _) in enumerate(dataloader):
        valid = Variable(Tensor(imgs.shape[0], 1).fill_(1.0), requires_grad=False)
        fake = Variable(Tensor(imgs.shape[0], 1).fill_(0.0), requires_grad=False)
        real_imgs = Variable(imgs.type(Tensor))
        optimizer_G.zero_grad()
        z = Variable(Tensor(np.random.normal(0, 1, (imgs.shape[0], latent_dim))))
        gen_imgs = generator(z)
        g_loss = boundary_seeking_loss(discriminator(gen_imgs), valid)
        g_loss.backward()
        optimizer_G.step()
        optimizer_D.zero_grad()
        real_loss = discriminator_loss(discriminator(real_imgs), valid)
        fake_loss = discriminator_loss(discriminator(gen_imgs.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()
"""


def test_the_boundary_seeking_loss_ports_to_bgan(tmp_path):
    """bgan.py's G loss, 0.5 mean((log D - log(1 - D))^2): no objective took it ("no
    Step found"); BGAN(probabilities=True) with its D loss halved equals it."""
    port = port_of_source(tmp_path, "bgan", BOUNDARY_SEEKING)
    assert port["max_difference"] == 0, port["notes"]
    assert "objective=BGAN(probabilities=True)" in port["code"]
    assert "schedule=simultaneous()" in port["code"] and "d_scale=0.5" in port["code"]


REMADE_OPTIMIZERS = f"""{SCRIPT_HEAD}
opt_g = torch.optim.Adam(G.parameters(), 2e-4)  # made again (a resumed run's settings)
opt_d = torch.optim.Adam(D.parameters(), 2e-4)
for it in range(10):
    real = torch.randn(32, 2)
    fake = G(torch.randn(32, 4))
    opt_d.zero_grad()
    (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(32, 1)).backward()
    opt_g.step()
"""


def test_an_optimizer_made_and_never_stepped_is_not_counted_as_gs_or_ds(tmp_path):
    """Optimizers made twice over G's and D's parameters, the first pair never stepped:
    the port said "G's parameters are in 2 optimizers" and stopped."""
    port = port_of_source(tmp_path, "remade", REMADE_OPTIMIZERS)
    assert_verified(port)
    assert "G, D, opt_g, opt_d," in port["code"]


CLIPPED = f"""{SCRIPT_HEAD}
for it in range(10):
    real = torch.randn(32, 2)
    fake = G(torch.randn(32, 4))
    opt_d.zero_grad()
    (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
    nn.utils.clip_grad_norm_(D.parameters(), 0.05)
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(32, 1)).backward()
    if CLIP_G:
        torch.nn.utils.clip_grad_value_(G.parameters(), 0.01)
    opt_g.step()
"""


def test_gradient_clipping_ports_to_before_step_hooks(tmp_path):
    """torch's clip_grad_norm_ on D and clip_grad_value_ on G before their steps: every
    candidate parted (a clipped step is not the unclipped one), and the port blamed the
    losses. The calls are recorded and become the Step's before_step hooks, verified."""
    source = CLIPPED.replace("if CLIP_G:", "if True:")
    port = port_of_source(tmp_path, "clipped", source, "--verify", 3)
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12
    assert (
        'before_step={"g": lambda G: torch.nn.utils.clip_grad_value_(G.parameters(), 0.01), '
        '"d": lambda D: torch.nn.utils.clip_grad_norm_(D.parameters(), 0.05)},'
    ) in port["code"]
    assert "clipped.py:17: nn.utils.clip_grad_norm_(D.parameters(), 0.05)" in port["code"]


def test_clipping_before_some_steps_only_is_named_not_ported(tmp_path):
    port = port_of_source(tmp_path, "clipped", CLIPPED.replace("if CLIP_G:", "if it % 2 == 0:"))
    assert port["code"] is None and port["notes"] == [
        "the script clips G's gradients (clipped.py:22: torch.nn.utils.clip_grad_value_("
        "G.parameters(), 0.01)) before some of its steps, not once before each the same "
        "way: not mapped"
    ]


RELATIVISTIC_LOOP = """
import sys

import torch
import torch.nn as nn

loss_D = sys.argv[1]
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
optimizerD = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
BCE_stable = nn.BCEWithLogitsLoss()
relu = torch.nn.ReLU()
y, y2 = torch.ones(32), torch.zeros(32)
for i in range(100):
    for p in D.parameters():
        p.requires_grad = True
    D.zero_grad()
    x = torch.randn(32, 2) * 0.5 + 1
    y_pred = D(x).view(-1)
    fake = G(torch.randn(32, 8))
    y_pred_fake = D(fake.detach()).view(-1)
    r, f = y_pred - torch.mean(y_pred_fake), y_pred_fake - torch.mean(y_pred)
    if loss_D == "RSGAN":
        errD = BCE_stable(y_pred - y_pred_fake, y)
    elif loss_D == "RaSGAN":
        errD = (BCE_stable(r, y) + BCE_stable(f, y2)) / 2
    elif loss_D == "RaLSGAN":
        errD = (torch.mean((r - y) ** 2) + torch.mean((f + y) ** 2)) / 2
    else:
        errD = (torch.mean(relu(1.0 - r)) + torch.mean(relu(1.0 + f))) / 2
    errD.backward()
    optimizerD.step()
    for p in D.parameters():
        p.requires_grad = False
    G.zero_grad()
    x = torch.randn(32, 2) * 0.5 + 1  # G's step: a real batch of its own
    y_pred = D(x).view(-1)
    fake = G(torch.randn(32, 8))
    y_pred_fake = D(fake).view(-1)
    r, f = y_pred - torch.mean(y_pred_fake), y_pred_fake - torch.mean(y_pred)
    if loss_D == "RSGAN":
        errG = BCE_stable(y_pred_fake - y_pred, y)
    elif loss_D == "RaSGAN":
        errG = (BCE_stable(r, y2) + BCE_stable(f, y)) / 2
    elif loss_D == "RaLSGAN":
        errG = (torch.mean((r + y) ** 2) + torch.mean((f - y) ** 2)) / 2
    else:
        errG = (torch.mean(relu(1.0 + r)) + torch.mean(relu(1.0 - f))) / 2
    errG.backward()
    optimizerG.step()
"""


@pytest.mark.parametrize("loss", ["RSGAN", "RaSGAN", "RaLSGAN", "RaHinge"])
def test_a_relativistic_loop_ports_with_gs_real_batch_of_its_own(tmp_path, loss):
    """The RelativisticGAN paper's loop as its code writes it: BCEWithLogitsLoss (or least
    squares, hinge) on D's relative scores; D frozen in G's step, which reads D on a real
    batch of its own. No relativistic objective was tried, D's forward on G's real batch
    (no graph: D is frozen) was not a real batch of G's step, and no schedule took one
    (d_first(..., fresh_real=True))."""
    script, out = tmp_path / "relativistic.py", tmp_path / "relativistic.json"
    script.write_text(RELATIVISTIC_LOOP)
    ganstep("audit", script, "--verify", 3, "--json", out, "--", loss, cache=tmp_path,
            cwd=tmp_path)  # fmt: skip
    port = json.loads(out.read_text())["port"]
    assert_verified(port)
    assert port["float64_difference"] <= 1e-12
    code = port["code"]
    assert f"objective={loss}()" in code
    assert "schedule=d_first(reuse_fake=False, fresh_real=True)" in code
    assert "(2 real batches: one per D step, then G's step's own)" in code


RELATIVISTIC_SAME_BATCH = f"""{WIDE_HEAD}
bce = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
for it in range(50):
    real = torch.randn(32, 2) * 0.5 + 1
    fake = G(torch.randn(32, 8))
    d_real, d_fake = D(real), D(fake.detach())
    d_loss = (bce(d_real - d_fake.mean(), ones) + bce(d_fake - d_real.mean(), zeros)) / 2
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    d_real, d_fake = D(real), D(fake)
    g_loss = (bce(d_real - d_fake.mean(), zeros) + bce(d_fake - d_real.mean(), ones)) / 2
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
"""


def test_rasgan_ports_at_0_in_float32_as_bce_with_logits_computes_it(tmp_path):
    """RaSGAN on D's step's real batch in G's step too (as BasicSR's ESRGAN reads it).
    RaSGAN's softplus parted from the script's BCEWithLogitsLoss by float32 rounding,
    which Adam made a step of its own where a gradient is 0 or nearly: 1.7e-4 apart, and
    not ported. As BCEWithLogitsLoss computes it, the two are 0 apart."""
    port = port_of_source(tmp_path, "same_batch", RELATIVISTIC_SAME_BATCH)
    assert port["max_difference"] == 0.0, port["notes"]
    assert "objective=RaSGAN()" in port["code"] and "schedule=d_first()" in port["code"]


LOGGED_BETWEEN_STEPS = f"""{WIDE_HEAD}
bce = nn.BCEWithLogitsLoss()
for it in range(50):
    real = torch.randn(32, 2) * 0.5 + 1
    fake = G(torch.randn(32, 8))
    opt_d.zero_grad()
    (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
    opt_d.step()
    with torch.no_grad():
        d_x = torch.sigmoid(D(real)).mean().item()  # logged, as the DCGAN example's D(x)
    opt_g.zero_grad()
    bce(D(G(torch.randn(32, 8))), torch.ones(32, 1)).backward()  # on a z of its own
    opt_g.step()
"""


def test_a_logging_forward_of_d_between_its_step_and_gs_is_no_real_batch_of_gs(tmp_path):
    """D on data without a graph between D's step and G's is G's real batch of its own
    only to losses that read one (the relativistic ones): NS with and without
    fresh_real=True would be two equal Steps, and none would be printed."""
    port = port_of_source(tmp_path, "logged", LOGGED_BETWEEN_STEPS)
    assert_verified(port)
    assert "schedule=d_first(reuse_fake=False)," in port["code"]


TOY_GRADIENT_PENALTY = f"""{WIDE_HEAD}
import torch.autograd as autograd

one = torch.tensor(1.0)
mone = one * -1
for iteration in range(20):
    for iter_d in range(2):
        real = torch.randn(32, 2) * 0.5 + 1
        D.zero_grad()
        D(real).mean().backward(mone)
        with torch.no_grad():
            fake = G(torch.randn(32, 8))
        D(fake).mean().backward(one)
        alpha = torch.rand(32, 1).expand(real.size())
        interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        out = D(interpolates)
        gradients = autograd.grad(outputs=out, inputs=interpolates,
                                  grad_outputs=torch.ones(out.size()), create_graph=True)[0]
        (((gradients.norm(2, dim=1) - 1) ** 2).mean() * 0.1).backward()
        opt_d.step()
    G.zero_grad()
    D(G(torch.randn(32, 8))).mean().backward(mone)
    opt_g.step()
"""


def test_every_candidate_refusing_the_inputs_alike_is_said_once_not_blamed_on_losses(tmp_path):
    """caogang/wgan-gp's toy G is called netG(noise, real_data) (the real batch unused
    unless FIXED_GENERATOR): the candidates, conditional Steps, all refuse the real
    batches alike. The port said no objective equals the script's losses; it says the
    one error every candidate raised."""
    head = "G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))"
    toy_g = (
        "class ToyG(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.main = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))\n\n"
        "    def forward(self, noise, real_data):\n"
        "        return self.main(noise)\n\n\n"
        "G = ToyG()"
    )
    calls = {
        "fake = G(torch.randn(32, 8))": "fake = G(torch.randn(32, 8), real)",
        "D(G(torch.randn(32, 8)))": "D(G(torch.randn(32, 8), torch.randn(32, 2)))",
    }
    source = TOY_GRADIENT_PENALTY.replace(head, toy_g)
    for theirs, toys in calls.items():
        assert theirs in source
        source = source.replace(theirs, toys)
    assert "G = ToyG()" in source
    port = port_of_source(tmp_path, "toy_g", source)
    assert port["code"] is None
    assert port["notes"][0].startswith(
        "every Step tried raised the same error on the script's models and inputs "
        "(ValueError: real batch 0: this Step is conditional"
    ), port["notes"]
    assert not any("no objective, scale and term" in note for note in port["notes"])


MEAN_D_LOOP = """
class MeanD(nn.Module):
    def __init__(self, main):
        super().__init__()
        self.main = main

    def forward(self, x):
        output = self.main(x)
        output = output.mean(0)
        return output.view(1)


D = MeanD(D)
opt_d = torch.optim.RMSprop(D.parameters(), lr=5e-5)
one = torch.FloatTensor([1])
mone = one * -1
for iteration in range(4):
    real = torch.randn(32, 2) * 0.5 + 1
    D.zero_grad()
    D(real).backward(one)
    with torch.no_grad():
        fake = G(torch.randn(32, 8))
    D(fake).backward(mone)
    opt_d.step()
    G.zero_grad()
    D(G(torch.randn(32, 8))).backward(one)
    opt_g.step()
"""


def test_a_d_averaging_its_scores_ports_on_the_authors_wasserstein_losses(tmp_path):
    """The WGAN authors' netD returns its scores' mean over the batch (``output.mean(0)
    .view(1)``), trained by backward(one) on the real batch and backward(mone) on the
    fakes: the Wasserstein losses read that mean, with D scoring real samples low."""
    port = port_of_source(tmp_path, "mean_d", WIDE_HEAD + MEAN_D_LOOP)
    assert_verified(port)
    assert "objective=Wasserstein(sign=-1)" in port["code"]


def test_a_d_averaging_its_scores_under_bce_is_one_error_with_what_to_change(tmp_path):
    """The same D under BCE losses: every objective but the Wasserstein ones refuses it,
    naming what to change, and those part from the script."""
    bce = MEAN_D_LOOP.replace("D(real).backward(one)", "F.softplus(-D(real)).mean().backward()")
    bce = bce.replace("D(fake).backward(mone)", "F.softplus(D(fake)).mean().backward()")
    bce = bce.replace("D(G(torch.randn(32, 8))).backward(one)",
                      "F.softplus(-D(G(torch.randn(32, 8)))).mean().backward()")  # fmt: skip
    port = port_of_source(tmp_path, "mean_d_bce", WIDE_HEAD + bce)
    assert port["code"] is None
    assert port["notes"][0].startswith("every Step tried but ")
    assert (
        " raised the same error on the script's models and inputs (ValueError: each "
        "objective needs D's adversarial output to have one row per sample" in port["notes"][0]
    )
    assert (
        "(one number for the whole batch: return D's scores before their mean, which the "
        "losses take)), and those " in port["notes"][0]
    )
    assert port["notes"][0].endswith("part from the script: not mapped")


def test_a_gradient_penalty_of_another_weight_than_10_ports(tmp_path):
    """caogang/wgan-gp's toy loop writes its losses as backward(mone) and backward(one)
    and weighs its penalty 0.1: the port tried WGAN-GP at 10 only."""
    port = port_of_source(tmp_path, "toy", TOY_GRADIENT_PENALTY)
    assert_verified(port)
    assert "objective=WGANGP(0.1)" in port["code"]
    assert "schedule=d_first(d_steps=2, reuse_fake=False)" in port["code"]


@pytest.mark.parametrize("written", ["in_the_call", "written_over"])
def test_a_real_batch_made_in_the_loop_is_named_for_the_call_of_step(tmp_path, written):
    """The DCGAN example with instance noise on D's real batch, in D's call or written
    over its name before it: the port was verified on the batch as D was given it and
    printed ``step(real_batch)`` saying nothing, so a user would give the Step the
    DataLoader's batch and lose the noise. A note now names the change and its line; the
    example as written (D given the DataLoader's batch) has none."""
    source = (SCRIPTS / "dcgan_example.py").read_text()
    call = "        output = netD(real_cpu).view(-1)\n"
    noise = "real_cpu + 0.1 * torch.randn_like(real_cpu)"
    changed = {"in_the_call": call.replace("real_cpu)", f"{noise})"),
               "written_over": f"        real_cpu = {noise}\n{call}"}[written]  # fmt: skip
    assert source.count(call) == 1
    port = port_of_source(tmp_path, "noisy", source.replace(call, changed), "--verify", "2",
                          script_args=("--niter", "1"))  # fmt: skip
    assert port["max_difference"] == 0, port["notes"]
    [note] = [n for n in port["notes"] if n.startswith("D was given its real batch made")]
    if written == "in_the_call":
        assert "`lambda x: x + 0.1 * torch.randn_like(x)` (noisy.py:65: output = netD(" in note
        assert "so give step(...) the batch made so (real_batch below)" in note
    else:
        assert f"(noisy.py:65: real_cpu = {noise})" in note
        assert "so give step(...) the batch made so (real_batch below)" in note
    # a copy written over its name is no change (sagan.py's tensor2var): no note
    copied = source.replace(call, f"        real_cpu = to_var(real_cpu)\n{call}").replace(
        "\nnetG = Generator()", "\nto_var = lambda x: x.clone()\nnetG = Generator()", 1
    )
    for name, plain_source in (("plain", source), ("copied", copied)):
        plain = port_of_source(tmp_path, name, plain_source, script_args=("--niter", "1"))
        assert plain["code"] and not any("real batch made" in n for n in plain["notes"]), name


def test_a_real_batch_noised_between_ds_dropout_draws_is_named_as_the_likely_cause(tmp_path):
    """PyTorch-GAN's cgan.py with instance noise drawn by torch's generator in D's real
    call, between the Dropout masks of D's forwards: no Step given the noised batch
    equals it, and the port blamed the losses alone. The made batch is named beside them
    with what a Step cannot do. The same noise from a generator of the script's own
    ports, with the note that the Step takes the batch made so."""
    source = (SCRIPTS / "pytorch_gan_cgan.py").read_text()
    call = "validity_real = discriminator(real_imgs, labels)"
    assert source.count(call) == 1
    noised = source.replace(
        call, call.replace("real_imgs,", "real_imgs + 0.05 * torch.randn_like(real_imgs),")
    )
    port = port_of_source(
        tmp_path, "noised", noised, "--verify", "2", script_args=("--n_epochs", "1")
    )
    assert port["code"] is None
    assert port["notes"][0].startswith("no objective, scale and term tried equals")
    assert port["notes"][1].startswith(
        "D was given its real batch made from the DataLoader's, as "
        "`lambda x: x + 0.05 * torch.randn_like(x)` (noised.py:"
    )
    assert "a change of the real batch alone is no Step's option" in port["notes"][1]
    own = noised.replace(
        "torch.randn_like(real_imgs)", "torch.randn(real_imgs.shape, generator=gen)"
    )
    own = own.replace("\nfor epoch in", "\ngen = torch.Generator().manual_seed(5)\nfor epoch in", 1)
    port = port_of_source(tmp_path, "own", own, "--verify", "2", script_args=("--n_epochs", "1"))
    assert port["max_difference"] == 0, port["notes"]
    assert any(n.startswith("D was given its real batch made") for n in port["notes"])


@pytest.mark.parametrize(("draw", "code", "law"), [
    (lambda g: torch.rand(64, 4, generator=g) * 2 - 1, "torch.rand(n, 4) * 2 - 1",
     "uniform on [-1, 1)"),
    (lambda g: torch.rand(64, 4, generator=g), "torch.rand(n, 4)", "uniform on [0, 1)"),
    (lambda g: torch.randn(64, 4, generator=g), "torch.randn(n, 4)", "normal"),
    (lambda g: torch.randn(64, 4, generator=g) - 1, "torch.randn(n, 4) - 1", "normal about -1"),
    (lambda g: torch.randn(64, 4, generator=g) * 0.33, "torch.randn(n, 4) * 0.31",
     "normal with a standard deviation of 0.31"),  # (as these 256 values' spread reads)
    (lambda g: torch.randn(64, 4, generator=g) * 5, "torch.randn(n, 4) * 4.7",
     "normal with a standard deviation of 4.7"),
], ids=["uniform(-1, 1)", "uniform(0, 1)", "normal", "normal(-1, 1)", "normal(0, 0.33)",
        "normal(0, 5)"])  # fmt: skip
def test_the_latents_law_is_read_from_the_scripts_draws(draw, code, law):
    """The printed latent's law, read from the values the script drew: the 3D-GAN's
    normal(0, 0.33) lies within [-1, 1] but is not uniform there (its spread says so),
    and a normal of another spread than 1 is printed with it."""
    from ganstep.tools.port import _draw

    z = draw(torch.Generator().manual_seed(0))
    assert _draw(z) == (code, law)
