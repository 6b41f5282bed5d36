"""LeanAdam against torch.optim.Adam(fused=True): the same parameters and state, bit for
bit, through rate changes, parameters without gradients, checkpoints both ways, hooks,
and every case it hands to torch's own step."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch
from torch import nn
from torch.optim import optimizer as torch_optimizer

from ganstep.trainer.lean_adam import LeanAdam


def _model(dtype: torch.dtype) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)).to(dtype)


def _pair(dtype: torch.dtype = torch.float32):
    """The same model twice, one under torch's fused Adam, one under LeanAdam, with two
    parameter groups that differ in rate, weight decay and maximize."""
    a = _model(dtype)
    b = copy.deepcopy(a)
    torch_adam = torch.optim.Adam(_groups(a), 1e-2, betas=(0.5, 0.9), fused=True)
    lean = LeanAdam(_groups(b), 1e-2, betas=(0.5, 0.9))
    return a, torch_adam, b, lean


def _groups(m: nn.Module) -> list[dict]:
    second = {"lr": 3e-2, "weight_decay": 0.1, "maximize": True}
    return [{"params": m[0].parameters()}, {"params": m[2].parameters(), **second}]


def _grads(models, gen: torch.Generator, skip_bias: bool = False) -> None:
    """The same random gradients on each model; with ``skip_bias``, the last layer's
    bias gets none (torch's Adam then leaves it and its state alone)."""
    for ps in zip(*(m.parameters() for m in models), strict=True):
        g = torch.randn(ps[0].shape, generator=gen, dtype=ps[0].dtype)
        for p in ps:
            p.grad = g.clone()
    if skip_bias:
        for m in models:
            m[2].bias.grad = None


def _assert_same(a: nn.Module, opt_a, b: nn.Module, opt_b) -> None:
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    sa, sb = opt_a.state_dict(), opt_b.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    assert sa["state"].keys() == sb["state"].keys()
    for k, state in sa["state"].items():
        assert state.keys() == sb["state"][k].keys()
        for name, value in state.items():
            assert value.dtype == sb["state"][k][name].dtype, name
            assert torch.equal(value, sb["state"][k][name]), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_same_steps_as_torch_fused_adam_bit_for_bit(dtype):
    a, torch_adam, b, lean = _pair(dtype)
    gen = torch.Generator().manual_seed(1)
    for i in range(40):
        _grads((a, b), gen, skip_bias=i < 5 or i % 7 == 0)  # a state made late, then skipped
        if i == 20:  # the trainer's lr decay writes the groups' rates
            for opt in (torch_adam, lean):
                for group in opt.param_groups:
                    group["lr"] *= 0.5
        torch_adam.step()
        lean.step()
        _assert_same(a, torch_adam, b, lean)
        torch_adam.zero_grad()
        lean.zero_grad()
        assert all(p.grad is None for p in b.parameters())


def test_checkpoints_load_both_ways_and_continue_the_same():
    a, torch_adam, b, lean = _pair()
    gen = torch.Generator().manual_seed(2)
    for _ in range(5):
        _grads((a, b), gen)
        torch_adam.step()
        lean.step()
    # swap: torch's state into a new LeanAdam, LeanAdam's into a new torch Adam
    lean2 = LeanAdam(_groups(a), 1e-2)
    lean2.load_state_dict(torch_adam.state_dict())
    torch2 = torch.optim.Adam(_groups(b), 1e-2, fused=True)
    torch2.load_state_dict(lean.state_dict())
    for _ in range(5):
        _grads((a, b), gen)
        lean2.step()
        torch2.step()
    _assert_same(a, lean2, b, torch2)


def test_zero_grad_without_set_to_none_zeroes_as_torch_does():
    a, torch_adam, b, lean = _pair()
    _grads((a, b), torch.Generator().manual_seed(3))
    torch_adam.zero_grad(set_to_none=False)
    lean.zero_grad(set_to_none=False)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert pb.grad is not None and torch.equal(pa.grad, pb.grad) and not pb.grad.any()


def test_hooks_run_as_torch_runs_them():
    calls = []
    handles = [
        torch_optimizer.register_optimizer_step_pre_hook(
            lambda opt, a, k: calls.append(("global pre", type(opt).__name__))),
        torch_optimizer.register_optimizer_step_post_hook(
            lambda opt, a, k: calls.append(("global post", type(opt).__name__))),
    ]  # fmt: skip
    try:
        for opt_type, kwargs in ((torch.optim.Adam, {"fused": True}), (LeanAdam, {})):
            m = _model(torch.float32)
            opt = opt_type(m.parameters(), 1e-2, **kwargs)
            opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", len(a))))
            opt.register_step_post_hook(lambda o, a, k: calls.append(("post", len(a))))
            _grads((m,), torch.Generator().manual_seed(4))
            opt.step()
    finally:
        for h in handles:
            h.remove()
    torch_calls, lean_calls = calls[:4], calls[4:]
    assert [c[0] for c in lean_calls] == [c[0] for c in torch_calls]
    assert [c[1] for c in lean_calls if c[0] in ("pre", "post")] == [1, 1]
    assert lean_calls[0] == ("global pre", "LeanAdam")


def test_a_pre_hook_may_replace_the_closure():
    m = _model(torch.float32)
    lean = LeanAdam(m.parameters(), 1e-2)
    _grads((m,), torch.Generator().manual_seed(5))
    lean.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: 7.0}))
    assert lean.step() == 7.0


def test_what_it_hands_to_torch_steps_the_same():
    """A closure, AMP's grad scale (as GradScaler sets it on a fused optimizer) and
    amsgrad go through torch's own step: the results equal torch's."""
    gen = torch.Generator().manual_seed(6)
    # a closure: its loss comes back, the step is taken
    a, torch_adam, b, lean = _pair()
    _grads((a, b), gen)
    assert torch_adam.step(lambda: 1.5) == lean.step(lambda: 1.5) == 1.5
    _assert_same(a, torch_adam, b, lean)
    # a grad scale and an overflow flag, as GradScaler.step sets them
    for opt in (torch_adam, lean):
        opt.grad_scale, opt.found_inf = torch.tensor(4.0), torch.tensor(0.0)
    _grads((a, b), gen)
    torch_adam.step()
    lean.step()
    for opt in (torch_adam, lean):
        del opt.grad_scale, opt.found_inf
    _assert_same(a, torch_adam, b, lean)
    # amsgrad in a group
    for opt in (torch_adam, lean):
        opt.add_param_group({"params": [nn.Parameter(torch.ones(2))], "amsgrad": True})
    torch_adam.param_groups[-1]["params"][0].grad = torch.tensor([0.5, -1.0])
    lean.param_groups[-1]["params"][0].grad = torch.tensor([0.5, -1.0])
    _grads((a, b), gen)
    torch_adam.step()
    lean.step()
    assert torch.equal(torch_adam.param_groups[-1]["params"][0], lean.param_groups[-1]["params"][0])
    assert "max_exp_avg_sq" in lean.state[lean.param_groups[-1]["params"][0]]


def test_bad_rates_are_refused_as_torch_refuses_them():
    m = _model(torch.float32)
    with pytest.raises(ValueError, match="learning rate"):
        LeanAdam(m.parameters(), -1.0)
    with pytest.raises(ValueError, match="beta"):
        LeanAdam(m.parameters(), 1e-3, betas=(1.0, 0.9))


def test_its_steps_keep_their_label_under_the_profiler():
    m = _model(torch.float32)
    lean = LeanAdam(m.parameters(), 1e-2)
    _grads((m,), torch.Generator().manual_seed(7))
    with torch.profiler.profile() as prof:
        lean.step()
    assert "Optimizer.step#LeanAdam.step" in {e.key for e in prof.key_averages()}


def test_a_training_run_and_its_resume_do_not_import_torch_dynamo(tmp_path):
    """The 0.8-1.4 s that torch.optim spends importing torch._dynamo at its first
    optimizer (add_param_group, step, state_dict are wrapped to import it)."""
    code = (
        "import sys\n"
        "from ganstep.trainer.train import Config, train\n"
        f"out = {str(tmp_path / 'run')!r}\n"
        "train(Config(steps=2, ckpt_every=2, out=out), progress=False)\n"
        "train(Config(steps=4, ckpt_every=2, out=out), resume=True, progress=False)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
