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
    plain locals: without barriers ``lid`` is a plain local, and ``lane_major`` must still
    see ``range(lid, n, wg)``) stored exactly once, by a top-level statement whose value is a
    work-item id or an integer ``+ - *`` of ids, fixed values and aliases found before it."""
    stores: dict[str, int] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    found: dict[str, ast.AST] = {}

    def leaf(node) -> bool:
        if isinstance(node, ast.Call):
            return (builtin_name(node) in _IDS | _FIXED
                    and all(isinstance(a, ast.Constant) for a in node.args))
        # a constant of the module, an alias, or a parameter the kernel never assigns
        return hasattr(node, "resolved") or node.id in found or (
            node.id in params and node.id not in stores)

    for stmt in body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            continue
        name, value = stmt.targets[0].id, stmt.value
        if name in candidates and stores.get(name) == 1 and integer_terms(value, leaf):
            found[name] = value
    return found


def is_id_call(value: ast.AST, name: str) -> bool:
    """Whether an alias's expression is the id builtin ``name`` itself."""
    return isinstance(value, ast.Call) and builtin_name(value) == name


def integer_terms(value, leaf) -> bool:
    """Whether ``value`` is integer constants and names or calls ``leaf`` accepts, joined by
    ``+ - *``: an expression that gives the same value wherever it is computed again."""
    if isinstance(value, ast.Call):
        return leaf(value)
    t = getattr(value, "ctype", None)
    if not (isinstance(t, str) and t.startswith(("int", "uint"))):
        return False
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):
        return leaf(value)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add | ast.Sub | ast.Mult):
        return integer_terms(value.left, leaf) and integer_terms(value.right, leaf)
    return False
