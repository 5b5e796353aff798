"""Type inference with OpenCL C rules.

Gives every expression node a ``ctype`` and every variable one type (the join of what is
assigned to it, see ``ctypes.join``), so the code generator can cast explicitly and the result
never depends on Numba's or numpy's own promotions. Helpers (``@func`` without barriers) are
typed per argument-type signature through ``Program.specialize``.
"""

from __future__ import annotations

import ast
from dataclasses import replace

import numpy as np

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler import vectors as vx
from clsim.compiler.builtins import lift
from clsim.compiler.diagnostics import builtin_name, compile_error
from clsim.compiler.frontend import func_target
from clsim.compiler.places import (
    check_record_copies,
    field_pointer,
    pointer_clash,
    check_struct_assignment,
    field_type,
    is_place_in_bytes,
    pointer_arith,
    record_pointer,
    refuse_constant_store,
    refuse_copy_store,
    rewrite_component_load,
    rewrite_component_store,
    rewrite_field_update,
)
from clsim.compiler.struct_locals import by_value
from clsim.compiler.structs import StructT

_OPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.Pow: "**",
}
_CMPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def const_type(value):
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, np.generic):
        return value.dtype.name
    if isinstance(value, int):
        return ct.int_literal_type(value)
    if isinstance(value, float):
        return "float32"  # a bare Python float literal is a float (0.1f), as the docs promise
    return None


def is_pointer_like(t) -> bool:
    """A pointer, or a buffer (read as a pointer to its first element)."""
    return (isinstance(t, ct.PtrT) and not t.record_copy) or (
        isinstance(t, ct.ArrayT) and t.ndim == 1 and t.pointee is None and
        t.space in ("global", "constant", "local"))


def binop_type(op: str, a, b, loc):
    if isinstance(a, ct.PtrT) or isinstance(b, ct.PtrT) or ct.NULL in (a, b):
        return pointer_arith(op, a, b, loc)
    if isinstance(a, ct.VecT) or isinstance(b, ct.VecT):
        return vx.binop_type(op, a, b, loc)
    if not (ct.is_scalar(a) and ct.is_scalar(b)):
        raise compile_error(loc, f"'{op}' between {ct.short(a)} and {ct.short(b)} is not "
                                 "supported; index arrays and vectors element by element")
    if op == "/" and ct.is_int(ct.promote(a)) and ct.is_int(ct.promote(b)):
        raise compile_error(loc, "'/' between two integers: write '//' for C integer "
                                 "division (truncates toward zero), or convert one side to float")
    if op == "**":
        raise compile_error(loc, "'**' is not supported: write pow(x, y), pown, or x * x")
    if op in ("<<", ">>", "&", "|", "^", "%", "//") and not (
        ct.is_int(ct.promote(a)) and ct.is_int(ct.promote(b))
    ):
        if op == "//":
            raise compile_error(loc, "'//' on floats: write floor(x / y)")
        if op == "%":
            raise compile_error(loc, "'%' on floats: write fmod(x, y)")
        raise compile_error(loc, f"'{op}' needs integer operands, got {a} and {b}")
    if op in ("<<", ">>"):
        return ct.promote(a)
    return ct.arithmetic(a, b)


class Typer:
    """Types one function body. ``env`` maps variable names to types."""

    def __init__(self, program, params: dict[str, object], name: str):
        self.program = program
        self.env: dict[str, object] = dict(params)
        self.params = set(params)
        self.name = name
        self.returns: list = []
        self.final = False
        self.start_env = dict(params)
        # b = x[ib] record copies read in place, by buffer: [(variable, line, is a variable)];
        # in place is C's copy while the kernel does not write that buffer (struct_locals)
        self.record_copies: dict[str, list] = {}
        self.struct_copies: set[str] = set()  # record copies that need their own bytes
        self.needs_copy: set[str] = set()  # found while typing: they must be struct_copies
        self.first_assigned: dict[str, tuple] = {}  # name -> (loc, type) of its first value
        self.view_values: dict[str, dict] = {}  # view pointer locals: the values assigned

    # -- statements -------------------------------------------------------------------------
    def run(self, body: list[ast.stmt]) -> None:
        """Type ``body``; again with their own bytes for the record copies that turn out to
        be modified, or whose buffer the body writes (they cannot be read in place)."""
        while True:
            self._run_once(body)
            if self.record_copies:
                self.needs_copy |= check_record_copies(body, self.record_copies, self.program)
            if self.needs_copy <= self.struct_copies:
                return
            self.struct_copies |= self.needs_copy
            self.env, self.final = dict(self.start_env), False
            self.record_copies, self.first_assigned, self.view_values = {}, {}, {}

    def _run_once(self, body: list[ast.stmt]) -> None:
        for _ in range(12):
            before = dict(self.env)
            self.returns = []
            self.block(body)
            if self.env == before:
                break
        self.final = True
        self.returns = []
        self.block(body)

    def block(self, stmts):
        for s in stmts:
            self.stmt(s)

    def assign_name(self, name: str, t, loc, aug: bool = False):
        if t is None:
            return
        if isinstance(t, ct.PtrT) and isinstance(self.env.get(t.base), ct.PtrT):
            t = self.env[t.base]  # q = p: a pointer into p's buffer
        if isinstance(t, ct.ArrayT) and t.space == "field":
            raise compile_error(loc, f"'{name}' would hold an array field; copy the record "
                                     "(b = x[ib], then b.qs[j]) or read its elements where "
                                     "they are used (x[ib].qs[j])")
        old = self.env.get(name)
        if name in self.params and isinstance(old, ct.ArrayT):
            raise compile_error(loc, f"buffer parameter '{name}' cannot be reassigned")
        if old is None:
            self.env[name] = t
            self.first_assigned.setdefault(name, (loc, t))
            return
        if aug:
            if ct.is_int(old) and ct.is_float(t):
                raise compile_error(
                    loc, f"'{name}' is {old} but this update computes {t}, which C would "
                         f"truncate; initialise '{name}' with a float (e.g. 0.0)")
            return
        joined = ct.join(old, t)
        if joined is None and isinstance(old, ct.PtrT) and isinstance(t, ct.PtrT):
            raise compile_error(loc, pointer_clash(name, old, t))
        if joined is None:
            first, first_t = self.first_assigned.get(name, (None, old))
            line = f" (line {first.line} assigns it {ct.short(first_t)})" if first else ""
            raise compile_error(
                loc, f"'{name}' holds {ct.short(old)} elsewhere but {ct.short(t)} here{line}; "
                     "a variable has one type in OpenCL C, and this one is read where either "
                     "value may reach. Convert explicitly, e.g. np.float32(x) or "
                     "convert_int(x), use 0.0 for a float start value, or use two names")
        self.env[name] = joined

    def stmt(self, s):
        loc = s.loc
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise compile_error(loc, "chained assignment 'a = b = x': write two lines")
            if rewrite_component_store(self, s, s.targets[0], s.value):
                return self.stmt(s)
            self.assign_target(s.targets[0], s.value, loc)
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name) and rewrite_component_store(
                    self, s, s.target, None):
                return self.stmt(s)
            if isinstance(s.target, ast.Name):
                cur = self.env.get(s.target.id)
                if cur is None and self.final:
                    raise compile_error(loc, f"'{s.target.id}' is updated before it is assigned")
                vt = self.expr(s.value)
                if cur is not None and vt is not None:
                    res = binop_type(_OPS[type(s.op)], cur, vt, loc)
                    if isinstance(res, ct.VecT) and not isinstance(cur, ct.VecT):
                        raise compile_error(loc, f"'{s.target.id}' is {ct.short(cur)} but this "
                                                 f"update computes {res}")
                    self.assign_name(s.target.id, cur, loc, aug=True)
                    if ct.is_int(cur) and ct.is_float(vt):
                        self.assign_name(s.target.id, vt, loc, aug=True)
            elif isinstance(s.target, ast.Subscript | ast.Attribute):
                refuse_constant_store(s.target, loc)
                et = self.expr(s.target)
                if is_place_in_bytes(s.target):  # x[i].d += v, p[i] += v through a view
                    rewrite_field_update(s)
                    return self.stmt(s)
                vt = self.expr(s.value)
                if et is not None and vt is not None:
                    binop_type(_OPS[type(s.op)], et, vt, loc)
            else:
                raise compile_error(loc, "unsupported augmented assignment target")
        elif isinstance(s, ast.If | ast.While):
            if isinstance(self.expr(s.test), ct.VecT):
                raise vx.truth_error(s.test.ctype, s.test.loc)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.For):
            self.for_stmt(s)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return
            self.expr(s.value)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                t = self.expr(s.value)
                if t is not None:
                    self.returns.append(t)
        elif isinstance(s, ast.Break | ast.Continue | ast.Pass):
            return
        elif isinstance(s, ast.AnnAssign):
            raise compile_error(loc, "annotated assignment: drop the annotation and convert the "
                                     "value instead, e.g. x = np.float32(0)")
        else:
            raise compile_error(loc, f"'{type(s).__name__}' statements are not supported")

    def assign_target(self, target, value, loc):
        if isinstance(target, ast.Name):
            self.assign_variable(target, value, loc)
        elif isinstance(target, ast.Subscript | ast.Attribute):
            self.assign_place(target, value, loc)
        elif isinstance(target, ast.Tuple):
            if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
                raise compile_error(loc, "tuple assignment needs a tuple of the same length on "
                                         "the right, e.g. a, b = b, a")
            for t, v in zip(target.elts, value.elts, strict=True):
                if not isinstance(t, ast.Name):
                    raise compile_error(loc, "tuple assignment targets must be plain names")
                vt = self.expr(v)
                if isinstance(vt, StructT) or by_value(vt):
                    raise compile_error(loc, "structs in a tuple assignment: assign one "
                                             "struct per line (a = x[0], then b = x[1])")
                if isinstance(vt, ct.PtrT) and not vt.record_copy:
                    self.view_values.setdefault(t.id, {})[id(v)] = v
                self.assign_name(t.id, vt, loc)
            value.ctype = None
        else:
            raise compile_error(loc, "unsupported assignment target")

    def assign_variable(self, target, value, loc):
        """``name = value``: a value, a pointer, a record copy read in place or with its
        own bytes (struct_locals)."""
        t = self.pointer(value) if isinstance(value, ast.Name | ast.Attribute) else \
            self.expr(value)
        if target.id in self.struct_copies and by_value(t):
            value.__dict__.pop("record_ref", None)  # copied into the variable's bytes
            t = t.dtype if isinstance(t, ct.PtrT) else t
        elif isinstance(t, StructT) and isinstance(value, ast.Subscript):
            t = record_pointer(value, loc)
            self.record_copies.setdefault(t.base, []).append((target.id, loc, True))
        elif isinstance(t, StructT) and by_value(self.env.get(target.id)):
            self.needs_copy.add(target.id)  # also copied in place elsewhere: bytes
            return
        if isinstance(t, ct.ArrayT) and t.space in ("global", "constant"):
            raise compile_error(loc, f"'{target.id}' = a buffer expression: write "
                                     "p = x or p = x + k (a pointer into one buffer)")
        if isinstance(t, ct.PtrT) and not t.record_copy:  # may join into a view (aligned?)
            self.view_values.setdefault(target.id, {})[id(value)] = value
        self.assign_name(target.id, t, loc)

    def assign_place(self, target, value, loc):
        """A store: an element, a field, a view element, a whole record."""
        refuse_constant_store(target, loc)
        tt = self.expr(target)
        if self.store_pointer(target, value, loc):
            return
        copied = refuse_copy_store(target, loc, self.params)
        if copied is not None:
            self.needs_copy.add(copied)
        vt = self.expr(value)
        if isinstance(tt, StructT) or by_value(vt):  # C's struct assignment: its bytes
            check_struct_assignment(tt, vt, loc)
            return
        if isinstance(tt, ct.VecT) and is_place_in_bytes(target):  # p[i] on a float4 view
            if vt is not None and ct.join(tt, vt) != tt:
                raise compile_error(loc, f"cannot store {ct.short(vt)} into a {tt} element")
            return
        if isinstance(target, ast.Attribute) and isinstance(target.value.ctype, ct.VecT):
            raise compile_error(loc, f"'{ast.unparse(target)}': assign components of a "
                                     "vector variable (v = p[i]; v.x = ...; p[i] = v)")
        if isinstance(tt, ct.ArrayT) and tt.space == "field":
            raise compile_error(loc, f"'{ast.unparse(target)}' is an array field: assign "
                                     "its elements in a loop (for j in range(n): "
                                     "b.qs[j] = ...), or assign the whole record")
        if tt is not None and vt is not None and not ct.is_scalar(vt):
            raise compile_error(loc, f"cannot store {ct.short(vt)} into an element")
        if tt is not None and not ct.is_scalar(tt):
            raise compile_error(loc, f"cannot assign to a whole {ct.short(tt)}; assign "
                                     "its fields or elements one by one")

    def store_pointer(self, target, value, loc) -> bool:
        """``ax[k] = p`` into a pointer array: the array's pointee becomes the join of what
        is stored (one buffer, one pointee type, as C's declared ``global T *ax[4]``)."""
        arr = getattr(target, "value", None)
        arrt = getattr(arr, "ctype", None)
        if not (isinstance(target, ast.Subscript) and isinstance(arr, ast.Name)
                and isinstance(arrt, ct.ArrayT) and arrt.pointee is not None):
            return False
        vt = self.pointer(value)
        if vt is None:
            return True
        if not isinstance(vt, ct.PtrT) and vt != ct.NULL or getattr(vt, "record_copy", False):
            raise compile_error(loc, f"'{arr.id}' is an array of pointers: store pointers "
                                     f"({arr.id}[k] = x + off, view(src, T, off), None), "
                                     f"not a {ct.short(vt)}")
        joined = ct.join_pointers(arrt.pointee, vt)
        if joined is None:
            raise compile_error(loc, pointer_clash(arr.id, arrt.pointee, vt))
        self.env[arr.id] = replace(arrt, pointee=joined)
        target.ctype = joined
        return True

    def for_stmt(self, s: ast.For):
        loc = s.loc
        it = s.iter
        if not (isinstance(it, ast.Call) and getattr(it.func, "resolved", (None,))[0] == "range"):
            raise compile_error(loc, "only 'for i in range(...)' loops exist in kernels")
        if not isinstance(s.target, ast.Name):
            raise compile_error(loc, "the loop variable must be a plain name")
        if s.orelse:
            raise compile_error(loc, "for/else is not supported")
        if not 1 <= len(it.args) <= 3:
            raise compile_error(loc, "range() takes 1 to 3 arguments")
        types = [self.expr(a) for a in it.args]
        t = "int32"
        for a in types:
            if a is None:
                return
            if not ct.is_int(ct.promote(a)):
                raise compile_error(loc, f"range() needs integers, got {a}")
            t = ct.arithmetic(t, a)
        it.ctype = t
        self.assign_name(s.target.id, t, loc)
        self.block(s.body)

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node):
        t = self._expr(node)
        node.ctype = t
        return t

    def _expr(self, node):
        loc = getattr(node, "loc", None)
        resolved = getattr(node, "resolved", None)
        if resolved is not None:
            kind, value = resolved
            if kind == "const":
                t = const_type(value)
                if t is None:
                    raise compile_error(loc, f"unsupported constant {value!r}")
                return t
            if kind == "table":
                known = self.program.tables.setdefault(node.id, value)
                if known is not value:
                    raise compile_error(loc, f"two different module arrays are named "
                                             f"'{node.id}'; rename one")
                return ct.ArrayT(value.dtype.name, value.ndim, "constant", value.shape)
            raise compile_error(loc, f"'{ast.unparse(node)}' is not a value here")
        if isinstance(node, ast.Constant) and node.value is None:
            return ct.NULL  # C's NULL: a pointer into no buffer (p = None)
        if isinstance(node, ast.Constant):
            t = const_type(node.value)
            if t is None:
                raise compile_error(loc, f"constant {node.value!r} is not a number")
            return t
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                if self.final:
                    raise compile_error(loc, f"'{node.id}' is used before it is assigned")
                return None
            return self.env[node.id]  # None (ct.NULL) too: refused where it is accessed
        if isinstance(node, ast.BinOp):
            a, b = self.pointer(node.left), self.pointer(node.right)
            if a is None or b is None:
                return None
            return binop_type(_OPS[type(node.op)], a, b, loc)
        if isinstance(node, ast.UnaryOp):
            t = self.expr(node.operand)
            if t is None:
                return None
            if isinstance(t, ct.VecT):
                sym = {ast.Not: "not", ast.Invert: "~"}.get(type(node.op), "-")
                return vx.unary_type(sym, t, loc)
            if isinstance(node.op, ast.Not):
                return "bool"
            if isinstance(node.op, ast.Invert) and not ct.is_int(ct.promote(t)):
                raise compile_error(loc, "'~' needs an integer")
            return ct.promote(t)
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                if isinstance(self.expr(v), ct.VecT):
                    raise vx.truth_error(v.ctype, loc)
            return "bool"
        if isinstance(node, ast.Compare):
            if any(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
                return self.null_test(node)
            types = [self.pointer(node.left)] + [self.pointer(c) for c in node.comparators]
            if any(isinstance(t, ct.PtrT) for t in types):
                if len(types) != 2 or not all(isinstance(t, ct.PtrT) for t in types):
                    raise compile_error(loc, "a pointer compares with one other pointer "
                                             "(p < q, p != q)")
                if types[0].base != types[1].base and \
                        not isinstance(node.ops[0], ast.Eq | ast.NotEq):
                    # C leaves < between different objects undefined; == and != are defined
                    raise compile_error(loc, "pointers into different buffers compare with "
                                             "== and != only (p < q needs one buffer)")
                return "bool"
            if any(isinstance(t, ct.VecT) for t in types):
                if len(types) != 2 or None in types:
                    return None if None in types else vx.compare_type(*types[:2], loc)
                return vx.compare_type(types[0], types[1], loc)
            for t in types:
                if t is not None and not ct.is_scalar(t):
                    raise compile_error(loc, f"cannot compare {ct.short(t)}")
            return "bool"
        if isinstance(node, ast.IfExp):
            if isinstance(self.expr(node.test), ct.VecT):
                raise vx.truth_error(node.test.ctype, loc)
            a, b = self.pointer(node.body), self.pointer(node.orelse)
            if a is None or b is None:
                return None
            if isinstance(a, ct.PtrT) or isinstance(b, ct.PtrT) or ct.NULL in (a, b):
                joined = ct.join(a, b)  # p if c else None, x + k if c else view(...)
                if joined is None or joined == ct.NULL:
                    raise compile_error(loc, f"'if-else' between {ct.short(a)} and "
                                             f"{ct.short(b)}: both sides point into one "
                                             "buffer (or one is None)")
                return joined
            if isinstance(a, ct.VecT) or isinstance(b, ct.VecT):
                return vx.operand_vector(a, b, "if-else", loc)
            return ct.arithmetic(a, b)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value)
            if base is None:
                return None
            if base == ct.NULL:
                raise self.null_use(node.value)
            if isinstance(base, ct.VecT):
                node.components = vx.components(node.attr, base.width, loc)
                if len(node.components) == 1 and \
                        rewrite_component_load(self, node, node.components[0]):
                    return self.expr(node)  # p[i].y: that component of memory
                return vx.swizzle_type(base, node.components)
            if isinstance(base, StructT):
                return field_type(base, node.attr, loc)
            if isinstance(base, ct.PtrT) and isinstance(base.dtype, StructT):
                return field_type(base.dtype, node.attr, loc)  # xb.d is C's xb->d
            raise compile_error(loc, f"attribute '.{node.attr}' of a {ct.short(base)} is not "
                                     "supported here")
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Tuple):
            types = [self.expr(e) for e in node.elts]
            if any(t is None for t in types):
                return None
            if not types or not all(ct.is_scalar(t) for t in types):
                raise compile_error(loc, "tuples of numbers only (vectors for vstore)")
            t = types[0]
            for other in types[1:]:
                t = ct.arithmetic(t, other)
            if len(types) not in (2, 3, 4, 8, 16):
                raise compile_error(loc, "vectors have 2, 3, 4, 8 or 16 elements")
            return ct.VecT(t, len(types))
        raise compile_error(loc, f"'{type(node).__name__}' expressions are not supported")

    def null_test(self, node):
        """``p is None`` / ``p is not None`` on a pointer variable (on a buffer parameter
        it was decided when the kernel compiled, nulls.py)."""
        loc = node.loc
        right = node.comparators[0] if len(node.comparators) == 1 else None
        if not (isinstance(right, ast.Constant) and right.value is None):
            raise compile_error(loc, "'is' compares a pointer with None only: write "
                                     "'if p is None:' or 'if p is not None:'")
        t = self.expr(node.left) if not isinstance(node.left, ast.Name) else \
            self.env.get(node.left.id)
        if t is not None and not isinstance(t, ct.PtrT) and t != ct.NULL:
            raise compile_error(loc, f"'is None' on a {ct.short(t)}: only pointers can be "
                                     "None")
        node.left.ctype = t
        return "bool"

    def pointer(self, node):
        """The type of ``node``, a buffer name read as a pointer to its first element."""
        t = self.expr(node)
        if isinstance(t, ct.ArrayT) and t.space == "field" and isinstance(node, ast.Attribute):
            node.ctype = field_pointer(node, t)  # x[i].qs decays to a pointer into x's bytes
            return node.ctype
        if isinstance(t, ct.ArrayT) and isinstance(node, ast.Name):
            if t.ndim != 1 or t.space == "field":
                raise compile_error(node.loc, f"'{node.id}' is a {t.ndim}-D array; pointers "
                                              "go into flat buffers and 1-D arrays")
            node.as_pointer = True
            node.ctype = ct.PtrT(node.id, t)
            return node.ctype
        return t

    def null_use(self, node):
        """The error for an access through an expression that is None on every path."""
        name = ast.unparse(node)
        what = "in this launch" if name in self.params else "on every path here"
        return compile_error(node.loc, f"'{name}' is None (a null pointer) {what}; guard its "
                                       f"use with 'if {name} is not None:'")

    def subscript(self, node: ast.Subscript):
        loc = node.loc
        self._join_c_style_indices(node)
        base = self.expr(node.value)
        if base == ct.NULL:
            raise self.null_use(node.value)
        if isinstance(base, ct.PtrT):
            if base.record_copy:
                raise compile_error(loc, f"'{ast.unparse(node.value)}' is a struct (a copy of "
                                         "a record), not a pointer: read its fields (b.d, "
                                         "b.qs[j])")
            idx = node.slice
            it = self.expr(idx)
            if isinstance(idx, ast.Tuple) or (it is not None and not ct.is_int(ct.promote(it))):
                raise compile_error(loc, "index a pointer with one integer, p[i]")
            return base.dtype
        idx = node.slice
        indices = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        types = [self.expr(i) for i in indices]
        if base is None:
            return None
        if isinstance(base, ct.VecT):
            if len(indices) != 1:
                raise compile_error(loc, "index a vector with one integer, v[i]")
            if not isinstance(indices[0], ast.Constant):
                if types[0] is not None and not ct.is_int(ct.promote(types[0])):
                    raise compile_error(loc, f"a vector index must be an integer, got "
                                             f"{ct.short(types[0])}")
                return base.dtype
            if not 0 <= indices[0].value < base.width:
                raise compile_error(loc, f"v[{indices[0].value}] is beyond a "
                                         f"{base.width}-vector")
            return base.dtype
        if not isinstance(base, ct.ArrayT):
            raise compile_error(loc, f"cannot index a {ct.short(base)}")
        if base.pointee is not None:  # ax[k] of a pointer array: a pointer
            if types[0] is not None and not ct.is_int(ct.promote(types[0])):
                raise compile_error(loc, f"array index must be an integer, got {types[0]}")
            return base.pointee
        if len(indices) != base.ndim:
            raise compile_error(
                loc, f"'{ast.unparse(node.value)}' has {base.ndim} dimension(s) but is indexed "
                     f"with {len(indices)}" + (
                         "; global buffers are flat: index them as x[row * ncols + col]"
                         if base.space == "global" else ""))
        for t in types:
            if t is not None and not ct.is_int(ct.promote(t)):
                raise compile_error(loc, f"array index must be an integer, got {t}")
        return base.dtype

    def _join_c_style_indices(self, node: ast.Subscript) -> None:
        """``tile[a][b]``, C's spelling for a 2-D local or private array, becomes ``tile[a, b]``
        in place (every later pass sees one subscript), when ``tile`` is an array of exactly
        that many dimensions; anything else is left for the checks below."""
        indices, root = [node.slice], node.value
        while isinstance(root, ast.Subscript) and not isinstance(root.slice, ast.Tuple):
            indices.insert(0, root.slice)
            root = root.value
        if len(indices) < 2 or isinstance(node.slice, ast.Tuple) or not isinstance(root, ast.Name):
            return
        base = self.expr(root)
        if isinstance(base, ct.ArrayT) and base.ndim == len(indices) and base.space not in (
                "global", "field"):
            joined = ast.Tuple(elts=indices, ctx=ast.Load())
            ast.copy_location(joined, indices[0])
            joined.loc = node.loc
            node.value, node.slice = root, joined

    def call(self, node: ast.Call):
        loc = node.loc
        resolved = getattr(node.func, "resolved", None)
        if resolved is None:
            raise compile_error(loc, f"'{ast.unparse(node.func)}' is not callable in a kernel")
        kind, value = resolved
        accepted = getattr(table.lookup(value) if kind == "builtin" else None, "keywords", ())
        bad = [k.arg for k in node.keywords if k.arg not in accepted]
        if bad:
            raise compile_error(loc, f"keyword argument '{bad[0]}' is not supported here"
                                     + (f"; {value}() takes {', '.join(accepted)}=" if accepted
                                        else ""))
        if kind == "dtype":
            if len(node.args) != 1:
                raise compile_error(loc, f"{value}(x) converts one value")
            t = self.expr(node.args[0])
            if is_pointer_like(t):  # C's (ulong)p: the address (an alignment test)
                t = self.pointer(node.args[0])
                if value not in ("int64", "uint64"):
                    raise compile_error(loc, f"a pointer converts to a 64-bit integer "
                                             f"(np.uint64(p), C's (ulong)p), not to {value}")
                node.pointer_address = True
                return value
            node.__dict__.pop("pointer_address", None)
            if isinstance(t, ct.VecT):
                raise compile_error(loc, f"np.{value}() converts scalars; convert a {t} with "
                                         f"convert_{ct.cname(value)}{t.width}(v)")
            if t is not None and not ct.is_scalar(t):
                raise compile_error(loc, f"cannot convert {ct.short(t)} to {value}")
            return value
        if kind == "func":
            types = [self.pointer(a) if isinstance(a, ast.Attribute) else self.expr(a)
                     for a in node.args]
            if any(t is None for t in types):
                return None
            for k, (a, t) in enumerate(zip(node.args, types, strict=True)):
                if isinstance(t, StructT) and isinstance(a, ast.Subscript):  # helper(x[ib])
                    types[k] = record_pointer(a, loc)
                    self.record_copies.setdefault(types[k].base, []).append(
                        (ast.unparse(a), loc, False))
                elif isinstance(t, ct.ArrayT) and t.space == "field":
                    raise compile_error(loc, "an array field is passed to a helper as the "
                                             "record (helper(x[i])) or element by element")
                elif isinstance(t, ct.ArrayT) and t.pointee is not None:
                    raise compile_error(loc, "an array of pointers is passed to a helper "
                                             "one pointer at a time (helper(ax[k]))")
            return self.program.specialize(value, tuple(types), loc)
        if kind == "range":
            raise compile_error(loc, "range() only in 'for i in range(...)'")
        if kind != "builtin":
            raise compile_error(loc, f"'{ast.unparse(node.func)}' is not callable in a kernel")
        entry = table.lookup(value)
        if entry is None:
            raise compile_error(loc, f"builtin {value}() is not implemented yet")
        if entry.typing is not None:
            return entry.typing(self, node)
        types = [self.expr(a) for a in node.args]
        if any(t is None for t in types):
            return None
        for mark in ("vector_form", "lifted_scalar"):  # set anew for each specialisation
            node.__dict__.pop(mark, None)
        if any(isinstance(t, ct.VecT) for t in types):
            form = lift.vector_form(entry)
            if form is not None:
                node.vector_form = form
                return form[0](types, node)
            if lift.liftable(entry):
                return lift.result(entry, types, node)
        return entry.result(types, node)


def is_cut_call(node) -> bool:
    return table.is_cut(builtin_name(node))


__all__ = ["Typer", "binop_type", "const_type", "func_target", "is_cut_call"]
