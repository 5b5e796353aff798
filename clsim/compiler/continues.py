"""``if c: continue`` after a loop's last barrier, as a guard of the rest of the body.

ggml's flash-attention loops load a tile, wait at a barrier, then skip the work of the rows a
work-item does not own: ``barrier(...); if (my_row >= n) continue; ...work...``. Every
work-item still reaches each barrier once per iteration, as OpenCL requires; but a
``continue`` under a condition that differs between work-items is a jump the region builder
cannot split a barrier loop at. When no barrier follows it in the body, the ``continue`` is
the same as running the rest of the body under ``not c``, which is what this pass writes
(``if c: A; continue`` then ``rest`` becomes ``if c: A`` ``else: rest``).
"""

from __future__ import annotations

import ast

from clsim.compiler import builtins as table
from clsim.compiler.diagnostics import builtin_name


def _has_cut(nodes) -> bool:
    return any(isinstance(n, ast.Call) and table.is_cut(builtin_name(n))
               for root in nodes for n in ast.walk(root))


def _jumps(nodes) -> bool:
    """A break or continue of the loop itself among ``nodes`` (not of a nested loop)."""
    for node in nodes:
        if isinstance(node, ast.Break | ast.Continue):
            return True
        if isinstance(node, ast.If) and _jumps(node.body + node.orelse):
            return True
    return False


def _guarded(body: list) -> list:
    for k, stmt in enumerate(body):
        if not (isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and
                isinstance(stmt.body[-1], ast.Continue)):
            continue
        rest, prefix = body[k + 1:], stmt.body[:-1]
        if not rest or _has_cut(rest) or _has_cut(prefix) or _jumps(prefix):
            continue
        stmt.body = prefix or [_located(ast.Pass(), stmt.body[-1].loc)]
        stmt.orelse = _guarded(rest)
        return body[:k + 1]
    return body


def _located(node, loc):
    node.loc = loc
    return node


def guard_continues(body: list) -> list:
    """``body`` with each barrier loop's trailing ``if c: continue`` turned into a guard
    (in place: the caller passes a body it owns)."""
    for root in body:
        for node in ast.walk(root):
            if isinstance(node, ast.For | ast.While) and _has_cut(node.body):
                node.body = _guarded(node.body)
    return body
