"""Reading and writing int64 state through an address, for the checks' fast paths.

The fast paths (``shadow._fast``) take the shadow, meta and log arrays as their data addresses
(``arr.ctypes.data``, taken once per work-group), because a Numba call passing arrays pays
reference counting (atomic operations) around it unless Numba inlines the callee at every site,
which costs seconds of compile time per kernel. ``peek``/``poke`` are the Numba intrinsics that
load and store element ``index`` of the int64 array at ``base``; ``peek_py``/``poke_py`` their
plain-Python twins (no-JIT mode). No bounds are checked: callers index only elements the
launch's state arrays hold (``clsim.checks.state`` sizes them).
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_I64P = ir.PointerType(ir.IntType(64))


@intrinsic
def peek(typingctx, base, index):
    """``base[index]`` for the int64 array whose data starts at address ``base``."""

    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], _I64P)
        return builder.load(builder.gep(pointer, [args[1]]))

    return types.int64(types.int64, types.int64), codegen


@intrinsic
def poke(typingctx, base, index, value):
    """``base[index] = value`` for the int64 array whose data starts at address ``base``."""

    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], _I64P)
        builder.store(args[2], builder.gep(pointer, [args[1]]))
        return context.get_dummy_value()

    return types.none(types.int64, types.int64, types.int64), codegen


# Plain-Python mode: the launch's int64 state arrays by data address (``register``), read
# through memoryviews, about 3x cheaper per access than ctypes at an address (the checks'
# plain-Python cost is mostly these reads, issue 23). An address not registered (another
# thread's launch replaced them) falls back to ctypes: the same element either way.
_VIEWS: dict[int, memoryview] = {}


def register(arrays) -> None:
    """Index the 1-D int64 ``arrays`` of one plain-Python launch by their data address."""
    _VIEWS.clear()
    _VIEWS.update((a.ctypes.data, memoryview(a)) for a in arrays
                  if a.ndim == 1 and a.dtype == np.int64 and a.flags.c_contiguous)


def unregister() -> None:
    _VIEWS.clear()


def peek_py(base, index) -> int:
    view = _VIEWS.get(base)
    if view is None:
        return ctypes.c_int64.from_address(int(base) + 8 * int(index)).value
    return view[index]


def poke_py(base, index, value) -> None:
    view = _VIEWS.get(base)
    if view is None:
        ctypes.c_int64.from_address(int(base) + 8 * int(index)).value = int(value)
    else:
        view[index] = int(value)


_DEFER = ir.FunctionType(ir.VoidType(), [ir.IntType(64)] * 4)


@intrinsic
def call_defer(typingctx, address, meta, log, element, packed):
    """Call the C function at ``address`` (``native``'s ``_cs_defer_c``) on four int64s. A
    call through an address, so LLVM never inlines the rarely taken deferral into a fast
    path: a fast path stays small enough to be inlined at every access site."""

    def codegen(context, builder, signature, args):
        target = builder.inttoptr(args[0], _DEFER.as_pointer())
        builder.call(target, args[1:])
        return context.get_dummy_value()

    return types.none(*([types.int64] * 5)), codegen


def inline_call(dispatcher, context, builder, signature, args):
    """Lower a call to the njit ``dispatcher`` (compiled for ``signature``, loaded from
    Numba's cache when it can be) marked ``alwaysinline`` at the call site: LLVM then inlines
    it wherever it is called, with none of the seconds of Numba-level inlining per site, and
    the callee is compiled once per machine. For callees that take scalars only and cannot
    raise (the fast paths)."""
    dispatcher.compile(signature.args)
    result = dispatcher.overloads[tuple(signature.args)]
    context.add_linking_libs([result.library])
    function = context.declare_function(builder.module, result.fndesc)
    _status, value = context.call_conv.call_function(
        builder, function, result.fndesc.restype, result.fndesc.argtypes, args,
        attrs=("alwaysinline",))
    return value


def inlined(dispatcher, params: tuple[str, ...]):
    """An intrinsic calling ``dispatcher`` on int64 arguments named ``params``
    (``inline_call``). Numba reads an intrinsic's parameters from its signature, so the
    typing function is written out for these names."""
    names = ", ".join(params)
    source = (f"def typer(typingctx, {names}):\n"
              f"    return types.int64(*([types.int64] * {len(params)})), codegen\n")
    scope = {"types": types,
             "codegen": lambda c, b, s, a: inline_call(dispatcher, c, b, s, a)}
    exec(source, scope)  # our own fixed text: the parameter names of a fast path
    return intrinsic(scope["typer"])
