"""Code generation for vector values: tuples built component by component.

A vector is a Numba ``UniTuple`` (a plain tuple in no-JIT mode); LLVM keeps its components in
registers, so ``a + b`` on float4 costs what four scalar additions cost (measured in
docs/performance.md). A component-wise expression reads each operand several times, so an
operand that is not a plain name is passed to a small module-level function made for that
expression (``vec_lift``); the function is emitted once per distinct body.
"""

from __future__ import annotations

import ast
import re
from contextlib import contextmanager

from clsim.compiler import ctypes as ct
from clsim.compiler import vectors as vx
from clsim.compiler.diagnostics import compile_error
from clsim.compiler.infer import _CMPS, _OPS

_SIMPLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class VectorEmitter:
    """Mixin of ``ExprEmitter``: vector operators, components, conversions."""

    @contextmanager
    def conditional(self):
        """Emitting an operand that runs only sometimes (after 'and'/'or', in 'a if c else b'):
        its vector operands are not hoisted into temporaries before the statement."""
        self.cond_depth = getattr(self, "cond_depth", 0) + 1
        try:
            yield
        finally:
            self.cond_depth -= 1

    def vec_lift(self, codes: list[str], build) -> str:
        """``build(names)`` evaluated with each of ``codes`` read once: inline when every code
        is a plain name, else as a call of a module-level function of those arguments."""
        if all(_SIMPLE.match(c) for c in codes):
            return build(codes)
        if getattr(self, "stmt_depth", 0) and not getattr(self, "cond_depth", 0):
            # in a statement that always runs its operands: temporaries, so that Numba has
            # one function fewer to compile (each costs about as much as a small kernel)
            names = []
            for c in codes:
                if _SIMPLE.match(c):
                    names.append(c)
                else:
                    names.append(self.fresh("_vt"))
                    self.pre(f"{names[-1]} = {c}")
            return build(names)
        params = [f"a{k}" for k in range(len(codes))]
        body = build(params)
        name = self.module.lifted_function(params, body)
        return f"{name}({', '.join(codes)})"

    def vec_cast(self, code: str, src, dst: ct.VecT) -> str:
        if isinstance(src, ct.VecT):
            if src.width != dst.width:
                raise compile_error(None, f"internal: cast {src} to {dst}")
            return self.vec_lift([code], lambda n: "(" + ", ".join(
                self.cast(f"{n[0]}[{k}]", src.dtype, dst.dtype) for k in range(dst.width))
                + ",)")
        return self.vec_lift([code], lambda n: "(" + ", ".join(
            [self.cast(n[0], src, dst.dtype)] * dst.width) + ",)")

    def vec_binop(self, node) -> str:
        op = _OPS[type(node.op)]
        vec: ct.VecT = node.ctype
        t = vec.dtype
        left, right = node.left.ctype, node.right.ctype
        codes = [self.expr(node.left), self.expr(node.right)]
        extra = []
        if op in ("//", "%"):
            site = self.module.site(node, "", "arith", "none", t)
            self.checked()
            extra = ["_err", self.const(site, "int64"), self.lid_code()]
        for _ in range(vec.width):
            self.count_flop(op, t)

        def comp(n, side, k):
            src = ct.elem(side)
            c = f"{n}[{k}]" if isinstance(side, ct.VecT) else n
            return self.cast(c, src, t)

        def build(names):
            out = []
            for k in range(vec.width):
                a, b = comp(names[0], left, k), comp(names[1], right, k)
                if op in ("<<", ">>"):
                    code = f"({a} {op} ({b} & {self.const(ct.bits(t) - 1, t)}))"
                elif op in ("//", "%"):
                    helper = self.helper(f"_idiv_{t}" if op == "//" else f"_irem_{t}")
                    code = f"{helper}({a}, {b}, {', '.join(names[2:])})"
                else:
                    code = f"({a} {op} {b})"
                out.append(self.wrap(code, t))
            return "(" + ", ".join(out) + ",)"

        return self.vec_lift(codes + extra, build)

    def vec_unary(self, node) -> str:
        vec: ct.VecT = node.ctype
        sym = "-" if isinstance(node.op, ast.USub) else "~" if isinstance(
            node.op, ast.Invert) else ""
        code = self.cast(self.expr(node.operand), node.operand.ctype, vec)
        if not sym:
            return code
        return self.vec_lift([code], lambda n: "(" + ", ".join(
            self.wrap(f"({sym}{n[0]}[{k}])", vec.dtype) for k in range(vec.width)) + ",)")

    def vec_compare(self, node) -> str:
        if len(node.ops) != 1:
            raise compile_error(node.loc, "chained comparisons of vectors: compare two at a "
                                          "time and combine with & or |")
        vec: ct.VecT = node.ctype
        operand = vx.operand_vector(node.left.ctype, node.comparators[0].ctype, "comparison",
                                    node.loc)
        a = self.cast(self.expr(node.left), node.left.ctype, operand)
        b = self.cast(self.expr(node.comparators[0]), node.comparators[0].ctype, operand)
        sym = _CMPS[type(node.ops[0])]
        yes, no = self.const(-1, vec.dtype), self.const(0, vec.dtype)
        return self.vec_lift([a, b], lambda n: "(" + ", ".join(
            f"({yes} if {n[0]}[{k}] {sym} {n[1]}[{k}] else {no})"
            for k in range(vec.width)) + ",)")

    def vec_components(self, code: str, vec: ct.VecT, idx: list[int]) -> str:
        def part(n, k):
            return f"{n}[{k}]" if k < vec.width else self.const(0, vec.dtype)

        if len(idx) == 1:
            return part(f"({code})", idx[0]) if not _SIMPLE.match(code) else part(code, idx[0])
        return self.vec_lift([code], lambda n: "(" + ", ".join(part(n[0], k) for k in idx)
                             + ",)")

    def vec_index(self, node) -> str:
        """``v[i]``: a constant component, or one chosen at run time (checked)."""
        vec: ct.VecT = node.value.ctype
        base = self.expr(node.value)
        ix = node.slice
        if isinstance(ix, ast.Constant):
            return self.vec_components(base, vec, [ix.value])
        return f"({base})[{self.vec_checked_index(node, vec, ix)}]"

    def vec_checked_index(self, node, vec: ct.VecT, ix) -> str:
        code = self.typed(ix, "int64")
        if not self.bounds_checks:
            return code
        site = self.module.site(node, "", "load", "private", vec.dtype)
        self.checked()
        return (f"{self.helper('_ck')}({code}, {self.const(vec.width, 'int64')}, _err, "
                f"{self.const(site, 'int64')}, {self.lid_code()})")

    def vec_set(self, call) -> str:
        """``vector_set(v, value)``: ``v`` with the components of the rewritten
        ``v.xy = value`` / ``v[i] = value`` replaced."""
        base_node, value_node = call.args[0], call.args[1]
        vec: ct.VecT = base_node.ctype
        base = self.expr(base_node)
        vt = value_node.ctype
        value = self.expr(value_node)
        index = getattr(call, "vector_index", None)
        if index is not None:
            k = self.vec_checked_index(call, vec, index)
            v = self.cast(value, vt, vec.dtype)
            return self.vec_lift([base, v, k], lambda n: "(" + ", ".join(
                f"({n[1]} if {n[2]} == {k2} else {n[0]}[{k2}])" for k2 in range(vec.width))
                + ",)")
        idx = call.vector_components
        if not isinstance(vt, ct.VecT) and len(idx) > 1:
            value = self.vec_cast(value, vt, ct.VecT(vt, len(idx)))
            vt = ct.VecT(vt, len(idx))

        def build(n):
            comps = [f"{n[0]}[{k}]" for k in range(vec.width)]
            for j, k in enumerate(idx):
                src = f"{n[1]}[{j}]" if isinstance(vt, ct.VecT) else n[1]
                comps[k] = self.cast(src, ct.elem(vt), vec.dtype)
            return "(" + ", ".join(comps) + ",)"

        return self.vec_lift([base, value], build)
