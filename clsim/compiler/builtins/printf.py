"""OpenCL's printf: each call appends a record (call site, global linear id, the arguments'
bits) to a buffer the launch provides; after the launch the lines are formatted with the
C format string and printed in a stable order: by work-item (global linear id), each
work-item's lines in program order. A kernel that calls printf runs its groups in order.

Here: the typing (a constant format and scalar arguments matching its conversions) and the
emitted append. Formatting is ``clsim.runtime.printf``.
"""

from __future__ import annotations

import ast
import re

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error

FAMILY = "memory"
MAX_ARGS = 8
# %[flags][width][.precision][length]conversion, as C's printf (vectors %v4f are not supported)
SPEC = re.compile(r"%([-+ #0]*)(\d+|\*)?(\.\d+)?(hh|h|ll|l)?([diouxXcfFeEgGaA%])")
INTS, FLOATS = "diouxXc", "fFeEgGaA"


def conversions(fmt: str) -> list[str]:
    """The conversion letters of ``fmt`` that take an argument."""
    return [m.group(5) for m in SPEC.finditer(fmt) if m.group(5) != "%"]


def _typing(typer, call):
    if not call.args or not (isinstance(call.args[0], ast.Constant)
                             and isinstance(call.args[0].value, str)):
        raise node_error(call, 'printf(format, ...) needs a constant format string, e.g. '
                               'printf("%d %f\\n", i, x)')
    fmt = call.args[0].value
    if "%v" in fmt or "%s" in fmt or "*" in fmt:
        raise node_error(call, "printf: %v (vectors), %s and * widths are not supported; "
                               "print components one by one")
    convs = conversions(fmt)
    args = call.args[1:]
    if len(convs) != len(args):
        raise node_error(call, f"printf: the format has {len(convs)} conversions but "
                               f"{len(args)} arguments follow")
    if len(args) > MAX_ARGS:
        raise node_error(call, f"printf takes at most {MAX_ARGS} arguments")
    for conv, arg in zip(convs, args, strict=True):
        t = typer.expr(arg)
        if t is None:
            return None
        if not ct.is_scalar(t):
            raise node_error(call, f"printf: a {ct.short(t)} argument; print scalars")
        if (conv in FLOATS) != ct.is_float(t):
            raise node_error(call, f"printf: %{conv} with a {ct.short(t)} argument; convert "
                                   "it (np.float64(x) for %f, np.int64(x) for %d)")
    call.printf_kinds = tuple(("f", 64) if ct.is_float(a.ctype) else (
        "i" if ct.is_signed(ct.promote(a.ctype)) else "u", ct.bits(ct.promote(a.ctype)))
        for a in args)
    return None


def _lower(gen, call):
    return gen.printf(call)


def _on_parse(parsed, call):
    parsed.flags.add("printf")


ENTRIES = [
    Builtin("printf", FAMILY, typing=_typing, lower=_lower, varying=True, effects=True,
            on_parse=_on_parse, c='printf("%d %f\\n", i, x)', py='printf("%d %f\\n", i, x)',
            types="scalars matching the format",
            note="lines printed after the launch, by work-item; groups run in order"),
]
