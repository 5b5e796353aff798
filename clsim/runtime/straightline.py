"""A branch-free runtime helper as a Numba intrinsic: its Python source translated to LLVM IR.

Lane-major work-item loops (clsim.compiler.lane_emit) call hot helpers (float32 ``exp``,
``fmax``/``fmin``, ``min``/``max``) inside loops that LLVM should vectorise. A call of an
``njit`` function stays a call in the loop; Numba's own inlining (``inline="always"``) re-runs
the helper's front end, type inference and SSA at every call site and cost about 1 s of CPU on
softmax's first compile. An intrinsic costs nothing to type and emits its instructions in the
caller, where LLVM sees plain arithmetic and selects.

The helper's source stays the one definition: this module reads it (a ``def`` whose body is
assignments and a ``return``, of ``+ - * <<``, comparisons inside conditional expressions,
``np.float32/float64/int64(...)`` and ``_bitcast_int64/_bitcast_float64``) and emits for each
operation the instruction Numba lowers it to (IEEE ``fadd``/``fmul`` with no fast-math flags,
``fcmp`` with Python's NaN semantics, ``select`` for a conditional expression whose sides
have no effects), so the intrinsic gives the same bits as the compiled helper and as the
helper run as plain Python (no-JIT). Anything outside that subset is refused at import.

Not here: choosing which calls use it (``lane_emit``), the helpers' sources (the builtin table).
"""

from __future__ import annotations

import ast

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_FLOAT_BINOPS = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul"}
_INT_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.LShift: "shl"}
# Python's comparisons on floats: ordered except !=, which is true when either is NaN
_FCMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_NUMPY_TYPES = {"float32": types.float32, "float64": types.float64, "int64": types.int64}
_BITCASTS = {"_bitcast_int64": types.int64, "_bitcast_float64": types.float64}


class NotStraightLine(ValueError):
    """The helper's source uses something this translator does not emit."""


def _function(source: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise NotStraightLine("one def expected")
    fn = tree.body[0]
    *assigns, ret = fn.body
    if not isinstance(ret, ast.Return) or ret.value is None or not all(
            isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) for s in assigns):
        raise NotStraightLine("only 'name = expression' lines and one final return")
    return fn


class _Emitter:
    """Emits one helper body into ``builder``; values are (llvm value, numba type)."""

    def __init__(self, context, builder):
        self.context, self.builder = context, builder
        self.names: dict[str, tuple] = {}

    def const(self, value, ty):
        return ir.Constant(self.context.get_value_type(ty), value), ty

    def cast(self, val, to):
        value, ty = val
        if ty == to:
            return val
        return self.context.cast(self.builder, value, ty, to), to

    def unify(self, a, b):
        if a[1] == b[1]:
            return a, b
        to = types.float64 if types.float64 in (a[1], b[1]) else (
            a[1] if isinstance(a[1], types.Float) else b[1])
        return self.cast(a, to), self.cast(b, to)

    def expr(self, node):
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise NotStraightLine(f"{type(node).__name__} is not translated")
        return method(node)

    def e_Name(self, node):
        return self.names[node.id]

    def e_Constant(self, node):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise NotStraightLine(f"constant {node.value!r}")
        return self.const(node.value, types.float64 if isinstance(node.value, float)
                          else types.int64)

    def e_UnaryOp(self, node):
        if not isinstance(node.op, ast.USub):
            raise NotStraightLine("only unary minus")
        value, ty = self.expr(node.operand)
        if isinstance(ty, types.Float):
            return self.builder.fneg(value), ty
        return self.builder.neg(value), ty

    def e_BinOp(self, node):
        a, b = self.unify(self.expr(node.left), self.expr(node.right))
        ty = a[1]
        table = _FLOAT_BINOPS if isinstance(ty, types.Float) else _INT_BINOPS
        if type(node.op) not in table:
            raise NotStraightLine(f"operator {type(node.op).__name__}")
        return getattr(self.builder, table[type(node.op)])(a[0], b[0]), ty

    def compare(self, node):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1
                and type(node.ops[0]) in _FCMP):
            raise NotStraightLine("a condition is one comparison")
        a, b = self.unify(self.expr(node.left), self.expr(node.comparators[0]))
        op = _FCMP[type(node.ops[0])]
        if isinstance(a[1], types.Float):
            cmp = self.builder.fcmp_unordered if op == "!=" else self.builder.fcmp_ordered
            return cmp(op, a[0], b[0])
        signed = a[1].signed
        cmp = self.builder.icmp_signed if signed else self.builder.icmp_unsigned
        return cmp(op, a[0], b[0])

    def e_IfExp(self, node):
        cond = self.compare(node.test)
        a, b = self.unify(self.expr(node.body), self.expr(node.orelse))
        return self.builder.select(cond, a[0], b[0]), a[1]

    def e_Call(self, node):
        fn, args = node.func, node.args
        if len(args) != 1 or node.keywords:
            raise NotStraightLine("calls take one argument")
        if (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
                and fn.value.id == "np" and fn.attr in _NUMPY_TYPES):
            return self.cast(self.expr(args[0]), _NUMPY_TYPES[fn.attr])
        if isinstance(fn, ast.Name) and fn.id in _BITCASTS:
            value, _ty = self.expr(args[0])
            to = _BITCASTS[fn.id]
            return self.builder.bitcast(value, self.context.get_value_type(to)), to
        raise NotStraightLine(f"call of {ast.unparse(fn)}")


def make(source: str):
    """The intrinsic computing the helper ``source`` (raises NotStraightLine when it cannot).
    Arguments must be numbers; the result has the type the source's return computes."""
    fn = _function(source)
    params = [a.arg for a in fn.args.args]
    if len(params) not in _ARITY:
        raise NotStraightLine(f"{len(params)} parameters")

    def emit(context, builder, argtys, args):
        em = _Emitter(context, builder)
        em.names = {p: (v, t) for p, v, t in zip(params, args, argtys, strict=True)}
        for stmt in fn.body[:-1]:
            em.names[stmt.targets[0].id] = em.expr(stmt.value)
        return em.expr(fn.body[-1].value)

    def result_type(argtys):
        names = dict(zip(params, argtys, strict=True))
        for stmt in fn.body[:-1]:
            names[stmt.targets[0].id] = _type_of(stmt.value, names)
        return _type_of(fn.body[-1].value, names)

    result_type([types.float64] * len(params))  # refuses what emit() would not translate

    def typer(argtys):
        if not all(isinstance(t, types.Number) for t in argtys):
            return None
        sig = result_type(argtys)(*argtys)

        def codegen(context, builder, signature, args):
            value, ty = emit(context, builder, signature.args, args)
            return context.cast(builder, value, ty, signature.return_type)

        return sig, codegen

    return _ARITY[len(params)](typer)


def _unified(a, b):
    if a == b:
        return a
    if types.float64 in (a, b):
        return types.float64
    return a if isinstance(a, types.Float) else b


def _type_of(node, names: dict):
    """The Numba type _Emitter gives ``node`` (the intrinsic's signature needs it first)."""
    if isinstance(node, ast.Name):
        return names[node.id]
    if isinstance(node, ast.Constant):
        return types.float64 if isinstance(node.value, float) else types.int64
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _type_of(node.operand, names)
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_BINOPS:
        ty = _unified(_type_of(node.left, names), _type_of(node.right, names))
        if isinstance(ty, types.Float) and type(node.op) not in _FLOAT_BINOPS:
            raise NotStraightLine(f"operator {type(node.op).__name__} on floats")
        return ty
    if isinstance(node, ast.IfExp):
        test = node.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and type(test.ops[0]) in _FCMP):
            raise NotStraightLine("a condition is one comparison")
        _type_of(test.left, names)
        _type_of(test.comparators[0], names)
        return _unified(_type_of(node.body, names), _type_of(node.orelse, names))
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        fn = node.func
        if (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
                and fn.value.id == "np" and fn.attr in _NUMPY_TYPES):
            _type_of(node.args[0], names)
            return _NUMPY_TYPES[fn.attr]
        if isinstance(fn, ast.Name) and fn.id in _BITCASTS:
            _type_of(node.args[0], names)
            return _BITCASTS[fn.id]
    raise NotStraightLine(f"{ast.unparse(node)} is not translated")


# Numba's intrinsic takes a fixed parameter list: one wrapper per arity the helpers have.
def _arity1(typer):
    @intrinsic
    def straight(typingctx, a):
        return typer((a,))
    return straight


def _arity2(typer):
    @intrinsic
    def straight(typingctx, a, b):
        return typer((a, b))
    return straight


def _arity3(typer):
    @intrinsic
    def straight(typingctx, a, b, c):
        return typer((a, b, c))
    return straight


_ARITY = {1: _arity1, 2: _arity2, 3: _arity3}
