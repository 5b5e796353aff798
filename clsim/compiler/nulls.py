"""Null pointer arguments: a kernel launched with ``None`` for a buffer (an optional input,
e.g. a bias) is compiled with that buffer absent. ``x is None`` / ``x is not None`` on such a
parameter is a compile-time constant, and the branch not taken is dropped before typing, so
``if bias is not None: acc += bias[i]`` compiles for both launches. Any other use of a null
parameter is a compile error at its line.
"""

from __future__ import annotations

import ast

from clsim.compiler.astwalk import walk
from clsim.compiler.inline import clone

NULL = "null"  # the argument type of a None buffer


def _null_test(node, nulls: set[str], buffers: set[str]):
    """True/False when ``node`` is ``p is None`` / ``p is not None`` on a parameter, or
    ``p`` / ``not p`` tested for truth (C's ``if (p)``, ``p ? a : b``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _null_test(node.operand, nulls, buffers)
        return None if inner is None else not inner
    if isinstance(node, ast.Name) and (node.id in nulls or node.id in buffers):
        return node.id not in nulls
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1
            and isinstance(node.ops[0], ast.Is | ast.IsNot)
            and isinstance(node.left, ast.Name)
            and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value is None):
        return None
    name = node.left.id
    if name not in nulls and name not in buffers:
        return None
    is_none = name in nulls
    return is_none if isinstance(node.ops[0], ast.Is) else not is_none


class _Folder(ast.NodeTransformer):
    def __init__(self, nulls, buffers):
        self.nulls, self.buffers = nulls, buffers

    def visit_Compare(self, node):
        value = _null_test(node, self.nulls, self.buffers)
        if value is None:
            return self.generic_visit(node)
        const = ast.Constant(value=value)
        const.loc = node.loc
        return const

    def visit_IfExp(self, node):
        value = _null_test(node.test, self.nulls, self.buffers)
        if value is None:
            return self.generic_visit(node)
        return self.visit(node.body if value else node.orelse)

    def visit_If(self, node):
        value = _null_test(node.test, self.nulls, self.buffers)
        if value is None:
            return self.generic_visit(node)
        kept = node.body if value else node.orelse
        out = []
        for stmt in kept:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        if not out:
            empty = ast.Pass()
            empty.loc = node.loc
            out = [empty]
        return out


def fold_null_tests(body: list[ast.stmt], arg_types: dict) -> list[ast.stmt]:
    """``body`` with null tests on parameters decided. The parsed tree is cached and shared
    between launches, so a body with a null test is folded on a copy."""
    # a parameter the body reassigns is a pointer variable (pointer_params): tested at run time
    assigned = {n.id for stmt in body for n in walk(stmt)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    nulls = {n for n, t in arg_types.items() if t == NULL}  # stays None: src2 = src2 + off
    buffers = {n for n, t in arg_types.items() if t != NULL and not isinstance(t, str)
               and not hasattr(t, "fields")} - assigned  # (a struct by value is no pointer)
    if not any(_null_test(n.test, nulls, buffers) is not None
               if isinstance(n, ast.If | ast.IfExp) else
               isinstance(n, ast.Compare) and any(isinstance(op, ast.Is | ast.IsNot)
                                                  for op in n.ops)
               for stmt in body for n in walk(stmt)):
        return body
    body = clone(body)
    folder = _Folder(nulls, buffers)
    out = []
    for stmt in body:
        new = folder.visit(stmt)
        out.extend(new if isinstance(new, list) else [new])
    return out
