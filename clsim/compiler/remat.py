"""Private copies of work-item ids recomputed where they are read, not kept in context arrays.

``lid = get_local_id(0)`` at the top of a kernel is read after barriers, so the region
analysis gives it a context array (``v_lid__c[_lid]``) like any value crossing a region.
Reading it back costs a load per use and hides from LLVM that ``scratch[lid]`` is the
contiguous ``scratch[_lid]``, which a vectorised work-item loop needs. An id is a pure
function of the work-item, so a variable assigned once, at the kernel's top level, from a
work-item id builtin is read as that builtin again (``_lx``): the same value in every region.

Not here: deciding storage (``module._storage``) or emitting reads (``codegen.read_var``).
"""

from __future__ import annotations

import ast

from clsim.compiler.diagnostics import builtin_name

# Varying work-item ids whose code is a cheap expression of the loop's own counters.
_IDS = frozenset({"get_local_id", "get_global_id", "get_local_linear_id",
                  "get_global_linear_id", "get_sub_group_local_id", "get_sub_group_id"})


def id_aliases(body: list, candidates: set[str]) -> dict[str, ast.AST]:
    """name -> the id call it holds, for each of ``candidates`` (context variables) stored
    exactly once, by a top-level ``name = get_local_id(d)``-like statement, with constant
    arguments."""
    stores: dict[str, int] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    found = {}
    for stmt in body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            continue
        name, value = stmt.targets[0].id, stmt.value
        if (name in candidates and stores.get(name) == 1 and builtin_name(value) in _IDS
                and all(isinstance(a, ast.Constant) for a in value.args)):
            found[name] = value
    return found
