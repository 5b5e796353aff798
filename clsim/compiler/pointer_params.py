"""Buffer parameters that the body reassigns (``src0 = view(src0, np.float32, offset0)``,
``dst += k``): C's pointer parameters are variables. A buffer parameter is the buffer itself
in generated code (a numpy array), so a body that assigns ``x`` gets a pointer local
``x__ptr = x`` on entry, and every use of ``x`` reads that local instead; when the body's
first use of ``x`` is a plain ``x = view(x, T, off)`` (ggml's first lines), that assignment
starts the local and only later uses read it, so the local has the view's type throughout.
Accesses through it are still checked against (and reported on) the buffer ``x``.
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler.astwalk import walk
from clsim.compiler.inline import clone

POINTER_SUFFIX = "__ptr"


def _assigned(body) -> set[str]:
    return {n.id for root in body for n in walk(root)
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
    entry = []
    for p in written:
        first = next(k for k, s in enumerate(body) if _mentions(s, p))
        if _is_cast_of(body[first], p):
            # C's first line ``src0 = (global float *)((global char *)src0 + off)``: its value
            # reads the argument itself, so the local takes that pointer's type from the start
            # (bytes from a LocalMem or a uint8 array become a float pointer)
            _rename([body[first].targets[0]], p)
            _rename(body[first + 1:], p)
            continue
        _rename(body, p)
        source = ast.Name(id=p, ctx=ast.Load())
        target = ast.Name(id=p + POINTER_SUFFIX, ctx=ast.Store())
        stmt = ast.Assign(targets=[target], value=source, type_comment=None)
        stmt.loc = source.loc = target.loc = body[0].loc
        entry.append(stmt)
    return entry + list(body)


def _mentions(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and not hasattr(n, "resolved")
               for n in walk(node))


def _is_cast_of(stmt, name: str) -> bool:
    """``name = <value>`` as a plain statement of the body (not under a condition)."""
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
        isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name


def _rename(nodes, name: str) -> None:
    for root in nodes:
        for node in walk(root):
            if isinstance(node, ast.Name) and node.id == name and not hasattr(node, "resolved"):
                node.id += POINTER_SUFFIX


def user_name(name: str) -> str:
    """The name the user wrote for a reassigned parameter's pointer local."""
    return name.removesuffix(POINTER_SUFFIX)
