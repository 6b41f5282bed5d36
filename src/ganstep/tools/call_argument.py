"""What a script wrote as a module call's first argument, read from its source: an
augmentation of the batch (``D(DiffAugment(fake, policy=policy))``, instance noise
``D(real + sigma * torch.randn_like(real))``) as a template of one batch, and that
batch's value before it.

The audit sees a module's input only as the tensor it was given. Where the script
changed the batch in the call's own argument, the port needs the change as code (a
Step's ``augment=``, printed and run beside the script's names) and the batch it was
applied to (the real batch the Step is given). The call is found where the script's
frame is executing it (its instruction's source position, Python 3.11+), so two calls
on one line are told apart. An argument that is a name is read where the same code
assigned it last before the call (``x = augment(real)``, then ``D(x)``), unless that
assignment wrote over its own batch (``real = augment(real)``: the batch before it is
gone).
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterable
from types import CodeType, FrameType

# A draw from torch's generator seen while the script ran: the generator's state before
# it, and (id(frame), frame.f_lasti) of each of the script's frames running then.
Draw = tuple[object, tuple[tuple[int, int], ...]]

# The template's name for the batch (another where the template already uses it).
BATCH_NAMES = ("x", "batch", "x_batch")
# Methods of a batch that make the same samples: the batch a template is applied to
# may be written with them (``fake.detach()``, ``real.to(device)``); evaluating them
# again changes nothing.
_SAME_SAMPLES = frozenset(
    {"detach", "clone", "float", "double", "half", "contiguous", "to", "cuda", "cpu", "type"}
)


def augmentation_at(
    frame: FrameType, draws: Iterable[Draw] = ()
) -> tuple[str, object, object] | None:
    """Where ``frame`` is calling a module whose first argument the script changed in
    that call, or assigned so to another name before it (a function of the batch, or
    arithmetic on it): ``(template, value, state)``, the template a function of the
    batch as code (``lambda x: DiffAugment(x, policy=policy)``), the value of the
    batch's expression (``fake.detach()``) in
    ``frame`` now, and of ``draws`` (the latest last), the generator state before the
    first one made in evaluating that argument (None where none was). None
    where the argument is the batch itself, the source cannot be read, or the batch is
    not an expression that is safe to evaluate again (a name, an attribute, an index, or
    a method in ``_SAME_SAMPLES`` of one)."""
    read = _argument_at(frame)
    if read is None or read[3]:
        return None
    call, argument, batch, _ = read
    template = _template(argument, batch)
    try:
        value = eval(  # noqa: S307 - the script's own expression, checked by _safe
            compile(ast.Expression(batch), "<argument>", "eval"), frame.f_globals, frame.f_locals
        )
    except Exception:
        return None
    return template, value, _state_before(frame, draws, argument, call)


def written_over(frame: FrameType) -> int | None:
    """Where ``frame`` is calling a module with a name whose last assignment before the
    call wrote over its own batch with a change of it (``real = augment(real)``, the
    batch before the change gone): that assignment's line; None otherwise."""
    read = _argument_at(frame)
    return read[1].lineno if read is not None and read[3] else None


def _argument_at(frame: FrameType) -> tuple[ast.Call, ast.expr, ast.expr, bool] | None:
    """The call ``frame`` is executing, its first argument's change (the argument, or
    the value assigned to its name before the call), the batch changed, and whether that
    assignment wrote over the batch's name; None where the argument is not a change of a
    batch that is safe to evaluate again."""
    call = _call_at(frame)
    if call is None or not call.args or isinstance(call.args[0], ast.Starred):
        return None
    argument = call.args[0]
    if isinstance(argument, ast.Name):  # x = augment(real) on a line before D(x)
        argument = _assignment_before(frame, argument.id, call)
        if argument is None:
            return None
    batch = _batch_in(argument)
    if batch is None or not _safe(batch):
        return None
    return call, argument, batch, argument is not call.args[0] and call.args[0].id in _names(batch)


def _position(code: CodeType, lasti: int) -> tuple | None:
    """The source position (lines, columns) of the instruction at ``lasti``."""
    positions = _positions(code)
    index = lasti // 2
    if not 0 <= index < len(positions) or None in positions[index]:
        return None
    return positions[index]


def _call_at(frame: FrameType) -> ast.Call | None:
    """The call expression ``frame`` is executing, found in its file's source (as it is
    now on disk: a script rewritten between two audits of one process is read again)."""
    where = _position(frame.f_code, frame.f_lasti)
    return None if where is None else _source(frame.f_code)[0].get(where)


def _state_before(
    frame: FrameType, draws: Iterable[Draw], made: ast.expr, call: ast.Call
) -> object:
    """Of ``draws``, the state before the earliest of the latest ones made while
    ``frame`` was at an instruction inside ``made`` (the call's argument, or the value
    assigned to it on a line before ``call``). Draws made after ``made`` and before
    ``call`` (another batch's augmentation, assigned between) are passed over."""
    if _position(frame.f_code, frame.f_lasti) is None:
        return None
    found = None
    for state, at in reversed(list(draws)):
        where = [_position(frame.f_code, lasti) for frame_id, lasti in at
                 if frame_id == id(frame)]  # fmt: skip
        if any(w is not None and _within(w, made) for w in where):
            found = state
        elif found is not None or made is call or not any(
                w is not None and _between(w, made, call) for w in where):  # fmt: skip
            break
    return found


def _within(where: tuple, node: ast.expr) -> bool:
    """A source position inside ``node``'s."""
    return (where[0], where[2]) >= (node.lineno, node.col_offset) and (
        where[1], where[3]) <= (node.end_lineno, node.end_col_offset)  # fmt: skip


def _between(where: tuple, before: ast.expr, after: ast.expr) -> bool:
    """A source position after ``before`` ends and before ``after`` begins."""
    return (before.end_lineno, before.end_col_offset) <= (where[0], where[2]) and (
        where[1], where[3]) <= (after.lineno, after.col_offset)  # fmt: skip


def _assignment_before(frame: FrameType, name: str, call: ast.Call) -> ast.expr | None:
    """The value the code ``frame`` runs assigned to ``name`` last before ``call``
    (``name = value`` on a line of its own); None where it assigned none there."""
    mine = _starts(frame.f_code)
    values = [value for value in _source(frame.f_code)[1].get(name, ())
              if (value.lineno, value.col_offset) in mine
              and value.end_lineno < call.lineno]  # fmt: skip
    return max(values, key=lambda v: (v.lineno, v.col_offset), default=None)


def _names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


@functools.lru_cache(maxsize=64)
def _positions(code: CodeType) -> tuple:
    return tuple(code.co_positions())


@functools.lru_cache(maxsize=64)
def _starts(code: CodeType) -> frozenset[tuple[int, int]]:
    """The (line, column) where each of ``code``'s instructions starts."""
    return frozenset(p[:3:2] for p in _positions(code) if None not in p)


def _source(code: CodeType) -> tuple[dict, dict[str, list[ast.expr]]]:
    """:func:`_parsed` of the file ``code`` was compiled from, as it is now on disk
    (empty where it cannot be read)."""
    try:
        stat = os.stat(code.co_filename)
    except OSError:
        return {}, {}
    return _parsed(code.co_filename, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _parsed(filename: str, mtime_ns: int, size: int) -> tuple[dict, dict[str, list[ast.expr]]]:
    """The file's call expressions by their source positions, and the values assigned
    to each name (``name = value``); ``mtime_ns`` and ``size``: the version of the file
    they were read from."""
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return {}, {}
    calls = {(node.lineno, node.end_lineno, node.col_offset, node.end_col_offset): node
             for node in ast.walk(tree) if isinstance(node, ast.Call)}  # fmt: skip
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):  # fmt: skip
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    return calls, assigned


def _batch_in(argument: ast.expr) -> ast.expr | None:
    """The batch a changed argument is made from: a function's first argument
    (``augment(batch, ...)``), the first operand of arithmetic (``batch + noise``); None
    where the argument is the batch itself or neither."""
    if isinstance(argument, ast.BinOp):
        batch = argument.left
        while isinstance(batch, ast.BinOp):
            batch = batch.left
        return batch
    if isinstance(argument, ast.Call) and argument.args and not _same_samples(argument):
        return argument.args[0]
    return None


def _same_samples(node: ast.expr) -> bool:
    """A method of the batch that keeps its samples (``fake.detach()``)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SAME_SAMPLES)  # fmt: skip


def _safe(node: ast.expr) -> bool:
    """An expression that reads and does nothing else: names, attributes, constant or
    named indices, and the methods of ``_SAME_SAMPLES`` on them."""
    if isinstance(node, ast.Name | ast.Constant):
        return True
    if isinstance(node, ast.Attribute):
        return _safe(node.value)
    if isinstance(node, ast.Subscript):
        return _safe(node.value) and _safe(node.slice)
    if _same_samples(node):
        return _safe(node.func.value) and all(map(_safe, node.args)) and all(
            _safe(k.value) for k in node.keywords)  # fmt: skip
    return False


def _unchanged(node: ast.expr) -> ast.expr:
    """``node`` without the methods of ``_SAME_SAMPLES`` around it (``fake`` of
    ``fake.detach()``)."""
    while _same_samples(node):
        node = node.func.value
    return node


def _template(argument: ast.expr, batch: ast.expr) -> str:
    """``argument`` as a function of the batch: each occurrence of ``batch``, with or
    without the methods of ``_SAME_SAMPLES`` (``fake`` and ``fake.detach()`` in
    ``fake.detach() + s * torch.randn_like(fake)``), as a name of :data:`BATCH_NAMES`."""
    shape = ast.dump(_unchanged(batch))
    put: list[ast.Name] = []

    class Put(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if isinstance(node, ast.expr) and ast.dump(_unchanged(node)) == shape:
                put.append(ast.Name(id="", ctx=ast.Load()))
                return put[-1]
            return super().visit(node)

    made = Put().visit(ast.parse(ast.unparse(argument), mode="eval"))
    used = {n.id for n in ast.walk(made) if isinstance(n, ast.Name)}  # the rest's names
    name = next((n for n in BATCH_NAMES if n not in used), "_batch")
    for node in put:
        node.id = name
    return f"lambda {name}: {ast.unparse(made.body)}"
