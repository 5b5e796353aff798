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
MAX_ARGS = 32  # numbers per call (a float16 vector is 16)
# %[flags][width][.precision][length]conversion, as C's printf
SPEC = re.compile(r"%([-+ #0]*)(\d+|\*)?(\.\d+)?(hh|h|ll|l)?([diouxXcfFeEgGaA%])")
# what the kernel may write: also %s and OpenCL's vector specifier %[flags][width][.prec]vN
# (hh|h|hl|l)conv (%v4hlf for a float4, %v2hld for an int2, %v4hhu for a uchar4), which
# prints the components joined by ","
SOURCE_SPEC = re.compile(r"%([-+ #0]*)(\d+|\*)?(\.\d+)?(?:v(16|2|3|4|8))?(hh|hl|h|ll|l)?"
                         r"([diouxXcfFeEgGaAs%])")
INTS, FLOATS = "diouxXc", "fFeEgGaA"
_VECTOR_LENGTH = {"hh": 8, "h": 16, "hl": 32, "l": 64}  # element bits each modifier says


def conversions(fmt: str) -> list[str]:
    """The conversion letters of ``fmt`` that take an argument."""
    return [m.group(5) for m in SPEC.finditer(fmt) if m.group(5) != "%"]


def _expand(call, fmt: str, args: list, types: list) -> tuple[str, list]:
    """The format with %s strings substituted and vector specifiers spelled out, and the
    scalar arguments left: (node, component or None) pairs."""
    out, pieces, at, k = [], [], 0, 0
    for m in SOURCE_SPEC.finditer(fmt):
        out.append(fmt[at:m.start()])
        at = m.end()
        flags, width, precision, lanes, length, conv = m.groups()
        if conv == "%":
            out.append("%%")
            continue
        if k >= len(args):
            break
        arg, t = args[k], types[k]
        k += 1
        if conv == "s":
            if lanes or not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                raise node_error(call, "printf: %s takes a literal string here "
                                       '(printf("%s\n", "text")); print numbers with %d/%f')
            out.append(_string_piece(flags, width, precision, arg.value))
            continue
        spec = f"%{flags}{width or ''}{precision or ''}{conv}"
        if lanes:
            if not isinstance(t, ct.VecT) or t.width != int(lanes):
                raise node_error(call, f"printf: %v{lanes}{length or ''}{conv} needs a "
                                       f"{lanes}-component vector, got {ct.short(t)}")
            if length not in _VECTOR_LENGTH:
                need = next(m for m, b in _VECTOR_LENGTH.items() if b == ct.bits(t.dtype))
                raise node_error(call, f"printf: a vector conversion needs the length "
                                       f"modifier of its components (OpenCL C 6.15.14.2): "
                                       f"write %v{lanes}{need}{conv} for a {t}")
            if length in _VECTOR_LENGTH and ct.bits(t.dtype) != _VECTOR_LENGTH[length]:
                raise node_error(call, f"printf: the length modifier '{length}' says "
                                       f"{_VECTOR_LENGTH[length]}-bit components, the "
                                       f"argument is a {t}")
            out.append(",".join([spec] * t.width))
            pieces += [(arg, c, t.dtype) for c in range(t.width)]
        else:
            if length == "hl":
                raise node_error(call, "printf: the length modifier 'hl' is for vectors "
                                       "(%v4hlf)")
            out.append(spec)
            pieces.append((arg, None, t))
    out.append(fmt[at:])
    count = sum(m.group(6) != "%" for m in SOURCE_SPEC.finditer(fmt))
    if count != len(args):
        raise node_error(call, f"printf: the format has {count} conversions but {len(args)} "
                               "arguments follow")
    return "".join(out), pieces


def _string_piece(flags: str, width, precision, text: str) -> str:
    """A %s conversion of a literal, formatted now (escaped for the later formatting)."""
    return (f"%{flags}{width or ''}{precision or ''}s" % text).replace("%", "%%")


def _typing(typer, call):
    if not call.args or not (isinstance(call.args[0], ast.Constant)
                             and isinstance(call.args[0].value, str)):
        raise node_error(call, 'printf(format, ...) needs a constant format string, e.g. '
                               'printf("%d %f\n", i, x)')
    fmt = call.args[0].value
    if "*" in fmt:
        raise node_error(call, "printf: * widths are not supported; write the width into "
                               "the format")
    args = call.args[1:]
    types = [None if isinstance(a, ast.Constant) and isinstance(a.value, str)
             else typer.expr(a) for a in args]
    if any(t is None and not isinstance(a, ast.Constant) for a, t in zip(args, types,
                                                                         strict=True)):
        return None
    fmt, pieces = _expand(call, fmt, list(args), types)
    if len(pieces) > MAX_ARGS:
        raise node_error(call, f"printf takes at most {MAX_ARGS} numbers (vector components "
                               "count one each)")
    for conv, (_arg, _comp, t) in zip(conversions(fmt), pieces, strict=True):
        if not ct.is_scalar(t):
            raise node_error(call, f"printf: a {ct.short(t)} argument; print scalars, or a "
                                   "vector with %v4f")
        if (conv in FLOATS) != ct.is_float(t):
            raise node_error(call, f"printf: %{conv} with a {ct.short(t)} argument; convert "
                                   "it (np.float64(x) for %f, np.int64(x) for %d)")
    call.printf_format = fmt
    call.printf_pieces = tuple((a, comp) for a, comp, _t in pieces)
    call.printf_kinds = tuple(("f", 64) if ct.is_float(t) else (
        "i" if ct.is_signed(ct.promote(t)) else "u", ct.bits(ct.promote(t)))
        for _a, _c, t in pieces)
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
