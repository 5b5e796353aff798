"""Packed structs: a numpy structured dtype is an OpenCL ``__attribute__((packed))`` struct.

A buffer of records (``np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])``, GGUF's
``block_q4_0``) reaches the generated code as its bytes; ``x[ib].d`` and ``x[ib].qs[j]`` read
and write the field's bytes at ``ib * itemsize + offset`` (little-endian), so any packed
layout works, 18-byte blocks included. ``cstruct(dtype, name)`` prints the C typedef of the
same layout, with size and offset static asserts, for the ``.cl`` twin. Typing of field
chains is ``infer``'s; the byte loads and stores are the runtime helpers below.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler.helpers import Helper, helper
from clsim.errors import KernelCompileError


@dataclass(frozen=True)
class Field:
    name: str
    dtype: object  # a scalar type name or a StructT
    offset: int
    shape: tuple[int, ...] = ()  # an array field: qs[16]


@dataclass(frozen=True)
class StructT:
    """A packed record type; ``name`` is for messages (``struct{d,qs}``)."""

    fields: tuple[Field, ...]
    itemsize: int

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def __str__(self) -> str:
        return "struct{" + ",".join(f.name for f in self.fields) + "}"


def struct_of(dtype: np.dtype, where: str = "") -> StructT:
    """The StructT of a numpy structured dtype (fields of scalars, subarrays, records)."""
    fields = []
    for name in dtype.names:
        sub, offset = dtype.fields[name][:2]
        shape: tuple[int, ...] = ()
        if sub.subdtype is not None:
            sub, shape = sub.subdtype
        if sub.names is not None:
            inner = struct_of(sub, where)
        elif sub.name in ct.SCALAR_TYPES and sub.name != "bool":
            inner = sub.name
        else:
            raise KernelCompileError(f"{where}field '{name}' has dtype {sub}, which kernels "
                                     "cannot use; use integer, float16/32/64 fields")
        fields.append(Field(name, inner, offset, tuple(shape)))
    return StructT(tuple(fields), dtype.itemsize)


def size_of(t) -> int:
    if isinstance(t, ct.VecT):
        return t.width * ct.bits(t.dtype) // 8
    return t.itemsize if isinstance(t, StructT) else ct.bits(t) // 8


# -- runtime helpers: a scalar of type t at byte offset o of a uint8 buffer ---------------------
def _load_source(t: str) -> str:
    n = ct.bits(t) // 8
    word = " | ".join(f"(np.uint64(b[o + {k}]) << np.uint64({8 * k}))" for k in range(n))
    if t == "float16":
        value = "_h2f(np.uint16(w))"
    elif t in ("float32", "float64"):
        value = f"_bitcast_{t}(np.uint{8 * n}(w))"
    else:
        value = f"np.{t}(np.uint{8 * n}(w))"
    return f"def _ldb_{t}(b, o):\n    w = {word}\n    return {value}"


def _store_source(t: str) -> str:
    n = ct.bits(t) // 8
    if t == "float16":
        bits = "np.uint64(_f2h(v))"
    elif t in ("float32", "float64"):
        bits = f"np.uint64(_bitcast_uint{8 * n}(np.{t}(v)))"
    else:
        bits = f"np.uint64(np.uint{8 * n}(v))"
    body = "".join(f"\n    b[o + {k}] = np.uint8((w >> np.uint64({8 * k})) & np.uint64(255))"
                   for k in range(n))
    return f"def _stb_{t}(b, o, v):\n    w = {bits}{body}"


# A whole record copied (b = x[ib], x[i] = b, y[j] = x[i]): C's struct assignment, its bytes.
_COPY_SOURCE = """def _cpb(dst, doff, src, soff, n):
    for k in range(n):
        dst[doff + k] = src[soff + k]"""


def _helpers() -> tuple[Helper, ...]:
    out = [helper("_cpb", _COPY_SOURCE)]
    for t in ct.SCALAR_TYPES:
        if t == "bool":
            continue
        deps = ("_h2f",) if t == "float16" else ()
        out.append(helper(f"_ldb_{t}", _load_source(t), deps))
        out.append(helper(f"_stb_{t}", _store_source(t), ("_f2h",) if t == "float16" else ()))
    return tuple(out)


HELPERS = _helpers()


# -- the C typedef ------------------------------------------------------------------------------
def _c_fields(st: StructT, indent: str) -> list[str]:
    """The fields, with a ``uchar _padN[k]`` where the dtype leaves a gap (an aligned C
    struct translated to a dtype with offsets), so the packed typedef has the same layout."""
    lines, end = [], 0
    for f in st.fields:
        if f.offset > end:
            lines.append(f"{indent}uchar _pad{end}[{f.offset - end}];")
        end = f.offset + size_of(f.dtype) * int(np.prod(f.shape, dtype=np.int64))
        dims = "".join(f"[{n}]" for n in f.shape)
        if isinstance(f.dtype, StructT):
            lines.append(f"{indent}struct __attribute__((packed)) {{")
            lines += _c_fields(f.dtype, indent + "    ")
            lines.append(f"{indent}}} {f.name}{dims};")
        else:
            lines.append(f"{indent}{ct.cname(f.dtype)} {f.name}{dims};")
    if st.itemsize > end:
        lines.append(f"{indent}uchar _pad{end}[{st.itemsize - end}];")
    return lines


def cstruct(dtype, name: str) -> str:
    """OpenCL C source of the packed typedef ``name`` matching the numpy structured ``dtype``,
    with static asserts on its size and every top-level field's offset (so the ``.cl`` twin
    and the Python kernel cannot drift apart). Half fields need cl_khr_fp16 enabled."""
    dtype = np.dtype(dtype)
    if dtype.names is None:
        raise KernelCompileError(f"cstruct: {dtype} is not a structured dtype; build one with "
                                 "np.dtype([('d', np.float16), ('qs', np.uint8, (16,))])")
    st = struct_of(dtype, f"cstruct {name}: ")
    lines = ["typedef struct __attribute__((packed)) {", *_c_fields(st, "    "), f"}} {name};",
             f'_Static_assert(sizeof({name}) == {st.itemsize}, "{name}: size");']
    lines += [f'_Static_assert(__builtin_offsetof({name}, {f.name}) == {f.offset}, '
              f'"{name}: offset of {f.name}");' for f in st.fields]
    return "\n".join(lines) + "\n"
