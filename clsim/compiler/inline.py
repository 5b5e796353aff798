"""Inlining of ``@func`` helpers that contain barriers.

A helper with a barrier (or a collective) must run inside the caller's work-group loops, so its
body is copied into the caller at the call statement, its locals renamed apart and its
parameters bound. ``x = helper(...)`` works too when the helper's only ``return`` is its last
statement (``return sub_group_reduce_add(v)``). Helpers without barriers are not touched here:
they become ordinary functions.
"""

from __future__ import annotations

import ast
import itertools

from clsim.compiler.astwalk import walk
from clsim.compiler.frontend import Parsed, compile_error, func_target, without_docstring


def clone(node):
    """Deep copy of an AST that shares resolution records (which hold live objects)."""
    if isinstance(node, list):
        return [clone(n) for n in node]
    if not isinstance(node, ast.AST):
        return node
    new = type(node)()
    for name in node._fields:
        setattr(new, name, clone(getattr(node, name, None)))
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset", "loc", "resolved",
                 "vector_array", "component_view"):
        if hasattr(node, attr):
            setattr(new, attr, getattr(node, attr))
    return new


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, ast.AST | str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name):
        if hasattr(node, "resolved") or node.id not in self.mapping:
            return node
        target = self.mapping[node.id]
        if isinstance(target, str):
            node.id = target
            return node
        replacement = clone(target)
        if isinstance(replacement, ast.Name):
            replacement.ctx = node.ctx
            if hasattr(node, "loc"):  # a site found from the name (w[ib].d) is the helper's line
                replacement.loc = node.loc
        return replacement


def _assigned(stmts: list[ast.stmt]) -> set[str]:
    names = set()
    for stmt in stmts:
        for node in walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


class Inliner:
    def __init__(self, parsed: Parsed):
        self.parsed = parsed
        self.counter = itertools.count()

    def run(self) -> list[ast.stmt]:
        return self.block(self.parsed.tree.body, self.parsed)

    def block(self, stmts: list[ast.stmt], owner: Parsed) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            callee = self._cut_call(stmt, owner)
            if callee is not None:
                target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
                if target is not None and not isinstance(target, ast.Name):
                    # out[i] = helper(...): the value goes through a temporary first.
                    temp = ast.Name(id=f"_inl{next(self.counter)}", ctx=ast.Store())
                    temp.loc = stmt.loc
                    out.extend(self.expand(stmt.value, callee, temp))
                    load = ast.Name(id=temp.id, ctx=ast.Load())
                    load.loc = stmt.loc
                    stmt = clone(stmt)  # the parsed tree is cached: do not edit it in place
                    stmt.value = load
                    out.append(stmt)
                    continue
                out.extend(self.expand(stmt.value, callee, target))
                continue
            self._reject_nested_cut_calls(stmt, owner)
            for field in ("body", "orelse"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, self.block(getattr(stmt, field), owner))
            out.append(stmt)
        return out

    def _cut_call(self, stmt, owner: Parsed) -> Parsed | None:
        value_call = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
        if isinstance(stmt, ast.Expr) or value_call:
            target = func_target(stmt.value)
            if target is not None:
                callee = owner.callees[target.name]
                if callee.has_cut:
                    return callee
        return None

    def _reject_nested_cut_calls(self, stmt, owner: Parsed) -> None:
        if not any(callee.has_cut for callee in owner.callees.values()):
            return  # nothing to find (most kernels): the walks below, per statement, add up
        exprs = [n for n in walk(stmt) if isinstance(n, ast.Call)]
        body_nodes = set()
        for field in ("body", "orelse"):
            for sub in getattr(stmt, field, []) or []:
                body_nodes.update(id(n) for n in walk(sub))
        for call in exprs:
            if id(call) in body_nodes:
                continue
            target = func_target(call)
            if target is not None and owner.callees[target.name].has_cut:
                raise compile_error(
                    call.loc,
                    f"{target.name}() contains a barrier, so it must be called as a statement "
                    "on its own line (its result cannot be used in an expression)",
                )

    def expand(self, call: ast.Call, callee: Parsed, result=None) -> list[ast.stmt]:
        k = next(self.counter)
        prefix = f"{callee.fn.name}{k}_"
        body = without_docstring(clone(callee.tree.body))
        if len(call.args) != len(callee.params) or call.keywords:
            raise compile_error(
                call.loc, f"{callee.fn.name}() takes {len(callee.params)} positional arguments, "
                          f"got {len(call.args)}")
        assigned = _assigned(body)
        mapping: dict[str, ast.AST | str] = {}
        prologue: list[ast.stmt] = []
        for param, arg in zip(callee.params, call.args, strict=True):
            if param not in assigned and isinstance(arg, ast.Name | ast.Constant):
                mapping[param] = arg
            else:
                mapping[param] = prefix + param
                target = ast.Name(id=prefix + param, ctx=ast.Store())
                assign = ast.Assign(targets=[target], value=arg)
                assign.loc = call.loc
                target.loc = call.loc
                prologue.append(assign)
        for name in callee.locals - set(callee.params):
            mapping[name] = prefix + name
        for i, stmt in enumerate(body):
            if any(isinstance(n, ast.Return) for n in walk(stmt)):
                last = i == len(body) - 1 and isinstance(stmt, ast.Return)
                last_ok = last and (stmt.value is None or result is not None)
                if not last_ok:
                    node = next(n for n in walk(stmt) if isinstance(n, ast.Return))
                    raise compile_error(
                        node.loc,
                        f"{callee.fn.name}() contains a barrier, so it is inlined and cannot "
                        "return early or return a value; write results to a local array",
                    )
        tail = []
        if result is not None:
            if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
                raise compile_error(call.loc, f"{callee.fn.name}() returns no value; call it as a "
                                              "statement on its own line")
            ret = body[-1]
            value = _Renamer(mapping).visit(ret.value)
            assign = ast.Assign(targets=[clone(result)], value=value)
            assign.loc = ret.loc
            tail = [assign]
        body = [s for s in body if not isinstance(s, ast.Return)]
        renamed = [_Renamer(mapping).visit(s) for s in body] + tail
        return prologue + self.block(renamed, callee)


def inline_cut_helpers(parsed: Parsed) -> list[ast.stmt]:
    """The kernel body with every barrier-containing helper call replaced by its body."""
    return Inliner(parsed).run()
