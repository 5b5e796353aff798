"""Expressions of the typed kernel AST as OpenCL C.

Every node carries the OpenCL C type the compiler's typing gave it (``node.ctype``); C
computes the same types from the same operand types (the usual arithmetic conversions are
C's own), so operators print as they are: ``//`` on integers is C's ``/`` (both truncate), ``%``
keeps the dividend's sign in both. Casts are printed where clsim's typing differs from C's
(ids are ``size_t`` in C) or where it converted (``np.float32(x)``). Half values: a half
read converted to float is ``vload_half`` (no cl_khr_fp16 needed); any other half arithmetic
marks the kernel as needing cl_khr_fp16.
"""

from __future__ import annotations

import ast

from clsim.backends.opencl_c import calls
from clsim.backends.opencl_c.names import c_name, literal
from clsim.compiler import ctypes as ct
from clsim.compiler.diagnostics import node_error
from clsim.compiler.structs import StructT

# C precedence (higher binds tighter).
_PRIMARY, _UNARY = 16, 14
_BINOPS = {
    ast.Mult: ("*", 13), ast.Div: ("/", 13), ast.FloorDiv: ("/", 13), ast.Mod: ("%", 13),
    ast.Add: ("+", 12), ast.Sub: ("-", 12), ast.LShift: ("<<", 11), ast.RShift: (">>", 11),
    ast.BitAnd: ("&", 8), ast.BitXor: ("^", 7), ast.BitOr: ("|", 6),
}
_CMPS = {ast.Lt: ("<", 10), ast.LtE: ("<=", 10), ast.Gt: (">", 10), ast.GtE: (">=", 10),
         ast.Eq: ("==", 9), ast.NotEq: ("!=", 9)}
_UNARIES = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "!"}
_BITWISE = (6, 7, 8, 11)  # operators whose operands read better parenthesised
_HALF_TO_FLOAT = ("float32", "float64")


def _is_half(t) -> bool:
    return t == "float16" or (isinstance(t, ct.VecT) and t.dtype == "float16")


class ExprPrinter:
    """Prints expressions; the statement printer (``stmts.FunctionPrinter``) extends it."""

    def __init__(self, unit, env: dict):
        self.unit = unit  # the translation unit: defines, tables, structs, features
        self.env = env
        self.loop_names: dict[str, str] = {}
        self.half_read = False  # printing the place of a vload_half / vstore_half

    # -- helpers ----------------------------------------------------------------------------
    def type_name(self, t) -> str:
        return self.unit.type_name(t)

    def cast(self, code: str, t, node=None) -> str:
        if node is not None and getattr(node, "ctype", None) == t:
            return code
        if isinstance(node, ast.Constant) and ct.is_scalar(t) and t != "bool":
            return literal(node.value, t)  # fmax(x, 0) is fmax(x, 0.0f)
        return f"({self.type_name(t)}){self._tight(code)}"

    @staticmethod
    def _tight(code: str) -> str:
        simple = code.replace("_", "a").replace(".", "a").isalnum()
        return code if simple or (code.startswith("(") and _balanced_outer(code)) \
            else f"({code})"

    def space_of(self, node) -> str:
        t = getattr(node, "ctype", None)
        if isinstance(t, ct.PtrT):
            return t.array.space
        return t.space if isinstance(t, ct.ArrayT) else "private"

    def place_space(self, node) -> str:
        """The address-space qualifier (with a trailing space) of the memory ``node``, an
        element or field, lives in."""
        space = "private"
        while isinstance(node, ast.Subscript | ast.Attribute):
            t = getattr(node.value, "ctype", None)
            if isinstance(t, ct.PtrT):
                space = "private" if t.record_copy else t.array.space
                break
            if isinstance(t, ct.ArrayT) and t.space != "field":
                space = t.space
                break
            node = node.value
        qual = {"global": "__global ", "local": "__local ", "constant": "__constant "}
        return qual.get(space, "")

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node) -> str:
        return self.prec(node)[0]

    def sub(self, node, need: int, strict: bool = False) -> str:
        code, p = self.prec(node)
        if p < need or (strict and p == need):
            return f"({code})"
        return code

    def prec(self, node) -> tuple[str, int]:
        t = getattr(node, "ctype", None)
        if _is_half(t) and not self.half_read:
            self.unit.require_fp16(node)
        self.unit.note_type(t)
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise node_error(node, f"OpenCL C output: '{type(node).__name__}' expressions "
                                   "cannot be printed")
        return method(node)

    def _Constant(self, node):
        if isinstance(node.value, str):
            raise node_error(node, "a string outside printf() has no OpenCL C value")
        return literal(node.value, node.ctype), _PRIMARY

    def _Name(self, node):
        resolved = getattr(node, "resolved", None)
        if resolved is not None:
            return self.unit.named_value(node, resolved), _PRIMARY
        return self.loop_names.get(node.id) or c_name(node.id), _PRIMARY

    def _BinOp(self, node):
        sym, p = _BINOPS[type(node.op)]
        left = self.sub(node.left, p + (1 if p in _BITWISE else 0))
        right = self.sub(node.right, p + 1)
        return f"{left} {sym} {right}", p

    def _UnaryOp(self, node):
        sym = _UNARIES[type(node.op)]
        operand = self.sub(node.operand, _UNARY)
        if sym in "-+" and operand.startswith(sym):
            operand = f"({operand})"
        return f"{sym}{operand}", _UNARY

    def _BoolOp(self, node):
        sym, p = ("&&", 5) if isinstance(node.op, ast.And) else ("||", 4)
        need = p + 1 if sym == "&&" else 6  # a && b inside || reads better (and -Wparentheses)
        return f" {sym} ".join(self.sub(v, need) for v in node.values), p

    def _Compare(self, node):
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            sym, p = _CMPS[type(op)]
            parts.append(f"{self.sub(left, p + 1)} {sym} {self.sub(right, p + 1)}")
            left = right
        if len(parts) == 1:
            return parts[0], _CMPS[type(node.ops[0])][1]
        return " && ".join(f"({x})" for x in parts), 5

    def _IfExp(self, node):
        test, body = self.sub(node.test, 4), self.sub(node.body, 4)
        orelse = self.sub(node.orelse, 3)
        if node.ctype is not None and not isinstance(node.ctype, ct.VecT):
            body = self._converted(node.body, node.ctype, body)
            orelse = self._converted(node.orelse, node.ctype, orelse)
        return f"{test} ? {body} : {orelse}", 3

    def _converted(self, node, t, code):
        return code if getattr(node, "ctype", None) == t else self.cast(code, t)

    def _Tuple(self, node):
        return f"({self.type_name(node.ctype)})({', '.join(self.expr(e) for e in node.elts)})", \
            _PRIMARY

    def _Subscript(self, node):
        view = node.value
        if getattr(view, "component_view", False) and isinstance(node.slice, ast.Constant):
            pointer = view.args[0]  # view(p + i, T)[k], the rewrite of p[i].sk (places.py)
            base = self.sub(pointer.left, _PRIMARY)
            return f"{base}[{self.expr(pointer.right)}].s{node.slice.value:x}", _PRIMARY
        base_t = getattr(node.value, "ctype", None)
        base = self.sub(node.value, _PRIMARY)
        idx = node.slice
        if isinstance(base_t, ct.VecT):
            if isinstance(idx, ast.Constant):
                return f"{base}.s{idx.value:x}", _PRIMARY
            return f"{base}[{self.expr(idx)}]", _PRIMARY
        indices = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        return base + "".join(f"[{self.expr(i)}]" for i in indices), _PRIMARY

    def _Attribute(self, node):
        resolved = getattr(node, "resolved", None)
        if resolved is not None:
            return self.unit.named_value(node, resolved), _PRIMARY
        base_t = getattr(node.value, "ctype", None)
        base = self.sub(node.value, _PRIMARY)
        if isinstance(base_t, ct.PtrT) and isinstance(base_t.dtype, StructT) \
                and not base_t.record_copy:
            return f"{base}->{node.attr}", _PRIMARY
        return f"{base}.{node.attr}", _PRIMARY

    def _Call(self, node):
        kind, value = getattr(node.func, "resolved", (None, None))
        if kind == "dtype":
            return self._conversion(node, value), _UNARY
        if kind == "func":
            return self.unit.helper_call(self, node, value), _PRIMARY
        if kind == "builtin":
            return calls.call(self, node, value), _PRIMARY
        raise node_error(node, f"OpenCL C output: '{ast.unparse(node.func)}' cannot be called")

    def half_place(self, node) -> str:
        """The half element ``node`` as an lvalue whose address vload_half/vstore_half take."""
        self.half_read = True
        try:
            return self.sub(node, _UNARY)
        finally:
            self.half_read = False

    def _conversion(self, node, t: str) -> str:
        arg = node.args[0]
        if t in _HALF_TO_FLOAT and getattr(arg, "ctype", None) == "float16" \
                and isinstance(arg, ast.Subscript | ast.Attribute) \
                and getattr(arg, "resolved", None) is None:
            code = f"vload_half(0, &{self.half_place(arg)})"  # no cl_khr_fp16 needed
            return code if t == "float32" else f"(double){code}"
        return f"({self.type_name(t)}){self.sub(arg, _UNARY)}"


def _balanced_outer(code: str) -> bool:
    """Whether the parentheses opening ``code`` close at its end."""
    depth = 0
    for k, ch in enumerate(code):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return k == len(code) - 1
    return False
