"""The GPU benchmark in one command (issue 51): about five minutes on one GPU.

    python benchmarks/gpu.py [--json benchmarks/results/gpu.json] [--quick]

For each update order, ganstep's Step eager, replayed from a CUDA graph, under bf16
autocast (alone and in a graph) and through torch.compile, next to the loops it
replaces (the DCGAN example, a minimal hand-written d_first loop, Lightning's g_first
loop, PyTorch-GAN's loop), at DCGAN-32 batch 128 and DCGAN-64 batch 256; BEGAN's two
orders as the first seed post wrote them ("G first is 8x faster") and as Steps; the
fused step with its host sync (ns) and without (WGAN-GP), each against its unfused
step; and the README's ``ganstep train`` on CUDA against the same command on this
machine's CPU. Every figure of a section is measured interleaved in one process
(A B C A B C ...), so the ratios it prints are side by side; the JSON records them
with the GPU's name, for benchmarks/RESULTS.md. A ``goals`` section then sets issue
51's bars beside the figures (eager d_first's time ratio to the DCGAN example against
its FLOP ratio, counted here; the graph's speed-up; bf16 against fp32 at the larger
size; the default run against the CPU), each marked met or not. Each section is
printed and saved as it ends, and compile's rows (which compile for minutes on a fresh
machine) come last, each order's beside its eager Step and the loops again: a run
stopped at a time limit keeps every section it finished. A section that fails (a CUDA
graph capture, say) is recorded as an ``error`` row and the run goes on in a new process
(a failed capture leaves torch's CUDA state unfit to go on in this one): from that
section again without the graph variants where it had them, else from the next one.

``--device cpu`` runs what a CPU can (no graph rows) on small sizes: a smoke test of
the script, not a measurement to record.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import torch

from ganstep import Step, simultaneous
from ganstep.tools import reference
from ganstep.tools.bench import PAIRS, flops, hand_minimal_d_first, make_pair, time_interleaved
from ganstep.trainer.backends import cuda_backends


class Section(NamedTuple):
    """One part of the run: its name (its rows' section), whether it measures a CUDA
    graph, and what measures it."""

    name: str
    graphs: bool
    run: Callable[[], list[dict]]


# (image size, batch, DCGAN width): where the example is written, and where arithmetic counts
SIZES = {"dcgan32_b128": (32, 128, 64), "dcgan64_b256": (64, 256, 64)}
VARIANTS = ("eager", "graph", "bf16", "graph_bf16", "compile")
REFERENCES = {"d_first": "dcgan_example", "g_first": "lightning_g_first",
              "simultaneous": "pytorch_gan_g_first"}  # fmt: skip


def step_factory(order: str, variant: str, pair: Callable[[], tuple]) -> Callable[[], object]:
    """One iteration of ganstep's ``order`` as ``variant`` runs it, on fresh models."""
    G, D, opt_g, opt_d, latent, real = pair()
    schedule = PAIRS[order][0]
    options = {"compile": {"compile": True}}.get(variant, {})
    if "bf16" in variant:  # bf16 alone pays autocast's casts on the host every iteration
        options["precision"] = "bf16"
    if variant.startswith("graph"):
        from ganstep.engine.cuda_graph import GraphedStep

        opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999), capturable=True)
        opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999), capturable=True)
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=schedule, latent=latent, **options)
    step.observe_d(real)
    if variant.startswith("graph"):
        graphed = GraphedStep(step, real, warmup=1, generators=[latent.generator])
        return lambda: graphed(real)
    return lambda: step(real)


def loop_factory(name: str, pair: Callable[[], tuple], objective: str = "ns"):
    """One iteration of a reference loop (or the minimal hand loop) on fresh models."""
    G, D, opt_g, opt_d, latent, real = pair()
    if name == "hand_minimal_d_first":
        return lambda: hand_minimal_d_first(G, D, opt_g, opt_d, real, latent)
    loop = getattr(reference, name)
    return lambda: loop(G, D, opt_g, opt_d, [real], latent, objective)


def medians(fns: dict[str, Callable], reps: int, warmup: int, device: str) -> dict[str, float]:
    times = time_interleaved(fns, reps, warmup, device)
    return {name: statistics.median(ms) for name, ms in times.items()}


def orders_section(size_name: str, device: str, variants: list[str], reps: int, warmup: int,
                   sizes: dict, label: str = "") -> list[dict]:  # fmt: skip
    """Every order x variant beside the reference loops, at one size; rows with ratios,
    in the section ``size_name`` (with `` label`` after it, where given)."""
    size, batch, width = sizes[size_name]

    def pair():
        return make_pair("dcgan", "ns", batch, width, device, size=size)

    fns = {f"{order}:{v}": step_factory(order, v, pair) for order in REFERENCES for v in variants}
    loops = [*REFERENCES.values(), "hand_minimal_d_first"]
    fns.update({name: loop_factory(name, pair) for name in loops})
    ms = medians(fns, reps, warmup, device)
    # FLOPs of one iteration where Python runs it (a replay or compiled code hides its
    # ops from FlopCounterMode; bf16 does the same FLOPs as fp32)
    gflops = {name: flops(fn) / 1e9 for name, fn in fns.items()
              if name.partition(":")[2] in ("", "eager")}  # fmt: skip
    rows = []
    for name, value in ms.items():
        order, _, variant = name.partition(":")
        row = {"section": f"{size_name} {label}".strip(), "impl": name, "ms": round(value, 4)}
        if name in gflops:
            row["gflops"] = round(gflops[name], 4)
        if variant == "eager":  # what the goal sets the time ratio beside
            ratio = gflops[name] / gflops["dcgan_example"]
            row["flop_ratio_vs_dcgan_example"] = round(ratio, 3)
        if variant:  # a Step: its speed-up over each loop (their ms / its ms)
            row["speedup_vs_dcgan_example"] = round(ms["dcgan_example"] / value, 3)
            row["speedup_vs_own_reference"] = round(ms[REFERENCES[order]] / value, 3)
            if order == "d_first":
                row["speedup_vs_hand_loop"] = round(ms["hand_minimal_d_first"] / value, 3)
        rows.append(row)
    return rows


def began_section(device: str, reps: int, warmup: int, batch: int, width: int) -> list[dict]:
    """BEGAN's two orders: the which-first post's loops (its "slow" D-first and "fast"
    G-first) and the Steps that compute the same updates (d_first, simultaneous)."""

    def pair():
        return make_pair("began", "began", batch, width, device)

    def step(schedule):
        G, D, opt_g, opt_d, latent, real = pair()
        s = Step(G, D, opt_g, opt_d, objective="began", schedule=schedule, latent=latent)
        return lambda: s(real)

    fns = {
        "post_d_first": loop_factory("which_first_post_d_first", pair, "began"),
        "post_g_first": loop_factory("which_first_post_g_first", pair, "began"),
        "ganstep_d_first": step("d_first"),
        "ganstep_simultaneous": step("simultaneous"),
    }
    ms = medians(fns, reps, warmup, device)
    slow = ms["post_d_first"]
    return [{"section": "began", "impl": k, "ms": round(v, 4),
             "speedup_vs_post_d_first": round(slow / v, 3)} for k, v in ms.items()]  # fmt: skip


def fused_section(device: str, reps: int, warmup: int, batch: int, width: int) -> list[dict]:
    """The fused simultaneous step against the unfused one, D without BatchNorm: for ns
    it reads one flag on the host each iteration (a device sync); for WGAN-GP it
    decides on the host and syncs never. The two ratios side by side show the sync's
    cost."""
    fns = {}
    for objective in ("ns", "wgan_gp"):
        for fused in (False, True):
            G, D, opt_g, opt_d, latent, real = make_pair("dcgan_plain", objective, batch,
                                                         width, device)  # fmt: skip
            step = Step(G, D, opt_g, opt_d, objective=objective, latent=latent,
                        schedule=simultaneous(fused=fused))  # fmt: skip
            fns[f"{objective}:{'fused' if fused else 'unfused'}"] = lambda s=step, r=real: s(r)
    ms = medians(fns, reps, warmup, device)
    rows = [{"section": "fused", "impl": k, "ms": round(v, 4)} for k, v in ms.items()]
    for row in rows:
        objective, _, kind = row["impl"].partition(":")
        if kind == "fused":
            row["fused_over_unfused"] = round(ms[row["impl"]] / ms[f"{objective}:unfused"], 3)
    return rows


def default_run_section(device: str, steps: int | None) -> list[dict]:
    """The README's ``ganstep train`` (the 2D grid) on ``device`` and on the CPU, alternated,
    each the whole command's wall time in its own process."""
    rows = []
    for target in (device, "cpu") if device != "cpu" else ("cpu",):
        with tempfile.TemporaryDirectory() as out:
            extra = [] if steps is None else ["--steps", str(steps)]
            cmd = [sys.executable, "-m", "ganstep", "train", "--device", target, "--out",
                   str(Path(out) / "run"), "--no-progress", *extra]  # fmt: skip
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:  # the command's own last words, for the error row
                raise RuntimeError(f"{' '.join(cmd[1:])} exited {proc.returncode}: "
                                   f"{proc.stderr[-1500:]}")  # fmt: skip
            rows.append({"section": "default_run", "impl": f"ganstep train --device {target}",
                         "s": round(time.perf_counter() - start, 2)})  # fmt: skip
    if len(rows) == 2:
        rows[0]["fraction_of_cpu_time"] = round(rows[0]["s"] / rows[1]["s"], 3)
    return rows


def arithmetic(size: int, batch: int, width: int) -> int:
    """How a DCGAN's FLOPs per iteration grow: with the pixels, the batch and width^2."""
    return size * size * batch * width * width


def goals_section(rows: list[dict], first: str, heavy: str) -> list[dict]:
    """Issue 51's goals for a GPU that ``rows`` measured, each with its figure, its bar
    and whether the figure meets it: eager d_first's time ratio to the DCGAN example
    beside its FLOP ratio and the graph's speed-up over it, at the first size; bf16
    against fp32 for each order at ``heavy``; the default run on the device against
    the CPU. (The Python-call goal is benchmarks/host_calls.py's; the CUDA tests are
    benchmarks/gpu_session.sh's.)"""
    at = {(r["section"], r["impl"]): r for r in rows}
    out = []

    def goal(name: str, measured: float, bar: str, met: bool) -> None:
        out.append({"section": "goals", "impl": name, "measured": round(measured, 3),
                    "bar": bar, "met": met})  # fmt: skip

    eager, example = at.get((first, "d_first:eager")), at.get((first, "dcgan_example"))
    if eager is not None and example is not None:
        ratio, flop = eager["ms"] / example["ms"], eager["flop_ratio_vs_dcgan_example"]
        goal(f"{first} d_first eager time / DCGAN example's", ratio,
             f"<= {flop + 0.02:.3f} (FLOP ratio {flop} + 0.02)", ratio <= flop + 0.02)  # fmt: skip
    graph = at.get((first, "d_first:graph"))
    if graph is not None and example is not None:
        speedup = example["ms"] / graph["ms"]
        goal(f"{first} d_first graph speed-up over the DCGAN example", speedup, ">= 4",
             speedup >= 4)  # fmt: skip
    for order in REFERENCES:
        fp32, bf16 = at.get((heavy, f"{order}:eager")), at.get((heavy, f"{order}:bf16"))
        if fp32 is not None and bf16 is not None:
            ratio = bf16["ms"] / fp32["ms"]
            goal(f"{heavy} {order} bf16 time / fp32's", ratio, "< 1", ratio < 1)
    default = next((r for r in rows if "fraction_of_cpu_time" in r), None)
    if default is not None:
        fraction = default["fraction_of_cpu_time"]
        goal("default run: CUDA time / CPU time", fraction, "<= 0.5", fraction <= 0.5)
    return out


def table(rows: list[dict]) -> str:
    lines = []
    for section in dict.fromkeys(r["section"] for r in rows):
        lines.append(f"\n## {section}")
        for r in (r for r in rows if r["section"] == section):
            rest = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("section", "impl"))
            lines.append(f"{r['impl']:<32} {rest}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="no compile rows, fewer reps")
    sizes_help = "size:batch:width triples, or the names " + ", ".join(SIZES)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), help=sizes_help)
    parser.add_argument("--default-run-steps", type=int, default=None,
                        help="steps of the default run (its own default if not given)")  # fmt: skip
    parser.add_argument("--no-default-run", action="store_true")
    parser.add_argument("--json", type=Path, help="write the rows and the machine here")
    parser.add_argument("--variants", nargs="*", choices=VARIANTS, default=list(VARIANTS),
                        help="the Step variants to measure (graph ones only on CUDA)")  # fmt: skip
    parser.add_argument("--start-section", type=int, default=0,
                        help="begin at this section, adding to --json's rows (what a run "
                             "does in a new process after a section fails)")  # fmt: skip
    args = parser.parse_args(argv)
    cuda = torch.device(args.device).type == "cuda"
    if cuda and not torch.cuda.is_available():
        parser.error("no CUDA device here: give --device cpu for a smoke run")
    sizes = parse_sizes(args.sizes, parser)
    variants = [v for v in args.variants if (cuda or not v.startswith("graph"))
                and not (args.quick and v == "compile")]  # fmt: skip
    reps, warmup = (10, 3) if args.quick else (args.reps, args.warmup)
    machine = {"device": torch.cuda.get_device_name() if cuda else platform.processor() or "cpu",
               "torch": torch.__version__, "variants": variants, "reps": reps}  # fmt: skip
    rows: list[dict] = []
    if args.start_section and args.json is not None and args.json.is_file():
        rows = json.loads(args.json.read_text())["rows"]  # the sections run before this one
    else:
        name = f"{machine['device']} (torch {machine['torch']})"
        print(f"# ganstep GPU benchmark on {name}", flush=True)
    listed = sections(args, sizes, variants, reps, warmup, rows)
    for index, section in enumerate(listed[args.start_section :], args.start_section):
        try:
            # the flags ganstep train sets for an image model on CUDA (autotuning, TF32 off)
            with cuda_backends("dcgan", False, torch.device(args.device)):
                new = section.run()
        except Exception as error:  # noqa: BLE001 - recorded, then the run goes on
            failed = {"section": section.name, "impl": "error",
                      "error": f"{type(error).__name__}: {error}"[:2000]}  # fmt: skip
            print(table([failed]), flush=True)
            rows.append(failed)
            return rows + go_on_in_new_process(argv, args, machine, rows, index, section, variants)
        rows += new
        # each section printed and saved as it ends: a run stopped at a time limit
        # keeps every section it finished
        if new:
            print(table(new), flush=True)
        save(args.json, machine, rows)
    return rows


def parse_sizes(specs: list[str], parser: argparse.ArgumentParser) -> dict[str, tuple]:
    """--sizes: names from SIZES, or size:batch:width triples (the DCGANs' 32 or 64)."""
    sizes = {}
    for spec in specs:
        parts = spec.split(":")
        if spec in SIZES:
            sizes[spec] = SIZES[spec]
        elif (len(parts) == 3 and all(v.isdigit() and int(v) > 0 for v in parts)
              and parts[0] in ("32", "64")):  # fmt: skip
            size, batch, width = (int(v) for v in parts)
            sizes[f"dcgan{size}_b{batch}_w{width}"] = (size, batch, width)
        else:
            names = ", ".join(SIZES)
            parser.error(f"--sizes {spec!r}: give size:batch:width (size 32 or 64, batch and "
                         f"width positive, e.g. 32:128:64) or one of {names}")  # fmt: skip
    return sizes


def save(path: Path | None, machine: dict, rows: list[dict]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))


def after_failure(index: int, section: Section, variants: list[str]) -> tuple[int, list[str]]:
    """Where a run goes on after ``section``, at ``index``, failed: that section again
    without the graph variants if it measured them (a capture is what fails most
    likely, and the section's other rows are worth having), else the next section."""
    if section.graphs:
        return index, [v for v in variants if not v.startswith("graph")]
    return index + 1, variants


def go_on_in_new_process(argv: list[str] | None, args: argparse.Namespace, machine: dict,
                         rows: list[dict], index: int, section: Section,
                         variants: list[str]) -> list[dict]:  # fmt: skip
    """The rest of the run after ``section`` failed, in a new process (one whose CUDA
    state no failure touched), without the graph variants if the failed section had
    them; the rows it adds to ``rows``. They pass through --json (a temporary file
    where none was given)."""
    start, variants = after_failure(index, section, variants)
    with tempfile.TemporaryDirectory() as scratch:
        path = args.json if args.json is not None else Path(scratch) / "gpu.json"
        save(path, machine, rows)
        rest = [*(sys.argv[1:] if argv is None else argv), "--json", str(path),
                "--start-section", str(start), "--variants", *variants]  # fmt: skip
        subprocess.run([sys.executable, str(Path(__file__).resolve()), *rest], check=False)
        return json.loads(path.read_text())["rows"][len(rows) :]


def sections(args: argparse.Namespace, sizes: dict, variants: list[str], reps: int,
             warmup: int, rows: list[dict]) -> list[Section]:  # fmt: skip
    """The sections in the order they run: the ones without compiling first, since
    compiling takes minutes on a fresh machine, then the goals (read from ``rows``, the
    list the sections before them were added to); compile's rows last, each beside the
    eager Step of its order and the loops, so their ratios are side by side too."""
    device, (first, *others) = args.device, list(sizes)
    _, batch, width = sizes[first]
    plain = [v for v in variants if v != "compile"]
    graphs = any(v.startswith("graph") for v in plain)

    def orders(name: str) -> Section:
        return Section(name, graphs, partial(orders_section, name, device, plain, reps,
                                             warmup, sizes))  # fmt: skip

    out = [orders(first),
           Section("began", False, partial(began_section, device, reps, warmup, batch,
                                           max(8, width // 2))),
           Section("fused", False, partial(fused_section, device, reps, warmup, batch, width)),
           *(orders(name) for name in others)]  # fmt: skip
    if not args.no_default_run:
        default_run = partial(default_run_section, device, args.default_run_steps)
        out.append(Section("default_run", False, default_run))
    # bf16's goal is set where the arithmetic counts: the size with the most of it
    heavy = max(sizes, key=lambda name: arithmetic(*sizes[name]))
    out.append(Section("goals", False, partial(goals_section, rows, first, heavy)))
    if "compile" in variants:
        out += [Section(f"{name} compile", False,
                        partial(orders_section, name, device, ["eager", "compile"], reps,
                                warmup, sizes, "compile")) for name in sizes]  # fmt: skip
    return out


if __name__ == "__main__":
    main()
