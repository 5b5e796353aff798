"""C's struct copies: ``b = x[ib]; b.d = 0`` changes ``b`` only, as a struct variable in C.

A record copied into a variable is read in place (``ct.PtrT(record_copy=True)``, no bytes
moved) while that is the same as C's copy: the copy is never modified and the kernel never
writes its buffer. Otherwise the variable becomes a private struct (``StructT`` in the
environment): its own bytes, one row per work-item, filled where C copies it. A struct
argument (or a record passed to a helper) whose fields the body assigns is copied on entry
(``p`` becomes the local ``p__copy = p``), since C passes structs by value. Typing is
``infer``'s and the byte copies are ``struct_emit``'s; this module decides which variables
are copies.
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler.astwalk import walk
from clsim.compiler.inline import clone
from clsim.compiler.structs import StructT

COPY_SUFFIX = "__copy"


def by_value(t) -> bool:
    """A struct passed by value: a struct argument, or a record given to a helper."""
    return isinstance(t, StructT) or (isinstance(t, ct.PtrT) and t.record_copy)


def root_name(target):
    """The variable at the root of ``b.d``, ``b.qs[j]``, ``b.inner.f`` (or None)."""
    while isinstance(target, ast.Subscript | ast.Attribute):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def assigned_roots(body) -> set[str]:
    """Variables whose fields or elements some statement of ``body`` assigns."""
    out = set()
    for root in body:
        for node in walk(root):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign) else []
            out |= {root_name(t) for t in targets if not isinstance(t, ast.Name)}
    out.discard(None)
    return out


def assigned_names(body) -> set[str]:
    """Variables some statement of ``body`` assigns as a whole (``n = ...``, ``n += 1``,
    ``for n in ...``)."""
    return {node.id for root in body for node in walk(root)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}


def copy_written_params(body: list, param_types: dict) -> list:
    """``body`` with each by-value struct parameter whose fields it assigns, and each scalar
    parameter it assigns, renamed to a local copy made on entry (``p__copy = p``): in C every
    work-item has its own copy of the kernel's arguments, while the parameter itself is one
    value shared by the whole launch."""
    written = [p for p in assigned_roots(body) if by_value(param_types.get(p))]
    written += [p for p in sorted(assigned_names(body))
                if isinstance(param_types.get(p), str) and p not in written]
    if not written or not body:
        return body
    body = clone(body)  # the parsed body is shared by every compilation of the function
    for root in body:
        for node in walk(root):
            if isinstance(node, ast.Name) and node.id in written:
                node.id += COPY_SUFFIX
    entry = []
    for p in sorted(written):
        source = ast.Name(id=p, ctx=ast.Load())
        target = ast.Name(id=p + COPY_SUFFIX, ctx=ast.Store())
        stmt = ast.Assign(targets=[target], value=source, type_comment=None)
        stmt.loc = source.loc = target.loc = body[0].loc
        entry.append(stmt)
    return entry + list(body)


def user_name(name: str) -> str:
    """The name the user wrote for a variable (a copied parameter keeps its own)."""
    return name.removesuffix(COPY_SUFFIX)
