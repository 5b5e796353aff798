"""Vector types and functions: constructors (``float4(...)``), vloadN/vstoreN, any/all, and the
internal ``vector_set`` that component assignments (``v.xy = e``) are rewritten into. The
geometric functions (dot, cross, length, ...) are in ``geometric``.

Component-wise math on vectors is not here: ``lift`` applies each scalar entry per component.
Conversions and bit casts of vectors are in ``vector_convert``.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error

FAMILY = "vector"
WIDTHS = ct.VECTOR_WIDTHS
# The element types a vector constructor exists for, by OpenCL C name.
ELEMENTS = {ct.cname(t): t for t in ct.VECTOR_ELEMENTS}


def _tuple(parts) -> str:
    return "(" + ", ".join(parts) + ",)"


# -- constructors: float4(a, b, c, d), float4(x), float4(v.xy, 0.0, 1.0) -------------------------
def _ctor_rule(vec: ct.VecT):
    def rule(types, call):
        if len(types) == 1 and ct.is_scalar(types[0]):
            return vec
        count = 0
        for t in types:
            if isinstance(t, ct.VecT):
                count += t.width
            elif ct.is_scalar(t):
                count += 1
            else:
                raise node_error(call, f"{vec}(...) takes numbers and vectors, got "
                                       f"{ct.short(t)}")
        if count != vec.width:
            raise node_error(call, f"{vec}(...) needs {vec.width} components (or one number "
                                   f"to broadcast), got {count}")
        return vec

    return rule


def _ctor_emit(vec: ct.VecT):
    def emit(gen, codes, types, call):
        if len(types) == 1 and ct.is_scalar(types[0]):
            return gen.cast(codes[0], types[0], vec)

        def build(names):
            parts = []
            for name, t in zip(names, types, strict=True):
                if isinstance(t, ct.VecT):
                    parts += [gen.cast(f"{name}[{k}]", t.dtype, vec.dtype)
                              for k in range(t.width)]
                else:
                    parts.append(gen.cast(name, t, vec.dtype))
            return _tuple(parts)

        return gen.vec_lift(codes, build)

    return emit


def _constructors() -> list[Builtin]:
    rows = []
    for cname, dtype in ELEMENTS.items():
        for w in WIDTHS:
            vec = ct.VecT(dtype, w)
            listed = (cname, w) == ("float", 4)
            rows.append(Builtin(
                str(vec), FAMILY, _ctor_rule(vec), _ctor_emit(vec), listed=listed,
                c="(float4)(a, b, c, d)", py="float4(a, b, c, d)",
                types="TN for every scalar T (char...double), N = 2, 3, 4, 8, 16",
                note="also float4(x) (broadcast) and float4(v.xy, z, w)"))
    return rows


# -- vloadN / vstoreN ---------------------------------------------------------------------------
def _not_a_view(t, call, name):
    if isinstance(t, ct.PtrT) and t.view is not None and not ct.is_scalar(t.view):
        what = "vectors: read p[i] whole" if isinstance(t.view, ct.VecT) else \
            "structs: load fields one by one"
        raise node_error(call, f"{name} through a view of {what}")


def _vload_rule(width):
    def rule(types, call):
        if len(types) == 2:
            _not_a_view(types[1], call, f"vload{width}")
        if len(types) != 2 or not ct.is_int(types[0]) or not isinstance(types[1], ct.ArrayT
                                                                          | ct.PtrT):
            raise node_error(call, f"vload{width}(offset, buffer) takes an integer offset "
                                   "and a buffer")
        return ct.VecT(types[1].dtype, width)

    return rule


def _vstore_rule(width):
    def rule(types, call):
        if len(types) == 3:
            _not_a_view(types[2], call, f"vstore{width}")
        ok = (len(types) == 3 and isinstance(types[0], ct.VecT) and types[0].width == width
              and ct.is_int(types[1]) and isinstance(types[2], ct.ArrayT | ct.PtrT))
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


def _comps(name, t):
    return [f"{name}[{k}]" for k in range(t.width)] if isinstance(t, ct.VecT) else [name]


# -- any / all ----------------------------------------------------------------------------------
def _truth_rule(name):
    def rule(types, call):
        if len(types) != 1 or not ct.is_int(ct.elem(types[0])):
            raise node_error(call, f"{name}(v) takes an integer vector (e.g. a comparison "
                                   "result)")
        return "int32"

    return rule


def _truth_emit(joiner):
    def emit(gen, codes, types, call):
        t = types[0]
        elem = ct.elem(t)

        def build(n):
            tests = [f"({gen.cast(c, elem, ct.mask_int(elem))} < 0)"
                     for c in _comps(n[0], t)]
            return (f"({gen.const(1, 'int32')} if ({f' {joiner} '.join(tests)}) else "
                    f"{gen.const(0, 'int32')})")

        return gen.vec_lift(codes, build)

    return emit


# -- vector_set: v.xy = e, v[i] = e (rewritten by the type checker) ----------------------------
def _set_typing(typer, call):
    base = typer.expr(call.args[0])
    value = typer.expr(call.args[1])
    if len(call.args) > 2:
        typer.expr(call.args[2])
    if base is None or value is None:
        return base
    n = len(getattr(call, "vector_components", [0]))
    if isinstance(value, ct.VecT):
        if value.width != n or value.dtype != base.dtype:
            raise node_error(call, f"cannot assign a {value} to {n} component(s) of a {base}")
    elif not (ct.is_scalar(value) and ct.scalar_fits_vector(value, base)):
        raise node_error(call, f"cannot assign a {ct.short(value)} to a component of a {base}")
    return base


def _set_lower(gen, call):
    return gen.vec_set(call)


ENTRIES = [
    *_constructors(),
    *(Builtin(f"vload{w}", FAMILY, _vload_rule(w), lower=_vload(w), varying=True,
              access="load", c=f"vload{w}(offset, p)", types="any buffer",
              note=f"p[{w}*offset .. {w}*offset+{w - 1}]") for w in WIDTHS),
    *(Builtin(f"vstore{w}", FAMILY, _vstore_rule(w), lower=_vstore(w), varying=True,
              access="store", effects=True, c=f"vstore{w}(v, offset, p)", types="any buffer",
              note="a statement") for w in WIDTHS),
    Builtin("any", FAMILY, _truth_rule("any"), _truth_emit("or"), c="any(v)",
            types="integer vectors", note="1 if the top bit of any component is set"),
    Builtin("all", FAMILY, _truth_rule("all"), _truth_emit("and"), c="all(v)",
            types="integer vectors", note="1 if the top bit of every component is set"),
    Builtin("vector_set", FAMILY, typing=_set_typing, lower=_set_lower, public=False),
]
