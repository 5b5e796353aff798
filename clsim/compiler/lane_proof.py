"""The strided loop of a lane-major region when its body has loops of its own.

``lane_major`` runs ``for c in range(lid + U, stop, step): L`` lane-major when every index in
``L`` is ``P + c``. After a helper is inlined (``lane_inline``), ``L`` holds the helper's own
loop: ``for j in range(16): byte = blocks[ib].qs[j]; sumq += ... * x[x_at + j]``, with
``ib = row * nb + c`` and ``x_at = c * 32``. Here the indices are proven the way ``proven``
proves a 2-D region's: each is an affine function of values whose range the group knows
(``c``, between ``U`` and its last value, the variable of an inner ``for`` over a uniform
range, ids), bounded once before the region. Struct fields are read through their record
index (checked against the buffer's records) and their array index (against the field's
length), as the usual form checks them.

The region then runs with every uniform loop of ``L`` outside and the lanes innermost
(``lane_emit``):

    for k in trips:
        for _lid in lanes: <L's statements before the inner loop>
        for j in range(16):
            for _lid in lanes: <the inner loop's body>
        for _lid in lanes: <the statements after it>

which keeps each work-item's operations in their order, and runs the chains of different
work-items side by side. ``L`` stores nothing (loads and privates only), so no lane can see
another's work in a different order.

Not here: the shapes around the loop (``lane_major``), emitting (``lane_emit``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from clsim.compiler import ctypes as ct
from clsim.compiler import proven
from clsim.compiler.remat import integer_terms
from clsim.compiler.structs import StructT


@dataclass(frozen=True)
class LoopProof:
    """What bounds a strided loop's indices: the proven plan of its body (accesses and
    inner loops), the struct accesses beside it, and its own loop node; and the privates
    read as their expression again."""

    plan: proven.ProvenPlan
    records: list  # (buffer, record size, [Term]): record index against the buffer's records
    fields: list  # (length, [Term]): a field array's index against its declared length
    loop: ast.For
    recomputed: tuple  # (name, value), see ``_recomputed``

    @property
    def inner_loops(self) -> list:
        return self.plan.loops


def prove_loop(before: list, loop: ast.For, after: list, analysis, storage: dict, env: dict,
               remat: dict, ranges_after_before: bool = False) -> LoopProof | None:
    """The proof plan of strided ``loop``'s body (``before`` and ``after``: the rest of its
    region), or None when an index is not affine in known ranges, the body stores to memory,
    or something in it could fail. A private ``before`` assigns and the body does not
    stands for its value (``nb = ncols // QK``). ``ranges_after_before``: the ranges are
    taken after ``before`` has run (a sub-group plan), so the context privates it assigns
    are known; otherwise they are not."""
    body = loop.body
    written = {n.id for s in body for n in ast.walk(s)
               if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    walker = _LoopWalker(analysis, storage, env, remat, written)
    if not ranges_after_before:
        walker.stale = {n.id for s in before for n in ast.walk(s)
                        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for s in before:
        if (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id not in written):
            walker._define(s.targets[0].id, s.value)
    walker.loops[loop.target.id] = loop
    try:
        walker.block(body, top=True)
    except proven._Refuse:
        return None
    if not (walker.plan.accesses or walker.records) or not walker.plan.loops:
        return None  # no inner loop: lane_major's own shape, or nothing to prove
    return LoopProof(walker.plan, walker.records, walker.fields, loop,
                     _recomputed(before, loop, after, analysis))


def _recomputed(before: list, loop: ast.For, after: list, analysis) -> tuple:
    """(name, value) of each private the strided loop's body assigns once, at its top level,
    from its variable, uniform values, constants and ``+ - *``, and that only the body reads,
    after that assignment. Read as its expression again (``ib = row * nb + c``), the loads
    it indexes are strided, which LLVM vectorises; loaded from a lane array, they are
    gathers it cannot bound."""
    region = [*before, loop, *after]
    stores: dict[str, int] = {}
    for node in ast.walk(ast.Module(body=region, type_ignores=[])):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    outside = {n.id for s in [*before, *after] for n in ast.walk(s) if isinstance(n, ast.Name)}
    found: dict[str, ast.AST] = {}

    def leaf(node) -> bool:
        return isinstance(node, ast.Name) and (
            hasattr(node, "resolved") or node.id == loop.target.id or node.id in found
            or (node.id not in stores and analysis.group_evaluable(node)))

    read: set[str] = set()
    for s in loop.body:
        if (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)):
            name = s.targets[0].id
            if (stores.get(name) == 1 and name not in outside and name not in read
                    and integer_terms(s.value, leaf)):
                found[name] = s.value
        read |= {n.id for n in ast.walk(s) if isinstance(n, ast.Name)}
    return tuple(found.items())


class _LoopWalker(proven._Walker):
    """``proven``'s walker, reading struct fields in place and refusing stores."""

    def __init__(self, *args):
        super().__init__(*args)
        self.records: list = []
        self.fields: list = []

    def target(self, t) -> None:
        if not isinstance(t, ast.Name):
            raise proven._Refuse  # a store: lanes would write in another order
        super().target(t)

    def stmt(self, s, top: bool) -> None:
        if isinstance(s, ast.If):
            raise proven._Refuse  # keeps the lane loops straight-line
        super().stmt(s, top)

    def expr(self, node) -> None:
        if _field_chain(node):
            if not isinstance(getattr(node, "ctype", None), str):
                raise proven._Refuse  # a struct or an array as a value
            self.field(node)
            return
        super().expr(node)

    def field(self, node) -> None:
        """A field chain ``buf[i].f``, ``buf[i].f[j]``: the record and every array index."""
        if isinstance(node, ast.Attribute):
            record = node.value
            if isinstance(record, ast.Subscript) and isinstance(record.value, ast.Name):
                arrt = getattr(record.value, "ctype", None)
                if not (isinstance(arrt, ct.ArrayT) and isinstance(arrt.dtype, StructT)
                        and arrt.ndim == 1 and getattr(arrt, "view", None) is None
                        and self.storage.get(record.value.id) == "param"):
                    raise proven._Refuse
                super().expr(record.slice)
                self.records.append((record.value.id, arrt.dtype.itemsize,
                                     self.affine(record.slice)))
                return
            if _field_chain(record):
                self.field(record)
                return
            raise proven._Refuse
        if isinstance(node, ast.Subscript):
            arrt = getattr(node.value, "ctype", None)
            if not (isinstance(arrt, ct.ArrayT) and isinstance(arrt.shape, tuple)
                    and all(isinstance(n, int) for n in arrt.shape)):
                raise proven._Refuse
            indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if len(indices) != len(arrt.shape):
                raise proven._Refuse
            for ix, length in zip(indices, arrt.shape, strict=True):
                super().expr(ix)
                self.fields.append((length, self.affine(ix)))
            self.field(node.value)
            return
        raise proven._Refuse


def _field_chain(node) -> bool:
    """``x[i].f`` or ``x[i].f[j]``: an attribute that is not a resolved name, or an index
    into one."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and not hasattr(node, "resolved")
