"""Helpers whose result depends on their arguments only (``splitWork(a, b)``: arithmetic on
its parameters): no work-item builtin, no memory read, no helper that is not pure. A call
of one with uniform arguments is uniform, so a barrier loop may run ``splitWork(n, 16)``
times (the region builder's uniformity analysis asks here)."""

from __future__ import annotations

import ast

from clsim.compiler import builtins as table
from clsim.compiler.diagnostics import builtin_name
from clsim.compiler.frontend import func_target, parse

_PURE: dict[int, bool] = {}


def pure_helper(kfn, seen=()) -> bool:
    key = id(kfn)
    if key in _PURE and _PURE[key][0] is kfn:
        return _PURE[key][1]
    if kfn in seen:
        return False  # recursion is refused elsewhere
    parsed = parse(kfn)
    pure = True
    for node in ast.walk(parsed.tree):
        if isinstance(node, ast.Subscript):
            pure = False  # a memory read (or a vector's component: kept simple)
        elif isinstance(node, ast.Call):
            callee = func_target(node)
            if callee is not None and not pure_helper(callee, (*seen, kfn)):
                pure = False
            elif callee is None and (table.is_varying(builtin_name(node)) or
                                     table.is_cut(builtin_name(node))):
                pure = False
        if not pure:
            break
    _PURE[key] = (kfn, pure)
    return pure
