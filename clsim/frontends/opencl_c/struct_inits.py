"""C's struct values from fields: ``T v = {a, b};``, ``{.q_sum = s, .qd = d}``, ``(T){...}``.

Each becomes ``struct_value(T, a, b)`` / ``struct_value(T, q_sum=s, qd=d)``: the Python
language zero-fills the fields not given, as C does. A designator names one top-level field
(``.f = v``); positional values come first. Nested braces (an array or struct field's own
initialiser) and array designators are refused with the construct named.
"""

from __future__ import annotations

from clsim.frontends.opencl_c.ctype import CType, ctype
from clsim.frontends.opencl_c.nodes import CK, Py, Unsupported, children

NAME = "struct_value"


class StructInits:
    """Mixin of ``Expressions``: a braced initialiser of a struct."""

    def struct_literal(self, to: CType, init) -> Py:
        decl = init.type.get_canonical().get_declaration()
        fields = {f.spelling: ctype(f.type) for f in decl.get_children()
                  if f.kind == CK.FIELD_DECL}
        names = list(fields)
        positional, named = [], []
        for k in children(init):
            field, value = _designated(k)
            if field is None:
                if named:
                    raise Unsupported(k, f"a positional value after a designator in an "
                                         f"initialiser of {to}")
                if len(positional) >= len(names):
                    raise Unsupported(k, f"more values than fields in an initialiser of {to}")
                field = names[len(positional)]
            if fields[field].kind not in ("scalar", "vector"):
                raise Unsupported(k, f"an initialiser of {to}'s field '{field}' of type "
                                     f"{fields[field]} (set its elements after the declaration)")
            code = self.typed(value, fields[field]).code
            (positional if not named and value is k else named).append(
                code if value is k else f"{field}={code}")
        self.module.use(NAME)
        return Py(f"{NAME}({', '.join([to.py_name, *positional, *named])})", to)


def _designated(k):
    """(field name, value) of ``.f = v``; (None, k) of a positional value."""
    if k.kind == CK.UNEXPOSED_EXPR and k.type.spelling == "void":
        kids = children(k)
        if len(kids) == 2 and kids[0].kind == CK.MEMBER_REF:
            return kids[0].spelling, kids[1]
        raise Unsupported(k, "a nested or array designator ([i] = v, .a.b = v)")
    return None, k
