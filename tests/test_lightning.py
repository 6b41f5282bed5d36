"""ganstep.lightning: a Step under lightning.Trainer ends with the parameters of the plain
Step (and so of the loop it equals), bit for bit, in one process and in two
(GANStrategy, gloo: against one process on the concatenated batch), resumes exactly
from Lightning's checkpoint, and refuses the Trainer settings that would change its
numbers."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("lightning")
from helpers.integration import BATCH, N, plain_step  # noqa: E402
from helpers.lightning_gan import TinyGAN, loader, trainer  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402

from ganstep import d_first  # noqa: E402
from ganstep.lightning import GANStrategy  # noqa: E402

CASES = [("d_first", 0.0), ("simultaneous", 0.0), ("d_first", 1.0)]  # 1.0: with R1


def parameters(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("schedule, r1", CASES)
def test_one_process_equals_the_plain_step_bit_for_bit(tmp_path, schedule, r1):
    model = TinyGAN(schedule, r1)  # BatchNorm in G
    trainer(tmp_path, max_epochs=2).fit(model, loader())
    expected = plain_step(schedule, r1, batchnorm=True, epochs=2)
    for p, q in zip(parameters(model), expected, strict=True):
        assert torch.equal(p, q)
    assert model.trainer.global_step == 2 * N // BATCH  # GAN iterations, not optimizer steps


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


def test_d_steps_take_k_batches_per_iteration_and_count_iterations(tmp_path):
    model = TinyGAN("d_first")
    model.extra = {"schedule": d_first(d_steps=2)}  # WGAN's n_critic, 2 here
    trainer(tmp_path, max_epochs=1).fit(model, loader())
    assert model.iterations == N // BATCH // 2 and model.trainer.global_step == 2


def test_resume_from_lightnings_checkpoint_equals_the_uninterrupted_fit(tmp_path):
    straight = TinyGAN("d_first", r1=1.0)
    trainer(tmp_path / "a", max_epochs=4).fit(straight, loader())
    first = TinyGAN("d_first", r1=1.0)
    saver = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    trainer(tmp_path / "b", max_epochs=2, callbacks=[saver], enable_checkpointing=True).fit(
        first, loader()
    )
    resumed = TinyGAN("d_first", r1=1.0)
    last = tmp_path / "ckpt" / "last.ckpt"
    trainer(tmp_path / "c", max_epochs=4).fit(resumed, loader(), ckpt_path=last)
    for p, q in zip(parameters(resumed), parameters(straight), strict=True):
        assert torch.equal(p, q)
    assert resumed.iterations == straight.iterations == 4 * N // BATCH
    assert resumed.step.state_dict()["d_updates"] == straight.step.state_dict()["d_updates"]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"precision": "bf16-mixed"}, "precision='bf16' or 'fp16'"),
        ({"precision": "16-mixed"}, "precision='bf16' or 'fp16'"),
        ({"accumulate_grad_batches": 2}, "accumulate=k"),
        ({"gradient_clip_val": 1.0}, "before_step"),
        ({"strategy": "ddp"}, "GANStrategy()"),
    ],
)
def test_settings_the_step_does_itself_are_refused_with_what_to_use(tmp_path, settings, message):
    model = TinyGAN("d_first")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        trainer(tmp_path, **settings).fit(model, loader())
    assert all(p.grad is None for p in model.parameters())  # refused before any step


def test_losses_at_gan_iterations_and_a_fixed_z_grid_each_epoch_reach_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from helpers.lightning_gan import TinyImageGAN, image_loader
    from lightning.pytorch.loggers import TensorBoardLogger
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model = TinyImageGAN()
    model.extra = {"schedule": d_first(d_steps=2)}  # 2 batches per GAN iteration
    logger = TensorBoardLogger(tmp_path, name="tb", version=0)
    trainer(tmp_path, max_epochs=2, logger=logger, log_every_n_steps=1).fit(model, image_loader())
    acc = EventAccumulator(str(tmp_path / "tb" / "version_0"))
    acc.Reload()
    per_epoch = N // BATCH // 2
    assert [e.step for e in acc.Scalars("loss_d")] == list(range(2 * per_epoch))
    grids = acc.Images("samples")
    assert [g.step for g in grids] == [per_epoch, 2 * per_epoch]
    assert grids[0].width == grids[0].height == 2 + 8 * 6  # 64 samples, 8 x 8, 2-pixel gaps
