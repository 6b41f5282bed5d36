"""ganstep.tools.audit on the loops of the wild, on ganstep itself, and from the command line."""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pytest
import torch
from helpers import ganstep
from helpers.dcgan import N, d_costs, dcgan_pair, latent
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import spectral_norm

from ganstep import Step, audit, d_first, g_first, reference, simultaneous

REAL = torch.randn(N, 3, 32, 32)


def audited(loop_name: str, objective: str = "ns", iterations: int = 2):
    G, D, opt_g, opt_d = dcgan_pair(batchnorm=True)
    loop = getattr(reference, loop_name)
    return audit(lambda: loop(G, D, opt_g, opt_d, [REAL], latent, objective), G=G, D=D,
                 opt_g=opt_g, opt_d=opt_d, iterations=iterations)  # fmt: skip


def test_dcgan_example():
    report = audited("dcgan_example")
    assert report.order == "d_first" and report.schedule == "d_first()"
    assert report.forwards == {"G": 1, "D": 3}
    _, weight_grads = d_costs(REAL)
    assert report.wasted_flops == 2 * weight_grads  # D's weight gradients in each G step
    (hazard,) = report.hazards
    assert "D's weight gradients were computed in G's step and never stepped" in hazard
    assert str(report).splitlines()[-1].startswith("  ganstep: schedule d_first()")


def test_pytorch_gan_is_simultaneous_with_a_recomputed_d_forward():
    report = audited("pytorch_gan_g_first")
    assert report.order == "simultaneous" and report.forwards == {"G": 1, "D": 3}
    forward, weight_grads = d_costs(REAL)
    assert report.wasted_flops == 2 * (forward + weight_grads)
    assert any("D was forwarded again on the same input" in h for h in report.hazards)


def test_lightning_is_g_first_and_wastes_nothing():
    report = audited("lightning_g_first")
    assert report.order == "g_first" and report.forwards == {"G": 2, "D": 3}
    assert report.hazards == [] and report.wasted_flops == 0


def test_backward_memo_ways():
    way1 = audited("backward_memo_way1")
    assert way1.order == "d_first" and way1.forwards["G"] == 2
    assert any("a whole backward through G ran in D's step" in h for h in way1.hazards)
    way2 = audited("backward_memo_way2")
    assert way2.forwards["G"] == 2
    assert any("G was forwarded again on the same input" in h for h in way2.hazards)
    assert audited("backward_memo_way4").order == "d_first"


def test_a_penalty_at_gs_fakes_turns_the_advice_to_detach_them_into_a_copy_requiring_grad():
    """PyTorch-GAN's wgan_div.py keeps its fakes in G's graph for D's step, where its
    penalty takes D's gradient at them: a bare detach() would make that autograd.grad
    fail, so the hazard says to make the detached copy require grad. A loop whose
    penalty is elsewhere (none) is told detach() alone."""
    torch.manual_seed(0)
    G, D = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh()), torch.nn.Sequential(
        torch.nn.Linear(8, 8), torch.nn.LeakyReLU(0.2), torch.nn.Linear(8, 1))  # fmt: skip
    opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    batches = [torch.rand(4, 8) * 2 - 1 for _ in range(6)]
    report = audit(lambda: reference.pytorch_gan_wgan_div(G, D, opt_g, opt_d, batches,
                                                          np.random.RandomState(0), 4, 2),
                   G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=2)  # fmt: skip
    (whole,) = [h for h in report.hazards if h.startswith("a whole backward through G")]
    assert whole.endswith("; a penalty takes D's gradient at that output, so make the copy "
                          "require grad: .detach().requires_grad_().")  # fmt: skip
    (plain,) = [h for h in audited("backward_memo_way1").hazards if "whole backward" in h]
    assert plain.endswith("(detach() it, or run G under torch.no_grad()).")


# every loop of ganstep.reference that runs: (name, objective, order, G forwards, D forwards)
ALL_LOOPS = [
    ("dcgan_example", "ns", "d_first", 1, 3),
    ("pytorch_gan_g_first", "ns", "simultaneous", 1, 3),
    ("lightning_g_first", "ns", "g_first", 2, 3),
    ("backward_memo_way1", "ns", "d_first", 2, 3),
    ("backward_memo_way2", "ns", "d_first", 2, 3),
    ("backward_memo_way3", "ns", "d_first", 1, 3),
    ("backward_memo_way4", "ns", "d_first", 1, 3),
    ("softmaxgan_graph_fix1", "softmax", "d_first", 1, 4),  # D(x) again inside G's loss
    ("softmaxgan_graph_fix2", "softmax", "d_first", 1, 4),
    ("softmaxgan_graph_fix3", "softmax", "other", 1, 1),  # D steps on every second iteration only
    ("detach_or_retain_strategy2", "ns", "d_first", 1, 3),
    ("detach_or_retain_strategy3", "ns", "simultaneous", 1, 3),
    ("textbook_loop", "ns", "d_first", 2, 3),
]


@pytest.mark.parametrize("name, objective, order, g_forwards, d_forwards", ALL_LOOPS)
def test_every_reference_loop(name, objective, order, g_forwards, d_forwards):
    report = audited(name, objective)
    assert report.error is None
    assert report.order == order
    assert report.forwards == {"G": g_forwards, "D": d_forwards}
    if order == "d_first" or order == "simultaneous":
        assert report.wasted_flops > 0  # every one of them computes D's weights in G's step
        assert any("D's weight gradients were computed in G's step" in h for h in report.hazards)


@pytest.mark.parametrize("loop, objective", [("detach_or_retain_strategy1", "ns"),
                                             ("softmaxgan_graph_original", "softmax")])  # fmt: skip
def test_retain_graph_loops_are_explained(loop, objective):
    report = audited(loop, objective)
    assert isinstance(report.error, RuntimeError)
    assert "modified by an inplace operation" in str(report.error)
    first = report.hazards[0]
    assert "backward #0 ran with retain_graph=True" in first
    assert "then opt_d.step() changed those weights in place" in first
    assert "backward #1 through the kept graph raised" in first and "`simultaneous`" in first
    assert report.schedule == "simultaneous()"
    assert report.as_dict()["error"].startswith("RuntimeError: one of the variables")


def _linear_pair() -> tuple:
    """A linear G (4 -> 8) and D (8 -> 1) with SGD each, seeded."""
    torch.manual_seed(0)
    G, D = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)
    return G, D, torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)


def _freed_graph_loop(second: str):
    """One iteration of a D-first loop whose fake batch keeps G's graph in D's loss, D's
    backward without retain_graph; then ``second``: G's loss through those fakes (the
    first G backward needs the freed graph), or D's fake scores backpropagated again."""
    G, D, opt_g, opt_d = _linear_pair()

    def iteration():
        fake = G(torch.randn(4, 4))
        opt_d.zero_grad()
        d_fake = D(fake)
        (D(torch.randn(4, 8)).mean() - d_fake.mean()).backward()
        opt_d.step()
        opt_g.zero_grad()
        (-D(fake).mean() if second == "g_loss" else -d_fake.mean()).backward()
        opt_g.step()

    return audit(iteration, G=G, D=D, opt_g=opt_g, opt_d=opt_d)


def test_a_graph_freed_by_ds_backward_is_explained_with_the_detach_fix():
    """PyTorch says "Specify retain_graph=True"; the audit says which backward freed G's
    graph, that detaching the fakes in D's loss is the fix (retain_graph would keep a
    wasted backward through G), and that the loop's order is d_first."""
    report = _freed_graph_loop("g_loss")
    assert "Trying to backward through the graph a second time" in str(report.error)
    first = report.hazards[0]
    assert first.startswith("backward #0 went back through a forward of G and freed its "
                            "graph; backward #1 went back through that forward again")  # fmt: skip
    assert "retain_graph=True, as the error suggests, would keep the graph but still" in first
    assert "(D(fake.detach())) and G's step keeps its graph" in first
    assert report.order == "d_first" and report.schedule == "d_first()"


def test_a_graph_freed_elsewhere_is_explained_without_a_schedule():
    """The same error where G's loss reads D's scores of the first backward: D's graph,
    freed by D's own backward. The audit names it and keeps its "other" order."""
    report = _freed_graph_loop("d_scores")
    first = report.hazards[0]
    assert first.startswith("backward #0 went back through a forward of D and freed its graph")
    assert first.endswith("Forward D again for the second loss, or keep the graph with "
                          "retain_graph=True in the first backward where no optimizer step "
                          "changes the weights it saved between the two.")  # fmt: skip
    assert report.schedule != "d_first()"


def _g_loss_loop(g_input: str):
    """A D-first loop whose G loss reads D on the fakes ``"detached"`` (G never gets a
    gradient), ``"kept"`` (as it should), or computes it in a closure given to G's step."""
    G, D, opt_g, opt_d = _linear_pair()

    def iteration():
        fake = G(torch.randn(4, 4))
        opt_d.zero_grad()
        (D(torch.randn(4, 8)).mean() - D(fake.detach()).mean()).backward()
        opt_d.step()

        def g_loss():
            opt_g.zero_grad()
            if g_input == "checkpointed":  # reentrant, on a z that needs no gradient
                made = torch.utils.checkpoint.checkpoint(G, torch.randn(4, 4), use_reentrant=True)
            else:
                made = fake.detach() if g_input == "detached" else G(torch.randn(4, 4))
            loss = -D(made).mean()
            loss.backward()
            return loss

        if g_input == "closure":
            opt_g.step(g_loss)
        else:
            g_loss()
            opt_g.step()

    return audit(iteration, G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=2)


def test_a_step_with_no_gradient_is_a_hazard_not_a_regularizer():
    """G's loss on the detached fakes: G's optimizer steps on nothing, silently. The audit
    says so first, and does not count those steps as a regularizer's (lazy R1's)."""
    report = _g_loss_loop("detached")
    assert report.hazards[0] == (
        "G's optimizer stepped 2 time(s) with no gradient in any of G's parameters: no "
        "backward since their last zero_grad() reached them, so G learns nothing there. Did "
        "G's loss take G's output detached (.detach(), .data) or made under torch.no_grad()? "
        "(A reentrant torch.utils.checkpoint, use_reentrant=True, whose inputs need no "
        "gradient makes such an output too: give it use_reentrant=False.)"
    )
    assert report.regularization == {"G": 0, "D": 0}
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpointed = _g_loss_loop("checkpointed")  # (torch warns; G gets no gradient)
    assert any("G learns nothing there" in h for h in checkpointed.hazards)
    for g_input in ("kept", "closure"):  # a gradient, or one a closure computes in the step
        assert not any("learns nothing" in h for h in _g_loss_loop(g_input).hazards), g_input


def test_a_d_step_on_its_penalty_alone_beside_its_unused_loss_forwards_is_a_hazard():
    """PyTorch-GAN's dragan.py computes D's loss on the real batch and the fakes, then
    backpropagates its gradient penalty alone: D never learns from its loss, silently.
    The audit says so first; StyleGAN2-ADA's lazy R1 steps (D forwarded on the real batch
    alone in its own step) are no such thing."""
    torch.manual_seed(0)
    G = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh())
    D = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LeakyReLU(0.2), torch.nn.Linear(8, 1),
                            torch.nn.Sigmoid())  # fmt: skip
    opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    batches = [torch.rand(4, 8) * 2 - 1]  # one iteration a call
    report = audit(lambda: reference.pytorch_gan_dragan(G, D, opt_g, opt_d, batches,
                                                        np.random.RandomState(0), 4),
                   G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=2)  # fmt: skip
    assert report.hazards[0].startswith(
        "D's optimizer stepped 2 time(s) on a penalty alone, though D was "
        "forwarded on G's output before it in that step and no backward took that forward: "
        "D's loss was computed and never backpropagated"
    )
    G2, D2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)
    opt_g2, opt_d2 = torch.optim.Adam(G2.parameters()), torch.optim.Adam(D2.parameters())
    lazy = audit(lambda: reference.stylegan2_r1(G2, D2, opt_g2, opt_d2, batches * 2, latent4,
                                                r1_every=2),
                 G=G2, D=D2, opt_g=opt_g2, opt_d=opt_d2, iterations=1)  # fmt: skip
    assert lazy.regularization["D"] == 1 and not any("alone" in h for h in lazy.hazards)


def test_a_loss_computed_then_replaced_is_named_by_its_dropped_d_forward():
    """PyTorch-GAN's relativistic_gan.py computes a relativistic G loss from D's forward on
    the fakes, then overwrites it with BCE on another forward of D on the same fakes: the
    first forward feeds no backward. The audit names it (a D with Dropout is not
    "forwarded again on the same input": its masks differ); the DCGAN example uses every
    forward, and is not told so."""
    torch.manual_seed(0)
    G = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh())
    D = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LeakyReLU(0.2), torch.nn.Dropout(0.25),
                            torch.nn.Linear(8, 1))  # fmt: skip
    opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    report = audit(lambda: reference.pytorch_gan_relativistic(G, D, opt_g, opt_d,
                                                              [torch.rand(4, 8)],
                                                              np.random.RandomState(0), 4),
                   G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=2)  # fmt: skip
    (dropped,) = [h for h in report.hazards if "nothing was backpropagated" in h]
    assert dropped.startswith("D was forwarded on G's output in G's step and nothing was "
                              "backpropagated from that forward (2 time(s), ")  # fmt: skip
    assert not any("nothing was backpropagated" in h for h in audited("dcgan_example").hazards)


def test_infogans_info_step_is_counted_and_named_not_read_as_waste():
    """PyTorch-GAN's infogan.py steps a third optimizer over G's and D's parameters after
    D's step (its information loss). The audit counts its passes in the iteration, reads
    the order from G's and D's steps (simultaneous) and names the info step; its
    gradients, stepped by that optimizer, are no waste: the waste left is D's weight
    gradients in G's step and its forward on the fakes again in D's (a pure D)."""
    torch.manual_seed(0)
    G = torch.nn.Linear(3 + 2 + 1, 4)
    G.forward = lambda z, labels, code, lin=G.forward: lin(torch.cat((z, labels, code), 1))
    body = torch.nn.Linear(4, 8)
    heads = torch.nn.ModuleList(torch.nn.Linear(8, k) for k in (1, 2, 1))
    D = torch.nn.ModuleDict({"body": body, "heads": heads})
    D.forward = lambda x: tuple(h(torch.relu(body(x))) for h in heads)
    opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    opt_info = torch.optim.Adam([*G.parameters(), *D.parameters()])
    report = audit(lambda: reference.pytorch_gan_infogan(G, D, opt_g, opt_d, opt_info,
                                                         [torch.rand(4, 4)],
                                                         np.random.RandomState(0), 3, 2, 1),
                   G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=2)  # fmt: skip
    assert report.order == "simultaneous" and report.info_steps == 1
    assert report.forwards == {"G": 2, "D": 4} and report.backwards == {"G": 2, "D": 4}
    weights, again = report.hazards
    assert weights.startswith("D's weight gradients were computed in G's step and never stepped")
    assert again.startswith("D was forwarded again on the same input at the same parameters")
    assert "  info steps: 1 per iteration, one optimizer over G's and D's parameters" in str(report)
    assert report.as_dict()["info_steps"] == 1
    assert audited("dcgan_example").as_dict()["info_steps"] == 0


@pytest.mark.parametrize("same_code", [True, False])
def test_g_forwarded_again_is_on_all_its_inputs_not_its_first(same_code):
    """infogan.py's sample grid calls G twice on its static z and labels with two codes:
    no forward recomputed. Called twice on the same three, it is."""
    G = torch.nn.Linear(4, 8)
    G.forward = lambda z, code, lin=G.forward: lin(torch.cat((z, code), 1))
    D = torch.nn.Linear(8, 1)
    opt_g, opt_d = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    z, codes = torch.randn(4, 3), [torch.zeros(4, 1), torch.ones(4, 1)]

    def loop():
        opt_d.zero_grad()
        D(G(z, codes[0]).detach()).mean().backward()
        opt_d.step()
        opt_g.zero_grad()
        D(G(z, codes[0 if same_code else 1])).mean().backward()
        opt_g.step()

    report = audit(loop, G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=1)
    again = [h for h in report.hazards if h.startswith("G was forwarded again")]
    assert len(again) == same_code


def latent4(n: int) -> torch.Tensor:
    return torch.randn(n, 4)


def test_began_fast_loop_is_simultaneous():
    from ganstep.trainer.models import BEGANDecoder, BEGANDiscriminator

    torch.manual_seed(0)
    G, D = BEGANDecoder(16, 8, 3, 32), BEGANDiscriminator(16, 8, 3, 32)
    opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    report = audit(
        lambda: reference.which_first_post_g_first(G, D, opt_g, opt_d, [REAL], latent), G=G, D=D
    )
    assert report.order == "simultaneous" and report.forwards == {"G": 1, "D": 3}


def _instance_noise(x):
    return x + 0.1 * torch.randn_like(x)


def _brightness(x):  # DiffAugment's rand_brightness
    return x + (torch.rand(x.size(0), 1, 1, 1, dtype=x.dtype, device=x.device) - 0.5)


@pytest.mark.parametrize("change", [_instance_noise, _brightness, lambda x: x.double().float()],
                         ids=["instance_noise", "diffaugment_brightness", "cast"])  # fmt: skip
def test_g_s_output_changed_on_its_way_to_d_is_still_its_fake_batch(change):
    """D(augment(fake.detach())) in D's step and D(augment(fake)) in G's: new tensors,
    which the audit took for real batches (the order read "other", with a made-up lazy
    regularization step of D's). It reads the loop as the same loop without the change."""
    reports = []
    for changed in (lambda x: x, change):
        G, D, opt_g, opt_d = dcgan_pair(batchnorm=False)
        bce = torch.nn.BCEWithLogitsLoss()

        def loop(G=G, D=D, opt_g=opt_g, opt_d=opt_d, bce=bce, changed=changed):
            fake = G(latent(N))
            d_real, d_fake = D(changed(REAL)), D(changed(fake.detach()))
            loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            opt_g.zero_grad()
            out = D(changed(fake))
            bce(out, torch.ones_like(out)).backward()
            opt_g.step()

        reports.append(audit(loop, G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=2))
    plain, report = reports
    assert report.order == plain.order == "d_first" and report.schedule == "d_first()"
    assert report.forwards == plain.forwards == {"G": 1, "D": 3}
    assert report.backwards == plain.backwards and not any(report.regularization.values())
    assert report.wasted_flops == plain.wasted_flops > 0


@pytest.mark.parametrize("schedule", ["d_first", "g_first", "simultaneous"])
def test_ganstep_steps_audit_clean(schedule):
    G, D, opt_g, opt_d = dcgan_pair(batchnorm=True)
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=schedule, latent=latent)
    report = audit(lambda: step(REAL), G=G, D=D, iterations=2)
    assert report.order == schedule
    assert report.hazards == [] and report.wasted_flops == 0
    assert report.forwards["D"] == (2 if schedule == "simultaneous" else 3)


def test_leak_and_missing_zero_grad_are_found():
    G, D, opt_g, opt_d = dcgan_pair(batchnorm=False)

    def leaky():  # one backward of both losses, both optimizers step it
        opt_g.zero_grad()
        opt_d.zero_grad()
        fake = G(latent(N))
        loss = torch.nn.functional.softplus(-D(REAL)).mean() + D(fake).mean()
        loss.backward()
        opt_d.step()
        opt_g.step()

    report = audit(leaky, G=G, D=D)
    assert any("stepped by both G's and D's optimizer" in h for h in report.hazards)

    def no_zero_grad():  # D's gradients are never cleared
        fake = G(latent(N)).detach()
        (torch.nn.functional.softplus(-D(REAL)).mean() + D(fake).mean()).backward()
        opt_d.step()

    report = audit(no_zero_grad, G=G, D=D, iterations=2)
    assert any("missing zero_grad" in h for h in report.hazards)


def test_bad_arguments():
    G, D, opt_g, opt_d = dcgan_pair()
    with pytest.raises(ValueError, match="iterations must be a positive integer"):
        audit(lambda: None, G=G, D=D, iterations=0)
    with pytest.raises(TypeError, match="G and D must be torch.nn.Module"):
        audit(lambda: None, G="G", D=D)
    with pytest.raises(ValueError, match="opt_g holds none of G's parameters"):
        audit(lambda: None, G=G, D=D, opt_g=opt_d)


# a user's script up to its loop: G, D, their optimizers and a loss
SCRIPT_HEAD = """
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), 1e-3)
opt_d = torch.optim.Adam(D.parameters(), 1e-3)
bce = nn.BCEWithLogitsLoss()
"""
SCRIPT = f"""{SCRIPT_HEAD}

def train_step():
    real = torch.randn(32, 2)
    fake = G(torch.randn(32, 4))
    opt_d.zero_grad()
    loss_d = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(32, 1)).backward()
    opt_g.step()


if __name__ == "__main__":
    raise SystemExit("the training loop must not run under audit")
"""


def test_audit_command_on_a_user_script(tmp_path):
    script = tmp_path / "my_gan.py"
    script.write_text(SCRIPT)
    out = tmp_path / "report.json"
    proc = ganstep("audit", script, "--function", "train_step", "--json", out, cache=tmp_path)
    assert "update order: d_first" in proc.stdout and "schedule d_first()" in proc.stdout
    report = json.loads(out.read_text())
    assert report["order"] == "d_first" and report["forwards"] == {"G": 1.0, "D": 3.0}
    assert report["wasted_flops"] > 0 and report["error"] is None
    proc = ganstep("audit", script, "--function", "nope", cache=tmp_path, check=False)
    assert proc.returncode == 1 and "must define G, D and nope(); missing: nope" in proc.stderr


@pytest.mark.parametrize(
    "source, message",
    [
        ("def train_step(:\n    pass\n", "{script}:1: not valid Python"),
        ("G = 5\nD = G\ndef train_step():\n    pass\n",
         "{script}: G must be a torch.nn.Module, got a int"),
        ("import nowhere_to_be_found\n",
         "{script}:1: import nowhere_to_be_found: ModuleNotFoundError: No module named "
         "'nowhere_to_be_found', while loading the script"),
    ],
)  # fmt: skip
def test_audit_command_names_a_broken_script(tmp_path, capsys, source, message):
    from ganstep.cli import main

    script = tmp_path / "broken.py"
    script.write_text(source)
    assert main(["audit", str(script), "--function", "train_step"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ganstep: error: ") and err.count("\n") == 1
    assert message.format(script=script) in err


def test_fused_step_audits_as_simultaneous_with_one_d_backward_per_call():
    """G's gradient enters G's backward as a given gradient at the fake batch: the
    audit follows it to the D forward it was taken through."""
    G, D, opt_g, opt_d = dcgan_pair(batchnorm=False)
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=simultaneous(fused=True),
                latent=latent)  # fmt: skip
    report = audit(lambda: step(REAL), G=G, D=D, iterations=2)
    assert report.order == "simultaneous"
    assert report.forwards == {"G": 1, "D": 2} and report.backwards["D"] == 2
    assert report.hazards == [] and report.wasted_flops == 0


@pytest.mark.parametrize(
    "schedule, batches, expected",
    [
        (d_first(d_steps=3), 3, "d_first(d_steps=3)"),
        (d_first(g_steps=2), 1, "d_first(g_steps=2)"),
        (g_first(g_steps=2), 1, "g_first(g_steps=2)"),
        (g_first(d_steps=2), 2, "g_first(d_steps=2)"),
    ],
)
def test_step_counts_are_recognised(schedule, batches, expected):
    G, D, opt_g, opt_d = dcgan_pair(batchnorm=False)
    step = Step(G, D, opt_g, opt_d, objective="ns", schedule=schedule, latent=latent)
    report = audit(lambda: step([REAL] * batches), G=G, D=D, iterations=2)
    assert report.order == expected.split("(")[0] and report.schedule == expected
    assert report.pattern.startswith(f"{schedule.d_steps} D step(s) and {schedule.g_steps} G")
    assert report.hazards == [] and report.wasted_flops == 0


def test_a_random_layer_is_never_recomputed_identically():
    """D(x) twice at the same parameters is the same result, unless D draws random
    numbers: with Dropout in training mode the second forward is not waste."""
    G = torch.nn.Sequential(torch.nn.Linear(4, 8))
    D = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
    opt_d = torch.optim.SGD(D.parameters(), 0.1)
    x = torch.randn(16, 8)

    def twice():
        opt_d.zero_grad()
        (D(x).mean() + D(x).mean()).backward()
        opt_d.step()

    assert not any("forwarded again" in h for h in audit(twice, G=G, D=D).hazards)
    D.eval()  # Dropout off: now the second forward repeats the first
    report = audit(twice, G=G, D=D)
    assert any("D was forwarded again on the same input" in h for h in report.hazards)
    assert report.wasted_flops == 2 * 16 * (8 * 8 + 8)


def test_a_crashing_function_keeps_its_location():
    G, D, opt_g, opt_d = dcgan_pair(batchnorm=False)

    def crashes():
        opt_d.zero_grad()
        D(REAL).mean().backward()
        opt_d.step()
        raise IndexError("late")

    report = audit(crashes, G=G, D=D)
    assert isinstance(report.error, IndexError)
    assert report.location.endswith('raise IndexError("late")')
    assert report.forwards["D"] == 1 and report.backwards["D"] == 1


def _one_block_loop(G, D, opt_g, opt_d, freeze_d: bool, block: str, enter=None):
    """A d_first iteration in blocks that ``enter()`` opens (by default autocast to
    bfloat16): ``block`` "iteration" wraps the whole of it (both optimizer steps
    inside), "forwards" each forward and loss alone."""
    enter = enter or (lambda: torch.autocast("cpu", dtype=torch.bfloat16))
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    real, z = torch.randn(8, 2), torch.randn(8, 4)

    def autocast(whole: bool):
        if (block == "iteration") is whole:
            return enter()
        return contextlib.nullcontext()

    def iteration():
        with autocast(whole=True):
            with autocast(whole=False):
                fake = G(z)
                s_real, s_fake = D(real).float(), D(fake.detach()).float()
                loss_d = bce(s_real, s_real.new_ones(8, 1)) + bce(s_fake, s_fake.new_zeros(8, 1))
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            D.requires_grad_(not freeze_d)
            with autocast(whole=False):
                s = D(fake).float()
                loss_g = bce(s, torch.ones_like(s))
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            D.requires_grad_(True)

    return iteration


@pytest.mark.parametrize(
    "block, freeze_d, stale",
    [("iteration", False, True), ("forwards", False, False), ("iteration", True, False)],
)
def test_a_forward_after_a_step_in_one_autocast_block_is_a_hazard(block, freeze_d, stale):
    """Within one torch.autocast block each weight is cast once: D's forward in G's
    phase, after D's step in the same block, ran at D's weights from before the step.
    Not where each forward has its own block, nor where D is frozen in G's phase
    (autocast keeps no cast of a frozen weight, and a frozen weight reads none)."""
    torch.manual_seed(0)
    G = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    D = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt_g, opt_d = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    loop = _one_block_loop(G, D, opt_g, opt_d, freeze_d, block)
    report = audit(loop, G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=2)
    # D's weight gradients in G's step, unless frozen: counted by re-running D as it ran
    # (autocast on, G's bfloat16 fakes in), which used to fail on the dtypes
    assert (report.wasted_flops > 0) is not freeze_d
    found = [h for h in report.hazards if "inside a torch.autocast block" in h]
    if stale:
        assert found == [
            "D was forwarded inside a torch.autocast block after D's optimizer step in that "
            "block (2 time(s), first in iteration 0): autocast casts each weight once per "
            "block, so that forward ran at D's weights from before the step. End the block "
            "before each optimizer step (autocast the forwards and losses only), or give "
            "ganstep's Step precision='bf16'."
        ]
    else:
        assert found == []
    # what the rule reads from torch: a weight updated in place inside one block is read
    # stale by the next forward there, unless it is frozen at either forward
    x, layer = torch.randn(2, 2), torch.nn.Linear(2, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        before = layer(x)
        with torch.no_grad():
            layer.weight.add_(1.0)
        layer.requires_grad_(not freeze_d)
        assert torch.equal(layer(x), before) is (not freeze_d)


def test_the_stale_cast_hazard_names_the_precision_the_loop_used():
    torch.manual_seed(0)
    G = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    D = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt_g, opt_d = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    fp16 = lambda: torch.autocast("cpu", dtype=torch.float16)  # noqa: E731
    loop = _one_block_loop(G, D, opt_g, opt_d, False, "iteration", fp16)
    (found,) = [h for h in audit(loop, G=G, D=D).hazards if "torch.autocast block" in h]
    assert found.endswith("or give ganstep's Step precision='fp16'.")


def test_one_autocast_block_around_several_iterations_makes_g_stale_too():
    """A loop of iterations inside one block (a decorated train function calling the
    step repeatedly): G's forward of the second iteration reads G's cast from the
    first, before G's step."""
    torch.manual_seed(0)
    G = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    D = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt_g, opt_d = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    loop = _one_block_loop(G, D, opt_g, opt_d, freeze_d=True, block="forwards")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        report = audit(loop, G=G, D=D, opt_g=opt_g, opt_d=opt_d, iterations=3)
    found = [h for h in report.hazards if "inside a torch.autocast block" in h]
    assert [h.split(" was forwarded")[0] for h in found] == ["G", "D"]
    assert "G's optimizer step in that block (2 time(s), first in iteration 1)" in found[0]


@pytest.mark.parametrize("block, stale", [("iteration", True), ("forwards", False)])
def test_a_forward_after_a_step_in_one_parametrize_cached_block_is_a_hazard(block, stale):
    """parametrize.cached() computes each parametrized weight once per block: D's
    spectral-normalized weight in G's phase, after D's step in the same block, was D's
    from before the step (as a Step inside such a block read it, which it now refuses).
    The loop holds ``cached`` as bound before the audit began: blocks are still told
    apart. Here G's backward through D's kept weight then fails, in iteration 0."""
    torch.manual_seed(0)
    G = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    D = torch.nn.Sequential(spectral_norm(torch.nn.Linear(2, 16)), torch.nn.ReLU(),
                            torch.nn.Linear(16, 1))  # fmt: skip
    opt_g, opt_d = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)
    loop = _one_block_loop(G, D, opt_g, opt_d, False, block, parametrize.cached)
    report = audit(loop, G=G, D=D, iterations=2)
    if stale:  # G's backward goes through D's kept weight again, its graph freed by D's
        assert "backward through the graph a second time" in str(report.error)
    else:
        assert report.error is None
    found = [h for h in report.hazards if "cached() block" in h]
    assert found == ([
        "D was forwarded inside a torch.nn.utils.parametrize.cached() block after D's "
        "optimizer step in that block (1 time(s), first in iteration 0): the block computes "
        "each parametrized weight once, so that forward ran at D's weights from before the "
        "step. End the block before each optimizer step."
    ] if stale else [])  # fmt: skip


def _raised(loss: torch.nn.Module, scores: torch.Tensor, targets: torch.Tensor) -> Exception:
    """What torch raises for ``loss(scores, targets)`` (its own message, this version's)."""
    with pytest.raises((RuntimeError, ValueError)) as raised:
        loss(scores, targets)
    return raised.value


def test_the_common_gan_loss_crashes_are_explained():
    """torch's messages for BCELoss given logits, and for targets of another batch size or
    shape, each with what it means in a GAN loop and the fix; others explain nothing."""
    from ganstep.tools.audit import known_cause

    logits = _raised(torch.nn.BCELoss(), torch.tensor([[2.0], [-1.0]]), torch.ones(2, 1))
    assert known_cause(logits).startswith(
        "BCELoss takes probabilities and was given values outside [0, 1]: D's scores without"
    )
    for loss in (torch.nn.BCELoss(), torch.nn.BCEWithLogitsLoss()):
        short = _raised(loss, torch.rand(3, 1), torch.ones(8, 1))  # an epoch's last batch
        assert known_cause(short).startswith(
            "the loss's targets have 8 rows and the scores 3: targets made for a fixed batch "
            "size met a batch of another"
        )
        flat = _raised(loss, torch.rand(8, 1), torch.ones(8))
        assert known_cause(flat) == (
            "the scores (8, 1) and the targets (8) have the same rows in other shapes; the "
            "loss reads them element by element: view one as the other (output.view(-1))"
        )
    assert known_cause(RuntimeError("CUDA out of memory")) is None


def test_a_short_last_batch_crash_is_explained_in_the_report(tmp_path):
    """Labels made for the loader's batch size meet the epoch's shorter last batch in the
    third iteration: the steps before it are reported, and the crash with its fix (the
    loss module's forward raised: the audit's own hook says nothing of it)."""
    script = tmp_path / "fixed_labels.py"
    script.write_text(
        SCRIPT_HEAD
        + """
loader = torch.utils.data.DataLoader(torch.randn(40, 2), batch_size=16)
valid, fake = torch.ones(16, 1), torch.zeros(16, 1)
for real in loader:
    z = torch.randn(real.size(0), 4)
    gen = G(z)
    opt_d.zero_grad()
    d_loss = bce(D(real), valid) + bce(D(gen.detach()), fake)
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(gen), valid)
    g_loss.backward()
    opt_g.step()
"""
    )
    proc = ganstep("audit", script, "--iterations", 3, cache=tmp_path, cwd=tmp_path, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "update order: d_first" in proc.stdout and "UserWarning" not in proc.stderr
    assert ("  (the crash: the loss's targets have 16 rows and the scores 8: targets made for "
            "a fixed batch size met a batch of another (an epoch's shorter last one?)") in (
        proc.stdout
    )  # fmt: skip
