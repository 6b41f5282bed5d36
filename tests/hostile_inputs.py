"""Hostile inputs: each input and fault of the reliability review (issue 22), given to
ganstep as a user would give it, with the outcome it gets.

    python tests/hostile_inputs.py [--only NAME ...] [--timeout SECONDS]

prints one row per case: its kind in the review (silent, traceback, hang, vague, lost)
and its outcome now: ``clear`` (one ``ganstep: error:`` line or a library error that
names the argument, and no traceback), ``correct`` (the right result), or ``FAIL``
with what happened. ``tests/test_hostile.py`` runs every case under pytest.

Every case builds its own files in a temporary folder; nothing outside it is touched.
A command or library case is a process of its own, forked from one that has imported
torch and ganstep (``helpers.launcher``), unless it needs what only a new interpreter
has (a ``preexec`` function, a Ctrl-C while torch loads).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from helpers.launcher import LAUNCHER

HERE = Path(__file__).resolve().parent
# the cases' processes run torch (and numpy's BLAS) on one thread, as the suite's other
# commands do (helpers.environment); the launcher forks only from a one-thread server
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}
AUDIT_SCRIPT = HERE / "audit_scripts" / "pytorch_gan_dcgan.py"
# A tiny grid run: seconds on a CPU, one evaluation, one checkpoint.
TINY = ["--steps", "2", "--batch-size", "16", "--width", "8", "--eval-samples", "50",
        "--log-every", "1", "--no-progress"]  # fmt: skip


@dataclass
class Outcome:
    ok: bool
    what: str
    verdict: str = "correct"  # or "clear": a clear error


@dataclass
class Case:
    name: str
    kind: str  # what the review found: silent, traceback, hang, vague, lost, stuck
    run: Callable[[Path, float], Outcome]
    # False: a case that trains a run first (10-20 s); the suite tests it elsewhere
    # (tests/test_checkpoint.py, test_run_folder.py), this script runs it too
    in_suite: bool = True


def ganstep(tmp: Path, *args: object, timeout: float = 60, env=None,
            preexec=None) -> subprocess.CompletedProcess:  # fmt: skip
    """``ganstep ARGS`` in ``tmp`` with its own cache; a hang comes back as returncode None."""
    full_env = {**ONE_THREAD, "GANSTEP_CACHE": str(tmp / "cache"), **(env or {})}
    cmd = [sys.executable, "-m", "ganstep", *map(str, args)]
    try:  # forked from a server that has imported torch and ganstep, unless preexec
        return LAUNCHER.run(cmd, env=full_env, cwd=tmp, timeout=timeout,
                            stdin=subprocess.DEVNULL, preexec=preexec)  # fmt: skip
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        return subprocess.CompletedProcess(cmd, None, out, f"timed out after {timeout} s")


def clear_error(proc: subprocess.CompletedProcess, *words: str) -> Outcome:
    """A nonzero exit whose stderr ends in one ``ganstep: error:`` line naming ``words``."""
    if proc.returncode is None:
        return Outcome(False, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if proc.returncode == 0:
        return Outcome(False, f"exit 0: {last or proc.stdout[-200:]}")
    if "Traceback" in proc.stderr:
        return Outcome(False, "traceback: " + last)
    if not last.startswith("ganstep: error:"):
        return Outcome(False, f"exit {proc.returncode}: {last}")
    missing = [w for w in words if w.lower() not in last.lower()]
    if missing:
        return Outcome(False, f"does not name {missing}: {last}")
    return Outcome(True, last.removeprefix("ganstep: error: "), "clear")


def python(tmp: Path, code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter (library cases)."""
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
    try:
        return LAUNCHER.run(cmd, env=ONE_THREAD, cwd=tmp, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, None, "", f"timed out after {timeout} s")


def printed(proc: subprocess.CompletedProcess, *words: str) -> Outcome:
    """A library case that prints its result as its last line: it names ``words``."""
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Outcome(False, f"exit {proc.returncode}: {tail}")
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    missing = [w for w in words if w.lower() not in last.lower()]
    if missing:
        return Outcome(False, f"does not name {missing}: {last}")
    return Outcome(True, last, "clear" if "Error" in last.split(" ")[0] else "correct")


# -- files ------------------------------------------------------------------------------


def png(path: Path, width: int, height: int, depth: int, colour: int, pixels: bytes) -> None:
    """A PNG written by hand (Pillow cannot write 16-bit colour)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b""))  # fmt: skip


def image_folder(tmp: Path, name: str, modes: list[str], alpha: int = 128, size: int = 8) -> Path:
    """A folder of 8x8 images (``size``) in ``modes`` (random colour; alpha ``alpha``)."""
    from PIL import Image

    folder = tmp / name
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i, mode in enumerate(modes):
        bands = len(mode)
        pixels = rng.integers(0, 256, (size, size, bands), dtype=np.uint8)
        if "A" in mode:
            pixels[..., -1] = alpha
        Image.fromarray(pixels.squeeze(-1) if bands == 1 else pixels, mode).save(
            folder / f"{i:03d}.png"
        )
    return folder


def trained_run(tmp: Path, name: str = "run", *extra: str) -> Path:
    run = tmp / name
    proc = ganstep(tmp, "train", "--out", run, *TINY, *extra, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"the setup run failed: {proc.stderr[-300:]}")
    return run


def audit_variant(tmp: Path, name: str, edit: Callable[[str, str], str]) -> Path:
    """PyTorch-GAN's dcgan.py loop (tests/audit_scripts) with its loop edited."""
    source = AUDIT_SCRIPT.read_text()
    at = source.index("for epoch in range(opt.n_epochs):")
    path = tmp / f"{name}.py"
    path.write_text(edit(source[:at], source[at:]))
    return path


def swallowing(handler: str) -> Callable[[str, str], str]:
    def edit(head: str, loop: str) -> str:
        body = textwrap.indent(loop.split("\n", 1)[1], "    ")
        return head + f"for epoch in range(opt.n_epochs):\n    try:\n{body}\n    {handler}\n" \
            "        pass\n"  # fmt: skip

    return edit


# -- the cases ---------------------------------------------------------------------------


def data_case(folder_of: Callable[[Path], Path], *words: str):
    def run(tmp: Path, timeout: float) -> Outcome:
        return clear_error(ganstep(tmp, "train", "--data", folder_of(tmp), "--out", tmp / "r",
                                   *TINY, timeout=timeout), *words)  # fmt: skip

    return run


def flag_case(*args: object, words: tuple[str, ...] = ()):
    def run(tmp: Path, timeout: float) -> Outcome:
        return clear_error(ganstep(tmp, "train", "--out", tmp / "r", *TINY, *args,
                                   timeout=timeout), *words)  # fmt: skip

    return run


def compiled_r1_every_step(tmp: Path, timeout: float) -> Outcome:
    """Refused once (compiled code has no double backward); now R1's forward on the real
    batch runs uncompiled and the run trains. aot_eager: AOTAutograd, no C++ compiler."""
    proc = ganstep(tmp, "train", "--out", tmp / "r", *TINY, "--compile", "aot_eager",
                   "--r1", "1", "--r1-every", "1", timeout=timeout)  # fmt: skip
    if proc.returncode != 0:
        return Outcome(False, f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}")
    last = json.loads((tmp / "r" / "metrics.jsonl").read_text().splitlines()[-1])
    if not last.get("gp", 0) > 0:
        return Outcome(False, f"no R1 penalty logged: {last}")
    return Outcome(True, f"trains, R1 {last['gp']:.3g} at step {last['step']}")


def npy(name: str, array: np.ndarray | None) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        if array is None:
            path.write_bytes(b"")
        else:
            np.save(path, array)
        return path

    return make


def sixteen_bit_rgb(tmp: Path) -> Path:
    folder = tmp / "rgb16"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        rows = rng.integers(0, 65536, (8, 8 * 3)).astype(">u2")
        raw = b"".join(b"\x00" + row.tobytes() for row in rows)
        png(folder / f"{i}.png", 8, 8, 16, 2, raw)
    return folder


def bomb(tmp: Path) -> Path:
    """A PNG that says it is 30,000 x 30,000 (900 megapixels): Pillow's bomb check."""
    folder = tmp / "bomb"
    folder.mkdir()
    png(folder / "a.png", 30000, 30000, 1, 0, b"\x00" * 10)
    png(folder / "b.png", 30000, 30000, 1, 0, b"\x00" * 10)
    return folder


def opaque_alpha_loads(tmp: Path, timeout: float) -> Outcome:
    folder = image_folder(tmp, "rgba_opaque", ["RGBA"] * 4, alpha=255)
    proc = python(
        tmp,
        f"""
        from PIL import Image
        import numpy as np
        from ganstep.trainer.data import load_dataset
        d = load_dataset({str(folder)!r})
        rgb = np.asarray(Image.open({str(folder / "000.png")!r}).convert("RGB"))
        got = ((d.train[0].numpy() + 1) / 2 * 255).round().transpose(1, 2, 0)
        print("3 channels, colour kept" if d.train.shape[1] == 3 and (got == rgb).all()
              else f"wrong: {{d.train.shape}}")
    """,
    )
    return printed(proc, "colour kept")


def huge_values_load(tmp: Path, timeout: float) -> Outcome:
    array = np.random.default_rng(0).uniform(-3e38, 3e38, (30, 8, 8)).astype(np.float32)
    path = tmp / "huge.npy"
    np.save(path, array)
    proc = python(
        tmp,
        f"""
        from ganstep.trainer.data import load_dataset
        d = load_dataset({str(path)!r})
        x = d.train
        print("finite, in [-1, 1]" if x.isfinite().all() and x.abs().max() <= 1 + 1e-6
              else f"wrong: {{x.min()}} {{x.max()}}")
    """,
    )
    return printed(proc, "finite")


def nan_message(*args: object, words: tuple[str, ...]):
    def run(tmp: Path, timeout: float) -> Outcome:
        proc = ganstep(tmp, "train", "--out", tmp / "r", *TINY, "--steps", "200", *args,
                       timeout=timeout)  # fmt: skip
        return clear_error(proc, "NaN or infinite", *words)

    return run


def user_files_kept(tmp: Path, timeout: float) -> Outcome:
    out = tmp / "mine"
    (out / "samples").mkdir(parents=True)
    files = {out / "config.toml": "my notes\n", out / "report.png": "not ganstep's\n",
             out / "samples" / "step_00000100.png": "mine\n"}  # fmt: skip
    for path, text in files.items():
        path.write_text(text)
    result = clear_error(ganstep(tmp, "train", "--out", out, *TINY, timeout=timeout), "config.toml")
    changed = [p.name for p, text in files.items() if p.read_text() != text]
    if changed:
        return Outcome(False, f"overwrote {changed}")
    return result


def kept(result: Outcome, files: dict[Path, str]) -> Outcome:
    """``result``, unless a file of the user's changed or went: then that, a failure."""
    changed = [str(p.name) for p, text in files.items() if not p.exists() or p.read_text() != text]
    return Outcome(False, f"touched the user's {changed}") if changed else result


def symlinked_samples(tmp: Path, timeout: float) -> Outcome:
    """samples/ a link to a folder of the user's holding a step_00000002.png."""
    mine, out = tmp / "pictures", tmp / "run"
    mine.mkdir()
    out.mkdir()
    (out / "samples").symlink_to(mine, target_is_directory=True)
    return train_beside(tmp, out, {mine / "step_00000002.png": "my picture"}, "symbolic link",
                        timeout=timeout)  # fmt: skip


def train_beside(tmp: Path, out: Path, files: dict[Path, str], *words: str, timeout: float):
    """Write the user's ``files``, train into ``out``: a clear error naming ``words``, and
    every one of those files as it was."""
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    proc = ganstep(tmp, "train", "--out", out, *TINY, timeout=timeout)
    return kept(clear_error(proc, *words), files)


def users_tmp_file(tmp: Path, timeout: float) -> Outcome:
    """checkpoints/.tmp-thesis.tex of the user's in a fresh --out."""
    out = tmp / "run"
    return train_beside(tmp, out, {out / "checkpoints" / ".tmp-thesis.tex": "chapter 1"},
                        ".tmp-thesis.tex", timeout=timeout)  # fmt: skip


def users_run_lock(tmp: Path, timeout: float) -> Outcome:
    """A run.lock of the user's beside another file of theirs."""
    out = tmp / "run"
    files = {out / "run.lock": "my lock notes", out / "notes.txt": "mine"}
    return train_beside(tmp, out, files, "run.lock", timeout=timeout)


def run_lock_symlink(tmp: Path, timeout: float) -> Outcome:
    """run.lock a link to a file of the user's."""
    out, target = tmp / "run", tmp / "precious.txt"
    out.mkdir()
    target.write_text("keep me")
    (out / "run.lock").symlink_to(target)
    proc = ganstep(tmp, "train", "--out", out, *TINY, timeout=timeout)
    return kept(clear_error(proc, "symbolic link"), {target: "keep me"})


def run_lock_folder(tmp: Path, timeout: float) -> Outcome:
    """run.lock a folder (empty)."""
    out = tmp / "run"
    (out / "run.lock").mkdir(parents=True)
    return clear_error(ganstep(tmp, "train", "--out", out, *TINY, timeout=timeout),
                       "run.lock is a folder")  # fmt: skip


def stopped_before_first_checkpoint(tmp: Path, timeout: float) -> Outcome:
    """A run killed before its first checkpoint (its checkpoints gone, a temporary file
    left, no report), then the same command, then --resume: both must start it afresh."""
    run = trained_run(tmp)
    for resume in ([], ["--resume"]):
        for p in (run / "checkpoints").iterdir():
            p.unlink()
        (run / "report.png").unlink()  # written after the last checkpoint only
        proc = ganstep(tmp, "train", "--out", run, *resume, *TINY, timeout=timeout)
        if proc.returncode != 0:
            return Outcome(False, f"{' '.join(resume) or 'rerun'}: {proc.stderr.strip()[-200:]}")
        if "starts afresh" not in proc.stderr:
            return Outcome(False, "started afresh without saying so")
    return Outcome(True, "rerun and --resume start it afresh, saying so")


def finished_run_checkpoints_moved(tmp: Path, timeout: float) -> Outcome:
    """A finished run whose checkpoints the user moved away, then a new run into its
    folder (issue 53): it deleted the old run's metrics, samples and report."""
    run = trained_run(tmp)
    kept = tmp / "elsewhere"
    kept.mkdir()
    for p in (run / "checkpoints").iterdir():
        p.rename(kept / p.name)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != "run.lock"}
    proc = ganstep(tmp, "train", "--out", run, "--seed", "1", *TINY, timeout=timeout)
    after = {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != "run.lock"}
    if after != before:
        return Outcome(False, f"the old run's files changed (exit {proc.returncode})")
    return clear_error(proc, "is not empty (config.toml, metrics.jsonl, report.png")


def nine_digit_checkpoints(tmp: Path, timeout: float) -> Outcome:
    """Checkpoints of steps 99,999,999 and 100,000,000: the newer must be found last."""
    from ganstep.trainer import checkpoint

    for step in (99_999_999, 100_000_000):
        checkpoint.path_for(tmp, step).write_bytes(b"")
    found = [p.name for p in checkpoint.list_checkpoints(tmp)]
    if found != ["step_99999999.pt", "step_100000000.pt"]:
        return Outcome(False, f"found {found}")
    return Outcome(True, "both found, in step order")


def umask_modes(tmp: Path, timeout: float) -> Outcome:
    """Under umask 022 every file a run writes is -rw-r--r--."""
    proc = ganstep(tmp, "train", "--out", tmp / "run", *TINY, timeout=timeout,
                   preexec=lambda: os.umask(0o022))  # fmt: skip
    if proc.returncode != 0:
        return Outcome(False, proc.stderr.strip()[-200:])
    modes = {str(p.relative_to(tmp / "run")): oct(p.stat().st_mode & 0o777)
             for p in (tmp / "run").rglob("*") if p.is_file()}  # fmt: skip
    wrong = {k: v for k, v in modes.items() if v != "0o644"}
    return Outcome(not wrong, f"modes {wrong}" if wrong else "every file 0o644")


def existing_json(command: str) -> Callable[[Path, float], Outcome]:
    """``bench`` or ``audit`` told to write --json over a file of the user's."""

    def case(tmp: Path, timeout: float) -> Outcome:
        mine = tmp / "results.json"
        files = {mine: "my results"}
        mine.write_text("my results")
        args = ["bench", "--quick"] if command == "bench" else ["audit", AUDIT_SCRIPT]
        proc = ganstep(tmp, *args, "--json", mine, timeout=timeout)
        return kept(clear_error(proc, "--force"), files)

    return case


def audit_json_is_the_script(tmp: Path, timeout: float) -> Outcome:
    """``audit x.py --json x.py --force``: the script itself, even with --force."""
    script = tmp / "x.py"
    script.write_text(AUDIT_SCRIPT.read_text())
    proc = ganstep(tmp, "audit", script, "--json", script, "--force", timeout=timeout)
    return kept(clear_error(proc, "script being audited"), {script: AUDIT_SCRIPT.read_text()})


def sample_over_a_file(tmp: Path, timeout: float) -> Outcome:
    """``sample --out`` naming a file of the user's; then --force replaces it whole."""
    run = trained_run(tmp)
    mine = tmp / "picture.png"
    mine.write_text("my picture")
    proc = ganstep(tmp, "sample", "--run", run, "--n", "4", "--out", mine, timeout=timeout)
    refused = kept(clear_error(proc, "--force"), {mine: "my picture"})
    if not refused.ok:
        return refused
    proc = ganstep(tmp, "sample", "--run", run, "--n", "4", "--out", mine, "--force",
                   timeout=timeout)  # fmt: skip
    if proc.returncode != 0 or not mine.read_bytes().startswith(b"\x89PNG"):
        return Outcome(False, f"--force: {proc.stderr.strip()[-200:]}")
    return Outcome(True, "refused, then replaced whole with --force", "clear")


def strays_beside_classes(tmp: Path) -> Path:
    """Class subfolders of images, and two stray pictures at the top."""
    folder = image_folder(tmp, "strays", ["RGB"] * 2)
    for name in ("cats", "dogs"):
        sub = image_folder(folder, name, ["RGB"] * 3)
        assert sub.is_dir()
    return folder


def fifo_png(tmp: Path) -> Path:
    """A folder whose picture.png is a named pipe nobody writes to."""
    folder = image_folder(tmp, "pipe", ["RGB"] * 3)
    os.mkfifo(folder / "picture.png")
    return folder


def huge_npy_header(tmp: Path) -> Path:
    """192 bytes whose .npy header claims (100,000,000,000, 1) float64 (745 GiB)."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 1), }"
    header = header.ljust(117) + "\n"
    path = tmp / "huge.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
                     + b"\0" * 64)  # fmt: skip
    return path


def bench_flag(*args: object, words: tuple[str, ...]):
    def run(tmp: Path, timeout: float) -> Outcome:
        return clear_error(ganstep(tmp, "bench", "--quick", *args, timeout=timeout), *words)

    return run


def nul_in_out(tmp: Path, timeout: float) -> Outcome:
    """out = "a<NUL>b" in a --config file (argv cannot hold one)."""
    config = tmp / "c.toml"
    config.write_text('out = "a\\u0000b"\n')
    return clear_error(ganstep(tmp, "train", "--config", config, *TINY, timeout=timeout), "NUL")


def audit_source(tmp: Path, source: str, timeout: float, *args: str) -> subprocess.CompletedProcess:
    """``ganstep audit`` of a script whose ``source`` is given here (and ``args``)."""
    script = tmp / "loop.py"
    script.write_text(textwrap.dedent(source))
    return ganstep(tmp, "audit", script, *args, timeout=timeout)


def never_backward(tmp: Path, timeout: float) -> Outcome:
    """A loop that steps both optimizers and never calls backward."""
    proc = audit_source(
        tmp,
        """
        import torch
        G, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
        og, od = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
        for _ in range(10):
            od.zero_grad(); loss_d = D(G(torch.randn(4, 2))).mean(); od.step()
            og.zero_grad(); loss_g = -D(G(torch.randn(4, 2))).mean(); og.step()
    """,
        timeout,
    )
    if "no backward call ran" not in proc.stdout:
        return Outcome(False, f"exit {proc.returncode}: {proc.stdout[-200:]}")
    return Outcome(True, "the report says no backward call ran")


def latin1_folder(tmp: Path, timeout: float) -> Outcome:
    """A --data folder whose name is not UTF-8 (b"caf\\xe9")."""
    name = os.fsdecode(b"caf\xe9")
    image_folder(tmp, name, ["L"] * 4)
    return clear_error(ganstep(tmp, "train", "--data", tmp / name, "--out", tmp / "r", *TINY,
                               timeout=timeout), "UTF-8")  # fmt: skip


MODELS = "import torch\nG, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)\n"


def function_with_argument(tmp: Path, timeout: float) -> Outcome:
    """``audit --function train_step`` where train_step(x) takes a batch."""
    source = MODELS + "def train_step(x):\n    pass\n"
    proc = audit_source(tmp, source, timeout, "--function", "train_step")
    return clear_error(proc, "takes arguments", "wrap it")


def audit_of_a_step(tmp: Path, timeout: float) -> Outcome:
    """A script that already trains with Step(schedule="d_first"): its one-time look at
    D (three forwards without a graph) was reported as 8.7% wasted recomputation."""
    proc = audit_source(
        tmp,
        """
        import torch
        from ganstep import Step
        G = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        D = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        og, od = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
        step = Step(G, D, og, od, objective="ns", schedule="d_first",
                    latent=lambda n: torch.randn(n, 2))
        for _ in range(20):
            step(torch.randn(16, 2))
    """,
        timeout,
    )
    waste = [line.strip() for line in proc.stdout.splitlines() if "wasted" in line]
    ok = proc.returncode == 0 and waste and "wasted 0 GFLOP" in waste[0]
    ok = ok and "forwarded again" not in proc.stdout
    return Outcome(bool(ok), waste[0] if waste else f"exit {proc.returncode}: {proc.stderr[-200:]}")


def instance_noise(tmp: Path, timeout: float) -> Outcome:
    """A loop adding instance noise to D's inputs, G's fakes included: read as order
    "other" with a lazy regularization step of D's that is not there."""
    proc = audit_source(
        tmp,
        """
        import torch
        G, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
        og, od = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
        noisy = lambda x: x + 0.1 * torch.randn_like(x)
        for _ in range(10):
            fake = G(torch.randn(4, 2))
            od.zero_grad()
            (D(noisy(fake.detach())).mean() - D(noisy(torch.randn(4, 2))).mean()).backward()
            od.step()
            og.zero_grad(); (-D(noisy(fake)).mean()).backward(); og.step()
    """,
        timeout,
    )
    order = next((line for line in proc.stdout.splitlines() if "update order" in line), "")
    ok = order.endswith("update order: d_first") and "regularization steps" not in proc.stdout
    return Outcome(ok, order.strip() or f"exit {proc.returncode}: {proc.stderr[-200:]}")


def hooked_spectral_norm(tmp: Path, timeout: float) -> Outcome:
    """A D whose layer has the hook-based torch.nn.utils.spectral_norm (SNGAN's code):
    its forward leaves a tensor of its graph on the layer, and the audit, copying D to
    count a backward's FLOPs, ended with "ganstep: error: Only Tensors created
    explicitly by the user (graph leaves) support the deepcopy protocol"."""
    proc = audit_source(
        tmp,
        """
        import torch
        G = torch.nn.Linear(2, 2)
        D = torch.nn.utils.spectral_norm(torch.nn.Linear(2, 1))
        og, od = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
        for _ in range(10):
            fake = G(torch.randn(4, 2))
            od.zero_grad()
            (D(fake.detach()).mean() - D(torch.randn(4, 2)).mean()).backward()
            od.step()
            og.zero_grad(); (-D(fake).mean()).backward(); og.step()
    """,
        timeout,
    )
    order = next((line for line in proc.stdout.splitlines() if "update order" in line), "")
    ok = proc.returncode == 0 and order.endswith("update order: d_first")
    return Outcome(ok, order.strip() or f"exit {proc.returncode}: {proc.stderr[-200:]}")


def one_optimizer_for_both(tmp: Path, timeout: float) -> Outcome:
    """One optimizer over G and D, 50 steps: "ran to its end before any optimizer step"."""
    proc = audit_source(
        tmp,
        """
        import torch
        G, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
        opt = torch.optim.SGD([*G.parameters(), *D.parameters()], 0.1)
        for _ in range(50):
            opt.zero_grad()
            loss = D(torch.randn(4, 2)).mean() - D(G(torch.randn(4, 2))).mean()
            loss.backward()
            opt.step()
    """,
        timeout,
    )
    return clear_error(proc, "50 optimizer step(s)", "one optimizer", "its own optimizer")


def waiting_script(tmp: Path, timeout: float) -> Outcome:
    """A script that waits forever before training: the audit had no time limit."""
    source = "import time\n" + MODELS + "while True:\n    time.sleep(0.1)\n"
    proc = audit_source(tmp, source, timeout, "--timeout", "3")
    return clear_error(proc, "ran 3 s without finishing", "--timeout")


TWO_STEPS = """
        od.zero_grad()
        (D(torch.randn(4, 2)).mean() - D(G(torch.randn(4, 2)).detach()).mean()).backward()
        od.step()
        og.zero_grad()
        (-D(G(torch.randn(4, 2))).mean()).backward()
        og.step()
"""
SETUP = """
import os, sys
import torch
G, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
og, od = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
"""


def lingering_thread(tmp: Path, timeout: float) -> Outcome:
    """A script that leaves a non-daemon thread running: the report printed, then the
    process never exited."""
    thread = "import threading, time\n"
    thread += 'threading.Thread(target=lambda: time.sleep(3600), name="prefetch").start()\n'
    loop = "for _ in range(10):" + textwrap.indent(TWO_STEPS, "    ")
    proc = audit_source(tmp, SETUP + thread + loop, timeout)
    ok = proc.returncode == 0 and "update order" in proc.stdout and "prefetch" in proc.stderr
    return Outcome(ok, proc.stderr.strip().splitlines()[-1] if ok else f"exit {proc.returncode}")


def closed_stdout(tmp: Path, timeout: float) -> Outcome:
    """A script that closes sys.stdout: the report was lost ("I/O operation on closed
    file")."""
    loop = "sys.stdout.close()\nfor _ in range(10):" + textwrap.indent(TWO_STEPS, "    ")
    proc = audit_source(tmp, SETUP + loop, timeout)
    ok = proc.returncode == 0 and "update order" in proc.stdout
    return Outcome(ok, "the report printed" if ok else f"exit {proc.returncode}: "
                   f"{proc.stderr.strip()[-200:]}")  # fmt: skip


def forked_child(tmp: Path, timeout: float) -> Outcome:
    """The loop in a forked child: the child printed the audit's _Stop traceback, the
    parent said "ran to its end before any optimizer step"."""
    loop = (
        "pid = os.fork()\nif pid == 0:\n    for _ in range(10):"
        + textwrap.indent(TWO_STEPS, "        ")
        + "    os._exit(0)\nos.waitpid(pid, 0)\n"
    )
    proc = audit_source(tmp, SETUP + loop, timeout)
    if "_Stop" in proc.stderr:
        return Outcome(False, "the child printed the audit's stop")
    return clear_error(proc, "child process", "--function")


def function_that_does_nothing(tmp: Path, timeout: float) -> Outcome:
    """``audit --function idle`` where idle() trains nothing: exit 0 before, where a
    script that trains nothing exits 1."""
    proc = audit_source(tmp, MODELS + "def idle():\n    pass\n", timeout, "--function", "idle")
    return clear_error(proc, "without an optimizer step", "nothing to audit")


def loop_in_a_thread(tmp: Path, timeout: float) -> Outcome:
    """The training loop in a threading.Thread the main thread joins."""
    proc = audit_source(
        tmp,
        """
        import threading
        import torch
        G, D = torch.nn.Linear(8, 16), torch.nn.Linear(16, 1)
        og, od = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
        sp = torch.nn.functional.softplus
        def train():
            for _ in range(100):
                od.zero_grad()
                fake = G(torch.randn(32, 8))
                (sp(D(fake.detach())).mean() + sp(-D(torch.randn(32, 16))).mean()).backward()
                od.step()
                og.zero_grad()
                sp(-D(fake)).mean().backward()
                og.step()
        t = threading.Thread(target=train)
        t.start()
        t.join()
    """,
        timeout,
    )
    if proc.returncode != 0 or "Traceback" in proc.stderr or "caught the audit" in proc.stderr:
        return Outcome(False, f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}")
    if "update order: d_first" not in proc.stdout or "FLOPs per iteration: 0 GFLOP" in proc.stdout:
        return Outcome(False, proc.stdout.strip()[-200:])
    return Outcome(True, "reported as d_first, its FLOPs counted, no thread traceback")


def lr_jump_on_resume(tmp: Path, timeout: float) -> Outcome:
    """--resume with more --steps under linear decay: the jump is said."""
    run = trained_run(tmp, "run", "--lr-decay", "linear")
    proc = ganstep(tmp, "train", "--resume", "--out", run, "--steps", "4", "--no-progress",
                   timeout=timeout)  # fmt: skip
    if proc.returncode != 0 or "jump" not in proc.stderr:
        return Outcome(False, f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}")
    line = next(x for x in proc.stderr.splitlines() if "jump" in x)
    return Outcome(True, line.split("warning: ")[-1][:120])


def cuda_run_resumed_on_cpu(tmp: Path, timeout: float) -> Outcome:
    """A run written on a GPU (its z stream a CUDA generator's 16 bytes), resumed on a
    machine without one. Made on the CPU by writing such a stream into its checkpoint."""
    import torch

    from ganstep.trainer import checkpoint

    run = trained_run(tmp, "run")
    newest = sorted((run / "checkpoints").glob("step_*.pt"))[-1]
    state = torch.load(newest, weights_only=True)
    state.pop("checksum")
    state["rng"]["latent"] = torch.zeros(16, dtype=torch.uint8)
    state["rng_ranks"] = [state["rng"]]
    newest.unlink()
    checkpoint.save(run / "checkpoints", state["step"], state, keep=3)
    proc = ganstep(tmp, "train", "--out", run, "--resume", *TINY, "--steps", "3",
                   timeout=timeout)  # fmt: skip
    return clear_error(proc, "drawn on CUDA", "--device")


def tilde_in_toml(tmp: Path, timeout: float) -> Outcome:
    """``out = "~/x"`` in a config file: the home folder's x, not a folder named ~."""
    config = tmp / "c.toml"
    config.write_text('out = "~/run-from-toml"\nsteps = 2\nbatch_size = 16\nwidth = 8\n'
                      "eval_samples = 50\n")  # fmt: skip
    proc = ganstep(tmp, "train", "--config", config, "--no-progress", timeout=timeout,
                   env={"HOME": str(tmp / "home")})  # fmt: skip
    if proc.returncode != 0:
        return Outcome(False, proc.stderr.strip()[-200:])
    if (tmp / "~").exists() or not (tmp / "home" / "run-from-toml" / "metrics.jsonl").exists():
        return Outcome(False, "the run went to a folder named ~")
    return Outcome(True, "the run is in ~/run-from-toml")


def bom_in_toml(tmp: Path, timeout: float) -> Outcome:
    """A config file saved with a UTF-8 byte-order mark, as Windows editors save it."""
    config = tmp / "c.toml"
    config.write_bytes(b"\xef\xbb\xbfsteps = 2\nbatch_size = 16\nwidth = 8\neval_samples = 50\n")
    proc = ganstep(tmp, "train", "--config", config, "--out", tmp / "r", "--no-progress",
                   timeout=timeout)  # fmt: skip
    ok = proc.returncode == 0 and (tmp / "r" / "metrics.jsonl").exists()
    return Outcome(ok, "read as TOML" if ok else proc.stderr.strip()[-200:])


def out_inside_data(tmp: Path, timeout: float) -> Outcome:
    """--out inside --data: the run's pictures would join the user's images."""
    pics = image_folder(tmp, "pics", ["L"] * 4)
    return clear_error(ganstep(tmp, "train", "--data", pics, "--out", pics / "run", *TINY,
                               timeout=timeout), "inside the data folder")  # fmt: skip


def misnamed_checkpoint(tmp: Path, timeout: float) -> Outcome:
    """A checkpoint copied to step_99999999.pt, then --resume: before, it resumed from
    the copy's step and pruned the real newer checkpoints, keeping the copy."""
    import shutil

    run = trained_run(tmp, "run", "--ckpt-every", "1", "--keep", "5")
    ckpts = run / "checkpoints"
    first = sorted(ckpts.glob("step_*.pt"))[0]
    shutil.copy(first, ckpts / "step_99999999.pt")
    before = sorted(p.name for p in ckpts.iterdir())
    proc = ganstep(tmp, "train", "--out", run, "--resume", *TINY, "--steps", "4",
                   timeout=timeout)  # fmt: skip
    if sorted(p.name for p in ckpts.iterdir()) != before:
        return Outcome(False, f"checkpoints changed: {sorted(p.name for p in ckpts.iterdir())}")
    return clear_error(proc, "holds step 1", "rename")


def symlink_folder(kind: str) -> Callable[[Path], Path]:
    """A folder of images with a broken symbolic link, or a loop of two, among them."""

    def make(tmp: Path) -> Path:
        folder = image_folder(tmp, kind, ["L"] * 3)
        if kind == "broken":
            (folder / "gone.png").symlink_to(tmp / "nowhere.png")
        else:
            (folder / "a.png").symlink_to(folder / "b.png")
            (folder / "b.png").symlink_to(folder / "a.png")
        return folder

    return make


def ascii_console(tmp: Path, timeout: float) -> Outcome:
    """PYTHONIOENCODING=ascii and a run folder named rü: it trained, checkpointed, then
    exited 1 printing the folder's name."""
    proc = ganstep(tmp, "train", "--out", tmp / "rü", *TINY, timeout=timeout,
                   env={"PYTHONIOENCODING": "ascii"})  # fmt: skip
    ok = proc.returncode == 0 and (tmp / "rü" / "metrics.jsonl").exists()
    shown = [line for line in proc.stdout.splitlines() if "run folder" in line]
    failed = f"exit {proc.returncode}: {proc.stderr[-200:]}"
    return Outcome(ok, shown[0] if ok and shown else failed)


def shadowed_folder(tmp: Path, timeout: float) -> Outcome:
    """A user's own ./grid folder while --data grid names the built-in set: said, once."""
    image_folder(tmp, "grid", ["L"] * 4)
    proc = ganstep(tmp, "train", "--data", "grid", "--out", tmp / "r", *TINY, timeout=timeout)
    said = [line for line in proc.stderr.splitlines() if "is not read" in line]
    ok = proc.returncode == 0 and len(said) == 1 and "--data ./grid" in said[0]
    return Outcome(ok, said[0] if said else f"exit {proc.returncode}, nothing said")


def non_square_images(tmp: Path, timeout: float) -> Outcome:
    """A folder of 12x8 images with the default --model mlp: the metric network's quarter
    turns failed ("shape mismatch ... cannot be broadcast") where dcgan (padded square)
    trained."""
    from PIL import Image

    folder = tmp / "wide"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(6):
        Image.fromarray(rng.integers(0, 256, (8, 12), dtype=np.uint8)).save(folder / f"{i}.png")
    proc = ganstep(tmp, "train", "--data", folder, "--out", tmp / "r", *TINY, timeout=timeout)
    ok = proc.returncode == 0 and (tmp / "r" / "metrics.jsonl").exists()
    return Outcome(ok, "trained, metrics written" if ok else proc.stderr.strip()[-200:])


def emptied_config(tmp: Path, timeout: float) -> Outcome:
    """A run folder whose config.toml was emptied and which has no checkpoint."""
    run = tmp / "run"
    run.mkdir()
    (run / "config.toml").write_text("")
    return clear_error(ganstep(tmp, "train", "--resume", "--out", run, "--no-progress",
                               timeout=timeout), "config.toml", "no run's config")  # fmt: skip


def bit_flip(tmp: Path, timeout: float) -> Outcome:
    """One bit of a weight in the newest checkpoint flipped, as a disk or copy would."""
    import torch

    run = trained_run(tmp, "run", "--ckpt-every", "1")
    newest = sorted((run / "checkpoints").glob("step_*.pt"))[-1]
    weight = next(iter(torch.load(newest, weights_only=True)["G"].values()))
    data = bytearray(newest.read_bytes())
    at = data.find(weight.numpy().tobytes())
    data[at + 2] ^= 0x01
    newest.write_bytes(bytes(data))
    proc = ganstep(tmp, "train", "--out", run, "--resume", *TINY, "--steps", "3",
                   timeout=timeout)  # fmt: skip
    warned = newest.name in proc.stderr and "checksum" in proc.stderr
    if proc.returncode == 0 and warned:
        return Outcome(True, "the damaged newest is named and the one before it is resumed")
    return Outcome(False, f"exit {proc.returncode}: {proc.stderr[-200:]}")


def nan_ema_sample(tmp: Path, timeout: float) -> Outcome:
    run = trained_run(tmp)
    newest = sorted((run / "checkpoints").glob("step_*.pt"))[-1]
    proc = python(
        tmp,
        f"""
        import torch
        from ganstep.trainer import checkpoint
        path = {str(newest)!r}
        state = torch.load(path, weights_only=False)
        state.pop("checksum", None)
        for t in state["ema"].values():
            t.fill_(float("nan"))
        checkpoint.atomic_save({{**state, "checksum": checkpoint.checksum(state)}},
                               checkpoint.Path(path))
    """,
    )
    if proc.returncode != 0:
        return Outcome(False, f"setup failed: {proc.stderr[-200:]}")
    return clear_error(ganstep(tmp, "sample", "--run", run, "--n", "4", "--out", tmp / "s.npy",
                               timeout=timeout), "NaN")  # fmt: skip


def foreign_checkpoint(tmp: Path, timeout: float) -> Outcome:
    mine, other = trained_run(tmp, "mine"), trained_run(tmp, "other", "--seed", "1")
    ckpt = sorted((other / "checkpoints").glob("step_*.pt"))[-1]
    for old in (mine / "checkpoints").glob("step_*.pt"):
        old.unlink()
    (mine / "checkpoints" / ckpt.name).write_bytes(ckpt.read_bytes())
    return clear_error(ganstep(tmp, "sample", "--run", mine, "--n", "4", "--out", tmp / "s.npy",
                               timeout=timeout), "seed")  # fmt: skip


def partial_metrics(tmp: Path, timeout: float) -> Outcome:
    run = trained_run(tmp)
    with (run / "metrics.jsonl").open("a") as f:
        f.write('{"step": 3, "loss_d": 0.')
    proc = ganstep(tmp, "train", "--out", run, "--resume", *TINY, "--steps", "4",
                   timeout=timeout)  # fmt: skip
    if proc.returncode == 0 and "metrics.jsonl" in proc.stderr:
        return Outcome(True, "the cut line is dropped, with a warning, and the run goes on")
    return Outcome(False, f"exit {proc.returncode}: {proc.stderr[-200:]}")


def file_size_limit(tmp: Path, timeout: float) -> Outcome:
    import resource

    def limit() -> None:
        # the grid run's checkpoint is about 40 KB: 16 KB stops its first write
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, resource.RLIM_INFINITY))

    env = {**os.environ, "GANSTEP_CACHE": str(tmp / "cache")}
    cmd = [sys.executable, "-m", "ganstep", "train", "--out", str(tmp / "r"), *TINY]
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)  # fmt: skip
    return clear_error(proc, "ulimit")


def sample_past_file_size_limit(tmp: Path, timeout: float) -> Outcome:
    """``sample --out s.npy`` of 20,000 points under a 16 KB ``ulimit -f``: a clear error
    naming the limit, and no truncated file left."""
    import resource

    run = trained_run(tmp)
    out = tmp / "s.npy"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, resource.RLIM_INFINITY))

    proc = ganstep(tmp, "sample", "--run", run, "--n", "20000", "--out", out, timeout=timeout,
                   preexec=limit)  # fmt: skip
    if out.exists() or list(tmp.glob(".tmp-ganstep-*")):
        return Outcome(False, "a truncated file was left")
    return clear_error(proc, "ulimit")


def poisoned_cache(tmp: Path, timeout: float) -> Outcome:
    base = ["train", "--data", "digits", "--model", "dcgan", "--steps", "1", "--batch-size",
            "8", "--width", "4", "--eval-samples", "20", "--feature-steps", "5",
            "--no-progress"]  # fmt: skip
    first = ganstep(tmp, *base, "--out", tmp / "a", timeout=timeout)
    if first.returncode != 0:
        return Outcome(False, f"setup failed: {first.stderr[-200:]}")
    cached = list((tmp / "cache" / "features").glob("*.pt"))
    if not cached:
        return Outcome(False, "no feature cache was written")
    for p in cached:
        p.write_bytes(b"\x80\x04cos\nsystem\n(S'touch pwned'\ntR.")
    proc = ganstep(tmp, *base, "--out", tmp / "b", timeout=timeout)
    if (tmp / "pwned").exists():
        return Outcome(False, "the cache ran code")
    if proc.returncode == 0:
        return Outcome(True, "the damaged cache is rebuilt")
    return clear_error(proc, "cache")


def audit_case(edit: Callable[[str, str], str], expect: str, code: int | None):
    def run(tmp: Path, timeout: float) -> Outcome:
        script = audit_variant(tmp, "loop", edit)
        proc = ganstep(tmp, "audit", script, "--iterations", "2", "--", "--n_epochs", "1000",
                       timeout=timeout)  # fmt: skip
        if proc.returncode is None:
            return Outcome(False, "did not stop: " + proc.stderr)
        text = proc.stdout + proc.stderr
        if expect not in text or (code is not None and proc.returncode != code):
            return Outcome(False, f"exit {proc.returncode}: {text[-300:]}")
        if code == 0 or (code is None and proc.returncode == 0):
            return Outcome(True, text.strip().splitlines()[-1][:120])
        return clear_error(proc)

    return run


def exit_before_loop(head: str, loop: str) -> str:
    return head + "import sys\nsys.exit(0)\n" + loop


def os_exit_in_first_iteration(head: str, loop: str) -> str:
    return head + loop.replace("        #  Train Discriminator",
                               "        import os\n        os._exit(0)\n"
                               "        #  Train Discriminator", 1)  # fmt: skip


def bench_fused_on_batchnorm(tmp: Path, timeout: float) -> Outcome:
    proc = ganstep(tmp, "bench", "--models", "dcgan", "--objectives", "ns", "--variants",
                   "fused", "--reps", "1", "--warmup", "0", timeout=timeout)  # fmt: skip
    return clear_error(proc, "fused", "BatchNorm")


def ctrl_c_at_start(tmp: Path, timeout: float) -> Outcome:
    outcomes = []
    for delay in (0.5, 1.2):  # inside the import of torch, then around main()'s start
        env = {**os.environ, "GANSTEP_CACHE": str(tmp / "cache")}
        # steps enough that no machine ends the run before the signal (TINY's two take
        # about 1.1 s on a fast one): exit 130 is then always Ctrl-C's, wherever it lands
        cmd = [sys.executable, "-m", "ganstep", "train", "--out", str(tmp / f"r{delay}"), *TINY,
               "--steps", "1000000"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return Outcome(False, f"Ctrl-C at {delay} s was ignored")
        if proc.returncode != 130 or "Traceback" in err:
            return Outcome(False, f"Ctrl-C at {delay} s: exit {proc.returncode}: {err[-200:]}")
        outcomes.append(f"{delay} s")
    return Outcome(True, f"exit 130, no traceback (Ctrl-C at {', '.join(outcomes)})")


LIBRARY = """
import torch
from torch import nn
from ganstep import Step, simultaneous
from ganstep.engine.objectives import NS
G, D = nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 1))
class IntD(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 1)
    def forward(self, x):
        return self.l(x).long()
class PerSample(NS):
    def d_loss(self, real, fake):
        return real + fake, {{}}
def step(latent, D=D, objective="ns", schedule="d_first"):
    return Step(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()),
                objective=objective, schedule=schedule, latent=latent)
try:
    {call}
    print("no error")
except Exception as e:
    print(type(e).__name__, e)
"""


def library_case(call: str, *words: str):
    def run(tmp: Path, timeout: float) -> Outcome:
        return printed(python(tmp, LIBRARY.format(call=call)), *words)

    return run


CASES = [
    # silent
    Case("rgba folder with transparent pixels", "silent",
         data_case(lambda t: image_folder(t, "rgba", ["RGBA"] * 3), "transparent")),
    Case("LA folder with transparent pixels", "silent",
         data_case(lambda t: image_folder(t, "la", ["LA"] * 3), "transparent")),
    Case("mixed RGB and RGBA folder", "silent",
         data_case(lambda t: image_folder(t, "mixed", ["RGB", "RGBA", "RGB"]), "transparent")),
    Case("RGBA folder, opaque alpha", "silent", opaque_alpha_loads),
    Case("16-bit RGB PNGs", "silent", data_case(sixteen_bit_rgb, "16-bit")),
    Case("constant uint8 images", "silent",
         data_case(npy("const.npy", np.full((30, 8, 8), 7, np.uint8)), "identical")),
    Case("--data ''", "silent", flag_case("--data", "", words=("data",))),
    Case("--accumulate 2 --objective softmax", "silent",
         flag_case("--accumulate", "2", "--objective", "softmax", words=("accumulate",))),
    Case("bit flip inside a checkpoint", "silent", bit_flip, in_suite=False),
    Case("NaN EMA weights, then sample", "silent", nan_ema_sample, in_suite=False),
    Case("sample with another run's checkpoint", "silent", foreign_checkpoint, in_suite=False),
    Case("audit: loop with a bare except", "silent",
         audit_case(swallowing("except:"), "2 iteration(s)", 0)),
    Case("audit: os._exit(0) in the first iteration", "silent",
         audit_case(os_exit_in_first_iteration, "no complete iteration", 1)),
    Case("bench --models dcgan --variants fused", "silent", bench_fused_on_batchnorm),
    Case("Ctrl-C while torch loads", "silent", ctrl_c_at_start),
    Case("fresh run into a folder of the user's files", "lost", user_files_kept),
    Case("samples/ a symlink to the user's folder", "lost", symlinked_samples),
    Case("a user's .tmp-thesis.tex in checkpoints/", "lost", users_tmp_file),
    Case("a user's run.lock beside another file", "lost", users_run_lock),
    Case("run.lock a symlink to a user's file", "lost", run_lock_symlink),
    Case("run.lock a folder", "vague", run_lock_folder),
    Case("killed before the first checkpoint, rerun", "stuck", stopped_before_first_checkpoint,
         in_suite=False),
    Case("finished run, its checkpoints moved, a new run in its folder", "lost",
         finished_run_checkpoints_moved, in_suite=False),
    Case("checkpoint of step 100,000,000", "silent", nine_digit_checkpoints),
    Case("--data-dir /nonexistent with --data grid", "silent",
         flag_case("--data-dir", "/nonexistent", words=("drop data_dir",))),
    Case("TOML out = '~/x'", "silent", tilde_in_toml),
    Case("--data pics --out pics/run", "silent", out_inside_data),
    Case("a checkpoint copied to step_99999999.pt, --resume", "silent", misnamed_checkpoint,
         in_suite=False),
    Case("a UTF-8 BOM in a TOML config", "vague", bom_in_toml),
    Case("identical points", "silent",
         data_case(npy("same.npy", np.ones((40, 2))), "identical")),
    Case("a broken symlink in a data folder", "vague",
         data_case(symlink_folder("broken"), "symbolic link", "broken")),
    Case("a loop of symlinks in a data folder", "vague",
         data_case(symlink_folder("loop"), "symbolic link", "loop")),
    Case("float64 .npy images near +-1e308", "traceback",
         data_case(npy("vast.npy", np.random.default_rng(0).uniform(-1, 1, (30, 8, 8)) * 1.7e308),
                   "overflows float64", "rescale")),
    Case("an emptied config.toml, no checkpoint, --resume", "vague", emptied_config),
    Case("PYTHONIOENCODING=ascii, --out rü", "vague", ascii_console),
    Case("a folder ./grid beside --data grid", "silent", shadowed_folder),
    Case("12x8 images, --model mlp", "traceback", non_square_images, in_suite=False),
    Case("--objective wgan_gp --r1-every 4", "vague",
         flag_case("--objective", "wgan_gp", "--r1-every", "4", words=("drop r1_every",))),
    Case("a CUDA run's checkpoint resumed on the CPU", "traceback", cuda_run_resumed_on_cpu,
         in_suite=False),
    Case("files written under umask 022", "silent", umask_modes),
    Case("bench --json over a file of the user's", "vague", existing_json("bench")),
    Case("class subfolders and two stray images", "silent",
         data_case(strays_beside_classes, "stray", "000.png")),
    Case("a FIFO named picture.png in --data", "hang", data_case(fifo_png, "not a regular file")),
    Case(".npy header claiming 745 GiB", "traceback",
         data_case(huge_npy_header, "header says", "truncated")),
    Case("bench --batch-size 10**20", "traceback",
         bench_flag("--batch-size", 10**20, words=("--batch-size",))),
    Case("bench --width 10**20", "traceback", bench_flag("--width", 10**20, words=("--width",))),
    Case("bench --reps 10**12", "hang", bench_flag("--reps", 10**12, words=("--reps",))),
    Case("NUL in out", "vague", nul_in_out),
    Case("audit: a loop that never calls backward", "silent", never_backward),
    Case("audit: the loop in a thread", "traceback", loop_in_a_thread),
    Case("resume with more --steps under linear decay", "silent", lr_jump_on_resume,
         in_suite=False),
    Case("two 2000x2000 PNGs", "vague",
         data_case(lambda t: image_folder(t, "big", ["L"] * 2, size=2000), "Resize them")),
    Case("1x1 images", "vague", data_case(lambda t: image_folder(t, "one", ["L"] * 4, size=1),
                                          "1x1", "4x4")),
    Case("(N, 1) points", "vague",
         data_case(npy("points1.npy", np.random.default_rng(0).normal(size=(50, 1))),
                   "1 coordinate")),
    Case("a --data folder named in Latin-1", "vague", latin1_folder),
    Case("audit --function that takes an argument", "vague", function_with_argument),
    Case("audit --function that does nothing", "silent", function_that_does_nothing),
    Case("audit: a script that trains with Step", "silent", audit_of_a_step),
    Case("audit: one optimizer over G and D", "vague", one_optimizer_for_both),
    Case("audit: instance noise on D's inputs", "silent", instance_noise),
    Case("audit: a D with the hook-based spectral_norm", "vague", hooked_spectral_norm),
    Case("audit: a script that waits before training", "hang", waiting_script),
    Case("audit: a script leaving a non-daemon thread", "hang", lingering_thread),
    Case("audit: a script that closes sys.stdout", "vague", closed_stdout),
    Case("audit: the loop in a forked child", "traceback", forked_child),
    Case("library: an objective of per-sample losses", "vague",
         library_case("step(lambda n: torch.randn(n, 2), objective=PerSample())(torch.randn(4, 2))",
                      "not a scalar")),
    Case("library: D returns integers", "vague",
         library_case("step(lambda n: torch.randn(n, 2), D=IntD())(torch.randn(4, 2))",
                      "int64", "floating point")),
    Case("library: an inf in the first batch, fused", "vague",
         library_case("seen = step(lambda n: torch.randn(n, 2), schedule=simultaneous(fused=True))"
                      ".observe_d(torch.full((4, 2), float('inf'))).describe(); "
                      "assert seen == 'pure', seen", "no error")),
    Case("library: G's layer replaced after the Step", "silent",
         library_case("s = step(lambda n: torch.randn(n, 2)); s(torch.randn(4, 2)); "
                      "G.weight = nn.Parameter(torch.ones(2, 2)); s(torch.randn(4, 2))",
                      "changed after the Step was built", "weight")),
    Case("library: a g_first Step called inside torch.autocast", "silent",
         library_case("s = step(lambda n: torch.randn(n, 2), schedule='g_first')\n"
                      "    with torch.autocast('cpu', dtype=torch.bfloat16):\n"
                      "        s(torch.randn(4, 2))", "inside torch.autocast", "precision=")),
    Case("library: a spectral-norm D's Step inside parametrize.cached()", "silent",
         library_case("from torch.nn.utils import parametrize\n"
                      "    torch.nn.utils.parametrizations.spectral_norm(D[0])\n"
                      "    s = step(lambda n: torch.randn(n, 2))\n"
                      "    with parametrize.cached():\n"
                      "        s(torch.randn(4, 2))", "inside torch.nn.utils.parametrize")),
    Case("audit --json over a file of the user's", "vague", existing_json("audit")),
    Case("audit x.py --json x.py", "lost", audit_json_is_the_script),
    Case("sample --out over a file of the user's", "vague", sample_over_a_file, in_suite=False),
    # tracebacks
    Case("--batch-size 10**20", "traceback", flag_case("--batch-size", 10**20,
                                                       words=("batch_size",))),
    Case("--z-dim 10**20", "traceback", flag_case("--z-dim", 10**20, words=("z_dim",))),
    Case("--width 10**20", "traceback", flag_case("--width", 10**20, words=("width",))),
    Case("--r1-every 10**20", "traceback", flag_case("--r1-every", 10**20,
                                                     words=("r1_every",))),
    Case("PNG decompression bomb", "traceback", data_case(bomb, "decompression bomb")),
    Case("zero-byte .npy", "traceback", data_case(npy("empty.npy", None), "empty")),
    Case("poisoned feature cache", "traceback", poisoned_cache, in_suite=False),
    Case("library: latent returns float64 z", "traceback",
         library_case("step(lambda n: torch.randn(n, 2, dtype=torch.float64))(torch.randn(4, 2))",
                      "latent", "float64")),
    Case("library: latent returns int64 z", "traceback",
         library_case("step(lambda n: torch.ones(n, 2, dtype=torch.long))(torch.randn(4, 2))",
                      "latent", "floating")),
    Case("library: latent returns meta z", "traceback",
         library_case("step(lambda n: torch.randn(n, 2, device='meta'))(torch.randn(4, 2))",
                      "latent", "meta")),
    Case("library: latent takes no argument", "traceback",
         library_case("step(lambda: torch.randn(4, 2))", "latent(n)")),
    Case("library: load_state_dict iteration 'abc'", "traceback",
         library_case("s = step(lambda n: torch.randn(n, 2)); "
                      "s.load_state_dict({**s.state_dict(), 'iteration': 'abc'})",
                      "iteration")),
    Case("library: D ignores its parameters", "traceback",
         library_case("step(lambda n: torch.randn(n, 2), D=type('D', (nn.Linear,), "
                      "{'forward': lambda self, x: x.sum(1, keepdim=True)})(2, 1))"
                      "(torch.randn(4, 2))", "D's loss", "parameters")),
    # hangs
    Case("--eval-samples 10**20", "hang", flag_case("--eval-samples", 10**20,
                                                    words=("eval_samples",))),
    Case("--feature-steps 10**20", "hang", flag_case("--feature-steps", 10**20,
                                                     words=("feature_steps",))),
    Case("sample --n 10**9", "hang",
         lambda t, s: clear_error(ganstep(t, "sample", "--run", t / "none", "--n", 10**9,
                                          "--out", t / "s.npy", timeout=s), "--n")),
    Case("audit: loop catching BaseException", "hang",
         audit_case(swallowing("except BaseException:"), "2 iteration(s)", 0)),
    # vague
    Case("--lr-g 1e300", "vague", flag_case("--lr-g", "1e300", words=("lr_g",))),
    Case("--lr-g 1e4 --lr-d 1e4 (NaN)", "vague",
         nan_message("--lr-g", "1e4", "--lr-d", "1e4", "--width", "256", "--batch-size", "256",
                     words=("--lr-g",))),
    Case("--r1 1e38 (NaN)", "vague", nan_message("--r1", "1e38", words=("--r1",))),
    Case("checkpoint write past ulimit -f", "vague", file_size_limit),
    Case("sample --out past ulimit -f", "vague", sample_past_file_size_limit, in_suite=False),
    Case("deeply nested TOML", "vague",
         lambda t, s: clear_error(ganstep(t, "train", "--config", _nested_toml(t), timeout=s),
                                  "nested")),
    Case("sample --seed 2**70", "vague",
         lambda t, s: clear_error(ganstep(t, "sample", "--run", t / "none", "--n", 4,
                                          "--seed", 2**70, "--out", t / "s.npy", timeout=s),
                                  "--seed")),
    Case("partial last line of metrics.jsonl", "vague", partial_metrics, in_suite=False),
    Case("--compile with R1's double backward", "vague", compiled_r1_every_step),
    Case("audit: script exits before training", "vague",
         audit_case(exit_before_loop, "before any optimizer step", 1)),
    Case("(N, 0) .npy", "vague", data_case(npy("empty_rows.npy", np.zeros((30, 0))), "(30, 0)")),
    Case(".npy images near float32's limit", "vague", huge_values_load),
]  # fmt: skip


def _nested_toml(tmp: Path) -> Path:
    path = tmp / "nested.toml"
    path.write_text("steps = " + "[" * 5000 + "]" * 5000 + "\n")
    return path


def run_case(case: Case, timeout: float) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="ganstep-hostile-") as tmp:
        try:
            return case.run(Path(tmp), timeout)
        except Exception as e:  # the case's own setup failed: a row, not a crash
            return Outcome(False, f"{type(e).__name__}: {e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", help="run only cases whose name holds one of these")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per command")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or any(w in c.name for w in args.only)]
    failed = 0
    print(f"| {'case':<46} | {'review':<9} | outcome |")
    print(f"|{'-' * 48}|{'-' * 11}|---------|")
    for case in cases:
        t0 = time.perf_counter()
        outcome = run_case(case, args.timeout)
        failed += not outcome.ok
        verdict = outcome.verdict if outcome.ok else "FAIL"
        shown = outcome.what.replace("|", "/")[:150]
        print(f"| {case.name:<46} | {case.kind:<9} | {verdict}: {shown} "
              f"({time.perf_counter() - t0:.1f} s) |", flush=True)  # fmt: skip
    print(f"\n{len(cases) - failed} of {len(cases)} clear or correct")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
