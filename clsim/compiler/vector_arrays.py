"""Private and local arrays of vectors (C's ``uint4 qv[8]``, ``__local half4 l_k[32][8]``).

``qv = private_array(8, uint4)`` is stored as a hidden array of the element type,
``qv__vec = private_array(8 * 4, np.uint32)``, and ``qv`` itself is a pointer to its first
vector (a ``view`` of the hidden array as ``uint4``), as C's array decays to one. So every
form a vector view already has works on it unchanged: ``qv[i]`` and ``qv[i] = v`` move whole
vectors, ``qv + k`` is a pointer, a helper given ``qv`` writes the caller's vectors, and each
access is bounds-checked (and seen by the race, uninitialised-read and traffic instruments)
against the hidden array, which messages name ``qv``.

A 2-D array (``l_k[a][b]`` or ``l_k[a, b]``) is flattened row-major here, as C lays it out;
``l_k[a]`` alone is the row, a pointer. ``fill=x`` fills every component; ``fill=(a, b)``
(C's ``{a, b}``) assigns the first vectors and zeroes the rest.

An array of a module-level structured dtype (``a = private_array(2, INFO)``, C's
``INFO a[2]`` or the box of ``&s``) is the same: hidden bytes ``a__vec`` viewed as ``INFO``,
so ``a[i].f``, ``a[0] = v``, ``v = a[0]`` and a helper writing ``p[0].f`` through ``a`` are
the forms a view of records already has. It takes no ``fill`` (C leaves it indeterminate).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler.diagnostics import compile_error

VEC_SUFFIX = "__vec"
_DECLARATIONS = ("private_array", "local_array")


def vector_type(node) -> ct.VecT | None:
    """The vector type a name resolves to (``float4``), or None."""
    kind, name = getattr(node, "resolved", (None, None))
    if kind != "builtin":
        return None
    return next((ct.VecT(t, w) for t in ct.VECTOR_ELEMENTS for w in ct.VECTOR_WIDTHS
                 if str(ct.VecT(t, w)) == name), None)


def struct_element(node) -> np.dtype | None:
    """The structured dtype a name resolves to (``INFO``), or None."""
    kind, what = getattr(node, "resolved", (None, None))
    return what if kind == "struct" else None


def _element(node):
    """A vector type, or a structured dtype, as an array's element (else None)."""
    return vector_type(node) if struct_element(node) is None else struct_element(node)


def _storage(element) -> tuple[str, int]:
    """The hidden array's scalar type and its count per element."""
    if isinstance(element, ct.VecT):
        return element.dtype, element.width
    return "uint8", element.itemsize


def _declaration(stmt):
    """(name, call, element) of ``name = private_array(shape, float4 or T, ...)``, or None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    if getattr(call.func, "resolved", (None, None))[1] not in _DECLARATIONS or \
            len(call.args) != 2:
        return None
    vec = _element(call.args[1])
    return None if vec is None else (stmt.targets[0].id, call, vec)


def _located(node, loc):
    for sub in ast.walk(node):
        sub.loc = loc
    return node


def _dims(call, program, loc) -> tuple[int, ...]:
    return program.const_shape(call.args[0], loc)


def vector_arrays(body: list, program) -> list:
    """``body`` with each array of vectors declared as its hidden scalar array plus the
    pointer to it, and the indices of 2-D ones flattened."""
    found = {hit[0]: hit for root in body for node in ast.walk(root)
             if (hit := _declaration(node)) is not None}
    if not found:
        return body
    from clsim.compiler.inline import clone

    body = clone(body)  # the parsed body is shared by every compilation of the function
    dims = {}
    for name, (_, call, vec) in found.items():
        if not isinstance(vec, ct.VecT):
            if any(k.arg == "fill" for k in call.keywords):
                raise compile_error(call.loc, f"'{name}': an array of structs takes no fill=; "
                                              "assign its fields, or a[i] = struct_value(T, ...)")
        elif vec.width == 3:
            raise compile_error(call.loc, f"an array of {vec}: a {vec} occupies 4 components "
                                          "in memory but has 3; use an array of the 4-wide "
                                          "type, or one of scalars")
        dims[name] = _dims(call, program, call.loc)
    _Flatten(dims).visit_list(body)
    return _declare(body, dims)


def _declare(stmts: list, dims: dict) -> list:
    out = []
    for stmt in stmts:
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(stmt, field, _declare(inner, dims))
        hit = _declaration(stmt)
        if hit is None or hit[0] not in dims:
            out.append(stmt)
            continue
        out.extend(_expand(stmt, hit, dims[hit[0]]))
    return out


def _expand(stmt, hit, shape) -> list:
    """``qv = private_array(8, uint4, fill=f)`` as the hidden array's declaration, the
    pointer's, and the stores of a tuple fill's vectors."""
    name, call, vec = hit
    loc = stmt.loc
    hidden = name + VEC_SUFFIX
    scalar, per_element = _storage(vec)
    count = math.prod(shape) * per_element
    dtype = ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr=scalar,
                          ctx=ast.Load())
    dtype.resolved = ("dtype", scalar)
    fill = next((k.value for k in call.keywords if k.arg == "fill"), None)
    keywords = []
    stores = []
    if isinstance(fill, ast.Tuple):
        if len(shape) != 1 or len(fill.elts) > shape[0]:
            raise compile_error(loc, f"fill=(...) has {len(fill.elts)} values for an array of "
                                     f"{shape} {vec}; a tuple fills a 1-D array from its "
                                     "start")
        keywords.append(ast.keyword(arg="fill", value=ast.Constant(value=0)))
        for k, value in enumerate(fill.elts):
            target = ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()),
                                   slice=ast.Constant(value=k), ctx=ast.Store())
            store = ast.Assign(targets=[_located(target, loc)], value=value, type_comment=None)
            store.loc = loc
            stores.append(store)
    elif fill is not None:
        keywords.append(ast.keyword(arg="fill", value=fill))
    hidden_call = ast.Call(func=call.func, args=[ast.Constant(value=count), dtype],
                           keywords=keywords)
    hidden_call.args[0].loc = dtype.loc = dtype.value.loc = loc
    hidden_call.loc = loc
    declare = ast.Assign(targets=[_located(ast.Name(id=hidden, ctx=ast.Store()), loc)],
                         value=hidden_call, type_comment=None)
    declare.loc = loc
    call.keywords = []
    call.vector_array = hidden  # typed as a view of the hidden array (memory.py)
    return [declare, stmt, *stores]


class _Flatten(ast.NodeTransformer):
    """``a[i][j]`` and ``a[i, j]`` on an array of vectors of shape (n, m): ``a[i * m + j]``;
    ``a[i]`` alone: the row, ``a + i * m``."""

    def __init__(self, dims: dict):
        self.dims = {n: d for n, d in dims.items() if len(d) > 1}

    def visit_list(self, stmts):
        for k, s in enumerate(stmts):
            stmts[k] = self.visit(s)

    def visit_Subscript(self, node):
        indices, root = [], node
        while isinstance(root, ast.Subscript):
            sl = root.slice
            indices[:0] = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in self.dims and
                not hasattr(root, "resolved")):
            return self.generic_visit(node)
        shape = self.dims[root.id]
        indices = [self.visit(i) for i in indices]
        vector_index = None
        if len(indices) == len(shape) + 1:  # a[i][j][k]: component k of the vector
            vector_index = indices.pop()
        if len(indices) > len(shape):
            raise compile_error(node.loc, f"'{root.id}' has {len(shape)} dimensions but is "
                                          f"indexed with {len(indices)}")
        flat = None
        for dim, index in enumerate(indices):
            stride = math.prod(shape[dim + 1:])
            term = index if stride == 1 else ast.BinOp(left=index, op=ast.Mult(),
                                                       right=ast.Constant(value=stride))
            flat = term if flat is None else ast.BinOp(left=flat, op=ast.Add(), right=term)
        loc = node.loc
        base = ast.Name(id=root.id, ctx=ast.Load())
        if len(indices) < len(shape):  # a row: a pointer to its first vector
            out = ast.BinOp(left=base, op=ast.Add(), right=flat)
        else:
            out = ast.Subscript(value=base, slice=flat,
                                ctx=node.ctx if vector_index is None else ast.Load())
            if vector_index is not None:
                out = ast.Subscript(value=out, slice=vector_index, ctx=node.ctx)
        for sub in ast.walk(out):
            if not hasattr(sub, "loc"):
                sub.loc = loc
        return out


def user_name(name: str) -> str:
    """The name the user wrote for an array of vectors' hidden storage."""
    return name.removesuffix(VEC_SUFFIX)
