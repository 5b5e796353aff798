"""OpenCL C statements to Python lines, one emitter per cursor kind.

Each Python line keeps the ``.cl`` line it came from (``Line.cl_line``), which the generated
module writes as a trailing comment and gives the compiler as its line map. ``for`` loops of the
counting form become ``for i in range(...)``; any other becomes a ``while`` whose increment is
repeated before each ``continue``.
"""

from __future__ import annotations

from dataclasses import dataclass

import clang.cindex as ci

from clsim.frontends.opencl_c.ctype import CType, ctype
from clsim.frontends.opencl_c.exprs import (ATOM, CK, PREC, Expressions, Py, Unsupported,
                                            children, constant_expression, literal,
                                            sampler_value, strip, wrap)
from clsim.frontends.opencl_c.parse import binary_op, evaluate, unary_op

ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="}


@dataclass
class Line:
    indent: int
    text: str
    cl_line: int


class Statements(Expressions):
    """A function body's emitter: expressions plus the statement table."""

    def __init__(self, module, names):
        super().__init__(module, names)
        self.lines: list[Line] = []
        self.depth = 1
        self.loop_incs: list[list | None] = []  # per loop: the increment lines a continue needs
        self.stmt_table = {
            CK.COMPOUND_STMT: self.block, CK.DECL_STMT: self.decl_stmt, CK.IF_STMT: self.if_,
            CK.FOR_STMT: self.for_, CK.WHILE_STMT: self.while_, CK.DO_STMT: self.do_,
            CK.BREAK_STMT: lambda c: self.put("break", c),
            CK.CONTINUE_STMT: self.continue_, CK.RETURN_STMT: self.return_,
            CK.NULL_STMT: lambda c: None,
        }

    def put(self, text: str, cursor) -> None:
        self.lines.append(Line(self.depth, text, cursor.extent.start.line))

    def stmt(self, cursor) -> None:
        emit = self.stmt_table.get(cursor.kind)
        if cursor.kind == CK.UNEXPOSED_STMT and len(children(cursor)) == 1:
            return self.stmt(children(cursor)[0])  # an attributed statement (unroll hints)
        if emit is not None:
            emit(cursor)
        elif cursor.kind in (CK.SWITCH_STMT, CK.GOTO_STMT, CK.LABEL_STMT, CK.CASE_STMT):
            raise Unsupported(cursor, f"'{cursor.kind.name.split('_')[0].lower()}' statements")
        else:
            self.expr_stmt(cursor)

    def body(self, cursor) -> None:
        """A nested statement list, with 'pass' where it would be empty."""
        self.depth += 1
        start = len(self.lines)
        self.names.push()
        self.stmt(cursor)
        self.names.pop()
        if len(self.lines) == start:
            self.put("pass", cursor)
        self.depth -= 1

    def block(self, cursor) -> None:
        self.names.push()
        for child in children(cursor):
            self.stmt(child)
        self.names.pop()

    # -- declarations
    def decl_stmt(self, cursor) -> None:
        for var in children(cursor):
            if var.kind == CK.VAR_DECL:
                self.var_decl(var)
            elif var.kind not in (CK.STRUCT_DECL, CK.TYPEDEF_DECL):
                raise Unsupported(var, f"a local {var.kind.name.lower()}")

    def box_locals(self, body) -> None:
        """Scalar, vector and struct locals whose address is taken (``fill(&t)``, ``(uchar *)&v``)
        live in a one-element private array, as the Python language passes a private
        variable by reference; a ``__local`` scalar or vector (``__local float s;``, one per
        work-group) in a one-element local array."""
        for node in body.walk_preorder():
            # ``local float *p`` is a private pointer into local memory: a pointer variable
            if node.kind == CK.VAR_DECL and _is_local(node) and \
                    ctype(node.type).kind not in ("array", "pointer"):
                if ctype(node.type).kind not in ("scalar", "vector"):
                    raise Unsupported(node, f"a __local variable of type {ctype(node.type)}")
                self.boxed.add(node.hash)
            if node.kind == CK.UNARY_OPERATOR and unary_op(node) == "&":
                target = strip(children(node)[0])
                ref = target.referenced if target.kind == CK.DECL_REF_EXPR else None
                if ref is not None and ref.kind == CK.VAR_DECL and \
                        ctype(ref.type).kind in ("scalar", "vector", "struct"):
                    self.boxed.add(ref.hash)

    def var_decl(self, var) -> None:
        t = ctype(var.type)
        if var.storage_class == ci.StorageClass.STATIC:
            raise Unsupported(var, "a static local variable")
        kids = [k for k in children(var) if k.kind != CK.TYPE_REF]
        init = kids[-1] if kids and _has_initialiser(var) else None
        name = self.names.declare(var, t)
        if var.hash in self.boxed and _is_local(var):  # OpenCL allows no initialiser here
            self.module.use("local_array")
            self.put(f"{name} = local_array(1, {t.py_name})", var)
            return
        if var.hash in self.boxed and t.kind == "struct":  # a private array of one struct
            self.module.use("private_array")
            self.put(f"{name} = private_array(1, {t.py_name})", var)
            if init is not None:
                self.put(f"{name}[0] = {self.typed(init, t).code}", var)
            return
        if var.hash in self.boxed:
            self.module.use("private_array")
            fill = f", fill=({self.typed(init, t).code},)" if init is not None else ""
            self.put(f"{name} = private_array(1, {t.py_name}{fill})", var)
            return
        if t.kind == "array":
            return self.array_decl(var, name, t, init)
        if t.kind == "sampler":
            return self.sampler_decl(var, name, init)
        if t.kind in ("other", "image"):
            raise Unsupported(var, f"a variable of type {t}")
        if init is None:
            if t.kind == "struct":  # C leaves it indeterminate; clsim zeroes it
                self.module.use("struct_value")
                self.put(f"{name} = struct_value({t.py_name})", var)
                return
            if t.kind == "pointer":
                self.put(f"{name} = None", var)
                return
            zero = literal(0, t) if t.kind == "scalar" else Py(f"{t.py_name}(0)", t)
            self.put(f"{name} = {zero.code}", var)
            return
        self.put(f"{name} = {self.typed(init, t).code}", var)

    def sampler_decl(self, var, name: str, init) -> None:
        """``const sampler_t s = CLK_...;`` in a function: a module-level constant, as the
        image builtins take a sampler."""
        if init is None or sampler_value(init) is None:
            raise Unsupported(var, "a sampler that is not a compile-time constant")
        self.names.by_decl[var.hash] = self.module.declare_sampler(var, init, name)

    def typed(self, cursor, t: CType) -> Py:
        """``cursor``'s value as exactly ``t`` (a bare literal only where Python's type of it
        is already ``t``)."""
        if t.kind == "scalar" and t.name not in ("int32", "float32", "bool"):
            value = evaluate(strip(cursor)) if strip(cursor).kind in (
                CK.INTEGER_LITERAL, CK.FLOATING_LITERAL, CK.CHARACTER_LITERAL) else None
            if value is not None:
                return literal(value, t)
        py = self.value(cursor)
        if t.kind == "scalar" and py.type != t:
            return self.convert(py, t, cursor)
        return py

    def array_decl(self, var, name: str, t: CType, init) -> None:
        elem = t.inner
        if elem.kind == "pointer" and len(t.dims) == 1 and init is None:
            self.put(f"{name} = pointer_array({t.dims[0]})", var)  # global T *a[N]
            return
        if elem.kind == "struct" and init is None and not _is_local(var):
            self.module.use("private_array")  # info a[4]: the Python language's own form
            self.put(f"{name} = private_array({self.array_shape(var, t)}, {elem.py_name})", var)
            return
        if elem.kind not in ("scalar", "vector"):
            raise Unsupported(var, f"an array of {elem}")
        dtype = f"np.{elem.name}" if elem.kind == "scalar" else elem.py_name
        shape = self.array_shape(var, t)
        space = ctype(var.type)
        if _is_local(var):
            if init is not None:
                raise Unsupported(var, "an initialised local array")
            self.put(f"{name} = local_array({shape}, {dtype})", var)
            self.module.use("local_array")
            return
        del space
        self.module.use("private_array")
        if init is None:
            self.put(f"{name} = private_array({shape}, {dtype})", var)
            return
        if init.kind != CK.INIT_LIST_EXPR:
            raise Unsupported(var, "this array initialiser")
        if len(t.dims) > 1:
            return self.array_init_nd(var, name, t, init)
        items = children(init)
        values = [evaluate(strip(k)) for k in items]
        if elem.kind == "scalar" and all(v is not None for v in values):
            fill = ", ".join(literal(v, elem).code for v in values)
            fill = f"({fill},)" if len(values) == 1 else f"({fill})"
            self.put(f"{name} = private_array({shape}, np.{elem.name}, fill={fill})", var)
            return
        # C's non-constant initialiser (the rest of the array is zero)
        fill = ", ".join(self.typed(k, elem).code for k in items)
        fill = f"({fill},)" if len(items) == 1 else f"({fill})"
        self.put(f"{name} = private_array({shape}, {dtype}, fill={fill})", var)

    # -- expression statements
    def expr_stmt(self, cursor) -> None:
        c = strip(cursor) if cursor.kind == CK.PAREN_EXPR else cursor
        if c.kind == CK.BINARY_OPERATOR and binary_op(c) == ",":
            for part in children(c):
                self.expr_stmt(part)
            return
        if c.kind in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR) and \
                binary_op(c) in ASSIGN_OPS:
            return self.assign(c)
        if c.kind == CK.UNARY_OPERATOR and unary_op(c) in ("++", "--"):
            (target,) = children(c)
            one = literal(1, CType("scalar", "int32"))
            t = ctype(target.type)
            if t.kind == "pointer" or t.kind == "scalar":
                lhs = self.expr(target).code
                self.put(f"{lhs} {'+' if unary_op(c) == '++' else '-'}= {one.code}", c)
                return
            raise Unsupported(c, f"'{unary_op(c)}' on {t}")
        if c.kind == CK.CSTYLE_CAST_EXPR and ctype(c.type).kind == "void":
            inner = children(c)[-1]
            if strip(inner).kind in (CK.DECL_REF_EXPR, CK.INTEGER_LITERAL):
                return  # (void)x; only silences a warning
            return self.expr_stmt(inner)
        if c.kind == CK.CALL_EXPR:
            args = list(c.get_arguments())
            if c.spelling == "vstore_half" and len(args) == 3 and evaluate(args[1]) == 0 and \
                    self._field_address(args[2]) is not None:
                # vstore_half(v, 0, &x[i].d): the half field gets v rounded to nearest even,
                # which is C's conversion to half
                value = self.value(args[0])
                self.put(f"{self._field_address(args[2])} = np.float16({value.code})", c)
                return
            self.put(self.expr(c).code, c)
            return
        if c.kind in (CK.DECL_REF_EXPR, CK.INTEGER_LITERAL):
            return
        raise Unsupported(c, f"the statement kind {c.kind.name.lower()}")

    def assign(self, c) -> None:
        op = binary_op(c)
        target, source = children(c)
        t = ctype(target.type)
        if strip(source).kind in (CK.BINARY_OPERATOR,) and binary_op(strip(source)) == "=":
            self.assign(strip(source))  # a = b = v: b first, then a = b
            source = children(strip(source))[0]
        deref = strip(target)
        punned = self.pun(children(deref)[0]) if deref.kind == CK.UNARY_OPERATOR and \
            unary_op(deref) == "*" else None
        if punned is not None and op == "=":  # *(T *)&v = x: v gets x's bits
            lvalue, source_type, _ = punned
            rhs = self.typed(source, t)
            self.put(f"{lvalue.code} = as_{source_type}({rhs.code})", c)
            return
        lhs = self.expr(target)
        if op == "=":
            rhs = self.typed(source, t) if t.kind == "scalar" else self.value(source)
            self.put(f"{lhs.code} = {rhs.code}", c)
            return
        rhs = self.value(source)
        if op == "/=" and t.is_int:
            op = "//="
        if lhs.type.kind == "pointer" and op in ("+=", "-="):
            self.put(f"{lhs.code} {op} {rhs.code}", c)
            return
        self.put(f"{lhs.code} {op} {rhs.code}", c)

    # -- control flow
    def if_(self, cursor, word: str = "if") -> None:
        kids = children(cursor)
        cond, then = kids[0], kids[1]
        self.put(f"{word} {self.cond(cond).code}:", cursor)
        self.body(then)
        if len(kids) > 2:
            other = kids[2]
            if other.kind == CK.IF_STMT:
                return self.if_(other, "elif")
            self.put("else:", other)
            self.body(other)

    def while_(self, cursor) -> None:
        cond, body = children(cursor)
        self.put(f"while {self.cond(cond).code}:", cursor)
        self.loop_incs.append(None)
        self.body(body)
        self.loop_incs.pop()

    def do_(self, cursor) -> None:
        body, cond = children(cursor)
        if evaluate(cond) == 0 and constant_expression(cond) and \
                not _has_continue(body, (CK.CONTINUE_STMT, CK.BREAK_STMT)):
            self.names.push()  # do { ... } while (0), a macro's statement: its body, once
            self.stmt(body)
            self.names.pop()
            return
        if _has_continue(body):
            raise Unsupported(cursor, "'continue' inside do-while")
        self.put("while True:", cursor)
        self.loop_incs.append(None)
        self.body(body)
        self.loop_incs.pop()
        self.depth += 1
        self.put(f"if not {wrap(self.cond(cond), PREC['not'])}:", cond)
        self.depth += 1
        self.put("break", cond)
        self.depth -= 2

    def continue_(self, cursor) -> None:
        incs = self.loop_incs[-1] if self.loop_incs else None
        for inc in incs or ():
            self.expr_stmt(inc)
        self.put("continue", cursor)

    def return_(self, cursor) -> None:
        kids = children(cursor)
        if not kids:
            self.put("return", cursor)
            return
        ret = self.module.return_type
        value = self.typed(kids[0], ret) if ret.kind == "scalar" else self.value(kids[0])
        self.put(f"return {value.code}", cursor)

    def for_(self, cursor) -> None:
        init, cond, inc, body = for_parts(cursor)
        self.names.push()
        start = len(self.lines)
        if init is not None:
            self.stmt(init)
        counted = self.counted_range(init, cond, inc, body, start)
        if counted is not None:
            var, start_line, rng = counted
            del self.lines[start_line:]  # the init is the range's start
            self.put(f"for {var} in {rng}:", cursor)
            self.loop_incs.append(None)
            self.body(body)
        else:
            self.put(f"while {self.cond(cond).code if cond is not None else 'True'}:", cursor)
            self.loop_incs.append([inc] if inc is not None else None)
            self.body(body)
            if inc is not None:
                self.depth += 1
                self.expr_stmt(inc)
                self.depth -= 1
        self.loop_incs.pop()
        self.names.pop()

    def step_text(self, step, t: CType) -> str:
        """A range step in the loop variable's type: ``i += s`` computes in C's common type
        and converts back to i's, which is the same modulo 2**bits as adding s converted."""
        if step is None:
            return "1"
        py = self.bare(step, t)
        if py.type == t:
            return py.code
        return self.convert(self.expr(strip(step)), t, step).code

    def counted_range(self, init, cond, inc, body, start):
        """``(var, first line of the init, "range(a, b, s)")`` for ``for (i = a; i < b; i += s)``
        whose bound and step the body cannot change; else None."""
        if init is None or cond is None or inc is None:
            return None
        var_cursor = _init_var(init)
        if var_cursor is None or ctype(var_cursor.type).kind != "scalar":
            return None  # a pointer walks in a while loop (p < end; p += 4)
        c = strip(cond)
        if c.kind != CK.BINARY_OPERATOR or binary_op(c) not in ("<", "<=", ">", ">="):
            return None
        left, right = children(c)
        if _ref(left) != var_cursor.hash or ctype(left.type) != ctype(var_cursor.type):
            return None  # the bound compares in a wider type than the variable's
        step = _step(inc, var_cursor.hash)
        if step is None:
            return None
        sign, op = step[1], binary_op(c)
        up = op in ("<", "<=")
        if (sign > 0) != up:
            return None
        if step[0] is not None:
            value = evaluate(step[0])
            if value is not None and value <= 0 or value is None and not up:
                return None  # a run-time step only on a counting-up loop
        written = _assigned(body)
        if var_cursor.hash in written or _refs(right) & written or _refs_step(step) & written \
                or not _pure(right) or (step[0] is not None and not _pure(step[0])):
            return None
        t = ctype(var_cursor.type)
        name = self.names.get(var_cursor)
        first = [ln for ln in self.lines[start:]]
        if len(first) != 1 or not first[0].text.startswith(f"{name} = "):
            return None
        a = first[0].text[len(name) + 3:]
        b = self.bare(right, t).code
        if op == "<=":
            b = f"{b} + 1"
        elif op == ">=":
            b = f"{b} - 1"
        s = "" if step[0] is None and sign > 0 else \
            f", {'-' if sign < 0 else ''}{self.step_text(step[0], t)}"
        return name, start, f"range({a}, {b}{s})"


def for_parts(cursor):
    """(init, cond, inc, body) of a for statement; clang's children omit the empty parts, so
    the header's tokens say which are there."""
    tokens = [t.spelling for t in cursor.get_tokens()]
    present, depth, part = [False, False, False], 0, 0
    for tok in tokens[2:]:
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif tok == ";" and depth == 0:
            part += 1
            if part == 3:
                break
        elif part < 3:
            present[part] = True
    kids = iter(children(cursor))
    parts = [next(kids) if p else None for p in present]
    return (*parts, next(kids))




def _has_initialiser(var) -> bool:
    # A scalar, vector, pointer or struct variable's only expression child is its initialiser:
    # read off the AST, since the tokens of a declaration whose type is a macro (ggml's
    # `ACC_TYPE m_i = FA_M_INIT;`) do not hold its '='. An array's size is a child too.
    if ctype(var.type).kind != "array":
        return any(k.kind.is_expression() for k in children(var))
    kids = [k for k in children(var) if k.kind.is_expression()]
    if kids and kids[-1].kind in (CK.INIT_LIST_EXPR, CK.STRING_LITERAL):
        return True
    # Otherwise an '=' after the variable's name: the scan starts at the name, as the extent
    # of a declaration whose type is a macro starts at the macro's definition.
    tokens = list(var.get_tokens())
    at = var.location.offset
    start = next((i for i, tok in enumerate(tokens)
                  if tok.spelling == var.spelling and tok.location.offset == at), 0)
    depth = 0
    for tok in tokens[start:]:
        text = tok.spelling
        if text in "([{":
            depth += 1
        elif text in ")]}":
            depth -= 1
        elif text == "=" and depth == 0:
            return True
    return False


def _ref(cursor):
    c = strip(cursor)
    if c.kind == CK.DECL_REF_EXPR and c.referenced is not None:
        return c.referenced.hash
    return None


def _init_var(init):
    if init.kind == CK.DECL_STMT:
        vars_ = [v for v in children(init) if v.kind == CK.VAR_DECL]
        return vars_[0] if len(vars_) == 1 else None
    if init.kind == CK.BINARY_OPERATOR and binary_op(init) == "=":
        target = strip(children(init)[0])
        if target.kind == CK.DECL_REF_EXPR:
            return target.referenced
    return None


def _step(inc, var):
    """(step expression or None for 1, sign) of ``i++``, ``i--``, ``i += s``, ``i -= s``."""
    if inc.kind == CK.UNARY_OPERATOR and unary_op(inc) in ("++", "--") and \
            _ref(children(inc)[0]) == var:
        return None, 1 if unary_op(inc) == "++" else -1
    if inc.kind == CK.COMPOUND_ASSIGNMENT_OPERATOR and binary_op(inc) in ("+=", "-=") and \
            _ref(children(inc)[0]) == var:
        return children(inc)[1], 1 if binary_op(inc) == "+=" else -1
    return None


def _assigned(body) -> set:
    out = set()
    for node in body.walk_preorder():
        if node.kind in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR) and \
                binary_op(node).endswith("=") and binary_op(node) not in ("==", "!=", "<=",
                                                                           ">="):
            ref = _ref(children(node)[0])
            if ref is not None:
                out.add(ref)
        if node.kind == CK.UNARY_OPERATOR and unary_op(node) in ("++", "--", "&"):
            ref = _ref(children(node)[0])
            if ref is not None:
                out.add(ref)
    return out


def _refs(cursor) -> set:
    return {n.referenced.hash for n in cursor.walk_preorder()
            if n.kind == CK.DECL_REF_EXPR and n.referenced is not None}


def _refs_step(step) -> set:
    return _refs(step[0]) if step[0] is not None else set()


def _pure(cursor) -> bool:
    """No memory read or call whose value the loop body could change."""
    for n in cursor.walk_preorder():
        if n.kind in (CK.ARRAY_SUBSCRIPT_EXPR, CK.MEMBER_REF_EXPR):
            return False
        if n.kind == CK.UNARY_OPERATOR and unary_op(n) == "*":
            return False
        if n.kind == CK.CALL_EXPR and not n.spelling.startswith("get_"):
            return False
    return True


def _has_continue(body, kinds=(CK.CONTINUE_STMT,)) -> bool:
    """Whether ``body`` has a ``continue`` (or another of ``kinds``) of the loop around it."""
    def walk(node, in_loop):
        for k in children(node):
            if k.kind in kinds and not in_loop:
                return True
            if walk(k, in_loop or k.kind in (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT)):
                return True
        return False
    return walk(body, False)


__all__ = ["ATOM", "Line", "Py", "Statements"]


def _is_local(var) -> bool:
    """A variable in the __local address space (clang spells it in the type)."""
    return "__local" in var.type.spelling
