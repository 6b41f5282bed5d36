"""ganstep bench: Step's schedules next to the reference loops they replace.

For each model and objective, every implementation runs one training iteration at
a time, interleaved A B C A B C ... in one process, so that drift of a shared,
noisy machine falls on all of them alike. Reported per implementation: the median,
min and max time of an iteration after warm-up; peak memory of an iteration
(CUDA: ``torch.cuda.max_memory_allocated``; CPU: the allocator's own events,
recorded by ``torch.profiler`` with ``profile_memory=True``, summed in order: the
peak of tensor memory allocated during the iteration above what was live before);
FLOPs (``FlopCounterMode``); forward and backward passes of G and D; and the time
ratio to the reference loop computing the same update.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrizations
from torch.utils.flop_counter import FlopCounterMode

from ..engine.distributed import exit_now, leave
from ..engine.objectives import AUTOENCODER_OBJECTIVES, NS
from ..engine.schedules import d_first, g_first, simultaneous
from ..engine.sides import frozen
from ..engine.step import Step
from ..trainer.checkpoint import atomic_write, atomic_write_text
from ..trainer.data.toy import grid_modes, sample_mixture
from ..trainer.models import (
    MLP,
    BEGANDecoder,
    BEGANDiscriminator,
    DCGANDiscriminator,
    DCGANGenerator,
)
from . import reference

# schedule -> (ganstep schedule, reference loop computing the same update)
PAIRS = {
    "d_first": (d_first(), "dcgan_example"),
    "g_first": (g_first(reuse_z=True), "lightning_g_first"),
    "simultaneous": (simultaneous(), "pytorch_gan_g_first"),
}
# dcgan_sn: the DCGAN D without BatchNorm, spectral norm on every conv (SNGAN, BigGAN):
# its forwards advance state, so simultaneous keeps the loop's D forwards to be exact.
MODELS = ("mlp", "dcgan", "dcgan_plain", "dcgan_sn", "began")
# Step options measured next to the plain schedules (``--variants``): row impl
# "ganstep+NAME", with the schedule it runs.
VARIANTS = {
    "fused": ("simultaneous", {"schedule": simultaneous(fused=True)}),
    "bf16": ("d_first", {"precision": "bf16"}),
    "fp16": ("d_first", {"precision": "fp16"}),
    "compile": ("d_first", {"compile": True}),
    "graph": ("d_first", {}),  # CUDA only: the whole iteration replayed from a CUDA graph
    # R1 (weight 0.1) from the D(real) forward, every D step or lazily every 16th, next
    # to ``reference.dcgan_r1`` (a second D forward); accumulation over 4 micro-batches.
    "r1": ("d_first", {"objective": NS(r1=0.1)}),
    "r1lazy": ("d_first", {"objective": NS(r1=0.1, r1_every=16)}),
    "accum4": ("d_first", {"accumulate": 4}),
}
R1_VARIANTS = ("r1", "r1lazy")


@dataclass
class Row:
    """One implementation's measurements; JSON keys are the field names."""

    model: str
    objective: str
    schedule: str
    impl: str
    ms_median: float = 0.0
    ms_min: float = 0.0
    ms_max: float = 0.0
    peak_mem_bytes: int = 0
    gflops: float = 0.0
    passes: dict = field(default_factory=dict)
    ratio: float | None = None  # time / the reference loop's time (ganstep rows)
    flop_ratio: float | None = None  # FLOPs / the reference loop's FLOPs (ganstep rows)
    # ganstep variant rows: iterations/s over those of each baseline (baseline ms / ms)
    speedup: dict = field(default_factory=dict)


def make_pair(model: str, objective: str, batch: int, width: int, device, seed: int = 0,
              size: int = 32):  # fmt: skip
    """Fresh G, D, Adam optimizers, a latent sampler and a real batch for ``model``
    (the DCGANs at ``size`` x ``size``: 32 or 64)."""
    torch.manual_seed(seed)
    if model == "mlp":
        z_dim = 2
        G = MLP(z_dim, 2, (width,) * 3)
        D = MLP(2, 1, (width,) * 3, activation=nn.LeakyReLU)
        if objective in AUTOENCODER_OBJECTIVES:
            D = MLP(2, 2, (width, 2, width), activation=nn.ELU)
        gen = torch.Generator().manual_seed(seed)
        real = sample_mixture(grid_modes(), 0.05, batch, gen)
    elif model in ("dcgan", "dcgan_plain", "dcgan_sn"):  # plain: D without BatchNorm
        z_dim = 100
        G = DCGANGenerator(z_dim, width, 3, size)
        batchnorm = model == "dcgan" and objective != "wgan_gp"
        D = DCGANDiscriminator(width, 3, size, batchnorm=batchnorm)
        if model == "dcgan_sn":
            for conv in [m for m in D.modules() if isinstance(m, nn.Conv2d)]:
                parametrizations.spectral_norm(conv)
        real = torch.rand(batch, 3, size, size) * 2 - 1
    elif model == "began":
        z_dim = 64
        G, D = BEGANDecoder(z_dim, width, 3, 32), BEGANDiscriminator(z_dim, width, 3, 32)
        real = torch.rand(batch, 3, 32, 32) * 2 - 1
    else:
        raise ValueError(f"unknown model {model!r}; choose one of: {', '.join(MODELS)}")
    G, D, real = G.to(device), D.to(device), real.to(device)
    opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
    latent_gen = torch.Generator(device=device).manual_seed(seed + 1)

    def latent(n: int) -> Tensor:
        return torch.randn(n, z_dim, generator=latent_gen, device=device)

    latent.generator = latent_gen  # type: ignore[attr-defined]  # for CUDA graph capture
    return G, D, opt_g, opt_d, latent, real


def hand_minimal_d_first(G, D, opt_g, opt_d, real, latent) -> None:
    """A hand-written D-first iteration with exactly Step's passes, for Step's overhead.

    Written for the non-saturating loss: D's weights frozen by hand in G's step, G's
    output reused, BCE in its softplus form.
    """
    fake = G(latent(real.shape[0]))
    opt_d.zero_grad(set_to_none=True)
    loss_d = (
        nn.functional.softplus(-D(real)).mean() + nn.functional.softplus(D(fake.detach())).mean()
    )
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad(set_to_none=True)
    with frozen(D):
        loss_g = nn.functional.softplus(-D(fake)).mean()
        loss_g.backward()
    opt_g.step()


Factory = Callable[[], tuple[Callable[[], object], nn.Module, nn.Module]]


def implementations(
    model, objective, batch, width, device, variants=()
) -> dict[str, tuple[str, Factory]]:
    """name -> (schedule it computes, factory); a factory builds fresh models and returns
    (one-iteration callable, G, D), so timing and probes never share state."""

    def pair():
        return make_pair(model, objective, batch, width, device)

    def ganstep_factory(schedule, **options) -> Factory:
        def build():
            G, D, opt_g, opt_d, latent, real = pair()
            chosen = {"objective": objective, **options}  # a variant may bring its own
            step = Step(G, D, opt_g, opt_d, schedule=schedule, latent=latent, **chosen)
            step.observe_d(real)  # once, before anything is measured
            return (lambda: step(real)), G, D

        return build

    def reference_factory(loop) -> Factory:
        def build():
            G, D, opt_g, opt_d, latent, real = pair()
            return (lambda: loop(G, D, opt_g, opt_d, [real], latent, objective)), G, D

        return build

    impls: dict[str, tuple[str, Factory]] = {}
    for name, (schedule, ref_name) in PAIRS.items():
        impls[f"ganstep.{name}"] = (name, ganstep_factory(schedule))
        impls[ref_name] = (name, reference_factory(getattr(reference, ref_name)))
    if objective == "ns":

        def hand_factory():
            G, D, opt_g, opt_d, latent, real = pair()
            return (lambda: hand_minimal_d_first(G, D, opt_g, opt_d, real, latent)), G, D

        impls["hand_minimal_d_first"] = ("d_first", hand_factory)

    if any(v in R1_VARIANTS for v in variants) and objective == "ns":
        impls["dcgan_r1"] = ("d_first", reference_factory(reference.dcgan_r1))
    for variant in variants:
        schedule, options = VARIANTS[variant]
        options = {"schedule": PAIRS[schedule][0], **options}
        if variant_refusal(variant, model, objective, device) is not None:
            continue
        factory = _graphed(pair, objective) if variant == "graph" else ganstep_factory(**options)
        impls[f"ganstep+{variant}"] = (schedule, factory)
    return impls


def _graphed(pair: Callable[[], tuple], objective: str) -> Factory:
    """A factory of ``d_first`` Steps replayed from a CUDA graph (capturable Adam)."""

    def build():
        from ..engine.cuda_graph import GraphedStep

        G, D, _, _, latent, real = pair()
        opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999), capturable=True)
        opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999), capturable=True)
        step = Step(G, D, opt_g, opt_d, objective=objective, schedule=d_first(), latent=latent)
        step.observe_d(real)
        # one eager call, then capture at the second: both inside the bench's warm-up
        graphed = GraphedStep(step, real, warmup=1, generators=[latent.generator])
        return (lambda: graphed(real)), G, D

    return build


def variant_refusal(variant: str, model: str, objective: str, device) -> str | None:
    """Why ``variant`` cannot run for ``model`` and ``objective`` here, or None if it
    can (the fused step needs a D without BatchNorm and an objective it is exact for;
    autocast needs support on the device; CUDA graphs need CUDA)."""
    from ..engine.objectives import get_objective

    if variant == "fused":
        if model == "dcgan" and objective != "wgan_gp":
            return "the dcgan D has BatchNorm in training mode (use --models dcgan_plain)"
        return get_objective(objective).not_fusable
    if variant in ("bf16", "fp16") and not torch.amp.is_autocast_available(
        torch.device(device).type
    ):
        return f"autocast is not available on {device}"
    if variant == "graph" and torch.device(device).type != "cuda":
        return "CUDA graphs need --device cuda"
    if variant in R1_VARIANTS and objective != "ns":
        return "measured on ns only, next to the DCGAN example with R1"
    return None


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_interleaved(fns: dict[str, Callable], reps: int, warmup: int, device) -> dict:
    """Per name, the list of iteration times (ms), measured A B C A B C ..."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for rep in range(warmup + reps):
        for name, fn in fns.items():
            _sync(device)
            t0 = time.perf_counter()
            fn()
            _sync(device)
            if rep >= warmup:
                times[name].append((time.perf_counter() - t0) * 1e3)
    return times


def peak_memory(fn: Callable, device) -> int:
    """Peak bytes allocated during ``fn()`` above what was live before it."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - base
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    # Each op event carries the bytes it allocated itself (its "self" usage: nested ops
    # are not counted twice); frees come as "[memory]" events with negative bytes.
    changes = sorted(
        (e.time_range.start, e.self_cpu_memory_usage)
        for e in prof.events()
        if e.self_cpu_memory_usage
    )
    live = peak = 0
    for _, nbytes in changes:
        live += nbytes
        peak = max(peak, live)
    return peak


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2: the profiler's C++ layer logs each start and stop there.
    Python exceptions still propagate."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def count_passes(fn: Callable, G: nn.Module, D: nn.Module) -> dict[str, dict[str, int]]:
    """Forward and backward passes of G and D during ``fn()``.

    A backward pass through a module is counted when a gradient reaches its output.
    """
    counts = {"G": {"forward": 0, "backward": 0}, "D": {"forward": 0, "backward": 0}}
    handles = []

    for name, module in (("G", G), ("D", D)):

        def hook(mod, args, out, name=name):
            counts[name]["forward"] += 1
            if isinstance(out, Tensor) and out.requires_grad:

                def on_grad(grad, name=name):
                    counts[name]["backward"] += 1

                out.register_hook(on_grad)

        handles.append(module.register_forward_hook(hook))
    try:
        fn()
    finally:
        for h in handles:
            h.remove()
    return counts


def flops(fn: Callable) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def pairs(models, objectives) -> list[tuple[str, str]]:
    """The (model, objective) pairs that are measured: the began model's D is an
    autoencoder, so it runs with the objectives of one only (began, ebgan), and they
    with it only, beside mlp."""
    return [(m, o) for m in models for o in objectives
            if not ((m == "began") != (o in AUTOENCODER_OBJECTIVES) and m != "mlp")]  # fmt: skip


def bench(
    models=("mlp", "dcgan", "began"),
    objectives=("ns",),
    *,
    reps: int = 15,
    warmup: int = 3,
    dcgan_width: int = 64,
    batch: int = 64,
    device: str = "cpu",
    variants=(),
    processes: int = 0,
) -> list[Row]:
    """Measure every implementation for each model and objective; return the rows.

    ``variants`` adds rows for Step options (see ``VARIANTS``); ``processes`` > 1 adds
    a data parallel ``d_first`` row, timed in that many processes on the same global
    batch (gloo on CPU).
    """
    rows: list[Row] = []
    for model, objective in pairs(models, objectives):
        width = {"mlp": 256, "began": max(8, dcgan_width // 2)}.get(model, dcgan_width)
        n = 256 if model == "mlp" else batch
        impls = implementations(model, objective, n, width, device, variants)
        timed = {name: factory()[0] for name, (_, factory) in impls.items()}
        times = time_interleaved(timed, reps, warmup, device)
        for name, (schedule, factory) in impls.items():
            probe, G, D = factory()
            ms = times[name]
            rows.append(Row(
                model=model, objective=objective, schedule=schedule, impl=_impl(name),
                ms_median=round(statistics.median(ms), 3), ms_min=round(min(ms), 3),
                ms_max=round(max(ms), 3), peak_mem_bytes=int(peak_memory(probe, device)),
                gflops=round(flops(probe) / 1e9, 4), passes=count_passes(probe, G, D),
            ))  # fmt: skip
        _graph_counts(rows, model, objective)
        if processes > 1:
            rows.append(data_parallel_row(model, objective, n, width, reps, warmup,
                                          processes))  # fmt: skip
        _ratios(rows, model, objective)
    return rows


def _graph_counts(rows: list[Row], model: str, objective: str) -> None:
    """A graph replay runs no Python, so hooks and FlopCounterMode see nothing: give the
    CUDA graph row the FLOPs and passes of the eager Step it replays."""
    group = {(r.impl, r.schedule): r for r in rows if (r.model, r.objective) == (model, objective)}
    graph, eager = group.get(("ganstep+graph", "d_first")), group.get(("ganstep", "d_first"))
    if graph is not None and eager is not None:
        graph.gflops, graph.passes = eager.gflops, eager.passes


def _impl(name: str) -> str:
    return "ganstep" if name.startswith("ganstep.") else name


def data_parallel_row(model, objective, batch, width, reps, warmup, processes) -> Row:
    """Time ``d_first`` data parallel over ``processes`` CPU processes (gloo), each on
    batch / processes samples with cores / processes threads: the same global batch
    as the single-process rows. Memory, FLOPs and passes are per process."""
    import tempfile

    import torch.multiprocessing as mp

    if batch % processes:
        raise ValueError(f"batch {batch} does not split over {processes} processes")
    with tempfile.TemporaryDirectory() as tmp:
        args = (model, objective, batch // processes, width, reps, warmup, processes, tmp)
        mp.spawn(_data_parallel_worker, args=args, nprocs=processes, join=True)
        result = json.loads((Path(tmp) / "result.json").read_text())
    ms = result["ms"]
    return Row(
        model=model, objective=objective, schedule="d_first",
        impl=f"ganstep+ddp{processes}", ms_median=round(statistics.median(ms), 3),
        ms_min=round(min(ms), 3), ms_max=round(max(ms), 3),
        peak_mem_bytes=result["peak"], gflops=result["gflops"], passes=result["passes"],
    )  # fmt: skip


def _data_parallel_worker(rank, model, objective, batch, width, reps, warmup, world, tmp):
    import torch.distributed as dist

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    store = dist.FileStore(str(Path(tmp) / "store"), world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    try:

        def build():
            G, D, opt_g, opt_d, latent, real = make_pair(model, objective, batch, width, "cpu",
                                                         seed=0)  # fmt: skip
            step = Step(G, D, opt_g, opt_d, objective=objective, schedule=d_first(),
                        latent=latent, distributed=True)  # fmt: skip
            step.observe_d(real)
            return (lambda: step(real)), G, D

        fn, _, _ = build()
        ms = []
        for rep in range(warmup + reps):
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            dist.barrier()  # an iteration ends when the slowest process is done
            if rep >= warmup:
                ms.append((time.perf_counter() - t0) * 1e3)
        probe, G, D = build()
        peak, gflop = peak_memory(probe, "cpu"), flops(probe) / 1e9
        passes = count_passes(probe, G, D)
        if rank == 0:
            result = {"ms": ms, "peak": int(peak), "gflops": round(gflop, 4), "passes": passes}
            (Path(tmp) / "result.json").write_text(json.dumps(result))
    except BaseException:
        dist.destroy_process_group()
        raise
    leave()
    exit_now()


def _ratios(rows: list[Row], model: str, objective: str) -> None:
    group = [r for r in rows if r.model == model and r.objective == objective]
    by_impl = {(r.impl, r.schedule): r for r in group}
    for r in group:
        if r.impl.startswith("ganstep"):
            ref = by_impl.get(reference_of(r))
            r.ratio = round(r.ms_median / ref.ms_median, 3) if ref else None
            if ref is not None and ref.gflops:
                r.flop_ratio = round(r.gflops / ref.gflops, 3)
        if r.impl.startswith("ganstep+"):
            baselines = [(PAIRS[r.schedule][1], r.schedule), ("ganstep", r.schedule)]
            if r.impl == "ganstep+fused":  # FusedProp's comparison: the DCGAN example
                baselines.append(("dcgan_example", "d_first"))
            if r.impl.removeprefix("ganstep+") in R1_VARIANTS:  # the same update with R1
                baselines = [("dcgan_r1", "d_first"), *baselines]
            r.speedup = {
                f"{impl}/{schedule}": round(by_impl[impl, schedule].ms_median / r.ms_median, 3)
                for impl, schedule in baselines
                if (impl, schedule) in by_impl
            }
        elif r.impl == "hand_minimal_d_first":
            step_row = by_impl.get(("ganstep", "d_first"))
            if step_row is not None:  # report Step's overhead on the ganstep row's scale
                r.ratio = round(step_row.ms_median / r.ms_median, 3)


def table(rows: list[Row]) -> str:
    """A readable terminal table."""
    wide = max([len("model")] + [len(r.model) for r in rows])
    head = (f"{'model':{wide}} {'objective':9} {'schedule':12} {'impl':22} {'ms med':>8} "
            f"{'min':>8} {'max':>8} {'peak MB':>8} {'GFLOP':>7} {'G f/b':>5} {'D f/b':>5} "
            f"{'ratio':>6} {'FLOP r':>6}")  # fmt: skip
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.3f}"
        flop_ratio = "" if r.flop_ratio is None else f"{r.flop_ratio:.3f}"
        g, d = r.passes["G"], r.passes["D"]
        lines.append(
            f"{r.model:{wide}} {r.objective:9} {r.schedule:12} {r.impl:22} {r.ms_median:8.2f} "
            f"{r.ms_min:8.2f} {r.ms_max:8.2f} {r.peak_mem_bytes / 2**20:8.2f} {r.gflops:7.3f} "
            f"{g['forward']}/{g['backward']:<3} {d['forward']}/{d['backward']:<3} {ratio:>6} "
            f"{flop_ratio:>6}"
        )
    lines.append(
        "ratio: ganstep rows, time over the reference loop of the same schedule (FLOP r: "
        "FLOPs over its FLOPs); hand_minimal_d_first, ganstep.d_first's time over it "
        "(Step's overhead)."
    )
    for r in rows:
        if r.speedup:
            shown = ", ".join(f"{v:.3f}x vs {k}" for k, v in r.speedup.items())
            lines.append(f"{r.model} {r.objective} {r.impl} ({r.schedule}): {shown}")
    if any(r.speedup for r in rows):
        lines.append("speedup: iterations per second over the baseline's, measured side by side.")
    return "\n".join(lines)


def reference_of(row: Row) -> tuple[str, str]:
    """The (impl, schedule) a row's speed is measured against: the reference loop
    computing the same update (with R1 for the R1 variants)."""
    if row.impl.removeprefix("ganstep+") in R1_VARIANTS or row.impl == "dcgan_r1":
        return "dcgan_r1", "d_first"
    return PAIRS[row.schedule][1], row.schedule


def plot(rows: list[Row], path: Path) -> None:
    """Each row's speed over its reference loop's (iterations per second, a log axis
    with 1.0 marked), absolute milliseconds in the labels; a panel per model and
    objective. A very slow row (fp16 on a CPU) stays readable next to the others."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((r.model, r.objective) for r in rows))
    height = max(3.0, 0.35 * max(sum(1 for r in rows if (r.model, r.objective) == g)
                                 for g in groups))  # fmt: skip
    fig, axes = plt.subplots(1, len(groups), figsize=(7 * len(groups), height), squeeze=False)
    for ax, (model, objective) in zip(axes[0], groups, strict=True):
        sub = [r for r in rows if (r.model, r.objective) == (model, objective)]
        by_impl = {(r.impl, r.schedule): r for r in sub}
        shown = [(r, by_impl.get(reference_of(r))) for r in sub]
        shown = [(r, ref) for r, ref in shown if ref is not None]
        labels = [f"{r.impl} ({r.schedule}) {r.ms_median:.1f} ms" for r, _ in shown]
        speed = [ref.ms_median / r.ms_median for r, ref in shown]
        colors = ["tab:blue" if r.impl.startswith("ganstep") else "tab:gray" for r, _ in shown]
        # bars grow from 1.0: right of it faster than the reference, left of it slower
        ax.barh(labels, [v - 1 for v in speed], left=1.0, color=colors)
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_xscale("log")
        ax.set_xlim(min(speed + [1.0]) / 1.25, max(speed + [1.0]) * 1.25)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        for y, v in enumerate(speed):
            ax.annotate(f"{v:.2f}x", (v, y), fontsize=7, va="center",
                        xytext=(3 if v >= 1 else -3, 0), textcoords="offset points",
                        ha="left" if v >= 1 else "right")  # fmt: skip
        ax.set_title(f"{model}, {objective}")
        ax.set_xlabel("iterations/s over the reference loop's (log)")
        ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    atomic_write(Path(path), lambda f: fig.savefig(f, format="png"))
    plt.close(fig)


def write_json(rows: list[Row], path: Path) -> None:
    """The rows as JSON, written atomically."""
    atomic_write_text(Path(path), json.dumps([asdict(r) for r in rows], indent=1) + "\n")
