"""What the OpenCL C emitters share: an emitted expression (``Py``), the error for a construct
the Python language lacks (``Unsupported``), clang node helpers (children, implicit casts that
keep a value) and how a constant is written."""

from __future__ import annotations

from dataclasses import dataclass

import clang.cindex as ci
import numpy as np

from clsim import api
from clsim.frontends.opencl_c.ctype import CType, ctype
from clsim.frontends.opencl_c.parse import evaluate
from clsim.runtime.images import SAMPLER_CONSTANTS

CK = ci.CursorKind
ATOM, UNARY, POWER = 14, 12, 13
PREC = {"or": 2, "and": 3, "not": 4, "cmp": 5, "|": 6, "^": 7, "&": 8, "<<": 9, ">>": 9,
        "+": 10, "-": 10, "*": 11, "/": 11, "//": 11, "%": 11, "if": 1}
COMPARE = {"<", ">", "<=", ">=", "==", "!="}
BOOL = CType("scalar", "bool")
INT32, INT64 = CType("scalar", "int32"), CType("scalar", "int64")
_BARE_OK = {"int32", "int64", "uint32", "uint64"}
_NAMED_CONSTANTS = {n for n in vars(api) if n.isupper()}
# C builtins whose value the Python twin names differently.
RENAMED_CALLS = {"__builtin_inff": "INFINITY", "__builtin_huge_valf": "HUGE_VALF",
                 "__builtin_nanf": "NAN"}
OUT_PARAM_BUILTINS = {"frexp", "modf", "fract", "sincos", "remquo", "lgamma_r"}


class Unsupported(Exception):
    """A construct the Python kernel language cannot express yet; carries the cursor."""

    def __init__(self, cursor, what: str):
        super().__init__(what)
        self.cursor, self.what = cursor, what


@dataclass
class Py:
    code: str
    type: CType
    prec: int = ATOM
    # A char pointer plus a byte offset, (base, offset): a cast of it becomes view(base, T, off).
    byte_base: tuple[str, str] | None = None
    # A char view of a pointer, view(p, np.int8): p, so bytes counted from it view p directly.
    viewed: str | None = None


_CHILDREN: dict = {}


def children(cursor) -> list:
    """A node's children (memoised: the emitters look at a node's children several times)."""
    key = cursor.hash
    kids = _CHILDREN.get(key)
    if kids is None or kids[0] != cursor:
        kids = _CHILDREN[key] = (cursor, list(cursor.get_children()))
        if len(_CHILDREN) > 200_000:
            _CHILDREN.clear()
    return kids[1]


def strip(cursor):
    """The node under parentheses and value-preserving implicit casts."""
    while True:
        if cursor.kind == CK.PAREN_EXPR:
            cursor = children(cursor)[0]
            continue
        if cursor.kind == CK.UNEXPOSED_EXPR:
            kids = children(cursor)
            if len(kids) == 1 and _same_value(ctype(kids[0].type), ctype(cursor.type)):
                cursor = kids[0]
                continue
        return cursor


def _same_value(a: CType, b: CType) -> bool:
    """Types whose conversion keeps the value: equal, or pointers to one type in two spaces."""
    return a == b or a.kind == b.kind == "pointer" and a.inner == b.inner


def _widening_child(cursor):
    """The operand under an implicit conversion that keeps every value (a signed integer to a
    wider signed one, an unsigned to any wider integer, a float to a wider float), else None."""
    c = cursor
    while c.kind == CK.PAREN_EXPR:
        c = children(c)[0]
    if c.kind != CK.UNEXPOSED_EXPR or len(children(c)) != 1:
        return None
    child = children(c)[0]
    to, frm = ctype(c.type), ctype(child.type)
    if to.kind != "scalar" or frm.kind != "scalar" or frm.name == "bool":
        return None
    wide, narrow = np.dtype(to.name), np.dtype(frm.name)
    if wide.itemsize <= narrow.itemsize or wide.kind not in "iuf" or narrow.kind not in "iuf":
        return None
    ok = (wide.kind == narrow.kind) or (wide.kind == "i" and narrow.kind == "u")
    return child if ok else None


def constant_expression(cursor) -> bool:
    """Literals and operators only (no variable, no call): clang's value of it is the value."""
    return all(n.kind in (CK.INTEGER_LITERAL, CK.FLOATING_LITERAL, CK.CHARACTER_LITERAL,
                          CK.BINARY_OPERATOR, CK.UNARY_OPERATOR, CK.PAREN_EXPR,
                          CK.UNEXPOSED_EXPR, CK.CXX_UNARY_EXPR, CK.TYPE_REF)
               for n in cursor.walk_preorder())


def literal(value, t: CType) -> Py:
    """A constant of C type ``t`` as the Python twin writes it."""
    if t.kind == "scalar" and t.name == "float32":
        return Py(_float_text(value, np.float32), t)
    if t.kind == "scalar" and t.name == "int32":
        return Py(str(int(value)), t, ATOM if value >= 0 else UNARY)
    if t.kind == "scalar" and t.name == "bool":
        return Py("True" if value else "False", t)
    if t.is_float:
        return Py(f"{t.py_name}({_float_text(value, np.float64)})", t)
    return Py(f"{t.py_name}({int(value)})", t)


def _float_text(value: float, kind) -> str:
    if np.isnan(value):
        return "NAN"
    if np.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    text = repr(float(kind(value))) if kind is np.float64 else str(kind(value))
    return text if any(c in text for c in ".e") else text + ".0"


def wrap(py: Py, need: int) -> str:
    return py.code if py.prec >= need else f"({py.code})"


def sampler_value(init) -> int | None:
    """The int a ``sampler_t`` initialiser converts (clang types the conversion as the
    sampler, which it does not evaluate), or None when it is not a constant."""
    node = strip(init)
    while ctype(node.type).kind == "sampler" and len(children(node)) == 1:
        node = strip(children(node)[0])
    value = evaluate(node)
    return value if isinstance(value, int) else None


def sampler_text(var, init) -> str:
    """A constant ``sampler_t`` declaration's value as the Python twin's module-level int: the
    ``CLK_...`` names or-ed as the source spells them after ``=`` (``from clsim import
    CLK_...``), else its value."""
    words = [tok.spelling for tok in var.get_tokens()]
    words = words[words.index("=") + 1:] if "=" in words else []
    words = words[:words.index(";")] if ";" in words else words
    if words and all(w in SAMPLER_CONSTANTS or w in "|()" for w in words):
        return " | ".join(w for w in words if w in SAMPLER_CONSTANTS)
    return str(sampler_value(init))


def site(cursor) -> tuple:
    """Where a node starts: clang puts a constant sampler's initialiser at each use, so its
    place names the sampler."""
    start = cursor.extent.start
    return (start.file.name if start.file else "", start.line, start.column)
