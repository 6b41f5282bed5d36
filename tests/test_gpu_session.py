"""benchmarks/gpu_session.sh, the one run a session lent a GPU makes, runs every test
that skips without CUDA: a CUDA test added to a file it does not list, or named so that
its ``-k`` leaves it out, would go unproven on the GPU while the session reports none
failed. Both sides are pytest's own collection, on this machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "benchmarks" / "gpu_session.sh"
# a plugin that writes each collected test's id and whether a skipif says it needs CUDA
RECORDER = """
import json, os

def pytest_collection_finish(session):
    rows = [[item.nodeid, any("CUDA" in str(mark.kwargs.get("reason", ""))
                              for mark in item.iter_markers("skipif"))]
            for item in session.items]
    with open(os.environ["GANSTEP_COLLECTED"], "w") as f:
        json.dump(rows, f)
"""


def collected(args: list[str], tmp_path: Path, name: str) -> dict[str, bool]:
    """Test id -> needs CUDA, for what ``pytest --collect-only args`` selects here."""
    (tmp_path / "cuda_recorder.py").write_text(RECORDER)
    record = tmp_path / f"{name}.json"
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "GANSTEP_COLLECTED": str(record), "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-p", "cuda_recorder", "-o", "addopts=", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return dict(json.loads(record.read_text()))


def test_the_gpu_session_runs_every_test_that_needs_cuda(tmp_path):
    script = SESSION.read_text()
    files = re.search(r'CUDA_TESTS="([^"]+)"', script).group(1).split()
    keyword = re.search(r'-k "([^"]+)"', script).group(1)
    assert all((ROOT / f).is_file() for f in files), files
    # a test that skips without CUDA says so through torch.cuda, in a file that names it
    mentions = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").glob("test_*.py"))
                if "cuda" in p.read_text().lower()]  # fmt: skip
    needs_cuda = {test for test, needs in collected(mentions, tmp_path, "all").items() if needs}
    session = collected(["-k", keyword, *files], tmp_path, "session")
    assert len(needs_cuda) > 50  # the recorder sees the skip marks (71 on 2026-11-28)
    assert sorted(needs_cuda - set(session)) == []
