"""Sides: several modules of a script read as one G or one D.

CycleGAN trains two generators with one optimizer (``itertools.chain(G_AB.parameters(),
G_BA.parameters())``) and two discriminators with one optimizer or one each. The audit
reads such a script as one G (the generators, called on each other's outputs) and one
D (the modules called on theirs): each side's calls are its modules' calls, each a pass
of its own, and one side's steps in a row over different modules (PyTorch-GAN's
``optimizer_D_A.step()`` then ``optimizer_D_B.step()``) are one step of that side.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..engine.cycle import CYCLEGAN_G_ORDER
from .audit import MODULES, Recorder, _Forward, _Step, stepped_through


def fed_by(rec: Recorder) -> set[tuple[str, str]]:
    """``(consumer, producer)`` labels: each module called on an output of another."""
    return {(f.label, f.producer.label) for f in rec.forwards
            if f.producer is not None and f.producer.label != f.label}  # fmt: skip


def find_sides(rec: Recorder) -> dict[str, str] | None:
    """``{label: "G" or "D"}`` where one optimizer stepped several modules and the
    modules stepped split in two once: that optimizer's modules and any others read as
    G where every other stepped module was called on an output of theirs and none of
    theirs on an output of another's; the rest are D. Each joined label of a step over
    several modules maps to its side too. None where no such split is found, or more
    than one."""
    groups = {s.modules for s in [*rec.opt_steps, *rec.joint_opt_steps]}
    stepped = frozenset().union(*groups) if groups else frozenset()
    made_from = fed_by(rec)
    found = []
    for side in {g for g in groups if len(g) > 1}:
        rest = stepped - side
        if not rest or any(g & side and not g <= side for g in groups):
            continue
        fed = all(any((d, g) in made_from for g in side) for d in rest)
        back = any((g, d) in made_from for g in side for d in rest)
        if fed and not back:
            found.append(side)
    if len(found) != 1:
        return None
    roles = {label: "G" if label in found[0] else "D" for label in stepped}
    for group in groups:
        if len(group) > 1:
            roles["+".join(sorted(group))] = roles[next(iter(group))]
    return roles


def side_members(rec: Recorder, roles: dict[str, str]) -> dict[str, list[str]]:
    """The labels of each side of several modules, in the order the script first
    called them."""
    members: dict[str, list[str]] = {}
    for label in rec.modules:
        if label in roles:
            members.setdefault(roles[label], []).append(label)
    return {role: labels for role, labels in members.items() if len(labels) > 1}


def read_as_sides(rec: Recorder, roles: dict[str, str], members: dict[str, list[str]]) -> None:
    """Relabel ``rec`` (its labels still the provisional ones) so that each side of
    ``members`` is one module, an ``nn.ModuleList`` of its modules whose calls are
    parts of it (``part`` its place, ``member`` set); the steps over several modules of
    a side join the others (:func:`merge_phases` then joins each side's steps in a row)."""
    place = {label: str(i) for labels in members.values() for i, label in enumerate(labels)}
    for f in rec.forwards:
        if f.label in place:
            f.part = place[f.label] + (f".{f.part}" if f.part else "")
            f.member = True
    for role, labels in members.items():
        side = nn.ModuleList(rec.modules.pop(label) for label in labels)
        rec.modules[role] = side
    joint = [s for s in rec.joint_opt_steps if s.label in roles]
    rec.opt_steps = sorted([*rec.opt_steps, *joint], key=lambda s: s.seq)


@dataclass(frozen=True)
class GAndItsHeads:
    """A G side of several modules of which D judges the outputs of one alone
    (``judged``), the others (``heads``) called on G's outputs in G's loss only: an
    adversarial autoencoder's encoder and decoder (PyTorch-GAN's ``aae.py``), by the
    script's names. A Step takes the judged module as G; G's optimizer may hold the
    heads too, and G's terms call them (docs/loops.md#aae, #pixelda)."""

    judged: str
    heads: tuple[str, ...]
    schedule: str | None  # the schedule of the update order read with G as one side

    def as_dict(self) -> dict:
        """As the JSON report's ``g_and_heads`` holds it."""
        return {"judged": self.judged, "heads": list(self.heads), "schedule": self.schedule}

    def advice(self) -> str:
        """What a Step of it is, as the report says."""
        heads = " and ".join(self.heads)
        order = f" and schedule {self.schedule}" if self.schedule else ""
        return (f"a Step trains these sides with G = {self.judged} (the module whose outputs "
                f"D judges){order}: {heads}, called on {self.judged}'s outputs in G's loss "
                "alone, goes in G's terms (g_terms), G's optimizer holding its parameters as "
                "the script's does; docs/loops.md shows PyTorch-GAN's aae.py so (#aae: its "
                "encoder's inputs the Step's condition, D's real batch a prior sample) and "
                "pixelda.py (#pixelda: its source images and z the condition, its classifier "
                "in a G term)")  # fmt: skip


def g_and_its_heads(rec: Recorder, roles: dict[str, str],
                    members: dict[str, list[str]]) -> tuple[str, list[str]] | None:  # fmt: skip
    """``(judged, heads)`` labels where G's side is several modules (``members``) and D
    one, D was called on the outputs of one of G's modules alone, and each other one was
    called on a G module's outputs and none of D's, D never on its outputs; else None
    (CycleGAN's two generators, each judged)."""
    g_side = members.get("G")
    if not g_side or "D" in members:
        return None
    made_from = fed_by(rec)  # (consumer, producer)
    d_side = [label for label, role in roles.items() if role == "D"]
    judged = [g for g in g_side if any((d, g) in made_from for d in d_side)]
    if len(judged) != 1:
        return None
    heads = [g for g in g_side if g != judged[0]]
    for head in heads:
        fed_by_g = any((head, g) in made_from for g in g_side if g != head)
        fed_by_d = any((head, d) in made_from for d in d_side)
        if not fed_by_g or fed_by_d:
            return None
    return judged[0], heads


def merge_phases(rec: Recorder) -> None:
    """After relabelling: one side's steps in a row, each over other modules than the
    ones before it in the row, are one step of that side (its last's place; its
    gradients all of theirs); each forward's versions are then the steps of each side
    before it."""
    merged: list[_Step] = []
    for s in rec.opt_steps:
        last = merged[-1] if merged else None
        if last is not None and s.label == last.label and s.label in MODULES:
            if not s.modules & last.modules:
                last.modules = last.modules | s.modules
                last.backwards = last.backwards | s.backwards
                last.seq, last.flops = s.seq, s.flops
                last.gradless = last.gradless or s.gradless
                continue
        merged.append(s)
    rec.opt_steps = merged
    for f in rec.forwards:
        f.versions = {m: sum(s.label == m and s.seq < f.seq for s in merged) for m in MODULES}


@dataclass(frozen=True)
class Cycle:
    """A script read as two sides of two modules each, as CycleStep takes them:
    ``generators`` (G_A, G_B) and ``discriminators`` (D_A judging G_A's outputs, D_B
    G_B's) by the script's names, ``discriminator_order`` CycleStep's names of its Ds
    in the order the script steps them, and whether the Ds had an optimizer each; the
    update ``order`` read, with ``d_steps`` D steps a G step."""

    generators: tuple[str, str]
    discriminators: tuple[str, str]
    discriminator_order: tuple[str, str]
    d_optimizers: int
    # each module's place in its side (G_A, G_B, D_A, D_B): ``rec.modules["G"][place]``
    places: tuple[int, int, int, int]
    order: str
    d_steps: int
    g_order: tuple[str, ...] | None = None  # where the script's differs from CycleGAN's
    identity_maps: bool = False  # G's first step ran its two identity maps too

    @property
    def options(self) -> dict | None:
        """The CycleStep options of this order, those that are not its defaults; None
        where no CycleStep computes it (it steps D after G on the same fakes, or D first
        with G every ``g_every``-th iteration)."""
        if self.order == "d_first":
            options = {
                "order": "d_first",
                **({"g_every": self.d_steps} if self.d_steps > 1 else {}),
            }
        elif self.order != "simultaneous" or self.d_steps != 1:
            return None
        else:
            options = {}
        if self.discriminator_order != ("D_A", "D_B"):
            options["discriminator_order"] = self.discriminator_order
        if self.g_order is not None:
            options["g_order"] = self.g_order
        return options

    def call(self) -> str:
        """The CycleStep of the order read (``""`` where none computes it)."""
        if self.options is None:
            return ""
        return step_call([*self.generators, *self.discriminators, "opt_g", "opt_d"], self.options)

    def describe(self) -> str:
        """The sides, in a line of the report."""
        g, d = self.generators, self.discriminators
        each = "one optimizer"
        if self.d_optimizers == 2:
            each = ("an optimizer each: one over both is CycleStep's opt_d, the same steps "
                    "where Adam's are per parameter")  # fmt: skip
        return (
            f"G is {g[0]} and {g[1]} (one optimizer), D is {d[0]} (judging {g[0]}'s "
            f"outputs) and {d[1]} ({each}): CycleGAN's two sides"
        )


def step_call(args: list[str], options: dict) -> str:
    """``CycleStep(args..., key=value...)`` as code (strings in double quotes)."""
    keywords = [f"{k}={v!r}".replace("'", '"') for k, v in options.items()]
    return f"CycleStep({', '.join([*args, *keywords])})"


def first_step(rec: Recorder, side: str) -> _Step | None:
    """The recording's first step of ``side`` ("G" or "D"), if any."""
    return next((s for s in rec.opt_steps if s.label == side), None)


def read_cycle(rec: Recorder, names: dict[str, str], members: dict[str, list[str]],
               order: str, d_steps: int) -> Cycle | None:  # fmt: skip
    """The :class:`Cycle` of a recording relabelled by :func:`read_as_sides` (``names``:
    the script's name of each provisional label), where each side has two modules and
    each D was called on one G's outputs, read as ``order`` with ``d_steps``; else None."""
    if sorted(len(members.get(m, ())) for m in MODULES) != [2, 2]:
        return None
    g_labels, d_labels = members["G"], members["D"]
    judged: dict[int, int] = {}  # D's place -> the G's place whose output it was called on
    for f in rec.forwards:
        made = f.producer
        if f.label == "D" and made is not None and made.label == "G" and f.member and made.member:
            judged.setdefault(f.place, made.place)
    if sorted(judged.values()) != [0, 1] or sorted(judged) != [0, 1]:
        return None
    first = min(range(2), key=lambda i: names[g_labels[i]])  # G_A: the first by name
    g_places = (first, 1 - first)
    d_places = tuple(next(d for d, g in judged.items() if g == place) for place in g_places)
    cycle_name = {d_places[0]: "D_A", d_places[1]: "D_B"}
    # the order the first D step forwarded its two modules in
    d_step = first_step(rec, "D")
    through = [] if d_step is None else stepped_through(rec, d_step)
    seen = (cycle_name[f.place] for f in sorted(through, key=lambda f: f.seq) if f.label == "D")
    d_order = list(dict.fromkeys(seen))
    if len(d_order) != 2:
        d_order = ["D_A", "D_B"]
    one = frozenset(d_labels) in {s.modules for s in rec.joint_opt_steps}
    g_calls = _first_g_calls(rec)
    return Cycle(
        (names[g_labels[g_places[0]]], names[g_labels[g_places[1]]]),
        (names[d_labels[d_places[0]]], names[d_labels[d_places[1]]]),
        (d_order[0], d_order[1]),
        1 if one else 2,
        (*g_places, *d_places),
        order,
        d_steps,
        _g_order(rec, g_calls, g_places),
        len(g_calls) == 6,
    )


def _first_g_calls(rec: Recorder) -> list[_Forward]:
    """G's calls that its first step's gradients went back through, in their order."""
    step = first_step(rec, "G")
    calls = {} if step is None else {id(f): f for f in stepped_through(rec, step)}
    return sorted((f for f in calls.values() if f.label == "G"), key=lambda f: f.seq)


def _g_order(rec: Recorder, calls: list[_Forward], g_places: tuple[int, int]
             ) -> tuple[str, ...] | None:  # fmt: skip
    """The order of G's ``calls`` in its first step, by CycleStep's names, where it
    differs from CycleStep's own (the four of ``CYCLEGAN_G_ORDER``, then the identity
    maps): a call on another G call's output is a reconstruction, one whose output
    something was called on a fake, the others identity maps. None where it is
    CycleStep's, or does not read as its forwards."""
    fed = {id(f.producer) for f in rec.forwards if f.producer is not None}
    names = {g_places[0]: ("fake_B", "rec_B", "idt_A"), g_places[1]: ("fake_A", "rec_A", "idt_B")}
    read = []
    for f in calls:
        fake, rec_, idt = names[f.place]
        read.append(rec_ if f.fed_by_g else fake if id(f) in fed else idt)
    four = [n for n in read if not n.startswith("idt")]
    if (
        sorted(four) != sorted(CYCLEGAN_G_ORDER)
        or len(read) not in (4, 6)
        or len(set(read)) != len(read)
    ):
        return None
    if read[4:] in ([], ["idt_A", "idt_B"]):  # the identity maps where CycleStep runs them
        return None if tuple(four) == CYCLEGAN_G_ORDER else tuple(four)
    return tuple(read)
