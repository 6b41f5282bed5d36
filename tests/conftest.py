"""pytest settings and fixtures; the helpers the tests share are in tests/helpers."""

from __future__ import annotations

import os
import signal

import pytest
import torch
from hypothesis import settings

# Tiny models: intra-op threads cost more than they give, and CI has 2 cores.
torch.set_num_threads(1)
# Examples run real training steps: on a loaded 2-core machine a per-example deadline
# would measure the machine, not the code.
settings.register_profile("ganstep", deadline=None, max_examples=40)
settings.load_profile("ganstep")
# The Ctrl-C tests send SIGINT to the ganstep processes they start, which inherit an
# ignored SIGINT (pytest run as `pytest &` from a script) and rightly go on ignoring it:
# the tests start them as a terminal does.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _flushes_subnormals() -> bool:
    """Whether this thread's floating point flushes subnormal numbers to zero."""
    return 2.2250738585072014e-308 / 2 == 0.0


@pytest.fixture(autouse=True)
def process_state_kept():
    """What a test leaves in this process's environment, thread count and floating
    point mode is undone: Lightning's Trainer sets OMP_NUM_THREADS, torch's threads and
    its rank variables, which would change the next tests' reductions (and their
    bit-for-bit results); torch 2.5's inductor builds CPU kernels with -ffast-math, whose
    loading turns on flush-to-zero for the process (hypothesis then refuses floats)."""
    threads, environ, flushed = torch.get_num_threads(), dict(os.environ), _flushes_subnormals()
    yield
    torch.set_num_threads(threads)
    if _flushes_subnormals() and not flushed:
        torch.set_flush_denormal(False)
    if dict(os.environ) != environ:
        os.environ.clear()
        os.environ.update(environ)


@pytest.fixture(params=[False, True], ids=["plainD", "batchnormD"])
def batchnorm(request):
    return request.param


@pytest.fixture
def cache(tmp_path):
    """A fresh GANSTEP_CACHE for a test (downloads and feature extractors)."""
    return tmp_path / "cache"
