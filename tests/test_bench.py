"""`ganstep bench` as a user runs it: rows, JSON keys, passes, and the plot."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import ganstep
from PIL import Image

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
        assert im.size == (2 * 700, 300)  # a 7-inch panel per model at 100 dpi


def test_bench_variants_and_data_parallel_rows(tmp_path):
    out = tmp_path / "bench.json"
    proc = ganstep("bench", "--models", "dcgan_plain", "--objectives", "ns",
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
    assert by[("dcgan_plain", "ganstep+bf16")]["ms_median"] > 0
    ddp = by[("dcgan_plain", "ganstep+ddp2")]
    assert ddp["schedule"] == "d_first" and ddp["ms_median"] > 0
    # each process runs half of the global batch
    assert ddp["gflops"] == pytest.approx(plain["d_first"]["gflops"] / 2, rel=0.01)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--models", "resnet"], "unknown model 'resnet'"),
        (["--objectives", "gan"], "unknown objective 'gan'"),
        (["--objectives", "bgan"], "'bgan' is not one of them"),  # no reference loop for it
        (["--variants", "turbo"], "unknown variant 'turbo'"),
        (["--processes", "1"], "--processes must be 0 (off) or at least 2, got 1"),
        (["--variants", "graph"], "needs --device cuda"),  # the default device is the CPU
    ],
)
def test_bench_refuses_unknown_names_variants_and_one_process(args, message, capsys):
    from ganstep.cli import main

    assert main(["bench", *args]) == 1
    assert message in capsys.readouterr().err


def test_bench_refuses_the_fused_step_for_a_d_with_batchnorm(capsys):
    from ganstep.cli import main

    assert main(["bench", "--models", "dcgan", "--objectives", "ns", "--variants", "fused"]) == 1
    err = capsys.readouterr().err
    assert "fused runs on none of the models" in err and "BatchNorm in training mode" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--width", "0"], "--width and --batch-size must be at least 1, got 0 and 64"),
        (["--batch-size", "-2"], "--width and --batch-size must be at least 1, got 64 and -2"),
        (["--device", "tpu"], "--device must be cpu or cuda[:N], got 'tpu'"),
    ]
    + ([] if torch.cuda.is_available() else
       [(["--device", "cuda"], "--device cuda asked for, but CUDA is not available")]),
)  # fmt: skip
def test_bench_refuses_bad_sizes_and_devices_in_one_line(args, message, capsys):
    from ganstep.cli import main

    assert main(["bench", *args]) == 1
    err = capsys.readouterr().err
    assert err == f"ganstep: error: {message}\n"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bench_cuda_graph_row():
    from ganstep.tools.bench import bench

    rows = bench(("mlp",), ("ns",), reps=2, warmup=1, device="cuda", variants=("graph",))
    graph = next(r for r in rows if r.impl == "ganstep+graph")
    assert graph.ms_median > 0 and graph.passes["D"]["forward"] == 3


def test_bench_r1_and_accumulation_rows_and_ratio_plot(tmp_path, capsys):
    from ganstep.cli import main

    out, picture = tmp_path / "bench.json", tmp_path / "bench.png"
    assert main(["bench", "--models", "mlp", "--objectives", "ns", "--reps", "1", "--warmup",
                 "0", "--variants", "r1", "r1lazy", "accum4", "--json", str(out),
                 "--plot", str(picture)]) == 0  # fmt: skip
    rows = {r["impl"]: r for r in json.loads(out.read_text()) if r["schedule"] == "d_first"}
    # R1 from the D(real) forward: one D forward fewer than the tutorial way
    assert rows["dcgan_r1"]["passes"]["D"]["forward"] == 4
    assert rows["ganstep+r1"]["passes"]["D"]["forward"] == 3
    assert rows["ganstep+r1"]["gflops"] < rows["dcgan_r1"]["gflops"]
    assert "dcgan_r1/d_first" in rows["ganstep+r1"]["speedup"]
    # FLOPs are counted on a probe's second iteration, where lazy R1 is not due
    assert rows["ganstep+r1lazy"]["gflops"] < rows["ganstep+r1"]["gflops"]
    assert rows["ganstep+accum4"]["passes"]["D"]["forward"] == 12  # 3 per micro-batch
    assert rows["ganstep+accum4"]["gflops"] == pytest.approx(rows["ganstep"]["gflops"])
    with Image.open(picture) as im:
        assert im.size[0] >= 700


def test_spectral_norm_d_rows_show_the_exact_step_against_its_loop(tmp_path):
    """SNGAN/BigGAN's D: simultaneous keeps PyTorch-GAN's three D forwards (exact), and
    the time and FLOP ratios to that loop are measured in the same run."""
    out = tmp_path / "bench.json"
    ganstep("bench", "--models", "dcgan_sn", "dcgan_plain", "--objectives", "ns",
            "--width", 8, "--batch-size", 8, "--reps", 1, "--warmup", 0, "--json", out,
            cache=tmp_path, timeout=300)  # fmt: skip
    rows = json.loads(out.read_text())
    by = {(r["model"], r["impl"], r["schedule"]): r for r in rows}
    exact = by[("dcgan_sn", "ganstep", "simultaneous")]
    merged = by[("dcgan_plain", "ganstep", "simultaneous")]
    assert exact["passes"]["D"]["forward"] == 3 and merged["passes"]["D"]["forward"] == 2
    loop = by[("dcgan_sn", "pytorch_gan_g_first", "simultaneous")]
    assert loop["passes"]["D"]["forward"] == 3
    assert exact["ratio"] > 0
    # D's weight gradients in G's step are still saved; the D forward is not
    assert merged["flop_ratio"] < exact["flop_ratio"] < 1
    assert exact["flop_ratio"] == pytest.approx(exact["gflops"] / loop["gflops"], abs=2e-3)
