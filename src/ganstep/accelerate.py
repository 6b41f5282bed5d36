"""The public path of :mod:`ganstep.adapters.accelerate` (``from ganstep.accelerate import ...``).

This module replaces itself with the adapter, so both names are one module object."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("ganstep.adapters.accelerate")
