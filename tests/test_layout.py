"""The package's wings: the engine imports nothing of the others and needs torch only;
`import ganstep` loads the engine alone; the other wings load on use, and the public paths
(ganstep.audit, ganstep.reference, ganstep.lightning) keep working."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ganstep"
# a wing may import from the wings before it, never from one after it
WINGS = ("engine", "trainer", "tools", "adapters")
TRAIN_EXTRA = ("numpy", "scipy", "sklearn", "PIL", "matplotlib", "tqdm")
BLOCK_EXTRA = f"import sys\nfor m in {TRAIN_EXTRA!r}:\n    sys.modules[m] = None\n"


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def imports_of(path: Path) -> list[str]:
    """The absolute names of the modules ``path`` imports (relative ones resolved)."""
    parts = ["ganstep", *path.relative_to(PACKAGE).with_suffix("").parts]
    package = parts[:-1]  # a module's package; an __init__'s is itself: the same slice
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.append(module)
            found += [f"{module}.{alias.name}" for alias in node.names]  # `from . import x`
    return found


@pytest.mark.parametrize("wing", WINGS)
def test_no_wing_imports_a_later_one(wing):
    later = {f"ganstep.{w}" for w in WINGS[WINGS.index(wing) + 1 :]}
    for path in (PACKAGE / wing).rglob("*.py"):
        for name in imports_of(path):
            up = [w for w in later if name == w or name.startswith(w + ".")]
            assert not up, f"{path.relative_to(PACKAGE)} imports {name}"


def test_the_engine_imports_torch_and_the_standard_library_only():
    for path in (PACKAGE / "engine").rglob("*.py"):
        for name in imports_of(path):
            root = name.split(".")[0]
            assert root in {"ganstep", "torch"} or root in sys.stdlib_module_names, (path, name)


def test_import_ganstep_loads_the_engine_only():
    done = python(
        "import ganstep, sys\nprint(sorted(m for m in sys.modules if m.startswith('ganstep')))"
    )
    assert done.returncode == 0, done.stderr
    loaded = eval(done.stdout)  # noqa: S307 - our own print of a list of names
    assert "ganstep.engine.step" in loaded
    top = ("ganstep", "ganstep.engine", "ganstep._former_paths")
    assert all(m in top or m.startswith("ganstep.engine.") for m in loaded), loaded


def test_a_step_trains_without_the_train_extra():
    done = python(
        BLOCK_EXTRA
        + (
            "import torch\n"
            "from ganstep import Step, d_first\n"
            "G, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)\n"
            "step = Step(G, D, torch.optim.SGD(G.parameters(), 0.1),\n"
            "            torch.optim.SGD(D.parameters(), 0.1), objective='ns',\n"
            "            schedule=d_first(), latent=lambda n: torch.randn(n, 2))\n"
            "for _ in range(2):\n"
            "    losses = step(torch.randn(8, 2))\n"
            "print(sorted(losses))\n"
        )
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['loss_d',", "'loss_g']"]


def test_the_command_without_the_train_extra_says_what_to_install():
    done = python(BLOCK_EXTRA + "from ganstep.cli import main\nraise SystemExit(main(['train']))")
    assert done.returncode == 1
    assert "pip install 'ganstep[train]'" in done.stderr.splitlines()[-1]
    assert "Traceback" not in done.stderr


def test_public_paths_of_the_other_wings():
    import ganstep
    import ganstep.adapters.lightning
    import ganstep.lightning
    import ganstep.tools.audit
    import ganstep.tools.reference

    assert ganstep.audit is ganstep.tools.audit.audit  # the function, not its module
    from ganstep import audit, reference

    assert audit is ganstep.tools.audit.audit and reference is ganstep.tools.reference
    assert ganstep.lightning is ganstep.adapters.lightning
    assert {"audit", "reference", "Step"} <= set(dir(ganstep))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        ganstep.nothing  # noqa: B018


def test_former_module_paths_import_the_same_modules():
    """Code written before the wings (``from ganstep.objectives import NS``,
    ``ganstep.data.idx``) imports the modules at their new paths, each loaded once."""
    done = python(
        "import sys, ganstep\n"
        "from ganstep.objectives import NS\n"
        "import ganstep.objectives, ganstep.engine.objectives\n"
        "import ganstep.data.idx, ganstep.trainer.data.idx\n"
        "from ganstep.config import Config\n"
        "import ganstep.reference, ganstep.tools.reference\n"
        "assert ganstep.objectives is ganstep.engine.objectives\n"
        "assert NS is ganstep.engine.objectives.NS\n"
        "assert sys.modules['ganstep.data.idx'] is ganstep.trainer.data.idx\n"
        "assert Config.__module__ == 'ganstep.trainer.config'\n"
        "assert ganstep.reference is ganstep.tools.reference\n"
        "print(ganstep.audit.__name__)\n"
        "try:\n"
        "    import ganstep.nothing\n"
        "except ModuleNotFoundError as e:\n"
        "    print(e)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["audit", "No module named 'ganstep.nothing'"]


def test_the_seed_loops_former_names_warn_and_run_the_same_loop():
    from ganstep import reference

    with pytest.warns(DeprecationWarning, match="seed001_way2 is now reference.backward_memo_way2"):
        assert reference.seed001_way2 is reference.backward_memo_way2
    with pytest.raises(AttributeError, match="no attribute 'seed009_way1'"):
        reference.seed009_way1  # noqa: B018


def test_the_wheel_carries_the_shipped_digit_classifier(tmp_path):
    """The package data a Stacked MNIST evaluation loads (metrics/stacked.py: SHIPPED)
    is in the wheel pip builds, byte for byte."""
    import hashlib
    import shutil
    import zipfile

    from ganstep.trainer.metrics.stacked import SHIPPED

    # pyproject's build-system, here, since the build runs offline (no isolation)
    pytest.importorskip("setuptools", "68")
    source = tmp_path / "source"  # a copy: building writes build/ and egg-info beside it
    shutil.copytree(PACKAGE.parent, source / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info"))  # fmt: skip
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PACKAGE.parents[1] / name, source)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                            "--no-build-isolation", "-w", str(tmp_path), str(source)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("ganstep-*.whl")
    with zipfile.ZipFile(wheel) as zipped:
        for key, digest in SHIPPED.items():
            data = zipped.read(f"ganstep/trainer/metrics/{key}.pt")
            assert hashlib.sha256(data).hexdigest() == digest
