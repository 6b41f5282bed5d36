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
with the GPU's name, for benchmarks/RESULTS.md. Each section is printed and saved as it
ends, and compile's rows (which compile for minutes on a fresh machine) come last, each
order's beside its eager Step and the loops again: a run stopped at a time limit keeps
every section it finished.

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

import torch

from ganstep import Step, simultaneous
from ganstep.tools import reference
from ganstep.tools.bench import PAIRS, hand_minimal_d_first, make_pair, time_interleaved
from ganstep.trainer.backends import cuda_backends

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
    rows = []
    for name, value in ms.items():
        order, _, variant = name.partition(":")
        row = {"section": f"{size_name} {label}".strip(), "impl": name, "ms": round(value, 4)}
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
            subprocess.run(cmd, check=True, capture_output=True)
            rows.append({"section": "default_run", "impl": f"ganstep train --device {target}",
                         "s": round(time.perf_counter() - start, 2)})  # fmt: skip
    if len(rows) == 2:
        rows[0]["fraction_of_cpu_time"] = round(rows[0]["s"] / rows[1]["s"], 3)
    return rows


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
    args = parser.parse_args(argv)
    cuda = torch.device(args.device).type == "cuda"
    if cuda and not torch.cuda.is_available():
        parser.error("no CUDA device here: give --device cpu for a smoke run")
    sizes = {}
    for spec in args.sizes:
        if spec in SIZES:
            sizes[spec] = SIZES[spec]
        else:
            size, batch, width = (int(v) for v in spec.split(":"))
            sizes[f"dcgan{size}_b{batch}_w{width}"] = (size, batch, width)
    variants = [v for v in VARIANTS if (cuda or not v.startswith("graph"))
                and not (args.quick and v == "compile")]  # fmt: skip
    reps, warmup = (10, 3) if args.quick else (args.reps, args.warmup)
    machine = {"device": torch.cuda.get_device_name() if cuda else platform.processor() or "cpu",
               "torch": torch.__version__, "variants": variants, "reps": reps}  # fmt: skip
    print(f"# ganstep GPU benchmark on {machine['device']} (torch {machine['torch']})", flush=True)
    rows: list[dict] = []
    for section in sections(args, sizes, variants, reps, warmup):
        # the flags ganstep train sets for an image model on CUDA (autotuning, TF32 off)
        with cuda_backends("dcgan", False, torch.device(args.device)):
            new = section()
        rows += new
        # each section printed and saved as it ends: a run stopped at a time limit
        # keeps every section it finished
        print(table(new), flush=True)
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    return rows


def sections(args: argparse.Namespace, sizes: dict, variants: list[str], reps: int,
             warmup: int) -> list[Callable[[], list[dict]]]:  # fmt: skip
    """The sections in the order they run: the ones without compiling first, since
    compiling takes minutes on a fresh machine; compile's rows last, each beside the
    eager Step of its order and the loops, so their ratios are side by side too."""
    device, (first, *others) = args.device, list(sizes)
    _, batch, width = sizes[first]
    plain = [v for v in variants if v != "compile"]
    out = [partial(orders_section, first, device, plain, reps, warmup, sizes),
           partial(began_section, device, reps, warmup, batch, max(8, width // 2)),
           partial(fused_section, device, reps, warmup, batch, width)]  # fmt: skip
    out += [partial(orders_section, name, device, plain, reps, warmup, sizes) for name in others]
    if not args.no_default_run:
        out.append(partial(default_run_section, device, args.default_run_steps))
    if "compile" in variants:
        out += [partial(orders_section, name, device, ["eager", "compile"], reps, warmup,
                        sizes, "compile") for name in sizes]  # fmt: skip
    return out


if __name__ == "__main__":
    main()
