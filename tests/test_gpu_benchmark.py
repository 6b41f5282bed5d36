"""benchmarks/gpu.py runs end to end: on a CPU the rows a CPU can run (a smoke test of
the script), on CUDA the graph rows too. Its figures are for RESULTS.md, not tests."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "gpu.py"


def gpu_benchmark():
    spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(device: str, tmp_path: Path) -> tuple[list[dict], dict]:
    out = tmp_path / "gpu.json"
    rows = gpu_benchmark().main(["--device", device, "--quick", "--sizes", "32:4:8",
                                 "--no-default-run", "--json", str(out)])  # fmt: skip
    saved = json.loads(out.read_text())
    assert saved["rows"] == rows
    return rows, saved["machine"]


def test_a_cpu_run_measures_every_order_beside_its_loops(tmp_path):
    rows, machine = run("cpu", tmp_path)
    impls = {r["impl"]: r for r in rows}
    for order in ("d_first", "g_first", "simultaneous"):
        for variant in ("eager", "bf16"):
            row = impls[f"{order}:{variant}"]
            assert row["ms"] > 0 and row["speedup_vs_dcgan_example"] > 0
            assert row["speedup_vs_own_reference"] > 0
    assert "speedup_vs_hand_loop" in impls["d_first:eager"]
    assert not any(":graph" in name or ":compile" in name for name in impls)  # CPU, quick
    assert {r["impl"] for r in rows if r["section"] == "began"} == {
        "post_d_first",
        "post_g_first",
        "ganstep_d_first",
        "ganstep_simultaneous",
    }
    assert machine["variants"] == ["eager", "bf16"]
    fused = {r["impl"]: r for r in rows if r["section"] == "fused"}
    assert set(fused) == {"ns:unfused", "ns:fused", "wgan_gp:unfused", "wgan_gp:fused"}
    assert fused["ns:fused"]["fused_over_unfused"] > 0
    assert fused["wgan_gp:fused"]["fused_over_unfused"] > 0
    # d_first does fewer FLOPs than the DCGAN example (no second D forward on the fakes)
    assert 0 < impls["d_first:eager"]["flop_ratio_vs_dcgan_example"] < 1
    assert impls["dcgan_example"]["gflops"] > impls["d_first:eager"]["gflops"]
    goals = [r["impl"] for r in rows if r["section"] == "goals"]
    assert goals == ["dcgan32_b4_w8 d_first eager time / DCGAN example's",
                     *(f"dcgan32_b4_w8 {o} bf16 time / fp32's"
                       for o in ("d_first", "g_first", "simultaneous"))]  # fmt: skip
    assert all(isinstance(r["met"], bool) for r in rows if r["section"] == "goals")


def test_each_goal_is_read_from_its_rows_against_its_bar():
    size = "dcgan32_b128"
    rows = [
        {"section": size, "impl": "dcgan_example", "ms": 10.0},
        {"section": size, "impl": "d_first:eager", "ms": 9.3, "flop_ratio_vs_dcgan_example": 0.916},
        {"section": size, "impl": "d_first:graph", "ms": 2.0},
        {"section": size, "impl": "d_first:bf16", "ms": 8.0},
        {"section": size, "impl": "g_first:eager", "ms": 9.0},
        {"section": size, "impl": "g_first:bf16", "ms": 9.5},
        {"section": "default_run", "impl": "ganstep train --device cuda", "s": 30.0,
         "fraction_of_cpu_time": 0.6},
        {"section": "default_run", "impl": "ganstep train --device cpu", "s": 50.0},
    ]  # fmt: skip
    goals = {r["impl"]: r for r in gpu_benchmark().goals_section(rows, size, size)}
    eager = goals[f"{size} d_first eager time / DCGAN example's"]
    assert (eager["measured"], eager["bar"], eager["met"]) == (
        0.93, "<= 0.936 (FLOP ratio 0.916 + 0.02)", True)  # fmt: skip
    graph = goals[f"{size} d_first graph speed-up over the DCGAN example"]
    assert (graph["measured"], graph["met"]) == (5.0, True)
    assert goals[f"{size} d_first bf16 time / fp32's"]["met"] is True
    assert goals[f"{size} g_first bf16 time / fp32's"]["met"] is False
    assert f"{size} simultaneous bf16 time / fp32's" not in goals  # not measured: no goal
    default = goals["default run: CUDA time / CPU time"]
    assert (default["measured"], default["met"]) == (0.6, False)
    rows[1]["ms"] = 9.4  # 0.94 > 0.936
    goals = gpu_benchmark().goals_section(rows, size, size)
    assert goals[0]["met"] is False


def test_no_cuda_is_refused_in_one_line(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SystemExit):
        gpu_benchmark().main(["--device", "cuda"])
    assert "no CUDA device here: give --device cpu" in capsys.readouterr().err


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_run_has_graph_rows(tmp_path):
    rows, machine = run("cuda", tmp_path)
    impls = {r["impl"] for r in rows}
    assert {"d_first:graph", "g_first:graph", "simultaneous:graph"} <= impls
    assert {"d_first:graph_bf16", "simultaneous:graph_bf16"} <= impls
    assert machine["device"] == torch.cuda.get_device_name()


def test_compile_rows_come_last_and_each_section_is_saved_as_it_ends(tmp_path, monkeypatch):
    # compiling takes minutes on a fresh GPU machine: a run cut short by a time limit
    # keeps every section before it, printed and in the JSON
    module, ran = gpu_benchmark(), []

    def orders(size_name, device, variants, *rest):
        ran.append((size_name, *variants))
        return [{"section": size_name, "impl": "x", "ms": 1.0}]

    def other(name):
        def section(*args):
            ran.append((name,))
            if name == "default_run":
                raise KeyboardInterrupt  # stopped here, as a time limit would stop it
            return [{"section": name, "impl": "x", "ms": 1.0}]

        return section

    monkeypatch.setattr(module, "orders_section", orders)
    for name in ("began", "fused", "default_run"):
        monkeypatch.setattr(module, f"{name}_section", other(name))
    out = tmp_path / "gpu.json"
    module.main(["--device", "cpu", "--json", str(out), "--no-default-run"])
    plain, compiled = ("eager", "bf16"), ("eager", "compile")
    assert ran == [("dcgan32_b128", *plain), ("began",), ("fused",), ("dcgan64_b256", *plain),
                   ("dcgan32_b128", *compiled), ("dcgan64_b256", *compiled)]  # fmt: skip
    ran.clear()
    with pytest.raises(KeyboardInterrupt):
        module.main(["--device", "cpu", "--json", str(out)])
    assert [r[0] for r in ran] == ["dcgan32_b128", "began", "fused", "dcgan64_b256", "default_run"]
    saved = json.loads(out.read_text())["rows"]
    assert [r["section"] for r in saved] == ["dcgan32_b128", "began", "fused", "dcgan64_b256"]


def test_a_failed_section_is_recorded_and_the_run_goes_on_in_a_new_process(
    tmp_path, monkeypatch, capfd
):
    # a failed CUDA graph capture leaves torch's CUDA state unfit to go on in the same
    # process: the section's error is a row, and the rest runs in a new one (here the
    # real script, on the CPU), which still reads the rows measured before the failure
    module = gpu_benchmark()
    size = "dcgan32_b4_w8"
    measured = [
        {"section": size, "impl": "dcgan_example", "ms": 10.0, "gflops": 1.0},
        {"section": size, "impl": "d_first:eager", "ms": 9.0, "flop_ratio_vs_dcgan_example": 0.9},
    ]  # fmt: skip

    failure = "CUDA graph capture failed (a stand-in)"

    def began(*args):
        raise RuntimeError(failure)

    monkeypatch.setattr(module, "orders_section", lambda *args: [dict(r) for r in measured])
    monkeypatch.setattr(module, "began_section", began)
    rows = module.main(["--device", "cpu", "--quick", "--sizes", "32:4:8", "--no-default-run"])
    error = {"section": "began", "impl": "error", "error": f"RuntimeError: {failure}"}
    assert rows[:3] == [*measured, error]
    # the new process ran the sections after the failed one: fused, then the goals,
    # which read the rows before the failure
    assert [r["section"] for r in rows[3:]] == ["fused"] * 4 + ["goals"]
    assert all(r["ms"] > 0 for r in rows[3:7])
    goal = rows[7]
    assert goal["impl"] == f"{size} d_first eager time / DCGAN example's"
    assert (goal["measured"], goal["met"]) == (0.9, True)
    printed = capfd.readouterr().out
    assert printed.index("## began\nerror") < printed.index("## fused") < printed.index("## goals")


def test_after_a_failure_the_run_retries_a_graph_section_without_graphs_else_goes_past_it():
    module = gpu_benchmark()
    variants = ["eager", "graph", "bf16", "graph_bf16", "compile"]
    with_graphs = module.Section("dcgan32_b128", True, list)
    assert module.after_failure(0, with_graphs, variants) == (0, ["eager", "bf16", "compile"])
    without = module.Section("began", False, list)
    assert module.after_failure(1, without, variants) == (2, variants)


@pytest.mark.parametrize("spec", ["32:4", "48:4:8", "32:0:8", "32:4:-8", "big"])
def test_a_size_it_cannot_build_is_refused_in_one_line(spec, capsys):
    with pytest.raises(SystemExit):
        gpu_benchmark().main(["--device", "cpu", "--sizes", "dcgan32_b128", spec])
    err = capsys.readouterr().err
    assert f"--sizes {spec!r}: give size:batch:width (size 32 or 64" in err
