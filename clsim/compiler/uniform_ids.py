"""``get_global_id(d)`` in a dimension whose work-groups are one work-item wide: the group id
(plus the offset), the same value for every work-item of a group.

ggml launches flash attention with local size (64, 1, 1) and takes the head and split from
``get_global_id(1)``/``get_global_id(2)``; the kernel is compiled for its local size, so
writing those ids as ``get_group_id(d) + get_global_offset(d)`` (C's definition with a local
size of 1) lets the region builder see that a barrier loop bounded by them is uniform.
"""

from __future__ import annotations

import ast


def uniform_ids(body: list, local_size: tuple[int, ...]) -> list:
    """``body`` (owned by the caller) with each such ``get_global_id(d)`` rewritten."""
    for root in body:
        for node in ast.walk(root):
            if not (isinstance(node, ast.Call) and
                    getattr(node.func, "resolved", (None, None)) == ("builtin",
                                                                      "get_global_id")):
                continue
            arg = node.args[0] if len(node.args) == 1 else None
            d = arg.value if isinstance(arg, ast.Constant) else None
            if not isinstance(d, int) or not 0 <= d < 3 or local_size[d] != 1:
                continue
            group = _call("get_group_id", d, node)
            offset = _call("get_global_offset", d, node)
            new = ast.BinOp(left=group, op=ast.Add(), right=offset)
            new.loc = node.loc
            node.__class__ = ast.BinOp  # in place: the parent keeps its reference
            node.__dict__.clear()
            node.__dict__.update(new.__dict__)
    return body


def _call(name: str, d: int, at) -> ast.Call:
    call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[ast.Constant(value=d)],
                    keywords=[])
    call.func.resolved = ("builtin", name)
    call.loc = call.func.loc = call.args[0].loc = at.loc
    return call
