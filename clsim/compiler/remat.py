"""Privates that are functions of the work-item's ids, recomputed where they are read, not
kept in context arrays.

``lid = get_local_id(0)`` or ``row = get_group_id(1) * TILE + ty`` at the top of a kernel is
read after barriers, so the region analysis gives it a context array (``v_row__c[_lid]``) like
any value crossing a region. Reading it back costs a load per use and hides from LLVM that
``scratch[lid]`` is the contiguous ``scratch[_lx]`` and ``a[row * K + t + tx]`` a contiguous
row: a vectorised work-item loop needs both (a tiled matmul's loads: a loaded index is a
gather LLVM cannot bound). A variable assigned once, at the kernel's top level, from ids
(local, global, sub-group), values fixed for the whole launch or group (group ids, sizes,
constants, parameters the kernel never assigns) and the integer operators ``+ - *`` is read
as that expression again: the same value in every region, wrapping included.

Not here: deciding storage (``module._storage``) or emitting reads (``codegen.read_var``).
"""

from __future__ import annotations

import ast

from clsim.compiler.diagnostics import builtin_name

# Varying work-item ids whose code is a cheap expression of the loop's own counters.
_IDS = frozenset({"get_local_id", "get_global_id", "get_local_linear_id",
                  "get_global_linear_id", "get_sub_group_local_id", "get_sub_group_id"})
# Fixed for the work-group: a read gives the same value anywhere in it.
_FIXED = frozenset({"get_group_id", "get_local_size", "get_enqueued_local_size",
                    "get_num_groups", "get_global_size", "get_global_offset"})


def id_aliases(body: list, candidates: set[str], params: set[str]) -> dict[str, ast.AST]:
    """name -> the expression it holds, for each of ``candidates`` (context variables and
    plain locals: a kernel without barriers has no context variables, and its ``lid`` must
    still read as the id for ``lane_major`` to see ``range(lid, n, wg)``) stored exactly once, by a top-level statement whose value is a work-item id or an
    integer ``+ - *`` of ids, fixed values and aliases found before it (module docstring)."""
    stores: dict[str, int] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    found: dict[str, ast.AST] = {}
    for stmt in body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            continue
        name, value = stmt.targets[0].id, stmt.value
        if name in candidates and stores.get(name) == 1 and _recomputable(
                value, stores, found, params):
            found[name] = value
    return found


def is_id_call(value: ast.AST, name: str) -> bool:
    """Whether an alias's expression is the id builtin ``name`` itself."""
    return isinstance(value, ast.Call) and builtin_name(value) == name


def _recomputable(value, stores: dict, found: dict, params: set[str]) -> bool:
    if isinstance(value, ast.Call):
        return (builtin_name(value) in _IDS | _FIXED
                and all(isinstance(a, ast.Constant) for a in value.args))
    if not isinstance(getattr(value, "ctype", None), str) or not \
            getattr(value, "ctype", "").startswith(("int", "uint")):
        return False
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):
        # a constant of the module, an alias, or a parameter the kernel never assigns
        return hasattr(value, "resolved") or value.id in found or (
            value.id in params and value.id not in stores)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add | ast.Sub | ast.Mult):
        return (_recomputable(value.left, stores, found, params)
                and _recomputable(value.right, stores, found, params))
    return False
