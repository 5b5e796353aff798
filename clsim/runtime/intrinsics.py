"""Numba intrinsics the generated code needs and Numba lacks: bit reinterpretation (as_float...).

Only imported by generated modules in JIT mode; the no-JIT mode uses numpy views instead.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

_TYPES = {
    "int32": types.int32, "uint32": types.uint32, "float32": types.float32,
    "int64": types.int64, "uint64": types.uint64, "float64": types.float64,
}


def _make(target):
    @intrinsic
    def bitcast(typingctx, x):
        if not isinstance(x, types.Number) or x.bitwidth != target.bitwidth:
            return None
        sig = target(x)

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(target))

        return sig, codegen

    return bitcast


_bitcast_int32 = _make(types.int32)
_bitcast_uint32 = _make(types.uint32)
_bitcast_float32 = _make(types.float32)
_bitcast_int64 = _make(types.int64)
_bitcast_uint64 = _make(types.uint64)
_bitcast_float64 = _make(types.float64)

__all__ = [f"_bitcast_{name}" for name in _TYPES]
