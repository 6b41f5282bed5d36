"""torch.compile of G and D inside Step: same updates as eager."""

from __future__ import annotations

import pytest
import torch
from helpers import Run, real_batches
from torch.testing import assert_close

from ganstep import Step, d_first, simultaneous


def run(schedule, compile):
    side = Run("ns", batchnorm=False)
    step = Step(*side.models(), objective="ns", schedule=schedule, latent=side.latent,
                compile=compile)  # fmt: skip
    for real in real_batches(3):
        step(real)
    return [*side.G.parameters(), *side.D.parameters()]


@pytest.mark.parametrize("schedule", [d_first(), simultaneous(fused=True)], ids=["d", "fused"])
def test_compiled_step_equals_eager(schedule):
    # aot_eager traces forward and backward like inductor does, without generating code:
    # the plumbing (frozen modules, no_grad, the fused input gradient) is what is tested.
    torch._dynamo.reset()
    for p, q in zip(run(schedule, "aot_eager"), run(schedule, False), strict=True):
        assert_close(p, q)


@pytest.mark.parametrize("value", [1, "", None, 2.0])
def test_compile_takes_a_bool_or_a_backend_name(value):
    side = Run("ns", batchnorm=False)
    with pytest.raises((TypeError, ValueError), match="compile"):
        Step(*side.models(), objective="ns", schedule="d_first", latent=side.latent,
             compile=value)  # fmt: skip
