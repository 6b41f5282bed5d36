"""``python -m ganstep`` works like the ``ganstep`` command."""

from .cli import run

run()
