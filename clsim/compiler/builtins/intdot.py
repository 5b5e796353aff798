"""Packed integer dot products of cl_khr_integer_dot_product (OpenCL C 3.0, 6.15.x):
``dot_4x8packed_{uu_uint,ss_int,us_int,su_int}(a, b)`` and
``dot_acc_sat_4x8packed_..._{uint,int}(a, b, acc)``.

``a`` and ``b`` are uints each holding four 8-bit integers (byte k of ``a`` multiplies byte
k of ``b``, so the byte order does not change the sum); ``uu`` reads both as unsigned, ``ss``
as signed, ``us``/``su`` the first/second unsigned and the other signed. The dot product is
exact (|sum| <= 4 * 255 * 255 fits an int); the ``acc_sat`` forms add ``acc`` and saturate to
the result type, as SPIR-V's OpSDotAccSat does. Arguments of other integer types are converted
as C converts them to the declared ``uint`` (and ``acc`` to the result type). ggml's dp4a
kernels call ``dot_acc_sat_4x8packed_ss_int``. Not here: the unpacked ``dot(char4, char4)``
forms of the extension.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "integer"
# signedness of (a's bytes, b's bytes) per spelling
_SIGNS = {"uu": (False, False), "ss": (True, True), "us": (False, True), "su": (True, False)}
_RANGE = {"uint32": (0, 2**32 - 1), "int32": (-(2**31), 2**31 - 1)}


def _byte(var: str, k: int, signed: bool) -> str:
    b = f"((np.int64({var}) >> np.int64({8 * k})) & np.int64(255))"
    # a signed byte above 127 is that minus 256 (two's complement)
    return f"({b} - np.int64(256) * ({b} >> np.int64(7)))" if signed else b


def _dot_source(kind: str) -> str:
    sa, sb = _SIGNS[kind]
    terms = " + ".join(f"{_byte('a', k, sa)} * {_byte('b', k, sb)}" for k in range(4))
    return f"def _dot4x8_{kind}(a, b):\n    return {terms}"


_DOT = {kind: helper(f"_dot4x8_{kind}", _dot_source(kind)) for kind in _SIGNS}


def _rule(name: str, n: int, result: str):
    def rule(types, call):
        if len(types) != n or not all(ct.is_scalar(t) and ct.is_int(t) for t in types):
            raise node_error(call, f"{name}() takes {n} integers (a, b: 4 packed 8-bit "
                                   f"integers each{', acc: the accumulator' if n == 3 else ''})")
        return result

    return rule


def _emit(kind: str, result: str, acc: bool):
    def emit(gen, codes, types, call):
        a, b = (gen.cast(c, t, "uint32") for c, t in zip(codes[:2], types[:2], strict=True))
        dot = gen.helper(f"_dot4x8_{kind}") + f"({a}, {b})"
        if not acc:
            return f"np.{result}({dot})"
        total = f"({dot} + np.int64({gen.cast(codes[2], types[2], result)}))"
        lo, hi = _RANGE[result]
        return f"np.{result}(min(max({total}, np.int64({lo})), np.int64({hi})))"

    return emit


def _entries():
    out = []
    for kind in _SIGNS:
        c_result = "uint" if kind == "uu" else "int"
        result = "uint32" if kind == "uu" else "int32"
        signs = {"uu": "unsigned", "ss": "signed", "us": "a unsigned, b signed",
                 "su": "a signed, b unsigned"}[kind]
        name = f"dot_4x8packed_{kind}_{c_result}"
        out.append(Builtin(name, FAMILY, _rule(name, 2, result), _emit(kind, result, False),
                           helpers=(_DOT[kind],), flop="int", c=f"{name}(a, b)",
                           types="uint a, b (4 packed 8-bit integers)",
                           note=f"sum of the 4 byte products ({signs}); "
                                "cl_khr_integer_dot_product"))
        name = f"dot_acc_sat_4x8packed_{kind}_{c_result}"
        out.append(Builtin(name, FAMILY, _rule(name, 3, result), _emit(kind, result, True),
                           helpers=(_DOT[kind],), flop="int", c=f"{name}(a, b, acc)",
                           types=f"uint a, b; {c_result} acc",
                           note=f"acc + the dot product ({signs}), saturated to {c_result}; "
                                "cl_khr_integer_dot_product"))
    return out


ENTRIES = _entries()
