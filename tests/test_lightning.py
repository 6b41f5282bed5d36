"""ganstep.lightning in one process: a Step under lightning.Trainer ends with the
parameters of the plain Step (and so of the loop it equals), bit for bit, resumes
exactly from any checkpoint (mid-epoch, d_steps=k, after save_checkpoint), logs at GAN
iterations, and refuses the Trainer settings that would change its numbers. Two
processes: tests/test_lightning_processes.py."""

from __future__ import annotations

import pytest
import torch

L = pytest.importorskip("lightning")
from helpers.integration import BATCH, N, plain_step  # noqa: E402
from helpers.lightning_gan import TinyGAN, loader, resumable_loader, trainer  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402

from ganstep import d_first  # noqa: E402

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


def test_d_steps_take_k_batches_per_iteration_and_count_iterations(tmp_path):
    model = TinyGAN("d_first")
    model.extra = {"schedule": d_first(d_steps=2)}  # WGAN's n_critic, 2 here
    trainer(tmp_path, max_epochs=1).fit(model, loader())
    assert model.iterations == N // BATCH // 2 and model.trainer.global_step == 2


def test_d_steps_each_batch_is_refused_naming_what_to_give(tmp_path):
    model = TinyGAN("d_first")
    model.extra = {"schedule": d_first(d_steps="each_batch")}
    with pytest.raises(ValueError, match="a GANModule takes a fixed number .* give d_steps a"):
        trainer(tmp_path, max_epochs=1).fit(model, loader())


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
        ({"precision": "bf16-true"}, "16-bit numbers, with no float32 copy"),
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
    # iteration t (after t updates), as `ganstep train` and the sample grids count
    assert [e.step for e in acc.Scalars("loss_d")] == list(range(1, 2 * per_epoch + 1))
    grids = acc.Images("samples")
    assert [g.step for g in grids] == [per_epoch, 2 * per_epoch]
    assert grids[0].width == grids[0].height == 2 + 8 * 6  # 64 samples, 8 x 8, 2-pixel gaps


def test_lazy_r1s_penalty_reaches_the_logger_at_log_steps_it_did_not_run_at(tmp_path):
    from lightning.pytorch.loggers import CSVLogger

    from ganstep.engine.objectives import NS

    model = TinyGAN("d_first")
    model.extra = {"objective": NS(r1=1.0, r1_every=3)}  # gp at iterations 1, 4, 7, ...
    logger = CSVLogger(tmp_path, name="csv", version=0)
    trainer(tmp_path, max_epochs=3, logger=logger, log_every_n_steps=5).fit(model, loader())
    logger.finalize("success")
    rows = (tmp_path / "csv" / "version_0" / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    logged = [dict(zip(header, r.split(","), strict=True)) for r in rows[1:]]
    assert [int(r["step"]) for r in logged] == [5, 10, 12]  # 12: the last iteration
    assert all(r["gp"] for r in logged)  # its latest value, at every log step


def gan(k: int, out=None) -> TinyGAN:
    model = TinyGAN("d_first", r1=1.0, dropout=True, out=out)  # Dropout: the global stream
    model.extra = {"schedule": d_first(d_steps=k)}
    return model


def assert_same_checkpoints(a: dict, b: dict) -> None:
    """Every tensor and number of the two checkpoints' models, optimizers, Steps, random
    streams and loader positions."""

    def same(x, y, where):
        assert type(x) is type(y), where
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y), where
        elif isinstance(x, dict):
            assert x.keys() == y.keys(), where
            for key in x:
                same(x[key], y[key], f"{where}.{key}")
        elif isinstance(x, list | tuple):
            assert len(x) == len(y), where
            for i, (u, v) in enumerate(zip(x, y, strict=True)):
                same(u, v, f"{where}[{i}]")
        else:
            assert x == y, where

    # not "epoch": Lightning counts an epoch that max_steps cut short as done when the fit
    # stops, which a resumed fit with nothing left to do does not (either continues it)
    for key in ("state_dict", "optimizer_states", "ganstep", "global_step"):
        same(a[key], b[key], key)
    same(a["loops"]["fit_loop"]["state_dict"], b["loops"]["fit_loop"]["state_dict"], "loader")


@pytest.mark.parametrize("k, batch", [(1, BATCH), (2, 5)])  # 5: an epoch of 5 batches
def test_resume_from_any_checkpoint_mid_epoch_or_not_equals_the_uninterrupted_fit(
    tmp_path, k, batch
):
    limits = {"max_steps": 7, "max_epochs": -1}
    every_step = ModelCheckpoint(dirpath=tmp_path / "step", every_n_train_steps=1,
                                 save_top_k=-1, filename="{step}")  # fmt: skip
    every_epoch = ModelCheckpoint(dirpath=tmp_path / "epoch", save_top_k=-1,
                                  filename="{epoch}-{step}")  # fmt: skip
    straight = trainer(tmp_path / "a", callbacks=[every_step, every_epoch],
                       enable_checkpointing=True, **limits)  # fmt: skip
    straight.fit(gan(k), resumable_loader(batch))
    straight.save_checkpoint(tmp_path / "straight.ckpt")
    expected = torch.load(tmp_path / "straight.ckpt", weights_only=False)
    paths = sorted((tmp_path / "step").iterdir()) + sorted((tmp_path / "epoch").iterdir())
    assert len(paths) > 7  # every iteration's, and every epoch's end
    for path in paths:
        resumed = trainer(tmp_path / "b", **limits)
        resumed.fit(gan(k), resumable_loader(batch), ckpt_path=path)
        resumed.save_checkpoint(tmp_path / "resumed.ckpt")
        assert_same_checkpoints(torch.load(tmp_path / "resumed.ckpt", weights_only=False),
                                expected)  # fmt: skip


@pytest.mark.parametrize("stop", [1, 2, 3, 4])  # 4 batches an epoch: 4 ends one
def test_save_checkpoint_after_fit_then_resume_equals_the_uninterrupted_fit(tmp_path, stop):
    straight = trainer(tmp_path / "a", max_steps=6, max_epochs=-1)
    straight.fit(gan(1), resumable_loader())
    straight.save_checkpoint(tmp_path / "straight.ckpt")
    first = trainer(tmp_path / "b", max_steps=stop, max_epochs=-1)
    first.fit(gan(1), resumable_loader())
    first.save_checkpoint(tmp_path / "first.ckpt")
    resumed = trainer(tmp_path / "c", max_steps=6, max_epochs=-1)
    resumed.fit(gan(1), resumable_loader(), ckpt_path=tmp_path / "first.ckpt")
    resumed.save_checkpoint(tmp_path / "resumed.ckpt")
    assert_same_checkpoints(torch.load(tmp_path / "resumed.ckpt", weights_only=False),
                            torch.load(tmp_path / "straight.ckpt", weights_only=False))  # fmt: skip


def test_a_mid_epoch_resume_with_a_loader_that_cannot_continue_warns(tmp_path):
    first = trainer(tmp_path / "a", max_steps=2, max_epochs=-1)
    first.fit(TinyGAN("d_first"), loader())
    first.save_checkpoint(tmp_path / "mid.ckpt")
    with pytest.warns(UserWarning, match="after 2 of the epoch's 4 batches.*ResumableLoader"):
        trainer(tmp_path / "b", max_steps=3, max_epochs=-1).fit(
            TinyGAN("d_first"), loader(), ckpt_path=tmp_path / "mid.ckpt"
        )


def test_a_loader_position_saved_with_other_settings_is_refused():
    state = resumable_loader().state_dict()
    with pytest.raises(ValueError, match="batch_size 6 -> 5"):
        resumable_loader(5).load_state_dict(state)


def test_save_checkpoint_before_fit_says_there_is_nothing_to_save(tmp_path):
    model = TinyGAN("d_first")
    fit = trainer(tmp_path)
    fit.strategy.connect(model)
    with pytest.raises(ValueError, match="nothing to save yet"):
        fit.save_checkpoint(tmp_path / "x.ckpt")
