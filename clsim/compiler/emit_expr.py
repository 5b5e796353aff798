"""Expression code generation: typed Python expressions with explicit C conversions.

Every operand is cast to the type ``infer`` computed, and every 8/16/32-bit integer result is
wrapped back to its width, so Numba (which widens int32 to int64) and numpy scalars (no-JIT
mode) both compute exactly what OpenCL C computes. Memory reads go through bounds-checked index
helpers that record an error and return a safe index; the statement emitter then stops the
work-group. Statements, regions and the module are in ``codegen``.
"""

from __future__ import annotations

import ast

import numpy as np

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.builtins import lift
from clsim.compiler.diagnostics import compile_error
from clsim.compiler.infer import _CMPS, _OPS
from clsim.compiler.places import is_field
from clsim.compiler.struct_emit import StructEmitter
from clsim.compiler.structs import StructT, size_of
from clsim.compiler.vector_emit import VectorEmitter
from clsim.runtime import record as rec


class PointerOffset(ast.expr):
    """The element offset (an int64) of a pointer expression that is not a variable:
    ``(x + k)[i]`` and ``view(src, T, off)[i]`` index their buffer at that offset plus i."""

    _fields = ("pointer",)


class ExprEmitter(VectorEmitter, StructEmitter):
    """Mixin of ``codegen.FunctionEmitter``: turns typed expression nodes into source."""

    checks_emitted = 0  # checked() calls so far (a proven region's body must add none)

    # -- small pieces -----------------------------------------------------------------------
    def const(self, value, t: str) -> str:
        return self.module.const(value, t)

    def helper(self, name: str) -> str:
        if name in table.HELPERS and table.HELPERS[name].inline:
            name += hp.INLINED  # its instructions in the caller (Helper.inline)
        self.module.helpers_used.add(name)
        return name

    def cast(self, code: str, src, dst) -> str:
        if src == dst or dst is None:
            return code
        if dst == "bool" and (isinstance(src, ct.PtrT) or src == ct.NULL):  # if p:
            return f"({code} >= {ct.NULL_BELOW})"
        if isinstance(dst, ct.PtrT):  # ct.join_pointers: an element offset into bytes
            if isinstance(src, ct.PtrT) and src.view is None and dst.view is not None:
                return f"({code} * {size_of(src.array.dtype)})"
            return code
        if isinstance(dst, ct.VecT):
            return self.vec_cast(code, src, dst)
        if isinstance(src, ct.VecT):
            raise compile_error(None, f"internal: {src} used where {ct.short(dst)} is needed")
        if dst == "bool":
            return f"({code} != 0)"
        if dst == "float16":  # round to half (held in a float32)
            if not ct.is_float(src):
                code = f"np.float64({code})"
            return self.helper("_rh") + f"({code})"
        if ct.is_float(dst):
            return f"np.{dst}({code})"
        if src == "bool" or ct.is_int(src):  # wraps to the width (numpy's cast, as C's)
            return f"np.{dst}({code})"
        return self.helper(f"_f2i_{dst}") + f"({code})"

    def wrap(self, code: str, t: str) -> str:
        if t == "float16":  # computed in float32, rounded to half: correctly rounded
            return self.helper("_rh") + f"({code})"
        if ct.is_int(t) and ct.bits(t) <= 32:
            return f"np.{t}({code})"
        return code

    def bitcast(self, code: str, src: str, dst: str) -> str:
        if not self.module.register_bitcast(src, dst):
            return code
        return f"_bits_{src}_{dst}({code})"

    def lid_code(self) -> str:
        # An int64 zero at group level, not the literal 0: Numba would compile each helper
        # taking it (and _oob behind it) once more for the argument type Literal[int](0).
        return "_lid" if self.in_wi else self.const(0, "int64")

    def checked(self) -> None:
        self.stmt_checked = True
        self.checks_emitted += 1

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node) -> str:
        resolved = getattr(node, "resolved", None)
        if resolved is not None and resolved[0] == "const":
            return self.const(resolved[1], node.ctype)
        if getattr(node, "ctype", None) == ct.NULL:  # None, or arithmetic on a None argument
            return self.const(ct.NULL_OFFSET, "int64")
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise compile_error(node.loc, f"cannot generate code for {type(node).__name__}")
        return method(node)

    def typed(self, node, to) -> str:
        value = constant_value(node)
        if value is not None and ct.is_float(node.ctype):
            value = np.dtype(node.ctype).type(value)  # 0.1 is 0.1f, also beside a double
        if value is not None and ct.is_scalar(to) and ct.is_scalar(node.ctype) and to != "bool":
            same_kind = ct.is_float(to) or not ct.is_float(node.ctype)
            if same_kind and np.dtype(to).type(value) == value:
                return self.const(value, to)
        return self.cast(self.expr(node), node.ctype, to)

    def e_Constant(self, node):
        if node.value is None:  # C's NULL
            return self.const(ct.NULL_OFFSET, "int64")
        return self.const(node.value, node.ctype)

    def e_Name(self, node):
        if isinstance(node.ctype, ct.PtrT) and getattr(node, "as_pointer", False):
            return self.const(0, "int64")  # a buffer name read as a pointer: offset 0
        return self.read_var(node.id)

    def e_BinOp(self, node):
        if isinstance(node.ctype, ct.PtrT):
            return self.pointer_offset(node)[2]
        if isinstance(node.left.ctype, ct.PtrT):  # p - q: elements between them
            a, b = self.pointer_offset(node.left)[2], self.pointer_offset(node.right)[2]
            view = node.left.ctype.view
            return f"(({a} - {b}) // {size_of(view)})" if view is not None else f"({a} - {b})"
        if isinstance(node.ctype, ct.VecT):
            return self.vec_binop(node)
        op = _OPS[type(node.op)]
        res = node.ctype
        if op in ("<<", ">>"):
            a = self.typed(node.left, res)
            b = self.typed(node.right, res)
            mask = self.const(ct.bits(res) - 1, res)
            return self.wrap(f"({a} {op} ({b} & {mask}))", res)
        a = self.typed(node.left, res)
        b = self.typed(node.right, res)
        if op in ("//", "%"):
            folded = folded_division(node, op, res)
            if folded is not None:  # QK // 2: no helper, no error check in the loop around it
                return self.const(folded, res)
            helper = self.helper(f"_idiv_{res}" if op == "//" else f"_irem_{res}")
            site = self.module.site(node, "", "arith", "none", res)
            self.checked()
            site_k = self.const(site, "int64")
            return self.wrap(f"{helper}({a}, {b}, _err, {site_k}, {self.lid_code()})", res)
        self.count_flop(op, res)
        return self.wrap(f"({a} {op} {b})", res)

    def e_UnaryOp(self, node):
        t = node.ctype
        if isinstance(t, ct.VecT):
            return self.vec_unary(node)
        if isinstance(node.op, ast.Not):
            return f"(not {self.typed(node.operand, 'bool')})"
        x = self.typed(node.operand, t)
        if isinstance(node.op, ast.USub):
            return self.wrap(f"(-{x})", t)
        if isinstance(node.op, ast.Invert):
            return self.wrap(f"(~{x})", t)
        return x

    def e_BoolOp(self, node):
        joiner = " and " if isinstance(node.op, ast.And) else " or "
        first = self.typed(node.values[0], "bool")
        with self.conditional():  # the later operands run only sometimes
            rest = [self.own_pre_lines(lambda v=v: self.typed(v, "bool")) for v in node.values[1:]]
        if not any(lines for _, lines in rest):
            return "(" + joiner.join([first, *(code for code, _ in rest)]) + ")"
        # An operand with pre-lines (a vload's bounds check, an instrument's record) runs
        # them only when C would evaluate it: the chain becomes nested ifs on a temporary.
        result = self.fresh("_sc")
        self.pre(f"{result} = {first}")
        for code, lines in rest:
            test = result if joiner == " and " else f"not {result}"
            self.pre(f"if {test}:\n" + _indented([*lines, f"{result} = {code}"]))
        return result

    def e_Compare(self, node):
        if isinstance(node.ctype, ct.VecT):
            return self.vec_compare(node)
        if isinstance(node.ops[0], ast.Is | ast.IsNot):  # p is None: a null offset
            left = node.left
            code = self.pointer_offset(left)[2] if isinstance(left.ctype, ct.PtrT) else \
                self.const(ct.NULL_OFFSET, "int64")
            op = "<" if isinstance(node.ops[0], ast.Is) else ">="
            return f"({code} {op} {ct.NULL_BELOW})"
        if isinstance(node.left.ctype, ct.PtrT | ct.ArrayT) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if left.ctype.base != right.ctype.base or \
                    getattr(left.ctype, "view", None) != getattr(right.ctype, "view", None):
                # across buffers (== and != only), or element and byte offsets: addresses
                a, b = self.byte_address(left), self.byte_address(right)
            else:
                a, b = self.pointer_offset(left)[2], self.pointer_offset(right)[2]
            return f"({a} {_CMPS[type(node.ops[0])]} {b})"
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            t = ct.arithmetic(left.ctype, right.ctype)
            parts.append(f"({self.typed(left, t)} {_CMPS[type(op)]} {self.typed(right, t)})")
            left = right
        return parts[0] if len(parts) == 1 else "(" + " and ".join(parts) + ")"

    def e_IfExp(self, node):
        t = node.ctype
        test = self.typed(node.test, "bool")
        with self.conditional():
            body, body_lines = self.own_pre_lines(lambda: self.typed(node.body, t))
            orelse, else_lines = self.own_pre_lines(lambda: self.typed(node.orelse, t))
        if not body_lines and not else_lines:
            return f"({body} if {test} else {orelse})"
        # C evaluates one branch of ?: only: a branch's pre-lines (a vload's bounds check, an
        # instrument's record) must not run for the other.
        result = self.fresh("_sel")
        self.pre(f"if {test}:\n" + _indented([*body_lines, f"{result} = {body}"])
                 + "\nelse:\n" + _indented([*else_lines, f"{result} = {orelse}"]))
        return result

    def own_pre_lines(self, build):
        """(code, the pre-lines emitting it produced), those lines kept out of the statement's."""
        saved, self.pending = self.pending, []
        try:
            code = build()
            return code, self.pending
        finally:
            self.pending = saved

    def e_Tuple(self, node):
        t = node.ctype.dtype
        return "(" + ", ".join(self.typed(e, t) for e in node.elts) + ",)"

    def e_Attribute(self, node):
        if getattr(node, "field_pointer", False) and isinstance(node.ctype, ct.PtrT):
            return self.field_pointer_offset(node)
        if is_field(node):
            return self.field_load(node)
        return self.vec_components(self.expr(node.value), node.value.ctype, node.components)

    def e_Subscript(self, node):
        if getattr(node, "record_ref", False) and isinstance(node.ctype, ct.PtrT):
            return self.record_offset(node)
        if isinstance(node.value.ctype, ct.VecT):
            return self.vec_index(node)
        if is_field(node) or isinstance(getattr(node.value.ctype, "dtype", None), StructT):
            return self.field_load(node)
        if isinstance(node.value.ctype, ct.PtrT) and node.value.ctype.view is not None:
            return self.view_load(node)
        return self.decode(self.array_access(node, "load"), node.value.ctype.dtype)

    def pointer_offset(self, node) -> tuple[str, ct.ArrayT, str]:
        """(buffer name, its type, element offset code) of a pointer expression: a buffer
        name (offset 0), a pointer local, or p + k / k + p / p - k."""
        t = node.ctype
        if isinstance(node, ast.Name) and isinstance(t, ct.ArrayT):
            return node.id, t, self.const(0, "int64")
        if isinstance(node, ast.Name) and getattr(node, "as_pointer", False):
            return node.id, t.array, self.const(0, "int64")
        if not isinstance(t, ct.PtrT):
            raise compile_error(node.loc, f"internal: {ct.short(t)} is not a pointer")
        if isinstance(node, ast.Name):
            return t.base, t.array, self.read_var(node.id)
        if getattr(node, "field_pointer", False):  # x[i].qs: a view at the field's bytes
            return t.base, t.array, self.field_pointer_offset(node)
        if isinstance(node, ast.Call | ast.Subscript):  # view(...), a record x[ib]
            return t.base, t.array, self.expr(node)
        if isinstance(node, ast.BinOp):
            left_ptr = isinstance(node.left.ctype, ct.PtrT | ct.ArrayT)
            ptr, k = (node.left, node.right) if left_ptr else (node.right, node.left)
            name, arrt, off = self.pointer_offset(ptr)
            sign = "-" if isinstance(node.op, ast.Sub) else "+"
            step = self.typed(k, "int64")
            if t.view is not None:  # a view's value is a byte offset
                step = f"{step} * {size_of(t.view)}"
            return name, arrt, f"({off} {sign} {step})"
        raise compile_error(node.loc, "pointers are buffer names, pointer locals and p + k")

    def byte_address(self, node) -> str:
        """The address a pointer expression holds (its buffer's data plus the offset in
        bytes): pointers into different buffers are equal only if they alias."""
        name, arrt, off = self.pointer_offset(node)
        base, lead = self.array_base(name, arrt)
        row = f"{base}[{lead[0]}]" if lead else base
        view = getattr(node.ctype, "view", None)
        step = "" if view is not None else f" * {size_of(arrt.dtype)}"
        return f"(np.int64({row}.ctypes.data) + {off}{step})"

    def pointer_address(self, node, t: str) -> str:
        """C's ``(ulong)p``: each buffer starts at a 4096-byte boundary, as a device aligns
        its buffers, plus the pointer's byte offset (so ``(ulong)p & 15`` is the device's
        answer); a null pointer is 0."""
        name, arrt, off = self.pointer_offset(node)
        base, lead = self.array_base(name, arrt)
        row = f"{base}[{lead[0]}]" if lead else base
        view = getattr(node.ctype, "view", None)
        step = "" if view is not None else f" * {size_of(arrt.dtype)}"
        address = (f"(np.int64(0) if {off} < {ct.NULL_BELOW} else "
                   f"((np.int64({row}.ctypes.data) >> 12) << 12) + {off}{step})")
        return self.cast(address, "int64", t)

    def decode(self, code: str, dtype: str) -> str:
        """A value read from an array element of ``dtype`` (half arrays hold bits)."""
        return self.helper("_h2f") + f"({code})" if dtype == "float16" else code

    def encode(self, code: str, dtype: str) -> str:
        """What an array element of ``dtype`` stores for a value of that type."""
        return self.helper("_f2h") + f"({code})" if dtype == "float16" else code

    # -- memory -----------------------------------------------------------------------------
    def resolve_access(self, node: ast.Subscript) -> tuple[str, ct.ArrayT, list]:
        """(array name, its type, index nodes) of ``a[i]``; through a pointer local ``p``,
        ``p[i]`` is ``base[p + i]`` (p holds the element offset), checked against base."""
        arr = node.value
        idx = node.slice
        if isinstance(arr.ctype, ct.PtrT):
            ptr: ct.PtrT = arr.ctype
            if not hasattr(node, "ptr_index"):
                offset = (ast.Name(id=arr.id, ctx=ast.Load()) if isinstance(arr, ast.Name)
                          else PointerOffset(pointer=arr))  # (x + k)[i], view(...)[i]
                offset.ctype, offset.loc = "int64", node.loc
                flat = ast.BinOp(left=offset, op=ast.Add(), right=idx)
                flat.ctype, flat.loc = "int64", node.loc
                node.ptr_index = flat
            return ptr.base, ptr.array, [node.ptr_index]
        if not isinstance(arr, ast.Name):
            raise compile_error(node.loc, "index arrays by name (x[i]), not expressions")
        return arr.id, arr.ctype, idx.elts if isinstance(idx, ast.Tuple) else [idx]

    def e_PointerOffset(self, node):
        return self.pointer_offset(node.pointer)[2]

    def array_access(self, node: ast.Subscript, kind: str, index_codes=None) -> str:
        """``buf[i]`` for a load (or the target of a store when index_codes is given)."""
        name, arrt, _ = self.resolve_access(node)
        base, lead = self.array_base(name, arrt)
        if index_codes is None:
            index_codes = self.index_codes(node, kind)
        if self.proven_indices:  # no wrap-around test of a negative index (lane_emit)
            index_codes = [f"np.uint64({code})" for code in index_codes]
        return f"{base}[{', '.join(lead + index_codes)}]"

    def index_codes(self, node: ast.Subscript, kind: str) -> list[str]:
        name, arrt, indices = self.resolve_access(node)
        base, lead = self.array_base(name, arrt)
        site = self.module.site(node, name, kind, arrt.space, arrt.dtype)
        codes = []
        for dim, ix in enumerate(indices):
            code = self.typed(ix, "int64")
            if self.bounds_checks:
                length = f"{base}.shape[{dim + len(lead)}]"
                site_k = self.const(site, "int64")
                code = f"{self.helper('_ck')}({code}, {length}, _err, {site_k}, {self.lid_code()})"
                self.checked()
            codes.append(code)
        return self.module.access(self, site, name, arrt, codes, kind)

    def count_flop(self, op, t) -> None:
        self.module.flop(self, op, t)

    # -- calls ------------------------------------------------------------------------------
    def e_Call(self, node):
        kind, value = node.func.resolved
        if kind == "dtype" and getattr(node, "pointer_address", False):
            return self.pointer_address(node.args[0], value)
        if kind == "dtype":
            literal = _signed_constant(node.args[0])
            if literal is not None and ct.is_float(value):
                return self.const(literal, value)  # np.float64(0.1): the double nearest 0.1
            return self.typed(node.args[0], value)
        if kind == "func":
            return self.call_func(node, value)
        entry = table.lookup(value)
        if entry is not None and entry.lower is not None:
            return entry.lower(self, node)
        if entry is None or entry.emit is None:
            raise compile_error(node.loc, f"{value}() cannot be used in an expression here")
        if hasattr(node, "lifted_scalar"):
            return lift.emit(self, entry, node)
        if hasattr(node, "vector_form"):
            codes = [self.expr(a) for a in node.args]
            return node.vector_form[1](self, codes, [a.ctype for a in node.args], node)
        if entry.flop:
            self.count_flop(entry.flop, node.ctype)
        codes = [self.expr(a) for a in node.args]
        return entry.emit(self, codes, [a.ctype for a in node.args], node)

    def vload(self, node, width: int, stride: int | None = None) -> str:
        """``width`` elements of a buffer from ``offset * stride`` (stride: the width)."""
        offset_node, buf = node.args
        if isinstance(buf.ctype, ct.PtrT) and buf.ctype.view is not None:
            if stride not in (None, width):
                raise compile_error(node.loc, "vloada_half3 through a view is not supported")
            return self.view_vload(node, width)
        name, arrt, start = self.pointer_offset(buf)
        base, lead = self.array_base(name, arrt)
        offset = self.typed(offset_node, "int64")
        tmp = self.fresh("_vo")
        self.pre(f"{tmp} = {start} + {offset} * {stride or width}")
        site = self.module.site(node, name, "load", arrt.space, arrt.dtype, width=width)
        if self.bounds_checks:
            self.pre(f"{self.helper('_ck')}({tmp} + {width - 1}, {base}.shape[{len(lead)}], "
                     f"_err, {self.const(site, 'int64')}, {self.lid_code()})")
            self.pre(f"{self.helper('_ck')}({tmp}, {base}.shape[{len(lead)}], _err, "
                     f"{self.const(site, 'int64')}, "
                     f"{self.lid_code()})")
            self.checked()
            self.pre(f"if _err[{rec.CODE}] != 0:\n    {self.err_return}")
        wrapped = self.module.access(self, site, name, arrt, [tmp], "load")[0]
        if wrapped != tmp:
            self.pre(f"{tmp} = {wrapped}")
        lead_code = ", ".join(lead) + ", " if lead else ""
        return "(" + ", ".join(self.decode(f"{base}[{lead_code}{tmp} + {k}]", arrt.dtype)
                               for k in range(width)) + ",)"

    def call_func(self, node, kfn) -> str:
        program = self.module.program
        spec = program.funcs[program.spec_key(kfn, tuple(a.ctype for a in node.args))]
        args = []
        for a, pt, param in zip(node.args, spec.param_types, spec.parsed.params, strict=True):
            if isinstance(pt, ct.PtrT):  # the buffer and the pointer's offset into it
                name, arrt, offset = self.pointer_offset(a)
                self.module.passed_buffer(kfn.name, pt.base, node.loc.func, name)
                base, lead = self.array_base(name, arrt)
                args += [f"{base}[{lead[0]}]" if lead else base, offset]
            elif isinstance(pt, StructT):  # a struct argument by value: its bytes
                args.append(self.struct_bytes(a.id))
            elif isinstance(pt, ct.ArrayT):
                if not isinstance(a, ast.Name):
                    raise compile_error(node.loc, "pass arrays to helpers by name")
                base, lead = self.array_base(a.id, pt)
                args.append(f"{base}[{lead[0]}]" if lead else base)
                self.module.passed_buffer(kfn.name, param, node.loc.func, a.id)
            else:
                args.append(self.typed(a, pt))
        self.module.emit_func(spec)
        self.checked()
        return f"{spec.mangled}({', '.join(args)}, {self.module.hidden_args})"

    def array_base(self, name: str, arrt) -> tuple[str, list[str]]:
        if arrt.space == "constant":
            return self.module.table(name, arrt), []
        storage = self.storage.get(name)
        if storage == "parray":
            return f"v_{name}__c", [self.lid_code()]
        return f"v_{name}", []


def _signed_constant(node):
    """A literal, possibly negated (np.float64(-0.1)), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = constant_value(node.operand)
        if value is None:
            return None
        return -value if isinstance(node.op, ast.USub) else value
    return constant_value(node)


def folded_division(node: ast.BinOp, op: str, res) -> int | None:
    """C's ``a / b`` or ``a % b`` (truncation toward zero) of two integer constants, when it
    cannot fail (b nonzero) and needs no wrapping; else None (the helper computes it)."""
    a, b = constant_value(node.left), constant_value(node.right)
    integers = isinstance(a, int | np.integer) and isinstance(b, int | np.integer)
    if not ct.is_int(res) or not integers or b == 0:
        return None
    a, b = int(a), int(b)
    q = abs(a) // abs(b)
    q = -q if (a < 0) != (b < 0) else q
    value = q if op == "//" else a - q * b
    info = np.iinfo(res)
    return value if info.min <= value <= info.max and info.min <= a <= info.max else None


def constant_value(node):
    resolved = getattr(node, "resolved", None)
    if resolved is not None and resolved[0] == "const":
        value = resolved[1]
    elif isinstance(node, ast.Constant):
        value = node.value
    else:
        return None
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        return None
    return value


HIDDEN_ARGS = ("_err, _lid, _lx, _ly, _lz, _gx, _gy, _gz, _L0, _L1, _L2, _G0, _G1, _G2, "
               "_NG0, _NG1, _NG2, _O0, _O1, _O2")


def literal(value, t: str) -> str:
    """Source text of a numpy scalar constant of type t (module level, not in loops)."""
    if t == "bool":
        return "True" if value else "False"
    if t == "float16":  # a half constant is held in a float32
        return literal(np.float32(np.float16(value)), "float32")
    v = np.dtype(t).type(value)
    if ct.is_float(t):
        if np.isnan(v):
            return f"np.{t}(math.nan)"
        if np.isinf(v):
            return f"np.{t}({'-' if v < 0 else ''}math.inf)"
        return f"np.{t}({float(v)!r})"
    return f"np.{t}({int(v)})"


def _indented(lines: list[str]) -> str:
    """Pre-lines (each possibly several lines) as the body of an emitted ``if``/``else``."""
    return "\n".join("    " + part for line in lines for part in line.split("\n"))
