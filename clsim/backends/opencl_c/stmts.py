"""Statements and functions of the typed kernel AST as OpenCL C.

Variables are declared once, at the top of their function, with the one type the compiler's
typing gave them (a Python variable has one type, as a C variable does); a loop variable used
only inside its loop is declared in the ``for``. Every statement line ends with the Python
line it came from (``/* softmax.py:31 */``). ``range`` loops evaluate their bounds once, as
Python does: a bound the body may change is copied first.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from clsim.backends.opencl_c.exprs import ExprPrinter
from clsim.backends.opencl_c.names import c_name, declaration, literal
from clsim.compiler import ctypes as ct
from clsim.compiler.astwalk import walk
from clsim.compiler.builtins import lookup
from clsim.compiler.diagnostics import builtin_name, node_error
from clsim.compiler.structs import StructT
from clsim.compiler.vector_arrays import VEC_SUFFIX
from clsim.compiler.vector_arrays import user_name as vector_array_name

_AUG = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "/=",
        ast.Mod: "%=", ast.LShift: "<<=", ast.RShift: ">>=", ast.BitAnd: "&=", ast.BitOr: "|=",
        ast.BitXor: "^="}
_DECLARATIONS = ("local_array", "private_array")
_FILL_LIMIT = 64  # elements an initialiser list spells out; more are filled by a loop


class FunctionPrinter(ExprPrinter):
    def __init__(self, unit, fn):
        super().__init__(unit, fn.env)
        self.fn = fn
        self.lines: list[str] = []
        self.depth = 1
        self.temps = 0
        self.loop_declared: set[str] = set()
        self.uses = _name_counts(fn.body)
        self.loop_names: dict[str, str] = {}  # scoped loop variable -> its C name
        self.open_loops: list[str] = []

    # -- output -----------------------------------------------------------------------------
    def emit(self, text: str, node=None) -> None:
        loc = getattr(node, "loc", None)
        where = f"  /* {loc.file.rsplit('/', 1)[-1]}:{loc.line} */" if loc else ""
        self.lines.append("    " * self.depth + text + where)

    def temp(self, stem: str) -> str:
        self.temps += 1
        return f"{stem}{self.temps}"

    # -- the function -----------------------------------------------------------------------
    def render(self, signature: str) -> str:
        body_start = len(self.lines)
        self.block(self.fn.body)
        body = self.lines[body_start:]
        self.lines = self.lines[:body_start]
        decls = self.declarations()
        return "\n".join([signature, "{", *decls, *body, "}"])

    def declarations(self) -> list[str]:
        out = []
        for name, t in self.fn.env.items():
            if name in self.fn.param_types or t == "null" or name.endswith("__buf") \
                    or name in self.loop_declared:
                continue
            if isinstance(t, ct.ArrayT) and t.space == "local" and not self.fn.is_kernel:
                raise node_error(self.fn.body[0], f"'{vector_array_name(name)}' is a local "
                                 f"array in helper "
                                 f"{self.fn.name}(), which OpenCL C allows only in kernels; "
                                 "pass it in as a parameter")
            if name.endswith(VEC_SUFFIX):
                continue  # an array of vectors' storage: declared as the array (below)
            t = vector_array_type(name, t, self.fn.env)
            if _is_half_type(t):
                self.unit.require_fp16(None)
            self.unit.note_type(t)
            out.append("    " + declaration(t, c_name(name), self.unit.structs) + ";")
        return out

    # -- statements -------------------------------------------------------------------------
    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        method = getattr(self, f"s_{type(s).__name__}", None)
        if method is None:
            raise node_error(s, f"OpenCL C output: '{type(s).__name__}' statements cannot be "
                                "printed")
        method(s)

    def s_Pass(self, s):
        return

    def s_Break(self, s):
        self.emit("break;", s)

    def s_Continue(self, s):
        self.emit("continue;", s)

    def s_Return(self, s):
        if s.value is None:
            self.emit("return;", s)
        else:
            code = self.expr(s.value)
            ret = self.fn.ret_type
            if ret is not None and getattr(s.value, "ctype", None) != ret:
                code = self.cast(code, ret, s.value)
            self.emit(f"return {code};", s)

    def s_Expr(self, s):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # a docstring
        self.emit(self.expr(s.value) + ";", s)

    def s_Assign(self, s):
        target, value = s.targets[0], s.value
        name = builtin_name(value)
        if name in _DECLARATIONS:
            return self._array_init(target, value)
        if name == "vector_set":
            return self._vector_set(target, value, s)
        if isinstance(target, ast.Tuple):
            return self._swap(target, value, s)
        if getattr(target, "ctype", None) == "float16" and self._half_store(target, value, s):
            return
        self.emit(f"{self.expr(target)} = {self.expr(value)};", s)

    def _half_store(self, target, value, s) -> bool:
        """``y[i] = np.float16(v)`` with a float ``v`` is ``vstore_half`` (no cl_khr_fp16);
        it rounds to nearest even, as the simulator's conversion does."""
        if isinstance(target, ast.Name):
            return False
        if _is_place(value) and getattr(value, "ctype", None) == "float16":
            # a half copied as its 16 bits: through float a NaN's payload could change
            dst = f"*({self.place_space(target)}ushort*)&{self.half_place(target)}"
            src = f"*({self.place_space(value)}ushort*)&{self.half_place(value)}"
            self.emit(f"{dst} = {src};", s)
            return True
        kind, dtype = getattr(getattr(value, "func", None), "resolved", (None, None))
        if kind != "dtype" or dtype != "float16" or \
                getattr(value.args[0], "ctype", None) != "float32":
            return False
        self.emit(f"vstore_half({self.expr(value.args[0])}, 0, &{self.half_place(target)});", s)
        return True

    def _array_init(self, target, call):
        fill = getattr(call, "fill", None)
        if fill is None:
            return
        t = self.fn.env[target.id]
        name = c_name(vector_array_name(target.id))
        how, values = fill
        if how == "start":
            values = [*values, *([0] * (t.shape[0] - len(values)))]
        else:
            count = 1
            for n in t.shape:
                count *= n
            if count > _FILL_LIMIT:
                k = self.temp("k")
                flat = f"(({self.type_name(t.dtype)}*){name})"
                self.emit(f"for (int {k} = 0; {k} < {count}; {k}++) {{", call)
                self.emit(f"    {flat}[{k}] = {literal(values, t.dtype)};")
                self.emit("}")
                return
            values = [values] * count
        flat = f"(({self.type_name(t.dtype)}*){name})"
        for k, v in enumerate(values):
            self.emit(f"{flat}[{k}] = {literal(v, t.dtype)};", call if k == 0 else None)

    def _vector_set(self, target, call, s):
        base = c_name(target.id) if isinstance(target, ast.Name) else self.expr(target)
        value = self.expr(call.args[1])
        if hasattr(call, "vector_components"):
            comps = "".join(f"{c:x}" for c in call.vector_components)
            self.emit(f"{base}.s{comps} = {value};", s)
        else:
            self.emit(f"{base}[{self.expr(call.args[2])}] = {value};", s)

    def _swap(self, target, value, s):
        temps = []
        for t, v in zip(target.elts, value.elts, strict=True):
            tmp = self.temp(f"{c_name(t.id)}_new")
            ty = self.fn.env[t.id]
            temps.append(tmp)
            self.emit(f"{declaration(ty, tmp, self.unit.structs)} = {self.expr(v)};", s)
        for t, tmp in zip(target.elts, temps, strict=True):
            self.emit(f"{c_name(t.id)} = {tmp};")

    def s_AugAssign(self, s):
        self.emit(f"{self.expr(s.target)} {_AUG[type(s.op)]} {self.expr(s.value)};", s)

    def s_If(self, s, prefix: str = "if"):
        self.emit(f"{prefix} ({self.expr(s.test)}) {{", s)
        self.nested(s.body)
        if len(s.orelse) == 1 and isinstance(s.orelse[0], ast.If):
            self.s_If(s.orelse[0], "} else if")  # it closes the chain
            return
        if s.orelse:
            self.emit("} else {")
            self.nested(s.orelse)
        self.emit("}")

    def s_While(self, s):
        if s.orelse:
            raise node_error(s, "OpenCL C output: while/else cannot be printed")
        self.emit(f"while ({self.expr(s.test)}) {{", s)
        self.nested(s.body)
        self.emit("}")

    def nested(self, body):
        self.depth += 1
        self.block(body)
        self.depth -= 1

    def s_For(self, s):
        var = s.target.id
        t = self.fn.env.get(var, s.iter.ctype)
        args = s.iter.args
        start, stop, step = ((None, args[0], None) if len(args) == 1 else
                             (args[0], args[1], args[2] if len(args) == 3 else None))
        assigned = _assigned(s.body)
        opened = False
        bounds = []
        for which, node in (("stop", stop), ("step", step)):
            if node is None or _fixed(node, assigned):
                bounds.append(None if node is None else self.expr(node))
                continue
            if not opened:
                self.emit("{", s)
                self.depth += 1
                opened = True
            tmp = self.temp(f"{c_name(var)}_{which}")
            self.emit(f"{ct.cname(t)} {tmp} = {self.expr(node)};")
            bounds.append(tmp)
        stop_c, step_c = bounds
        inside_only = self.uses.get(var, 0) == _name_counts([s]).get(var, 0)
        name = c_name(var)
        if inside_only:
            self.loop_declared.add(var)
            # scopes.py named it c__s1 to keep Python's one-variable-per-name apart; C's
            # for-scope does that itself, so the loop keeps the Python name
            plain = c_name(var.split("__s")[0])
            if "__s" in var and plain not in self.open_loops and plain not in self.fn.env:
                name = plain
            self.loop_names[var] = name
        head = f"{ct.cname(t)} {name}" if inside_only else name
        first = "0" if start is None else self.expr(start)
        sign = _sign(step)
        if step_c is None:
            cond, inc = f"{name} < {stop_c}", f"{name}++"
        else:
            inc = f"{name} += {step_c}"
            if sign > 0:
                cond = f"{name} < {stop_c}"
            elif sign < 0:
                cond = f"{name} > {stop_c}"
            else:
                cond = f"({step_c} > 0 ? {name} < {stop_c} : {name} > {stop_c})"
        self.emit(f"for ({head} = {first}; {cond}; {inc}) {{", s)
        self.open_loops.append(name)
        self.nested(s.body)
        self.open_loops.pop()
        self.emit("}")
        if opened:
            self.depth -= 1
            self.emit("}")


def _is_place(node) -> bool:
    return isinstance(node, ast.Subscript | ast.Attribute) and not hasattr(node, "resolved")


def _is_half_type(t) -> bool:
    return t == "float16" or (isinstance(t, ct.VecT) and t.dtype == "float16")


def vector_array_type(name: str, t, env: dict):
    """The C array type of an array of vectors or structs (``uint4 qv[8]``, ``INFO a[2]``): clsim's pointer ``qv``
    to the storage ``qv__vec`` (flattened: a 2-D one prints as its rows one after another,
    as its indices are)."""
    storage = env.get(name + VEC_SUFFIX)
    if not (isinstance(t, ct.PtrT) and t.base == name + VEC_SUFFIX and storage is not None):
        return t
    per_element = t.view.itemsize if isinstance(t.view, StructT) else t.view.width
    return replace(storage, dtype=t.view, shape=(storage.shape[0] // per_element,))


def _name_counts(stmts) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in stmts:
        for n in walk(s):
            if isinstance(n, ast.Name) and not hasattr(n, "resolved"):
                counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _assigned(stmts) -> set[str]:
    out = set()
    for s in stmts:
        for n in walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                out.add(n.target.id)
    return out


def _fixed(node, assigned: set[str]) -> bool:
    """A range bound C may re-evaluate every iteration: constants and unassigned names."""
    if isinstance(node, ast.Constant) or hasattr(node, "resolved"):
        return True
    if isinstance(node, ast.Name):
        return node.id not in assigned
    name = builtin_name(node)
    if name is not None and getattr(lookup(name), "family", None) == "work-item":
        return all(_fixed(a, assigned) for a in node.args)
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return all(_fixed(c, assigned) for c in ast.iter_child_nodes(node)
                   if isinstance(c, ast.expr))
    return False


def _sign(node) -> int:
    """+1 or -1 for a constant step, 0 when only the run knows."""
    if node is None:
        return 1
    value = None
    if isinstance(node, ast.Constant):
        value = node.value
    elif getattr(node, "resolved", (None,))[0] == "const":
        value = node.resolved[1]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant):
        value = -node.operand.value
    if value is None:
        return 0
    return 1 if value > 0 else -1
