"""ganstep: GAN update steps with an explicit update order and the fewest passes it allows.

``import ganstep`` loads the update engine only (torch is its one dependency). The tools
(``audit``, ``audit_script``, ``reference``) load on first use; the trainer and the adapters
are imported by their own paths (``ganstep.trainer``, ``ganstep.lightning``,
``ganstep.accelerate``).
"""

from .engine import interrupt as _interrupt

_interrupt.hold_start()  # the ganstep command: Ctrl-C held from here until main() takes it

import importlib  # noqa: E402

from . import _former_paths  # noqa: E402

_former_paths.install()  # import ganstep.objectives, ganstep.config, ... as before the wings

with _interrupt.deferred():  # these imports load torch (a second or more): Ctrl-C there is held
    from .engine import augment, objectives, schedules
    from .engine.augment import Adaptive, DiffAugment
    from .engine.cuda_graph import GraphedStep
    from .engine.d_profile import DProfile
    from .engine.objectives import Objective, get_objective
    from .engine.schedules import Schedule, d_first, g_first, get_schedule, simultaneous
    from .engine.step import Step

__version__ = "0.1.0"

# public names from the tools wing, imported when first asked for: name -> (module, attribute)
_LAZY = {
    "Report": ("ganstep.tools.audit", "Report"),
    "audit": ("ganstep.tools.audit", "audit"),
    "AuditError": ("ganstep.tools.audit_script", "AuditError"),
    "audit_script": ("ganstep.tools.audit_script", "audit_script"),
    "reference": ("ganstep.tools.reference", None),
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'ganstep' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Adaptive",
    "AuditError",
    "DProfile",
    "DiffAugment",
    "GraphedStep",
    "Objective",
    "Report",
    "audit",
    "audit_script",
    "augment",
    "Schedule",
    "Step",
    "d_first",
    "g_first",
    "get_objective",
    "get_schedule",
    "objectives",
    "reference",
    "schedules",
    "simultaneous",
]
