"""OpenCL 2.0 (C11-style) atomics: ``atomic_load``, ``atomic_store``, ``atomic_fetch_<op>``,
``atomic_exchange``, ``atomic_compare_exchange_strong``/``_weak``, ``atomic_flag_test_and_set``/
``_clear``, each with an ``_explicit`` form taking a memory order (and optionally a scope),
``atomic_init`` (a plain store, as in C11), ``atomic_work_item_fence`` (nothing to do), plus the
``memory_order_*`` and ``memory_scope_*`` constants.

The object is written as the 1.x atomics write it: ``atomic_fetch_add(p[i], v)`` for C's
``atomic_fetch_add(&p[i], v)`` on a ``volatile global atomic_int *p`` (in Python ``p`` is a
plain numpy buffer or local array), or ``atomic_fetch_add(p, i, v)``. The compare-exchange's
``expected`` is C's ``&e[0]`` with ``e`` a one-element private array: on failure the current
value is written there, and the call returns the ``bool`` success.

Every operation is one indivisible access at the point the work-item loop reaches it (kind
"atomic" for the instruments, so atomics never race with atomics; a plain access racing one
still does). The simulator runs one work-item at a time, so every order is honoured by being
sequentially consistent: memory orders and scopes are checked (integers; a constant must be a
valid order for the operation) and then have nothing left to do. Spurious failure of
``_weak`` never happens here (a device may fail spuriously; a correct loop does not care).
"""

from __future__ import annotations

import ast

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.builtins.atomics import INT_OK, _local_arrays, _split
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.math import _FMAX, _FMIN, MAX, MIN
from clsim.compiler.diagnostics import node_error

FAMILY = "atomics"

# The values clang's opencl-c-base.h gives them (__ATOMIC_* and __OPENCL_MEMORY_SCOPE_*).
MEMORY_ORDERS = {"memory_order_relaxed": 0, "memory_order_acquire": 2,
                 "memory_order_release": 3, "memory_order_acq_rel": 4,
                 "memory_order_seq_cst": 5}
MEMORY_SCOPES = {"memory_scope_work_item": 0, "memory_scope_work_group": 1,
                 "memory_scope_device": 2, "memory_scope_all_svm_devices": 3,
                 "memory_scope_all_devices": 3, "memory_scope_sub_group": 4}
CONSTANTS = {**MEMORY_ORDERS, **MEMORY_SCOPES}
_ORDER_NAMES = {v: k for k, v in MEMORY_ORDERS.items()}
# Orders C11 (7.17.7) forbids per operation: a load cannot release, a store cannot acquire.
_FORBIDDEN = {"load": {3, 4}, "store": {2, 4}, "clear": {2, 4}}

FLOATS = ("float32", "float64")
# op -> (value operands before the orders, element types). Float add/sub/min/max are
# cl_ext_float_atomics; float load/store/exchange/compare-exchange are core OpenCL 2.0
# (atomic_float). A float compare-exchange compares bit patterns, as C11's does (memcmp):
# -0.0 is not +0.0, and a NaN matches the same NaN.
_OPS = {"load": (0, INT_OK + FLOATS), "store": (1, INT_OK + FLOATS),
        "init": (1, INT_OK + FLOATS), "tas": (0, INT_OK[:2]), "clear": (0, INT_OK[:2]),
        "xchg": (1, INT_OK + FLOATS), "cmpxchg": (2, INT_OK + FLOATS),
        **{op: (1, INT_OK + FLOATS) for op in ("add", "sub", "min", "max")},
        **{op: (1, INT_OK) for op in ("and", "or", "xor")}}
_BINARY = {"add": "+", "sub": "-", "and": "&", "or": "|", "xor": "^"}


def _names() -> dict[str, tuple[str, int]]:
    """name -> (op, number of memory-order operands the plain form is followed by)."""
    base = {"atomic_load": "load", "atomic_store": "store", "atomic_exchange": "xchg",
            "atomic_compare_exchange_strong": "cmpxchg",
            "atomic_compare_exchange_weak": "cmpxchg",
            **{f"atomic_fetch_{op}": op for op in ("add", "sub", "or", "xor", "and", "min",
                                                   "max")}}
    base |= {"atomic_flag_test_and_set": "tas", "atomic_flag_clear": "clear"}
    out = {"atomic_init": ("init", 0)}  # C11's non-atomic initialisation: no _explicit form
    for name, op in base.items():
        out[name] = (op, 0)
        out[f"{name}_explicit"] = (op, 2 if op == "cmpxchg" else 1)
    return out


C11 = _names()


def _rule(name: str):
    op, norders = C11[name]
    nvals, allowed = _OPS[op]

    def rule(types, call):
        if types and isinstance(types[0], ct.ArrayT):
            if types[0].ndim != 1 or len(types) < 2 or not ct.is_int(ct.promote(types[1])):
                raise node_error(call, f"{name}(buf, i, ...) takes a 1-D buffer and an integer "
                                       f"index; write {name}(buf[i, j], ...) for a 2-D array")
            elem, rest = types[0].dtype, types[2:]
        elif types:
            elem, rest = types[0], types[1:]
        else:
            raise node_error(call, f"{name}() needs an atomic object: {_py(name)}")
        if not nvals + norders <= len(rest) <= nvals + norders + (1 if norders else 0):
            raise node_error(call, f"{name}() is written {_py(name)}; got {len(rest)} "
                                   "argument(s) after the object")
        if elem not in allowed:
            raise node_error(call, f"{name}() on {ct.cname(elem)} elements is not an OpenCL "
                                   f"atomic; supported: {', '.join(map(ct.cname, allowed))}")
        for t in rest[:nvals]:
            if not ct.is_scalar(t):
                raise node_error(call, f"{name}(): values must be numbers, got {ct.short(t)}")
        if op == "cmpxchg" and rest[0] != elem:
            raise node_error(call, f"{name}(): expected is a {ct.cname(rest[0])} but the object "
                                   f"holds {ct.cname(elem)}; give e = private_array(1, "
                                   f"np.{elem}) and pass e[0]")
        for t in rest[nvals:]:
            if not ct.is_int(ct.promote(t)):
                raise node_error(call, f"{name}(): memory orders and scopes are integers "
                                       "(memory_order_relaxed, memory_scope_device, ...)")
        return {"store": None, "init": None, "clear": None, "cmpxchg": "bool",
                "tas": "bool"}.get(op, elem)

    return rule


def _new_value(gen, op: str, t: str, old: str, val: str) -> str:
    if op in _BINARY:
        return gen.wrap(f"({old} {_BINARY[op]} {val})", t)
    if op in ("min", "max"):
        stem = f"_f{op}_{t}" if ct.is_float(t) else f"_{op}"
        return gen.helper(stem) + f"({old}, {val})"
    return val  # store, xchg


def _target(gen, name: str, node):
    """(element reference, element type, value temporaries, value nodes), with the index
    checked and reported to the instruments."""
    arr, idx_nodes, val_nodes = _split(name, node)
    arrt = getattr(arr, "ctype", None)
    if not isinstance(arr, ast.Name) or not isinstance(arrt, ct.ArrayT):
        raise node_error(node, f"{name}()'s object must be an element of a buffer or local "
                               f"array, e.g. {_py(name)}")
    if arrt.space == "private":
        raise node_error(node, f"{name}() on a private array: OpenCL atomics work on global "
                               "buffers and local arrays only")
    if len(idx_nodes) != arrt.ndim:
        raise node_error(node, f"'{arr.id}' has {arrt.ndim} dimension(s) but the atomic "
                               f"indexes {len(idx_nodes)}")
    base, lead = gen.array_base(arr.id, arrt)
    kind = "store" if C11[name][0] == "init" else "atomic"  # atomic_init is a plain store
    site = gen.module.site(node, arr.id, kind, arrt.space, arrt.dtype)
    temps = gen.checked_indices(idx_nodes, base, lead, site, hp.ERR_OOB_ATOMIC)
    vals = []
    for v in val_nodes[:_OPS[C11[name][0]][0]]:
        tmp = gen.fresh("_av")
        gen.pre(f"{tmp} = {gen.typed(v, arrt.dtype)}")
        vals.append(tmp)
    # ``atomic``: the memory effect, for the traffic model ("load"/"store": one way, True: RMW).
    effect = {"load": "load", "store": "store", "clear": "store"}.get(C11[name][0], True)
    codes = gen.module.access(gen, site, arr.id, arrt, temps, kind,
                              atomic=effect if kind == "atomic" else False, values=tuple(vals))
    for tmp, code in zip(temps, codes, strict=True):
        if code != tmp:
            gen.pre(f"{tmp} = {code}")
    return f"{base}[{', '.join(lead + temps)}]", arrt.dtype, vals, val_nodes


def _emitter(name: str):
    op = C11[name][0]

    def lower(gen, node):
        target, t, vals, val_nodes = _target(gen, name, node)
        old = gen.fresh("_ao")
        if op in ("store", "init", "clear"):
            value = gen.const(0, t) if op == "clear" else vals[0]
            gen.pre(f"{target} = {value}")
            return None
        gen.pre(f"{old} = {target}")
        if op == "load":
            return old
        if op == "tas":
            gen.pre(f"{target} = {gen.const(1, t)}")
            return f"({old} != {gen.const(0, t)})"
        if op != "cmpxchg":
            gen.pre(f"{target} = {_new_value(gen, op, t, old, vals[0])}")
            return old
        expected = gen.array_access(val_nodes[0], "store", gen.store_index(val_nodes[0]))
        ok = gen.fresh("_aok")
        if ct.is_float(t):
            u = "uint32" if t == "float32" else "uint64"
            gen.pre(f"{ok} = {gen.bitcast(old, t, u)} == {gen.bitcast(vals[0], t, u)}")
        else:
            gen.pre(f"{ok} = {old} == {vals[0]}")
        gen.pre(f"if {ok}:\n    {target} = {vals[1]}\nelse:\n    {expected} = {old}")
        return ok

    return lower


def _constant_value(node):
    """The integer a memory-order argument names at compile time (None if not constant)."""
    resolved = getattr(node, "resolved", None)
    value = resolved[1] if resolved is not None and resolved[0] == "const" else (
        node.value if isinstance(node, ast.Constant) else None)
    return int(value) if isinstance(value, int | np.integer) else None


def _check_orders(name: str, call, orders) -> None:
    op = C11[name][0]
    for k, node in enumerate(orders):
        value = _constant_value(node)
        if value is None:
            continue
        is_scope = k == (2 if op == "cmpxchg" else 1)
        valid = MEMORY_SCOPES.values() if is_scope else MEMORY_ORDERS.values()
        if value not in valid:
            what = "scope" if is_scope else "memory order"
            raise node_error(call, f"{name}(): {value} is not a {what}; use the "
                                   f"memory_{'scope' if is_scope else 'order'}_* constants")
        bad = _FORBIDDEN.get(op, set()) | ({3, 4} if op == "cmpxchg" and k == 1 else set())
        if not is_scope and value in bad:
            which = "failure order of " if op == "cmpxchg" else ""
            raise node_error(call, f"{name}(): {_ORDER_NAMES[value]} is not allowed as the "
                                   f"{which}{op} order (C11 7.17.7); use memory_order_relaxed, "
                                   "memory_order_seq_cst or the matching acquire/release")


def _on_parse(parsed, call) -> None:
    """Check the spelling and constant orders; an atomic on anything but this function's own
    local array is global and makes the launch run its groups in order."""
    name = call.func.resolved[1]
    op, _ = C11[name]
    if not call.args:
        raise node_error(call, f"{name}() needs an atomic object: {_py(name)}")
    first = call.args[0]
    base = first.value if isinstance(first, ast.Subscript) else first
    if not isinstance(base, ast.Name):
        raise node_error(call, f"{name}()'s first argument must be buf[i] or buf")
    rest = call.args[1:] if isinstance(first, ast.Subscript) else call.args[2:]
    nvals = _OPS[op][0]
    if op == "cmpxchg" and rest and not _private_element(parsed, rest[0]):
        raise node_error(call, f"{name}(): expected must be an element of a private array, "
                               "e[0] with e = private_array(1, np.int32) (C's &expected); "
                               "the current value is written there on failure")
    _check_orders(name, call, rest[nvals:])
    if base.id not in _local_arrays(parsed.tree):
        parsed.flags.add("global_atomics")


def _private_element(parsed, node) -> bool:
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        return False
    for n in ast.walk(parsed.tree):
        if (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id == node.value.id and isinstance(n.value, ast.Call)
                and getattr(n.value.func, "resolved", (None, None))[1] == "private_array"):
            return True
    return False


def _args(name: str) -> str:
    op, norders = C11[name]
    vals = {0: "", 1: ", v", 2: ", e[0], v"}[_OPS[op][0]]
    orders = {0: "", 1: ", order[, scope]", 2: ", success, failure[, scope]"}[norders]
    return vals + orders


def _py(name: str) -> str:
    return f"{name}(p[i]{_args(name)})"


def _note(name: str) -> str:
    op = C11[name][0]
    if op in ("store", "clear"):
        return "a statement"
    if op == "init":
        return "a plain (non-atomic) store, as C11: racing an atomic is a race"
    if op == "tas":
        return "sets the flag (an int) to 1; returns bool: was it set"
    if op == "load":
        return "returns the value"
    if op == "cmpxchg":
        return ("returns bool; e = private_array(1, T) holds expected (C's &e[0]) and gets the "
                "current value on failure; never fails spuriously")
    nan = "; on float as fmin/fmax (a NaN operand is ignored)"
    return "returns the old value" + (nan if op in ("min", "max") else "")


def _fence_rule(types, call):
    if len(types) not in (2, 3) or not all(ct.is_int(ct.promote(t)) for t in types):
        raise node_error(call, "atomic_work_item_fence(flags, order[, scope]) takes fence "
                               "flags, a memory order and a scope")
    return None


def _no_code(gen, call):
    return None


ENTRIES = [
    Builtin("atomic_work_item_fence", FAMILY, _fence_rule, lower=_no_code,
            c="atomic_work_item_fence(flags, order, scope)",
            note="orders one work-item's accesses: nothing to do in the simulator"),
    *(Builtin(name, FAMILY, _rule(name), lower=_emitter(name), varying=True,
              access="store" if op == "init" else "atomic",
              effects=True, on_parse=_on_parse, helpers=(MIN, MAX, *_FMIN, *_FMAX),
              c=f"{name}(&p[i]{_args(name).replace('e[0]', '&e')})", py=_py(name),
              types=", ".join(ct.cname(t) for t in _OPS[op][1]), note=_note(name))
      for name, (op, _n) in C11.items()),
]
