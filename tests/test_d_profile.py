"""Knowing what D is: stochastic, stateful, eval-only state, mixing; observed, declared."""

from __future__ import annotations

import pytest
import torch
from helpers.impure import X, make_d
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ganstep import Step, simultaneous
from ganstep.engine.batch import Batch
from ganstep.engine.d_profile import DProfile, profile_d

EXPECTED = {
    "plain": set(),
    "dropout": {"stochastic"},
    "augment": {"stochastic"},
    "spectral": {"stateful"},
    "spectral_old": {"stateful"},
    "batchnorm": {"eval_state", "mixing"},
    "mbstd": {"mixing"},
    "center": {"mixing"},
}


def call(D, batch):
    return D(batch.x) if batch.c is None else D(batch.x, batch.c)


def found(profile: DProfile) -> set[str]:
    return {f for f in ("stochastic", "stateful", "eval_state", "mixing") if getattr(profile, f)}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_each_kind_is_found_and_the_observation_leaves_no_trace(kind):
    torch.manual_seed(0)
    D = make_d(kind).double()
    x = torch.randn(6, X, dtype=torch.float64)
    rng = torch.get_rng_state()
    state = {k: v.clone() for k, v in D.state_dict().items()}
    profile = profile_d(D, Batch(x), call)
    assert found(profile) == EXPECTED[kind], profile.describe()
    assert profile.pure == (kind == "plain")
    assert profile.mergeable == (kind in ("plain", "batchnorm", "mbstd", "center"))
    assert torch.equal(torch.get_rng_state(), rng)
    for k, v in D.state_dict().items():
        assert torch.equal(v, state[k]), k  # spectral norm's u and v, BatchNorm statistics


def test_spectral_norm_is_stateful_even_when_its_power_iteration_has_converged():
    """One more power iteration may leave the output bit-equal; D still reads u."""
    torch.manual_seed(0)
    D = make_d("spectral").double()
    x = torch.randn(6, X, dtype=torch.float64)
    for _ in range(200):  # converge u and v
        D(x)
    assert profile_d(D, Batch(x), call).stateful


def test_a_generator_d_holds_is_found_and_restored():
    class OwnNoise(nn.Module):
        def __init__(self):
            super().__init__()
            self.gen = torch.Generator().manual_seed(5)

        def forward(self, x):
            return x + torch.rand(x.shape, generator=self.gen, dtype=x.dtype)

    D = nn.Sequential(OwnNoise(), nn.Linear(X, 1)).double()
    before = D[0].gen.get_state()
    profile = profile_d(D, Batch(torch.randn(4, X, dtype=torch.float64)), call)
    assert profile.stochastic and not profile.mixing
    assert torch.equal(D[0].gen.get_state(), before)


def test_one_sample_and_eval_mode():
    D = make_d("batchnorm").double()
    one = Batch(torch.randn(1, X, dtype=torch.float64))
    assert profile_d(D, one, call).mixing  # observed on the sample twice
    D.eval()  # BatchNorm reads its running statistics: no mixing, no state change
    assert profile_d(D, one, call).pure


def step_for(D, **kwargs):
    G = nn.Linear(3, X).double()
    return Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                objective="ns", latent=lambda n: torch.randn(n, 3, dtype=torch.float64),
                **{"schedule": "simultaneous", **kwargs})  # fmt: skip


def test_step_observes_on_the_first_call_and_reports_it():
    step = step_for(make_d("dropout").double())
    assert step.d_profile is None and "not observed yet" in repr(step)
    step(torch.randn(6, X, dtype=torch.float64))
    assert step.d_profile.stochastic
    text = repr(step)
    assert "stochastic (a forward draws from a random generator)" in text
    assert "D forwards as the loop's" in text


def test_a_declaration_overrides_and_a_whole_one_skips_the_observation():
    D = make_d("plain").double()
    calls = []
    D.register_forward_hook(lambda m, a, out: calls.append(1))
    step = step_for(D, d_profile={"stochastic": True})
    step.observe_d(torch.randn(6, X, dtype=torch.float64))
    assert step.d_profile.stochastic and step.d_profile.reason("stochastic") == "declared"
    assert len(calls) == 3  # observed (three forwards), then the declaration put over it
    whole = {"stochastic": False, "stateful": False, "eval_state": False, "mixing": False}
    calls.clear()
    step = step_for(D, d_profile=whole)
    assert step.d_profile is not None and step.d_profile.pure
    step.observe_d(torch.randn(6, X, dtype=torch.float64))
    assert calls == []


def test_observed_again_when_d_changes_mode():
    D = make_d("dropout").double()
    step = step_for(D)
    real = torch.randn(6, X, dtype=torch.float64)
    assert step.observe_d(real).stochastic
    D.eval()
    assert step.observe_d(real).pure


def test_a_declared_mixing_d_is_refused_by_concat_and_fused():
    D = make_d("plain").double()
    with pytest.raises(ValueError, match="concat=True.*declared"):
        step_for(D, schedule="d_first", concat=True, d_profile=DProfile(mixing=True,
                 why=(("mixing", "declared"),)))  # fmt: skip
    with pytest.raises(ValueError, match="fused=True.*mix samples"):
        whole = {"stochastic": False, "stateful": False, "eval_state": False, "mixing": True}
        step_for(D, schedule=simultaneous(fused=True), d_profile=whole)


@given(st.text(max_size=12))
def test_d_order_and_d_forwards_take_only_their_names(word):
    D = make_d("plain").double()
    if word not in ("real_first", "fake_first"):
        with pytest.raises(ValueError, match="d_order must be one of"):
            step_for(D, d_order=word)
    if word not in ("auto", "loop", "merged"):
        with pytest.raises(ValueError, match="d_forwards must be one of"):
            step_for(D, d_forwards=word)


@given(st.dictionaries(st.text(max_size=10), st.one_of(st.booleans(), st.integers()), max_size=3))
def test_d_profile_declarations_are_checked(spec):
    D = make_d("plain").double()
    keys = {"stochastic", "stateful", "eval_state", "mixing"}
    ok = set(spec) <= keys and all(isinstance(v, bool) for v in spec.values())
    if ok:
        step_for(D, d_profile=spec)
    else:
        with pytest.raises(ValueError, match="d_profile"):
            step_for(D, d_profile=spec)


def test_a_failed_observation_is_tried_again_once_the_input_is_right():
    D = make_d("plain").double()
    step = step_for(D)
    with pytest.raises(ValueError, match="real batch does not match G's output"):
        step(torch.randn(6, X + 1, dtype=torch.float64))  # D cannot run on it either
    assert step.d_profile.stochastic  # not observed: treated as impure meanwhile
    step(torch.randn(6, X, dtype=torch.float64))
    assert step.d_profile.pure
