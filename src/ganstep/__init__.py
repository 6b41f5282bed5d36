"""ganstep: GAN update steps with an explicit update order and the fewest passes it allows."""

from .interrupt import deferred as _deferred

with _deferred():  # these imports load torch (a second or more): Ctrl-C there is held
    from . import augment, objectives, reference, schedules
    from .audit import Report, audit
    from .audit_script import AuditError, audit_script
    from .augment import Adaptive, DiffAugment
    from .cuda_graph import GraphedStep
    from .d_profile import DProfile
    from .objectives import Objective, get_objective
    from .schedules import Schedule, d_first, g_first, get_schedule, simultaneous
    from .step import Step

__version__ = "0.1.0"

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
