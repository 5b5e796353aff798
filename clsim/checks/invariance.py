"""Which local arrays every work-group accesses in the same pattern (found statically).

A local array is *group-invariant* when the elements each work-item touches, and the order,
cannot depend on which group runs: every branch and loop bound of the kernel and of the helpers
it calls, and every index into the array, is computed from local ids, sizes, constants and
scalar arguments only, never from a group or global id, a memory load or an atomic's result.
Local memory starts fresh in every group, so such an array gives the race and
uninitialised-read checks the same outcome in every group of the same size: once one group
of a size ran without any finding, later groups of that size need not record it (the
instrument turns its mode off per group, see ``instrument.ChecksInstrument``).

A condition that may differ between groups is allowed where it guards neither an access to
the array nor anything that changes what runs after it (return, break, continue, a barrier):
``for i in range(start, stop)`` over a group's share of a buffer, ``if gid < n: y[gid] = v``.
Names assigned under such a condition vary. Conservative: any construct not understood here
makes nothing invariant; an array passed bare to a builtin (vload, async copy) or to a helper
that is not inlined (one without a barrier, whose accesses find the array by address) is not
invariant.
"""

from __future__ import annotations

import ast

from clsim.compiler import builtins as table
from clsim.compiler.frontend import parse

_INVARIANT_IDS = {"get_local_id", "get_global_size", "get_local_size", "get_enqueued_local_size",
                  "get_num_groups", "get_global_offset", "get_work_dim", "get_local_linear_id",
                  "get_sub_group_size", "get_max_sub_group_size", "get_num_sub_groups",
                  "get_enqueued_num_sub_groups", "get_sub_group_id", "get_sub_group_local_id"}
_PURE_FAMILIES = {"math", "integer", "relational", "conversion"}
_NEUTRAL_STATEMENTS = {"barrier", "work_group_barrier", "mem_fence", "local_array",
                       "private_array"}


def _plain_operand(builtin: str | None) -> bool:
    """Whether ``a[i]`` as an argument of ``builtin`` is a plain load (``fmax(a[i], b)``),
    not the object of an atomic or another access of the builtin's own."""
    entry = table.lookup(builtin)
    return entry is not None and entry.family in _PURE_FAMILIES and entry.access is None


class _NotInvariant(Exception):
    """Something here may differ between groups, or is not understood."""


def invariant_in(parsed) -> frozenset[str]:
    """The group-invariant local arrays declared in the kernel ``parsed``."""
    declared = {node.targets[0].id for node in ast.walk(parsed.tree)
                if isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "resolved", (None, None))[1] == "local_array"}
    return frozenset(invariant_local_arrays(parsed, declared))


def invariant_local_arrays(parsed, local_arrays: set[str]) -> set[str]:
    """The names among ``local_arrays`` (of the kernel ``parsed``) that are group-invariant."""
    try:
        failed = _Function(parsed, tainted_params=set()).check(set(local_arrays))
    except _NotInvariant:
        return set()
    return set(local_arrays) - failed


class _Function:
    """Taint (may differ between groups) of one function's names, flow-insensitively."""

    def __init__(self, parsed, tainted_params: set[str], depth: int = 0):
        if depth > 16:
            raise _NotInvariant
        self.parsed = parsed
        self.depth = depth
        self.tainted = set(tainted_params)
        if any(isinstance(n, ast.NamedExpr | ast.Global | ast.Nonlocal | ast.Lambda)
               for n in ast.walk(parsed.tree)):
            raise _NotInvariant
        self._settle()

    def _settle(self) -> None:
        changed = True
        while changed:
            before = len(self.tainted)
            for node in ast.walk(self.parsed.tree):
                if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if node.value is not None and self.expr(node.value):
                        self._taint_targets(targets)
                elif isinstance(node, ast.For) and self.expr(node.iter):
                    self._taint_targets([node.target])
                guarded = self._guarded_parts(node)
                if guarded:  # what runs under a varying condition varies: implicit flow
                    for part in guarded:
                        for inner in ast.walk(part):
                            if isinstance(inner, ast.Assign | ast.AugAssign | ast.AnnAssign):
                                self._taint_targets(inner.targets if isinstance(
                                    inner, ast.Assign) else [inner.target])
                            elif isinstance(inner, ast.For):
                                self._taint_targets([inner.target])
            changed = len(self.tainted) != before

    def _guarded_parts(self, node) -> list:
        """The parts of ``node`` that run or not depending on a value that may differ
        between groups (empty when its condition is invariant, or it has none)."""
        if isinstance(node, ast.If | ast.While) and self.expr(node.test):
            return [*node.body, *node.orelse]
        if isinstance(node, ast.IfExp) and self.expr(node.test):
            return [node.body, node.orelse]
        if isinstance(node, ast.For) and self.expr(node.iter):
            return [*node.body, *node.orelse]
        if isinstance(node, ast.BoolOp):
            for k, value in enumerate(node.values[:-1]):
                if self.expr(value):
                    return node.values[k + 1:]
        return []

    def _taint_targets(self, targets) -> None:
        """Names a tainted value is stored into; ``v.x = ...`` and ``v[k] = ...`` taint ``v``
        (a vector, or an array, whose element loads are tainted anyway), never the index."""
        for target in targets:
            if isinstance(target, ast.Tuple | ast.List):
                self._taint_targets(target.elts)
                continue
            while isinstance(target, ast.Subscript | ast.Attribute | ast.Starred):
                target = target.value
            if isinstance(target, ast.Name):
                self.tainted.add(target.id)
            else:
                raise _NotInvariant

    def check(self, arrays: set[str]) -> set[str]:
        """The names among ``arrays`` (candidate local arrays) whose accesses may differ
        between groups: indexed by a varying value, accessed under a varying condition, or
        used where their accesses are not seen here. Raises when the control flow around
        every access may differ (a varying condition guarding a return, break, continue,
        barrier or helper with a barrier)."""
        failed: set[str] = set()
        seen: set[int] = set()  # Name nodes of the arrays in a position understood here
        for node in ast.walk(self.parsed.tree):
            if isinstance(node, ast.Subscript):
                seen.add(id(node.value))
            elif isinstance(node, ast.Call):
                seen |= {id(a) for a in node.args}
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.value, ast.Call):
                seen.add(id(node.targets[0]))  # the declaration, local_array(...)
        failed |= {node.id for node in ast.walk(self.parsed.tree)
                   if isinstance(node, ast.Name) and node.id in arrays and id(node) not in seen}
        for node in ast.walk(self.parsed.tree):
            for part in self._guarded_parts(node):
                failed |= self._guarded(part, arrays)
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                    node.value.id in arrays and self.expr(node.slice):
                failed.add(node.value.id)
            if isinstance(node, ast.Call):
                failed |= self._check_call(node, arrays)
        return failed

    @staticmethod
    def _guarded(part, arrays: set[str]) -> set[str]:
        """Arrays touched in code that runs under a varying condition; raise if that code
        can change what runs after it, or holds a barrier or collective."""
        touched = set()
        for node in ast.walk(part):
            if isinstance(node, ast.Return | ast.Break | ast.Continue):
                raise _NotInvariant
            if isinstance(node, ast.Name) and node.id in arrays:
                touched.add(node.id)
            if isinstance(node, ast.Call):
                kind, value = getattr(node.func, "resolved", (None, None))
                if kind == "func" and parse(value).has_cut:
                    raise _NotInvariant
                if kind == "builtin" and (value in _NEUTRAL_STATEMENTS or table.is_cut(value)):
                    raise _NotInvariant
        return touched

    def _check_call(self, node: ast.Call, arrays: set[str]) -> set[str]:
        kind, value = getattr(node.func, "resolved", (None, None))
        bare = {a.id for a in node.args if isinstance(a, ast.Name) and a.id in arrays}
        if (kind == "builtin" and value in _NEUTRAL_STATEMENTS) or kind in ("dtype", "range"):
            return set()  # np.float32(a[i]), range(a[0]): plain loads, seen as subscripts
        if kind != "func":  # vload4(k, a), async copies, atomic_add(a[i], 1): not plain
            return bare | {a.value.id for a in node.args if isinstance(a, ast.Subscript)
                           and isinstance(a.value, ast.Name) and a.value.id in arrays
                           and not _plain_operand(value)}
        callee = parse(value)
        if not callee.has_cut:
            return bare  # a real call: its accesses find the array by address
        if len(callee.params) != len(node.args) or node.keywords:
            raise _NotInvariant
        bound = {p: a.id for p, a in zip(callee.params, node.args, strict=True)
                 if isinstance(a, ast.Name) and a.id in arrays}
        tainted = {p for p, a in zip(callee.params, node.args, strict=True) if self.expr(a)}
        inner = _Function(callee, tainted, self.depth + 1).check(set(bound))
        return {bound[p] for p in inner}

    def expr(self, node) -> bool:
        """Whether ``node``'s value may differ between groups."""
        resolved = getattr(node, "resolved", None)
        if resolved is not None and resolved[0] == "const":
            return False
        if isinstance(node, ast.Constant):
            return False
        if isinstance(node, ast.Name):
            return node.id in self.tainted
        if isinstance(node, ast.BinOp):
            return self.expr(node.left) or self.expr(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.expr(node.operand)
        if isinstance(node, ast.Compare):
            return self.expr(node.left) or any(self.expr(c) for c in node.comparators)
        if isinstance(node, ast.BoolOp):
            return any(self.expr(v) for v in node.values)
        if isinstance(node, ast.IfExp):
            return self.expr(node.test) or self.expr(node.body) or self.expr(node.orelse)
        if isinstance(node, ast.Tuple):
            return any(self.expr(e) for e in node.elts)
        if isinstance(node, ast.Call):
            return self._call(node)
        return True  # memory loads (Subscript), attributes, anything else

    def _call(self, node: ast.Call) -> bool:
        kind, value = getattr(node.func, "resolved", (None, None))
        args = any(self.expr(a) for a in node.args) or bool(node.keywords)
        if kind in ("dtype", "range"):
            return args
        if kind == "func":
            callee = parse(value)
            if len(callee.params) != len(node.args):
                return True
            tainted = {p for p, a in zip(callee.params, node.args, strict=True)
                       if self.expr(a)}
            return _Function(callee, tainted, self.depth + 1).returns_tainted()
        if kind != "builtin":
            return True
        if value in _INVARIANT_IDS:
            return False
        entry = table.lookup(value)
        pure = (entry is not None and entry.family in _PURE_FAMILIES and entry.access is None
                and entry.cut is None and not entry.varying and not entry.effects)
        return args or not pure

    def returns_tainted(self) -> bool:
        return any(isinstance(node, ast.Return) and node.value is not None
                   and self.expr(node.value) for node in ast.walk(self.parsed.tree))
