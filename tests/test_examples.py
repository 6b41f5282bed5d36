"""examples/: the MNIST DCGAN run under Lightning and under Accelerate, and a DCGAN loop
of one's own replayed from CUDA graphs, run as a user would (here on the bundled digits,
a few steps, one process; the graphs on CUDA only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import environment

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("name, needs", [("lightning_dcgan.py", "lightning"),
                                         ("accelerate_dcgan.py", "accelerate")])  # fmt: skip
def test_example_trains_and_writes_its_logs(tmp_path, name, needs):
    pytest.importorskip(needs)
    cmd = [sys.executable, str(EXAMPLES / name), "--data", "digits", "--steps", "3",
           "--batch-size", "16"]  # fmt: skip
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=environment(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    logs = tmp_path / ("lightning_logs" if needs == "lightning" else "accelerate_logs")
    assert list(logs.rglob("events.out.tfevents.*")), "no TensorBoard events written"
    if needs == "lightning":
        assert list(logs.rglob("*.ckpt")), "no checkpoint written"
    else:
        assert (tmp_path / "accelerate_state").is_dir()


def test_lightning_example_resumed_from_20_to_40_equals_a_straight_40(tmp_path):
    """Every tensor of the checkpoints' models, optimizers, Steps and random streams,
    and the loader's place (digits at batch 16: mid-epoch at 20 and 40)."""
    pytest.importorskip("lightning")

    def run(folder: Path, steps: int, *resume: str) -> Path:
        folder.mkdir(exist_ok=True)
        cmd = [sys.executable, str(EXAMPLES / "lightning_dcgan.py"), "--data", "digits",
               "--steps", str(steps), "--batch-size", "16", *resume]  # fmt: skip
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=300,
                              env=environment(folder))  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return max(folder.rglob(f"*step={steps}.ckpt"), key=lambda p: p.stat().st_mtime)

    first = run(tmp_path / "resumed", 20)
    resumed = torch.load(run(tmp_path / "resumed", 40, "--resume", str(first)),
                         weights_only=False)  # fmt: skip
    straight = torch.load(run(tmp_path / "straight", 40), weights_only=False)

    def tensors(checkpoint: dict) -> dict:
        out = {f"model.{k}": v for k, v in checkpoint["state_dict"].items()}
        for i, opt in enumerate(checkpoint["optimizer_states"]):
            for p, state in opt["state"].items():
                out |= {f"opt{i}.{p}.{k}": torch.as_tensor(v) for k, v in state.items()}
        rng = checkpoint["ganstep"]["rng_ranks"][0]
        return out | {"rng.torch": rng["torch"], "rng.latent": rng["latent"]}

    ours, theirs = tensors(resumed), tensors(straight)
    assert ours.keys() == theirs.keys() and len(ours) > 30
    assert [k for k in ours if not torch.equal(ours[k], theirs[k])] == []
    assert resumed["ganstep"]["step"] == straight["ganstep"]["step"]
    assert resumed["loops"]["fit_loop"]["state_dict"] == straight["loops"]["fit_loop"]["state_dict"]


def run_graph_example(folder: Path, *args: str) -> subprocess.CompletedProcess:
    folder.mkdir(exist_ok=True)
    cmd = [sys.executable, str(EXAMPLES / "cuda_graph_dcgan.py"), "--batch-size", "16",
           "--width", "8", *args]  # fmt: skip
    done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=300,
                          env=environment(folder))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_the_cuda_graph_example_runs_eagerly_on_the_cpu_and_goes_on_from_its_checkpoint(
    tmp_path,
):
    first = run_graph_example(tmp_path, "--device", "cpu", "--steps", "6")
    assert first.stdout.splitlines()[-1] == "eager: 6 iterations; saved cuda_graph_dcgan.pt"
    done = run_graph_example(tmp_path, "--device", "cpu", "--steps", "9", "--resume")
    assert done.stdout.splitlines()[-2].startswith("step 9: loss_d ")
    saved = torch.load(tmp_path / "cuda_graph_dcgan.pt", weights_only=False)
    assert saved["iteration"] == 9 and saved["step"]["iteration"] == 9
    assert saved["opt_d"]["param_groups"][0]["lr"] == pytest.approx(2e-4 / 9)  # decayed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_cuda_graph_example_from_graphs_equals_it_eager_and_resumes(tmp_path):
    """40 iterations from CUDA graphs (captured at the fourth) against the same loop
    eager: the same models; then 20 more from the checkpoint, again graphed."""
    graphed = run_graph_example(tmp_path / "graphed", "--device", "cuda", "--steps", "40")
    assert graphed.stdout.splitlines()[-1].startswith("CUDA graphs: 40 iterations")
    run_graph_example(tmp_path / "eager", "--device", "cuda", "--steps", "40", "--no-graph")
    ours, theirs = (torch.load(tmp_path / f / "cuda_graph_dcgan.pt", weights_only=False)
                    for f in ("graphed", "eager"))  # fmt: skip
    for module in ("G", "D"):
        for key, value in theirs[module].items():
            torch.testing.assert_close(ours[module][key], value, rtol=1e-3, atol=1e-4)
    again = run_graph_example(tmp_path / "graphed", "--device", "cuda", "--steps", "60",
                              "--resume")  # fmt: skip
    assert again.stdout.splitlines()[-1].startswith("CUDA graphs: 60 iterations")
