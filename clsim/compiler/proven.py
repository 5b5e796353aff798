"""Regions of 2-D work-groups whose every access is proven in range before they run.

The usual work-item loop ``for _lid`` decodes ``_lx = _lid % _L0``, ``_ly = _lid // _L0`` and
checks every index: a division and an exit per access, so LLVM vectorises nothing (a tiled
matmul's ``acc += a_tile[ty, kk] * b_tile[kk, tx]``). When every index of a region is an
affine function of values whose range the group knows before the region runs, one check per
index before the region proves them all, and the region runs as

    for _ly in range(_L1):
        for _lx in range(_L0):
            _lid = _ly * _L0 + _lx
            <the work-item's statements, unchecked>

which is the usual order of work-items and of each one's operations: results, stores and
races are today's bit for bit. A failed proof runs the usual form, which reports the first
failing work-item as always; the proof is conservative (an access under a condition is
proven for every lane), never optimistic.

Values with a known range (``Var``): local and global ids (``0 .. _L{d} - 1`` plus the
group's offset), the variable of a ``for`` inside the region over a uniform ``range`` with
a step of at least 1, and a context private the region reads but never writes (its values
in the context array, scanned before the region). A private the region assigns once at its
top level from such an affine value stands for that value. Every integer in an index must
be 32 or 64-bit signed and the sum of the terms' magnitudes below 2**31, so no arithmetic
in it can wrap and the proven value is the value the work-item computes.

Refused (the usual form runs): helper calls, integer division or remainder (their error),
vectors, structs, views, ``while``, ``return``, ``break``/``continue``, atomics, private
arrays, and any index of another form.

Not here: emitting the proof and the loops (``proven_emit``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from clsim.compiler import ctypes as ct
from clsim.compiler.diagnostics import builtin_name
from clsim.compiler.emit_expr import constant_value, folded_division
from clsim.compiler.lane_major import INT_FAILING
from clsim.compiler.pure_loops import pure_call

_SIGNED = ("int32", "int64")
_IDS = {"get_local_id": "lid", "get_global_id": "gid"}


@dataclass(frozen=True)
class Var:
    """A value whose range the group knows: ("lid" | "gid", dim), ("loop", For) or
    ("ctx", name). A loop is its ``For`` node, which compares and hashes by identity."""

    kind: str
    key: object


@dataclass(frozen=True)
class Term:
    """``sign * product(factors) * var`` (var None: a uniform term); factors are uniform
    nodes, at most one beside a var (two 32-bit ones are joined: ``_scaled``) and two
    without."""

    sign: int
    factors: tuple
    var: Var | None


@dataclass
class ProvenPlan:
    loops: list = field(default_factory=list)  # For nodes whose variable is a Var
    ctx: list = field(default_factory=list)  # context privates scanned for their range
    accesses: list = field(default_factory=list)  # (buffer, [[Term] per dimension])
    terms: dict = field(default_factory=dict)  # id(Subscript) -> its [[Term] per dimension]


class _Refuse(Exception):
    pass


def plan(stmts: list, analysis, storage: dict, env: dict, remat: dict
         ) -> ProvenPlan | None:
    """The proof plan of a region's statements, or None when some access cannot be proven
    or something in the region could fail another way."""
    written = {n.id for s in stmts for n in ast.walk(s)
               if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    walker = _Walker(analysis, storage, env, remat, written)
    try:
        walker.block(stmts, top=True)
    except _Refuse:
        return None
    if not walker.plan.accesses:
        return None
    return walker.plan


class _Walker:
    def __init__(self, analysis, storage, env, remat, written):
        self.analysis, self.storage, self.env = analysis, storage, env
        self.remat, self.written = remat, written
        # context privates whose ranges are read before something assigns them
        self.stale: set[str] = set()
        self.plan = ProvenPlan()
        self.loops: dict[str, ast.For] = {}  # enclosing loops by variable
        self.defs: dict[str, list] = {}  # region privates standing for affine values

    def block(self, stmts, top=False) -> None:
        for s in stmts:
            self.stmt(s, top)

    def stmt(self, s, top: bool) -> None:
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise _Refuse
            self.expr(s.value)
            self.target(s.targets[0])
            if top and isinstance(s.targets[0], ast.Name):
                self._define(s.targets[0].id, s.value)
            elif isinstance(s.targets[0], ast.Name):
                self.defs.pop(s.targets[0].id, None)
        elif isinstance(s, ast.AugAssign):
            if isinstance(s.op, INT_FAILING) and ct.is_int(getattr(s.target, "ctype", "")):
                raise _Refuse
            self.expr(s.value)
            self.target(s.target)
            if isinstance(s.target, ast.Name):
                self.defs.pop(s.target.id, None)
        elif isinstance(s, ast.For):
            self.loop(s)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.Pass):
            pass
        else:
            raise _Refuse

    def _define(self, name: str, value) -> None:
        self.defs.pop(name, None)
        if self.storage.get(name, "local") != "local":
            return
        try:
            terms = self.affine(value)
        except _Refuse:
            return
        self.defs[name] = terms

    def target(self, t) -> None:
        if isinstance(t, ast.Name):
            if self.storage.get(t.id, "local") not in ("local", "ctx", "remat") or \
                    not isinstance(self.env.get(t.id), str) or t.id in self.loops:
                raise _Refuse
        elif isinstance(t, ast.Subscript):
            self.access(t)
        else:
            raise _Refuse

    def loop(self, s: ast.For) -> None:
        it = s.iter
        if (s.orelse or not isinstance(s.target, ast.Name) or not isinstance(it, ast.Call)
                or getattr(it.func, "resolved", (None,))[0] != "range"
                or self.env.get(s.target.id) not in _SIGNED
                or not 1 <= len(it.args) <= 3 or it.keywords
                or not all(self.analysis.group_evaluable(a)
                           and getattr(a, "ctype", None) in _SIGNED for a in it.args)):
            raise _Refuse
        name = s.target.id
        if self.storage.get(name, "local") != "local" or name in self.loops:
            raise _Refuse
        if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
               for b in s.body for n in ast.walk(b)):
            raise _Refuse  # the body moves its own variable
        self.plan.loops.append(s)
        self.loops[name] = s
        # a private the loop assigns changes from one iteration to the next, and after it
        for b in s.body:
            for n in ast.walk(b):
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                    self.defs.pop(n.id, None)
        self.block(s.body)
        del self.loops[name]

    def expr(self, node) -> None:
        if isinstance(node, ast.Subscript):
            self.access(node)  # its indices are visited there
            return
        if isinstance(node, ast.Lambda | ast.Tuple | ast.List | ast.NamedExpr | ast.Starred):
            raise _Refuse
        if isinstance(node, ast.Attribute) and not hasattr(node, "resolved"):
            raise _Refuse  # a field
        if _failing_division(node):
            raise _Refuse
        if isinstance(node, ast.Call) and (not pure_call(node) or any(
                isinstance(getattr(a, "ctype", None), ct.PtrT | ct.ArrayT)
                for a in node.args)):
            raise _Refuse
        if isinstance(node, ast.Name) and not hasattr(node, "resolved") and \
                not isinstance(self.env.get(node.id), str):
            raise _Refuse
        if not isinstance(getattr(node, "ctype", "int32"), str):
            raise _Refuse  # vectors, structs, pointers
        if isinstance(node, ast.Attribute):
            return  # a resolved name (np.float32, clsim.fmax)
        children = node.args if isinstance(node, ast.Call) else ast.iter_child_nodes(node)
        for child in children:
            if isinstance(child, ast.expr):
                self.expr(child)

    def access(self, n: ast.Subscript) -> None:
        arrt = getattr(n.value, "ctype", None)
        if not (isinstance(n.value, ast.Name) and isinstance(arrt, ct.ArrayT)
                and isinstance(arrt.dtype, str) and getattr(arrt, "view", None) is None
                and getattr(arrt, "pointee", None) is None
                and self.storage.get(n.value.id) in ("param", "larray")):
            raise _Refuse
        indices = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
        if len(indices) != arrt.ndim:
            raise _Refuse
        dims = []
        for ix in indices:
            self.expr(ix)
            dims.append(self.affine(ix))
        self.plan.accesses.append((n.value.id, dims))
        self.plan.terms[id(n)] = dims

    # -- affine forms ---------------------------------------------------------------------
    def affine(self, node) -> list[Term]:
        if getattr(node, "ctype", None) not in _SIGNED:
            raise _Refuse
        if self.uniform(node):  # one factor, however it is computed
            return [Term(1, (node,), None)]
        call = builtin_name(node) if isinstance(node, ast.Call) else None
        if call in _IDS:
            return [Term(1, (), Var(_IDS[call], _dim(node)))]
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return [Term(-t.sign, t.factors, t.var) for t in self.affine(node.operand)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            right = self.affine(node.right)
            if isinstance(node.op, ast.Sub):
                right = [Term(-t.sign, t.factors, t.var) for t in right]
            return self.affine(node.left) + right
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for g, other in ((node.left, node.right), (node.right, node.left)):
                factor = self._factor(g)
                if factor is not None:
                    return [_scaled(t, factor) for t in self.affine(other)]
            raise _Refuse
        raise _Refuse

    def uniform(self, node) -> bool:
        return (self.analysis.group_evaluable(node)
                and not any(isinstance(n, ast.Name) and n.id in self.written
                            for n in ast.walk(node))
                and all(getattr(n, "ctype", "int32") in _SIGNED for n in ast.walk(node)
                        if isinstance(n, ast.expr) and ct.is_int(getattr(n, "ctype", "")))
                and not any(_failing_division(n) and not _by_safe_constant(n)
                            for n in ast.walk(node)))

    def _factor(self, node):
        """A uniform factor for ``node``: itself, or the one uniform value a private
        stands for (``nb = ncols // QK``: ``row * nb``); else None."""
        if self.uniform(node):
            return node
        if isinstance(node, ast.Name) and node.id not in self.remat:
            terms = self.defs.get(node.id)
            if terms is not None and len(terms) == 1 and terms[0].sign == 1 \
                    and terms[0].var is None and len(terms[0].factors) == 1:
                return terms[0].factors[0]
        return None

    def _name(self, name: str) -> list[Term]:
        if name in self.loops:
            return [Term(1, (), Var("loop", self.loops[name]))]
        if name in self.remat:  # an expression of ids and fixed values (remat.py)
            return self.affine(self.remat[name])
        if name in self.defs:
            return self.defs[name]
        kind = self.storage.get(name, "local")
        if kind == "ctx" and name not in self.written and name not in self.stale \
                and self.env.get(name) in _SIGNED:
            if name not in self.plan.ctx:
                self.plan.ctx.append(name)
            return [Term(1, (), Var("ctx", name))]
        raise _Refuse


def _failing_division(node) -> bool:
    """An integer division or remainder that may record an error: not one of two constants
    (``QK // 2``), which the module folds."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, INT_FAILING)
            and ct.is_int(getattr(node, "ctype", "float32"))):
        return False
    op = "%" if isinstance(node.op, ast.Mod) else "//"
    return isinstance(node.op, ast.Div) or folded_division(node, op, node.ctype) is None


def _by_safe_constant(node) -> bool:
    """``a // K`` or ``a % K`` with K a constant other than 0 and -1: it cannot fail."""
    return (isinstance(node.op, ast.FloorDiv | ast.Mod)
            and constant_value(node.right) not in (None, 0, -1))


def _dim(call: ast.Call) -> int:
    if len(call.args) == 1 and isinstance(call.args[0], ast.Constant) and \
            call.args[0].value in (0, 1):
        return call.args[0].value
    raise _Refuse


def _scaled(t: Term, g) -> Term:
    if len(t.factors) < (1 if t.var is not None else 2):
        return Term(t.sign, (*t.factors, g), t.var)
    if t.var is not None and len(t.factors) == 1 and all(
            getattr(f, "ctype", None) == "int32" for f in (t.factors[0], g)):
        # ``(row * nb + b) * 16``: the two 32-bit factors as one, their product exact in 64
        # bits; proven_emit bounds it below 2^31 as any factor, and with it every partial
        # product the kernel forms (|var * f| <= |var * f * g| when g != 0)
        return Term(t.sign, (_product(t.factors[0], g),), t.var)
    raise _Refuse  # magnitudes are bounded factor by factor (proven_emit)


def _product(f, g) -> ast.BinOp:
    node = ast.BinOp(left=f, op=ast.Mult(), right=g)
    node.ctype = "int64"
    node.loc = getattr(f, "loc", None)
    return node
