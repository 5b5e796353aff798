"""Emitting a region lane-major (the plan and why it is exact: ``lane_major``).

A mixin of ``codegen.FunctionEmitter``. The region's uniform range and index bounds are
computed at group level; when every index is inside its buffer, the region runs as
``for _lid: S1``, ``for k: for _lid in range(lanes): L`` with no checks, ``for _lid: S2``;
otherwise as the usual ``for _lid`` loop, which finds and reports the first failing
work-item.
"""

from __future__ import annotations

import ast
import contextlib

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.memory import emit_barrier
from clsim.compiler.diagnostics import builtin_name
from clsim.compiler.lane_major import (
    LANE_IDS,
    LanePlan,
    PrefixPlan,
    SubgroupPlan,
    plan,
    subgroup_plan,
)
from clsim.compiler.lane_proof import LoopProof, prove_loop
from clsim.compiler.proven import Var
from clsim.compiler.proven_emit import terms_key
from clsim.compiler.pure_loops import private_target, pure_call
from clsim.compiler.remat import is_id_call
from clsim.instruments import dispatch
from clsim.runtime import record as rec


class LaneMajorFlow:
    """Mixin of ``codegen.FunctionEmitter``: regions run lane-major."""

    # Every index is inside its buffer (checked before the loop): indexed as uint64, so that
    # Numba emits no wrap-around of a negative index, whose select per element made LLVM
    # gather the loads of a vectorised loop one by one (softmax 1024^2: 17 -> 6 ms).
    proven_indices = False
    # id(Subscript) -> (site, buffer, array type) of stores whose records wait until after
    # the lane loop (``_store_spans``)
    lane_spans: dict | None = None
    effects_before = False  # something before may have written outside the group

    def _unchecked_lanes(self, count: str, stmts, first: str | None = None) -> None:
        """A lane loop without checks, every index proven in bounds."""
        saved = self.bounds_checks, self.proven_indices
        self.bounds_checks, self.proven_indices = False, True
        try:
            self._lane_loop(count, stmts, first)
        finally:
            self.bounds_checks, self.proven_indices = saved

    def lane_plan(self, stmts) -> LanePlan | PrefixPlan | SubgroupPlan | None:
        module = self.module
        if (not self.in_group_fn or module.has_exit
                or module.work_dim != 1 or getattr(self, "analysis", None) is None):
            return None
        if self.masks:
            return self._subgroup_plan(stmts)
        aliases = {name for name, value in self.remat.items()
                   if is_id_call(value, "get_local_id")}

        # Under instruments (checks="all", JIT), a region runs lane-major with its recorded
        # accesses in lane order; the module then runs the launch again with the usual forms
        # whenever anything is not clean (``rec.REPLAY_LAUNCH``), so what is reported is
        # always the work-item order's, and a clean run is clean in either order.
        if module.instruments and not (module.jit and module.lane_regions):
            return self._lane_loop_plan(stmts, aliases)
        return (plan(stmts, self.analysis, self.storage, self.env, aliases, self._prove)
                or self._subgroup_plan(stmts))

    def _lane_loop_plan(self, stmts, aliases) -> LanePlan | PrefixPlan | None:
        """Under instruments that take lane-major loops only (``Instrument.lane_loops``:
        traffic), a strided loop with a straight-line body: the statements around it still
        run lane by lane in work-item order, and the instruments see the trips
        (``on_lane_loop``); or ``if lid < X``, whose lanes run in work-item order."""
        if not (self.module.jit and self.module.lane_loops):
            return None
        lp = plan(stmts, self.analysis, self.storage, self.env, aliases)
        return lp if isinstance(lp, PrefixPlan) or (
            type(lp) is LanePlan and lp.proof is None) else None

    def _subgroup_plan(self, stmts) -> SubgroupPlan | None:
        """Under instruments only where group-level plans run (``lane_plan``), and under
        masks of ifs only: a masked loop's lanes may leave it one by one."""
        module = self.module
        if module.instruments and not (module.jit and module.lane_regions):
            return None
        if any(m.loop for m in self.masks):
            return None
        aliases = {name for name, value in self.remat.items()
                   if is_id_call(value, "get_sub_group_local_id")}
        lane_ids = {name for name, value in self.remat.items()
                    if any(isinstance(n, ast.Call) and builtin_name(n) in LANE_IDS
                           for n in ast.walk(value))}
        return subgroup_plan(stmts, self.storage, self.env, aliases, lane_ids,
                             self._prove_after, self.analysis.subgroup_evaluable)

    def _prove(self, before, loop, after):
        return prove_loop(before, loop, after, self.analysis, self.storage, self.env,
                          self.remat)

    def _prove_after(self, before, loop, after):
        return prove_loop(before, loop, after, self.analysis, self.storage, self.env,
                          self.remat, ranges_after_before=True)

    def in_order_instruments(self) -> bool:
        """Whether instruments see this lane-major or proven region's code in work-item
        order around the loops (``Instrument.lane_loops``: traffic), not in lane order."""
        return bool(self.module.instruments) and not self.module.lane_regions

    def start_in_order_pass(self) -> None:
        """For such instruments, a region's pass starts before its lane-major or proven
        form, as the usual form's lane loop starts it."""
        if self.in_order_instruments():
            self.module.on_region_start(self)

    def _check_int(self, node) -> str:
        """``_group_int`` for a range check: not the kernel's arithmetic, not counted."""
        saved, self.module.uncounted = self.module.uncounted, True
        try:
            return self._group_int(node)
        finally:
            self.module.uncounted = saved

    def _group_int(self, node) -> str:
        self.in_wi = False
        try:
            return self.typed(node, "int64")
        finally:
            self.in_wi = True

    def lane_region(self, item, lp, scalar_region) -> None:
        if isinstance(lp, PrefixPlan):
            self._prefix_region(item, lp, scalar_region)
            return
        if isinstance(lp, SubgroupPlan):
            self._subgroup_region(item, lp, scalar_region)
            return
        k = next(self.counter)
        u, s, t, n = f"_lmU{k}", f"_lmS{k}", f"_lmT{k}", f"_lmN{k}"
        trips, ok, top = f"_lmK{k}", f"_lmok{k}", f"_lmhi{k}"
        args = lp.loop.iter.args
        self.emit(f"{u} = {self._group_int(lp.start) if lp.start is not None else '0'}")
        self.emit(f"{s} = {self._group_int(args[1])}\n{t} = {self._group_int(args[2])}")
        self.emit(f"{n} = {s} - {u}")
        # lanes sharing elements (step below the group size) would store in another order
        least = "_NL" if lp.stores else "1"
        self.emit(f"{ok} = {t} >= {least}")
        self.emit(f"{trips} = ({n} + {t} - 1) // {t} if {ok} and {n} > 0 else 0")
        self.emit(f"if {trips} > 0:")
        with self.indented():
            last = f"_lmL{k}"
            self.emit(f"{last} = {n} - ({trips} - 1) * {t}")
            self.emit(f"{top} = {u} + ({trips} - 1) * {t} + "
                      f"({last} if {last} < _NL else _NL) - 1")
            for buffer, offset in _distinct(lp.accesses):
                p = self._check_int(offset) if offset is not None else "0"
                length = f"v_{buffer}.shape[0]"
                self.emit(f"{ok} = {ok} and {p} + {u} >= 0 and {p} + {top} < {length}")
            if lp.proof is not None:
                self._prove_loop_body(lp.proof, k, ok, u, top)
        self.emit(f"if {ok}:")
        with self.indented():
            self._lane_body(lp, k, u, t, n, trips)
            if self.module.instruments:
                self.module.on_region_end(self)
        self.emit("else:")
        with self.indented():
            self._usual_or_rerun(item, scalar_region)

    def _usual_or_rerun(self, item, scalar_region) -> None:
        if self.module.instruments and self.module.jit:
            # their state has seen this launch: it runs again, undone, with the usual forms
            self.emit(f"_err[{rec.CODE}] = {rec.REPLAY_LAUNCH}\nreturn")
            self.module.replays_launch = True
        elif self._rerun_instead():
            self.emit(f"_err[{rec.CODE}] = {rec.RERUN_GROUP}\nreturn")
        else:
            scalar_region(item)

    def _rerun_instead(self) -> bool:
        """Whether the region's usual form is left out of a JIT module: a failed range check
        then stops the group with RERUN_GROUP and the launcher runs the group again as plain
        Python (the no-JIT module keeps the usual form). Sound when the group has written
        nothing outside itself before this point, nor can in a later part of a loop around
        it (a barrier loop's other regions): it starts again from its beginning. The
        check fails at an access that would fail, or at a step below 1 (or, in a loop that
        stores, below the group size: lanes would share elements, a race in OpenCL); in
        those the run again finds no error and the launch goes on, slowly (the result's
        ``plain_python_groups``, a ``SlowPathWarning``). Saves compiling the usual form:
        about 0.3 CPU s per region of softmax, and that twice (``_group``, ``_launch``).
        (Under instruments, whose state would see the group's accesses twice, the whole
        launch runs again instead: ``_usual_or_rerun``.)"""
        return (self.module.jit and not self.effects_before
                and all(_stays_in_group([loop.node], self.env) for loop, _ in self.cut_loops))

    def note_effects(self, stmts) -> None:
        """Record that statements about to run may write outside the group (a buffer, an
        atomic, printf, a helper): later regions cannot be run again from the start."""
        if not self.effects_before and not _stays_in_group(stmts, self.env):
            self.effects_before = True

    def _prefix_region(self, item, lp: PrefixPlan, scalar_region) -> None:
        """``if lid < X``: lanes 0 .. min(X, group size) - 1 run the body, unchecked when
        every ``lid + P`` index of the body is inside its buffer for those lanes."""
        k = next(self.counter)
        m, ok = f"_lpm{k}", f"_lpok{k}"
        self.emit(f"{m} = {self._group_int(lp.bound)}")
        self.emit(f"{m} = _NL if _NL < {m} else {m}\n{m} = 0 if {m} < 0 else {m}")
        self.emit(f"{ok} = True")
        for buffer, offset in _distinct(lp.accesses):
            p = self._check_int(offset) if offset is not None else "0"
            self.emit(f"{ok} = {ok} and ({m} == 0 or ({p} >= 0 and "
                      f"{p} + {m} - 1 < v_{buffer}.shape[0]))")
        self.emit(f"if {ok}:")
        with self.indented():
            saved = self._lane_storage(lp.lanes)
            self.start_in_order_pass()
            prefix = None
            if self.in_order_instruments():  # (they see the lanes that ran the body)
                offsets = {id(node): "0" if offset is None else self._check_int(offset)
                           for _buffer, offset, node in lp.accesses}
                prefix = {"offsets": offsets, "count": m}
                dispatch.lane_prefix(self.module.instruments, self, start=True, **prefix)
            try:
                self._unchecked_lanes(m, lp.body)
            finally:
                self.storage.update(saved)
            if prefix is not None:
                dispatch.lane_prefix(self.module.instruments, self, start=False, **prefix)
            if self.module.instruments:
                self.module.on_region_end(self)
        self.emit("else:")
        with self.indented():
            self._usual_or_rerun(item, scalar_region)

    def _lane_storage(self, names) -> dict:
        """Hold ``names`` in per-lane arrays (allocated per thread); the old storage back."""
        saved = {name: self.storage.get(name, "local") for name in names}
        for name in names:
            dtype = self.env[name]
            dtype = "bool_" if dtype == "bool" else ct.register_dtype(dtype)
            line = f"_ln_{name} = {self.module.empty(self.module.nl_max, dtype)}"
            if line not in self.allocs:
                self.alloc(line)
            self.storage[name] = "lane"
        return saved

    def _prove_loop_body(self, proof: LoopProof, k: int, ok: str, u: str, top: str,
                         spans: dict | None = None) -> None:
        """Bound every index of the strided loop's body (``lane_proof``) from the range of
        its variable (``u`` to ``top``) and of the inner loops'."""
        bounds = [(terms, f"v_{buffer}.shape[{d}]") for buffer, dims in proof.plan.accesses
                  for d, terms in enumerate(dims)]
        bounds += [(terms, f"(v_{buffer}.shape[0] // {size})")
                   for buffer, size, terms in proof.records]
        bounds += [(terms, self.module.const(length, "int64"))
                   for length, terms in proof.fields]
        bounds = list({(terms_key(terms), length): (terms, length)
                       for terms, length in bounds}.values())
        needed = {t.var for terms, _ in bounds for t in terms}
        ranges = self._proof_ranges(proof.plan, k, ok, needed - set(spans or {}))
        ranges.update(spans or {})
        ranges[Var("loop", proof.loop)] = (u, top)
        for terms, length in bounds:
            self._bound_index(k, ok, terms, ranges, length)

    def _lane_body(self, lp: LanePlan, k: int, u: str, t: str, n: str, trips: str) -> None:
        saved = self._lane_storage(lp.lanes)
        self.start_in_order_pass()
        try:
            with self._recomputed(lp):
                if lp.before:
                    self._lane_loop("_NL", lp.before)
                c = lp.loop.target.id
                loops = self.in_order_instruments()  # (they see the trips)
                if loops:
                    if lp.start is not None:  # every work-item's lid + U, done at group level
                        self.module.flops(self, "add", lp.loop.iter.args[0].ctype, "_NL")
                    offsets = {id(node): "0" if offset is None else self._check_int(offset)
                               for _buffer, offset, node in lp.accesses}
                    trips_at = {"node": lp.loop, "var_type": self.env[c], "offsets": offsets,
                                "first": u, "span": n, "stride": t}
                    dispatch.lane_loop(self.module.instruments, self, start=True, **trips_at)
                self.emit(f"for _lk{k} in range({trips}):")
                with self.indented():
                    self.emit(f"_lmc{k} = {u} + _lk{k} * {t}")
                    self.emit(f"_lmm{k} = {n} - _lk{k} * {t}")
                    self.emit(f"_lmm{k} = _NL if _NL < _lmm{k} else _lmm{k}")
                    first = f"{self.write_var(c)} = np.{self.env[c]}(_lmc{k} + _lid)"
                    self._trip_lanes(lp, f"_lmm{k}", first, f"_lmc{k}", f"_lmm{k}")
                if loops:
                    dispatch.lane_loop(self.module.instruments, self, start=False, **trips_at)
                if lp.after:
                    self._lane_loop("_NL", lp.after)
        finally:
            self.storage.update(saved)

    @contextlib.contextmanager
    def _recomputed(self, lp: LanePlan):
        """The privates a proof reads as their expression again (``lane_proof``), for the
        trips emitted inside."""
        again = lp.proof.recomputed if lp.proof is not None else ()
        saved = {name: self.storage.get(name, "local") for name, _ in again}
        for name, value in again:
            self.storage[name], self.remat[name] = "remat", value
        try:
            yield
        finally:
            self.storage.update(saved)
            for name, _ in again:
                del self.remat[name]

    def _trip_lanes(self, lp: LanePlan, lanes: str, first: str, c0: str, count: str,
                    lane0: str = "0", offset_code=None) -> None:
        """One trip of the strided loop over ``lanes`` (range() arguments), unchecked: the
        inner loops at group level when it has a proof; else its straight-line body, with
        the records of its stores after it under instruments (``_store_spans``: lane
        ``lane0 + j`` stored element ``P + c0 + j``)."""
        if lp.proof is not None:
            self._distributed_lanes(lanes, lp.loop.body, first)
            return
        spans = self._store_spans(lp)
        self.lane_spans = {id(node): None for node, _offset in spans}
        try:
            self._unchecked_lanes(lanes, lp.loop.body, first=first)
            self._record_spans(spans, c0, count, lane0, offset_code)
        finally:
            self.lane_spans = None

    def _store_spans(self, lp: LanePlan) -> list:
        """(Subscript, P) of the strided loop's stores ``buf[P + c]`` to a buffer parameter,
        under instruments: lane ``j`` of a trip stores element ``P + c0 + j``, so those
        records are made after the trip's lane loop (``_record_spans``), which is then
        free of calls and vectorises. The records are in lane order either way
        (``lane_plan``). Not for a buffer the kernel also reads: the checks keep read
        records for it, with which the span declines every trip to the full recorder
        (softmax_subgroup's ``y``, stored and read again: 6x slower under the checks), where
        the lane loop's own records take the fast path."""
        if not (self.module.instruments and self.module.lane_regions):
            return []  # (``lane_loops``: the instruments see the trips' own accesses)
        offsets = {id(node): offset for _buffer, offset, node in lp.accesses}
        return [(s.targets[0], offsets[id(s.targets[0])]) for s in lp.loop.body
                if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript)
                and self.storage.get(s.targets[0].value.id, "param") == "param"
                and not _read_anywhere(s.targets[0].value.id, self.analysis.body)]

    def _record_spans(self, spans, first: str, count: str, lane0: str = "0",
                      offset_code=None) -> None:
        """The instruments' records of the stores the trip's lane loop left out
        (``ModuleEmitter.access``): all lanes' at once (``Instrument.store_span``), or one
        lane after another. Lane ``lane0 + j`` stored element ``P + first + j``;
        ``offset_code(P)``: P's code (default: at group level)."""
        for node, offset in spans:
            site, buffer, arrt = self.lane_spans[id(node)]
            if offset is None:
                p = "0"
            else:
                p = offset_code(offset) if offset_code else self._group_int(offset)
            instruments = self.module.instruments
            span = dispatch.store_span(instruments, self, site, buffer, arrt,
                                       f"{p} + {first}", count, lane0)
            if span is not None:
                self.emit(span)
                continue
            j, lanes = ("_lid", count) if lane0 == "0" else (
                f"(_lid - {lane0})", f"{lane0}, {lane0} + {count}")
            self.emit(f"for _lid in range({lanes}):")
            with self.indented():
                saved, self.in_wi = self.in_wi, True  # each record names its lane
                try:
                    codes = dispatch.access(instruments, self, site, buffer, arrt,
                                            [f"{p} + {first} + {j}"], "store")
                finally:
                    self.in_wi = saved
                self.emit(codes[-1])

    def _distributed_lanes(self, count: str, stmts, first: str) -> None:
        """``stmts`` with each uniform inner loop run at group level and the lanes
        innermost (``lane_proof``): straight-line runs of statements become unchecked lane
        loops."""
        run: list = []
        for s in [*stmts, None]:
            if s is not None and not isinstance(s, ast.For):
                run.append(s)
                continue
            if run:
                self._unchecked_lanes(count, run, first)
                run = []
            if s is None:
                break
            var, t = f"_lj{next(self.counter)}", self.env[s.target.id]
            self.emit(f"for {var} in range("
                      f"{', '.join(self._group_int(a) for a in s.iter.args)}):")
            with self.indented():
                self.emit(f"{self.write_var(s.target.id)} = np.{t}({var})")
                self._distributed_lanes(count, s.body, first)

    def _subgroup_region(self, item, lp: SubgroupPlan, scalar_region) -> None:
        """S1 for every active lane; then, per sub-group, U, stop, step and each index
        offset P computed by every lane and checked to agree, and every index's range
        checked; when all pass, each sub-group's trips with its lanes innermost, unchecked,
        and S2 for every active lane. Otherwise the usual form (S1 gives the same privates
        again: ``subgroup_plan``)."""
        k = next(self.counter)
        size = self.module.subgroup_size
        groups = (self.module.nl_max + size - 1) // size
        offsets = _distinct(lp.accesses)
        names = ["U", "S", "T", "K"] + [f"P{i}" for i in range(len(offsets))]
        arrays = {name: f"_sg{name}{k}" for name in names}
        for array in arrays.values():
            self.alloc(f"{array} = {self.module.empty(groups, 'int64')}")
        args = lp.loop.iter.args
        values = [lp.start, args[1], args[2]] + [p for _buffer, p in offsets]
        value_names = ["U", "S", "T"] + [f"P{i}" for i in range(len(offsets))]
        ok, seen = f"_sgok{k}", f"_sga{k}"
        low, high = f"_sglo{k}", f"_sghi{k}"  # the loop variable's range over sub-groups
        saved = self._lane_storage(lp.lanes)
        try:
            if lp.before:
                self._lane_loop("_NL", lp.before, skip_inactive=True)
            self.emit(f"{ok} = True\n{low} = np.int64(0)\n{high} = np.int64(-1)")
            # the context privates the proof reads: their ranges over the active lanes only
            # (an inactive lane's row may lie past the matrix)
            spans = {Var("ctx", name): (f"_sgcl{k}_{name}", f"_sgch{k}_{name}")
                     for name in (lp.proof.plan.ctx if lp.proof is not None else ())}
            for lo, hi in spans.values():
                self.emit(f"{lo} = np.int64({2**63 - 1})\n{hi} = np.int64({-2**63})")
            self.emit(f"for _sg in range((_NL + {size - 1}) // {size}):")
            with self.indented():
                self.emit(f"_ss = _sg * {size}\n_sn = np.int64({size} if {size} < _NL - _ss "
                          f"else _NL - _ss)\n{arrays['K']}[_sg] = 0\n{seen} = 0")
                if lp.uniform:
                    self._subgroup_values_once(arrays, value_names, values, seen, spans)
                else:
                    self._subgroup_values_per_lane(arrays, value_names, values, seen, ok,
                                                   spans)
                self.emit(f"if {seen} == 0:\n    continue")
                # a sub-group partly active, lanes sharing elements, or an index outside
                least = "_sn" if lp.stores else "1"
                self.emit(f"_sgu = {arrays['U']}[_sg]\n_sgt = {arrays['T']}[_sg]\n"
                          f"_sgn = {arrays['S']}[_sg] - _sgu")
                self.emit(f"{ok} = {ok} and {seen} == _sn and _sgt >= {least}")
                self.emit(f"_sgk = (_sgn + _sgt - 1) // _sgt if {ok} and _sgn > 0 else 0")
                self.emit(f"{arrays['K']}[_sg] = _sgk")
                self.emit("if _sgk > 0:")
                with self.indented():
                    self.emit("_sgl = _sgn - (_sgk - 1) * _sgt")
                    self.emit("_sgh = _sgu + (_sgk - 1) * _sgt + (_sgl if _sgl < _sn else _sn) - 1")
                    for i, (buffer, _offset) in enumerate(offsets):
                        p = f"{arrays[f'P{i}']}[_sg]"
                        self.emit(f"{ok} = {ok} and {p} + _sgu >= 0 and "
                                  f"{p} + _sgh < v_{buffer}.shape[0]")
                    self.emit(f"if {low} > {high}:\n    {low}, {high} = _sgu, _sgh\n"
                              f"else:\n    {low} = _sgu if _sgu < {low} else {low}\n"
                              f"    {high} = _sgh if _sgh > {high} else {high}")
            if lp.proof is not None:
                self.emit(f"if {ok} and {low} <= {high}:")
                with self.indented():
                    self._prove_loop_body(lp.proof, k, ok, low, high, spans)
            self.emit(f"if {ok}:")
            with self.indented():
                self._subgroup_trips(lp, k, arrays, offsets)
                if lp.after:
                    self._lane_loop("_NL", lp.after, skip_inactive=True)
                if self.module.instruments:
                    # records in sub-group order: anything not clean runs the launch again
                    # with the usual forms (``lane_plan``)
                    self.module.on_region_end(self)
                    self.module.replays_launch = True
        finally:
            self.storage.update(saved)
        self.emit("else:")
        with self.indented():
            if lp.uniform:
                self._usual_or_rerun(item, scalar_region)
            else:
                # Not a run again: values that differ within a sub-group are no error, and
                # would fail every group's check. (Under instruments the usual form records
                # in work-item order and ends its region as usual.)
                scalar_region(item)

    def _subgroup_values_once(self, arrays, names, values, seen, spans) -> None:
        """Values the same in a sub-group's lanes: its first lane's (a masked if is taken
        by whole sub-groups, ``_cg_mask_check``), and the context privates' ranges over
        its lanes."""
        active = self.active_expr("_ss")
        if active is not None:
            self.emit(f"if not ({active}):\n    continue")
        self.emit(f"_lid = _ss\n{self.module.id_decode}\n{seen} = _sn")
        self._subgroup_values(arrays, names, values)
        for var, (lo, hi) in spans.items():
            self.emit(f"_sgsl, _sgsh = {self.helper('_proof_span')}(v_{var.key}__c[_ss:], _sn)")
            self.emit(f"{lo} = _sgsl if _sgsl < {lo} else {lo}\n"
                      f"{hi} = _sgsh if _sgsh > {hi} else {hi}")

    def _subgroup_values_per_lane(self, arrays, names, values, seen, ok, spans) -> None:
        """Values every active lane computes, checked to agree with the first's; the
        context privates' ranges over the active lanes (an inactive lane's row may lie
        past the matrix)."""
        self.emit("for _lid in range(_ss, _ss + _sn):")
        with self.indented():
            self._skip_inactive()
            self.emit(self.module.id_decode)
            self._subgroup_values(arrays, names, values, f"{seen} == 0")
            differs = " or ".join(f"_sgv{name} != {arrays[name]}[_sg]" for name in names)
            self.emit(f"if {seen} != 0 and ({differs}):\n    {ok} = False")
            self.emit(f"{seen} += 1")
            for var, (lo, hi) in spans.items():
                value = f"np.int64(v_{var.key}__c[_lid])"
                self.emit(f"{lo} = {value} if {value} < {lo} else {lo}\n"
                          f"{hi} = {value} if {value} > {hi} else {hi}")

    def _subgroup_values(self, arrays, names, values, first: str | None = None) -> None:
        """``_sgv<name>`` of this lane, kept in the sub-group's row (when ``first``)."""
        for name, node in zip(names, values, strict=True):
            self.statement(lambda name=name, node=node: f"_sgv{name} = np.int64("
                           f"{self.typed(node, 'int64') if node else '0'})")
        if first is not None:
            self.emit(f"if {first}:")
            self.level += 1
        for name in names:
            self.emit(f"{arrays[name]}[_sg] = _sgv{name}")
        if first is not None:
            self.level -= 1

    def _subgroup_trips(self, lp: SubgroupPlan, k: int, arrays: dict, offsets) -> None:
        """Each sub-group's trips of the strided loop, its lanes innermost; every offset P
        read once per sub-group into a register (so the lanes' indices are contiguous)."""
        size = self.module.subgroup_size
        self.emit(f"for _sg in range((_NL + {size - 1}) // {size}):")
        with self.indented():
            self.emit(f"_sgk = {arrays['K']}[_sg]\nif _sgk == 0:\n    continue")
            self.emit(f"_ss = _sg * {size}\n_sn = np.int64({size} if {size} < _NL - _ss "
                      f"else _NL - _ss)")
            self.emit(f"_sgu = {arrays['U']}[_sg]\n_sgt = {arrays['T']}[_sg]\n"
                      f"_sgn = {arrays['S']}[_sg] - _sgu")
            registers = {}
            for i, (_buffer, offset) in enumerate(offsets):
                if offset is None:
                    continue
                name = f"_sgp{k}_{i}"
                self.emit(f"{name} = np.{offset.ctype}({arrays[f'P{i}']}[_sg])")
                registers[ast.dump(offset)] = name
            swaps = []
            for _buffer, offset, node in lp.accesses:
                if offset is None:
                    continue
                name = registers[ast.dump(offset)]
                self.storage[name], self.env[name] = "raw", offset.ctype
                register = ast.Name(id=name, ctx=ast.Load())
                register.ctype = offset.ctype
                register.loc = getattr(offset, "loc", None)
                ix = node.slice
                side = "left" if ix.left is offset else "right"
                swaps.append((ix, side, offset))
                setattr(ix, side, register)
            c = lp.loop.target.id
            try:
                with self._recomputed(lp):
                    self.emit("for _lk in range(_sgk):")
                    with self.indented():
                        self.emit("_sgc = _sgu + _lk * _sgt\n_sgm = _sgn - _lk * _sgt\n"
                                  "_sgm = _sn if _sn < _sgm else _sgm")
                        first = f"{self.write_var(c)} = np.{self.env[c]}(_sgc + (_lid - _ss))"
                        self._trip_lanes(lp, "_ss, _ss + _sgm", first, "_sgc", "_sgm", "_ss",
                                         lambda p: registers[ast.dump(p)])
            finally:
                for ix, side, offset in swaps:
                    setattr(ix, side, offset)
                for name in registers.values():
                    self.storage.pop(name, None)
                    self.env.pop(name, None)

    def _lane_loop(self, count: str, stmts, first: str | None = None,
                   skip_inactive: bool = False) -> None:
        self.emit(f"for _lid in range({count}):")
        with self.indented():
            if skip_inactive:
                self._skip_inactive()
            self.emit(self.module.id_decode)
            if first is not None:
                self.emit(first)
            self.stmts_wi(stmts)


def _read_anywhere(buffer: str, body) -> bool:
    """Whether the kernel may read ``buffer``: an element loaded or updated (``+=``), or the
    buffer passed to a call (a helper, ``vload``)."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id == buffer and not isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                and isinstance(node.target.value, ast.Name) and node.target.value.id == buffer:
            return True
        if isinstance(node, ast.Call) and any(
                isinstance(a, ast.Name) and a.id == buffer for a in node.args):
            return True
    return False


def _distinct(accesses) -> list:
    """(buffer, offset) of each access, once: scratch[lid] loaded and stored is one check."""
    seen: dict = {}
    for buffer, offset, _node in accesses:
        seen.setdefault((buffer, ast.dump(offset) if offset is not None else None),
                        (buffer, offset))
    return list(seen.values())


def _barrier(call: ast.Call) -> bool:
    """A work-group barrier: it orders the group and writes no memory of its own."""
    entry = table.lookup(builtin_name(call) or "")
    return entry is not None and getattr(entry, "emit_cut", None) is emit_barrier


def _stays_in_group(stmts, env: dict) -> bool:
    """Statements that write only privates and the group's own arrays, and call only
    builtins without effects (pure_loops' rules for targets and calls); declaring a local or
    private array (``local_array(...)``) writes nothing."""
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and isinstance(env.get(node.targets[0].id), ct.ArrayT)):
            continue
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not all(private_target(t, env) for t in targets):
                return False
        if isinstance(node, ast.For):  # range() only reads
            todo.extend([*node.body, *node.orelse])
            continue
        if isinstance(node, ast.Call) and not pure_call(node) and not _barrier(node):
            return False
        todo.extend(ast.iter_child_nodes(node))
    return True
