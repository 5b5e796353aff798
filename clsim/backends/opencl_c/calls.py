"""Builtin calls in OpenCL C: the few whose C spelling differs from ``name(args)``.

A builtin's name in clsim's table is its OpenCL C name (``clsim/compiler/builtins/``), so most
calls print as they are. This module holds only the differences, one table entry each:
builtins that are declarations or clsim notations (``local_array``, ``view``,
``vector_set``, ``float4(...)``), atomics (C takes the address of the element), results whose
C type differs from clsim's (work-item ids are ``size_t`` in C, 64-bit signed here), argument
types C's overloads need spelled out, and the extensions each family needs.
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins import atomics, atomics_c11, lookup
from clsim.compiler.diagnostics import node_error

# Builtins whose call needs an OpenCL extension (beyond sub-groups themselves), by name prefix.
EXTENSIONS = (
    ("sub_group_shuffle_up", "cl_khr_subgroup_shuffle_relative"),
    ("sub_group_shuffle_down", "cl_khr_subgroup_shuffle_relative"),
    ("sub_group_shuffle", "cl_khr_subgroup_shuffle"),
    ("sub_group_clustered", "cl_khr_subgroup_clustered_reduce"),
    ("sub_group_ballot", "cl_khr_subgroup_ballot"),
    ("sub_group_inverse_ballot", "cl_khr_subgroup_ballot"),
    ("sub_group_elect", "cl_khr_subgroup_non_uniform_vote"),
    ("sub_group_non_uniform", "cl_khr_subgroup_non_uniform_arithmetic"),
)
# Arguments C declares ``uint`` (a lane, a delta, a mask): cast, so a long id does not make
# the overload ambiguous.
UINT_ARGS = {"sub_group_shuffle": (1,), "sub_group_shuffle_xor": (1,),
             "sub_group_shuffle_up": (1,), "sub_group_shuffle_down": (1,),
             "sub_group_broadcast": (1,), "sub_group_ballot_bit_extract": (1,)}
# Builtins whose arguments keep their own types (C declares them differently from the
# result): no cast to the result type.
OWN_ARGUMENT_TYPES = frozenset({
    "abs", "abs_diff", "upsample", "ldexp", "pown", "rootn", "frexp", "modf", "remquo", "nan",
    "ilogb", "select", "bitselect", "shuffle", "shuffle2", "rotate", "popcount", "clz", "ctz",
    "mad_hi", "mul_hi", "mad_sat", "add_sat", "sub_sat", "hadd", "rhadd",
})
# Families whose scalar arguments are converted to the call's result type (C overloads take
# one gentype: max(long, int) would be ambiguous).
COMMON_TYPE_FAMILIES = frozenset({"math", "integer"})
# C11 atomics operate on atomic_T objects: the element's address is cast.
C11_NAMES = frozenset(atomics_c11.C11)
LEGACY_ATOMICS = frozenset(atomics.ATOMICS)


def is_subgroup(name: str) -> bool:
    return "sub_group" in name


def extension_of(name: str) -> str | None:
    return next((ext for prefix, ext in EXTENSIONS if name.startswith(prefix)), None)


def needs_cl2(name: str) -> bool:
    """C11 atomics, work-group collectives and non-uniform ids need OpenCL C 2.0."""
    return (name in C11_NAMES or name.startswith("work_group_")
            or name in ("get_enqueued_local_size", "get_global_linear_id",
                        "get_local_linear_id"))


def call(p, node: ast.Call, name: str) -> str:
    """C source of the builtin call ``node`` (``p``: the function printer)."""
    special = SPECIAL.get(name)
    if special is not None:
        return special(p, node, name)
    if name in LEGACY_ATOMICS or name in C11_NAMES:
        return _atomic(p, node, name)
    entry = lookup(name)
    if entry is not None and entry.family == "work-item":
        return f"({ct.cname(node.ctype)}){name}({', '.join(p.expr(a) for a in node.args)})"
    if name in ("get_sub_group_id", "get_sub_group_local_id", "get_sub_group_size",
                "get_num_sub_groups", "get_max_sub_group_size"):
        return f"({ct.cname(node.ctype)}){name}()"
    args = [_argument(p, node, name, k, a, entry) for k, a in enumerate(node.args)]
    return f"{name}({', '.join(args)})"


def _argument(p, node, name, k, arg, entry) -> str:
    code = p.expr(arg)
    if k in UINT_ARGS.get(name, ()):
        return p.cast(code, "uint32", arg)
    result = node.ctype
    t = getattr(arg, "ctype", None)
    if (entry is not None and entry.family in COMMON_TYPE_FAMILIES
            and name not in OWN_ARGUMENT_TYPES and ct.is_scalar(t) and result is not None):
        want = ct.elem(result)
        if ct.is_scalar(want) and want != t and ct.is_int(want) == ct.is_int(ct.promote(t)):
            return p.cast(code, want, arg)
    return code


def _atomic(p, node, name: str) -> str:
    first = node.args[0]
    if isinstance(first, ast.Subscript):
        place, rest = p.expr(first), node.args[1:]
        elem_t, space = first.ctype, p.space_of(first.value)
    else:
        place = f"{p.expr(first)}[{p.expr(node.args[1])}]"
        rest = node.args[2:]
        t = first.ctype
        elem_t = t.dtype
        space = t.array.space if isinstance(t, ct.PtrT) else t.space
    address = f"&{place}"
    if name in C11_NAMES:
        qual = {"global": "__global ", "local": "__local "}.get(space, "")
        address = f"(volatile {qual}atomic_{ct.cname(elem_t)}*){address}"
    args = [address, *(p.expr(a) for a in rest)]
    return f"{name}({', '.join(args)})"


def _vector_constructor(p, node, name):
    return f"({name})({', '.join(p.expr(a) for a in node.args)})"


_CAST_OPERAND = 14  # C's unary precedence: (T *)(x + k) needs its parentheses


def _view(p, node, name):
    buf = p.sub(node.args[0], _CAST_OPERAND)
    t = node.ctype
    qual = {"global": "__global", "constant": "__constant", "local": "__local"}.get(
        t.array.space, "")
    elem = p.type_name(t.dtype)
    if len(node.args) == 3:
        off = p.expr(node.args[2])
        return f"(({qual} {elem}*)(({qual} uchar*){buf} + {off}))"
    return f"(({qual} {elem}*){buf})"


def _declaration_only(p, node, name):
    raise node_error(node, f"{name}() declares an array: assign it to a name on its own line "
                           "(a = local_array(n, np.float32))")


def _printf(p, node, name):
    fmt = node.args[0]
    if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
        raise node_error(node, "printf: the format must be a string constant")
    text = fmt.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\t", "\\t")
    args = []
    for a in node.args[1:]:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            args.append('"' + a.value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            args.append(p.expr(a))
    return f'printf("{text}"{"".join(", " + a for a in args)})'


def _abs(p, node, name):
    """clsim's abs takes floats too (Python's abs); OpenCL C's is integer-only: fabs."""
    if ct.is_float(ct.elem(node.ctype)):
        return f"fabs({p.expr(node.args[0])})"
    return f"abs({p.expr(node.args[0])})"


def _struct_value(p, node, name):
    """``struct_value(T, a, f=b)``: the compound literal ``(T){a, .f = b}`` (``{0}`` when
    empty: the compiler split the fields off into stores, after zeroing)."""
    parts = [p.expr(a) for a in node.args[1:]] + \
        [f".{kw.arg} = {p.expr(kw.value)}" for kw in node.keywords]
    return f"({p.type_name(node.ctype)}){{{', '.join(parts) or '0'}}}"


def _vector_set(p, node, name):
    raise node_error(node, "internal: vector_set outside an assignment")


SPECIAL = {
    "abs": _abs,
    "local_array": _declaration_only,
    "private_array": _declaration_only,
    "view": _view,
    "printf": _printf,
    "vector_set": _vector_set,
    "struct_value": _struct_value,
    **{str(ct.VecT(t, w)): _vector_constructor
       for t in ct.VECTOR_ELEMENTS for w in ct.VECTOR_WIDTHS},
}
