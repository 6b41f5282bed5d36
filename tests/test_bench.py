"""`ganstep bench` as a user runs it: rows, JSON keys, passes, and the plot."""

from __future__ import annotations

import json

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
