"""Buffer parameters that the body reassigns (``src0 = view(src0, np.float32, offset0)``,
``dst += k``): C's pointer parameters are variables. A buffer parameter is the buffer itself
in generated code (a numpy array), so a body that assigns ``x`` gets a pointer local
``x__ptr = x`` on entry, and every use of ``x`` reads that local instead. Accesses through it
are still checked against (and reported on) the buffer ``x``.
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler.inline import clone

POINTER_SUFFIX = "__ptr"


def _assigned(body) -> set[str]:
    return {n.id for root in body for n in ast.walk(root)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _is_pointer_param(t) -> bool:
    return isinstance(t, ct.ArrayT) and t.ndim == 1 and t.space in ("global", "constant",
                                                                     "local")


def pointer_params(body: list, param_types: dict) -> list:
    """``body`` with each reassigned buffer parameter read through a pointer local."""
    written = sorted(p for p in _assigned(body) if _is_pointer_param(param_types.get(p)))
    if not written or not body:
        return body
    body = clone(body)  # the parsed body is shared by every compilation of the function
    for root in body:
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and node.id in written and \
                    not hasattr(node, "resolved"):
                node.id += POINTER_SUFFIX
    entry = []
    for p in written:
        source = ast.Name(id=p, ctx=ast.Load())
        target = ast.Name(id=p + POINTER_SUFFIX, ctx=ast.Store())
        stmt = ast.Assign(targets=[target], value=source, type_comment=None)
        stmt.loc = source.loc = target.loc = body[0].loc
        entry.append(stmt)
    return entry + list(body)


def user_name(name: str) -> str:
    """The name the user wrote for a reassigned parameter's pointer local."""
    return name.removesuffix(POINTER_SUFFIX)
