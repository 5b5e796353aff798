"""Pointer expressions of OpenCL C as the Python language writes them: casts as ``view``,
byte arithmetic on char pointers, ``&a[i]`` as ``a + i``, ``*(T *)&v`` as ``as_T(v)``, and
the address of a half field for ``vload_half``/``vstore_half``."""

from __future__ import annotations

import numpy as np

from clsim.frontends.opencl_c.ctype import CType, ctype
from clsim.frontends.opencl_c.nodes import (BOOL, CK, COMPARE, PREC, Py, Unsupported, children,
                                            strip, wrap)
from clsim.frontends.opencl_c.parse import unary_op


class PointerExpressions:
    """The pointer half of ``Expressions`` (which provides value, expr and names)."""

    def pointer_cast(self, py: Py, to: CType, cursor) -> Py:
        """C's pointer casts as views: ``(global T*)((global char*)p + off)`` is
        ``view(p, np.T, off)``."""
        src = py.type
        if py.code == "None":  # NULL, ((void *)0), is NULL as any pointer type
            return Py("None", to)
        if src.kind != "pointer":
            if py.code == "None" or py.code == "0":
                return Py("None", to)
            raise Unsupported(cursor, f"a cast from {src} to a pointer")
        if src.inner == to.inner:
            return Py(py.code, to, py.prec, py.byte_base)
        if to.inner.kind == "void":  # keeps what it points to: a cast back views the same bytes
            return py
        target = to.inner
        if target.kind not in ("scalar", "vector", "struct"):
            raise Unsupported(cursor, f"a cast to a pointer to {target}")
        name = target.py_name if target.kind != "scalar" else f"np.{target.name}"
        base, offset = py.byte_base or (py.code, None)
        if offset is not None:
            return Py(f"view({base}, {name}, {offset})", to)
        if py.viewed is not None:
            return Py(f"view({py.viewed}, {name})", to)
        out = Py(f"view({py.code}, {name})", to)
        if target.kind == "scalar" and target.name in ("int8", "uint8"):
            out.viewed = py.code
        return out

    # -- leaves

    def pointer_arith(self, cursor, op, a: Py, b: Py, t: CType) -> Py:
        if op in COMPARE:
            p = PREC["cmp"]
            if b.code == "None" or a.code == "None":
                word = "is" if op == "==" else "is not"
                return Py(f"{a.code} {word} {b.code}", BOOL, p)
            return Py(f"{wrap(a, p + 1)} {op} {wrap(b, p + 1)}", BOOL, p)
        p = PREC[op]
        py = Py(f"{wrap(a, p)} {op} {wrap(b, p + 1)}", t, p)
        ptr = a if a.type.kind == "pointer" else b
        if op == "+" and a is ptr and ptr.type.inner.kind == "scalar" and \
                ptr.type.inner.name in ("int8", "uint8"):
            py.byte_base = (a.byte_base[0], f"{a.byte_base[1]} + {wrap(b, p + 1)}") \
                if a.byte_base else (a.viewed or a.code, b.code)
        return py

    def pun(self, pointer):
        """``*(T *)&v`` with v a scalar of T's size (``*(global ushort *)&x[i].d`` on a half
        field): (v as a Py, v's type, T): the same bits read as another type, ``as_T(v)``."""
        cast = strip(pointer)
        if cast.kind != CK.CSTYLE_CAST_EXPR or ctype(cast.type).kind != "pointer":
            return None
        address = strip(children(cast)[-1])
        if address.kind != CK.UNARY_OPERATOR or unary_op(address) != "&":
            return None
        target = ctype(cast.type).inner
        lvalue = children(address)[0]
        source = ctype(lvalue.type)
        if source.kind != "scalar" or target.kind != "scalar" or \
                np.dtype(source.name).itemsize != np.dtype(target.name).itemsize:
            return None
        return self.value(lvalue), source, target

    def address_of(self, cursor, child) -> Py:
        target = strip(child)
        t = ctype(cursor.type)
        if target.kind == CK.ARRAY_SUBSCRIPT_EXPR:
            base, index = children(target)
            b = self.value(base)
            if b.type.kind == "pointer" and b.type.inner.kind != "array":
                i = self.value(index)
                return Py(f"{wrap(b, PREC['+'])} + {wrap(i, PREC['+'] + 1)}", t, PREC["+"])
        if target.kind == CK.UNARY_OPERATOR and unary_op(target) == "*":
            return self.value(children(target)[0])
        if target.kind == CK.DECL_REF_EXPR and target.referenced is not None and \
                target.referenced.hash in self.boxed:
            return Py(self.names.get(target.referenced), t)  # &t: the one-element array
        if target.kind == CK.MEMBER_REF_EXPR and \
                ctype(target.type).kind in ("scalar", "vector"):
            field = self.field_view(target, t)
            if field is not None:
                return field
        what = "a struct field" if target.kind == CK.MEMBER_REF_EXPR else \
            "a private variable" if target.kind == CK.DECL_REF_EXPR else "this lvalue"
        raise Unsupported(cursor, f"a pointer to {what} (&{self.module.text(child)})")

    def field_view(self, member, t: CType) -> Py | None:
        """``&x[i].d``, ``&xb->d`` (a scalar or vector field of a record in memory): a view
        of the field's type at its byte offset in the record, ``view(x + i, np.float16, 0)``."""
        record = children(member)[0]
        rt = record.type.get_canonical()
        if ctype(record.type).kind == "pointer":  # xb->d
            rec, layout = self.value(record), rt.get_pointee()
        else:
            layout, inner = rt, strip(record)
            if inner.kind == CK.ARRAY_SUBSCRIPT_EXPR:
                base, index = children(inner)
                b = self.value(base)
                if b.type.kind != "pointer":
                    return None
                i = self.value(index)
                rec = Py(f"{wrap(b, PREC['+'])} + {wrap(i, PREC['+'] + 1)}", b.type, PREC["+"])
            elif inner.kind == CK.UNARY_OPERATOR and unary_op(inner) == "*":
                rec = self.value(children(inner)[0])
            else:
                return None
        bits = layout.get_offset(member.spelling)
        if bits < 0 or bits % 8:
            return None
        inner_t = t.inner
        name = inner_t.py_name if inner_t.kind != "scalar" else f"np.{inner_t.name}"
        return Py(f"view({rec.code}, {name}, {bits // 8})", t)

    def _field_address(self, arg) -> str | None:
        target = strip(arg)
        if target.kind == CK.UNARY_OPERATOR and unary_op(target) == "&":
            inner = strip(children(target)[0])
            if inner.kind == CK.MEMBER_REF_EXPR:
                return self.value(inner).code
        return None
