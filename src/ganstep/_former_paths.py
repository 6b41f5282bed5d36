"""The module paths ganstep had before its wings (``ganstep.objectives``, ``ganstep.config``,
``ganstep.data.idx``, ...) still import, as the same module objects as their new paths:
user code written against them keeps working, and nothing loads twice."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

# former top-level module or package -> its wing
WINGS = {
    "engine": (
        "augment", "batch", "checks", "cuda_graph", "cycle", "d_profile", "distributed",
        "errors", "fakes", "fused", "game", "interrupt", "losses", "objectives", "phases",
        "pool", "precision", "registry", "regularizers", "schedules", "sides", "step", "views",
    ),
    "trainer": (
        "checkpoint", "config", "data", "evaluation", "metrics", "models", "nonfinite",
        "plots", "run_folder", "sampling", "tensorboard", "train", "trainee",
    ),
    "tools": ("bench", "flops", "reference"),
    "adapters": ("resumable",),
}  # fmt: skip
# ganstep.audit and ganstep.audit_script are not here: those names are the functions.
FORMER = {name: f"ganstep.{wing}.{name}" for wing, names in WINGS.items() for name in names}


def new_path(fullname: str) -> str | None:
    """The module path that ``fullname`` (a former path, or a module inside a former
    package such as ``ganstep.data.idx``) now has; None for any other name."""
    parts = fullname.split(".")
    if len(parts) < 2 or parts[0] != "ganstep" or parts[1] not in FORMER:
        return None
    return ".".join([FORMER[parts[1]], *parts[2:]])


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran under its new path."""


class FormerPaths(importlib.abc.MetaPathFinder):
    """Finds a former path before the file system does (a module inside a former package
    would otherwise load a second time under the old name)."""

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        target_path = new_path(fullname)
        if target_path is None:
            return None
        if importlib.util.find_spec(target_path) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(target_path))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, FormerPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, FormerPaths())
