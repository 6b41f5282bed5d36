"""ganstep.lightning in two processes (GANStrategy, gloo, spawned): bit-equal to one
process on the concatenated batch, and, with Dropout in D and WGAN-GP, to the DDP loop
written by hand, also when stopped, saved by the main process and resumed; the naive
way (a plain Step under Lightning's DDP strategy) refused; the Trainer's settings
refused before any process starts. Apart from tests/test_lightning.py so that pytest's
two workers share the spawning tests."""

from __future__ import annotations

import pytest
import torch

L = pytest.importorskip("lightning")
from helpers import ddp_reference  # noqa: E402
from helpers.integration import Z, models, optimizers, plain_step  # noqa: E402
from helpers.lightning_gan import TinyGAN, as_lightnings_sampler, loader, trainer  # noqa: E402

from ganstep import Step  # noqa: E402
from ganstep.lightning import GANStrategy  # noqa: E402

CASES = [("d_first", 0.0), ("simultaneous", 0.0), ("d_first", 1.0)]  # 1.0: with R1


@pytest.mark.parametrize("schedule, r1", CASES)
def test_two_processes_equal_one_process_on_the_concatenated_batch(
    tmp_path, monkeypatch, schedule, r1
):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # spawned processes: one thread, as this one
    model = TinyGAN(schedule, r1, out=str(tmp_path))
    fit = trainer(tmp_path, devices=2, strategy=GANStrategy(start_method="spawn"))
    fit.fit(model, loader())
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    for p, q in zip(*ranks, strict=True):
        assert torch.equal(p, q)  # the ranks agree exactly
    expected = plain_step(schedule, r1, batchnorm=True, epochs=1, world=2)
    for p, q in zip(ranks[0], expected, strict=True):
        assert torch.equal(p, q)
    # BatchNorm's running statistics, each rank's own, averaged after each iteration
    stats = [torch.load(tmp_path / f"buffers{r}.pt") for r in range(2)]
    assert stats[0].keys() == stats[1].keys() and "G.1.running_mean" in stats[0]
    assert all(torch.equal(stats[0][k], stats[1][k]) for k in stats[0])


def spawned(tmp_path, name: str, **kwargs):
    return trainer(tmp_path / name, devices=2, strategy=GANStrategy(start_method="spawn"),
                   **kwargs)  # fmt: skip


# WGAN-GP, not ns: the DDP loop's BCEWithLogitsLoss and ganstep's softplus differ in the
# last bit (1e-17 here) in one process too; WGAN-GP's formulas are the same, and its
# interpolation draws are one more per-rank stream that resuming must restore. One case
# (three spawns, ~25 s): stopped mid-epoch and resumed from the main process.
@pytest.mark.parametrize("objective, make_loader, resumed", [
    ("wgan_gp", as_lightnings_sampler, True),
])  # fmt: skip
def test_two_processes_with_dropout_in_d_equal_the_ddp_loop(
    tmp_path, monkeypatch, objective, make_loader, resumed
):
    """Dropout masks and WGAN-GP's interpolation come from each process's own global
    stream: the per-rank streams make them the DDP loop's, drawn the same way. Resumed:
    a spawned fit stopped after 3 iterations (mid-epoch: 2 batches an epoch a rank),
    ``trainer.save_checkpoint`` in the main process, which took no step, and a spawned
    fit from that checkpoint."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    (tmp_path / "ours").mkdir()

    def model(out=None) -> TinyGAN:
        gan = TinyGAN("d_first", batchnorm=False, dropout=True, out=out)
        gan.extra = {"objective": objective}
        return gan

    ckpt = None
    if resumed:
        first = spawned(tmp_path, "first", max_steps=3, max_epochs=-1)
        first.fit(model(), make_loader())
        assert first.global_step == 3  # in the main process too, as after a fit in it
        first.save_checkpoint(tmp_path / "first.ckpt")
        saved = torch.load(tmp_path / "first.ckpt", weights_only=False)
        assert saved["global_step"] == 3 and len(saved["ganstep"]["rng_ranks"]) == 2
        ckpt = tmp_path / "first.ckpt"
    fit = spawned(tmp_path, "fit", max_epochs=2)
    fit.fit(model(str(tmp_path / "ours")), make_loader(), ckpt_path=ckpt)
    ranks = [torch.load(tmp_path / "ours" / f"rank{r}.pt") for r in range(2)]
    expected = ddp_reference.run(tmp_path / "ddp", objective, epochs=2)
    for p, q, e in zip(*ranks, expected, strict=True):
        assert torch.equal(p, q) and torch.equal(p, e)


class NaiveGAN(L.LightningModule):
    """A plain Step in the user's own LightningModule, under Lightning's DDP strategy."""

    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.G, self.D = models(batchnorm=False)

    def configure_optimizers(self):
        return optimizers(self.G, self.D)

    def on_fit_start(self) -> None:
        opt_g, opt_d = self.optimizers(use_pl_optimizer=False)
        self.plain = Step(self.G, self.D, opt_g, opt_d, objective="ns", schedule="d_first",
                          latent=lambda n: torch.randn(n, Z, dtype=torch.float64))  # fmt: skip

    def training_step(self, batch, batch_idx):
        self.plain(batch[0])


def test_a_plain_step_under_lightnings_ddp_strategy_is_refused_naming_the_way(
    tmp_path, monkeypatch
):
    from torch.multiprocessing import ProcessRaisedException

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    naive = trainer(tmp_path, devices=2, strategy="ddp_spawn", max_steps=4)
    with pytest.raises(ProcessRaisedException, match=r"distributed=True.*GANModule"):
        naive.fit(NaiveGAN(), loader())


def test_a_spawned_fit_refuses_the_trainers_settings_before_it_starts_a_process(tmp_path):
    fit = spawned(tmp_path, "x", precision="bf16-true")
    with pytest.raises(ValueError, match="16-bit numbers, with no float32 copy"):
        fit.fit(TinyGAN("d_first"), loader())
