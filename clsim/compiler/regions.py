"""Cut points, uniformity and the region tree (PoCL's parallel regions, MCUDA's loop fission).

A *cut* is a barrier or a collective (sub-group or work-group). Statements between cuts form a
*region*, run as one loop over the work-items of a group. Compound statements that contain a cut
stay at group level: their condition is evaluated per work-item and checked for uniformity at run
time, unless it is provably uniform (depends only on arguments, constants, group ids and sizes),
in which case it is evaluated once. When a compound statement contains only sub-group cuts, its
condition need only be uniform within each sub-group: it is *masked* (per-work-item active
flags, checked per sub-group at run time) instead of requiring the whole group to agree.
Assignments of provably uniform values are hoisted out of the work-item loops into group-level
scalars. Values that flow from one region into another are stored in
context arrays of local-size length; everything else stays a plain local.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from clsim.compiler import builtins as table
from clsim.compiler.ctypes import ArrayT, VecT
from clsim.compiler.diagnostics import builtin_name, compile_error
from clsim.compiler.frontend import func_target
from clsim.compiler.pure import pure_helper
from clsim.compiler.infer import is_cut_call
from clsim.compiler.structs import StructT


@dataclass
class Region:
    stmts: list[ast.stmt]
    ue: set[str] = field(default_factory=set)


@dataclass
class Hoisted:
    stmt: ast.stmt


@dataclass
class Cut:
    """A barrier (or another cut builtin) as a statement."""

    stmt: ast.Expr


@dataclass
class CutIf:
    node: ast.If
    body: list
    orelse: list
    uniform: bool
    ue: set[str] = field(default_factory=set)
    masked: bool = False  # only sub-group cuts inside: condition uniform per sub-group


@dataclass
class CutLoop:
    node: ast.While | ast.For
    body: list
    uniform: bool
    ue: set[str] = field(default_factory=set)
    masked: bool = False  # only sub-group cuts inside: trip count may differ per sub-group


@dataclass
class GroupJump:
    node: ast.Break | ast.Continue


def reads(node) -> set[str]:
    return {
        n.id for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not hasattr(n, "resolved")
    }


def is_cut_stmt(s) -> bool:
    """A barrier statement or a normalised collective (``_cl_rK = collective(...)``)."""
    return isinstance(s, ast.Expr | ast.Assign) and is_cut_call(s.value)


def _contains_barrier(stmt) -> bool:
    return any(is_cut_stmt(n) for n in ast.walk(stmt))


def cut_levels(stmt) -> set[str]:
    """"sub" and/or "work": which kinds of cut ``stmt`` contains."""
    levels = set()
    for n in ast.walk(stmt):
        if is_cut_stmt(n):
            levels.add(table.cut_level(builtin_name(n.value)))
    return levels


# builtins whose value differs across the group but not within a sub-group
SUBGROUP_UNIFORM = frozenset({"get_sub_group_id", "get_sub_group_size"})


def has_jumps(stmts) -> bool:
    """A break/continue in ``stmts`` that targets the loop owning them (not an inner loop)."""
    for s in stmts:
        if isinstance(s, ast.Break | ast.Continue):
            return True
        if isinstance(s, ast.If) and (has_jumps(s.body) or has_jumps(s.orelse)):
            return True
    return False


def _walk_unresolved(node):
    """``ast.walk`` that does not enter a resolved attribute (``np.int64``, a module's
    constant): it is the same for every work-item, and its base name (``np``) is no variable
    of the kernel (the C front end writes ``range(np.int64(0), np.int64(K), ...)``)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not (isinstance(n, ast.Attribute) and hasattr(n, "resolved")):
            todo.extend(ast.iter_child_nodes(n))


class Analysis:
    """Cut structure, uniformity and storage classes of one (inlined) kernel body."""

    def __init__(self, body: list[ast.stmt], params: dict, env: dict,
                 forced_varying: set[str] | None = None):
        self.body = body
        self.params = params
        self.env = env
        self.cut_nodes: set[int] = set()
        # Collective temporaries and the counters of masked loops with jumps live per work-item.
        self.forced: set[str] = set(forced_varying or ())
        self.varying: set[str] = set(self.forced)
        # a private struct's bytes are one row per work-item (fields stored one by one)
        self.varying |= {n for n, t in env.items() if isinstance(t, StructT) and n not in params}
        self.group_scalars: set[str] = set()
        self._subgroup_scalars: set[str] | None = None
        self.has_exit = False
        self._loops: list[CutLoop] = []
        self._mark_cuts(body, loops=[])
        self._uniformity()
        self._group_scalars()
        self.tree = self.build(body)
        self.ctx_vars = self._context_vars()

    # -- cuts -------------------------------------------------------------------------------
    def is_cut(self, stmt) -> bool:
        return id(stmt) in self.cut_nodes

    def _mark_cuts(self, stmts, loops):
        """Marks cut statements; returns whether any jump in ``stmts`` leaves a cut loop."""
        jumps_out = False
        for s in stmts:
            if is_cut_stmt(s):
                self.cut_nodes.add(id(s))
                continue
            if isinstance(s, ast.Return):
                self.has_exit = True
            if isinstance(s, ast.Break | ast.Continue):
                if loops and loops[-1][1]:
                    self.cut_nodes.add(id(s))
                    jumps_out = True
                continue
            if isinstance(s, ast.While | ast.For):
                cut = _contains_barrier(s)
                if cut:
                    self.cut_nodes.add(id(s))
                    if (isinstance(s, ast.For) and cut_levels(s) == {"sub"}
                            and has_jumps(s.body)):
                        self.varying.add(s.target.id)  # masked: each lane keeps its counter
                self._mark_cuts(s.body, [*loops, (s, cut)])
                self._mark_cuts(s.orelse, loops)
            elif isinstance(s, ast.If):
                inner = self._mark_cuts(s.body, loops) | self._mark_cuts(s.orelse, loops)
                if inner or _contains_barrier(s):
                    self.cut_nodes.add(id(s))
                jumps_out |= inner
        return jumps_out

    # -- uniformity -------------------------------------------------------------------------
    def expr_varying(self, node) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in self.varying and not hasattr(n, "resolved"):
                return True
            if isinstance(n, ast.Subscript) and isinstance(
                    getattr(n.value, "ctype", None), object) and not self._is_vector(n.value):
                return True
            if isinstance(n, ast.Call):
                name = builtin_name(n)
                if (func_target(n) is not None and not pure_helper(func_target(n))) or \
                        table.is_varying(name):
                    return True
        return False

    def _is_vector(self, node) -> bool:
        return isinstance(getattr(node, "ctype", None), VecT)

    def _uniformity(self):
        for name, t in self.params.items():
            del name, t
        for _ in range(20):
            before = len(self.varying)
            self._walk_uniform(self.body, ctrl=False)
            if len(self.varying) == before:
                break

    def _checked_if(self, s: ast.If, loop_levels) -> bool:
        """An if taken at group level, its condition checked to agree at run time (codegen's
        uniform_test): around a work-group cut, or holding jumps of a work-group cut loop.
        What runs under it is then no more varying than what runs before it."""
        if not self.is_cut(s):
            return False
        levels = cut_levels(s)
        if "work" in levels:
            return True
        # around sub-group cuts only it is masked: checked per sub-group, not group-wide
        return "sub" not in levels and "work" in (loop_levels or ())

    def _walk_uniform(self, stmts, ctrl: bool, loop_levels=None):
        for s in stmts:
            if isinstance(s, ast.Assign):
                for tgt, val in self._pairs(s.targets[0], s.value):
                    if ctrl or self.expr_varying(val):
                        self.varying.add(tgt)
            elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                if ctrl or self.expr_varying(s.value):
                    self.varying.add(s.target.id)
            elif isinstance(s, ast.If):
                checked = self._checked_if(s, loop_levels)
                inner = ctrl or (not checked and self.expr_varying(s.test))
                self._walk_uniform(s.body, inner, loop_levels)
                self._walk_uniform(s.orelse, inner, loop_levels)
            elif isinstance(s, ast.While | ast.For):
                head = s.test if isinstance(s, ast.While) else s.iter
                levels = cut_levels(s) if self.is_cut(s) else None
                # a work-group cut loop's condition or range is checked to agree at run time
                checked = levels is not None and "work" in levels
                inner = (ctrl or (not checked and self.expr_varying(head))
                         or self._varying_jump(s.body, levels))
                if isinstance(s, ast.For) and inner:
                    self.varying.add(s.target.id)
                self._walk_uniform(s.body, inner, levels if levels is not None else loop_levels)

    def _varying_jump(self, body, loop_levels=None) -> bool:
        """A break/continue/return under varying control makes the loop's trip count varying."""
        return self._first_varying_jump(body, loop_levels) is not None

    def _first_varying_jump(self, body, loop_levels=None):
        for s in body:
            for n in ast.walk(s):
                if (isinstance(n, ast.If) and not self._checked_if(n, loop_levels)
                        and self.expr_varying(n.test)):
                    for m in ast.walk(n):
                        if isinstance(m, ast.Break | ast.Continue | ast.Return):
                            return m
        return None

    def _per_lane_loop_reason(self, s: ast.For) -> str:
        """Why the counter of a barrier loop is not one value for the whole group."""
        jump = self._first_varying_jump(s.body, cut_levels(s))
        if jump is not None:
            word = type(jump).__name__.lower()
            return (f"this loop contains a barrier and a '{word}' (line {jump.loc.line}) under "
                    "a condition that differs between work-items, so they would reach the "
                    "barrier a different number of times. Make that condition uniform (from "
                    "arguments, group ids and sizes), or restructure so that every work-item "
                    "reaches the barrier: guard only the work with an if instead of jumping")
        others = [n for n in ast.walk(ast.Module(body=self.body, type_ignores=[]))
                  if n is not s and s.target.id in self._assigned_by_stmt(n)]
        if others:
            return (f"the loop variable '{s.target.id}' of a loop with a barrier must not be "
                    f"assigned elsewhere (line {others[0].loc.line}); use another name there")
        return ("this loop contains a barrier but runs under a condition that differs between "
                "work-items (an enclosing if or loop), so only some work-items would reach the "
                "barrier. Make the enclosing condition uniform, or move the loop out of it")

    def _assigned_by_stmt(self, n) -> list[str]:
        if isinstance(n, ast.Assign):
            return [x for t in n.targets for x in self._assigned_by(t)]
        if isinstance(n, ast.AugAssign | ast.For):
            return self._assigned_by(n.target)
        return []

    @staticmethod
    def _pairs(target, value):
        if isinstance(target, ast.Name):
            return [(target.id, value)]
        if isinstance(target, ast.Tuple):
            return [(t.id, v) for t, v in zip(target.elts, value.elts, strict=True)]
        return []

    # -- group scalars ----------------------------------------------------------------------
    def group_evaluable(self, node, scalars=None, same_builtins=frozenset()) -> bool:
        """Whether ``node`` has one value in the group: parameters, ``scalars`` (default the
        group scalars), builtins that do not vary (or vary only as ``same_builtins``) and
        pure helpers of those."""
        scalars = self.group_scalars if scalars is None else scalars
        for n in _walk_unresolved(node):
            if isinstance(n, ast.Name) and not hasattr(n, "resolved"):
                if n.id not in scalars and n.id not in self.params:
                    return False
            if isinstance(n, ast.Subscript) and not self._is_vector(n.value):
                return False
            if isinstance(n, ast.Call):
                name = builtin_name(n)
                resolved = getattr(n.func, "resolved", ("",))[0]
                if (resolved == "func" and not pure_helper(func_target(n))) or \
                        (table.is_varying(name) and name not in same_builtins):
                    return False
                if name is not None and is_cut_call(n):
                    return False
        return True

    def subgroup_evaluable(self, node) -> bool:
        """Whether ``node`` has one value in every lane of a sub-group (not necessarily
        across the group): group-level values, the sub-group's id and size, and the
        privates ``subgroup_scalars`` finds."""
        return self.group_evaluable(node, self.subgroup_scalars() | self.group_scalars,
                                    SUBGROUP_UNIFORM)

    def subgroup_scalars(self) -> set[str]:
        """Scalar privates every lane of a sub-group holds one value in: assigned only at
        the kernel's top level and in ifs around cuts (taken by the whole group, or masked:
        by whole sub-groups), never in a loop, from values the same within a sub-group."""
        if self._subgroup_scalars is not None:
            return self._subgroup_scalars
        top: list = []

        def collect(stmts):
            for s in stmts:
                if isinstance(s, ast.Assign | ast.AugAssign):
                    top.append(s)
                elif self.is_cut(s) and isinstance(s, ast.If):
                    collect(s.body)
                    collect(s.orelse)

        collect(self.body)
        assigns: dict[str, list] = {}
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                assigns.setdefault(node.id, [])
        for s in top:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                assigns[targets[0].id].append(s)
        stores: dict[str, int] = {}
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                stores[node.id] = stores.get(node.id, 0) + 1
        self._subgroup_scalars = {
            name for name, stmts in assigns.items()
            if stmts and len(stmts) == stores[name] and isinstance(self.env.get(name), str)
            and name not in self.forced and name not in self.params}
        while True:
            drop = {name for name in self._subgroup_scalars
                    if not all(self.subgroup_evaluable(s.value) for s in assigns[name])}
            if not drop:
                return self._subgroup_scalars
            self._subgroup_scalars -= drop

    def _top_level_assignments(self, stmts, out):
        for s in stmts:
            if isinstance(s, ast.Assign | ast.AugAssign):
                out.append(s)
            elif self.is_cut(s) and isinstance(s, ast.If | ast.While | ast.For):
                self._top_level_assignments(s.body, out)
                self._top_level_assignments(s.orelse, out)

    def _group_scalars(self):
        top: list = []
        self._top_level_assignments(self.body, top)
        top_ids = {id(s) for s in top}
        assigns: dict[str, list] = {}
        for s in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(s, ast.Assign):
                for name in self._assigned_by(s.targets[0]):
                    assigns.setdefault(name, []).append(s)
            elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                assigns.setdefault(s.target.id, []).append(s)
            elif isinstance(s, ast.For):
                assigns.setdefault(s.target.id, []).append(s)
        candidates = set()
        for name, stmts in assigns.items():
            if name in self.varying or name in self.params:
                continue
            if isinstance(self.env.get(name), ArrayT | StructT):
                continue
            if all(self._hoistable_shape(s, top_ids) for s in stmts):
                candidates.add(name)
        while True:
            drop = {
                name for name in candidates
                if not all(self._reads_ok(s, candidates) for s in assigns[name])
            }
            if not drop:
                break
            candidates -= drop
        self.group_scalars = candidates

    def _hoistable_shape(self, s, top_ids) -> bool:
        if isinstance(s, ast.For):
            return id(s) in self.cut_nodes
        if id(s) not in top_ids:
            return False
        if isinstance(s, ast.Assign):
            return isinstance(s.targets[0], ast.Name)
        return isinstance(s.target, ast.Name)

    def _reads_ok(self, s, scalars) -> bool:
        if isinstance(s, ast.For) and "work" in cut_levels(s):
            return True  # its range is checked to agree at run time when not group-evaluable
        node = s.iter if isinstance(s, ast.For) else s.value
        return self.group_evaluable(node, scalars)

    @staticmethod
    def _assigned_by(target):
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, ast.Tuple):
            return [t.id for t in target.elts if isinstance(t, ast.Name)]
        return []

    def is_hoisted(self, s) -> bool:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            return s.targets[0].id in self.group_scalars
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            return s.target.id in self.group_scalars
        return False

    # -- region tree ------------------------------------------------------------------------
    def build(self, stmts) -> list:
        items: list = []
        current: list = []
        pending: list = []

        def flush():
            items.extend(Hoisted(p) for p in pending)
            pending.clear()
            if current:
                items.append(Region(list(current)))
                current.clear()

        for s in stmts:
            if self.is_hoisted(s):
                name = s.targets[0].id if isinstance(s, ast.Assign) else s.target.id
                if any(name in reads(c) or name in self._assigned_in(c) for c in current):
                    flush()
                    items.append(Hoisted(s))
                else:
                    pending.append(s)
            elif self.is_cut(s):
                flush()
                items.append(self._cut_item(s))
            else:
                current.append(s)
        flush()
        return items

    @staticmethod
    def _assigned_in(stmt) -> set[str]:
        return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}

    def _cut_item(self, s):
        if isinstance(s, ast.Expr | ast.Assign):
            return Cut(s)
        if isinstance(s, ast.Break | ast.Continue):
            return GroupJump(s)
        if isinstance(s, ast.If):
            uniform = self.group_evaluable(s.test)
            item = CutIf(s, [], [], uniform, masked=not uniform and self._maskable_if(s))
            item.body, item.orelse = self.build(s.body), self.build(s.orelse)
            return item
        sub_only = cut_levels(s) == {"sub"}
        if isinstance(s, ast.While):
            if s.orelse:
                raise compile_error(s.loc, "while/else is not supported")
            uniform = self.group_evaluable(s.test)
            item = CutLoop(s, [], uniform, masked=sub_only and (
                not uniform or has_jumps(s.body)))
            return self._loop_body(item)
        if isinstance(s, ast.For):
            per_lane = s.target.id not in self.group_scalars  # e.g. inside a sub-group if
            if sub_only and (has_jumps(s.body) or per_lane or not self.group_evaluable(s.iter)):
                if s.orelse:
                    raise compile_error(s.loc, "for/else is not supported")
                return self._loop_body(CutLoop(s, [], False, masked=True))
            if per_lane:
                raise compile_error(s.loc, self._per_lane_loop_reason(s))
            # a range that reads memory or work-item values is evaluated per work-item and
            # checked to agree (codegen's uniform_range)
            return self._loop_body(CutLoop(s, [], self.group_evaluable(s.iter)))
        raise compile_error(s.loc, "unsupported statement around a barrier")

    def _loop_body(self, item: CutLoop) -> CutLoop:
        self._loops.append(item)
        try:
            item.body = self.build(item.node.body)
        finally:
            self._loops.pop()
        return item

    def _maskable_if(self, s: ast.If) -> bool:
        """An if around sub-group cuts (or jumps of a masked loop) and no work-group cut."""
        levels = cut_levels(s)
        if "work" in levels:
            return False
        jumps = has_jumps(s.body) or has_jumps(s.orelse)
        if jumps and not (self._loops and self._loops[-1].masked):
            return False
        return "sub" in levels or jumps

    # -- context variables ------------------------------------------------------------------
    def _context_vars(self) -> set[str]:
        needed: set[str] = set()
        self._collect_ue(self.tree, needed)
        return {n for n in needed if n not in self.group_scalars and n not in self.params}

    def _collect_ue(self, items, needed):
        for item in items:
            if isinstance(item, Region):
                item.ue = upward_exposed(item.stmts)
                needed |= item.ue
            elif isinstance(item, Cut):
                # A collective reads its arguments and writes its result as context arrays.
                needed |= reads(item.stmt.value)
                if isinstance(item.stmt, ast.Assign):
                    needed |= {t.id for t in item.stmt.targets if isinstance(t, ast.Name)}
            elif isinstance(item, CutLoop) and item.masked:
                head = item.node.test if isinstance(item.node, ast.While) else item.node.iter
                item.ue = reads(head)
                needed |= item.ue
                if isinstance(item.node, ast.For):
                    needed.add(item.node.target.id)
                self._collect_ue(item.body, needed)
            elif isinstance(item, CutIf):
                if not item.uniform:
                    item.ue = reads(item.node.test)
                    needed |= item.ue
                self._collect_ue(item.body, needed)
                self._collect_ue(item.orelse, needed)
            elif isinstance(item, CutLoop):
                if not item.uniform:
                    node = item.node
                    item.ue = reads(node.test if isinstance(node, ast.While) else node.iter)
                    needed |= item.ue
                self._collect_ue(item.body, needed)


def upward_exposed(stmts: list[ast.stmt]) -> set[str]:
    """Names a block reads before it has surely assigned them."""
    ue: set[str] = set()
    _ue_block(stmts, set(), ue)
    return ue


def _ue_block(stmts, defined: set[str], ue: set[str]) -> set[str]:
    for s in stmts:
        defined = _ue_stmt(s, defined, ue)
    return defined


def _ue_stmt(s, defined, ue):
    if isinstance(s, ast.Assign):
        ue |= reads(s.value) - defined
        target = s.targets[0]
        if isinstance(target, ast.Subscript):
            ue |= reads(target) - defined
        return defined | {n.id for n in ast.walk(target)
                          if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if isinstance(s, ast.AugAssign):
        ue |= (reads(s.value) | reads(s.target)) - defined
        if isinstance(s.target, ast.Name):
            ue.add(s.target.id) if s.target.id not in defined else None
            return defined | {s.target.id}
        return defined
    if isinstance(s, ast.If):
        ue |= reads(s.test) - defined
        a = _ue_block(s.body, set(defined), ue)
        b = _ue_block(s.orelse, set(defined), ue)
        return a & b
    if isinstance(s, ast.While):
        ue |= reads(s.test) - defined
        _ue_block(s.body, set(defined), ue)
        return defined
    if isinstance(s, ast.For):
        ue |= reads(s.iter) - defined
        _ue_block(s.body, defined | {s.target.id}, ue)
        return defined
    ue |= reads(s) - defined
    return defined
