"""Which accesses of a work-item loop the traffic instrument may record once per loop.

A work-item ``for c in range(...)`` loop whose body holds no ``break``, ``continue`` or
``return`` runs each top-level statement of its body once per iteration. An access in such a
statement that always runs (not under ``and``/``or``/``if-else``), into a buffer or local
array of scalars, whose every index is affine in ``c`` with loop-invariant coefficients
(integer names the body never assigns, constants, ``+``, ``-``, and ``*`` by an invariant),
touches ``base + stride * j`` in iteration ``j`` (arithmetic on ``c`` must be 64-bit, which
cannot wrap within an index range). For those the instrument keeps the index
of the last two iterations in locals and records all the loop's runs after it
(``clsim.traffic.instrument``), leaving the lane log exactly as one record per access would.

Accesses outside such loops that every work-item runs at most once per pass
(``once_per_pass_nodes``) are recorded as one *lane run* per pass while consecutive lanes
touch equally spaced elements, along each row of a 2-D group (layout.py ``LANES``).

This module only reads the parsed source; it generates no code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from clsim.compiler import ctypes as ct
from clsim.compiler.regions import is_cut_stmt

_LEAVES = (ast.Break, ast.Continue, ast.Return)
# The loop variable's types (its values are the range's, which fit them), and the types of
# arithmetic on it: 64-bit arithmetic cannot wrap within a buffer's index range, so an affine
# expression of the variable stays affine; 32-bit arithmetic might wrap, so it is not taken.
_COUNTER_TYPES = ("int32", "int64")
_WIDE = ("int64", "uint64")


@dataclass
class AffineLoop:
    """One eligible loop: its accesses that may be recorded once per loop (node id ->
    ordinal, index dimensions, kinds) and what the instrument deferred so far."""

    number: int
    accesses: dict[int, tuple[int, int, tuple[str, ...]]]
    deferred: list = field(default_factory=list)
    # run lane-major: its ``LaneLoopEvent`` (the deferred accesses are staged for the group
    # after the trips, as (event, slot) pairs)
    lanes: object = None
    # run by every lane of a proven 2-D region alike: its accesses' ``LaneGridEvent`` forms
    # (staged for the group after the region's lane loops)
    grid: dict = field(default_factory=dict)

    def captures(self, node_id: int, kind: str) -> tuple[list[str], list[str]]:
        """Names of the locals holding an access's index codes in this iteration and the
        previous one, one per dimension."""
        ordinal, dims, _kinds = self.accesses[node_id]
        tag = f"{self.number}_{ordinal}{kind[0]}"
        return [f"_trQ{tag}_{d}" for d in range(dims)], [f"_trP{tag}_{d}" for d in range(dims)]

    def init_lines(self) -> str:
        """Zero every capture local before the loop (the first iteration reads them)."""
        names = [n for node_id, (_o, _d, kinds) in self.accesses.items() for kind in kinds
                 for pair in self.captures(node_id, kind) for n in pair]
        return "\n".join(f"{n} = np.int64(0)" for n in names)


def analyse(loop: ast.For, var_type: str, number: int) -> AffineLoop | None:
    """The loop's accesses recordable once per loop, or None when the loop is not eligible
    or has none."""
    if var_type not in _COUNTER_TYPES or not isinstance(loop.target, ast.Name):
        return None
    if any(isinstance(n, _LEAVES) for s in loop.body for n in ast.walk(s)):
        return None
    assigned = _assigned(loop)
    found: dict[int, tuple[int, int, tuple[str, ...]]] = {}
    for stmt in loop.body:
        if isinstance(stmt, ast.Assign | ast.AugAssign | ast.Expr) and not _vector(stmt):
            for node, kinds in _always_run(stmt):
                dims = _affine_dims(node, loop.target.id, assigned)
                if dims and id(node) not in found:
                    found[id(node)] = (len(found), dims, kinds)
    return AffineLoop(number, found) if found else None


def _assigned(loop: ast.For) -> set[str]:
    """Names the loop assigns: its variable and every target in its body."""
    names = {loop.target.id}
    for stmt in loop.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                names.add(n.target.id)
    return names


def _vector(stmt) -> bool:
    """Whether the statement involves vectors or structs (emitted through other paths)."""
    return any(isinstance(getattr(n, "ctype", None), ct.VecT) or isinstance(n, ast.Attribute)
               for n in ast.walk(stmt))


def _always_run(stmt):
    """(Subscript, kinds) of the accesses the statement performs whenever it runs."""
    out = []
    if isinstance(stmt, ast.AugAssign):
        if isinstance(stmt.target, ast.Subscript):
            out.append((stmt.target, ("load", "store")))
        roots = [stmt.value]
    elif isinstance(stmt, ast.Assign):
        roots = [stmt.value]
        out += [(t, ("store",)) for t in stmt.targets if isinstance(t, ast.Subscript)]
        roots += [t.slice for t in stmt.targets if isinstance(t, ast.Subscript)]
    else:
        roots = [stmt.value]
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BoolOp | ast.IfExp):
            continue  # operands that may not run
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            out.append((node, ("load",)))
        stack.extend(ast.iter_child_nodes(node))
    return out


def _affine_dims(node: ast.Subscript, var: str, assigned: set[str]) -> int:
    """Index dimensions of ``node`` when it indexes a scalar array by name and every index
    is affine in ``var``; else 0."""
    arr = node.value
    t = getattr(arr, "ctype", None)
    if not isinstance(arr, ast.Name) or not isinstance(t, ct.ArrayT):
        return 0
    if not isinstance(t.dtype, str) or not (ct.is_int(t.dtype) or ct.is_float(t.dtype)):
        return 0
    idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if all(_affine(ix, var, assigned) is not None for ix in idx):
        return len(idx)
    return 0


def _affine(node, var: str, assigned: set[str]) -> bool | None:
    """None when ``node`` is not affine in ``var``; else whether it depends on ``var``."""
    if not ct.is_int(getattr(node, "ctype", None)) and not isinstance(node, ast.Constant):
        return None
    if isinstance(node, ast.Constant):
        return False if isinstance(node.value, int) else None
    if isinstance(node, ast.Name):
        if node.id == var:
            return True
        return None if node.id in assigned else False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _affine(node.operand, var, assigned)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = _affine(node.left, var, assigned), _affine(node.right, var, assigned)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Mult) and left and right:
            return None  # quadratic
        if (left or right) and node.ctype not in _WIDE:
            return None  # may wrap
        return left or right
    return None


def once_per_pass_nodes(body: list[ast.stmt]) -> list[tuple[ast.Subscript, tuple[str, ...]]]:
    """The accesses of ``always_run_nodes`` in ``body`` (with their kinds) that a work-item
    runs at most once per pass of a work-item loop, in source order: every loop around them
    holds a cut (a barrier or a collective), so the loop runs at group level and each of its
    iterations is passes of its own; a loop without one runs inside a pass, per work-item."""
    found: list[tuple[ast.Subscript, tuple[str, ...]]] = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, ast.For | ast.While):
                if any(is_cut_stmt(n) for n in ast.walk(s)):
                    walk(s.body)
            elif isinstance(s, ast.If):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, ast.Assign | ast.AugAssign | ast.Expr):
                found.extend(_always_run(s))

    walk(body)
    return found


def always_run_nodes(tree: ast.AST) -> set[int]:
    """Ids of the accesses that run whenever their statement does, in the assignments and
    expression statements of ``tree`` (the statements whose accesses the code generator
    emits within the statement, so code placed before it runs exactly when they do)."""
    found: set[int] = set()
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Assign | ast.AugAssign | ast.Expr):
            found.update(id(node) for node, _kinds in _always_run(stmt))
    return found
