"""``ganstep train --graph``: CUDA graphs by default on CUDA, eager elsewhere.

On the CPU: the flag's checks, the reasons a run is not captured, a failed capture
(torch.cuda's graphs stood in for) stopping the run and the command going on without
graphs in a new process, the checkpoint of an eager run loading into a graphed run's
Adam as that Adam (capturable), and a run written on CUDA refused by name on the CPU.
On CUDA: a graphed run equals the eager one (points with lazy R1, a falling rate and
the EMA; conditional images), resumes exactly, a run that cannot be captured says why
in one line, one whose capture really fails goes on without graphs in a new process,
and the loop's steps between its logs never wait for the GPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from helpers import (
    TINY,
    assert_same_state,
    build_trainee,
    checkpoint,
    ganstep,
    records,
)
from helpers.replay import REPLAYS, training_captures_fail_on_cpu, training_captures_on_cpu
from torch.testing import assert_close

from ganstep.cli import main
from ganstep.trainer import trainee as trainee_module
from ganstep.trainer.config import Config
from ganstep.trainer.iteration import WARMUP, Iteration, graph_refusal
from ganstep.trainer.loss_tally import LossTally
from ganstep.trainer.train import prepared_data, train
from ganstep.trainer.trainee import Trainee, _load_keeping_kind

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
POINTS = {"data": "grid", "model": "mlp", "width": 16, "batch_size": 16, "r1": 0.5,
          "r1_every": 3, "lr_decay": "linear", "eval_samples": 200}  # fmt: skip
IMAGES = {"data": "digits", "model": "dcgan", "width": 8, "batch_size": 8, "conditional": True,
          "eval_samples": 40, "feature_steps": 2}  # fmt: skip


def test_the_flag_is_checked_before_anything_runs():
    with pytest.raises(ValueError, match="unknown graph 'sometimes'; choose one of: auto, on"):
        Config(graph="sometimes").validate()
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="graph on captures CUDA graphs, and this run is on"):
            Config(graph="on").validate()
    with pytest.raises(ValueError, match="graph on captures CUDA graphs"):
        Config(graph="on", device="cpu").validate()
    Config(graph="off", device="cpu").validate()
    Config(graph="auto", device="cpu").validate()


def test_the_cli_refuses_graph_on_for_a_cpu_run(tmp_path):
    proc = ganstep("train", "--device", "cpu", "--graph", "on", "--steps", "2", "--out",
                   tmp_path / "run", *TINY, cache=tmp_path / "cache", check=False)  # fmt: skip
    assert proc.returncode != 0
    assert "graph on captures CUDA graphs" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_each_reason_a_run_is_not_captured_is_named():
    trainee, _ = build_trainee(data="grid", model="mlp", width=8, graph="off")
    assert graph_refusal(trainee.cfg, trainee) == "--graph off"
    trainee.cfg = dataclasses.replace(trainee.cfg, graph="auto")
    assert graph_refusal(trainee.cfg, trainee) == "CUDA graphs need a CUDA device"
    trainee.device = torch.device("cuda")  # as a CUDA run would see it, before its checks
    trainee.cfg = dataclasses.replace(trainee.cfg, compile="default")
    assert "torch.compile checks its guards in Python" in graph_refusal(trainee.cfg, trainee)
    trainee.cfg = dataclasses.replace(trainee.cfg, compile="none")
    assert "is not capturable" in graph_refusal(trainee.cfg, trainee)  # the CPU's Adam


def test_a_failed_capture_stops_the_run_saying_how_to_go_on(tmp_path, monkeypatch, capsys):
    """A capture that fails (here on the CPU, with torch.cuda's graphs stood in for),
    where ``main`` runs in the caller's process (the command itself relaunches, below):
    one line naming --graph off, nothing saved of the failed step, and the run resumed
    without graphs from its last checkpoint trains to the end."""
    training_captures_fail_on_cpu(monkeypatch)
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    args = ["train", "--device", "cpu", "--steps", "8", "--ckpt-every", "2", "--out", str(run)]
    assert main([*args, *TINY]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "ganstep: error: CUDA graph capture failed (RuntimeError: CUDA error: operation not "
        "permitted when stream is capturing); train with --graph off (--resume continues "
        "from the last checkpoint), and please report this"
    )
    # the default run's kinds: iteration 1 with lazy R1, then the plain kind, captured at
    # its third call (WARMUP + 1), which failed: steps 1-3 ran, checkpoint at 2
    assert [c.name for c in sorted((run / "checkpoints").glob("step_*.pt"))] == ["step_00000002.pt"]
    assert main([*args, "--resume", "--graph", "off", "--no-progress"]) == 0
    assert checkpoint(run)["step"] == 8


# The ganstep command with the stand-ins of training_captures_fail_on_cpu: each capture
# fails; the process it relaunches (python -m ganstep ... --graph off) has none.
RELAUNCHING = """
import sys

import pytest

sys.path.insert(0, {tests!r})
from helpers.replay import training_captures_fail_on_cpu

from ganstep.cli import run

training_captures_fail_on_cpu(pytest.MonkeyPatch())
run()
"""


@pytest.mark.parametrize("ckpt_every", [2, 1000], ids=["checkpoint-before", "none-before"])
def test_the_command_goes_on_without_graphs_in_a_new_process(tmp_path, monkeypatch, ckpt_every):
    """``ganstep train`` (``--graph auto``) whose capture fails says so in one line and
    replaces itself by the same command resumed with ``--graph off``: the run ends as the
    stop and a manual ``--resume --graph off`` end it, or, stopped before its first
    checkpoint, as a run without graphs from the start."""
    script = tmp_path / "relaunching.py"
    script.write_text(RELAUNCHING.format(tests=str(Path(__file__).parent)))
    args = ["train", "--device", "cpu", "--steps", "8", "--ckpt-every", str(ckpt_every), *TINY]
    cache = tmp_path / "cache"
    proc = ganstep(*args, "--out", tmp_path / "auto", cache=cache, script=script, timeout=300)
    notes = [line for line in proc.stderr.splitlines() if "CUDA graph" in line]
    assert notes == [
        "ganstep: CUDA graph capture failed (RuntimeError: CUDA error: operation not "
        "permitted when stream is capturing); going on without CUDA graphs in a new process "
        "(--resume --graph off), from the last checkpoint; please report this"
    ]
    assert checkpoint(tmp_path / "auto")["step"] == 8
    if ckpt_every == 2:  # what the stop and a resume by hand make
        training_captures_fail_on_cpu(monkeypatch)
        monkeypatch.setenv("GANSTEP_CACHE", str(cache))
        by_hand = [*args, "--out", str(tmp_path / "by_hand")]
        assert main(by_hand) == 1
        assert main([*by_hand, "--resume", "--graph", "off"]) == 0
        assert_same_state(checkpoint(tmp_path / "auto"), checkpoint(tmp_path / "by_hand"))
        config = (tmp_path / "auto" / "config.toml").read_text()
        assert '# resumed at step 2: graph "auto" -> "off"' in config
    else:  # afresh, as the stale attempt's warning says
        assert "it starts afresh" in proc.stderr
        ganstep(*args, "--graph", "off", "--out", tmp_path / "off", cache=cache)
        assert_same_state(checkpoint(tmp_path / "auto"), checkpoint(tmp_path / "off"))


def test_a_graphed_runs_replays_find_the_settings_their_capture_saw(tmp_path, monkeypatch):
    """Each replay checks that the optimizers' settings are those its graph reads (a
    float rate changed, or a rate tensor replaced, would be ignored by every replay): a
    run whose rate falls, stopped and resumed, passes the check at each replay (the
    captures and replays stood in for on the CPU)."""
    training_captures_on_cpu(monkeypatch)
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path / "cache"))
    args = ["train", "--device", "cpu", "--lr-decay", "linear", "--ckpt-every", "6",
            "--out", str(tmp_path / "run"), *TINY]  # fmt: skip
    REPLAYS.clear()
    assert main([*args, "--steps", "12"]) == 0
    assert main([*args, "--steps", "24", "--resume"]) == 0
    assert len(REPLAYS) >= 24 - 4 * (WARMUP + 1)  # each run: two kinds, each warmed up


def test_an_eager_checkpoint_loads_into_a_graphed_runs_adam_as_that_adam():
    """torch takes the saved groups' flags: an eager run's checkpoint would have made
    the resumed graphed run's Adam not capturable (and the run quietly eager)."""
    p = torch.nn.Parameter(torch.randn(3))
    eager = torch.optim.Adam([p], 0.01)
    p.grad = torch.ones(3)
    eager.step()
    graphed = torch.optim.Adam([p], torch.tensor(0.01), capturable=True, foreach=True)
    _load_keeping_kind(graphed, eager.state_dict())
    group = graphed.param_groups[0]
    assert group["capturable"] is True and group["foreach"] is True
    assert graphed.state[p]["step"].dtype == torch.float32
    assert torch.equal(graphed.state[p]["exp_avg"], eager.state[p]["exp_avg"])
    back = torch.optim.Adam([p], 0.01)  # and a graphed run's checkpoint into an eager Adam
    _load_keeping_kind(back, graphed.state_dict())
    assert back.param_groups[0]["capturable"] is False


def test_a_run_written_on_cuda_is_refused_by_name_on_the_cpu():
    """Before: torch's 'RNG state is wrong size' from deep inside the resume."""
    trainee, data = build_trainee(data="grid", model="mlp", width=8)
    state = trainee.state_dict()
    cuda_state = torch.zeros(16, dtype=torch.uint8)  # a CUDA generator's (seed, offset)
    state["rng"] = {**state["rng"], "latent": cuda_state}
    state["rng_ranks"] = [state["rng"]]
    again, _ = build_trainee(data="grid", model="mlp", width=8)
    with pytest.raises(ValueError, match="z stream was drawn on CUDA and this run is on the CPU"):
        again.load_state_dict(state)


# --- on CUDA ---------------------------------------------------------------------------


def run(tmp_path, name, graph, steps, values, resume=False):
    cfg = Config(out=str(tmp_path / name), seed=3, steps=steps, eval_every=4, sample_every=8,
                 ckpt_every=4, log_every=1, device="cuda", graph=graph, **values)  # fmt: skip
    train(cfg, resume=resume, progress=False)
    return checkpoint(tmp_path / name), records(tmp_path / name)


ADA = {**IMAGES, "conditional": False, "augment": "ada", "r1": 1.0, "r1_every": 2}
FP16 = {**IMAGES, "conditional": False, "precision": "fp16"}


@needs_cuda
@pytest.mark.parametrize("values", [POINTS, IMAGES, ADA, {**POINTS, "accumulate": 2}, FP16],
                         ids=["points-lazy_r1", "images-cgan", "images-ada-lazy_r1",
                              "points-lazy_r1-accumulate2", "images-fp16"])  # fmt: skip
def test_a_graphed_run_equals_the_eager_run(tmp_path, monkeypatch, values):
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path / "cache"))
    if values.get("precision") == "fp16":
        # the eager run builds the graphed run's Adam (fused, capturable): fp16 runs on two
        # kinds of Adam part at rounding, which the loss scales then magnify
        monkeypatch.setattr(trainee_module, "adam_for_graphs", lambda device, cfg: True)
    graphed, graphed_records = run(tmp_path, "graphed", "on", 12, values)
    eager, eager_records = run(tmp_path, "eager", "off", 12, values)
    for key in ("G", "D", "ema"):
        for name, value in graphed[key].items():
            assert_close(value, eager[key][name], rtol=1e-4, atol=1e-5, msg=f"{key}.{name}")
    assert graphed["step_state"]["iteration"] == eager["step_state"]["iteration"] == 12
    assert graphed["step_state"]["d_updates"] == eager["step_state"]["d_updates"]
    if "augment" in values:  # ADA's p moved in the graph as in the eager run
        for key in ("p", "totals"):
            assert_close(graphed["step_state"]["augment"][key], eager["step_state"]["augment"][key])
    for a, b in zip(graphed_records, eager_records, strict=True):
        for key in a:
            if key.startswith("loss"):
                assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-5), key


@needs_cuda
def test_a_graphed_run_resumes_as_if_it_never_stopped(tmp_path, monkeypatch):
    # A constant rate: a linear decay is set by --steps, which the resume changes (a run
    # of 8 steps decays to 0 at step 8; resumed to 16, it is another run, as warned).
    values = {**POINTS, "lr_decay": "none"}
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path / "cache"))
    straight, _ = run(tmp_path, "straight", "on", 16, values)
    run(tmp_path, "split", "on", 8, values)
    split, _ = run(tmp_path, "split", "on", 16, values, resume=True)
    for key in ("G", "D", "ema"):
        for name, value in straight[key].items():
            assert_close(value, split[key][name], rtol=1e-5, atol=1e-6, msg=f"{key}.{name}")
    for key in ("latent", "data"):
        assert torch.equal(straight["rng"][key], split["rng"][key]), key


@needs_cuda
def test_a_run_that_cannot_be_captured_says_why_and_trains(tmp_path):
    args = ["train", "--device", "cuda", "--steps", "3", "--schedule", "simultaneous",
            "--fused", "--objective", "ns", *TINY]  # fmt: skip
    proc = ganstep(*args, "--out", tmp_path / "a", cache=tmp_path / "cache")
    note = [line for line in proc.stderr.splitlines() if "not from CUDA graphs" in line]
    assert len(note) == 1 and "fused step reads a flag on the host" in note[0]
    refused = ganstep(*args, "--graph", "on", "--out", tmp_path / "b", cache=tmp_path / "cache",
                      check=False)  # fmt: skip
    assert refused.returncode != 0 and "--graph on: CUDA graph capture" in refused.stderr


@needs_cuda
def test_a_graphed_runs_steps_between_its_logs_never_wait_for_the_gpu():
    """What the training loop does each step between its logs (the decayed rate set in
    place, the iteration replayed, its losses added to the tally on the device) reads
    nothing back, so the host runs ahead of the GPU: what graphs gain where an
    iteration's Python outlasts its kernels. The Trainee is given "cuda", as a user of
    it may give it, not train()'s "cuda:0": its rate is set in place either way."""
    device = torch.device("cuda")
    data, cfg = prepared_data(Config(**POINTS, steps=100, device="cuda"))
    trainee = Trainee(cfg, data, device)
    iteration, tally = Iteration(cfg, data, trainee, writer=False), LossTally(device)

    def steps(first: int, last: int) -> None:  # as _training_loop runs them
        for done in range(first, last + 1):
            trainee.set_lr(1 - (done - 1) / cfg.steps)
            tally.add(iteration(), done)

    def rate_tensors() -> list[torch.Tensor]:
        return [group["lr"] for opt in (trainee.opt_g, trainee.opt_d) for group in opt.param_groups]

    steps(1, 16)  # each kind's eager warmups and its capture (lazy R1: two kinds)
    graphs = iteration.graphs
    assert graphs is not None and len(graphs.graphs) == 2
    assert set(graphs.eager_runs) == set(graphs.graphs)  # every kind seen is captured
    read = rate_tensors()
    torch.cuda.set_sync_debug_mode("error")  # any host synchronisation raises
    try:
        steps(17, 24)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    tally.check()  # the logging step's one read: the losses were finite
    assert trainee.step.progress.iteration == 24
    # the rates are the tensors the graphs read, holding the last step's values
    assert all(a is b for a, b in zip(read, rate_tensors(), strict=True))
    rate = trainee.rates["d"][0] * (1 - 23 / cfg.steps)
    assert trainee.opt_d.param_groups[0]["lr"].item() == pytest.approx(rate)


# A host read inside the iteration, which no graph can hold: its capture really fails.
FAILING_CAPTURE = """
import torch

from ganstep.cli import run
from ganstep.trainer import trainee

update_ema = trainee.Trainee.update_ema


def syncing(self):
    update_ema(self)
    if torch.cuda.is_current_stream_capturing():
        torch.zeros(1, device=self.device).item()


trainee.Trainee.update_ema = syncing
run()
"""


@needs_cuda
def test_a_capture_that_fails_on_cuda_goes_on_without_graphs_in_a_new_process(tmp_path):
    """A capture that really fails (in its own process: torch leaves that process's
    allocator in capture mode, which would fail the CUDA tests after it): the command
    says so in one line and a new process, without graphs, trains the run to its end
    from its last checkpoint."""
    script = tmp_path / "failing_capture.py"
    script.write_text(FAILING_CAPTURE)
    run = tmp_path / "run"
    proc = ganstep("train", "--device", "cuda", "--steps", "6", "--ckpt-every", "2", "--out",
                   run, *TINY, cache=tmp_path / "cache", script=script, timeout=300)  # fmt: skip
    notes = [line for line in proc.stderr.splitlines() if "CUDA graph" in line]
    # torch >= 2.8 raises CUDA errors as torch.AcceleratorError, before as RuntimeError
    assert len(notes) == 1 and notes[0].startswith("ganstep: CUDA graph capture failed ("), notes
    assert "going on without CUDA graphs in a new process" in notes[0]
    assert checkpoint(run)["step"] == 6
    # the capture of iteration 4 failed: resumed from step 2
    assert '# resumed at step 2: graph "auto" -> "off"' in (run / "config.toml").read_text()
