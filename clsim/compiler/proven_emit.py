"""Emitting a region whose accesses are proven in range (the plan and why it is exact:
``proven``).

A mixin of ``codegen.FunctionEmitter``. Before the region, group-level code bounds every
index from the ranges of the values in it; when all are inside their arrays, the region runs
as nested ``_ly``/``_lx`` loops without checks, else as the usual ``for _lid`` loop.
"""

from __future__ import annotations

import ast

import numpy as np

from clsim.compiler import proven
from clsim.compiler.emit_expr import constant_value
from clsim.compiler.proven import ProvenPlan, Var
from clsim.instruments import dispatch

_LIMIT = 2 ** 31  # the proof's bound on magnitudes (helpers._proof_term)

_AXES = "xy"


def terms_key(terms) -> str:
    """The same text for the same affine index: its bound is checked once."""
    return repr([(t.sign, tuple(ast.dump(f) for f in t.factors), t.var) for t in terms])


class ProvenFlow:
    """Mixin of ``codegen.FunctionEmitter``: regions run unchecked once proven."""

    def proven_plan(self, stmts) -> ProvenPlan | None:
        module = self.module
        # Only 2-D groups for now: there the decode ``_lid % _L0`` blocks LLVM, and the usual
        # form kept beside it costs compile time only in the few 2-D kernels.
        if (not self.in_group_fn or not module.jit or module.has_exit
                or self.masks or module.work_dim != 2
                or getattr(self, "analysis", None) is None):
            return None
        pp = proven.plan(stmts, self.analysis, self.storage, self.env, self.remat)
        if (pp is not None and module.instruments and self._unrecorded(pp) is None
                and not (module.lane_regions or module.lane_loops)):
            return None  # (an instrument that allows neither form: the usual one)
        return pp

    def _unrecorded(self, pp: ProvenPlan) -> str | None:
        """Under instruments, the group-level condition under which they record nothing in
        the region (``Instrument.unrecorded_when``: a group-invariant local array a group of
        this size already checked), for its copy without them; None when they always
        record."""
        buffers = {buffer for buffer, _dims in pp.accesses}
        conditions = []
        for inst in self.module.instruments:
            when = inst.unrecorded_when(buffers)
            if when is None:
                return None
            if when != "True":
                conditions.append(when)
        return " and ".join(f"({c})" for c in conditions) or "True"

    def proven_region(self, item, pp: ProvenPlan, scalar_region) -> None:
        mark, checks = len(self.lines), self.checks_emitted
        k = next(self.counter)
        ok = f"_pok{k}"
        bounds, seen = [], set()
        for buffer, dims in pp.accesses:
            key = (buffer, tuple(terms_key(terms) for terms in dims))
            if key in seen:
                continue
            seen.add(key)
            bounds += [(terms, f"v_{buffer}.shape[{d}]") for d, terms in enumerate(dims)
                       if not self._inside_at_compile_time(buffer, d, terms)]
        needed = {t.var for terms, _ in bounds for t in terms}
        # Under instruments (the checks), the region runs either in a copy without them
        # where they would record nothing (``_unrecorded``), or, where they always record,
        # with them: in the usual work-item order, so what they see is the usual form's.
        unrecorded = self._unrecorded(pp) if self.module.instruments else "True"
        if unrecorded not in ("True", None):  # the usual form records, this copy does not
            self.emit(f"{ok} = {unrecorded}")
            bounds = bounds or [None]
        elif bounds:
            self.emit(f"{ok} = True")
        if bounds:
            ranges = self._proof_ranges(pp, k, ok, needed)
            for terms, length in filter(None, bounds):
                self._bound_index(k, ok, terms, ranges, length)
            self.emit(f"if {ok}:")
            self.level += 1
        kept = self.module.instruments if unrecorded is None else []
        saved, self.module.instruments = self.module.instruments, kept
        try:
            grid = None
            if kept:
                self.start_in_order_pass()
                if self.in_order_instruments() and dispatch.handle(kept, "on_lane_grid"):
                    grid = {"forms": self._grid_forms(pp, item.stmts)}
                    dispatch.lane_grid(kept, self, start=True, **grid)
            self._unchecked_lanes_2d(item.stmts)
            if grid is not None:
                dispatch.lane_grid(kept, self, start=False, **grid)
            if kept:
                self.module.on_region_end(self)
        finally:
            self.module.instruments = saved
        if bounds:
            self.level -= 1
        if self.checks_emitted != checks:  # a check in the body: something can fail
            del self.lines[mark:]
            scalar_region(item)
        elif bounds:  # else every index is inside at compile time: no usual form needed
            self.emit("else:")
            with self.indented():
                scalar_region(item)

    def _unchecked_lanes_2d(self, stmts) -> None:
        saved = self.bounds_checks, self.proven_indices
        self.bounds_checks, self.proven_indices = False, True
        try:
            self.emit("for _ly in range(_L1):")
            with self.indented():
                self.emit("for _lx in range(_L0):")
                with self.indented():
                    self.emit("_lid = _ly * _L0 + _lx")
                    self.stmts_wi(stmts)
        finally:
            self.bounds_checks, self.proven_indices = saved

    def _grid_forms(self, pp: ProvenPlan, stmts) -> dict:
        """``LaneGridEvent.forms``: the accesses of the region's top-level statements, and
        of the top-level statements of its top-level loops, whose every index is affine in
        the local and global ids alone (and that loop's variable), each index as group-level
        codes of its value at local id (0, 0) (and the loop's first iteration) and its steps
        along ``_lx``, ``_ly`` (and the loop's iterations)."""
        simple = ast.Assign | ast.AugAssign | ast.Expr
        blocks = [(stmts, None, (None, None, None))]
        blocks += [(s.body, s, self._grid_trips(s)) for s in stmts
                   if isinstance(s, ast.For) and s in pp.loops]
        forms = {}
        for body, loop, (start, step, trips) in blocks:
            for n in (n for stmt in body if isinstance(stmt, simple) for n in ast.walk(stmt)):
                dims = pp.terms.get(id(n)) if isinstance(n, ast.Subscript) else None
                if dims is None or not all(
                        t.var is None or t.var.kind in ("lid", "gid") or t.var.key is loop
                        for terms in dims for t in terms):
                    continue
                forms[id(n)] = (tuple(self._grid_form(terms, start, step) for terms in dims),
                                None if loop is None else id(loop), trips)
        return forms

    def _grid_trips(self, loop: ast.For) -> tuple[str, str, str]:
        """Group-level codes of a uniform ``range`` loop's first value, step and trips."""
        args = [self._check_int(a) for a in loop.iter.args]
        zero, one = self.module.const(0, "int64"), self.module.const(1, "int64")
        start, stop, step = ([zero, *args, one] if len(args) == 1 else
                             [*args, one] if len(args) == 2 else args)
        return start, step, f"max(({stop} - {start} + {step} - 1) // {step}, 0)"

    def _grid_form(self, terms, start: str | None, step: str | None
                   ) -> tuple[str, str, str, str]:
        origin, steps = [], ([], [], [])
        for term in terms:
            product = " * ".join([self.module.const(term.sign, "int64")]
                                 + [self._check_int(f) for f in term.factors])
            if term.var is None:
                origin.append(product)
            elif term.var.kind == "loop":  # the loop's first value, then its step a trip
                origin.append(f"{product} * {start}")
                steps[2].append(f"{product} * {step}")
            else:
                steps[term.var.key].append(product)
                if term.var.kind == "gid":  # the group's first global id
                    axis = _AXES[term.var.key]
                    origin.append(
                        f"{product} * (_g{axis} * _E{term.var.key} + _O{term.var.key})")
        zero = self.module.const(0, "int64")
        return tuple(f"({' + '.join(parts)})" if parts else zero
                     for parts in (origin, *steps))

    def _inside_at_compile_time(self, buffer: str, dim: int, terms) -> bool:
        """Whether index ``terms`` of a local array's ``dim`` is known to be inside it
        before the module runs: constant factors, local ids (below the enqueued size) and
        loop variables of constant ranges, against the array's declared shape (a_tile[ty, kk]
        in a 16x16 tile with 16x16 groups needs no code)."""
        arrt = self.env.get(buffer)
        shape = getattr(arrt, "shape", None)
        if (self.storage.get(buffer) != "larray" or buffer in self.module.program.arg_types
                or not isinstance(shape, tuple) or not isinstance(shape[dim], int)):
            return False
        lo = hi = magnitude = 0
        for term in terms:
            coef = term.sign
            for f in term.factors:
                value = constant_value(f)
                if not isinstance(value, int | np.integer):
                    return False
                coef *= int(value)
            span = (1, 1) if term.var is None else self._constant_span(term.var)
            if span is None:
                return False
            least, most = sorted((coef * span[0], coef * span[1]))
            lo, hi = lo + least, hi + most
            magnitude += max(abs(least), abs(most))
        return lo >= 0 and hi < shape[dim] and magnitude < _LIMIT

    def _constant_span(self, var: Var) -> tuple[int, int] | None:
        if var.kind == "lid":
            return 0, self.module.program.local_size[var.key] - 1
        if var.kind != "loop":
            return None
        args = [constant_value(a) for a in var.key.iter.args]
        if not all(isinstance(a, int | np.integer) for a in args):
            return None
        start, stop, step = ([0, *args, 1] if len(args) == 1 else
                             [*args, 1] if len(args) == 2 else args)
        if step < 1:
            return None
        return start, (start + ((stop - start - 1) // step) * step if stop > start else start)

    def _proof_ranges(self, pp: ProvenPlan, k: int, ok: str, needed: set) -> dict:
        """Var -> (lowest, highest) as group-level code, for the ``needed`` ones."""
        ranges = {}
        for d, axis in enumerate(_AXES):
            ranges[Var("lid", d)] = (self.module.const(0, "int64"), f"_L{d} - 1")
            base = f"(_g{axis} * _E{d} + _O{d})"
            ranges[Var("gid", d)] = (base, f"{base} + _L{d} - 1")
        for j, loop in enumerate(pp.loops):
            if Var("loop", loop) not in needed:
                continue
            args = [self._check_int(a) for a in loop.iter.args]
            zero, one = self.module.const(0, "int64"), self.module.const(1, "int64")
            start, stop, step = ([zero, *args, one] if len(args) == 1 else
                                 [*args, one] if len(args) == 2 else args)
            s, e, t, last = (f"_pl{k}s{j}", f"_pl{k}e{j}", f"_pl{k}t{j}", f"_pl{k}h{j}")
            self.emit(f"{s} = {start}\n{e} = {stop}\n{t} = {step}")
            self.emit(f"{ok} = {ok} & ({t} >= 1)")
            # no trips: the start alone (an access never made is proven needlessly)
            self.emit(f"{last} = {s} + (({e} - {s} - 1) // {t}) * {t} "
                      f"if {e} > {s} and {t} >= 1 else {s}")
            ranges[Var("loop", loop)] = (s, last)
        for name in pp.ctx:
            if Var("ctx", name) not in needed:
                continue
            lo, hi = f"_pc{k}l_{name}", f"_pc{k}h_{name}"
            self.emit(f"{lo}, {hi} = {self.helper('_proof_span')}(v_{name}__c, _NL)")
            ranges[Var("ctx", name)] = (lo, hi)
        return ranges

    def _bound_index(self, k: int, ok: str, terms, ranges: dict, length: str) -> None:
        acc = f"_pb{k}"
        one = self.module.const(1, "int64")
        self.emit(f"{acc} = (0, 0, 0, True)")
        term_fn = self.helper("_proof_term")
        for term in terms:
            f1, f2 = ([self._check_int(f) for f in term.factors] + [one, one])[:2]
            sign = self.module.const(term.sign, "int64")
            vlo, vhi = ranges[term.var] if term.var is not None else (one, one)
            self.emit(f"{acc} = {term_fn}({acc}, {sign}, {f1}, {f2}, {vlo}, {vhi})")
        self.emit(f"{ok} = {ok} & {self.helper('_proof_in')}({acc}, {length})")
