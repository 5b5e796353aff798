"""Synchronisation and memory declarations: barrier, mem_fence, local_array, private_array.

A work-group barrier is a cut: the region builder ends the work-item loop there and
``emit_barrier`` runs at group level (exit-before-barrier check, instrument hooks).
``local_array(shape, dtype)`` is ``__local T a[shape]`` (one per work-group) and
``private_array(shape, dtype)`` is ``T a[shape]`` in each work-item.
"""

from __future__ import annotations

import ast

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error
from clsim.compiler.struct_values import struct_dtype
from clsim.compiler.structs import struct_of
from clsim.compiler.vector_arrays import struct_element, vector_type
from clsim.compiler.vectors import vector_view
from clsim.runtime import record as rec

FAMILY = "memory"


def _fence_rule(name):
    def rule(types, call):
        if len(types) > 1 or (types and not ct.is_int(ct.promote(types[0]))):
            raise node_error(call, f"{name}(flags) takes the fence flags, e.g. "
                                   "CLK_LOCAL_MEM_FENCE")
        return None

    return rule


def emit_barrier(gen, item, fence: int | None = None) -> None:
    """Group-level code of a work-group barrier between two work-item loops; ``fence``
    replaces the call's flags argument (a barrier-like builtin whose arguments are others)."""
    if gen.masks:
        raise node_error(item.stmt, "internal: work-group barrier in masked code")
    site = gen.module.site(item.stmt, "", "barrier", "none", "none")
    if gen.module.has_exit:
        gen.emit("_nx = 0\nfor _lid in range(_NL):\n    if _exited[_lid]:\n        _nx += 1")
        gen.emit("if _nx == _NL:\n    return")
    if gen.module.has_exit and gen.module.bounds:  # checks="none": no divergence check
        gen.emit(f"if _nx != 0:\n    _err[{rec.CODE}] = {rec.EXIT_BEFORE_BARRIER}\n"
                 f"    _err[{rec.SITE}] = {site}\n    _err[{rec.COUNT_A}] = _nx\n"
                 f"    _err[{rec.COUNT_B}] = _NL - _nx\n    return")
    call = item.stmt.value
    gen.in_wi = False
    if fence is not None or not call.args:
        flags = gen.const(3 if fence is None else fence, "int64")
    else:
        flags = gen.typed(call.args[0], "int64")
    gen.in_wi = True
    gen.module.on_barrier(gen, item.stmt, site, flags)


def _no_code(gen, call):
    return None


def _declare(name):
    space = "local" if name == "local_array" else "private"

    def typing(typer, call):
        if len(call.args) != 2:
            raise node_error(call, f"{name}(shape, dtype) takes a shape and a numpy dtype")
        hidden = getattr(call, "vector_array", None)
        if hidden is not None:  # an array of vectors: a pointer to its storage (vector_arrays)
            storage = typer.env.get(hidden)
            element = struct_element(call.args[1])
            view = vector_type(call.args[1]) if element is None else struct_of(element)
            return None if storage is None else ct.PtrT(hidden, storage, view)
        dt = getattr(call.args[1], "resolved", None)
        if not dt or dt[0] != "dtype":
            raise node_error(call, f"{name}: the second argument must be a numpy dtype such "
                                   "as np.float32, a vector type such as float4, or a "
                                   "structured dtype defined at module level")
        shape = typer.program.const_shape(call.args[0], call.loc)
        call.fill = _fill_values(call, shape, dt[1], typer)
        return ct.ArrayT(dt[1], len(shape), space, shape)

    return typing


def _vector_array_lower(gen, call):
    """The pointer an array of vectors is: its first vector (vector_arrays)."""
    if getattr(call, "vector_array", None) is None:
        raise node_error(call, f"{call.func.resolved[1]}() declares an array: assign it to a name on "
                               "its own line (a = private_array(n, np.float32))")
    return gen.const(0, "int64")


def _pointer_array(typer, call):
    if len(call.args) != 1:
        raise node_error(call, "pointer_array(n) takes the number of pointers (a constant), "
                               "as C's global T *a[n]")
    shape = typer.program.const_shape(call.args[0], call.loc)
    if len(shape) != 1:
        raise node_error(call, "pointer_array(n): one dimension")
    return ct.ArrayT("int64", 1, "private", shape, pointee=ct.NULL)


def _number(node):
    value = getattr(node, "resolved", ("", None))[1] if hasattr(node, "resolved") else None
    if isinstance(node, ast.Constant):
        value = node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    return value if ok else None


def _fill_values(call, shape, dtype, typer) -> tuple | None:
    """``fill=x`` (every element) or ``fill=(a, b, ...)`` (the first elements, the rest 0, as
    C's ``float s[4] = {a, b};``): each a number, or any scalar expression (C's non-constant
    initialiser ``{a, b, c, d}``), kept as its node and evaluated where the array is."""
    fill = next((k.value for k in call.keywords if k.arg == "fill"), None)
    if fill is None:
        return None
    items = fill.elts if isinstance(fill, ast.Tuple) else None
    values = []
    for node in (items if items is not None else [fill]):
        number = _number(node)
        if number is not None:
            values.append(number)
            continue
        t = typer.expr(node)
        if t is not None and not ct.is_scalar(t):
            raise node_error(call, f"{call.func.id}(..., fill=...) takes numbers or scalar "
                                   f"expressions, not a {ct.short(t)}")
        if t is not None and ct.is_int(dtype) and ct.is_float(t):
            raise node_error(call, f"fill: a {ct.cname(t)} value for an {ct.cname(dtype)} "
                                   "array (C would truncate): convert it, e.g. np.int32(x)")
        values.append(node)
    if items is not None and (len(shape) != 1 or len(values) > shape[0]):
        raise node_error(call, f"fill=(...) has {len(values)} values for an array of shape "
                               f"{shape}; a tuple fills a 1-D array from its start")
    if ct.is_int(dtype) and any(isinstance(v, float) for v in values):
        raise node_error(call, f"fill: a float value for an {ct.cname(dtype)} array")
    return ("all", values[0]) if items is None else ("start", tuple(values))


def _view_typing(typer, call):
    if len(call.args) not in (2, 3):
        raise node_error(call, "view(buffer, dtype, byte_offset) takes a buffer, a numpy "
                               "dtype (or a struct dtype) and a byte offset")
    buf = typer.pointer(call.args[0])
    kind, what = getattr(call.args[1], "resolved", (None, None))
    if len(call.args) == 3:
        off = typer.expr(call.args[2])
        if off is not None and not ct.is_int(ct.promote(off)):
            raise node_error(call, "view(): the byte offset must be an integer")
    if buf is None:
        return None
    if buf == ct.NULL:  # src2 = view(src2, T, off) on an argument passed None: still None
        return ct.NULL
    if not isinstance(buf, ct.PtrT) or buf.record_copy or buf.array.space == "field":
        raise node_error(call, "view(x, T, off): x must be a buffer, a pointer into one or "
                               "another view (a struct copy b = x[ib] is a value: view the "
                               "pointer, view(x + ib, T, off))")
    if getattr(call, "component_view", False) and isinstance(buf.view, ct.VecT):
        return ct.PtrT(buf.base, buf.array, buf.view.dtype)  # p[i].y in memory (places.py)
    if kind == "dtype" and what != "bool":
        return ct.PtrT(buf.base, buf.array, what)
    if kind == "struct":
        return ct.PtrT(buf.base, buf.array, struct_of(what))
    if kind == "builtin":  # a vector type: view(x, float4) is (global float4 *)x
        return ct.PtrT(buf.base, buf.array, vector_view(what, call.loc))
    raise node_error(call, "view(): the second argument must be a numpy dtype such as "
                           "np.float32, a vector type such as float4, or a structured dtype")


def _view_lower(gen, call):
    return gen.view_offset(call)


def _struct_value_typing(typer, call):
    """A private struct's bytes; the fields given were split off into stores (struct_values)."""
    if len(call.args) > 1 or call.keywords:
        raise node_error(call, "struct_value(T, ...) is a whole statement's value: assign it "
                               "to a variable (v = struct_value(T, a, b)) or return it")
    return struct_of(struct_dtype(call), f"struct_value: ")


def _struct_value_lower(gen, call):
    raise node_error(call, "struct_value(T, ...) is a whole statement's value: assign it to a "
                           "variable (v = struct_value(T, a, b)), then use v")


ENTRIES = [
    *(Builtin(name, FAMILY, _fence_rule(name), cut="work", emit_cut=emit_barrier,
              c=f"{name}(flags)", types="CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE",
              note="every work-item of the group must reach it")
      for name in ("barrier", "work_group_barrier")),
    Builtin("mem_fence", FAMILY, _fence_rule("mem_fence"), lower=_no_code, c="mem_fence(flags)",
            note="orders one work-item's own accesses: nothing to do in the simulator"),
    Builtin("view", FAMILY, typing=_view_typing, lower=_view_lower,
            c="(global T *)((global char *)p + off)", py="q = view(p, np.T, off)",
            types="T: numpy dtype or struct dtype",
            note="a typed view of a buffer's bytes at a byte offset; accesses are checked "
                 "against the buffer"),
    Builtin("struct_value", FAMILY, typing=_struct_value_typing, lower=_struct_value_lower,
            varying=True, c="T v = {a, b}; (T){.f = a}", py="v = struct_value(T, a, b, f=c)",
            types="T: struct dtype",
            note="a private struct from its fields (by position, then by name); the fields not "
                 "given are 0, as in C"),
    Builtin("pointer_array", FAMILY, typing=_pointer_array, varying=True,
            c="global T *a[N]", py="a = pointer_array(N)", types="N: a constant",
            note="one per work-item, uninitialised; a[k] = p stores a pointer (all into one "
                 "buffer, of one type), a[k][i], a[k] + i use it"),
    Builtin("local_array", FAMILY, typing=_declare("local_array"), varying=True,
            lower=_vector_array_lower,
            c="__local T a[N]", py="a = local_array(N, np.T)", types="shape: constants",
            note="one per work-group, uninitialised; N may be a tuple"),
    Builtin("private_array", FAMILY, typing=_declare("private_array"), varying=True,
            lower=_vector_array_lower,
            keywords=("fill",), c="T a[N]", py="a = private_array(N, np.T)",
            types="shape: constants",
            note="one per work-item, uninitialised; fill=0.0 or fill=(a, b) initialises "
                 "(T a[N] = {a, b}: the rest 0; any scalar expressions); T may be a vector "
                 "type or a structured dtype (no fill; C's fill(&s) on a struct)"),
]
