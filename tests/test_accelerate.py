"""ganstep.accelerate: a Step under an Accelerator in two processes (torchrun, gloo)
ends with the parameters of the plain Step on the concatenated batch, bit for bit
(each process and this one on one thread: the same reduction order), with BatchNorm in
G and with R1; Accelerate's mixed precision, its accumulation and prepared (wrapped)
models are refused with what to use instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("accelerate")
from accelerate import Accelerator  # noqa: E402
from helpers import environment  # noqa: E402
from helpers.integration import accelerate_order, models, optimizers, plain_step  # noqa: E402

from ganstep.accelerate import prepare  # noqa: E402

WORKER = Path(__file__).parent / "helpers" / "accelerate_worker.py"
CASES = {"d_first": ("d_first", 0.0), "simultaneous": ("simultaneous", 0.0),
         "d_first_r1": ("d_first", 1.0)}  # fmt: skip


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    out = tmp_path_factory.mktemp("accelerate")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--master_port=0", "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0",
           str(WORKER), str(out)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env=environment(out))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_two_processes_equal_one_process_on_the_concatenated_batch(two_processes, name):
    ranks = [torch.load(two_processes / f"{name}-rank{r}.pt") for r in range(2)]
    for p, q in zip(*ranks, strict=True):
        assert torch.equal(p, q)  # the ranks agree exactly
    schedule, r1 = CASES[name]
    expected = plain_step(schedule, r1, batchnorm=True, epochs=1, world=2,
                          sharding=accelerate_order)  # fmt: skip
    for p, q in zip(ranks[0], expected, strict=True):
        assert torch.equal(p, q)


def test_one_process_equals_the_plain_step_bit_for_bit(tmp_path):
    out = tmp_path
    # one thread, as this process: the same reduction order, bit for bit
    done = subprocess.run([sys.executable, str(WORKER), str(out)], capture_output=True,
                          text=True, timeout=300, env=environment(out))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for name, (schedule, r1) in CASES.items():
        got = torch.load(out / f"{name}-rank0.pt")
        for p, q in zip(got, plain_step(schedule, r1, batchnorm=True, epochs=1), strict=True):
            assert torch.equal(p, q)


@pytest.mark.parametrize(
    "settings, message",
    [({"mixed_precision": "bf16"}, "precision='bf16' or 'fp16'"),
     ({"gradient_accumulation_steps": 2}, "accumulate=k")],
)  # fmt: skip
def test_accelerates_precision_and_accumulation_are_refused(settings, message):
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(True)
    G, D = models(batchnorm=False)
    with pytest.raises(ValueError, match=message):
        prepare(Accelerator(cpu=True, **settings), G, D, *optimizers(G, D),
                objective="ns", schedule="d_first", latent=lambda n: torch.randn(n, 3))  # fmt: skip
    AcceleratorState._reset_state(True)


def test_a_prepared_model_is_refused(tmp_path):
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(True)
    accelerator = Accelerator(cpu=True)
    G, D = models(batchnorm=False)
    opt_g, opt_d = optimizers(G, D)
    G = accelerator.prepare_model(G)
    G._original_forward = G.forward  # what prepare leaves on a model it wraps in autocast
    with pytest.raises(ValueError, match="pass the module itself"):
        prepare(accelerator, G, D, opt_g, opt_d, objective="ns", schedule="d_first",
                latent=lambda n: torch.randn(n, 3))  # fmt: skip
    AcceleratorState._reset_state(True)


def test_each_process_draws_its_own_noise_as_the_docs_write_it(two_processes):
    """The docs' snippet (a latent reading the global stream, models from one seed):
    before, every process drew the same z and the same Dropout masks on every step.
    BatchNorm's running statistics are averaged after each iteration: equal everywhere."""
    ranks = [torch.load(two_processes / f"noise-rank{r}.pt") for r in range(2)]
    assert not torch.equal(ranks[0]["z"], ranks[1]["z"])
    assert not torch.equal(ranks[0]["dropout"], ranks[1]["dropout"])
    assert ranks[0]["buffers"] and all(
        torch.equal(a, b) for a, b in zip(ranks[0]["buffers"], ranks[1]["buffers"], strict=True)
    )


def test_a_dropout_d_with_wgan_gp_equals_the_hand_written_ddp_loop(two_processes, tmp_path):
    """Two processes through prepare and step.feed (a shuffled DistributedSampler, moved
    to its next epoch by feed) against pytorch/examples' loop in DistributedDataParallel,
    each process reseeded by the documented formula: every parameter bit-equal."""
    from helpers import ddp_reference

    ranks = [torch.load(two_processes / f"ddp-rank{r}.pt") for r in range(2)]
    expected = ddp_reference.run(tmp_path, "wgan_gp", epochs=2)
    for p, q, e in zip(*ranks, expected, strict=True):
        assert torch.equal(p, q) and torch.equal(p, e)


def test_feed_over_a_resumable_loader_follows_accelerates_epochs():
    """A ResumableLoader fed through step.feed for three epochs gives Accelerate's
    prepared loader's order of those epochs (before, feed repeated epoch 0's order)."""
    from accelerate.state import AcceleratorState
    from torch.utils.data import TensorDataset

    from ganstep.adapters.resumable import ResumableLoader

    AcceleratorState._reset_state(True)
    dataset = TensorDataset(torch.arange(8, dtype=torch.float64)[:, None].repeat(1, 2))
    prepared = Accelerator(cpu=True).prepare_data_loader(
        ResumableLoader(dataset, batch_size=4, shuffle=True, seed=5)
    )
    accelerated = [batch[0][:, 0].tolist() for _ in range(3) for batch in prepared]
    G, D = models(batchnorm=False)
    step = plain_step_for_feeding(G, D)
    loader = ResumableLoader(dataset, batch_size=4, shuffle=True, seed=5)
    fed = [batch.x[:, 0].tolist() for batch in step.feed(loader, 6)]
    assert fed == accelerated and fed[:2] != fed[2:4]
    AcceleratorState._reset_state(True)


def plain_step_for_feeding(G, D):
    from ganstep import Step

    opt_g, opt_d = optimizers(G, D)
    return Step(G, D, opt_g, opt_d, objective="ns", schedule="d_first",
                latent=lambda n: torch.randn(n, 3, dtype=torch.float64))  # fmt: skip
