"""The port's candidate objectives are ones a Step can be built with: R1 is added only
to objectives that take it, and the rounding variants keep their options."""

from __future__ import annotations

import pytest
import torch

from ganstep.engine.objectives import NS, Minimax, Objective
from ganstep.tools.port import candidates, rounding_variants, with_r1


@pytest.mark.parametrize("every", [1, 4])
@pytest.mark.parametrize("output", ["logits", "probabilities"])
def test_every_candidate_with_r1_builds(every, output):
    """The relativistic objectives (RaSGAN(detach_mean=True), a partial) take no r1:
    each was given one, and every Step made of it raised TypeError, which the port then
    reported as the error of every candidate."""
    scores = torch.randn(8, 1, requires_grad=True)  # (a Sigmoid read from the graph)
    made = with_r1(candidates(scores.sigmoid() if output == "probabilities" else scores,
                              "r1", None), every, rounds=1)  # fmt: skip
    assert made and all(isinstance(c.make(), Objective) for c in made)
    assert not any(c.objective.startswith(("Ra", "RS")) for c in made)


def test_rounding_variants_compute_as_bce_with_logits_and_keep_the_label():
    logits = candidates(torch.randn(8, 1), None, None)
    by_code = {c.objective: c for c in logits}
    ((ns,),) = [rounding_variants(by_code["NS()"])]
    assert ns.objective == "NS(bce_with_logits=True)"
    assert ns.make().bce_with_logits and isinstance(ns.make(), NS)
    ((smoothed,),) = [rounding_variants(by_code["NS(real_label=0.9)"])]
    assert smoothed.objective == "NS(real_label=0.9, bce_with_logits=True)"
    assert smoothed.make().real_label == 0.9 and smoothed.make().bce_with_logits
    ((minimax,),) = [rounding_variants(by_code["Minimax()"])]
    assert type(minimax.make()) is Minimax and minimax.make().bce_with_logits
    assert rounding_variants(by_code["LSGAN()"]) == []
    probabilities = candidates(torch.randn(8, 1, requires_grad=True).sigmoid(), None, None)
    assert all("probabilities=True" in c.objective for c in probabilities)
    assert all(rounding_variants(c) == [] for c in probabilities)
