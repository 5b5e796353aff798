"""The traffic instrument: counts memory traffic and arithmetic inside simulated launches.

``clsim.run(..., traffic=True)`` compiles this instrument into the kernel and fills
``result.traffic`` with a ``TrafficReport`` (docs/traffic-model.md states the rules):

* per global/constant/local access site: lane executions, bytes, and per *step* (the lanes of
  one sub-group running their k-th execution of the site in one pass of a work-item loop) the
  distinct sectors and lines (global) or the bank-conflict replays (local);
* distinct elements read and written per global buffer (the unique footprint);
* arithmetic operations by kind, per work-item.

How: the index of every counted access is wrapped in a helper (``clsim.traffic.helpers``)
that records the lane's byte address and returns the index unchanged, so results cannot
change. The work-item loop runs a group's lanes in order, so after each loop every step is
complete; ``clsim.traffic.steps.end`` counts them then. Each thread running groups counts in
its own arena row (``clsim.traffic.layout``; ``thread_state``), so groups still run in
parallel. This module holds the compile-time hooks; ``arena`` builds and reads the state,
``counting`` and ``model`` hold the rules and records.

Options of ``run()``: ``simd_width`` (steps of that many lanes instead of the sub-group size)
and ``profile`` (a name or ``DeviceProfile``: its sector, line and bank figures).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
from pathlib import Path
from typing import ClassVar

import numpy as np

from clsim.errors import InvalidArgumentError
from clsim.instruments.base import Instrument, LaunchInfo
from clsim.instruments.events import (
    ONE_ITEM,
    AccessEvent,
    Emit,
    LaneGridEvent,
    LaneLoopEvent,
    LanePrefixEvent,
    LoopEvent,
)
from clsim.profiles import DeviceProfile, load_profile
from clsim.traffic import (
    arena,
    helpers,  # noqa: F401  (registers the helper sources)
    loops,
)
from clsim.traffic import layout as lay
from clsim.traffic.model import FLOP_KINDS

VERSION = 26  # of the generated code; part of the compile cache key

# Names the generated module imports (see ``imports``): the thread id, the step counter and
# the shared recorders (``clsim.traffic.recorders``).
_THREAD, _STEPS = "_tr_thread", "_tr_steps"
_RECORD, _STAGE, _STAGE_RANGE = "_tr_rec", "_tr_stage", "_tr_stage_r"
_LANE, _LANES, _STAGE_LANES, _BLOCK = "_tr_lane", "_tr_lanes", "_tr_stage_l", "_tr_block"
# ``LoopEvent.count`` of a three-argument range (clsim.instruments.dispatch): its tuple.
_RANGE_COUNT = re.compile(r"^\(max\(\((\w+)\[1\] - \1\[0\] \+ \1\[2\] - 1\) // \1\[2\], 0\) "
                          r"if \1\[2\] > 0 else max\(\(\1\[0\] - \1\[1\] - \1\[2\] - 1\) "
                          r"// -\1\[2\], 0\)\)$")


def _int(out: Emit, value: int) -> str:
    """An int64 module constant. Literal arguments would make Numba compile a helper once per
    distinct value (per site); constants share one compilation and still fold."""
    return out.const(int(value), "int64")


# Calls an index expression may contain and still be evaluated twice: bounds checks and integer
# conversions, which have no effect on the traffic state or the flop counters.
_PURE_CALL = re.compile(r"^(_ck|_w_u?int(8|16|32|64)|np\.u?int(8|16|32|64)|min|max|abs)$")


def _repeatable(code: str) -> bool:
    """Whether an index code can run twice without counting anything twice."""
    return all(_PURE_CALL.match(name) for name in re.findall(r"([A-Za-z_][\w.]*)\(", code))


@functools.cache
def _recorders_digest() -> str:
    return hashlib.sha256(Path(__file__).with_name("recorders.py").read_bytes()).hexdigest()[:16]


# ``AccessEvent.effect`` of the C11 atomics that move data one way (the rest read and write).
_ONE_WAY = {"load": lay.R_ATOMIC_LOAD, "store": lay.R_STORE}


def _overlapping(arrays: list) -> bool:
    """Whether two of the arrays may share memory (their bounds overlap: a quick test, per
    launch; an overlap without sharing only costs the copies)."""
    return any(np.may_share_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:])


def _group_stage(out: Emit, slot: int, columns: dict[int, str], flag: int) -> str:
    """The code staging a slot's loop for the group: its ``columns`` in the slot's row of
    the ``STRIDED`` area (layout.py) and its staged flag."""
    lines = [f"_trY = _trT[{lay.C_STRIDED0}] + {_int(out, lay.STRIDED_COLS * slot)}"]
    lines += [f"_trT[_trY + {column}] = {code}" for column, code in columns.items()]
    lines.append(f"_trT[_trS1 + {_int(out, slot)}] = {_int(out, flag)}")
    return "\n".join(lines)


def _emit_all(out: Emit, codes: list[str]) -> None:
    """Emit the codes gathered for after a region's lanes, and forget them."""
    for code in codes:
        out.emit(code)
    codes.clear()


def _linear(out: Emit, event: AccessEvent, codes: list[str]) -> str:
    """The linear element index of a local access from its per-dimension index codes."""
    shape = event.shape or (0,) * len(codes)
    linear = codes[0]
    for dim, code in zip(shape[1:], codes[1:], strict=True):
        linear = f"({linear} * {_int(out, dim)} + {code})"
    return linear


class TrafficInstrument(Instrument):
    """Counts traffic for one run; see the module docstring."""

    name = "traffic"
    options: ClassVar = {"traffic": False, "simd_width": None, "profile": None}
    result = "traffic"
    per_loop = True  # record affine accesses of work-item loops once per loop (``loops``)
    inline_local = True  # record eligible 1-D local accesses without a call (``_record_inline``)
    lane_runs = True  # record once-per-pass accesses as one lane run per pass (``_record_lanes``)
    # Strided loops run lane-major (``on_lane_loop``): a lane's log receives its entries in
    # the same order either way, and the loop's affine accesses are staged once for the
    # group after the trips (layout.py ``STRIDED``), counted as the descriptors each lane
    # stages after its own loop in the usual form.
    lane_loops = True
    # 1-D lane runs: each lane's index kept in a lane array, the run made after the pass
    # (``recorders.block``), not extended lane by lane
    lane_blocks = True
    # Parallel groups on Python threads (no ``prange`` to compile: ~0.5-0.9 s CPU per kernel),
    # each thread counting in its own rows of the arena, logs and stream (``thread_state``).
    python_threads = True

    @classmethod
    def create(cls, config) -> TrafficInstrument | None:
        return cls(config) if config.option("traffic") else None

    def imports(self) -> list[str]:
        # Numba's cache of a kernel does not notice a change in a function it calls: the
        # recorders' source digest in the generated source makes a new module when they change.
        return [f"# clsim.traffic.recorders {_recorders_digest()}",
                f"from numba import get_thread_id as {_THREAD}",
                f"from clsim.traffic.steps import call as {_STEPS}",
                f"from clsim.traffic.recorders import record as {_RECORD}, stage as {_STAGE}, "
                f"stage_range as {_STAGE_RANGE}, lane as {_LANE}, lanes as {_LANES}, "
                f"stage_lanes as {_STAGE_LANES}, block as {_BLOCK}"]

    def __init__(self, config):
        simd = config.option("simd_width") or config.subgroup_size
        if not 1 <= int(simd) <= 1024:
            raise InvalidArgumentError(f"run(): simd_width={simd} must be 1 to 1024")
        profile = config.option("profile") or config.device.profile
        if not isinstance(profile, DeviceProfile):
            profile = load_profile(str(profile))
        self.profile = profile
        self._dirty: set[int] = set()  # flop counters (_trF<k>) not yet added to the arena
        self._loops: list[loops.AffineLoop | None] = []  # the work-item loops being emitted
        self._loop_count = 0
        self._always: set[int] | None = None  # source nodes that run whenever their statement
        self._inline_count = 0
        # Lane runs: the (node id, kind) of the accesses that may be recorded so, and
        # those recorded in the current pass, with what staging them needs.
        self._lane_states: set[tuple[int, str]] = set()
        self._pass_runs: dict[tuple[int, str], int] = {}  # -> the access's slot
        # those of them whose lanes' indices are kept in lane arrays: -> the call of
        # ``recorders.block`` that gives them to the run after the pass
        self._pass_blocks: dict[tuple[int, str], str] = {}
        # ``if lid < X`` run lane-major (``on_lane_prefix``): its accesses' offsets and lane
        # count, and the runs its accesses' lanes make, written after the body
        self._prefix: LanePrefixEvent | None = None
        self._prefix_runs: list[str] = []
        # a proven 2-D region's lane loops (``on_lane_grid``): its accesses' affine forms in
        # the lane ids, and the lane runs they make, written after the loops
        self._grid: LaneGridEvent | None = None
        self._grid_runs: list[str] = []
        self._in_pass = False
        # the array parameters of the helper functions being emitted (innermost last), whose
        # buffer bases their prologue binds (``on_function_start``)
        self._functions: list[set[str]] = []
        from clsim.traffic.cache import CacheConfig  # imports Numba: only when counting

        self.device = arena.Device(int(simd), profile.sector_bytes, profile.line_bytes,
                                   profile.local_banks, profile.local_bank_width_bytes,
                                   CacheConfig.from_profile(profile))

    # -- compile time -----------------------------------------------------------------------
    def state_args(self) -> list[str]:
        return ["_trTT", "_trM", "_trLL", "_trRR", "_trFN"]

    def key(self) -> tuple:
        return (self.name, VERSION, self.device.simd_width, self.per_loop, self.inline_local,
                self.lane_runs, self.lane_loops, self.lane_blocks)

    def on_group_start(self, out: Emit) -> None:
        group = "_gx + _NG0 * (_gy + _NG1 * _gz)"
        out.emit(f"_trT = _trTT[{_THREAD}()]\n_trL = _trLL[{_THREAD}()]\n"
                 f"_trR = _trRR[{_THREAD}()]\n"
                 f"{_STEPS}(_trFN, _trT, _trL, _trR, _trM, {group})\n"
                 f"_trC0 = _trT[{lay.C_CNT0}]\n_trP0 = _trT[{lay.C_PEND0}]\n"
                 f"_trK = _trT[{lay.C_CAP}]\n_trS0 = _trT[{lay.C_STAGE0}]\n"
                 f"_trS1 = _trT[{lay.C_STAGED0}]")
        # Operation counters of work-item code, in registers until the end of each loop.
        out.emit("\n".join(f"_trF{k} = 0" for k in range(len(FLOP_KINDS))))
        if self.lane_runs:
            self._lane_states = {(id(node), kind) for node, kinds in
                                 loops.once_per_pass_nodes(out.body) for kind in kinds}
            if self._lane_states:
                out.emit(f"_trX0 = _trT[{lay.C_LANES0}]")

    def on_function_start(self, arrays: list[str], out: Emit) -> None:
        """A helper function binds its thread's arena row, the recorder's bases and its
        array parameters' buffer bases once, as the group function does per group: looked
        up at every access, they cost GEMV 4096^2 most of its counting time."""
        out.emit(f"_trT = _trTT[{_THREAD}()]\n_trL = _trLL[{_THREAD}()]\n"
                 f"_trC0 = _trT[{lay.C_CNT0}]\n_trP0 = _trT[{lay.C_PEND0}]\n"
                 f"_trK = _trT[{lay.C_CAP}]")
        for array in arrays:
            find = f"{out.helper('_tr_param')}(_trT, {array})"
            out.emit(f"_trA{array} = ({find} << {lay.BUFFER_SHIFT})")
        self._functions.append(set(arrays))

    def on_function_end(self, out: Emit) -> None:
        self._functions.pop()

    def on_region_start(self, out: Emit) -> None:
        self._in_pass = True

    def on_region_end(self, out: Emit) -> None:
        # The pass's lane runs, staged for the step counter, which counts them below.
        for call in self._pass_blocks.values():
            out.emit(call)
        self._pass_blocks.clear()
        for slot in self._pass_runs.values():
            out.emit(f"{_STAGE_LANES}(_trT, _trX0 + {_int(out, lay.LANE_COLS * slot)}, "
                     f"_trS1 + {_int(out, slot)})")
        self._pass_runs.clear()
        self._in_pass = False
        # Only the counters work-item code has used since the last flush (code is generated
        # in program order): flushing all seven after every loop was most of the added code.
        for k in sorted(self._dirty):
            out.emit(f"_trT[{lay.C_FLOPS + k}] += _trF{k}\n_trF{k} = 0")
        self._dirty.clear()
        out.emit(f"{_STEPS}(_trFN, _trT, _trL, _trR, _trM, -1)")

    def on_access(self, event: AccessEvent, out: Emit) -> tuple[str, ...]:
        site, codes = event.site, event.index
        if site.space not in arena.COUNTED_SPACES or not codes:
            return codes
        slot = arena.counted_slots(out.sites)[site.id]
        if event.atomic and event.effect in _ONE_WAY:  # atomic_load / atomic_store: one way
            at = _int(out, lay.S0 + slot * lay.S_COLS + lay.S_KIND)
            codes = (*codes[:-1], f"{out.helper('_tr_k')}({self._arena(event.in_kernel)}, "
                                  f"{at}, {_int(out, _ONE_WAY[event.effect])}, {codes[-1]})")
        deferred = self._defer(event, out, slot)
        if deferred is not None:
            return deferred
        lane = self._lane(out, event, slot)
        isz = _int(out, np.dtype(event.dtype).itemsize)
        run = self._record_lanes(out, event, slot, codes, isz)
        if run is not None:
            return run
        if site.space == "local":
            inline = self._record_inline(out, event, slot, codes, isz)
            return inline if inline is not None else self._local(out, event, lane, codes, isz)
        call = f"{out.helper('_tr_g')}({lane}, {self._buffer(out, event)}"
        return (*codes[:-1], f"{call}, {codes[-1]}, {isz})")

    def on_loop(self, event: LoopEvent, out: Emit) -> None:
        """Before a work-item loop: find its accesses at affine indices (``loops``) and zero
        the locals that will hold their indices; after it: record all their runs."""
        if event.start:
            self._loop_count += 1
            loop = loops.analyse(event.node, event.var_type, self._loop_count) \
                if self.per_loop else None
            self._loops.append(loop)
            if loop is not None:
                if self._grid is not None:
                    loop.grid = {node: form for node, form in self._grid.forms.items()
                                 if form[1] == id(event.node)}
                out.emit(loop.init_lines())
            return
        loop = self._loops.pop()
        for access, slot, last, prev in loop.deferred if loop is not None else ():
            if last is not None:  # (None: the group stages it, ``_grid_loop``)
                self._stage(out, access, slot, last, prev, event.count)

    def on_lane_loop(self, event: LaneLoopEvent, out: Emit) -> None:
        """Before the trips of a loop run lane-major: find its affine accesses as ``on_loop``
        does (``_defer`` records them nowhere in the trips); after them: stage each one's
        strided loop for the group (layout.py ``STRIDED``), which the step counter counts as
        the descriptors every lane would have staged after its own loop."""
        if event.start:
            self._loop_count += 1
            loop = loops.analyse(event.node, event.var_type, self._loop_count) \
                if self.per_loop else None
            if loop is not None:
                loop.lanes = event
            self._loops.append(loop)
            return
        loop = self._loops.pop()
        for access, slot in loop.deferred if loop is not None else ():
            isz = _int(out, np.dtype(access.dtype).itemsize)
            base = _int(out, 0) if access.site.space == "local" else self._buffer(out, access)
            first = f"{base} + ({event.offsets[id(access.node)]} + {event.first}) * {isz}"
            # Nothing staged the slot before in this pass: a slot is one access, taken once
            # per loop (``_defer``), and the pass ends with the region.
            columns = [first, isz, f"{event.stride} * {isz}", event.span, event.stride, "_NL"]
            out.emit(_group_stage(out, slot, dict(enumerate(columns)), lay.STAGED_STRIDED))

    def on_lane_prefix(self, event: LanePrefixEvent, out: Emit) -> None:
        """Before the body of ``if lid < X`` run lane-major: note its accesses at ``lid + P``
        (``_record_lanes`` records them nowhere per lane); after it: write each one's lane
        run for the pass at once, lanes ``0 .. count - 1`` at elements ``P + lid``, the run
        ``recorders.block`` would make of their indices."""
        self._prefix = event if event.start else None
        if not event.start:
            _emit_all(out, self._prefix_runs)

    def on_lane_grid(self, event: LaneGridEvent, out: Emit) -> None:
        """Before the lane loops of a proven 2-D region: note its accesses affine in the
        lane ids (``_record_lanes`` records them nowhere per lane); after them: write each
        one's lane run for the pass at once, the run ``recorders.lane`` and ``lanes`` make
        of lanes ``0 .. _NL - 1`` in work-item order at such elements."""
        self._grid = event if event.start else None
        if not event.start:
            _emit_all(out, self._grid_runs)

    def _grid_run(self, out: Emit, event: AccessEvent, slot: int, base: str,
                  isz: str) -> str | None:
        """The code writing the lane run of an access of a proven 2-D region's lane loops
        (see ``on_lane_grid``), or None when it is not affine in the lane ids. (Lane by
        lane, a group one lane wide or high leaves its run's stride or row stride 0: they
        multiply only zeros there, and the step counter counts the same either way.)"""
        grid = self._grid
        form = grid.forms.get(id(event.node)) if grid is not None else None
        if form is None or form[1] is not None:
            return None
        origin, along_x, along_y, _ = (_linear(out, event, list(codes))
                                       for codes in zip(*form[0], strict=True))
        x = lay.LANE_COLS * slot
        columns = {lay.L_FIRST: "0", lay.L_END: "_NL", lay.L_ORIGIN: origin,
                   lay.L_STRIDE: along_x, lay.L_ROW_STRIDE: along_y,
                   lay.L_ROW: "_L0", lay.L_BASE: base, lay.L_ISZ: isz}
        return "\n".join(f"_trT[_trX0 + {_int(out, x + column)}] = {code}"
                         for column, code in columns.items())

    def _grid_loop(self, out: Emit, event: AccessEvent, slot: int, form) -> str:
        """The code staging, for the group, an access of a loop every lane of a proven 2-D
        region runs alike (``on_lane_grid``; layout.py ``GRID``): what each lane's
        descriptor would stage after its own loop, from the access's affine form."""
        isz = _int(out, np.dtype(event.dtype).itemsize)
        base = _int(out, 0) if event.site.space == "local" else self._buffer(out, event)
        origin, along_x, along_y, trip = (_linear(out, event, list(codes))
                                          for codes in zip(*form[0], strict=True))
        columns = {lay.G_ORIGIN: f"{base} + {origin} * {isz}", lay.G_X: f"{along_x} * {isz}",
                   lay.G_Y: f"{along_y} * {isz}", lay.G_STEP: f"{trip} * {isz}",
                   lay.G_TRIPS: form[2], lay.G_ROW: "_L0"}
        return _group_stage(out, slot, columns, lay.STAGED_GRID)

    def _prefix_counted(self, out: Emit, event: AccessEvent, slot: int) -> str | None:
        """The code counting at once an access of ``if lid < X`` run lane-major (see
        ``on_lane_prefix``) into a local array whose sub-groups span fewer words than banks
        whatever ``P``: what the step counter counts of its lane run
        (``steps._local_row_run``), a step per sub-group of the lanes ``0 .. count - 1``. A
        tree reduction's passes write no run and stage nothing. None when the access is not
        one."""
        prefix = self._prefix
        if prefix is None or id(event.node) not in prefix.offsets or \
                event.site.space != "local" or len(event.index) != 1:
            return None
        isz, device = np.dtype(event.dtype).itemsize, self.device
        # ``_local_row_run``'s bound, for lanes one element apart from any offset ``P``
        width = device.bank_width
        offset = 0 if isz % width == 0 else width - 1
        if device.banks > 0 and (offset + isz * device.simd_width - 1) // width >= device.banks:
            return None
        m, row = prefix.count, lay.S0 + slot * lay.S_COLS
        return (f"if {m} > 0:\n"
                f"    _trT[{_int(out, row + lay.S_EXECS)}] += {m}\n"
                f"    _trT[{_int(out, row + lay.S_STEPS)}] += "
                f"({m} - 1) // {_int(out, device.simd_width)} + 1")

    def _prefix_run(self, out: Emit, event: AccessEvent, slot: int, base: str,
                    isz: str) -> str | None:
        """The code writing the lane run of an access of ``if lid < X`` run lane-major (see
        ``on_lane_prefix``), or None when it is not one of its ``lid + P`` accesses."""
        prefix = self._prefix
        if prefix is None or id(event.node) not in prefix.offsets:
            return None
        x, m = lay.LANE_COLS * slot, prefix.count
        nl = out.local_size[0] * out.local_size[1] * out.local_size[2]
        columns = {lay.L_FIRST: "0", lay.L_END: m, lay.L_ORIGIN: prefix.offsets[id(event.node)],
                   lay.L_STRIDE: f"1 if {m} > 1 else 0", lay.L_ROW_STRIDE: "0",
                   lay.L_ROW: _int(out, nl), lay.L_BASE: base, lay.L_ISZ: isz}
        return "\n".join([f"if {m} > 0:"] + [f"    _trT[_trX0 + {_int(out, x + column)}] = {code}"
                                              for column, code in columns.items()])

    def _stage(self, out: Emit, access: AccessEvent, slot: int, last: list[str],
               prev: list[str], count: str) -> None:
        """After an execution of a loop: stage the lane's descriptor of one deferred access
        (its last two iterations' byte addresses and the runs, layout.py ``STAGE``) by one
        call of a shared recorder (``recorders``); the step counter moves it into the lane's
        log. A lane running the loop again before the pass ends (a nested loop) first has
        the step counter move the descriptor staged before."""
        isz = _int(out, np.dtype(access.dtype).itemsize)
        if access.site.space == "local":
            base, last_i, prev_i = _int(out, 0), _linear(out, access, last), _linear(
                out, access, prev)
        else:
            base, last_i, prev_i = self._buffer(out, access), last[0], prev[0]
        nl = out.local_size[0] * out.local_size[1] * out.local_size[2]
        at = f"({_int(out, slot * nl)} + {access.lid})"
        addrs = f"{base} + {last_i} * {isz}, {base} + {prev_i} * {isz}"
        where = f"_trS0 + 3 * {at}, _trS1 + {_int(out, slot)}"
        whole = _RANGE_COUNT.match(count)
        if whole:
            t = whole[1]
            record = f"{_STAGE_RANGE}(_trT, {where}, {addrs}, {t}[0], {t}[1], {t}[2])"
        else:
            record = f"{_STAGE}(_trT, {where}, {addrs}, {count})"
        out.emit(f"if _trT[_trS0 + 3 * {at} + 2] != 0:\n"
                 f"    {_STEPS}(_trFN, _trT, _trL, _trR, _trM, -2 - {at})\n{record}")

    def _defer(self, event: AccessEvent, out: Emit, slot: int) -> tuple[str, ...] | None:
        """The index codes of an access recorded once per loop (its indices kept in locals,
        this iteration's and the previous one's), or None to record it per access."""
        loop = self._loops[-1] if self._loops else None
        node = id(event.node) if event.node is not None else None
        if loop is None or node not in loop.accesses or event.kind not in loop.accesses[node][2]:
            return None
        if not event.in_kernel or event.lanes != ONE_ITEM or event.atomic:
            return None
        if event.site.space != "local" and len(event.index) != 1:
            return None
        if any(a.node is event.node and a.kind == event.kind for a, *_ in loop.deferred):
            return None  # the same access twice in one iteration: record the second as usual
        last, prev = loop.captures(node, event.kind)
        if len(last) != len(event.index):
            return None
        if node in loop.grid:  # a proven 2-D region's loop: staged for the group after it
            self._grid_runs.append(self._grid_loop(out, event, slot, loop.grid[node]))
            loop.deferred.append((event, slot, None, None))
            return event.index
        if loop.lanes is not None:  # lane-major trips: staged after them, for the group
            if id(event.node) not in loop.lanes.offsets or len(event.index) != 1:
                return None
            loop.deferred.append((event, slot))
            return event.index
        for now, before, code in zip(last, prev, event.index, strict=True):
            out.pre(f"{before} = {now}\n{now} = np.int64({code})")
        loop.deferred.append((event, slot, last, prev))
        return tuple(last)

    def _record_inline(self, out: Emit, event: AccessEvent, slot: int,
                       codes: tuple[str, ...], isz: str) -> tuple[str, ...] | None:
        """A 1-D local access of the kernel body that always runs with its statement
        (``loops.always_run_nodes``) and whose index has no effect: its index evaluated
        once before the statement and recorded there by the shared recorder
        (``recorders.record``, inlined by LLVM, not pasted per site); else None (``_tr_l``,
        which wraps the index)."""
        if not self.inline_local or len(codes) != 1 or not event.in_kernel:
            return None
        if event.lanes != ONE_ITEM or event.atomic:
            return None
        if self._always is None:
            self._always = loops.always_run_nodes(ast.Module(body=out.body, type_ignores=[]))
        if event.node is None or id(event.node) not in self._always:
            return None
        if not _repeatable(codes[0]):
            return None
        self._inline_count += 1
        index = f"_trI{self._inline_count}"
        nl = out.local_size[0] * out.local_size[1] * out.local_size[2]
        out.pre(f"{index} = np.int64({codes[0]})\n"
                f"{_RECORD}(_trT, _trL, _trC0, _trP0, _trK, {_int(out, nl)}, "
                f"{_int(out, slot)}, {event.lid}, {index} * {isz})")
        return (index,)

    def _record_lanes(self, out: Emit, event: AccessEvent, slot: int,
                      codes: tuple[str, ...], isz: str) -> tuple[str, ...] | None:
        """An access every work-item runs at most once per pass (``loops.once_per_pass_nodes``)
        whose indices have no effect, into a local array or a kernel argument: its index
        evaluated before the statement and given to ``recorders.lane`` (then ``record`` or
        ``lanes``), which extend the pass's lane run, kept in the arena (layout.py ``LANES``:
        rows of a 2-D group's ``get_local_id(0)``, else one row of all the lanes), or give it
        up. After the pass the run is staged (``on_region_end``). The run in locals and its
        test written out per access made Numba's typing of softmax's kernel (ten runs) about
        1.5 s slower, for no faster run. None when the access does not qualify."""
        if not (self.lane_runs and self._in_pass and event.in_kernel):
            return None
        if event.lanes != ONE_ITEM or event.atomic or event.node is None:
            return None
        key = (id(event.node), event.kind)
        if key not in self._lane_states or key in self._pass_runs:
            return None
        if not all(_repeatable(c) for c in codes):
            return None
        if len(codes) > 1 and (event.site.space != "local" or not event.shape):
            return None
        linear = _linear(out, event, list(codes))
        if event.site.space == "local":
            base = _int(out, 0)
        elif event.param is not None:
            base = self._buffer(out, event)
        else:
            return None
        lid = event.lid
        nl = out.local_size[0] * out.local_size[1] * out.local_size[2]
        # Rows of get_local_id(0): a 2-D group's tile index (row * n + lx) is affine per row.
        # ``_L0``, not the compiled size: the last groups of a non-uniform range are narrower.
        two_d = lid == "_lid" and out.local_size[2] == 1 and min(out.local_size[:2]) > 1
        row = "_L0" if two_d else _int(out, nl)
        counted = self._prefix_counted(out, event, slot) if lid == "_lid" else None
        if counted is not None:
            self._prefix_runs.append(counted)
            return codes
        self._pass_runs[key] = slot
        self._inline_count += 1
        index = f"_trI{self._inline_count}"
        lx, ly = ("_lx", "_ly") if two_d else (lid, _int(out, 0))
        x = f"_trX0 + {_int(out, lay.LANE_COLS * slot)}"
        head = f"_trT, _trL, _trC0, _trP0, _trK, {_int(out, nl)}, {_int(out, slot)}"
        if two_d:
            run = self._grid_run(out, event, slot, base, isz)
            if run is not None:
                self._grid_runs.append(run)
                return codes
        if not two_d and lid == "_lid" and len(codes) == 1:
            run = self._prefix_run(out, event, slot, base, isz)
            if run is not None:
                self._prefix_runs.append(run)
                return codes
        if self.lane_blocks and not two_d and lid == "_lid":
            # 1-D: the lane's index kept in a lane array, given to the run after the pass
            # (``recorders.block``): a store per lane instead of a call
            keep = out.lane_array(f"_trB{slot}", "int64", "_unset_lanes_int64")
            out.pre(f"{index} = np.int64({linear})\n{keep}[_lid] = {index}\n"
                    f"{keep}[{_int(out, nl)}] = _lid + 1")
            self._pass_blocks[key] = (f"{_BLOCK}({head}, {x}, {keep}, _NL, {row}, {base}, "
                                      f"{isz})")
            return (index,) if len(codes) == 1 else codes
        # A run given up (0) records each lane as ``_record_inline`` does.
        out.pre(f"{index} = np.int64({linear})\n"
                f"_trE = {_LANE}(_trT, {x}, {lid}, {lx}, {ly}, {index})\n"
                f"if _trE == 0:\n"
                f"    {_RECORD}({head}, {lid}, {base} + {index} * {isz})\n"
                f"elif _trE < 0:\n"
                f"    {_LANES}({head}, {x}, {lid}, {lx}, {ly}, {row}, {index}, "
                f"{base}, {isz})")
        return (index,) if len(codes) == 1 else codes

    def on_flops(self, kind: str, dtype: str, count: str | None, out: Emit) -> None:
        """One operation per work-item (``count`` None): work-item code of the kernel body
        counts in a local (added to the arena after each work-item loop), helper functions
        in the arena. Group-level (hoisted, uniform) code runs once for the group but stands
        for every work-item's copy, so it adds ``_NL``. A collective's ``count`` operations
        are counted once for the group (group-level code)."""
        if kind not in FLOP_KINDS:
            return
        k = FLOP_KINDS.index(kind)
        if count is not None:
            out.emit(f"_trT[{lay.C_FLOPS + k}] += {count}")
        elif out.in_kernel and out.in_work_item:
            out.emit(f"_trF{k} += 1")
            self._dirty.add(k)
        elif out.in_kernel:
            out.emit(f"_trT[{lay.C_FLOPS + k}] += _NL")
        else:
            out.emit(f"_trT[{lay.C_FLOPS + k}] += 1")

    @staticmethod
    def _arena(in_kernel: bool) -> str:
        """This thread's arena row: bound once per group in the group function, once per
        call in helper functions (``on_function_start``)."""
        return "_trT"

    @staticmethod
    def _lane(out: Emit, event: AccessEvent, slot: int) -> str:
        """The recorder's lane arguments (helpers.py ``LANE``): arena, log, counter and
        pending bases, capacity, lanes per group (compiled in), slot, lane. The group function
        holds the bases in locals; helper functions read them from the arena."""
        local = out.local_size
        nl = _int(out, local[0] * local[1] * local[2])
        bases = "_trT, _trL, _trC0, _trP0, _trK"  # (a helper function's prologue binds them)
        return f"{bases}, {nl}, {_int(out, slot)}, {event.lid}"

    def _buffer(self, out: Emit, event: AccessEvent) -> str:
        """The buffer's address base: its argument index above ``BUFFER_SHIFT``. In the kernel
        body a buffer parameter's index is known (``event.param``); inside helper functions,
        whose parameters are renamed, the buffer is found by data pointer."""
        if event.param is not None:
            return _int(out, event.param << lay.BUFFER_SHIFT)
        if not event.in_kernel and self._functions and event.array in self._functions[-1]:
            return f"_trA{event.array}"
        find = f"{out.helper('_tr_param')}({self._arena(event.in_kernel)}, {event.array})"
        return f"({find} << {lay.BUFFER_SHIFT})"

    def _local(self, out: Emit, event: AccessEvent, lane: str, codes: tuple[str, ...],
               isz: str) -> tuple[str, ...]:
        if len(codes) == 1:
            return (f"{out.helper('_tr_l')}({lane}, {codes[0]}, {isz})",)
        shape = event.shape or (0,) * len(codes)
        if all(_repeatable(c) for c in codes[:-1]):
            # Plain index arithmetic: evaluate the leading indices again for the address.
            lead = f"({codes[0]})"
            for dim, code in zip(shape[1:-1], codes[1:-1], strict=True):
                lead = f"({lead} * {_int(out, dim)} + ({code}))"
            return (*codes[:-1], f"{out.helper('_tr_l2')}({lane}, {lead}, {codes[-1]}, "
                                 f"{_int(out, shape[-1])}, {isz})")
        # Leading indices with accesses or calls inside: fold them on a stack (helpers.py).
        row = self._arena(event.in_kernel)
        out_codes = [f"{out.helper('_tr_i0')}({row}, {codes[0]})"]
        for dim, code in zip(shape[1:-1], codes[1:-1], strict=True):
            out_codes.append(f"{out.helper('_tr_i1')}({row}, {code}, {_int(out, dim)})")
        out_codes.append(f"{out.helper('_tr_lm')}({lane}, {codes[-1]}, "
                         f"{_int(out, shape[-1])}, {isz})")
        return tuple(out_codes)

    # -- run time ---------------------------------------------------------------------------
    def allocate(self, info: LaunchInfo) -> list:
        from clsim.traffic import steps  # imports Numba: only launches that count need it

        self._info = info
        return [*arena.build(info, self.device), steps.address()]

    def undo_copies(self) -> list:
        """The buffers a launch whose lane-major region fails its range check has written
        before it runs again with the usual forms (``lane_loops``): none when the kernel
        loads none of the buffers it stores to and they share no memory, as then the run
        again stores every element the first one did (softmax's ``y``)."""
        info = self._info
        arrays = {name: value for name, value in zip(info.params, info.values, strict=True)
                  if isinstance(value, np.ndarray)}
        kinds: dict[str, set[str]] = {}
        for site in info.sites:
            if site.space in ("global", "constant", "image"):
                kinds.setdefault(site.buffer, set()).add(site.kind)
        written = [name for name, k in kinds.items() if k & {"store", "atomic"}]
        if (all(name in arrays and kinds[name] == {"store"} for name in written)
                and not _overlapping(list(arrays.values()))):
            return []
        return [(value, value.copy()) for value in arrays.values()]

    def thread_state(self, state: list, worker: int) -> list:
        """Row ``worker`` of the per-thread arrays (as one-row arrays: the generated code's
        ``numba.get_thread_id()`` is 0 on a Python thread); the read flags are shared."""
        arena_rows, flags, logs, streams, counter = state
        rows = slice(worker, worker + 1)
        return [arena_rows[rows], flags, logs[rows], streams[rows], counter]

    def finalize(self, info: LaunchInfo, state: list, result):
        return arena.read(info, state, self.device)
