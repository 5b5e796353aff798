"""Atomics: ``atomic_add`` ... ``atomic_cmpxchg`` on global buffers and local arrays.

Two spellings, both returning the old value: ``atomic_add(buf[i], v)`` (OpenCL's
``atomic_add(&buf[i], v)``; ``buf[i, j]`` for a 2-D local array) and ``atomic_add(buf, i, v)``
(Numba CUDA's style). 32- and 64-bit integers for every operation; float32/float64 for
``atomic_add``, ``atomic_sub`` and ``atomic_xchg`` (OpenCL 3.0's ``cl_ext_float_atomics``).

Each atomic is one read-modify-write at the point the work-item loop reaches it, reported to the
instruments as a single access of kind "atomic" (``atomic=True``). Work-items run one at a time
within a group, and a kernel with global atomics runs its groups serially (``launch`` reads
``Parsed.uses_global_atomics``), so the order in which atomics take effect is the work-item loop
order: groups in linear order, and within a group region by region, lanes in linear order.
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.math import MAX, MIN
from clsim.compiler.diagnostics import node_error

FAMILY = "atomics"

# name -> (operation, number of value operands)
ATOMICS = {
    "atomic_add": ("add", 1), "atomic_sub": ("sub", 1), "atomic_xchg": ("xchg", 1),
    "atomic_min": ("min", 1), "atomic_max": ("max", 1), "atomic_and": ("and", 1),
    "atomic_or": ("or", 1), "atomic_xor": ("xor", 1), "atomic_inc": ("inc", 0),
    "atomic_dec": ("dec", 0), "atomic_cmpxchg": ("cmpxchg", 2),
}
INT_OK = ("int32", "uint32", "int64", "uint64")
FLOAT_OK = {"add", "sub", "xchg"}
_BINARY = {"add": "+", "sub": "-", "and": "&", "or": "|", "xor": "^"}


def _allowed(op: str) -> tuple[str, ...]:
    return INT_OK + (("float32", "float64") if op in FLOAT_OK else ())


def _rule(name: str):
    op, nvals = ATOMICS[name]

    def rule(types, call):
        if types and isinstance(types[0], ct.ArrayT):
            arrt = types[0]
            if arrt.ndim != 1:
                raise node_error(call, f"{name}(buf, i, ...) is for 1-D buffers; write "
                                         f"{name}(buf[i, j], ...) for a {arrt.ndim}-D array")
            elem, rest = arrt.dtype, types[2:]
            if len(types) < 2 or not ct.is_int(ct.promote(types[1])):
                raise node_error(call, f"{name}(buf, i, ...): the index must be an integer")
        elif types:
            elem, rest = types[0], types[1:]
        else:
            raise node_error(call, f"{name}() needs a buffer element: {name}(buf[i]"
                                     + ", value" * nvals + ")")
        if len(rest) != nvals:
            raise node_error(call, f"{name}() takes a buffer element and {nvals} value(s), "
                                     f"got {len(rest)}")
        if elem not in _allowed(op):
            kinds = ", ".join(_allowed(op))
            hint = ("; for a float compare-and-swap use OpenCL 2.0's "
                    "atomic_compare_exchange_strong(buf[i], e[0], desired) (compares the bits)"
                    if op == "cmpxchg" and ct.is_float(elem) else "")
            raise node_error(call, f"{name}() on {elem} elements is not an OpenCL atomic; "
                                     f"supported: {kinds}{hint}")
        for t in rest:
            if not ct.is_scalar(t):
                raise node_error(call, f"{name}(): values must be numbers, got {ct.short(t)}")
        return elem

    return rule


def _split(name: str, node: ast.Call):
    """(array name node, index nodes, value nodes) of either spelling."""
    first = node.args[0]
    if isinstance(first, ast.Subscript):
        idx = first.slice.elts if isinstance(first.slice, ast.Tuple) else [first.slice]
        return first.value, idx, node.args[1:]
    return first, [node.args[1]], node.args[2:]


def _new_value(gen, op: str, t: str, old: str, vals: list[str]) -> str:
    if op in _BINARY:
        return gen.wrap(f"({old} {_BINARY[op]} {vals[0]})", t)
    if op == "xchg":
        return vals[0]
    if op in ("min", "max"):
        return gen.helper(f"_{op}") + f"({old}, {vals[0]})"
    if op in ("inc", "dec"):
        return gen.wrap(f"({old} {'+' if op == 'inc' else '-'} {gen.const(1, t)})", t)
    return f"({vals[1]} if {old} == {vals[0]} else {old})"  # cmpxchg(cmp, val)


def _emitter(name: str):
    op, _nvals = ATOMICS[name]

    def emit(gen, node):
        arr, idx_nodes, val_nodes = _split(name, node)
        arrt = getattr(arr, "ctype", None)
        if not isinstance(arr, ast.Name) or not isinstance(arrt, ct.ArrayT):
            raise node_error(node, f"{name}()'s first argument must be an element of a "
                                          f"buffer or local array, e.g. {name}(counts[i], 1)")
        if arrt.space == "private":
            raise node_error(node, f"{name}() on a private array: OpenCL atomics work on "
                                          "global buffers and local arrays only")
        if len(idx_nodes) != arrt.ndim:
            raise node_error(node, f"'{arr.id}' has {arrt.ndim} dimension(s) but the "
                                          f"atomic indexes {len(idx_nodes)}")
        t = arrt.dtype
        base, lead = gen.array_base(arr.id, arrt)
        site = gen.module.site(node, arr.id, "atomic", arrt.space, t)
        temps = gen.checked_indices(idx_nodes, base, lead, site, hp.ERR_OOB_ATOMIC)
        vals = []
        for v in val_nodes:
            tmp = gen.fresh("_av")
            gen.pre(f"{tmp} = {gen.typed(v, t)}")
            vals.append(tmp)
        codes = gen.module.access(gen, site, arr.id, arrt, temps, "atomic", atomic=True,
                                  values=tuple(vals))
        for tmp, code in zip(temps, codes, strict=True):
            if code != tmp:
                gen.pre(f"{tmp} = {code}")
        target = f"{base}[{', '.join(lead + temps)}]"
        old = gen.fresh("_ao")
        gen.pre(f"{old} = {target}")
        gen.pre(f"{target} = {_new_value(gen, op, t, old, vals)}")
        return old

    return emit


def _local_arrays(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "resolved", (None, None))[1] == "local_array"):
            names.add(node.targets[0].id)
    return names


def _on_parse(parsed, call) -> None:
    """Check the spelling; an atomic on anything but this function's own local array is
    global and makes the launch run its groups in order (``parsed.flags``)."""
    name = call.func.resolved[1]
    if not call.args:
        raise node_error(call, f"{name}() needs a buffer element, e.g. {name}(buf[i]"
                               + ", v" * ATOMICS[name][1] + ")")
    first = call.args[0]
    base = first.value if isinstance(first, ast.Subscript) else first
    if not isinstance(base, ast.Name):
        raise node_error(call, f"{name}()'s first argument must be buf[i] or buf")
    if base.id not in _local_arrays(parsed.tree):
        parsed.flags.add("global_atomics")


def _c_spelling(name: str) -> str:
    return f"{name}(&p[i]" + ", v" * ATOMICS[name][1] + ")"


def _py_spelling(name: str) -> str:
    return f"{name}(p[i]" + ", v" * ATOMICS[name][1] + ")"


ENTRIES = [
    Builtin(name, FAMILY, _rule(name), lower=_emitter(name), varying=True, access="atomic",
            effects=True, on_parse=_on_parse, helpers=(MIN, MAX), c=_c_spelling(name),
            py=_py_spelling(name), types=", ".join(ct.cname(t) for t in _allowed(op)),
            note="returns the old value; also " + _py_spelling(name).replace("p[i]", "p, i"))
    for name, (op, _n) in ATOMICS.items()
]
