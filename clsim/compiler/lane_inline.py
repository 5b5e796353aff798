"""Helpers inlined into a work-item's strided loop, so the loop can run lane-major.

``for b in range(lid, nb, wg): acc += q4_0_dot(blocks, row * nb + b, x, b * QK)`` runs, in the
usual form, one work-item's whole block loop after another: each block's dot product is a
32-step float chain in strict order, and nothing overlaps the chains of different
work-items (the Q4_0 GEMV spent its time there). With the helper's body in the loop, the
region can run lane-major (``lane_major``): the helper's own ``for j`` loop outside, the
work-items innermost, so the chains of a group's lanes advance side by side, each in its own
order (bit-identical results).

Only a helper that is a straight-line computation is inlined: assignments to its own
scalars, ``for`` loops over ``range`` of the same, and one ``return`` with a value as its
last statement; it calls no other helper and no builtin with effects (an atomic, a private
array's declaration) and stores to no memory. The call must be the whole right-hand side of
``x = h(...)`` or ``x += h(...)``, with names, constants or scalar expressions as arguments
(no pointer arithmetic, no element or field), directly in the body of a
``for`` over a three-argument ``range`` (the strided work-item loop) at the kernel's top level
or in its top-level ``if``s. Only for
modules without instruments in 1-D groups, the only ones that run lane-major; elsewhere the
helper stays a generated function.

Inlining is C's call, exactly: the arguments are evaluated once, in order, before the body
(``Inliner.expand``: a prologue assignment per argument that is not a plain name or
constant), a parameter takes its argument's type as a helper's does, and the returned
value is assigned as the call's value would be. Sites keep the helper's file, line and name,
so an error in an inlined helper reads as before.

Not here: deciding or emitting the lane-major form (``lane_major``, ``lane_emit``).
"""

from __future__ import annotations

import ast

from clsim.compiler.astwalk import walk
from clsim.compiler.frontend import Parsed, func_target, without_docstring
from clsim.compiler.inline import Inliner, clone
from clsim.compiler.pure_loops import pure_call


def inline_lane_helpers(body: list[ast.stmt], parsed: Parsed, arg_types: dict
                        ) -> list[ast.stmt]:
    """``body`` (the kernel's statements) with straight-line helper calls in its top-level
    strided loops replaced by the helpers' bodies."""
    if not any(_straight_line(callee) for callee in parsed.callees.values()):
        return body  # most kernels: nothing to inline
    inliner = Inliner(parsed)
    arrays = {name for name, t in arg_types.items() if not isinstance(t, str)}
    return _inline_block(body, parsed, inliner, arrays)


def _inline_block(body: list[ast.stmt], parsed: Parsed, inliner: Inliner, arrays: set[str]
                  ) -> list[ast.stmt]:
    """The strided loops of ``body`` and of the ifs in it (a sub-group's loop sits in
    ``if row < nrows:``), with their helper calls inlined."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.For) and _strided_range(stmt.iter):
            loop = clone(stmt)  # the parsed tree is cached: do not edit it in place
            loop.body = _inline_calls(loop.body, parsed, inliner, arrays)
            stmt = loop
        elif isinstance(stmt, ast.If):
            body_, orelse = (_inline_block(b, parsed, inliner, arrays)
                             for b in (stmt.body, stmt.orelse))
            if any(a is not b for a, b in zip([*body_, *orelse], [*stmt.body, *stmt.orelse],
                                               strict=True)):
                branch = clone(stmt)
                branch.body, branch.orelse = body_, orelse
                stmt = branch
        out.append(stmt)
    return out


def _strided_range(it) -> bool:
    return (isinstance(it, ast.Call) and getattr(it.func, "resolved", (None,))[0] == "range"
            and len(it.args) == 3 and not it.keywords)


def _inline_calls(stmts: list[ast.stmt], parsed: Parsed, inliner: Inliner, arrays: set[str]
                  ) -> list[ast.stmt]:
    out = []
    for stmt in stmts:
        callee = _lane_call(stmt, parsed, arrays)
        if callee is None:
            out.append(stmt)
            continue
        if isinstance(stmt, ast.Assign):
            out.extend(inliner.expand(stmt.value, callee, stmt.targets[0]))
            continue
        temp = ast.Name(id=f"_inl{next(inliner.counter)}", ctx=ast.Store())
        temp.loc = stmt.loc
        out.extend(inliner.expand(stmt.value, callee, temp))
        update = clone(stmt)
        update.value = ast.Name(id=temp.id, ctx=ast.Load())
        update.value.loc = stmt.loc
        out.append(update)
    return out


def _lane_call(stmt, parsed: Parsed, arrays: set[str]) -> Parsed | None:
    """The straight-line helper ``stmt`` calls as ``x = h(...)`` or ``x op= h(...)``, each
    argument a name, a constant or a scalar expression (``arrays``: the kernel's array and
    pointer parameters, which an expression must not use: ``x + 16`` would be a pointer
    assigned to a local)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AugAssign):
        target = stmt.target
    else:
        return None
    if not isinstance(target, ast.Name):
        return None
    fn = func_target(stmt.value)
    if fn is None or stmt.value.keywords:
        return None
    callee = parsed.callees.get(fn.name)
    if callee is None or not _straight_line(callee) or \
            len(stmt.value.args) != len(callee.params):
        return None
    if not all(_plain_argument(a, arrays) for a in stmt.value.args):
        return None
    return callee


def _plain_argument(arg, arrays: set[str]) -> bool:
    if isinstance(arg, ast.Name | ast.Constant):
        return True
    for n in ast.walk(arg):
        if isinstance(n, ast.Subscript | ast.Attribute) and not hasattr(n, "resolved"):
            return False  # an element, a field or a field's address
        if isinstance(n, ast.Name) and n.id in arrays:
            return False
        if isinstance(n, ast.Call) and not pure_call(n):
            return False
    return True


def _straight_line(callee: Parsed) -> bool:
    """Assignments to names, ``for`` loops over ``range`` of them, and a final ``return``
    of a value; no annotations (a declared type would convert), no other helper."""
    tree = callee.tree
    if callee.has_cut or tree.returns is not None or any(
            a.annotation is not None for a in tree.args.args):
        return False
    body = without_docstring(tree.body)
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return False
    if not _plain_block(body[:-1]):
        return False
    # no other helper, and only builtins without effects (no private_array(), no atomic)
    ranges = {id(n.iter) for n in walk(tree) if isinstance(n, ast.For)}
    return not any(isinstance(n, ast.Call) and id(n) not in ranges and not pure_call(n)
                   for n in walk(tree))


def _plain_block(stmts) -> bool:
    for s in stmts:
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
                return False
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                return False
        elif isinstance(s, ast.For):
            it = s.iter
            if (s.orelse or not isinstance(s.target, ast.Name) or not isinstance(it, ast.Call)
                    or getattr(it.func, "resolved", (None,))[0] != "range"
                    or not _plain_block(s.body)):
                return False
        else:
            return False
    return True
