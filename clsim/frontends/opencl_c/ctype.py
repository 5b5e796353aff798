"""clang's types as the generated Python spells them: scalars as numpy dtypes, vectors as
clsim's ``float4``..., pointers with their address space, arrays, structs by name.

A ``CType`` is what the emitters reason with; ``py_name`` is how a conversion or a declaration
writes it. Nothing here looks at expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

import clang.cindex as ci

from clsim.errors import KernelCompileError

K = ci.TypeKind
SCALARS = {K.BOOL: "bool", K.CHAR_S: "int8", K.SCHAR: "int8", K.CHAR_U: "uint8",
           K.UCHAR: "uint8", K.SHORT: "int16", K.USHORT: "uint16", K.INT: "int32",
           K.UINT: "uint32", K.LONG: "int64", K.ULONG: "uint64", K.LONGLONG: "int64",
           K.ULONGLONG: "uint64", K.HALF: "float16", K.FLOAT: "float32",
           K.DOUBLE: "float64", K.ENUM: "int32"}
OPENCL_NAMES = {"int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort",
                "int32": "int", "uint32": "uint", "int64": "long", "uint64": "ulong",
                "float16": "half", "float32": "float", "float64": "double", "bool": "bool"}
_SPACES = ("__global", "__local", "__constant", "__private", "__generic")
# The image types clsim simulates (clsim.Image's kinds and access qualifiers); clang's other
# image kinds (read_write, 3-D, arrays, depth, MSAA) fall through to "other" and are refused.
_IMAGES = {K.OCLIMAGE1DBUFFERRO: ("image1d_buffer", "read_only"),
           K.OCLIMAGE1DBUFFERWO: ("image1d_buffer", "write_only"),
           K.OCLIMAGE1DRO: ("image1d", "read_only"), K.OCLIMAGE1DWO: ("image1d", "write_only"),
           K.OCLIMAGE2DRO: ("image2d", "read_only"), K.OCLIMAGE2DWO: ("image2d", "write_only")}


@dataclass(frozen=True)
class CType:
    """kind: scalar, vector, pointer, array, struct, void, image, sampler, other. An image's
    name is its clsim.Image kind (image1d_buffer, image1d, image2d), its space the access
    qualifier (read_only, write_only)."""

    kind: str
    name: str = ""               # scalar dtype name, struct name, or what 'other' is
    width: int = 0               # vector width
    inner: CType | None = None   # pointee or element
    space: str = ""              # pointer's address space: global, local, constant, private
    dims: tuple[int, ...] = ()   # array extents

    @property
    def is_int(self) -> bool:
        return self.kind == "scalar" and self.name[0] in "iu"

    @property
    def is_float(self) -> bool:
        return self.kind == "scalar" and self.name[0] == "f"

    @property
    def py_name(self) -> str:
        """How a conversion to this type is written: np.float32, float4, block_q4_0."""
        if self.kind == "scalar":
            return "bool" if self.name == "bool" else f"np.{self.name}"
        if self.kind == "vector":
            return f"{OPENCL_NAMES[self.name]}{self.width}"
        if self.kind == "struct":
            return self.name
        raise KernelCompileError(f"internal: no Python name for {self}")

    def __str__(self) -> str:
        if self.kind == "scalar":
            return OPENCL_NAMES[self.name]
        if self.kind == "vector":
            return f"{OPENCL_NAMES[self.name]}{self.width}"
        if self.kind == "pointer":
            return f"{self.space} {self.inner} *"
        if self.kind == "array":
            return f"{self.inner}{''.join(f'[{d}]' for d in self.dims)}"
        if self.kind == "image":
            return f"{self.space} {self.name}_t"
        if self.kind == "sampler":
            return "sampler_t"
        return self.name or self.kind


VOID = CType("void")


def _space(type_: ci.Type) -> str:
    spelling = type_.spelling
    return next((s[2:] for s in _SPACES if s in spelling), "private")


_MEMO: dict[tuple, CType] = {}


def ctype(type_: ci.Type) -> CType:
    """The CType of a clang type (typedefs and qualifiers looked through)."""
    key = (type_.kind, type_.spelling)  # one name is one type in a translation unit
    found = _MEMO.get(key)
    if found is None:
        found = _MEMO[key] = _ctype(type_.get_canonical())
    return found


def clear_memo() -> None:
    """Forget the types of the last translation unit (struct names may mean others now)."""
    _MEMO.clear()


def _ctype(t: ci.Type) -> CType:
    kind = t.kind
    if kind in SCALARS:
        return CType("scalar", SCALARS[kind])
    if kind == K.VOID:
        return VOID
    if kind == K.EXTVECTOR or kind == K.VECTOR:
        elem = ctype(t.element_type)
        return CType("vector", elem.name, width=t.element_count)
    if kind == K.POINTER:
        pointee = t.get_pointee()
        return CType("pointer", inner=ctype(pointee), space=_space(pointee))
    if kind == K.CONSTANTARRAY:
        dims = []
        while t.kind == K.CONSTANTARRAY:
            dims.append(t.get_array_size())
            t = t.element_type.get_canonical()
        return CType("array", inner=ctype(t), dims=tuple(dims))
    if kind in (K.INCOMPLETEARRAY, K.VARIABLEARRAY):
        return CType("other", "an array without a constant size")
    if kind == K.RECORD:
        decl = t.get_declaration()
        if decl.kind == ci.CursorKind.UNION_DECL:
            return CType("other", "a union")
        return CType("struct", struct_name(decl))
    if kind in _IMAGES:
        image_kind, access = _IMAGES[kind]
        return CType("image", image_kind, space=access)
    if kind == K.OCLSAMPLER:
        return CType("sampler")
    spelling = t.spelling.replace("__private ", "")
    if spelling == "event_t":
        return CType("scalar", "int32")
    return CType("other", spelling)


def struct_name(decl: ci.Cursor) -> str:
    """A struct's Python name: its tag, or the typedef that names an anonymous one."""
    name = decl.spelling
    if not name or "(unnamed" in name or "(anonymous" in name:
        return f"struct_{decl.location.line}"
    return name.replace("struct ", "")
