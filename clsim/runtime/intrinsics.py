"""Numba intrinsics the generated code needs and Numba lacks: bit reinterpretation (as_float...)
and arrays borrowed for the length of a launch (``_borrowed``, ``_alive``).

Only imported by generated modules in JIT mode; the no-JIT mode uses numpy views instead.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
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



@intrinsic
def _borrowed(typingctx, value):
    """``value``, an array, without its owner (meminfo and parent null); anything else as it
    is. Numba counts references with atomic instructions on every array that crosses a call
    (each argument of ``_group``, per group; ``recorders.block``'s, per pass): on a borrowed
    array those are a null test. The launcher borrows its parameters, which its caller holds,
    and its scratch arrays, which it keeps alive to its end (``_alive``)."""
    def codegen(context, builder, signature, args):
        if not isinstance(value, types.Array):
            return args[0]
        source = context.make_array(value)(context, builder, args[0])
        borrowed = context.make_array(value)(context, builder)
        context.populate_array(borrowed, data=source.data, shape=source.shape,
                               strides=source.strides, itemsize=source.itemsize,
                               meminfo=None)
        return borrowed._getvalue()

    return value(value), codegen


@intrinsic
def _alive(typingctx, value):
    """Nothing: a use of ``value`` that keeps Numba from freeing it before this point."""
    def codegen(context, builder, signature, args):
        return cgutils.get_null_value(context.get_value_type(types.none))

    return types.none(value), codegen


__all__ = [f"_bitcast_{name}" for name in _TYPES] + ["_alive", "_borrowed"]
