"""Multi-dimensional C arrays in the Python twin.

An array is written with one index per dimension (``tile[ly, lx]``), as the Python language
wants. One whose rows are used as pointers (``vload4(0, &sh_qa[t][0])``, ``local uint *row =
sh[l]``) is declared flat instead, of its total size, and indexed row-major (``sh[t * 8 + h]``),
since the language has no pointer to a row. A braced initialiser of several dimensions fills
the array with zero (what C leaves out is zero) and assigns the given elements.
"""

from __future__ import annotations

import numpy as np

from clsim.frontends.opencl_c.ctype import CType, ctype
from clsim.frontends.opencl_c.nodes import (ATOM, CK, PREC, Py, Unsupported, children,
                                            constant_expression, strip, wrap)
from clsim.frontends.opencl_c.parse import evaluate


class FlatArrays:
    """The array half of a function's emitter (mixed into ``Expressions``)."""

    flat: dict[int, tuple[int, ...]]  # VAR_DECL hash -> dims, for arrays declared flat

    def find_flat_arrays(self, body) -> None:
        """Arrays of two or more dimensions some use indexes less deeply than their rank."""
        self.flat = {}
        self._walk(body, [])

    def _walk(self, node, path: list) -> None:
        if node.kind == CK.DECL_REF_EXPR and node.referenced is not None:
            t = ctype(node.type)
            if t.kind == "array" and len(t.dims) > 1 and _depth(node, path) < len(t.dims):
                self.flat[node.referenced.hash] = t.dims
        path.append(node)
        for kid in children(node):
            self._walk(kid, path)
        path.pop()

    def flat_subscript(self, cursor) -> Py | None:
        """``a[i][j]`` (an element) or ``a[i]`` (a row: a pointer) of a flat array, or None."""
        indices, node = [], cursor
        while node.kind == CK.ARRAY_SUBSCRIPT_EXPR:
            base, index = children(node)
            indices.insert(0, index)
            node = _decayed(strip(base))
        ref = node.referenced if node.kind == CK.DECL_REF_EXPR else None
        if ref is None or ref.hash not in self.flat:
            return None
        dims = self.flat[ref.hash]
        terms, constant = [], 0
        for k, index in enumerate(indices):
            stride = int(np.prod(dims[k + 1:]))
            value = evaluate(strip(index)) if constant_expression(index) else None
            if isinstance(value, int):
                constant += value * stride
                continue
            i = self.value(index)
            terms.append(wrap(i, PREC["+"] + 1) if stride == 1 else
                         f"{wrap(i, PREC['*'])} * {stride}")
        if constant or not terms:
            terms.append(str(constant))
        flat = " + ".join(terms)
        name = self.names.get(ref)
        if len(indices) == len(dims):
            return Py(f"{name}[{flat}]", ctype(cursor.type), ATOM)
        return Py(f"{name} + {flat}", ctype(cursor.type), PREC["+"])  # a row, used as a pointer

    def array_shape(self, var, t: CType) -> str:
        if var.hash in self.flat:
            return str(int(np.prod(t.dims)))
        return str(t.dims[0]) if len(t.dims) == 1 else str(t.dims)

    def array_init_nd(self, var, name: str, t: CType, init) -> None:
        """``float s[2][3] = {{1, x}, {3}};``: C zeroes what the braces leave out, so the array
        is filled with zero and the given elements are assigned."""
        elem = t.inner
        if elem.kind != "scalar":
            raise Unsupported(var, f"an initialiser of an array of {elem} with "
                                   f"{len(t.dims)} dimensions")
        zero = "0.0" if elem.is_float else "0"
        self.put(f"{name} = private_array({self.array_shape(var, t)}, np.{elem.name}, "
                 f"fill={zero})", var)
        for flat, item in _elements(init, t.dims, 0, var):
            if evaluate(strip(item)) == 0:
                continue
            index = str(flat) if var.hash in self.flat else \
                ", ".join(str(i) for i in np.unravel_index(flat, t.dims))
            self.put(f"{name}[{index}] = {self.typed(item, elem).code}", item)


def _decayed(node):
    """The array a row's pointer decays from (``a[i]`` in ``a[i][j]``), else ``node``."""
    if node.kind == CK.UNEXPOSED_EXPR and len(children(node)) == 1 and \
            ctype(children(node)[0].type).kind == "array":
        return strip(children(node)[0])
    return node


def _depth(ref, path: list) -> int:
    """How many subscripts apply to ``ref`` (through decays and parentheses)."""
    depth, below = 0, ref
    for node in reversed(path):
        if node.kind in (CK.UNEXPOSED_EXPR, CK.PAREN_EXPR):
            below = node
            continue
        if node.kind == CK.ARRAY_SUBSCRIPT_EXPR and children(node)[0].hash == below.hash:
            depth, below = depth + 1, node
            continue
        break
    return depth


def _elements(init, dims: tuple[int, ...], base: int, var) -> list:
    """(row-major index, initialiser) of each element a braced list gives: nested lists fill
    one row each, a flat list fills the elements in order (C's brace elision)."""
    kids = children(init)
    nested = [k.kind == CK.INIT_LIST_EXPR for k in kids]
    if len(dims) > 1 and all(nested):
        row = int(np.prod(dims[1:]))
        return [e for i, k in enumerate(kids)
                for e in _elements(k, dims[1:], base + i * row, var)]
    if any(nested):
        raise Unsupported(var, "this array initialiser (braces for some rows only)")
    return [(base + i, k) for i, k in enumerate(kids)]
