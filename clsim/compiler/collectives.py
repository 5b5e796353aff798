"""Normalisation of collectives: each call becomes a cut statement of its own.

``y = 2 * sub_group_reduce_add(x[i])`` becomes::

    _cl_a0_0 = x[i]                      # argument, per work-item (ends the region before)
    _cl_r0 = sub_group_reduce_add(_cl_a0_0)   # the cut: computed per sub-group
    y = 2 * _cl_r0                       # the next region reads the result

so the region builder sees cut statements only in two shapes (``Expr(sub_group_barrier(...))``
and ``Assign(_cl_rK, collective(names...))``) and the arguments and results are context arrays.
A collective in a ``while`` condition is evaluated before the loop and again at the end of its
body. Collectives under ``and``/``or``/``x if c else y`` are refused: moving them out would
evaluate them (and their arguments) where the kernel did not.
"""

from __future__ import annotations

import ast
import itertools

from clsim.compiler.builtins.collectives import COLLECTIVES
from clsim.compiler.diagnostics import builtin_name, compile_error
from clsim.compiler.inline import clone

ARG_PREFIX = "_cl_a"
RESULT_PREFIX = "_cl_r"


def _name(id_: str, ctx, loc) -> ast.Name:
    node = ast.Name(id=id_, ctx=ctx)
    node.loc = loc
    node.lineno = loc.line
    node.col_offset = 0
    return node


def _assign(target: str, value, loc) -> ast.Assign:
    stmt = ast.Assign(targets=[_name(target, ast.Store(), loc)], value=value)
    stmt.loc = loc
    stmt.lineno = loc.line
    stmt.col_offset = 0
    return stmt


def _marker(kind: str, arg, loc) -> ast.Call:
    func = _name(f"__cvt_{kind}", ast.Load(), loc)
    func.resolved = ("builtin", f"__cvt_{kind}")
    call = ast.Call(func=func, args=[arg], keywords=[])
    call.loc = loc
    return call


class _Extractor(ast.NodeTransformer):
    """Replaces collective calls in one statement's expressions by result names."""

    def __init__(self, owner: Normalizer):
        self.owner = owner
        self.out: list[ast.stmt] = []
        self.conditional = 0

    def visit_BoolOp(self, node):
        node.values[0] = self.visit(node.values[0])
        self.conditional += 1
        node.values[1:] = [self.visit(v) for v in node.values[1:]]
        self.conditional -= 1
        return node

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        self.conditional += 1
        node.body = self.visit(node.body)
        node.orelse = self.visit(node.orelse)
        self.conditional -= 1
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        name = builtin_name(node)
        if name not in COLLECTIVES:
            return node
        if name == "sub_group_barrier":
            raise compile_error(node.loc, "sub_group_barrier() is a statement on its own line")
        if self.conditional:
            raise compile_error(node.loc, f"{name}() under 'and'/'or'/'if-else' is evaluated by "
                                          "only some work-items; assign it to a variable on its "
                                          "own line first")
        if node.keywords:
            raise compile_error(node.loc, "keyword arguments are not supported in kernels")
        return self.owner.lift(node, COLLECTIVES[name], self.out)


class Normalizer:
    def __init__(self):
        self.counter = itertools.count()
        self.temps: set[str] = set()

    def lift(self, call: ast.Call, c, out: list[ast.stmt]) -> ast.Name:
        k = next(self.counter)
        loc = call.loc
        args = []
        for j, arg in enumerate(call.args):
            kind = c.args[j] if j < len(c.args) else "value"
            if kind == "const":
                args.append(arg)
                continue
            temp = f"{ARG_PREFIX}{k}_{j}"
            self.temps.add(temp)
            out.append(_assign(temp, _marker(kind, arg, loc), loc))
            args.append(_name(temp, ast.Load(), loc))
        call.args = args
        result = f"{RESULT_PREFIX}{k}"
        self.temps.add(result)
        out.append(_assign(result, call, loc))
        return _name(result, ast.Load(), loc)

    def extract(self, node) -> tuple[list[ast.stmt], object]:
        ex = _Extractor(self)
        new = ex.visit(node)
        return ex.out, new

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s) -> list[ast.stmt]:
        if isinstance(s, ast.If):
            pre, s.test = self.extract(s.test)
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return [*pre, s]
        if isinstance(s, ast.For):
            pre, s.iter = self.extract(s.iter)
            s.body = self.block(s.body)
            return [*pre, s]
        if isinstance(s, ast.While):
            pre, s.test = self.extract(s.test)
            s.body = self.block(s.body)
            if pre:
                if _continues(s.body):
                    raise compile_error(s.loc, "a collective in a while condition needs a loop "
                                               "without 'continue'; compute the condition into "
                                               "a variable at the end of the body instead")
                s.body = s.body + [clone(p) for p in pre]
            return [*pre, s]
        if isinstance(s, ast.Expr):
            if builtin_name(s.value) == "sub_group_barrier":
                return [s]
            pre, value = self.extract(s.value)
            if pre and isinstance(value, ast.Name):
                return pre  # a collective whose result is unused
            s.value = value
            return [*pre, s]
        if isinstance(s, ast.Assign | ast.AugAssign | ast.Return):
            pre: list[ast.stmt] = []
            if getattr(s, "value", None) is not None:
                more, s.value = self.extract(s.value)
                pre += more
            for field in ("targets", "target"):
                if hasattr(s, field):
                    more, new = self.extract(getattr(s, field)) if field == "target" else (
                        self._targets(s.targets))
                    pre += more
                    setattr(s, field, new)
            return [*pre, s]
        return [s]

    def _targets(self, targets):
        pre: list[ast.stmt] = []
        out = []
        for t in targets:
            more, new = self.extract(t)
            pre += more
            out.append(new)
        return pre, out


def _continues(stmts) -> bool:
    """A ``continue`` that targets the loop whose body is ``stmts``."""
    for s in stmts:
        if isinstance(s, ast.Continue):
            return True
        if isinstance(s, ast.If) and (_continues(s.body) or _continues(s.orelse)):
            return True
    return False


def normalize_collectives(body: list[ast.stmt]) -> tuple[list[ast.stmt], set[str]]:
    """The body with every collective lifted into its own cut statement, and the names of the
    temporaries (which must live in context arrays)."""
    norm = Normalizer()
    return norm.block(clone(body)), norm.temps  # a copy: the parsed tree is cached and reused
