"""The second half of tests/hostile_inputs.py's cases (see test_hostile.py): each ends in
a clear error or the correct result, run as a user would."""

from __future__ import annotations

import pytest
from hostile_inputs import run_case
from test_hostile import SECOND


@pytest.mark.parametrize("case", SECOND, ids=[case.name for case in SECOND])
def test_hostile_input_is_refused_clearly_or_handled(case):
    outcome = run_case(case, timeout=120)
    assert outcome.ok, f"{case.name}: {outcome.what}"
