"""`ganstep bench` as a user runs it: rows, JSON keys, passes, and the plot."""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image
from test_cli import ganstep

KEYS = {"model", "objective", "schedule", "impl", "ms_median", "ms_min", "ms_max",
        "peak_mem_bytes", "gflops"}  # fmt: skip


def test_bench_rows_json_and_plot(tmp_path):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    proc = ganstep("bench", "--models", "mlp", "dcgan", "--objectives", "ns", "--width", 8,
                   "--batch-size", 8,
                   "--reps", 2, "--warmup", 0, "--json", out, "--plot", png,
                   cache=tmp_path)  # fmt: skip
    assert "ganstep" in proc.stdout and "pytorch_gan_g_first" in proc.stdout
    rows = json.loads(out.read_text())
    assert all(KEYS <= set(r) for r in rows)
    by = {(r["model"], r["impl"], r["schedule"]): r for r in rows}
    assert len(by) == 14  # 2 models x (3 schedules x (ganstep + reference) + hand-written)
    for model in ("mlp", "dcgan"):
        ours = by[(model, "ganstep", "simultaneous")]
        theirs = by[(model, "pytorch_gan_g_first", "simultaneous")]
        assert ours["passes"]["D"]["forward"] == 2 and theirs["passes"]["D"]["forward"] == 3
        assert ours["passes"]["G"] == {"forward": 1, "backward": 1}
        assert ours["gflops"] < theirs["gflops"]
        assert ours["ratio"] > 0 and ours["ms_min"] <= ours["ms_median"] <= ours["ms_max"]
        assert (
            by[(model, "ganstep", "d_first")]["gflops"]
            < by[(model, "dcgan_example", "d_first")]["gflops"]
        )
        assert ours["peak_mem_bytes"] > 0
    with Image.open(png) as im:
        assert im.size == (1000, 400)


def test_bench_refuses_unknown_names(tmp_path):
    proc = ganstep("bench", "--models", "resnet", cache=tmp_path, check=False)
    assert proc.returncode == 1 and "unknown model 'resnet'" in proc.stderr
    proc = ganstep("bench", "--objectives", "gan", cache=tmp_path, check=False)
    assert proc.returncode == 1 and "unknown objective 'gan'" in proc.stderr


def test_bench_variants_and_data_parallel_rows(tmp_path):
    out = tmp_path / "bench.json"
    proc = ganstep("bench", "--models", "dcgan_plain", "dcgan", "--objectives", "ns",
                   "--width", 8, "--batch-size", 8, "--reps", 1, "--warmup", 0,
                   "--variants", "fused", "bf16", "--processes", 2, "--json", out,
                   cache=tmp_path, timeout=300)  # fmt: skip
    assert "speedup" in proc.stdout
    rows = json.loads(out.read_text())
    by = {(r["model"], r["impl"]): r for r in rows if r["impl"] != "ganstep"}
    plain = {
        r["schedule"]: r for r in rows if r["impl"] == "ganstep" and r["model"] == "dcgan_plain"
    }
    fused = by[("dcgan_plain", "ganstep+fused")]
    assert fused["schedule"] == "simultaneous"
    assert fused["passes"]["D"] == {"forward": 2, "backward": 2}  # one backward per D call
    assert set(fused["speedup"]) == {"pytorch_gan_g_first/simultaneous", "ganstep/simultaneous",
                                     "dcgan_example/d_first"}  # fmt: skip
    assert fused["gflops"] < plain["simultaneous"]["gflops"]  # one D backward fewer
    assert ("dcgan", "ganstep+fused") not in by  # refused: the DCGAN D has BatchNorm
    assert by[("dcgan", "ganstep+bf16")]["ms_median"] > 0
    ddp = by[("dcgan_plain", "ganstep+ddp2")]
    assert ddp["schedule"] == "d_first" and ddp["ms_median"] > 0
    # each process runs half of the global batch
    assert ddp["gflops"] == pytest.approx(plain["d_first"]["gflops"] / 2, rel=0.01)


def test_bench_refuses_unknown_variants_and_one_process(tmp_path):
    proc = ganstep("bench", "--variants", "turbo", cache=tmp_path, check=False)
    assert proc.returncode == 1 and "unknown variant 'turbo'" in proc.stderr
    proc = ganstep("bench", "--processes", 1, cache=tmp_path, check=False)
    assert proc.returncode == 1 and "--processes" in proc.stderr
    proc = ganstep("bench", "--variants", "graph", cache=tmp_path, check=False)
    assert proc.returncode == 1 and "needs --device cuda" in proc.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bench_cuda_graph_row():
    from ganstep.bench import bench

    rows = bench(("mlp",), ("ns",), reps=2, warmup=1, device="cuda", variants=("graph",))
    graph = next(r for r in rows if r.impl == "ganstep+graph")
    assert graph.ms_median > 0 and graph.passes["D"]["forward"] == 3
