"""Seconds of ``ganstep audit SCRIPT --iterations N --json r.json --verify N`` for each
script of tests/audit_scripts: the audit's own time (torch and ganstep imported once,
each audit forked from that process by the tests' launcher, tests/helpers/launcher.py,
with torch's, numpy's and Python's generators seeded 0, OMP_NUM_THREADS=1). With
``--against REV``, the same audits by the ganstep of git revision REV (checked out in a
temporary worktree) side by side, which runs first alternating from script to script,
and each pair of reports compared: equal but for the comments of the port's code (a
comment's wording may change, the Step printed may not). A benchmark, not a test: times
on a shared machine move, compare the two columns of one run.

    python benchmarks/audit_times.py [--scripts sagan descript_melgan ...] [--verify 3]
        [--against REV] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "audit_scripts"


# each audit, run by the tests' launcher in a child forked from a server that imported
# torch and ganstep: it prints the ganstep it imported, then seeds every generator
AUDIT = """import random, sys, numpy, torch, ganstep
print(ganstep.__file__, flush=True)
random.seed(0); numpy.random.seed(0); torch.manual_seed(0)
sys.argv = ["ganstep", *ARGV]
from ganstep.cli import run
run()
"""


class Side:
    """The audits of the ganstep of ``src``, forked by ``launcher`` (the tests' one)."""

    def __init__(self, launcher, src: Path) -> None:
        self.launcher, self.src = launcher, src
        self.env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
        launcher.python("pass", env=self.env, cwd=src, timeout=120)  # its server, untimed

    def audit(self, script: Path, folder: Path, verify: int) -> dict:
        argv = ["audit", str(script), "--iterations", str(verify), "--json", "r.json",
                "--verify", str(verify)]  # fmt: skip
        start = time.perf_counter()
        proc = self.launcher.python(AUDIT.replace("ARGV", repr(argv)), env=self.env,
                                    cwd=folder, timeout=600)  # fmt: skip
        seconds = time.perf_counter() - start
        if proc is None:  # a new interpreter would time its imports too
            raise RuntimeError("the launcher cannot fork an audit warm here (CUDA, or a "
                               "server that did not start): no figures")  # fmt: skip
        (folder / "output.txt").write_text(proc.stdout + proc.stderr)
        imported = Path(proc.stdout.partition("\n")[0]).resolve()
        if imported.parents[1] != self.src.resolve():
            raise RuntimeError(f"the audit for {self.src} imported {imported}")
        return {"seconds": seconds, "status": proc.returncode}


def uncommented(report: dict) -> dict:
    """The report with its port's code stripped of comments."""
    port = report.get("port")
    if isinstance(port, dict) and isinstance(port.get("code"), str):
        code = "\n".join(re.sub(r"\s+#.*$", "", line) for line in port["code"].splitlines())
        report = {**report, "port": {**port, "code": code}}
    return report


def compared(a: Path, b: Path) -> str:
    """Whether the two reports (``r.json``) are the same, or which of their keys differ."""
    if not (a.is_file() and b.is_file()):
        return "no report" if not (a.is_file() or b.is_file()) else "one report only"
    x, y = (uncommented(json.loads(p.read_text())) for p in (a, b))
    if x == y:
        return "same"
    keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
    port = [k for k in set(x.get("port") or {}) | set(y.get("port") or {})
            if (x.get("port") or {}).get(k) != (y.get("port") or {}).get(k)]  # fmt: skip
    return "differ: " + ", ".join(keys) + (f" (port: {', '.join(sorted(port))})" if port else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripts", nargs="+", help="names in tests/audit_scripts (default all)")
    parser.add_argument("--verify", type=int, default=3, help="iterations verified")
    parser.add_argument("--against", help="a git revision whose ganstep runs beside")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    names = args.scripts or sorted(p.stem for p in SCRIPTS.glob("*.py"))
    missing = [n for n in names if not (SCRIPTS / f"{n}.py").is_file()]
    if missing:
        parser.error(f"no such audit script: {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="ganstep-audit-times-") as tmp:
        sides = {"here": ROOT / "src"}
        if args.against:
            tree = Path(tmp) / "against"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                            str(tree), args.against], check=True)  # fmt: skip
            sides[args.against] = tree / "src"
        try:
            rows = run(names, sides, Path(tmp), args.verify)
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], check=False)  # fmt: skip
    show(rows, list(sides))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def run(names: list[str], sides: dict[str, Path], tmp: Path, verify: int) -> list[dict]:
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))
    import launcher as tests_launcher

    forks = tests_launcher.Launcher()
    servers = {label: Side(forks, src) for label, src in sides.items()}
    rows = []
    try:
        for i, name in enumerate(names):
            row = {"script": name}
            order = list(servers) if i % 2 == 0 else list(servers)[::-1]
            for label in order:
                folder = tmp / label.replace("/", "_") / name
                folder.mkdir(parents=True)
                row[label] = servers[label].audit(SCRIPTS / f"{name}.py", folder, verify)
            if len(servers) == 2:
                a, b = (tmp / label.replace("/", "_") / name / "r.json" for label in servers)
                row["reports"] = compared(a, b)
            rows.append(row)
            said = ", ".join(f"{label} {cell(row[label])}" for label in servers)
            print(f"  {name}: {said}", file=sys.stderr, flush=True)
    finally:
        forks.stop()
    return rows


def show(rows: list[dict], labels: list[str]) -> None:
    head = f"{'script':<28}" + "".join(f"{label[:20]:>22}" for label in labels)
    if len(labels) == 2:
        head += f"{'ratio':>8}  reports"
    print(head)
    for row in rows:  # (an audit whose script's loop crashed exits 3, its report written)
        line = f"{row['script']:<28}" + "".join(
            f"{cell(row[label]):>22}" for label in labels)  # fmt: skip
        if len(labels) == 2:
            line += f"{row[labels[0]]['seconds'] / row[labels[1]]['seconds']:>8.2f}  "
            line += row["reports"]
        print(line)
    totals = [sum(row[label]["seconds"] for row in rows) for label in labels]
    line = f"{'total':<28}" + "".join(f"{t:>20.1f} s" for t in totals)
    if len(labels) == 2:
        line += f"{totals[0] / totals[1]:>8.2f}"
    print(line)


def cell(audit: dict) -> str:
    """An audit's seconds, and its exit status where not 0."""
    status = "" if audit["status"] == 0 else f" (exit {audit['status']})"
    return f"{audit['seconds']:.1f} s{status}"


if __name__ == "__main__":
    main()
