"""Whole-iteration CUDA graph capture: refusals everywhere, replays equal eager on CUDA."""

from __future__ import annotations

import copy

import pytest
import torch
from helpers import BATCH, X_DIM, real_batches
from helpers.graph_cases import conditioned, disc_start, graph_cases, make, per_call
from helpers.replay import CAPTURES, REPLAYS, captures_fail_on_cpu, captures_on_cpu
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

from ganstep import Step, d_first, g_first, simultaneous
from ganstep.engine import cuda_graph
from ganstep.engine.cuda_graph import GraphedStep, iteration_kind
from ganstep.engine.regularizers import PathLength


class HostAdaptive:
    """An adaptive augmentation of a user's, that keeps its p as a Python float."""

    p = 0.0

    def __call__(self, x):
        return x

    def end_iteration(self, done, all_reduce=None):
        return {}


class HostMean(PathLength):
    """A G regularizer of a user's whose state is not known to be kept on the device."""

    capturable = False


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"schedule": simultaneous(fused=True)}, "fused"),
        ({"schedule": d_first(), "precision": "fp16"}, "fp16"),
        ({"schedule": d_first(), "capturable": False}, "capturable=True"),
        ({"schedule": d_first()}, "needs the models on CUDA"),
        ({"schedule": d_first(), "g_regularizer": HostMean()}, "HostMean does not say it is"),
        ({"schedule": d_first(), "fake_pool": 4}, "fake pool"),
        ({"schedule": d_first(), "augment": HostAdaptive()}, "HostAdaptive has an end_iter"),
        ({"schedule": d_first(), "check_finite": True}, "check_finite"),
        ({"schedule": d_first(), "compile": "eager"}, "G and D run through torch.compile"),
        ({"schedule": d_first(d_steps="each_batch")}, "give d_steps a number"),
    ],
)
def test_capture_refuses_what_a_graph_cannot_hold(kwargs, match):
    _, step = make(**kwargs)
    with pytest.raises(ValueError, match=match):
        GraphedStep(step, real_batches(1, dtype=torch.float32)[0])


@given(st.one_of(st.none(), st.integers(), st.text(), st.builds(object)))
def test_what_is_not_a_step_is_refused_by_name(thing):
    with pytest.raises(TypeError, match=r"CUDA graph capture takes a ganstep.Step, got "):
        GraphedStep(thing, torch.zeros(BATCH, X_DIM))


def test_a_cycle_step_is_refused_by_name():
    from ganstep.engine.cycle import CycleStep

    G_A, G_B = torch.nn.Linear(X_DIM, X_DIM), torch.nn.Linear(X_DIM, X_DIM)
    D_A, D_B = torch.nn.Linear(X_DIM, 1), torch.nn.Linear(X_DIM, 1)
    opt_g = torch.optim.Adam([*G_A.parameters(), *G_B.parameters()])
    opt_d = torch.optim.Adam([*D_A.parameters(), *D_B.parameters()])
    cycle = CycleStep(G_A, G_B, D_A, D_B, opt_g, opt_d)
    with pytest.raises(TypeError, match=r"got CycleStep \(CycleStep and BicycleStep are not"):
        GraphedStep(cycle, torch.zeros(BATCH, X_DIM))


def test_a_g_the_user_compiled_is_refused_as_a_compiled_step_is():
    """A replay skips torch.compile's guards however the module came to be compiled."""
    side, _ = make(d_first())
    step = Step(torch.compile(side.G, backend="eager"), side.D, side.opt_g, side.opt_d,
                objective="ns", schedule=d_first(), latent=side.latent)  # fmt: skip
    with pytest.raises(ValueError, match=r"capture: G run through torch.compile, which"):
        GraphedStep(step, real_batches(1, dtype=torch.float32)[0])


def test_an_info_optimizer_that_is_not_capturable_is_refused():
    _, step = make(d_first(), info=True)
    step.game.info.optimizer.param_groups[0]["capturable"] = False
    with pytest.raises(ValueError, match=r"info_optimizer \(Adam\) is not capturable"):
        GraphedStep(step, real_batches(1, dtype=torch.float32)[0])


@given(st.one_of(st.integers(), st.text(), st.none(), st.floats(allow_nan=False)))
def test_generators_that_are_not_a_list_of_generators_are_refused(item):
    cuda = torch.device("cuda")
    with pytest.raises(TypeError, match=r"generators\[1\]: a torch.Generator, got "):
        cuda_graph.graph_generators([torch.Generator(), item], torch.device("cpu"))
    with pytest.raises(TypeError, match=r"generators: a list of torch.Generator \(e.g. \[gen\]\)"):
        cuda_graph.graph_generators(item, cuda)


def test_a_generator_of_another_device_than_the_models_is_refused(monkeypatch):
    """z drawn on the host and moved to the GPU: a graph would replay its captured
    numbers. The models' device decides (CPU models here, under the CPU stand-ins)."""
    with pytest.raises(ValueError, match=r"generators\[0\] draws on cpu, the models are on cuda"):
        cuda_graph.graph_generators([torch.Generator()], torch.device("cuda"))
    captures_on_cpu(monkeypatch)
    side, step = make(d_first())
    real = real_batches(1, dtype=torch.float32)[0]
    with pytest.raises(TypeError, match=r"e.g. \[gen\]\), got Generator"):
        GraphedStep(step, real, generators=side.gen)  # one generator, not a list of them
    assert GraphedStep(step, real, generators=(side.gen,)).graphs.generators == [side.gen]


def test_a_failed_capture_says_so_and_puts_the_counters_back(monkeypatch):
    captures_fail_on_cpu(monkeypatch)
    _, step = make(d_first())
    real = real_batches(1, dtype=torch.float32)[0]
    graphed = GraphedStep(step, real, warmup=1)
    graphed(real)  # the kind's eager warmup
    with pytest.raises(cuda_graph.CaptureFailed) as failed:
        graphed(real)
    message = str(failed.value)
    assert message.startswith("CUDA graph capture of an iteration of kind (1, 1, (False,)")
    assert "(RuntimeError: CUDA error: operation not permitted when stream is capturing)" in message
    assert message.endswith(
        "run this Step without CUDA graphs in a new process (torch leaves this one's CUDA "
        "allocator and generators in capture mode), and please report this"
    )
    assert (step.progress.iteration, step.progress.d_updates, step.progress.g_updates) == (1, 1, 1)
    # captured so that other threads' CUDA calls (a DataLoader's pin-memory thread) are
    # not the capture's: in torch's default mode one of them fails it
    assert CAPTURES[-1] == {"capture_error_mode": "thread_local"}


def test_a_weight_of_the_iteration_sorts_iterations_by_its_values():
    """Iterations whose weights take the same values are one kind (one graph): taming's
    disc_start (d_scale 0 until iteration 2, then 0.5) and a term's weight stepping
    every third iteration make three kinds of six iterations."""
    l1 = (lambda i: 0.1 * (i // 3), lambda v: v.fake.x.abs().mean())
    _, step = make(d_first(), capturable=False, d_scale=disc_start(2, 0.5), g_terms={"l1": l1})
    kinds = []
    for real in real_batches(6, dtype=torch.float32):
        kinds.append(iteration_kind(step))
        step(real)
    assert [k[-1] for k in kinds] == [(0.0, 0.0), (0.0, 0.0), (0.5, 0.0)] + [(0.5, 0.1)] * 3
    assert {k[:-1] for k in kinds} == {(1, 1, (False,), (False,), False)}
    _, step = make(d_first(), capturable=False, g_scale=lambda i: "1")  # checked as a Step does
    with pytest.raises(TypeError, match="g_scale is a function of the iteration and must"):
        iteration_kind(step)


def test_a_term_that_reads_the_iteration_is_refused_at_capture(monkeypatch):
    """What a term computes from view.iteration a graph would replay as captured; the
    capture finds the read, and the iteration it recorded does not count."""
    captures_on_cpu(monkeypatch)
    ramp = lambda v: v.fake.x.abs().mean() * min(v.iteration / 10, 1.0)  # noqa: E731
    _, step = make(d_first(), g_terms={"ramp": ramp})
    real = real_batches(1, dtype=torch.float32)[0]
    graphed = GraphedStep(step, real, warmup=1)
    graphed(real)  # the kind's eager warmup reads it as the Step does
    with pytest.raises(ValueError, match="a loss term of the G phase reads view.iteration"):
        graphed(real)
    assert (step.progress.iteration, step.progress.d_updates, step.progress.g_updates) == (1, 1, 1)


def test_a_weight_that_never_repeats_runs_eagerly_and_says_so_once(monkeypatch):
    """A linear ramp makes a new kind at every iteration: none is ever captured, the
    counts kept are bounded, and one warning says why the Step is eager."""
    captures_on_cpu(monkeypatch)
    monkeypatch.setattr(cuda_graph, "KINDS_COUNTED", 3)
    _, step = make(d_first(), g_scale=lambda i: 1.0 + i / 100)
    data = real_batches(8, dtype=torch.float32)
    graphed = GraphedStep(step, data[0], warmup=1)
    with pytest.warns(UserWarning, match="iterations of 3 kinds ran eagerly") as said:
        for real in data:
            graphed(real)
    assert len(said) == 1 and said[0].filename == __file__
    assert graphed.graphs.graphs == {} and len(graphed.graphs.eager_runs) <= 3
    assert step.progress.iteration == 8


def test_a_setting_changed_after_a_capture_is_refused_before_its_replay(monkeypatch):
    """A graph's Adam kernels take the learning rate its capture saw: a float lr changed
    later (a scheduler's step) would be ignored by every replay, and so would a tensor
    lr replaced by another. One filled in place, as torch's schedulers fill it, is read
    by the replays."""
    captures_on_cpu(monkeypatch)
    side, step = make(d_first())
    side.opt_g.param_groups[0]["lr"] = torch.tensor(0.01)
    halves = torch.optim.lr_scheduler.StepLR(side.opt_g, 1, gamma=0.5)
    data = real_batches(4, dtype=torch.float32)
    graphed = GraphedStep(step, data[0], warmup=1)
    graphed(data[0])  # eager
    graphed(data[1])  # captured and replayed
    halves.step()  # fills G's lr in place
    graphed(data[2])
    assert side.opt_g.param_groups[0]["lr"].item() == pytest.approx(0.005)
    side.opt_d.param_groups[0]["lr"] = 0.005
    with pytest.raises(ValueError, match=r"opt_d's lr \(group 0\) changed from 0.01 to 0.005 "):
        graphed(data[3])
    side.opt_d.param_groups[0]["lr"] = 0.01
    side.opt_g.param_groups[0]["lr"] = torch.tensor(0.005)  # what the graph does not read
    with pytest.raises(ValueError, match=r"opt_g's lr \(group 0\) is another tensor than"):
        graphed(data[3])
    assert step.progress.iteration == 3


def test_replacing_what_the_graphs_read_drops_them(monkeypatch):
    """torch's Optimizer.load_state_dict makes new state tensors, and a Step's puts
    BEGAN's k in a new one: graphs captured before would read the old ones. They are
    dropped; each kind warms up and is captured again. A parameter replaced after the
    capture likewise: the Step's own check then says it is in no optimizer."""
    captures_on_cpu(monkeypatch)
    side, step = make(d_first(), objective="began")
    data = real_batches(3, dtype=torch.float32)
    graphed = GraphedStep(step, data[0], warmup=1)
    CAPTURES.clear()

    def replays_of_three_calls() -> int:
        before = len(REPLAYS)
        for real in data:
            graphed(real)
        return len(REPLAYS) - before

    assert replays_of_three_calls() == 2 and len(CAPTURES) == 1  # eager, captured, replayed
    side.opt_d.load_state_dict(side.opt_d.state_dict())
    assert replays_of_three_calls() == 2 and len(CAPTURES) == 2  # warmed up, captured again
    step.load_state_dict(step.state_dict())
    assert replays_of_three_calls() == 2 and len(CAPTURES) == 3
    assert replays_of_three_calls() == 3 and len(CAPTURES) == 3  # nothing loaded: replays
    first = next(side.D.parameters())
    first.data = first.data.clone()  # new memory, as Module.to gives
    assert replays_of_three_calls() == 2 and len(CAPTURES) == 4
    side.D.net[1] = torch.nn.Tanh()  # a layer without parameters: the graphs hold LeakyReLU
    assert replays_of_three_calls() == 2 and len(CAPTURES) == 5
    torch.nn.Sequential(torch.nn.Linear(2, 2))  # registrations elsewhere: G and D as they were
    assert replays_of_three_calls() == 3 and len(CAPTURES) == 5
    layer = next(m for m in side.D.modules() if isinstance(m, torch.nn.Linear))
    layer.weight = torch.nn.Parameter(layer.weight.detach().clone())
    with pytest.raises(ValueError, match="parameters changed after the Step was built"):
        graphed(data[0])


def test_a_layer_frozen_or_unfrozen_after_a_capture_drops_the_graphs(monkeypatch):
    """FreezeD freezes D's first layers partway through training: the eager Step then
    leaves them as they are (it backpropagates into the parameters that train), where a
    graph captured before would go on updating them. The next call drops the graphs,
    and so does unfreezing."""
    captures_on_cpu(monkeypatch)
    side, step = make(d_first())
    data = real_batches(3, dtype=torch.float32)
    graphed = GraphedStep(step, data[0], warmup=1)
    CAPTURES.clear()
    for frozen, captures in ((False, 1), (True, 2), (True, 2), (False, 3)):
        side.D.net[0].requires_grad_(not frozen)
        for real in data:
            graphed(real)
        assert len(CAPTURES) == captures


BLOCKS_REFUSED = {
    "no_grad": (torch.no_grad, "gradients disabled"),
    "autocast": (lambda: torch.autocast("cpu", dtype=torch.bfloat16), r"inside torch.autocast"),
    "parametrize": (torch.nn.utils.parametrize.cached, r"parametrize.cached\(\)"),
}


@pytest.mark.parametrize("block", BLOCKS_REFUSED)
def test_a_replay_in_a_refused_block_is_refused_as_a_call_is(monkeypatch, block):
    """A replay runs its kernels whatever autograd's mode, autocast's dtype or
    parametrize's cache; the eager Step refuses a call inside torch.no_grad(), the
    user's torch.autocast or (D spectral-normalized) parametrize.cached(), and so does
    a graphed one, before it replays."""
    captures_on_cpu(monkeypatch)
    _, step = make(d_first(), spectral=True)
    data = real_batches(3, dtype=torch.float32)
    graphed = GraphedStep(step, data[0], warmup=1)
    for real in data[:2]:  # eager, captured
        graphed(real)
    replays = len(REPLAYS)
    enter, words = BLOCKS_REFUSED[block]
    with enter(), pytest.raises(RuntimeError, match=words):
        graphed(data[2])
    assert len(REPLAYS) == replays and step.iteration == 2
    graphed(data[2])
    assert len(REPLAYS) == replays + 1


def test_a_hook_registered_after_a_capture_runs_once_recaptured(monkeypatch):
    """A replay runs no Python, so a hook registered on D after the capture is never
    run by one (the graphs cannot see it); recapture() drops the graphs: the next call
    runs eagerly with the hook, and the one after captures it."""
    captures_on_cpu(monkeypatch)
    side, step = make(d_first())
    data = real_batches(2, dtype=torch.float32)
    graphed = GraphedStep(step, data[0], warmup=1)
    for real in data:  # eager, captured
        graphed(real)
    CAPTURES.clear()
    seen = []
    side.D.register_forward_hook(lambda module, args, out: seen.append(out.shape[0]))
    graphed(data[0])
    assert seen == [] and CAPTURES == []  # replayed: the hook never ran
    graphed.recapture()
    graphed(data[0])
    forwards = len(seen)  # D's forwards in an eager iteration (3: real, fake, fake for G)
    assert forwards == 3 and CAPTURES == []
    graphed(data[1])
    assert len(CAPTURES) == 1 and len(seen) == 2 * forwards  # the capture ran it once more
    replays = len(REPLAYS)
    graphed(data[0])
    assert len(seen) == 2 * forwards and len(REPLAYS) == replays + 1


def test_a_module_switched_to_eval_gets_graphs_of_its_own(monkeypatch):
    """G.eval() after a capture (BatchNorm then normalizes by its running statistics and
    updates none, Dropout passes everything) runs other kernels than the capture's: its
    iterations warm up and are captured apart, and G.train() replays the first graph."""
    captures_on_cpu(monkeypatch)
    side, step = make(d_first(), batchnorm=True)
    data = real_batches(3, dtype=torch.float32)
    graphed = GraphedStep(step, data[0], warmup=1)
    CAPTURES.clear()
    replays = len(REPLAYS)

    def three_calls() -> tuple[int, int]:
        for real in data:
            graphed(real)
        return len(CAPTURES), len(REPLAYS) - replays

    assert three_calls() == (1, 2)  # eager, captured, replayed
    side.G.net[1].eval()
    assert three_calls() == (2, 4)
    side.G.train()
    assert three_calls() == (2, 7)  # the first graph again
    side.G.net[1].eval()
    assert three_calls() == (2, 10)  # the second
    assert len(graphed.graphs.graphs) == 2


GRAPH_CASES = graph_cases("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("case", list(GRAPH_CASES))
def test_graph_replays_equal_eager_iterations(case):
    """The graphed run and the eager run, each from the same seed, one after the other:
    draws from the default CUDA generator (WGAN-GP's interpolation weights, the
    augmentation, sampled conditions) would interleave if the two ran side by side
    (a difference once seen here: 5.057 against 5.037). z comes from each side's own
    generator, registered with the graph. Every call is one iteration; the first two
    of each kind run eagerly, then each kind's graph replays."""
    schedule, objective, options = GRAPH_CASES[case]
    torch.manual_seed(0)
    data = [b.float().cuda() for b in real_batches(24)]
    if "condition" in options:  # real batches carry their labels either way
        data = conditioned(data, "cuda")
    calls = per_call(data, schedule)
    runs = []
    for graph in (True, False):
        side, step = make(schedule, objective=objective, device="cuda",
                          conditional="condition" in options, **options)  # fmt: skip
        torch.manual_seed(3)
        run = GraphedStep(step, calls[0], warmup=2, generators=[side.gen]) if graph else step
        logs = [run(real) for real in calls]
        runs.append((side, step, logs))
    (g_side, g_step, g_logs), (e_side, e_step, e_logs) = runs
    for i, (logs, eager) in enumerate(zip(g_logs, e_logs, strict=True)):
        assert logs.keys() == eager.keys(), f"call {i}"
        for key in eager:
            assert_close(logs[key], eager[key], rtol=1e-4, atol=1e-5, msg=f"{key} at call {i}")
    for module in ("G", "D"):
        for p, q in zip(getattr(g_side, module).parameters(),
                        getattr(e_side, module).parameters(), strict=True):  # fmt: skip
            assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert g_step.progress == e_step.progress  # replays moved the counters as calls do


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_graphed_step_restored_mid_run_goes_on_as_the_eager_step_restored():
    """Both sides run 6 iterations (the graphed one from its graphs), then load the
    eager side's state of iteration 3 (Adam's moments, BEGAN's k: new tensors) and run
    6 more: equal. Graphs kept across the load would go on from iteration 6's state."""
    torch.manual_seed(0)
    calls = [b.float().cuda() for b in real_batches(12)]
    sides = []
    for graph in (True, False):
        side, step = make(d_first(), objective="began", device="cuda")
        torch.manual_seed(3)  # each side from the same default generator, as above
        run = GraphedStep(step, calls[0], warmup=2, generators=[side.gen]) if graph else step
        saved = None
        for i, real in enumerate(calls[:6]):
            if i == 3:
                saved = copy.deepcopy([side.opt_g.state_dict(), side.opt_d.state_dict(),
                                       step.state_dict(), side.G.state_dict(),
                                       side.D.state_dict()])  # fmt: skip
            run(real)
        sides.append((side, step, run, saved))
    eager_saved = sides[1][3]
    for side, step, run, _ in sides:  # z goes on from iteration 6 on both sides
        for part, state in zip((side.opt_g, side.opt_d, step, side.G, side.D), eager_saved,
                               strict=True):  # fmt: skip
            part.load_state_dict(copy.deepcopy(state))
        for real in calls[6:]:
            run(real)
    (g_side, g_step, *_), (e_side, e_step, *_) = sides
    for module in ("G", "D"):
        for p, q in zip(getattr(g_side, module).parameters(),
                        getattr(e_side, module).parameters(), strict=True):  # fmt: skip
            assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert_close(g_step.objective.k, e_step.objective.k, rtol=1e-4, atol=1e-6)
    assert g_step.progress == e_step.progress


def graphed_and_eager(change, batchnorm=False, calls=12) -> tuple:
    """A graphed and an eager d_first run on CUDA, each from the same seeds, ``change(side,
    i)`` made before call i on both; (graphed side, GraphedStep, eager side), each run
    checked equal to the other: parameters and buffers."""
    torch.manual_seed(0)
    data = [b.float().cuda() for b in real_batches(calls)]
    runs = []
    for graph in (True, False):
        side, step = make(d_first(), device="cuda", batchnorm=batchnorm)
        torch.manual_seed(3)
        run = GraphedStep(step, data[0], warmup=2, generators=[side.gen]) if graph else step
        for i, real in enumerate(data):
            change(side, i)
            run(real)
        runs.append((side, run))
    (g_side, graphed), (e_side, _) = runs
    for module in ("G", "D"):
        eager = getattr(e_side, module).state_dict()
        for name, p in getattr(g_side, module).state_dict().items():
            assert_close(p, eager[name], rtol=1e-4, atol=1e-5, msg=f"{module}.{name}")
    return g_side, graphed, e_side


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_graphed_step_follows_a_module_switched_to_eval_as_the_eager_step_does():
    """G's BatchNorm in eval mode for calls 4-7 (its running statistics normalize, and
    stay as they are), then back: the graphed run (a graph of each mode) equals the
    eager run, running statistics too. One graph of the training mode would have gone
    on updating them."""
    _, graphed, _ = graphed_and_eager(lambda side, i: side.G.net[1].train(not 4 <= i < 8), True)
    assert len(graphed.graphs.graphs) == 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_graphed_step_leaves_a_layer_frozen_mid_run_as_the_eager_step_does():
    """FreezeD: D's first layer frozen (requires_grad False) from call 5 on. The graphed
    run equals the eager run, and that layer stays as it was at call 5 in both."""
    kept = {}

    def freeze_at_5(side, i):
        if i == 5:
            side.D.net[0].requires_grad_(False)
            kept[id(side)] = copy.deepcopy(side.D.net[0].state_dict())

    g_side, _, e_side = graphed_and_eager(freeze_at_5)
    for side in (g_side, e_side):
        for name, p in side.D.net[0].state_dict().items():
            assert_close(p, kept[id(side)][name], rtol=0, atol=0, msg=name)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_step_refuses_a_generator_on_the_host():
    side, step = make(d_first(), device="cuda")
    real = real_batches(1, dtype=torch.float32)[0].cuda()
    with pytest.raises(ValueError, match=r"generators\[1\] draws on cpu, the models are on cuda"):
        GraphedStep(step, real, generators=[side.gen, torch.Generator()])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_graphed_step_takes_its_batches_from_a_pinned_loader():
    """As GAN code feeds its step: a DataLoader with worker processes and pin_memory=True,
    whose pin-memory thread allocates pinned memory while the graphs are captured (which
    fails a capture in torch's default mode, global, and not in thread_local)."""
    side, step = make(d_first(), device="cuda")
    data = torch.utils.data.TensorDataset(torch.randn(24 * BATCH, X_DIM))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=2,
                                         pin_memory=True, drop_last=True)  # fmt: skip
    graphed = None
    for (real,) in loader:
        real = real.cuda(non_blocking=True)
        graphed = graphed or GraphedStep(step, real, warmup=2, generators=[side.gen])
        logs = graphed(real)
    assert step.progress.iteration == 24 and len(graphed.graphs.graphs) == 1
    assert all(torch.isfinite(v).all() for v in logs.values())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("objective", ["ns", "wgan_gp", "began", "softmax"])
@pytest.mark.parametrize("schedule", [d_first(), g_first(), simultaneous()], ids=str)
def test_an_iteration_never_waits_for_the_gpu(schedule, objective):
    _, step = make(schedule, objective=objective, device="cuda")
    real = real_batches(1, dtype=torch.float32)[0].cuda()
    step(real)  # lazily created state (optimizer moments) comes first
    torch.cuda.set_sync_debug_mode("error")  # any host synchronisation raises
    try:
        logs = step(real)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert all(v.device.type == "cuda" for v in logs.values())
