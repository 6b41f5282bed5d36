"""``python -m ganstep`` works like the ``ganstep`` command."""

import sys

from .cli import main

sys.exit(main())
