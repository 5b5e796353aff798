"""Reading and writing int64 state through an address, for the checks' fast paths.

The fast paths (``shadow._fast``) take the shadow, meta and log arrays as their data addresses
(``arr.ctypes.data``, taken once per work-group), because a Numba call passing arrays pays
reference counting (atomic operations) around it unless Numba inlines the callee at every site,
which costs seconds of compile time per kernel. ``peek``/``poke`` are the Numba intrinsics that
load and store element ``index`` of the int64 array at ``base``. No bounds are checked:
callers index only elements the launch's state arrays hold (``clsim.checks.state`` sizes
them). Plain Python has no addresses: its twin of the fast paths subscripts memoryviews of the
same arrays (``native._plain``).
"""

from __future__ import annotations

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
