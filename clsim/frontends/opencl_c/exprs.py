"""OpenCL C expressions to Python expressions, one emitter per clang cursor kind (a table, in
the spirit of tinygrad's renderers).

Every conversion C makes is read off clang's implicit-cast nodes (an ``UNEXPOSED_EXPR`` whose
type differs from its child's) and written out as ``np.float32(...)``, ``float4(...)``: the
rules of C are never derived here. An emitted expression is a ``Py``: its text, the type the
Python compiler will give it (``bool`` for comparisons, which C types as int) and its
precedence, so parentheses appear only where Python needs them.
"""

from __future__ import annotations

import numpy as np

from clsim import api
from clsim.compiler.builtins import registry
from clsim.frontends.opencl_c.ctype import CType, ctype
from clsim.frontends.opencl_c.nodes import (  # noqa: F401  (the emitters' shared names)
    _BARE_OK, _NAMED_CONSTANTS, ATOM, BOOL, CK, COMPARE, INT32, INT64, OUT_PARAM_BUILTINS,
    PREC, RENAMED_CALLS, UNARY, Py, Unsupported, _widening_child, children,
    constant_expression, literal, sampler_text, sampler_value, site, strip, wrap)
from clsim.frontends.opencl_c.parse import binary_op, evaluate, unary_op
from clsim.frontends.opencl_c.arrays import FlatArrays
from clsim.frontends.opencl_c.pointers import PointerExpressions
from clsim.frontends.opencl_c.struct_inits import StructInits
from clsim.frontends.opencl_c.selectors import SWIZZLE, is_selector, selector_width


class Expressions(PointerExpressions, FlatArrays, StructInits):
    """The expression half of a function's emitter; ``names`` maps C names to Python ones."""

    def __init__(self, module, names):
        self.module, self.names = module, names
        self.boxed: set[int] = set()  # scalar locals whose address is taken (see box_locals)
        self.flat: dict[int, tuple[int, ...]] = {}  # arrays declared flat (arrays.py)
        self.table = {
            CK.INTEGER_LITERAL: self.number, CK.FLOATING_LITERAL: self.number,
            CK.CHARACTER_LITERAL: self.number, CK.CXX_UNARY_EXPR: self.number,
            CK.CXX_BOOL_LITERAL_EXPR: self.number,
            CK.PAREN_EXPR: lambda c: self.expr(children(c)[0]),
            CK.DECL_REF_EXPR: self.decl_ref, CK.UNEXPOSED_EXPR: self.unexposed,
            CK.BINARY_OPERATOR: self.binary, CK.UNARY_OPERATOR: self.unary,
            CK.ARRAY_SUBSCRIPT_EXPR: self.subscript, CK.MEMBER_REF_EXPR: self.member,
            CK.CALL_EXPR: self.call, CK.CONDITIONAL_OPERATOR: self.conditional,
            CK.CSTYLE_CAST_EXPR: self.cast, CK.COMPOUND_LITERAL_EXPR: self.compound_literal,
            CK.STRING_LITERAL: lambda c: Py(c.spelling, CType("other", "string")),
            CK.INIT_LIST_EXPR: self.init_list,
        }

    # -- helpers
    def expr(self, cursor) -> Py:
        emit = self.table.get(cursor.kind)
        if emit is None:
            raise Unsupported(cursor, f"the expression kind {cursor.kind.name.lower()}")
        return emit(cursor)

    def value(self, cursor) -> Py:
        """``cursor`` as a value of its C type (a comparison's bool becomes C's int)."""
        py = self.expr(cursor)
        want = ctype(cursor.type)
        if py.type != want and want.kind == "scalar" and py.type.kind == "scalar":
            return Py(f"{want.py_name}({py.code})", want)
        return py

    def bare(self, cursor, want: CType | None = None) -> Py:
        """``cursor``'s value; a small integer literal that C converts to ``want`` (int or
        long, signed or not) written bare, as Python's usual conversions give it that type
        where it is used (the other operand's, a builtin's argument)."""
        lit = strip(cursor)
        while lit.kind == CK.UNEXPOSED_EXPR and len(children(lit)) == 1 and \
                ctype(children(lit)[0].type).kind == "scalar":
            lit = strip(children(lit)[0])
        t = ctype(cursor.type)
        if lit.kind != CK.INTEGER_LITERAL and t.kind == "scalar" and t.name in _BARE_OK and \
                (want is None or want == t) and ctype(lit.type) == INT32:
            value = evaluate(lit)  # clang's folding first: the walk below only on constants
            if value is not None and constant_expression(lit):
                return literal(value, INT32)
        widened = _widening_child(cursor)
        if widened is not None and want is not None and want == t:
            # int to long, float to double: value-preserving, and the other operand already
            # has the wider type, so Python's usual conversions (C's) widen it the same way
            return self.value(widened)
        if lit.kind == CK.INTEGER_LITERAL and t.kind == "scalar" and \
                (want is None or want == t) and t.name in _BARE_OK:
            value = evaluate(lit)
            if value is not None and -(2**31) <= value < 2**31:
                return self.number(lit, INT32)
        return self.value(cursor)

    def cond(self, cursor) -> Py:
        """``cursor`` as a Python condition (C's 'nonzero')."""
        py = self.expr(strip(cursor))
        if py.type == BOOL:
            return py
        if py.type.kind == "pointer":
            return Py(f"{wrap(py, PREC['cmp'] + 1)} is not None", BOOL, PREC["cmp"])
        if py.type.kind == "vector":
            raise Unsupported(cursor, "a vector used as a condition")
        return Py(f"{wrap(py, PREC['cmp'] + 1)} != 0", BOOL, PREC["cmp"])

    def convert(self, py: Py, to: CType, cursor) -> Py:
        """``py`` converted to ``to`` as C's cast does."""
        if py.type == to:
            return py
        if to.kind == "scalar" and py.type.kind == "scalar":
            if to.name == "bool":
                return Py(f"{wrap(py, PREC['cmp'] + 1)} != 0", BOOL, PREC["cmp"])
            return Py(f"{to.py_name}({py.code})", to)
        if to.kind == "vector" and py.type.kind == "scalar":
            return Py(f"{to.py_name}({py.code})", to)  # a scalar widened to every component
        if to.kind == "vector" and py.type.kind == "vector":
            raise Unsupported(cursor, f"a cast from {py.type} to {to} (use convert_{to}())")
        if to.kind == "pointer":
            return self.pointer_cast(py, to, cursor)
        if py.type.kind == "pointer" and to.kind == "scalar" and to.name in ("int64", "uint64"):
            return Py(f"{to.py_name}({py.code})", to)  # (ulong)p: the address
        if to.kind == "void":
            return py
        raise Unsupported(cursor, f"a conversion from {py.type} to {to}")

    def number(self, cursor, as_type: CType | None = None) -> Py:
        value = evaluate(cursor)
        if value is None:
            raise Unsupported(cursor, "a constant clang cannot evaluate")
        spelled = self.module.text(cursor)
        t = as_type or ctype(cursor.type)
        if spelled in _NAMED_CONSTANTS and \
                np.asarray(getattr(api, spelled)).dtype.name in (t.name, "int64"):
            return Py(spelled, t)  # CLK_LOCAL_MEM_FENCE, not its value
        return literal(value, t)

    def decl_ref(self, cursor) -> Py:
        ref = cursor.referenced
        t = ctype(cursor.type)
        if ref is not None and ref.kind == CK.ENUM_CONSTANT_DECL:
            return literal(ref.enum_value, CType("scalar", "int32"))
        name = cursor.spelling
        if ref is not None and ref.kind in (CK.VAR_DECL, CK.PARM_DECL):
            if ref.hash in self.boxed:  # a scalar whose address is taken: t[0] of its array
                return Py(f"{self.names.get(ref)}[0]", t)
            return Py(self.names.get(ref), t)
        if ref is not None and ref.kind == CK.FUNCTION_DECL:
            return Py(self.module.function_name(ref), t)
        return Py(name, t)

    def unexposed(self, cursor) -> Py:
        kids = children(cursor)
        if len(kids) != 1:
            raise Unsupported(cursor, "an implicit expression clang does not expose")
        child = kids[0]
        to, frm = ctype(cursor.type), ctype(child.type)
        if to.kind == "sampler" and frm.kind == "scalar":  # a constant sampler, at its use
            return Py(self.module.sampler_at(cursor), to)
        if frm.kind == "pointer" and frm.inner.kind == "vector" and to != frm and \
                "->" in self.module.text(cursor):
            return self.swizzle(cursor, child)  # reg->s0 on a pointer to a vector
        if frm.kind == "vector" and (to != frm):
            if to.kind == "vector" and child.kind not in (CK.UNEXPOSED_EXPR, CK.DECL_REF_EXPR,
                                                          CK.ARRAY_SUBSCRIPT_EXPR,
                                                          CK.MEMBER_REF_EXPR, CK.PAREN_EXPR,
                                                          CK.CALL_EXPR):
                raise Unsupported(cursor, f"an implicit conversion from {frm} to {to}")
            return self.swizzle(cursor, child)
        if frm.kind == "vector" and is_selector(cursor):
            return self.swizzle(cursor, child)  # v.wzyx: all components, the same type
        if frm.kind == "array" and to.kind == "pointer":
            py = self.expr(child)  # an array is used as a pointer to its first element
            return Py(py.code, to, py.prec)
        if frm == to or child.kind == CK.DECL_REF_EXPR and frm.kind == "other":
            return self.expr(child)
        if frm.kind == "pointer" and to.kind == "pointer":
            py = self.expr(child)
            if frm.inner == to.inner:
                return Py(py.code, to, py.prec, py.byte_base)  # address space, qualifiers
            return self.pointer_cast(py, to, cursor)  # from void *, or C's implicit casts
        if to.kind == "scalar" and frm.kind == "scalar":
            value = evaluate(cursor)
            if value is not None and constant_expression(child):
                return literal(value, to)
        # From the value as the Python compiler types it (a work-item id is long there, size_t
        # in C): converting it once is C's two conversions for every id a launch can have.
        return self.convert(self.expr(child), to, cursor)

    def swizzle(self, cursor, child) -> Py:
        text = self.module.text(cursor).replace("->", ".")
        component = text.rsplit(".", 1)[-1].strip() if "." in text else ""
        if not SWIZZLE.match(component):  # written through a macro
            component = self.module.macro_selectors.selector(cursor, child)
        if not SWIZZLE.match(component or "") or \
                selector_width(component, ctype(child.type)) != max(ctype(cursor.type).width, 1):
            raise Unsupported(cursor, "a vector component access written through a macro")
        base = self.expr(child)
        if base.type.kind == "pointer":  # p->s0: the vector p points to
            return Py(f"{wrap(base, ATOM)}[0].{component}", ctype(cursor.type))
        return Py(f"{wrap(base, ATOM)}.{component}", ctype(cursor.type))

    # -- operators
    def binary(self, cursor) -> Py:
        op = binary_op(cursor)
        left, right = children(cursor)
        if op in ("=", ",") or op.endswith("=") and op not in COMPARE:
            raise Unsupported(cursor, f"'{op}' inside an expression (write it as a statement)")
        if op in ("&&", "||"):
            word = "and" if op == "&&" else "or"
            a, b = self.cond(left), self.cond(right)
            p = PREC[word]
            return Py(f"{wrap(a, p)} {word} {wrap(b, p + 1)}", BOOL, p)
        if op in ("<<", ">>"):
            a, b = self.value(left), self.shift_count(right, ctype(left.type))
        else:  # value() gives each operand its C type, so each side knows the other's
            a, b = self.bare(left, ctype(right.type)), self.bare(right, ctype(left.type))
        t = ctype(cursor.type)
        if a.type.kind == "pointer" or b.type.kind == "pointer":
            return self.pointer_arith(cursor, op, a, b, t)
        if op in COMPARE:
            p = PREC["cmp"]
            return Py(f"{wrap(a, p + 1)} {op} {wrap(b, p + 1)}",
                      BOOL if t.kind == "scalar" else t, p)
        if op == "/" and (t.is_int or t.kind == "vector" and t.name[0] in "iu"):
            op = "//"
        p = PREC[op]
        return Py(f"{wrap(a, p)} {op} {wrap(b, p + 1)}", t, p)

    def shift_count(self, right, left: CType) -> Py:
        """A vector shift's count in the shifted vector's type: clang types ``v << (uchar)4``
        on a uchar4 with an int4 count, the Python language wants one type, and OpenCL uses
        only the count's low log2(bits) bits, which the conversion keeps."""
        b = self.value(right)
        if left.kind != "vector" or b.type == left:
            return b
        inner = strip(right)
        if inner.kind == CK.UNEXPOSED_EXPR and len(children(inner)) == 1 and \
                ctype(children(inner)[0].type).kind == "scalar":  # a splat scalar
            elem, count = CType("scalar", left.name), children(inner)[0]
            value = evaluate(count)
            scalar = literal(int(np.array(value).astype(left.name)), elem) \
                if isinstance(value, int) else self.convert(self.value(count), elem, right)
            return Py(f"{left.py_name}({scalar.code})", left)
        return Py(f"convert_{left.py_name}({b.code})", left)

    def unary(self, cursor) -> Py:
        op = unary_op(cursor)
        (child,) = children(cursor)
        if op in ("++", "--"):
            raise Unsupported(cursor, f"'{op}' inside an expression (write it as a statement)")
        if op == "!":
            c = self.cond(child)
            return Py(f"not {wrap(c, PREC['not'])}", BOOL, PREC["not"])
        if op == "&":
            return self.address_of(cursor, child)
        if op == "*":
            punned = self.pun(child)
            if punned is not None:
                lvalue, source_type, target = punned
                return Py(f"as_{target}({lvalue.code})", target)
            ptr = self.value(child)
            return Py(f"{wrap(ptr, ATOM)}[0]", ctype(cursor.type))
        if op in ("-", "+", "~"):
            inner = self.value(child)
            if op == "-" and inner.code[0].isdigit() and inner.prec == ATOM:
                return Py(f"-{inner.code}", inner.type, UNARY)
            return Py(f"{op}{wrap(inner, UNARY)}", ctype(cursor.type), UNARY)
        raise Unsupported(cursor, f"the unary operator '{op}'")

    def subscript(self, cursor) -> Py:
        flat = self.flat_subscript(cursor)
        if flat is not None:
            return flat
        base, index = children(cursor)
        inner = strip(base)
        if inner.kind == CK.UNEXPOSED_EXPR and ctype(inner.type).kind == "pointer" and \
                len(children(inner)) == 1 and ctype(children(inner)[0].type).kind == "array":
            inner = strip(children(inner)[0])  # a row of a 2-D array, decayed to a pointer
        if inner.kind == CK.ARRAY_SUBSCRIPT_EXPR and ctype(inner.type).kind == "array":
            outer = self.subscript(inner)  # a[i][j] on a 2-D array: a[i, j]
            i = self.value(index)
            return Py(f"{outer.code[:-1]}, {i.code}]", ctype(cursor.type))
        b, i = self.value(base), self.value(index)
        return Py(f"{wrap(b, ATOM)}[{i.code}]", ctype(cursor.type))

    def member(self, cursor) -> Py:
        (base,) = children(cursor)
        b = self.value(base)
        if b.type.kind == "pointer":  # p->f
            return Py(f"{wrap(b, ATOM)}[0].{cursor.spelling}", ctype(cursor.type))
        if b.type.kind == "vector":
            return self.swizzle(cursor, base)
        return Py(f"{wrap(b, ATOM)}.{cursor.spelling}", ctype(cursor.type))

    def conditional(self, cursor) -> Py:
        c, a, b = children(cursor)
        if ctype(c.type).kind != "vector" and constant_expression(strip(c)):
            value = evaluate(strip(c))
            if value is not None:  # (N == 1u) ? x : f(x) from a macro: only one side exists
                py, t = self.value(a if value else b), ctype(cursor.type)
                return py if py.type == t else self.convert(py, t, cursor)
        if ctype(c.type).kind == "vector":  # per component, by each component's top bit
            x, y, m = self.value(a), self.value(b), self.value(c)
            return Py(f"select({y.code}, {x.code}, {m.code})", ctype(cursor.type))
        cond, x, y = self.cond(c), self.value(a), self.value(b)
        p = PREC["if"]
        return Py(f"{wrap(x, p + 1)} if {wrap(cond, p + 1)} else {wrap(y, p)}",
                  ctype(cursor.type), p)

    def cast(self, cursor) -> Py:
        kids = [k for k in children(cursor) if k.kind != CK.TYPE_REF]
        to = ctype(cursor.type)
        child = kids[-1]
        if to.kind == "scalar" and ctype(child.type).kind == "scalar":
            return self.convert(self.expr(child), to, cursor)  # (long)get_group_id(0)
        if to.kind == "vector" and child.kind in (CK.PAREN_EXPR, CK.INIT_LIST_EXPR) and \
                strip(child).kind in (CK.INIT_LIST_EXPR, CK.UNEXPOSED_EXPR) and \
                len(children(strip(child))) > 1:
            return self.vector_literal(to, strip(child))
        return self.convert(self.value(child), to, cursor)

    def compound_literal(self, cursor) -> Py:
        to = ctype(cursor.type)
        init = next(k for k in children(cursor) if k.kind == CK.INIT_LIST_EXPR)
        if to.kind == "struct":
            return self.struct_literal(to, init)
        if to.kind != "vector":
            raise Unsupported(cursor, f"a compound literal of {to}")
        return self.vector_literal(to, init)

    def init_list(self, cursor) -> Py:
        to = ctype(cursor.type)
        if to.kind == "struct":
            return self.struct_literal(to, cursor)  # info_t v = {qd, q_sum};
        if to.kind != "vector":
            raise Unsupported(cursor, f"a braced initialiser of {to}")
        return self.vector_literal(to, cursor)  # float4 v = {a, b, c, d};

    def vector_literal(self, to: CType, init) -> Py:
        parts = [self.value(k).code for k in children(init)]
        return Py(f"{to.py_name}({', '.join(parts)})", to)

    def call(self, cursor) -> Py:
        callee = cursor.referenced
        name = cursor.spelling
        if name in RENAMED_CALLS:
            return Py(RENAMED_CALLS[name], ctype(cursor.type))
        args = list(cursor.get_arguments())
        if name in OUT_PARAM_BUILTINS:
            raise Unsupported(cursor, f"{name}() with an out-parameter (write "
                                      f"'a, b = {name}(...)' in Python)")
        if name.startswith(("atomic_", "atom_")) and args:
            first = strip(args[0])
            if first.kind == CK.UNARY_OPERATOR and unary_op(first) == "&":
                texts = [self.value(children(first)[0]).code]
            else:
                texts = [f"{wrap(self.value(args[0]), ATOM)}[0]"]
            texts += [self.value(a).code for a in args[1:]]
        elif name == "vload_half" and self._field_address(args[1]) is not None and \
                evaluate(args[0]) == 0:
            return Py(f"np.float32({self._field_address(args[1])})", ctype(cursor.type))
        elif callee is not None and callee.is_definition():
            texts = [self.value(a).code for a in args]
            for index, arg in enumerate(args):  # an image handed on: its reads say its format
                self.module.note_image(arg, (callee.spelling, index))
        else:
            texts = [self.bare(a).code for a in args]
        result = ctype(cursor.type)
        entry = registry.lookup(name)
        if name.startswith(("read_image", "write_image")) and args:
            self.module.note_image(args[0], name.split("_image")[1])  # f, h, i, ui
        if entry is not None and entry.family == "work-item":
            result = INT64  # clsim's ids are long; value() converts to C's size_t/uint
        elif entry is not None and entry.family == "relational" and result == INT32 and \
                name not in ("select", "bitselect"):
            result = BOOL
        if callee is not None and callee.kind == CK.FUNCTION_DECL and callee.is_definition():
            self.module.check_callable(callee, cursor)
            name = self.module.function_name(callee)
        else:
            self.module.use(name)
        return Py(f"{name}({', '.join(texts)})", result)




def _names_components(name: str, width: int, count: int) -> bool:
    from clsim.compiler.vectors import components
    from clsim.errors import KernelCompileError

    try:
        return len(components(name, width, None)) == count
    except KernelCompileError:
        return False
