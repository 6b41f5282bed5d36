"""Copies of a user's modules that a forward left a tensor of its graph on: torch's
hook-based spectral_norm and weight_norm set ``weight`` so, and ``copy.deepcopy``
refuses such a module (the audit's FLOP counts and the port's copies used it)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.nn.utils import spectral_norm, weight_norm

from ganstep.tools.copies import module_copy


def hooked(kind: str) -> nn.Module:
    torch.manual_seed(0)
    layer = nn.Linear(4, 3)
    wrapped = spectral_norm(layer) if kind == "spectral_norm" else weight_norm(layer)
    return nn.Sequential(wrapped, nn.ReLU(), nn.Linear(3, 1))


@pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated:FutureWarning")
@pytest.mark.parametrize("kind", ["spectral_norm", "weight_norm"])
def test_a_module_after_a_forward_is_copied_and_its_copy_runs_as_it_does(kind):
    module = hooked(kind)
    x = torch.randn(5, 4)
    module(x).sum().backward()  # leaves module[0].weight, a tensor of that graph
    with pytest.raises(RuntimeError, match="deepcopy"):
        copy.deepcopy(module)
    twin = module_copy(module)
    assert twin[0].weight.grad_fn is None  # held detached
    state, theirs = module.state_dict(), twin.state_dict()
    assert state.keys() == theirs.keys()
    assert all(torch.equal(state[k], theirs[k]) for k in state)
    assert all(p is not q for p, q in zip(module.parameters(), twin.parameters(), strict=True))
    twin(x).sum().backward()  # its own forward sets its weight anew, from its own params
    assert twin[0].weight.grad_fn is not None
    module(x)  # both take one more step of their state (spectral_norm's u, v): same
    assert torch.equal(module.eval()(x), twin.eval()(x))


def test_a_module_without_such_tensors_is_copied_as_deepcopy_copies_it():
    module = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    twin = module_copy(module)
    assert twin[1].running_mean is not module[1].running_mean
    assert torch.equal(twin(torch.ones(2, 4)), copy.deepcopy(module)(torch.ones(2, 4)))
