"""Component-wise lifting: every scalar math, integer and relational builtin works on vectors.

OpenCL C defines ``exp(float4)``, ``fmax(float4, float)``, ``clamp(int8, int, int)``... as the
scalar function applied to each component. Rather than a vector variant per entry, the typing
pass and the code generator ask this module: the scalar entry's ``result`` rule is called on
the element types (scalar arguments are widened to every component), and its ``emit`` is
called once per component on that component's code. Tests that return a truth value per
component (``isnan(float4)``) give -1/0 in the signed integer type of the element's size, as
OpenCL C specifies; ``select`` on vectors tests the most significant bit of each component.
"""

from __future__ import annotations

from dataclasses import dataclass

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins import vector_convert
from clsim.compiler.diagnostics import node_error

LIFTED_FAMILIES = ("math", "integer", "relational")


@dataclass
class ComponentCall:
    """What a scalar emitter sees of a call when it is applied to one component."""

    ctype: object
    loc: object
    args: list
    func: object
    keywords: list


def liftable(entry) -> bool:
    return entry.family in LIFTED_FAMILIES and entry.emit is not None


def vector_form(entry):
    """(rule, emit) for a scalar entry whose vector argument is not taken per component:
    ``as_uint(uchar4)`` reinterprets the whole vector. None for every other entry."""
    if entry.family == "conversion" and entry.name.startswith("as_"):
        dtypes = {c: t for t, c in ct.CNAMES.items()}
        return vector_convert.as_scalar_of_vector(dtypes[entry.name.removeprefix("as_")])
    return None


def width_of(types, call) -> int:
    widths = {t.width for t in types if isinstance(t, ct.VecT)}
    if len(widths) != 1:
        got = ", ".join(ct.short(t) for t in types)
        raise node_error(call, f"{call.func.resolved[1]}() mixes vectors of different widths "
                               f"({got})")
    return widths.pop()


def result(entry, types, call):
    """The vector type of ``entry`` applied component-wise to ``types``."""
    width = width_of(types, call)
    scalar = entry.result([ct.elem(t) for t in types], call)
    call.lifted_scalar = scalar
    if scalar is None:
        raise node_error(call, f"{entry.name}() on vectors is not supported")
    if scalar == "bool":
        elem = ct.elem(next(t for t in types if isinstance(t, ct.VecT)))
        return ct.VecT(ct.mask_int(elem), width)
    return ct.VecT(scalar, width)


def emit(gen, entry, call) -> str:
    """The tuple of ``entry``'s scalar code for each component of the call's vectors."""
    vec_t: ct.VecT = call.ctype
    scalar = call.lifted_scalar
    types = [a.ctype for a in call.args]
    codes = [gen.expr(a) for a in call.args]
    proxy = ComponentCall(scalar, call.loc, call.args, call.func, [])
    elem_types = [ct.elem(t) for t in types]
    if entry.flop:
        for _ in range(vec_t.width):
            gen.count_flop(entry.flop, scalar)

    def build(names):
        comps = []
        for k in range(vec_t.width):
            args = [f"{n}[{k}]" if isinstance(t, ct.VecT) else n
                    for n, t in zip(names, types, strict=True)]
            if entry.name == "select":
                comps.append(_select_component(gen, args, elem_types, vec_t))
                continue
            code = entry.emit(gen, args, elem_types, proxy)
            if scalar == "bool":
                code = (f"({gen.const(-1, vec_t.dtype)} if {code} else "
                        f"{gen.const(0, vec_t.dtype)})")
            comps.append(code)
        return "(" + ", ".join(comps) + ",)"

    return gen.vec_lift(codes, build)


def _select_component(gen, args, types, vec_t) -> str:
    """select(a, b, c) per component: b where c's most significant bit is set (OpenCL C)."""
    a, b, c = args
    to, ct_c = vec_t.dtype, types[2]
    if not ct.is_int(ct_c):
        raise node_error(None, "select(a, b, c): c must be an integer vector")
    top = gen.cast(c, ct_c, ct.mask_int(ct_c))
    return (f"({gen.cast(b, types[1], to)} if {top} < 0 else "
            f"{gen.cast(a, types[0], to)})")
