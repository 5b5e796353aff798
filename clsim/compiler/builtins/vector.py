"""Vector loads and stores: vloadN(offset, p) and vstoreN(v, offset, p)."""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error

FAMILY = "vector"
WIDTHS = (2, 4, 8)


def _vload_rule(width):
    def rule(types, call):
        if len(types) != 2 or not ct.is_int(types[0]) or not isinstance(types[1], ct.ArrayT):
            raise node_error(call, f"vload{width}(offset, buffer) takes an integer offset "
                                   "and a buffer")
        return ct.VecT(types[1].dtype, width)

    return rule


def _vstore_rule(width):
    def rule(types, call):
        ok = (len(types) == 3 and isinstance(types[0], ct.VecT) and types[0].width == width
              and ct.is_int(types[1]) and isinstance(types[2], ct.ArrayT))
        if not ok:
            got = ", ".join(ct.short(t) for t in types)
            raise node_error(call, f"vstore{width}(vector, offset, buffer) takes a "
                                   f"{width}-vector, an integer offset and a buffer; got ({got})")
        return None

    return rule


def _vload(width):
    def lower(gen, call):
        return gen.vload(call, width)

    return lower


def _vstore(width):
    def lower(gen, call):
        return gen.vstore(call, width)

    return lower


ENTRIES = [
    *(Builtin(f"vload{w}", FAMILY, _vload_rule(w), lower=_vload(w), varying=True,
              access="load", c=f"vload{w}(offset, p)", types="any buffer",
              note=f"p[{w}*offset .. {w}*offset+{w - 1}]") for w in WIDTHS),
    *(Builtin(f"vstore{w}", FAMILY, _vstore_rule(w), lower=_vstore(w), varying=True,
              access="store", effects=True, c=f"vstore{w}(v, offset, p)", types="any buffer",
              note="a statement") for w in WIDTHS),
]
