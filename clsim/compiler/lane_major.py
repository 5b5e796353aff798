"""Which regions run lane-major: the kernel's loop outside, the work-items innermost.

clsim runs a region as ``for _lid: <the work-item's statements>``; a work-item's own loop
``for c in range(lid, n, wg)`` is then inside, strided by the group size in memory, and LLVM
cannot vectorise across work-items. A region of the shape

    S1: privates assigned from values no access can fail on (constants, ids, uniform values,
        a local array at a constant index inside its shape)
    L:  for c in range(lid + U, stop, step): privates updated from loads, or a store
        ``buf[P + c] = ...``, every index ``P + c`` with ``P``, ``U``, ``stop``, ``step``
        uniform (the same for the whole group)
    S2: anything (when L stores, only privates assigned from values no access can fail on)

runs as ``for _lid: S1``, then ``for k: for _lid in range(lanes still in the loop): L's body
with c = U + k * step + _lid`` (contiguous lanes: what LLVM widens), then ``for _lid: S2``,
with privates as per-lane arrays. Each work-item's operations keep their order, so results
are bit-identical. Before the region every index's whole range (``P + U`` to ``P`` plus the
largest ``c``) is checked once; if any could fail, or step is below the group size when L
stores (lanes would share elements), the region runs the usual way, which reports the first
failing work-item as always. Nothing outside S2 can fail otherwise, so nothing observable
happens in another order than the work-item order.

A sub-group's strided loop, ``for c in range(sglid + U, stop, step)`` with ``sglid`` the
sub-group local id, is the same shape with ``U``, ``stop``, ``step`` and each ``P`` the same
within each sub-group, checked at run time (``subgroup_plan``): it runs sub-group by
sub-group, the lanes of one sub-group innermost.

Not here: emitting the form (``lane_emit``); regions of other shapes keep the usual form.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler.diagnostics import builtin_name
from clsim.compiler.emit_expr import constant_value

_PURE_FAMILIES = frozenset({"math", "conversion", "relational", "work-item"})
# ids that differ between the lanes of a sub-group
LANE_IDS = frozenset({"get_local_id", "get_global_id", "get_sub_group_local_id",
                      "get_local_linear_id", "get_global_linear_id"})
# beside the pure families: the local id, and a collective's argument converted to its type
# (the collective itself is a region cut)
_PURE_OTHERS = frozenset({"get_local_id", "__cvt_value"})
INT_FAILING = (ast.Div, ast.FloorDiv, ast.Mod)  # integer division records an error


@dataclass(frozen=True)
class LanePlan:
    """A region run lane-major: its parts and the accesses whose range is checked first."""

    before: list  # S1
    loop: ast.For  # L
    after: list  # S2
    start: ast.AST | None  # U (None: 0)
    accesses: list  # (buffer name, P node or None, Subscript node) of L's loads and stores
    stores: bool
    lanes: tuple[str, ...]  # privates held in per-lane arrays
    proof: object = None  # lane_proof.LoopProof when L has loops of its own (else None)


class _Refuse(Exception):
    pass


@dataclass(frozen=True)
class PrefixPlan:
    """A region ``if lid < X: <body>`` (X uniform): only lanes below X run its body."""

    bound: ast.AST  # X
    body: list
    accesses: list  # (buffer name, P node or None, Subscript node): index lid + P
    lanes: tuple[str, ...]


def plan(stmts: list, analysis, storage: dict, env: dict, lid_aliases: set[str],
         prove_loop=None) -> LanePlan | PrefixPlan | None:
    """The lane-major plan of a region's statements, or None when it has another shape.
    ``prove_loop(before, loop, after)``: a ``lane_proof.LoopProof`` of a strided loop whose
    body has loops of its own, or None."""
    if len(stmts) == 1 and isinstance(stmts[0], ast.If):
        return _prefix_plan(stmts[0], analysis, storage, env, lid_aliases)
    loops = [i for i, s in enumerate(stmts) if isinstance(s, ast.For)]
    if len(loops) != 1:
        return None
    k = loops[0]
    before, loop, after = stmts[:k], stmts[k], stmts[k + 1:]
    try:
        start = _start(loop, analysis, lid_aliases)
        for s in before:
            _check_before(s, storage, env)
    except _Refuse:
        return None
    body = _strided_body(before, loop, after, analysis, storage, env, prove_loop)
    if body is None:
        return None
    return LanePlan(before, loop, after, start, *body)


def _strided_body(before, loop, after, analysis, storage, env, prove_loop):
    """(accesses, whether any stores, privates held in per-lane arrays, proof) of a strided
    loop and its region, or None: every index ``P + c`` (``analysis.group_evaluable``
    decides ``P``), else a proof of the body with loops of its own; after stores, an ``S2``
    of privates only."""
    proof = None
    try:
        accesses, stores = _check_body(loop.body, loop.target.id, analysis, storage, env,
                                       set())
    except _Refuse:
        proof = prove_loop(before, loop, after) if prove_loop is not None else None
        if proof is None:
            return None
        accesses, stores = [], False
    if stores and not _only_privates(after, storage, env):
        return None
    uniform = _proof_uniform(proof, before, loop)
    if uniform is None:
        return None
    lanes = sorted({n.id for s in [*before, loop] for n in ast.walk(s)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                    and storage.get(n.id, "local") == "local" and n.id not in uniform})
    return accesses, stores, tuple(lanes), proof


def _prefix_plan(s: ast.If, analysis, storage, env, lid_aliases) -> PrefixPlan | None:
    test = s.test
    if s.orelse or not (isinstance(test, ast.Compare) and len(test.ops) == 1
                        and isinstance(test.ops[0], ast.Lt)
                        and _is_lid(test.left, lid_aliases)
                        and getattr(test.comparators[0], "ctype", None) in ("int64", "int32")
                        and analysis.group_evaluable(test.comparators[0])):
        return None
    try:
        accesses, _ = _check_body(s.body, None, analysis, storage, env, lid_aliases)
    except _Refuse:
        return None
    lanes = sorted({n.id for b in s.body for n in ast.walk(b)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                    and storage.get(n.id, "local") == "local"})
    return PrefixPlan(test.comparators[0], s.body, accesses, tuple(lanes))


@dataclass(frozen=True)
class SubgroupPlan(LanePlan):
    """A region whose strided loop is ``for c in range(sglid + U, stop, step)`` (sglid the
    sub-group local id) with indices ``P + c``: run sub-group by sub-group, the lanes of one
    sub-group innermost. U, stop, step and every P need only be the same within each
    sub-group, checked at run time after S1: in the first lane when ``uniform``, else in
    every lane."""

    # U, stop, step and every P are the same in a sub-group's lanes by construction
    # (``regions.Analysis.subgroup_evaluable``): a failed check is then an index outside
    # or a short step, as for ``LanePlan``, and the lanes' values need no comparing
    uniform: bool = False


class _PerLane:
    """``group_evaluable`` for ``_start``/``_access`` of a sub-group plan: an expression any
    lane can compute without failing, from values the loop does not change."""

    def __init__(self, storage: dict, env: dict, changing: set[str], lane_ids: set[str]):
        self.storage, self.env, self.changing = storage, env, changing
        self.lane_ids = lane_ids

    def group_evaluable(self, node) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Subscript):
                return False
            if isinstance(n, ast.Call) and builtin_name(n) in LANE_IDS:
                return False  # differs between lanes: every group would fail the check
            if isinstance(n, ast.Name) and not hasattr(n, "resolved"):
                if n.id in self.changing or n.id in self.lane_ids or \
                        not isinstance(self.env.get(n.id), str):
                    return False
            if isinstance(n, ast.expr_context):
                continue
            try:
                _check_node(n)
            except _Refuse:
                return False
        return isinstance(getattr(node, "ctype", None), str) and ct.is_int(node.ctype)


def subgroup_plan(stmts: list, storage: dict, env: dict, sg_aliases: set[str],
                  lane_ids: set[str], prove_loop=None, same_in_subgroup=None
                  ) -> SubgroupPlan | None:
    """The sub-group plan of a region's statements (``SubgroupPlan``), or None.
    ``sg_aliases``: names of the sub-group local id; ``lane_ids``: names computed again
    from an id that differs between the lanes of a sub-group. ``prove_loop`` as for
    ``plan``: a strided loop with loops of its own is bounded for the union of the
    sub-groups' ranges of its variable.

    S1 runs for every lane before the per-sub-group values are checked, and again in the
    usual form when a check fails: so it must give the same privates when run twice (it
    reads none of its own targets before assigning them)."""
    loops = [i for i, s in enumerate(stmts) if isinstance(s, ast.For)]
    if len(loops) != 1:
        return None
    k = loops[0]
    before, loop, after = stmts[:k], stmts[k], stmts[k + 1:]
    c = loop.target.id
    changing = {c} | {n.id for s in loop.body for n in ast.walk(s)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    per_lane = _PerLane(storage, env, changing, lane_ids)
    try:
        for s in before:
            _check_before(s, storage, env)
        _check_rerunnable(before)
        start = _start(loop, per_lane, sg_aliases,
                       lambda node: builtin_name(node) == "get_sub_group_local_id"
                       and not node.args)
    except _Refuse:
        return None
    body = _strided_body(before, loop, after, per_lane, storage, env, prove_loop)
    if body is None:
        return None
    values = [start, *loop.iter.args[1:], *(p for _buffer, p, _node in body[0])]
    agree = same_in_subgroup is not None and all(
        same_in_subgroup(v) for v in values if v is not None)
    return SubgroupPlan(before, loop, after, start, *body, agree)


def _proof_uniform(proof, before: list, loop: ast.For) -> set[str] | None:
    """The names the lanes do not hold in arrays: the strided loop's variable, the inner
    loops' (run at group level) and the privates read as their expression again; None when
    an inner loop's variable is also a private somewhere else."""
    uniform = {loop.target.id}
    if proof is None:
        return uniform
    inner = {s.target.id for s in proof.inner_loops}
    stored = [n for s in [*before, loop] for n in ast.walk(s)
              if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in inner]
    if len(stored) != len(proof.inner_loops):
        return None
    return uniform | inner | {name for name, _ in proof.recomputed}


def _only_privates(stmts: list, storage: dict, env: dict) -> bool:
    """Whether S2 only assigns privates from values that cannot fail (as S1 may): after a
    loop that stores, S2 may then run once every lane has stored, since nothing it does is
    seen outside the work-item and nothing in it can stop the launch half done."""
    try:
        for s in stmts:
            _check_before(s, storage, env)
    except _Refuse:
        return False
    return True


def _check_rerunnable(before: list) -> None:
    targets = {t.id for s in before for t in s.targets if isinstance(t, ast.Name)}
    assigned: set[str] = set()
    for s in before:
        reads = {n.id for n in ast.walk(s.value)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if (reads & targets) - assigned:
            raise _Refuse
        assigned.update(t.id for t in s.targets if isinstance(t, ast.Name))


def _start(loop: ast.For, analysis, lid_aliases: set[str], is_id=None):
    """U of ``range(lid + U, stop, step)``; refuses other ranges. ``is_id``: whether a call
    is the id (default ``get_local_id(0)``)."""
    args = loop.iter.args
    if loop.orelse or len(args) != 3:
        raise _Refuse
    if not (analysis.group_evaluable(args[1]) and analysis.group_evaluable(args[2])):
        raise _Refuse
    first = args[0]
    if _is_lid(first, lid_aliases, is_id):
        return None
    if isinstance(first, ast.BinOp) and isinstance(first.op, ast.Add):
        for lid, rest in ((first.left, first.right), (first.right, first.left)):
            if _is_lid(lid, lid_aliases, is_id) and analysis.group_evaluable(rest):
                return rest
    raise _Refuse


def _is_lid(node, lid_aliases: set[str], is_id=None) -> bool:
    if isinstance(node, ast.Name):
        return node.id in lid_aliases
    if is_id is not None:
        return isinstance(node, ast.Call) and is_id(node)
    return (builtin_name(node) == "get_local_id" and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)


def _scalar_private(name: str, storage: dict, env: dict) -> bool:
    return (storage.get(name, "local") in ("local", "ctx", "remat")
            and isinstance(env.get(name), str))


def _check_before(s, storage: dict, env: dict) -> None:
    if (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
            and isinstance(env.get(s.targets[0].id), ct.ArrayT)
            and storage.get(s.targets[0].id) == "larray"
            and getattr(s.value, "fill", None) is None):
        return  # a local array's declaration: allocated with the group, no code here
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and _scalar_private(s.targets[0].id, storage, env)):
        raise _Refuse
    for n in ast.walk(s.value):
        if isinstance(n, ast.Subscript):
            _constant_local_index(n)
        else:
            _check_node(n)


def _constant_local_index(n: ast.Subscript) -> None:
    arrt = getattr(n.value, "ctype", None)
    if not (isinstance(arrt, ct.ArrayT) and arrt.space == "local" and arrt.shape
            and len(arrt.shape) == 1 and isinstance(n.slice, ast.Constant)
            and isinstance(n.slice.value, int) and 0 <= n.slice.value < arrt.shape[0]):
        raise _Refuse


def _check_node(n) -> None:
    if isinstance(n, ast.Lambda | ast.Tuple):
        raise _Refuse  # vectors
    # A conditional expression (``a if t else b``, ``and``, ``or``) evaluates one side per
    # lane, as in the usual form; the range check covers the loads of both, as if taken.
    if isinstance(n, ast.Attribute) and not hasattr(n, "resolved"):
        raise _Refuse  # a field (clsim.fmax is a resolved name)
    if isinstance(n, ast.BinOp) and isinstance(n.op, INT_FAILING) and ct.is_int(
            getattr(n, "ctype", "float32")) and constant_value(n.right) in (None, 0, -1):
        raise _Refuse  # only a division by zero (or INT_MIN / -1) records an error
    if isinstance(n, ast.Call):
        kind = getattr(n.func, "resolved", (None,))[0]
        if kind == "dtype":
            return
        entry = table.lookup(builtin_name(n)) if kind == "builtin" else None
        if entry is None or (entry.family not in _PURE_FAMILIES
                             and builtin_name(n) not in _PURE_OTHERS):
            raise _Refuse
        if any(isinstance(getattr(a, "ctype", None), ct.PtrT | ct.ArrayT | ct.VecT)
               for a in n.args):
            raise _Refuse
    if isinstance(getattr(n, "ctype", None), ct.VecT):
        raise _Refuse


def _check_body(body, c, analysis, storage: dict, env: dict, lid_aliases: set[str]):
    """Accesses and whether any stores, of straight-line statements whose indices are
    ``P + c`` (``c`` the loop variable) or ``P + lid`` (``c`` None)."""
    accesses, stores = [], False
    for s in body:
        if isinstance(s, ast.Assign | ast.AugAssign):
            target = s.targets[0] if isinstance(s, ast.Assign) else s.target
            if isinstance(s, ast.Assign) and len(s.targets) != 1:
                raise _Refuse
            if isinstance(target, ast.Name):
                if not _scalar_private(target.id, storage, env) or target.id == c:
                    raise _Refuse
            elif isinstance(target, ast.Subscript) and isinstance(s, ast.Assign):
                accesses.append(_access(target, c, analysis, storage, lid_aliases))
                stores = True
            else:
                raise _Refuse
            value = s.value
        else:
            raise _Refuse
        for n in ast.walk(value):
            if isinstance(n, ast.Subscript):
                accesses.append(_access(n, c, analysis, storage, lid_aliases))
            elif not isinstance(n, ast.expr_context):
                _check_node(n)
    return accesses, stores


def _access(n: ast.Subscript, c, analysis, storage: dict, lid_aliases: set[str]):
    """(buffer, P, node) of ``buf[P + c]`` (``buf[P + lid]`` when ``c`` is None) on a 1-D
    buffer or local array."""
    arrt = getattr(n.value, "ctype", None)
    if not (isinstance(n.value, ast.Name) and isinstance(arrt, ct.ArrayT) and arrt.ndim == 1
            and isinstance(arrt.dtype, str) and getattr(arrt, "view", None) is None
            and getattr(arrt, "pointee", None) is None
            and storage.get(n.value.id) in ("param", "larray")):
        raise _Refuse
    ix = n.slice

    def is_var(node) -> bool:
        if c is None:
            return _is_lid(node, lid_aliases)
        return isinstance(node, ast.Name) and node.id == c

    if is_var(ix):
        return n.value.id, None, n
    if isinstance(ix, ast.BinOp) and isinstance(ix.op, ast.Add):
        for var, rest in ((ix.left, ix.right), (ix.right, ix.left)):
            if is_var(var) and analysis.group_evaluable(rest):
                return n.value.id, rest, n
    raise _Refuse
