"""Step's contract: clear errors for bad input, flags restored, state saved, no host sync."""

from __future__ import annotations

import contextlib
import copy
from dataclasses import replace

import pytest
import torch
from helpers import BATCH, X_DIM, Z_DIM, Run, real_batches
from helpers.wild import BatchMeanD
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import spectral_norm
from torch.testing import assert_close

from ganstep import Step, d_first, g_first, get_objective, get_schedule, simultaneous
from ganstep.engine.cuda_graph import check_capturable
from ganstep.engine.errors import NonFiniteError
from ganstep.engine.objectives import BEGAN, NS, OBJECTIVES, WGANGP
from ganstep.engine.schedules import SCHEDULES


def make_step(objective="ns", schedule="d_first", batchnorm=False, **kwargs):
    side = Run(getattr(objective, "name", objective), batchnorm)
    return side, Step(
        *side.models(), objective=objective, schedule=schedule, latent=side.latent, **kwargs
    )


# -- names ------------------------------------------------------------------------------


@given(st.text(max_size=12).filter(lambda s: s not in OBJECTIVES))
def test_unknown_objective_names_the_choices(name):
    with pytest.raises(ValueError, match="unknown objective .*choose one of: minimax, ns, lsgan"):
        get_objective(name)


@given(st.text(max_size=12).filter(lambda s: s not in SCHEDULES))
def test_unknown_schedule_names_the_choices(name):
    with pytest.raises(ValueError, match="choose one of: d_first, g_first, simultaneous"):
        get_schedule(name)


@pytest.mark.parametrize("bad", [3, None, torch.nn.Linear(1, 1)])
def test_objective_and_schedule_of_wrong_type(bad):
    with pytest.raises(TypeError, match="objective must be a name"):
        get_objective(bad)
    with pytest.raises(TypeError, match="schedule must be a name"):
        get_schedule(bad)


def test_step_refuses_unknown_names_at_construction():
    with pytest.raises(ValueError, match="unknown schedule 'mode2'"):
        make_step(schedule="mode2")
    with pytest.raises(ValueError, match="unknown objective 'wgangp'.*wgan_gp"):
        make_step(objective="wgangp")


# -- schedule and objective options -------------------------------------------------------

option = st.one_of(
    st.integers(-3, 8), st.booleans(), st.floats(-2, 8), st.none(), st.text(max_size=2)
)


@given(option, option)
def test_schedule_step_counts_must_be_positive_integers(a, b):
    def valid(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    for make in (lambda: d_first(d_steps=a, g_steps=b), lambda: g_first(g_steps=a, d_steps=b)):
        if valid(a) and valid(b):
            assert make().real_batches == b if make().name == "g_first" else a
        else:
            with pytest.raises(ValueError, match="must be a positive integer"):
                make()
    if valid(a) and valid(b) and not (a > 1 and b > 1):
        assert simultaneous(d_every=a, g_every=b).real_batches == 1
    else:
        with pytest.raises(ValueError, match="positive integer|at most one of d_every"):
            simultaneous(d_every=a, g_every=b)


@given(st.one_of(option, st.sampled_from(["each", "EACH_BATCH", "each_batch "])))
def test_d_steps_is_a_count_or_each_batch(d_steps):
    for make in (d_first, g_first):
        if isinstance(d_steps, int) and not isinstance(d_steps, bool) and d_steps >= 1:
            assert make(d_steps=d_steps).real_batches == d_steps
            continue
        with pytest.raises(ValueError, match="d_steps must be a positive integer or 'each_batch'"):
            make(d_steps=d_steps)
    assert d_first(d_steps="each_batch").real_batches is None


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_each_batch_steps_d_once_per_batch_given(sizes):
    """Each call's list, of any length, is one D step per batch (its own size), then G."""
    run = Run("ns", batchnorm=False)
    step = Step(*run.models(), objective="ns", latent=run.latent,
                schedule=d_first(d_steps="each_batch"))  # fmt: skip
    for k in sizes:
        step([torch.randn(n, X_DIM, dtype=torch.float64) for n in range(1, k + 1)])
    assert step.progress.d_updates == sum(sizes) and step.progress.g_updates == len(sizes)


@pytest.mark.parametrize("real", [[], (), "x", None, torch.zeros(BATCH, X_DIM)])
def test_each_batch_takes_a_nonempty_list(real):
    run = Run("ns", batchnorm=False)
    step = Step(*run.models(), objective="ns", latent=run.latent,
                schedule=g_first(d_steps="each_batch"))  # fmt: skip
    with pytest.raises(ValueError, match="takes a list of real batches per step, one D step"):
        step(real)
    with pytest.raises(ValueError, match="which feed cannot know"):
        step.feed([torch.zeros(BATCH, X_DIM)])


@given(option)
def test_schedule_flags_must_be_booleans(flag):
    if isinstance(flag, bool):
        assert d_first(reuse_fake=flag).reuse_fake is flag
        assert g_first(reuse_z=flag).reuse_z is flag
    else:
        with pytest.raises(ValueError, match="must be True or False"):
            d_first(reuse_fake=flag)
        with pytest.raises(ValueError, match="must be True or False"):
            g_first(reuse_z=flag)


@given(st.floats(allow_nan=True), st.floats(allow_nan=True))
def test_began_and_wgan_gp_options_are_checked(gamma, lambda_k):
    if 0 < gamma <= 1 and lambda_k >= 0:
        assert BEGAN(gamma=gamma, lambda_k=lambda_k).gamma == gamma
    else:
        with pytest.raises(ValueError, match="began (gamma|lambda_k)"):
            BEGAN(gamma=gamma, lambda_k=lambda_k)
    if lambda_k >= 0:
        assert WGANGP(weight=lambda_k).weight == lambda_k
    else:
        with pytest.raises(ValueError, match="wgan_gp weight must be a number >= 0"):
            WGANGP(weight=lambda_k)


@pytest.mark.parametrize("name", ["ns", "minimax", "lsgan", "hinge"])
def test_r1_penalty_is_half_r1_times_squared_gradient_norm(name):
    """On D(x) = w.x the gradient is w everywhere: R1 = r1/2 ||w||^2."""
    D = torch.nn.Linear(X_DIM, 1, bias=True).double()
    objective = OBJECTIVES[name](r1=3.0)
    real = torch.randn(BATCH, X_DIM, dtype=torch.float64, requires_grad=True)
    penalty = objective.real_penalty(real, objective.score(D(real), real).sum())
    assert_close(penalty, 1.5 * D.weight.square().sum())
    assert objective.penalty(D, real, real) is None  # R1 needs no forward of its own
    with pytest.raises(ValueError, match=f"{name} r1 must be a number >= 0"):
        OBJECTIVES[name](r1=-1)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=f"{name} r1_every must be a positive integer"):
            OBJECTIVES[name](r1=1.0, r1_every=bad)


# -- models and optimizers ----------------------------------------------------------------


def test_optimizer_that_does_not_hold_the_module_parameters():
    side = Run("ns", False)
    wrong = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"opt_g does not hold G's trainable parameters net\.0"):
        Step(
            side.G,
            side.D,
            wrong,
            side.opt_d,
            objective="ns",
            schedule="d_first",
            latent=side.latent,
        )
    partial = torch.optim.SGD(list(side.D.parameters())[:1], lr=0.1)
    with pytest.raises(ValueError, match="opt_d does not hold D's trainable parameters net.0.bias"):
        Step(
            side.G,
            side.D,
            side.opt_g,
            partial,
            objective="ns",
            schedule="d_first",
            latent=side.latent,
        )


def test_swapped_optimizers_are_named():
    side = Run("ns", False)
    with pytest.raises(ValueError, match="opt_g holds D's parameters .*swapped"):
        Step(
            side.G,
            side.D,
            side.opt_d,
            side.opt_g,
            objective="ns",
            schedule="d_first",
            latent=side.latent,
        )


def test_wrong_types_are_named():
    side = Run("ns", False)
    with pytest.raises(TypeError, match="G must be a torch.nn.Module"):
        Step(
            lambda z: z,
            side.D,
            side.opt_g,
            side.opt_d,
            objective="ns",
            schedule="d_first",
            latent=side.latent,
        )
    with pytest.raises(TypeError, match="opt_d must be a torch.optim.Optimizer"):
        Step(
            side.G,
            side.D,
            side.opt_g,
            "adam",
            objective="ns",
            schedule="d_first",
            latent=side.latent,
        )
    with pytest.raises(TypeError, match="latent must be callable"):
        Step(side.G, side.D, side.opt_g, side.opt_d, objective="ns", schedule="d_first", latent=3)


# -- batches and shapes -------------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_real_batch_of_wrong_shape_for_g_output(schedule):
    _, step = make_step(schedule=schedule)
    with pytest.raises(ValueError, match=r"real samples are \(5,\).*G produces \(2,\)"):
        step(torch.randn(BATCH, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="float32.*G produces .*float64"):
        step(torch.randn(BATCH, X_DIM))


@given(st.integers(0, 6))
def test_number_of_real_batches_follows_d_steps(count):
    _, step = make_step(schedule=d_first(d_steps=3))
    batches = real_batches(count)
    if count == 3:
        assert set(step(batches)) >= {"loss_d", "loss_g"}
    else:
        with pytest.raises(ValueError, match=r"takes 3 real batch\(es\) per step.*got"):
            step(batches)


@pytest.mark.parametrize("off", [torch.no_grad, torch.inference_mode], ids=["no_grad", "inference"])
@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_a_call_with_gradients_off_is_refused_and_updates_nothing(off, schedule):
    """A Step called inside torch.no_grad() (an evaluation block left open) said D's
    loss did not depend on D's layers; it names the block now, on the first call and
    on a steady one."""
    side, step = make_step(schedule=schedule)
    data = real_batches(2)
    for i, real in enumerate(data):
        before = copy.deepcopy([side.G.state_dict(), side.D.state_dict()])
        with off(), pytest.raises(RuntimeError, match=r"gradients disabled \(inside torch"):
            step(real)
        assert_close([side.G.state_dict(), side.D.state_dict()], before, rtol=0, atol=0)
        assert step.iteration == i
        step(real)  # outside: an iteration, so the second round is a steady call


def test_autocast_reuses_a_weight_cast_after_an_in_place_update():
    """Why a Step refuses a call inside the user's torch.autocast (below): within one
    autocast block a weight's cast copy is made once, so a forward after an optimizer
    step in that block still multiplies by the weights from before it."""
    torch.manual_seed(0)
    layer, x = nn.Linear(4, 4), torch.randn(2, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        before = layer(x)
        with torch.no_grad():
            layer.weight.mul_(3.0)
        assert torch.equal(layer(x), before)  # stale: the cast from before the update
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not torch.equal(layer(x), before)


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_a_call_inside_autocast_is_refused_and_updates_nothing(schedule):
    """Inside the user's autocast block the forwards after D's (or G's) step read the
    cast weights from before it: a g_first iteration, or a loop of them in one block,
    trained on stale weights. The Step owns its precision; the call names the block, on
    the first call and on a steady one, and an autocast turned off is no block."""
    side, step = make_step(schedule=schedule)
    for i, real in enumerate(real_batches(2)):
        before = copy.deepcopy([side.G.state_dict(), side.D.state_dict()])
        with (
            torch.autocast("cpu", dtype=torch.bfloat16),
            pytest.raises(RuntimeError, match=r"inside torch.autocast\('cpu'\).*precision='bf16'"),
        ):
            step(real)
        assert_close([side.G.state_dict(), side.D.state_dict()], before, rtol=0, atol=0)
        assert step.iteration == i
        with torch.autocast("cpu", enabled=False):
            step(real)  # the second round is a steady call
    assert step.iteration == 2


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_a_call_inside_parametrize_cached_is_refused_for_parametrized_models(schedule):
    """parametrize.cached() computes each parametrized weight once per block: inside it,
    D's spectral-normalized weight in G's phase was D's from before D's step, and every
    order trained on that. For a model with a parametrization the call is refused
    before anything is updated (first call and steady one); for one without, cached()
    changes nothing, and the calls run as outside it."""
    side = Run("ns", False)
    spectral_norm(side.D.net[0])
    step = Step(*side.models(), objective="ns", schedule=schedule, latent=side.latent)
    for i, real in enumerate(real_batches(2)):
        before = copy.deepcopy([side.G.state_dict(), side.D.state_dict()])
        with parametrize.cached(), pytest.raises(RuntimeError, match=r"parametrize.cached\(\)"):
            step(real)
        assert_close([side.G.state_dict(), side.D.state_dict()], before, rtol=0, atol=0)
        assert step.iteration == i
        step(real)
    trained = []
    for inside in (False, True):
        plain, step = make_step(schedule=schedule)
        with parametrize.cached() if inside else contextlib.nullcontext():
            for real in real_batches(3):
                step(real)
        trained.append([plain.G.state_dict(), plain.D.state_dict()])
    assert_close(trained[1], trained[0], rtol=0, atol=0)


def test_real_must_be_a_tensor_or_a_list_of_them():
    _, step = make_step()
    with pytest.raises(TypeError, match="a real batch is a tensor x, a pair"):
        step([[1.0, 2.0]])
    with pytest.raises(ValueError, match="shape \\(n, ...\\)"):
        step(torch.zeros(0, X_DIM, dtype=torch.float64))


def test_d_output_that_the_objective_cannot_use():
    side = Run("ns", False)
    D = torch.nn.Sequential(side.D, torch.nn.Flatten(0))  # (n, 1) -> (n,) -> one row in all
    D.forward = lambda x: side.D(x).reshape(1, -1)
    step = Step(side.G, D, side.opt_g, side.opt_d, objective="ns", schedule="d_first",
                latent=side.latent)  # fmt: skip
    with pytest.raises(ValueError, match="'ns' needs D's adversarial output to have one row per "
                       "sample.*shape \\(1, 6\\) for a batch of 6"):  # fmt: skip
        step(real_batches(1)[0])
    side = Run("ns", False)  # a logit D: not an autoencoder
    step = Step(*side.models(), objective="began", schedule="simultaneous", latent=side.latent)
    with pytest.raises(ValueError, match="'began' needs D to be an autoencoder.*\\(6, 1\\)"):
        step(real_batches(1)[0])


def test_latent_that_returns_the_wrong_batch():
    side = Run("ns", False)
    step = Step(
        *side.models(),
        objective="ns",
        schedule="d_first",
        latent=lambda n: torch.randn(n + 1, Z_DIM, dtype=torch.float64),
    )
    with pytest.raises(ValueError, match="latent\\(6\\) must return a tensor with 6 rows"):
        step(real_batches(1)[0])


@pytest.mark.parametrize("objective", ["ns", "wgan_gp", "hinge"])
def test_a_d_returning_one_number_for_the_batch_is_told_to_return_its_scores(objective):
    """(``wgan`` reads that one number: tests/test_wgan.py.)"""
    side = Run(objective, False)
    side.D = BatchMeanD(side.D)
    step = Step(*side.models(), objective=objective, schedule="d_first", latent=side.latent)
    with pytest.raises(ValueError, match=f"objective '{objective}' needs D's adversarial output "
                       "to have one row per sample, shape \\(6,\\) or \\(6, ...\\), but D "
                       "returned shape \\(1,\\) for a batch of 6 \\(one number for the whole "
                       "batch: return D's scores before their mean"):  # fmt: skip
        step(real_batches(1)[0])


def test_concat_with_batchnorm_in_d_is_refused():
    with pytest.raises(
        ValueError, match="concat=True .*BatchNorm in training mode \\(net.1, net.4\\)"
    ):
        make_step(batchnorm=True, concat=True)
    side, step = make_step(batchnorm=False, concat=True)
    step(real_batches(1)[0])


def test_concat_allowed_with_batchnorm_in_eval_and_refused_after_train():
    side = Run("ns", True)
    side.D.eval()
    step = Step(
        *side.models(), objective="ns", schedule="simultaneous", latent=side.latent, concat=True
    )
    step(real_batches(1)[0])
    side.D.train()
    with pytest.raises(ValueError, match="concat=True"):
        step(real_batches(1)[0])


def d_batch_sizes(D: torch.nn.Module) -> list[int]:
    """The row count of each input D is called on from now on."""
    sizes: list[int] = []
    D.register_forward_hook(lambda module, args, out: sizes.append(len(args[0])))
    return sizes


def impure_d(kind: str) -> torch.nn.Module:
    """A float64 D on X_DIM that is not pure: it draws random numbers (Dropout) or
    changes state its next forward reads (spectral norm's power iteration)."""
    torch.manual_seed(3)
    first = torch.nn.Linear(X_DIM, 8)
    if kind == "spectral_norm":
        first = torch.nn.utils.parametrizations.spectral_norm(first)
    extra = [torch.nn.Dropout(0.3)] if kind == "dropout" else []
    return torch.nn.Sequential(first, *extra, torch.nn.LeakyReLU(), torch.nn.Linear(8, 1)).double()


def stepped(concat, kind: str, steps: int = 3) -> tuple[list[torch.Tensor], list[int]]:
    """G's and D's parameters after ``steps`` d_first iterations with ``concat``, and the
    batch sizes D saw after its first observation; ``kind`` names D: an MLP with or
    without BatchNorm, an impure D, or the plain MLP under an augmentation."""
    side = Run("ns", kind == "batchnorm")
    if kind in ("dropout", "spectral_norm"):
        side.D = impure_d(kind)
        side.opt_d = torch.optim.Adam(side.D.parameters(), lr=0.02, betas=(0.5, 0.9))
    noise = torch.Generator().manual_seed(4)

    def jitter(x: torch.Tensor) -> torch.Tensor:  # draws for each input it is given
        return x + 0.1 * torch.randn(x.shape, generator=noise, dtype=x.dtype)

    step = Step(*side.models(), objective="ns", schedule="d_first", latent=side.latent,
                concat=concat, augment=jitter if kind == "augment" else None)  # fmt: skip
    torch.manual_seed(5)  # Dropout's draws: the same stream for each way
    step.observe_d(real_batches(1)[0])
    sizes = d_batch_sizes(side.D)
    for batch in real_batches(steps):
        step(batch)
    return params(side.G, side.D), sizes


def test_concat_auto_calls_d_once_on_a_pure_d():
    auto, auto_sizes = stepped("auto", "plain")
    once, once_sizes = stepped(True, "plain")
    assert auto_sizes == once_sizes == [2 * BATCH, BATCH] * 3  # D step on both, G step
    assert all(torch.equal(a, b) for a, b in zip(auto, once, strict=True))


@pytest.mark.parametrize("kind", ["batchnorm", "dropout", "spectral_norm", "augment"])
def test_concat_auto_calls_d_twice_where_one_call_is_not_the_loop_s_math(kind):
    """BatchNorm in training mode mixes the batch; Dropout's draws and spectral norm's
    power iteration follow the calls; an augmentation draws for each input: "auto"
    keeps the loop's two calls (no refusal, as concat=True's), the same updates."""
    auto, auto_sizes = stepped("auto", kind)
    twice, twice_sizes = stepped(False, kind)
    assert auto_sizes == twice_sizes == [BATCH] * 9  # real, fake, then the G step's fakes
    assert all(torch.equal(a, b) for a, b in zip(auto, twice, strict=True))


def test_concat_auto_follows_d_s_mode():
    """A BatchNorm D put in eval mode mixes nothing: "auto" calls it once from then on,
    and twice again once it is back in training mode."""
    side = Run("ns", True)
    step = Step(*side.models(), objective="ns", schedule="d_first", latent=side.latent,
                concat="auto")  # fmt: skip
    sizes = d_batch_sizes(side.D)
    first, second, third = real_batches(3)
    step(first)
    assert sizes[-3:] == [BATCH] * 3
    side.D.eval()
    step(second)
    assert sizes[-2:] == [2 * BATCH, BATCH]
    side.D.train()
    step(third)
    assert sizes[-3:] == [BATCH] * 3 and "concat='auto'" in repr(step)


def joined_loop(G, D, opt_g, opt_d, batches, latent) -> None:
    """A d_first loop that calls D once on the real and the fake batch joined, one
    BCEWithLogitsLoss over the rows of both (Keras-style), then G's step on the fakes."""
    for real in batches:
        n = real.shape[0]
        fake = G(latent(n))
        opt_d.zero_grad()
        out = D(torch.cat([real, fake.detach()]))
        target = torch.cat([torch.ones(n, 1), torch.zeros(n, 1)]).to(out)
        torch.nn.functional.binary_cross_entropy_with_logits(out, target).backward()
        opt_d.step()
        opt_g.zero_grad()
        out = D(fake)
        torch.nn.functional.binary_cross_entropy_with_logits(out, torch.ones_like(out)).backward()
        opt_g.step()


def test_concat_joint_calls_a_batchnorm_d_once_on_both_batches_as_a_joining_loop_does():
    """A BatchNorm D called on both batches joined normalizes them together: concat=True
    refuses that math, concat="joint" is it (parameters, running statistics and Adam's
    state equal the loop's), and two calls (concat=False) are another update."""
    theirs, ours, apart = sides = Run("ns", False), Run("ns", False), Run("ns", False)
    for side in sides:  # no bias before BatchNorm: its gradient would be rounding alone
        torch.manual_seed(6)
        side.D = nn.Sequential(nn.Linear(X_DIM, 8, bias=False), nn.BatchNorm1d(8),
                               nn.LeakyReLU(0.2), nn.Linear(8, 1)).double()  # fmt: skip
        side.opt_d = torch.optim.Adam(side.D.parameters(), lr=0.02, betas=(0.5, 0.9))
    joined_loop(*theirs.models(), real_batches(3), theirs.latent)
    for side, concat in ((ours, "joint"), (apart, False)):
        step = Step(*side.models(), objective="ns", schedule="d_first", latent=side.latent,
                    concat=concat, d_scale=0.5)  # fmt: skip
        sizes = d_batch_sizes(side.D)
        for batch in real_batches(3):
            step(batch)
    assert sizes[:3] == [BATCH] * 3  # the last side's: the loop's two calls, then G's
    # to 1e-8: the loop's one mean over both batches' rows and the Step's half sum of
    # their means round apart (1e-16), which Adam's first steps make ~1e-12, and up to
    # 4e-10 (3e-8 relative) in G's bias on some CPUs (an AMD EPYC's float64 sums), its
    # gradient near 0 there; apart from the loop is 1e-4 and more, below
    assert_same_models(ours, theirs, 1e-8)
    with pytest.raises(AssertionError):
        assert_same_models(apart, theirs, 1e-4)
    with pytest.raises(ValueError, match='concat="joint" where that is your math'):
        make_step(batchnorm=True, concat=True)[1](real_batches(1)[0])
    with pytest.raises(ValueError, match="concat='joint' forwards D once on both batches"):
        make_step(batchnorm=True, concat="joint", d_order="real_g_fake")


def assert_same_models(a: Run, b: Run, tolerance: float) -> None:
    """Parameters, buffers and both Adams' states of ``a`` and ``b`` equal to ``tolerance``."""
    for x, y in ((a.G, b.G), (a.D, b.D)):
        for p, q in zip([*x.parameters(), *x.buffers()], [*y.parameters(), *y.buffers()],
                        strict=True):  # fmt: skip
            assert_close(p, q, rtol=tolerance, atol=tolerance)
    for x, y in ((a.opt_g, b.opt_g), (a.opt_d, b.opt_d)):
        for s, t in zip(x.state.values(), y.state.values(), strict=True):
            for key in s:
                assert_close(s[key], t[key], rtol=tolerance, atol=tolerance)


@given(st.one_of(st.text().filter(lambda s: s not in ("auto", "joint")), st.integers(),
                 st.floats(), st.none()))  # fmt: skip
def test_concat_takes_true_false_auto_or_joint_only(bad):
    with pytest.raises(TypeError, match='concat must be True, False, "auto" or "joint"'):
        make_step(concat=bad)


# -- gradients: who owns them -------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_user_frozen_layers_stay_frozen_and_flags_are_restored(schedule):
    side = Run("ns", False)
    frozen_layer = side.D.net[0]
    for p in frozen_layer.parameters():
        p.requires_grad_(False)
    before = [p.detach().clone() for p in frozen_layer.parameters()]
    flags = {m: [p.requires_grad for p in m.parameters()] for m in (side.G, side.D)}
    step = Step(*side.models(), objective="ns", schedule=schedule, latent=side.latent)
    for batch in real_batches(3):
        step(batch)
    for m, want in flags.items():
        assert [p.requires_grad for p in m.parameters()] == want
    for p, q in zip(frozen_layer.parameters(), before, strict=True):
        assert torch.equal(p, q) and p.grad is None


def count_walks(module: torch.nn.Module) -> list[int]:
    """Count the calls of ``module.parameters()`` from now on (one list, one counter)."""
    walks, walk = [0], module.parameters

    def counted(*args, **kwargs):
        walks[0] += 1
        return walk(*args, **kwargs)

    module.parameters = counted  # an instance attribute: what side.module.parameters() finds
    return walks


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_parameters_are_walked_once_and_again_only_after_a_registration(schedule):
    """The Step asks for each side's parameters several times a call (its check that none
    was replaced, each backward's inputs, D frozen for G's step, lazy R1's zero
    gradients): each side's module is walked at the first call only, and again after
    some module registered a parameter (here a new, unrelated layer), not at each call."""
    side, step = make_step(NS(r1=0.1, r1_every=2), schedule)
    g_walks, d_walks = count_walks(side.G), count_walks(side.D)
    for batch in real_batches(4):  # two of them regularize D (lazily)
        step(batch)
    assert (g_walks[0], d_walks[0]) == (1, 1)
    torch.nn.Linear(2, 2)  # registers two parameters somewhere
    for batch in real_batches(2):
        step(batch)
    assert (g_walks[0], d_walks[0]) == (2, 2)


def test_a_flag_changed_inside_a_call_is_read_where_it_is_used():
    """Listing the parameters once a call must not freeze whether each trains: a hook
    after D's step that switches off G's first layer keeps G's step of the same call off
    it, and the flag the user set stays set after the call."""
    side, step = make_step(after_step={"d": lambda D: side.G.net[0].requires_grad_(False)})
    first = [p.detach().clone() for p in side.G.net[0].parameters()]
    rest = [p.detach().clone() for p in side.G.net[1:].parameters()]
    step(real_batches(1)[0])
    assert all(torch.equal(p, q) for p, q in zip(side.G.net[0].parameters(), first, strict=True))
    assert not any(torch.equal(p, q) for p, q in zip(side.G.net[1:].parameters(), rest,
                                                        strict=True))  # fmt: skip
    assert not any(p.requires_grad for p in side.G.net[0].parameters())


def test_a_layer_replaced_after_a_call_that_raised_is_still_named():
    """A call that raises leaves no listing behind: outside a call a side's parameters
    are G's as they are now, and the next call finds the layer replaced in between."""
    side, step = make_step(check_finite=True)
    real = real_batches(1)[0]
    real[0, 0] = float("nan")
    with pytest.raises(NonFiniteError):
        step(real)
    side.G.net[0] = torch.nn.Linear(Z_DIM, 8, dtype=torch.float64)
    assert [id(p) for p in step.game.g.all_params()] == [id(p) for p in side.G.parameters()]
    with pytest.raises(ValueError, match="changed after the Step was built"):
        step(real_batches(1)[0])


@pytest.mark.parametrize("schedule", ["d_first", "g_first"])
def test_flags_restored_when_a_phase_raises(schedule):
    side = Run("ns", False)
    step = Step(*side.models(), objective="softmax", schedule=schedule, latent=side.latent)
    bad_real = torch.randn(BATCH, X_DIM, 1, dtype=torch.float64)
    with pytest.raises(ValueError):
        step(bad_real)
    assert all(p.requires_grad for m in (side.G, side.D) for p in m.parameters())


@pytest.mark.parametrize("objective", list(OBJECTIVES))
@pytest.mark.parametrize(
    "schedule", [d_first(), d_first(reuse_fake=False), g_first(), simultaneous()], ids=repr
)
def test_each_weight_gradient_is_computed_once_per_iteration(schedule, objective):
    """Only the module being updated computes weight gradients: one accumulation per
    parameter per iteration, none wasted in the other module's phase."""
    side, step = make_step(objective=objective, schedule=schedule)
    counts = {}
    for module in (side.G, side.D):
        for p in module.parameters():
            counts[p] = 0
            p.register_post_accumulate_grad_hook(lambda p: counts.__setitem__(p, counts[p] + 1))
    for batch in real_batches(2):
        step(batch)
    assert set(counts.values()) == {2}


# -- returned values, state ---------------------------------------------------------------


@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_returns_detached_tensors_on_the_device(objective):
    _, step = make_step(objective=objective)
    logs = step(real_batches(1)[0])
    assert {"loss_d", "loss_g"} <= set(logs)
    for key, value in logs.items():
        assert isinstance(value, torch.Tensor) and not value.requires_grad, key
        assert value.dim() == 0 and value.device.type == "cpu"
    if objective == "wgan_gp":
        assert "gp" in logs
    if objective == "began":
        assert {"k", "m_global", "l_real"} <= set(logs)


def test_began_state_dict_round_trip_continues_identically():
    side_a, step_a = make_step(objective="began", schedule="simultaneous")
    batches = real_batches(6)
    for b in batches[:3]:
        step_a(b)
    saved = step_a.state_dict()
    assert saved["iteration"] == 3 and saved["objective"]["k"].item() > 0
    # deepcopy: Optimizer.load_state_dict keeps same-device tensors by reference
    models = copy.deepcopy([m.state_dict() for m in side_a.models()])

    side_b, step_b = make_step(objective="began", schedule="simultaneous")
    for m, state in zip(side_b.models(), models, strict=True):
        m.load_state_dict(state)
    step_b.load_state_dict(saved)
    side_b.gen.set_state(side_a.gen.get_state())
    logs_a = [step_a(b) for b in batches[3:]]
    logs_b = [step_b(b) for b in batches[3:]]
    for la, lb in zip(logs_a, logs_b, strict=True):
        assert_close(la["k"], lb["k"])
    for p, q in zip(side_a.G.parameters(), side_b.G.parameters(), strict=True):
        assert_close(p, q)


def test_state_dict_restores_d_every_phase():
    _, step = make_step(schedule=simultaneous(d_every=2))
    assert "loss_d" not in step(real_batches(1)[0])
    state = step.state_dict()
    _, fresh = make_step(schedule=simultaneous(d_every=2))
    fresh.load_state_dict(state)
    assert "loss_d" in fresh(real_batches(1)[0])


def test_bad_state_is_refused():
    _, step = make_step(objective="began")
    with pytest.raises(ValueError, match="keys 'iteration' and 'objective'"):
        step.load_state_dict({"k": 0.5})
    with pytest.raises(ValueError, match="exactly the key 'k'"):
        step.load_state_dict({"iteration": 0, "objective": {}})
    _, step = make_step(objective="ns")
    with pytest.raises(ValueError, match="'ns' has no state"):
        step.load_state_dict({"iteration": 0, "objective": {"k": 1}})


def test_began_k_stays_within_bounds_and_on_the_device():
    obj = BEGAN(lambda_k=10.0)
    _, step = make_step(objective=obj)
    for b in real_batches(4):
        k = step(b)["k"]
        assert isinstance(k, torch.Tensor) and 0.0 <= k.item() <= 1.0
        assert k.dtype == torch.float64


# -- CUDA -------------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("objective", list(OBJECTIVES))
@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_runs_on_cuda_and_matches_cpu(objective, schedule, monkeypatch):
    """The same draws on both devices: z from a CPU generator, moved to the device (a
    CUDA generator draws other numbers than a CPU one from the same seed), and
    WGAN-GP's interpolation weights likewise (torch.rand on the device it is asked for
    reads that device's generator)."""
    rand = torch.rand
    runs = {}
    for device in ("cpu", "cuda"):
        side = Run(objective, True, device=device)
        z_gen, rand_gen = torch.Generator().manual_seed(1), torch.Generator().manual_seed(7)
        latent = lambda n, z_gen=z_gen, device=device: torch.randn(  # noqa: E731
            n, Z_DIM, generator=z_gen, dtype=torch.float64).to(device)  # fmt: skip

        def cpu_rand(*shape, device=None, generator=None, rand_gen=rand_gen, **kw):
            return rand(*shape, generator=rand_gen, **kw).to(device)

        monkeypatch.setattr(torch, "rand", cpu_rand)
        step = Step(*side.models(), objective=objective, schedule=schedule, latent=latent)
        for b in real_batches(3, device=device):
            logs = step(b)
        assert all(v.device.type == device for v in logs.values())
        runs[device] = side
    monkeypatch.setattr(torch, "rand", rand)
    for module in ("G", "D"):
        cpu, cuda = getattr(runs["cpu"], module), getattr(runs["cuda"], module)
        for p, q in zip(cpu.state_dict().values(), cuda.state_dict().values(), strict=True):
            assert_close(p, q.cpu())


# -- non-finite values and z of the wrong width -----------------------------------------


def params(*modules) -> list[torch.Tensor]:
    return [p.detach().clone() for m in modules for p in m.parameters()]


def test_latent_of_the_wrong_width_is_named():
    side, step = make_step()
    wide = lambda n: torch.randn(n, Z_DIM + 2, dtype=torch.float64)  # noqa: E731
    step.game.options = replace(step.game.options, latent=wide)
    with pytest.raises(ValueError, match=r"G failed on z of shape \(6, 5\) from latent\(6\).*"
                       r"Does latent\(n\) return the input G takes\?"):  # fmt: skip
        step(real_batches(1)[0])


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_check_finite_stops_at_a_bad_real_batch_before_any_update(schedule, bad):
    side, step = make_step(schedule=schedule, check_finite=True)
    real = real_batches(1)[0]
    step(real)
    before = params(side.G, side.D)
    real[3, 1] = bad
    with pytest.raises(NonFiniteError, match="iteration 1: real batch 0 has NaN or infinite"):
        step(real)
    for a, b in zip(before, params(side.G, side.D), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous", "fused"])
def test_check_finite_stops_at_a_non_finite_loss_before_stepping_on_it(schedule):
    fused = schedule == "fused"
    chosen = simultaneous(fused=True) if fused else schedule
    side, step = make_step(schedule=chosen, check_finite=True)
    with torch.no_grad():
        side.G.net[-1].bias.fill_(float("inf"))  # G's samples, hence D's scores, are not finite
    before = params(side.G, side.D)
    first = "loss_g" if schedule == "g_first" else "loss_d"
    with pytest.raises(NonFiniteError, match=f"iteration 0: {first} is nan; no optimizer stepped"):
        step(real_batches(1)[0])
    after = params(side.G, side.D)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True) if a.isfinite().all())


def test_without_check_finite_a_nan_batch_reaches_the_parameters_silently():
    side, step = make_step()
    real = real_batches(1)[0]
    real[0, 0] = float("nan")
    step(real)  # the documented default: no host sync, no check
    assert not all(p.isfinite().all() for p in side.D.parameters())


def test_check_finite_is_refused_where_it_cannot_work():
    with pytest.raises(TypeError, match="check_finite must be True or False"):
        make_step(check_finite=1)
    with pytest.raises(ValueError, match="would stop one process and leave the others waiting"):
        make_step(check_finite=True, distributed=True)
    _, step = make_step(schedule=simultaneous(), check_finite=True)
    with pytest.raises(ValueError, match="CUDA graph capture: check_finite reads each loss"):
        check_capturable(step)


def test_a_side_wrapping_the_other_is_named_before_its_optimizer_is_blamed():
    """Before: 'opt_g does not hold G's trainable parameters d.weight ...; build it from
    G.parameters()', which would put D's parameters in G's optimizer."""
    G, D = torch.nn.Linear(2, 4), torch.nn.Linear(4, 1)

    class GD(torch.nn.Module):  # BigGAN's G_D
        def __init__(self):
            super().__init__()
            self.G, self.D = G, D

        def forward(self, z):
            return self.G(z)

    opts = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    with pytest.raises(ValueError, match=r"G contains D's parameters \(G.D is D\)") as e:
        Step(GD(), D, *opts, objective="ns", schedule="d_first", latent=lambda n: torch.randn(n, 2))
    assert "Pass the G inside it" in str(e.value) and "build it from" not in str(e.value)


def test_fresh_real_says_what_each_real_batch_is_for():
    """Before: 'takes 2 real batch(es) per step, one per D step', though the second is
    G's."""
    G, D = torch.nn.Linear(2, 4), torch.nn.Linear(4, 1)
    step = Step(G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1),
                objective="rasgan", schedule=d_first(reuse_fake=False, fresh_real=True),
                latent=lambda n: torch.randn(n, 2))  # fmt: skip
    with pytest.raises(ValueError, match=r"one per D step \(1\) then one per G step \(1"):
        step(torch.randn(5, 4))


def test_a_graph_refuses_a_hook_that_reads_the_iteration():
    """A captured graph replays one iteration's kernels: a hook that computes with the
    iteration would be frozen at the captured one (weights that are functions of the
    iteration get a graph per value: test_cuda_graph)."""
    _, step = make_step(schedule=simultaneous(), after_step={"g": lambda G, t: None})
    with pytest.raises(ValueError, match="a hook that reads the iteration is recorded"):
        check_capturable(step)
