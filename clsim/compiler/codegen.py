"""Statement and region code generation: the work-group function and its work-item loops.

The kernel becomes ``_group(...)``, which runs one work-group: group-level code (hoisted uniform
statements, barrier bookkeeping, conditions of loops and ifs that contain barriers) around
``for _lid in range(_NL)`` loops, one per region. Helpers without barriers become plain
functions called per work-item. Control flow around sub-group cuts is masked (``masked``);
collectives are emitted by ``collective_emit``. Module assembly (constants, helpers, launcher) is in
``module``.
"""

from __future__ import annotations

import ast
import itertools
from contextlib import contextmanager

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.builtin_emit import BuiltinStatements
from clsim.compiler.diagnostics import builtin_name, compile_error
from clsim.compiler.emit_expr import ExprEmitter
from clsim.compiler.infer import _OPS, binop_type
from clsim.compiler.lane_emit import LaneMajorFlow
from clsim.compiler.loopvars import has_own_break
from clsim.compiler.masked import MaskedFlow
from clsim.compiler.places import is_field
from clsim.compiler.proven_emit import ProvenFlow
from clsim.compiler.pure_loops import pure_loop
from clsim.compiler.regions import Cut, CutIf, CutLoop, GroupJump, Hoisted, Region
from clsim.compiler.structs import StructT
from clsim.runtime import record as rec


class FunctionEmitter(MaskedFlow, LaneMajorFlow, ProvenFlow, ExprEmitter, BuiltinStatements):
    """Emits one function body (the work-group function or a helper)."""

    def __init__(self, module, storage: dict[str, str], env: dict, *, in_group_fn: bool,
                 ret_type=None):
        self.module = module
        self.storage = storage
        self.env = env
        self.lines: list[str] = []
        self.level = 1
        self.in_wi = not in_group_fn
        self.in_group_fn = in_group_fn
        self.ret_type = ret_type
        self.bounds_checks = True
        self.stmt_checked = False
        self.loop_depth = 0  # loops inside the current region (for return handling)
        self.counter = itertools.count()
        self.pending: list[str] = []
        self.err_return = self._err_return()
        self.masks: list = []  # masked.Mask stack: innermost decides who runs a region
        self.cut_loops: list = []  # (CutLoop, mask depth or None) for break/continue
        self.allocs: list[str] = []  # per-group allocations made while emitting
        self.deferring = False  # inside a pure loop: error checks wait for its end
        self.deferred = False  # a check is owed after the pure loop
        self.remat: dict = {}  # work-item id aliases read as the id again (remat.py)

    def _err_return(self) -> str:
        if self.in_group_fn or self.ret_type is None:
            return "return"
        if isinstance(self.ret_type, ct.VecT):
            zero = self.module.const(0, self.ret_type.dtype)
            return "return (" + ", ".join([zero] * self.ret_type.width) + ",)"
        if isinstance(self.ret_type, StructT):  # a struct's bytes (the error is what counts)
            return f"return {self.module.empty(self.ret_type.itemsize, 'uint8')}"
        return f"return {self.module.const(0, self.ret_type)}"

    # -- output -----------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        for part in line.split("\n"):
            self.lines.append("    " * self.level + part)

    @contextmanager
    def indented(self):
        self.level += 1
        start = len(self.lines)
        yield
        if len(self.lines) == start:
            self.emit("pass")
        self.level -= 1

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def pre(self, line: str) -> None:
        """A line that must run before the statement being emitted (temporaries, checks)."""
        self.pending.append(line)

    def statement(self, build) -> None:
        """Emit one statement built by ``build()``, with its pre-lines and error check."""
        self.stmt_checked = False
        saved, self.pending = self.pending, []
        self.stmt_depth = getattr(self, "stmt_depth", 0) + 1
        try:
            code = build()
        finally:
            self.stmt_depth -= 1
        for line in self.pending:
            self.emit(line)
        self.pending = saved
        if code is not None:
            self.emit(code)
        if self.stmt_checked and self.deferring:
            self.deferred = True  # checked once after the pure loop (pure_loops)
        elif self.stmt_checked:
            self.emit(f"if _err[{rec.CODE}] != 0:\n    {self.err_return}")

    # -- variables --------------------------------------------------------------------------
    def read_var(self, name: str) -> str:
        kind = self.storage.get(name, "local")
        if kind == "remat":  # a work-item id, computed again (remat.py)
            return self.typed(self.remat[name], self.env[name])
        if kind == "lane":  # a private of a lane-major region (lane_emit.py)
            return f"_ln_{name}[_lid]"
        if kind == "raw":  # a register of a sub-group's lane-major trips (lane_emit.py)
            return name
        if kind == "ctx":
            t = self.env.get(name)
            if isinstance(t, ct.VecT):  # a vector context array is (local size, width)
                lid = self.lid_code()
                return "(" + ", ".join(f"v_{name}__c[{lid}, {k}]" for k in range(t.width)) + ",)"
            return f"v_{name}__c[{self.lid_code()}]"
        return f"v_{name}"

    def write_var(self, name: str) -> str:
        if self.storage.get(name) == "remat":
            return f"v_{name}"
        if self.storage.get(name) == "lane":
            return f"_ln_{name}[_lid]"
        t = self.env.get(name)
        if self.storage.get(name) == "ctx" and isinstance(t, ct.VecT):
            # Component by component: Numba lowers a tuple stored into an array row as a
            # sequence setslice, which costs 1.6 s of compile the first time in a process.
            lid = self.lid_code()
            return ", ".join(f"v_{name}__c[{lid}, {k}]" for k in range(t.width))
        return self.read_var(name)

    # -- per-work-item statements -----------------------------------------------------------
    def stmts_wi(self, stmts) -> None:
        for s in stmts:
            self.stmt_wi(s)

    def stmt_wi(self, s) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise compile_error(s.loc, f"'{type(s).__name__}' is not supported here")
        method(s)

    def s_Pass(self, s):
        self.emit("pass")

    def s_Break(self, s):
        self.emit("break")

    def s_Continue(self, s):
        self.emit("continue")

    def s_Expr(self, s):
        v = s.value
        if isinstance(v, ast.Constant):
            return
        if table.is_cut(builtin_name(v)):
            raise compile_error(s.loc, "internal: a cut inside a region")
        self.statement(lambda: self.expr(v))

    def s_Return(self, s):
        if not self.in_group_fn:
            if s.value is None:
                self.emit("return")
            elif isinstance(self.ret_type, StructT):
                self.statement(lambda: "return " + self.returned_struct(s.value))
            else:
                self.statement(lambda: f"return {self.typed(s.value, self.ret_type)}")
            return
        if s.value is not None:
            raise compile_error(s.loc, "kernels return nothing; write results to a buffer")
        self.emit("_exited[_lid] = True")
        self.emit("break" if self.loop_depth else "continue")

    def _after_exit_check(self, node) -> None:
        if self.in_group_fn and any(isinstance(n, ast.Return) for n in ast.walk(node)):
            self.emit("if _exited[_lid]:")
            self.emit("    " + ("break" if self.loop_depth else "continue"))

    def s_Assign(self, s):
        target = s.targets[0]
        if isinstance(target, ast.Name):
            t = self.env[target.id]
            if isinstance(t, ct.ArrayT):  # allocated per group; initialised here if asked
                self._fill(target.id, t, getattr(s.value, "fill", None), s.value)
                return
            if isinstance(t, StructT):  # a private struct: C's copy of the record's bytes
                self.struct_copy(target, s.value)
                return
            self.statement(lambda: f"{self.write_var(target.id)} = "
                           + self.check_assigned_alignment(target.id, s.value,
                                                           self.typed(s.value, t)))
        elif isinstance(getattr(target, "ctype", None), StructT):  # x[i] = b: the record's bytes
            self.struct_copy(target, s.value)
        elif is_field(target):
            self.field_store(target, s.value)
        elif isinstance(target, ast.Subscript) and getattr(target.value.ctype, "view", None):
            self.view_store(target, s.value)
        elif isinstance(target, ast.Subscript):
            self.store(target, s.value)
        elif isinstance(target, ast.Tuple):
            def build():
                temps = []
                for t_node, v_node in zip(target.elts, s.value.elts, strict=True):
                    tmp = self.fresh("_t")
                    value = self.typed(v_node, self.env[t_node.id])
                    value = self.check_assigned_alignment(t_node.id, v_node, value)
                    self.pre(f"{tmp} = {value}")
                    temps.append(tmp)
                for t_node, tmp in zip(target.elts, temps, strict=True):
                    self.pre(f"{self.write_var(t_node.id)} = {tmp}")
                return None
            self.statement(build)

    def s_AugAssign(self, s):
        op = ast.BinOp(left=s.target, op=s.op, right=s.value)
        op.loc = s.loc
        if isinstance(s.target, ast.Name):
            t = self.env[s.target.id]
            load = ast.Name(id=s.target.id, ctx=ast.Load())
            load.ctype = t
            load.loc = s.loc
            op.left = load
            op.ctype = _binop_result(s, t, s.value.ctype)
            self.statement(lambda: f"{self.write_var(s.target.id)} = {self.typed(op, t)}")
        else:
            self.aug_store(s, op)

    def s_If(self, s):
        cond = self.fresh("_b")
        self.statement(lambda: f"{cond} = {self.typed(s.test, 'bool')}")
        self.emit(f"if {cond}:")
        with self.indented():
            self.stmts_wi(s.body)
        if s.orelse:
            self.emit("else:")
            with self.indented():
                self.stmts_wi(s.orelse)
        self._after_exit_check(s)

    def s_While(self, s):
        if s.orelse:
            raise compile_error(s.loc, "while/else is not supported")
        cond = self.fresh("_b")
        self.emit("while True:")
        self.loop_depth += 1
        with self.indented():
            self.statement(lambda: f"{cond} = {self.typed(s.test, 'bool')}")
            self.emit(f"if not {cond}:\n    break")
            self.stmts_wi(s.body)
        self.loop_depth -= 1
        self._after_exit_check(s)

    def s_For(self, s):
        t = self.env[s.target.id]
        it = s.iter
        var = self.fresh("_r")
        self.statement(lambda: f"{var}a = ({', '.join(self.typed(a, 'int64') for a in it.args)},)")
        self.module.on_loop(self, s, var, t, start=True)  # instruments: before the loop
        # helpers too: their locals drop with the call as privates drop with the group
        outermost = (not self.deferring and not self.module.instruments
                     and pure_loop(s, self.env))
        cached = self._cache_context(s) if outermost else []
        self.deferring = self.deferring or outermost
        self.emit(f"for {var} in range(*{var}a):")
        self.loop_depth += 1
        with self.indented():
            self.emit(f"{self.write_var(s.target.id)} = np.{t}({var})")
            self.stmts_wi(s.body)
        self.loop_depth -= 1
        if has_own_break(s):  # run to its end, C leaves the first value that failed the test
            self.emit(f"else:\n    {self.write_var(s.target.id)} = {self.loop_end(var, s, t)}")
        if outermost:
            self.deferring = False
            self._uncache_context(cached)
            if self.deferred:
                self.deferred = False
                self.emit(f"if _err[{rec.CODE}] != 0:\n    {self.err_return}")
        self.module.on_loop(self, s, var, t, start=False)  # instruments: after the loop
        self._after_exit_check(s)

    def _cache_context(self, loop: ast.For) -> list[str]:
        """Scalar context variables the pure ``loop`` assigns, held in a local across it:
        LLVM cannot keep an array element in a register while the loop also loads from a
        buffer that might alias it."""
        names = sorted({n.id for n in ast.walk(loop) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Store) and self.storage.get(n.id) == "ctx"
                        and isinstance(self.env.get(n.id), str)})
        for name in names:
            self.emit(f"v_{name} = v_{name}__c[{self.lid_code()}]")
            self.storage[name] = "local"
        return names

    def _uncache_context(self, names: list[str]) -> None:
        for name in names:
            self.storage[name] = "ctx"
            self.emit(f"v_{name}__c[{self.lid_code()}] = v_{name}")

    def loop_end(self, var: str, loop: ast.For, t: str) -> str:
        """C's value of the variable of ``for`` loop ``loop`` after it ran to its end (the
        range's arguments are the tuple ``{var}a``)."""
        n = len(loop.iter.args)
        end = (f"({var}a[0] + len(range(*{var}a)) * {var}a[2])" if n == 3 else
               f"max({var}a[0], {var}a[1])" if n == 2 else f"max({var}a[0], 0)")
        return self.cast(end, "int64", t)

    # -- stores -----------------------------------------------------------------------------
    def store(self, target: ast.Subscript, value) -> None:
        arrt = self.resolve_access(target)[1]

        def build():
            v = self.fresh("_v")
            if arrt.pointee is not None:  # ax[k] = p: the pointer's offset, as ax holds them
                self.pre(f"{v} = {self.typed(value, arrt.pointee)}")
            else:
                self.pre(f"{v} = {self.typed(value, arrt.dtype)}")
            idx = self.store_index(target)
            return f"{self.array_access(target, 'store', idx)} = {self.encode(v, arrt.dtype)}"

        self.statement(build)

    def store_index(self, target: ast.Subscript, kind: str = "store",
                    instrument: bool = True) -> list[str]:
        """Index temporaries of a store, checked before the store happens."""
        name, arrt, idx_nodes = self.resolve_access(target)
        base, lead = self.array_base(name, arrt)
        site = self.module.site(target, name, kind, arrt.space, arrt.dtype)
        temps = self.checked_indices(idx_nodes, base, lead, site, hp.ERR_OOB_STORE)
        if not instrument:
            return temps
        return self.module.access(self, site, name, arrt, temps, kind)

    def checked_indices(self, idx_nodes, base: str, lead: list[str], site: int,
                        code: int) -> list[str]:
        """Index temporaries, each checked against its dimension before the access happens;
        an out-of-range index records error ``code`` and leaves the group."""
        temps = []
        for dim, ix in enumerate(idx_nodes):
            tmp = self.fresh("_i")
            self.pre(f"{tmp} = {self.typed(ix, 'int64')}")
            if self.bounds_checks:
                length = f"{base}.shape[{dim + len(lead)}]"
                self.pre(f"if {tmp} < 0 or {tmp} >= {length}:\n"
                         f"    {self.helper('_oob')}(_err, {self.const(code, 'int64')}, "
                         f"{self.const(site, 'int64')}, {tmp}, {length}, "
                         f"{self.lid_code()})\n    {self.err_return}")
            temps.append(tmp)
        return temps

    def aug_store(self, s: ast.AugAssign, op: ast.BinOp) -> None:
        target = s.target
        if getattr(target.value.ctype, "view", None) is not None:
            raise compile_error(s.loc, "'op=' through a view: write p[i] = p[i] + v")
        name, arrt, _ = self.resolve_access(target)

        def build():
            v = self.fresh("_v")
            self.pre(f"{v} = {self.typed(s.value, s.value.ctype)}")
            idx = self.store_index(target, "load", instrument=False)
            load_site = self.module.site(target, name, "load", arrt.space, arrt.dtype)
            store_site = self.module.site(target, name, "store", arrt.space, arrt.dtype)
            load_idx = self.module.access(self, load_site, name, arrt, idx, "load")
            store_idx = self.module.access(self, store_site, name, arrt, idx, "store")
            access = self.array_access(target, "store", store_idx)
            res = _binop_result(s, arrt.dtype, s.value.ctype)
            holder = ast.Name(id=v, ctx=ast.Load())
            holder.ctype = s.value.ctype
            cur = self.fresh("_c")
            self.pre(f"{cur} = "
                     f"{self.decode(self.array_access(target, 'load', load_idx), arrt.dtype)}")
            left = ast.Name(id=cur, ctx=ast.Load())
            left.ctype = arrt.dtype
            expr = ast.BinOp(left=left, op=s.op, right=holder)
            expr.ctype, expr.loc = res, s.loc
            value = self.cast(self._raw_binop(expr), res, arrt.dtype)
            return f"{access} = {self.encode(value, arrt.dtype)}"

        self.statement(build)

    def _raw_binop(self, expr: ast.BinOp) -> str:
        saved = self.read_var
        self.read_var = lambda name: name if name.startswith("_") else saved(name)
        try:
            return self.e_BinOp(expr)
        finally:
            self.read_var = saved

    def vstore(self, call: ast.Call, width: int) -> str:
        vec, offset_node, buf = call.args
        if isinstance(buf.ctype, ct.PtrT) and buf.ctype.view is not None:
            return self.view_vstore(call, width)
        v, o, base, lead_code, arrt = self.vector_store_target(call, vec, offset_node, buf,
                                                               width, width)
        for k in range(width):
            value = self.cast(f"{v}[{k}]", vec.ctype.dtype, arrt.dtype)
            self.pre(f"{base}[{lead_code}{o} + {k}] = {self.encode(value, arrt.dtype)}")
        return None

    # -- group level ------------------------------------------------------------------------
    def items(self, items) -> None:
        for item in items:
            getattr(self, "g_" + type(item).__name__)(item)

    def g_Hoisted(self, item: Hoisted):
        self.in_wi = False
        try:
            self.stmt_wi(item.stmt)
        finally:
            self.in_wi = True

    def wi_loop_header(self, ue: set[str]) -> None:
        self.emit("for _lid in range(_NL):")
        self.level += 1
        if self.masks:
            m = self.masks[-1]
            self.emit(f"if {m.array}[_lid] != {m.value}:\n    continue")
        if self.module.has_exit:
            self.emit("if _exited[_lid]:\n    continue")
        self.emit(self.module.id_decode)
        self.module.on_region_start(self)

    def g_Region(self, item: Region):
        self.in_wi = True
        lanes = self.lane_plan(item.stmts)
        proof = None if lanes is not None else self.proven_plan(item.stmts)
        if lanes is not None:
            self.lane_region(item, lanes, self._scalar_region)
        elif proof is not None:
            self.proven_region(item, proof, self._scalar_region)
        else:
            self._scalar_region(item)
        self.note_effects(item.stmts)

    def _scalar_region(self, item: Region):
        self.in_wi = True
        self.wi_loop_header(item.ue)
        self.stmts_wi(item.stmts)
        self.level -= 1
        self.module.on_region_end(self)

    def g_Cut(self, item: Cut):
        table.lookup(builtin_name(item.stmt.value)).emit_cut(self, item)

    def g_GroupJump(self, item: GroupJump):
        if self.cut_loops and self.cut_loops[-1][1] is not None:
            self.masked_jump(item.node, self.cut_loops[-1][1])
            return
        self.emit("break" if isinstance(item.node, ast.Break) else "continue")

    def uniform_test(self, test, ue: set[str], uniform: bool, what: str) -> str:
        """Code for a condition at group level; checks it agrees across work-items."""
        if uniform:
            self.in_wi = False
            saved = self.stmt_checked
            code = self.typed(test, "bool")
            self.stmt_checked = saved
            self.in_wi = True
            return code
        k = next(self.counter)
        site = self.module.site(test, "", what, "none", "none")
        self.emit(f"_nt{k} = 0\n_nf{k} = 0\n_ft{k} = -1\n_ff{k} = -1")
        self.wi_loop_header(ue)
        self.statement(lambda: f"_cv{k} = {self.typed(test, 'bool')}")
        self.emit(f"if _cv{k}:\n    _nt{k} += 1\n    if _ft{k} < 0:\n        _ft{k} = _lid")
        self.emit(f"else:\n    _nf{k} += 1\n    if _ff{k} < 0:\n        _ff{k} = _lid")
        self.level -= 1
        self.module.on_region_end(self)
        if not self.module.bounds:  # checks="none": any work-item taking it takes the group
            return f"(_nt{k} != 0)"
        self.emit(f"if _nt{k} != 0 and _nf{k} != 0:\n"
                  f"    _err[{rec.CODE}] = {rec.DIVERGENT_BRANCH}\n    _err[{rec.SITE}] = {site}\n"
                  f"    _err[{rec.COUNT_A}] = _nt{k}\n    _err[{rec.COUNT_B}] = _nf{k}\n"
                  f"    _err[{rec.LID}] = _ff{k}\n    _err[{rec.OTHER_LID}] = _ft{k}\n    return")
        return f"(_nt{k} != 0)"

    def uniform_range(self, call, ue: set[str]) -> list[str]:
        """The range() arguments of a barrier loop, evaluated per work-item and checked to agree
        (OpenCL: a barrier loop's trip count must be the same for the whole group); the group
        then runs the loop with the first work-item's values."""
        k = next(self.counter)
        names = [f"_rv{k}_{i}" for i in range(len(call.args))]
        site = self.module.site(call, "", "for", "none", "none")
        self.emit("\n".join(f"{n} = np.int64(0)" for n in names) + f"\n_rf{k} = -1")
        self.wi_loop_header(ue)
        for i, arg in enumerate(call.args):
            self.statement(
                lambda arg=arg, i=i: f"_rw{k}_{i} = np.int64({self.typed(arg, 'int64')})")
        self.emit(f"if _rf{k} < 0:\n    _rf{k} = _lid")
        with self.indented():
            self.emit("\n".join(f"{n} = _rw{k}_{i}" for i, n in enumerate(names)))
        if self.module.bounds:  # checks="none" runs the first work-item's range
            for i, n in enumerate(names):
                self.emit(f"elif _rw{k}_{i} != {n}:\n"
                          f"    _err[{rec.CODE}] = {rec.DIVERGENT_RANGE}\n"
                          f"    _err[{rec.SITE}] = {site}\n    _err[{rec.COUNT_A}] = {n}\n"
                          f"    _err[{rec.COUNT_B}] = _rw{k}_{i}\n    _err[{rec.LID}] = _lid\n"
                          f"    _err[{rec.OTHER_LID}] = _rf{k}\n    _err[{rec.INDEX}] = {i}\n"
                          f"    return")
        self.level -= 1
        self.module.on_region_end(self)
        return names

    def g_CutIf(self, item: CutIf):
        if item.masked:
            self.masked_if(item)
            return
        cond = self.uniform_test(item.node.test, item.ue, item.uniform, "if")
        self.emit(f"if {cond}:")
        with self.indented():
            self.items(item.body)
        if item.orelse:
            self.emit("else:")
            with self.indented():
                self.items(item.orelse)

    def g_CutLoop(self, item: CutLoop):
        if item.masked:
            self.masked_loop(item)
            return
        self.cut_loops.append((item, None))
        try:
            self._uniform_loop(item)
        finally:
            self.cut_loops.pop()

    def _uniform_loop(self, item: CutLoop):
        node = item.node
        if isinstance(node, ast.For):
            t = self.env[node.target.id]
            if item.uniform:
                self.in_wi = False
                args = [self.typed(a, "int64") for a in node.iter.args]
                self.in_wi = True
            else:
                args = self.uniform_range(node.iter, item.ue)
            var = f"_gr{next(self.counter)}"
            self.emit(f"{var}a = ({', '.join(args)},)")
            self.emit(f"for {var} in range(*{var}a):")
            with self.indented():
                self.emit(f"v_{node.target.id} = np.{t}({var})")
                self.items(item.body)
            if has_own_break(node):
                self.emit(f"else:\n    v_{node.target.id} = {self.loop_end(var, node, t)}")
            return
        self.emit("while True:")
        with self.indented():
            cond = self.uniform_test(node.test, item.ue, item.uniform, "while")
            self.emit(f"if not {cond}:\n    break")
            self.items(item.body)


def _binop_result(s, left_t, right_t):
    return binop_type(_OPS[type(s.op)], left_t, right_t, s.loc)
