"""OpenCL C's type rules over numpy dtypes: literals, promotions, usual arithmetic conversions.

Numba and numpy promote differently from C (int32 + int32 is int64 in Numba, int32 + float32 is
float64), so the compiler types every expression itself with these rules and the code generator
casts explicitly to the type computed here. Scalars are dtype names ("int32", "float32", "bool");
arrays and vectors are the small frozen records below.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
FLOAT_TYPES = ("float16", "float32", "float64")
SCALAR_TYPES = ("bool", *INT_TYPES, *FLOAT_TYPES)
# How OpenCL C spells each scalar type.
CNAMES = {
    "bool": "bool", "int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort",
    "int32": "int", "uint32": "uint", "int64": "long", "uint64": "ulong", "float16": "half",
    "float32": "float", "float64": "double",
}


@dataclass(frozen=True)
class ArrayT:
    """A buffer (global/constant), a local array, or a private array."""

    dtype: str
    ndim: int
    space: str  # "global", "local", "private"
    shape: tuple[int, ...] | None = None  # known for local and private arrays
    # an array of pointers (C's ``global T *ax[4]``, pointer_array): its elements hold the
    # pointers' offsets (``dtype`` int64) and read as this PtrT (NULL until one is stored)
    pointee: object = None


@dataclass(frozen=True)
class VecT:
    """An OpenCL vector value (float4, uchar16...): a tuple of ``width`` scalars of ``dtype``."""

    dtype: str
    width: int

    def __str__(self) -> str:
        return f"{CNAMES.get(self.dtype, self.dtype)}{self.width}"


@dataclass(frozen=True)
class PtrT:
    """A pointer local (``p = x + k``): always into the buffer ``base`` (whose type is
    ``array``); its value in generated code is the element offset into that buffer, so
    every access through it is checked against the buffer itself."""

    base: str
    array: ArrayT
    # a typed view of the buffer's bytes (view(x, np.float32, byte_offset)): the element
    # type (a scalar name or a structs.StructT); the value is then a byte offset
    view: object = None
    # ``b = x[ib]``: C's copy of one record, read in place (the kernel never writes the
    # buffer, so the copy and the buffer cannot differ); its fields cannot be assigned
    record_copy: bool = False

    @property
    def dtype(self):
        return self.view if self.view is not None else self.array.dtype

    def __str__(self) -> str:
        return f"{self.array.space} {cname(self.dtype)}* (into '{self.base}')"


@dataclass(frozen=True)
class ImageT:
    """An image parameter (``clsim.Image``): kind ("image1d_buffer", "image1d", "image2d"),
    channel order ("R", "RG", "RGBA"), channel type ("float32", "float16", "uint32",
    "unorm_int8"...) and access ("read_only", "write_only"). Its value in generated code is a
    2-D array of rows of ``width * channels`` stored values (clsim.runtime.images); only the
    image builtins (clsim.compiler.builtins.images) take it."""

    kind: str
    order: str
    channel_type: str
    access: str

    def __str__(self) -> str:
        return f"{self.access} {self.kind}_t ({self.order}, {self.channel_type})"

# The type of ``None`` in a kernel: C's NULL, which joins any pointer type (``p = None``,
# ``x + k if c else None``); a null pointer's value is an offset below NULL_BELOW, so scaling
# it to bytes (ct.join_pointers) keeps it null, and no buffer reaches down there.
NULL = "null"
NULL_OFFSET = -(1 << 50)
NULL_BELOW = -(1 << 49)

VECTOR_WIDTHS = (2, 3, 4, 8, 16)
# The element types vectors exist for (OpenCL has no bool vectors).
VECTOR_ELEMENTS = (*INT_TYPES, *FLOAT_TYPES)


def storage_dtype(t: str) -> str:
    """The numpy dtype an array of ``t`` is stored as in generated code: Numba has no float16,
    so a half array is its uint16 bits (see builtins/half.py)."""
    return "uint16" if t == "float16" else t


def register_dtype(t) -> str:
    """The numpy dtype a value of ``t`` is held in: a half value is a float32 that holds it,
    a pointer its element offset."""
    if isinstance(t, PtrT) or t == NULL:
        return "int64"
    return "float32" if t == "float16" else t


def is_vec(t) -> bool:
    return isinstance(t, VecT)


def elem(t):
    """The element type of a vector, or ``t`` itself for a scalar."""
    return t.dtype if isinstance(t, VecT) else t


def mask_int(t: str) -> str:
    """The signed integer type of the same size as ``t``: what a vector comparison yields."""
    return {8: "int8", 16: "int16", 32: "int32", 64: "int64"}[bits(t)]


def is_int(t) -> bool:
    return t in INT_TYPES


def is_float(t) -> bool:
    return t in FLOAT_TYPES


def is_scalar(t) -> bool:
    return isinstance(t, str) and t in SCALAR_TYPES


def bits(t: str) -> int:
    return 8 if t == "bool" else np.dtype(t).itemsize * 8


def is_signed(t: str) -> bool:
    return t.startswith("int") or t.startswith("float")


def int_literal_type(value: int) -> str:
    """C gives an unsuffixed decimal literal the first of int, long that holds it."""
    if -(2**31) <= value < 2**31:
        return "int32"
    if -(2**63) <= value < 2**63:
        return "int64"
    return "uint64"


def promote(t: str) -> str:
    """Integer promotion: bool, char and short compute as int."""
    if t == "bool" or (is_int(t) and bits(t) < 32):
        return "int32"
    return t


def _unsigned_of(t: str) -> str:
    return "u" + t if not t.startswith("u") else t


def arithmetic(a: str, b: str) -> str:
    """The usual arithmetic conversions of C99 6.3.1.8 (OpenCL C inherits them)."""
    if is_float(a) or is_float(b):
        floats = [t for t in (a, b) if is_float(t)]
        return max(floats, key=bits)
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if is_signed(a) == is_signed(b):
        return a if bits(a) >= bits(b) else b
    signed, unsigned = (a, b) if is_signed(a) else (b, a)
    if bits(unsigned) >= bits(signed):
        return unsigned
    if bits(signed) > bits(unsigned):
        return signed
    return _unsigned_of(signed)


def join(a, b):
    """The type a variable gets when assigned values of types a and b, or None if they clash.

    Variables are declared implicitly by their first assignment in Python; the compiler widens
    within a kind (int32 then int64 gives int64) but refuses to mix integer and float, which in C
    would silently truncate.
    """
    if a == b:
        return a
    if isinstance(a, ArrayT) and isinstance(b, ArrayT) and a.pointee is not None and \
            b.pointee is not None and replace(a, pointee=None) == replace(b, pointee=None):
        pointee = join_pointers(a.pointee, b.pointee)  # ax = pointer_array(4) again
        return None if pointee is None else replace(a, pointee=pointee)
    if isinstance(a, PtrT) or isinstance(b, PtrT) or NULL in (a, b):
        return join_pointers(a, b)
    if isinstance(a, VecT) or isinstance(b, VecT):
        vec, other = (a, b) if isinstance(a, VecT) else (b, a)
        # float4 v = 0.0f: a scalar assigned to a vector variable is widened, as in C
        return vec if is_scalar(other) and scalar_fits_vector(other, vec) else None
    if not (is_scalar(a) and is_scalar(b)):
        return None
    if a == "bool":
        return b if is_int(b) else None
    if b == "bool":
        return a if is_int(a) else None
    if is_int(a) != is_int(b):
        return None
    return arithmetic(a, b)


def join_pointers(a, b):
    """One pointer variable holding an element pointer (``p = x + k``) and a typed view of
    the same pointee (``p = view(p, np.float32, off)`` on a float buffer): the view, whose
    value is a byte offset (code generation scales the element offset). Different pointee
    types, or different buffers, do not join: a C pointer variable has one declared type."""
    if a == NULL or b == NULL:  # p = None on one path, a pointer on another
        other = b if a == NULL else a
        return other if isinstance(other, PtrT) or other == NULL else None
    if not (isinstance(a, PtrT) and isinstance(b, PtrT)) or a.base != b.base or \
            a.array != b.array or a.record_copy or b.record_copy:
        return None
    if a.dtype != b.dtype:
        return None
    return a if a.view is not None else b


def scalar_fits_vector(scalar: str, vec: VecT) -> bool:
    """A scalar operand widens to ``vec``'s element type: any integer, or a float into a float
    vector (a float into an integer vector would truncate, which OpenCL C refuses)."""
    return is_int(promote(scalar)) or is_float(vec.dtype)


def cname(t) -> str:
    """OpenCL C's name of a type ("float32" -> "float", VecT -> "float4")."""
    return str(t) if isinstance(t, VecT) else CNAMES.get(t, str(t))


def short(t) -> str:
    """Readable C-ish name for messages."""
    if isinstance(t, ArrayT):
        return f"{t.space} {t.dtype}[]"
    if isinstance(t, VecT | PtrT | ImageT):
        return str(t)
    return CNAMES.get(t, str(t)) if isinstance(t, str) else str(t)
