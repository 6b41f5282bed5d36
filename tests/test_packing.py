"""PacGAN's packing (``--pack``), against PacGAN's own code: fjxmlzn/PacGAN,
``stacked_MNIST_experiments/VEEGAN_experiment/model.py`` (``DCGAN.build_model``,
``train`` and ``load_mnist``): one uniform z batch per pack slot, G run once per slot
(its BatchNorm sees each slot's batch), the slots' images concatenated along channels
(slot ``j`` in channels ``3j..3j+2``, as ``X_stacked`` holds real packs), D's sigmoid
cross-entropies averaged over packs, d_loss = real + fake, Adam(lr, beta1)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.wild import assert_losses, assert_same_sides

from ganstep import Step, d_first
from ganstep.trainer.config import Config
from ganstep.trainer.data import load_dataset
from ganstep.trainer.iteration import real_batch
from ganstep.trainer.models import (
    DCGANDiscriminator,
    DCGANGenerator,
    PackedGenerator,
    build_models,
    pack,
)
from ganstep.trainer.trainee import Trainee

M, N, Z, STEPS = 2, 4, 4, 3  # pack size, packs per batch, z size, iterations


def sides():
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        G = DCGANGenerator(Z, width=2, channels=3, size=32).double()
        D = DCGANDiscriminator(width=2, channels=3 * M, size=32).double()
        adam = lambda m: torch.optim.Adam(m.parameters(), 2e-3, betas=(0.5, 0.999))  # noqa: E731
        out.append((G, D, adam(G), adam(D)))
    return out


def draws():
    """Per iteration: the real packs (``X_stacked``'s rows, random ids per slot) and one
    uniform z batch per slot, as PacGAN's ``train`` feeds them."""
    rng = np.random.RandomState(0)
    images = torch.from_numpy(rng.uniform(-1, 1, (10, 3, 32, 32)))
    out = []
    for _ in range(STEPS):
        ids = rng.randint(0, len(images), size=(N, M))
        real = torch.cat([images[ids[:, j]] for j in range(M)], dim=1)
        zs = [torch.from_numpy(rng.uniform(-1, 1, (N, Z))) for _ in range(M)]
        out.append((real, zs))
    return out


def pacgan_loop(side, data) -> list[dict]:
    """PacGAN's iteration in PyTorch: ``sess.run(d_optim)`` then ``sess.run(g_optim)``,
    each graph running G on every slot's z (so G runs twice, and its BatchNorm statistics
    move twice). The loop's second ``g_optim`` run ("different from paper", its comment)
    is a second G step on the same z, not part of packing: left out here."""
    G, D, opt_g, opt_d = side
    logs = []
    for real, zs in data:
        with torch.no_grad():  # d_optim's var_list: D's variables only
            fake = torch.cat([G(z) for z in zs], dim=1)  # tf.concat(self.G_sep, 3) in NHWC
        real_logits, fake_logits = D(real), D(fake)
        bce = F.binary_cross_entropy_with_logits  # tf.reduce_mean of the per-pack terms
        d_loss = bce(real_logits, torch.ones_like(real_logits)) + bce(
            fake_logits, torch.zeros_like(fake_logits))  # fmt: skip
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        fake_logits = D(torch.cat([G(z) for z in zs], dim=1))
        g_loss = bce(fake_logits, torch.ones_like(fake_logits))
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        logs.append({"loss_d": d_loss.item(), "loss_g": g_loss.item()})
    return logs


def test_a_packed_step_equals_pacgans_loop():
    ours, theirs = sides()
    data = draws()
    latents = iter(torch.stack(zs, dim=1) for _, zs in data)  # (n, slot, z)
    G, D, opt_g, opt_d = ours
    # reuse_z: G's step makes its fakes anew from the D step's z, as g_optim's graph does
    step = Step(PackedGenerator(G, M), D, opt_g, opt_d, objective="ns",
                schedule=d_first(reuse_fake=False, reuse_z=True),
                latent=lambda n: next(latents))  # fmt: skip
    got = [{k: v.item() for k, v in step(real).items()} for real, _ in data]
    expected = pacgan_loop(theirs, data)
    assert_losses(got, expected)
    assert_same_sides(ours, theirs)  # parameters, BatchNorm statistics, Adam's moments


def test_g_runs_once_per_slot_not_once_on_every_slot():
    """One G call on all slots' z would normalize G's BatchNorm over the whole pack
    batch: different images. The packed G must equal PacGAN's per-slot calls."""
    torch.manual_seed(0)
    G = DCGANGenerator(Z, width=2, channels=3, size=32).double()
    z = torch.randn(N, M, Z, dtype=torch.float64)
    per_slot = torch.cat([G(z[:, j]) for j in range(M)], dim=1)
    assert torch.equal(PackedGenerator(G, M)(z), per_slot)
    whole = G(z.transpose(0, 1).reshape(M * N, Z))  # slot-major, as the slots' rows
    assert not torch.allclose(pack(list(whole.split(N))), per_slot)
    assert list(PackedGenerator(G, M).parameters()) == list(G.parameters())


def test_pack_puts_slot_j_in_channel_block_j():
    slots = torch.arange(3 * 2 * 3 * 2 * 2.0).reshape(3, 2, 3, 2, 2)  # 3 slots of 2
    packs = pack(list(slots))
    assert packs.shape == (2, 9, 2, 2)
    for i in range(2):
        for j in range(3):  # X_stacked[i, :, :, 3j + k] = X_training[ids[i, j], :, :, k]
            assert torch.equal(packs[i, 3 * j : 3 * j + 3], slots[j, i])
    vectors = torch.arange(8.0).reshape(2, 2, 2)
    assert torch.equal(pack(list(vectors)), torch.tensor([[0.0, 1, 4, 5], [2, 3, 6, 7]]))
    with pytest.raises(ValueError, match="2 or more batches of one shape"):
        pack([vectors[0], vectors[1][:1]])
    with pytest.raises(ValueError, match="2 or more"):
        pack([vectors[0]])
    with pytest.raises(ValueError, match="at least 2"):
        PackedGenerator(torch.nn.Identity(), 1)
    with pytest.raises(ValueError, match=r"\(n, 2, \.\.\.\)"):
        PackedGenerator(torch.nn.Identity(), 2)(torch.zeros(3, 4))


def test_the_trainer_draws_one_batch_per_slot():
    """The trainer's real packs and z are PacGAN's draws: slot after slot from one
    generator, each a batch of ``batch_size``."""
    data = load_dataset("grid")
    cfg = Config(pack=M, batch_size=N).resolved(data)
    real = real_batch(data, cfg, torch.Generator().manual_seed(5), torch.device("cpu"))
    gen = torch.Generator().manual_seed(5)
    slots = [data.batch(N, gen) for _ in range(M)]
    assert torch.equal(real, torch.cat(slots, dim=1))
    trainee = Trainee(cfg, data, torch.device("cpu"))
    z = trainee.latent(N)
    gen = torch.Generator().manual_seed(cfg.seed + 1)  # the latent stream
    slots = [torch.randn(N, cfg.z_dim, generator=gen) for _ in range(M)]
    assert z.shape == (N, M, cfg.z_dim) and torch.equal(z, torch.stack(slots, dim=1))
    assert trainee.D.net[0].in_features == M * 2  # D reads packs of 2D points
    assert trainee.sampler(torch.zeros(3, cfg.z_dim)).shape == (3, 2)  # G samples one


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--conditional", "--data", "digits", "--model", "dcgan"], "--conditional"),
        (["--augment", "diffaugment"], "--augment"),
        (["--schedule", "simultaneous", "--fused"], "--fused"),
        (["--objective", "began"], "began's autoencoder D"),
        (["--objective", "ebgan"], "ebgan's autoencoder D"),
    ],
)
def test_what_packing_does_not_go_with_is_refused(tmp_path, flags, message):
    run = subprocess.run(
        [sys.executable, "-m", "ganstep", "train", "--pack", "2", "--steps", "1",
         "--out", str(tmp_path / "run"), *flags],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 1
    assert "ganstep: error: pack 2" in run.stderr and message in run.stderr
    assert not (tmp_path / "run").exists()


def test_build_models_refuses_packing_a_conditional_d():
    with pytest.raises(ValueError, match="packing"):
        build_models("dcgan", (1, 32, 32), "ns", 8, 4, classes=10, pack=2)


def test_a_packed_run_trains_resumes_and_samples(tmp_path):
    """As a user: train with --pack 2, resume it, sample a picture from it."""
    run = tmp_path / "run"
    base = [sys.executable, "-m", "ganstep"]
    common = ["--eval-every", "20", "--sample-every", "20", "--ckpt-every", "10",
              "--batch-size", "32", "--no-progress", "--out", str(run)]  # fmt: skip
    done = subprocess.run([*base, "train", "--pack", "2", "--steps", "10", *common],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert tomllib.loads((run / "config.toml").read_text())["pack"] == 2
    done = subprocess.run([*base, "train", "--resume", "--steps", "20", *common],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (run / "checkpoints" / "step_00000020.pt").exists()
    picture = tmp_path / "samples.png"
    done = subprocess.run([*base, "sample", "--run", str(run), "--n", "64", "--out", str(picture)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    from PIL import Image

    with Image.open(picture) as image:
        assert image.size[0] > 0 and image.size[1] > 0
