"""The ``checks`` instrument: compiles race and uninitialised-read tracking into kernels.

At compile time it names every memory object the kernel can touch (buffer parameters, local
arrays, private arrays) in the site table, as sites of kind "shadow:<space>" and space "none"
(so a cached module carries its own object list, and access counters skip them); it wraps the
index of every access in a recorder call from ``shadow`` and advances the epochs at barriers.
The work-group function keeps each object's mode and record bases, and the group's epochs, in
local variables (``_cs_*``) that the inlined fast paths take as arguments. Run-time state:
``state``; messages: ``findings``.
"""

from __future__ import annotations

import math
import types
from typing import ClassVar

import numpy as np

from clsim.checks import analysis, invariance, locks, native, parallel, replay, state
from clsim.checks import findings as fd
from clsim.checks import layout as ly
from clsim.checks.shadow import FAST, RECORDERS
from clsim.compiler import ctypes as ct
from clsim.compiler.frontend import Loc, parse
from clsim.errors import InvalidArgumentError, SimulationError
from clsim.instruments.base import Instrument, LaunchInfo
from clsim.instruments.events import AccessEvent, Emit, SyncEvent
from clsim.runtime import record as rec

LAYOUT_VERSION = 7
_FULL = "_cs_m, _cs_o, _cs_s, _cs_f, _err, _cs_l"
_ADDRESSES = "_cs_sa, _cs_ma, _cs_la"  # the shadow, meta and log arrays' data, per group
_NO_ARGS = ", ".join(["np.int64(0)"] * 6)  # the scalars _cs_end does not use
_BASES = (("w", ly.O_W), ("r1", ly.O_R1), ("r2", ly.O_R2), ("rx", ly.O_RX))
_SPACE = {"param": "g", "larray": "l", "parray": "p"}

replay.register()  # the per-kernel helpers (fast paths) join the compiler's helper table


def _decode_finding(row, sites, kernel, enqueued, offset, work_dim):
    return fd.from_record(row, sites, kernel, enqueued, offset, work_dim).error()


def _decode_epochs(row, sites, kernel, enqueued, offset, work_dim):
    site = sites[int(row[1])]
    return SimulationError(
        f"{site.where}: a work-group ran more barriers than the race checks can count in this "
        "launch. Launch fewer, larger work-groups or run with checks='default'",
        kernel=kernel, file=site.file, line=site.line)


class ChecksInstrument(Instrument):
    """Race and uninitialised-read detection over shadow memory (serial groups)."""

    name = "checks"
    options: ClassVar = {"report_all": False, "uninit": None}
    result = "findings"
    decoders: ClassVar = {ly.ERR_BASE + ly.CAT_RACE: _decode_finding,
                          ly.ERR_BASE + ly.CAT_UNINIT: _decode_finding,
                          ly.ERR_EPOCHS: _decode_epochs}
    serial_groups = True
    drives_groups = True  # parallel threads with their own shadow state (``parallel``)
    # regions run lane-major in JIT modules (clsim/compiler/lane_emit.py), whose launch runs
    # again with the usual forms (this off) when anything is not clean (``on_region_end``)
    lane_regions = True

    @classmethod
    def create(cls, config) -> ChecksInstrument | None:
        return _create(config)

    @staticmethod
    def result_default() -> list:
        return []

    def __init__(self, races: bool, uninit: bool, raise_race: bool, raise_uninit: bool,
                 warn_uninit: bool = False):
        self.races = races
        self.uninit = uninit
        self.raise_race = raise_race
        self.raise_uninit = raise_uninit
        self.warn_uninit = warn_uninit
        self._undo: list | None = None  # this launch's snapshot, once taken (``undo_copies``)
        self._objs: dict[str, tuple[int, ct.ArrayT, str]] = {}  # tracked: number, type, storage
        self._data: dict[str, str] = {}  # tracked local/private object -> its array's code
        self._invariant: set[str] = set()  # group-invariant local arrays (``invariance``)
        self._nodes: list = []  # keeps the declaration stand-ins alive while sites refer to them
        self._jit = True
        self._helper_params: set[tuple[str, str]] = set()  # (helper, param) reaching tracked
        self.aliased: tuple[str, ...] = ()  # read-only parameters sharing a written one's memory
        self.invariant: frozenset[str] = frozenset()  # group-invariant local arrays, by name
        self.locks = False  # lock tracking: races checked and the kernel can take a lock

    def prepare(self, kernel, params: list[str], values: list) -> None:
        """A parameter the kernel never writes is not tracked, unless its memory overlaps a
        written parameter's (the same array twice, or overlapping views of one array)."""
        self.aliased = state.aliased_read_only(params, values, _written(kernel))
        self.locks = self.races and _has_acquire(kernel)
        if self.locks:  # their accesses take the full recorders, which find as they go
            self.lane_regions = False
        # (whether a lock is taken may differ between groups: no group-invariant skipping)
        self.invariant = frozenset() if self.locks else _invariant(kernel)

    # -- compile time -----------------------------------------------------------------------
    def state_args(self) -> list[str]:
        return list(ly.STATE_ARGS)

    def key(self) -> tuple:
        return (self.name, LAYOUT_VERSION, self.aliased, tuple(sorted(self.invariant)),
                self.locks, self.lane_regions)

    def imports(self) -> list[str]:
        """The shared helpers, compiled once for all kernels (``native``)."""
        return native.imports(self._jit)

    def on_group_start(self, out: Emit) -> None:
        self._jit = out.jit
        self._register_objects(out)
        now = f"_cs_m[{ly.M_NOW}]"
        lines = [f"{now} = ((_gx + _NG0 * (_gy + _NG1 * _gz)) << _cs_m[{ly.M_EPOCH_BITS}]) + 1",
                 f"if _cs_m[{ly.M_LOST}] == 0:",
                 f"    _cs_m[{ly.M_DEFER}] = 0\n    _cs_m[{ly.M_NLOG}] = 0"]
        lines += [f"_cs_m[{slot}] = {now}" for slot in (ly.M_GSTART, ly.M_LAST_LOCAL,
                                                      ly.M_LAST_GLOBAL, ly.M_LAST_SUB)]
        for slot, code in zip((ly.M_GX, ly.M_GY, ly.M_GZ, ly.M_L0, ly.M_L1, ly.M_L2),
                              ("_gx", "_gy", "_gz", "_L0", "_L1", "_L2"), strict=True):
            lines.append(f"_cs_m[{slot}] = {code}")
        scalar = _scalar(self._jit)
        for name, (number, _t, storage) in self._objs.items():
            if storage != "param":
                lines.append(f"_cs_o[{number}, {ly.O_ADDR}] = "
                             f"np.int64({self._data[name]}.ctypes.data)")
            lines.append(f"_cs_md{number} = {scalar(f'_cs_o[{number}, {ly.O_MODE}]')}")
            lines += [f"_cs_{b}{number} = {scalar(f'_cs_o[{number}, {col}]')}"
                      for b, col in _BASES]
        lines += self._skip_invariant()
        lines.append(f"_cs_gs = {scalar(now)}")
        if self.locks:  # every work-item of the group starts holding no lock
            base = f"_cs_m[{ly.M_LOCK_BASE}]"
            lines.append(f"_cs_m[{base}:{base} + _L0 * _L1 * _L2] = 0")
        # the fast paths' state: addresses for the JIT (``pointers``), memoryviews in plain
        # Python (``native._plain``: a subscript, Python ints)
        state = "np.int64({}.ctypes.data)" if self._jit else "memoryview({})"
        lines += [f"{address} = {state.format(array)}"
                  for address, array in zip(_ADDRESSES.split(", "), ("_cs_s", "_cs_m", "_cs_l"),
                                            strict=True)]
        out.emit("\n".join(lines) + "\n" + _epoch_locals(self._jit))

    def _skip_invariant(self) -> list[str]:
        """Turn the group-invariant local arrays off (mode 0) in a group whose size already
        ran, recording them, with no finding anywhere so far: this group would record the
        same accesses with the same outcome (``invariance``)."""
        numbers = [self._objs[name][0] for name in sorted(self._invariant)]
        if not numbers:
            return []
        size = "(_L0 | (_L1 << 16) | (_L2 << 32)) + 1"
        clean = " | ".join(f"_cs_m[{slot}]" for slot in (ly.M_NFIND, ly.M_NPEND, ly.M_HELD,
                                                         ly.M_LOST, ly.M_OVERFLOW))
        off = "\n".join(f"    _cs_md{number} = 0" for number in numbers)
        return [f"if _cs_m[{ly.M_INVARIANT}] == {size} and ({clean}) == 0:", off,
                f"else:\n    _cs_m[{ly.M_INVARIANT}] = {size}"]

    def _register_objects(self, out: Emit) -> None:
        """One "shadow" site per object: name, space, dtype, element count, shape as text."""
        parsed = out.parsed
        written = analysis.written_arrays(parsed)
        decls = analysis.declarations(parsed.tree)
        for number, obj in enumerate(out.arrays()):
            name, t = obj.name, obj.type
            shape = tuple(t.shape or ())
            loc = decls.get(name, parsed.tree.loc)
            node = types.SimpleNamespace(loc=Loc(loc.file, loc.line, loc.func,
                                                 ",".join(map(str, shape))))
            self._nodes.append(node)
            read_only = obj.storage == "param" and name not in written \
                and name not in self.aliased
            out.name_object(node, name, f"{fd.SHADOW}{t.space}", t.dtype,
                            width=state.READ_ONLY if read_only else math.prod(shape))
            if not read_only:
                self._objs[name] = (number, t, obj.storage)
                self._data[name] = obj.data
        self._helper_params = analysis.tracked_helper_params(parsed, set(self._objs))
        self._invariant = {name for name, (_n, _t, storage) in self._objs.items()
                           if storage == "larray" and name in self.invariant}

    def on_sync(self, event: SyncEvent, out: Emit) -> None:
        site = event.site.id
        if event.kind == "barrier":
            flags = f"np.int64({event.flags})" if self._jit else event.flags
            code = (self._tick(site) + f"\n_cs_fl = {flags}\n"
                    f"if _cs_fl & 1:\n    _cs_m[{ly.M_LAST_LOCAL}] = _cs_m[{ly.M_NOW}]\n"
                    f"if _cs_fl & 2:\n    _cs_m[{ly.M_LAST_GLOBAL}] = _cs_m[{ly.M_NOW}]\n")
        else:
            code = self._tick(site) + f"\n_cs_m[{ly.M_LAST_SUB}] = _cs_m[{ly.M_NOW}]\n"
        out.emit(_meta_by_view(code + _epoch_locals(self._jit), self._jit))

    @staticmethod
    def _tick(site: int) -> str:
        """Advance the epoch; stop the group when its epochs would spill into the group bits."""
        now, start, bits = (f"_cs_m[{ly.M_NOW}]", f"_cs_m[{ly.M_GSTART}]",
                            f"_cs_m[{ly.M_EPOCH_BITS}]")
        return (f"{now} += 1\nif ({now} >> {bits}) != ({start} >> {bits}):\n"
                f"    _err[{rec.CODE}] = {ly.ERR_EPOCHS}\n    _err[{rec.SITE}] = {site}\n"
                "    return")

    def on_region_end(self, out: Emit) -> None:
        """Replay the accesses deferred in this work-item loop; collect noted findings. In a
        module with lane-major regions (``_REPLAYS_LAUNCH``, a constant to Numba), anything
        deferred or found instead stops the launch, which runs again with the usual forms:
        findings are made in work-item order only (``lane_regions``)."""
        found, replay = "", ""
        if self.lane_regions and self._jit:
            found = f" or (_REPLAYS_LAUNCH and _cs_m[{ly.M_NFIND}] != 0)"
            replay = (f"    if _REPLAYS_LAUNCH:\n"
                      f"        _err[{rec.CODE}] = {rec.REPLAY_LAUNCH}\n        return\n")
        out.emit(_meta_by_view(
            f"if _cs_m[{ly.M_NLOG}] != 0 or _cs_m[{ly.M_NPEND}] != 0 or "
            f"_cs_m[{ly.M_HELD}] != 0{found}:\n"
            f"{replay}"
            f"    _cs_call(_cs_fn, {_i64(native.OPS['_cs_end'])}, {_NO_ARGS}, {_FULL})\n"
            f"    if _err[{rec.CODE}] != 0:\n        return", self._jit))

    def on_access(self, event: AccessEvent, out: Emit) -> tuple[str, ...]:
        codes = self._record(event, out)
        act = locks.action(event.node, event.dtype) if self.locks and event.atomic else None
        if act is None:
            return codes
        itemsize = np.dtype(event.dtype).itemsize
        return (*codes[:-1], locks.wrap(event, codes[-1], *act, itemsize, _FULL))

    def _record(self, event: AccessEvent, out: Emit) -> tuple[str, ...]:
        """The index codes wrapped in the recorder call of this access (or as they are)."""
        if event.in_kernel and event.buffer not in self._objs:
            return event.index  # a buffer parameter the kernel never writes: nothing to check
        if not event.in_kernel and (event.site.func, event.buffer) not in self._helper_params:
            return event.index  # a helper parameter no call binds to a tracked array
        helper = RECORDERS[event.kind]
        width, lid = event.width, event.lid
        codes = list(event.index)
        prefix = _flatten(out, event, codes)
        site = event.site.id
        if not event.in_kernel:  # a helper function: find the object by address
            call = (f"_cs_call(_cs_fn, {_i64(native.OPS[helper + 'p'])}, {_i64(codes[-1])}, "
                    f"{_i64(width)}, np.int64({event.array}.ctypes.data), {_i64(prefix)}, "
                    f"{_i64(site)}, {_i64(lid)}, {_FULL})")
        else:
            number, t, storage = self._objs[event.buffer]
            if storage == "parray":
                prefix = f"{lid} * {math.prod(t.shape)} + {prefix}"
            short = helper.removeprefix("_cs_")
            if width == 1 and short in FAST and not self.locks:  # (lock kernels never defer)
                space = _SPACE[storage]
                last = "_cs_lg" if space == "g" else "_cs_ll"
                bases = ", ".join(f"_cs_{b}{number}" for b, _col in _BASES)
                # plain Python: no np.int64(...) per argument (0.5 us each, most of a checked
                # access's cost there); the index is bounds-checked already, any int type
                wrap = _i64 if self._jit else str
                scalars = ", ".join(wrap(code) for code in (codes[-1], prefix, site, lid,
                                                             number))
                call = (f"{helper}q{space}({scalars}, _cs_md{number}, {bases}, _cs_gs, "
                        f"{last}, _cs_now, {_ADDRESSES})")
                # plain Python: no call at all where the object is off (mode 0: a group-
                # invariant local array in a group size already checked); the index is
                # evaluated once either way
                codes[-1] = call if self._jit else \
                    f"({call} if _cs_md{number} != 0 else {codes[-1]})"
                return tuple(codes)  # never sets _err: what it cannot decide waits for _cs_end
            call = (f"_cs_call(_cs_fn, {_i64(native.OPS[helper])}, {_i64(codes[-1])}, "
                    f"{_i64(width)}, {_i64(number)}, {_i64(prefix)}, {_i64(site)}, {_i64(lid)}, "
                    f"{_FULL})")
            if event.buffer in self._invariant:  # the full recorder reads the table's mode
                call = f"({call} if _cs_md{number} != 0 else {codes[-1]})"
        codes[-1] = call
        out.may_fail()
        return tuple(codes)

    # -- run time ---------------------------------------------------------------------------
    def allocate(self, info: LaunchInfo) -> list:
        arrays = state.allocate(info, self.races, self.uninit, self.raise_race,
                                self.raise_uninit, self.locks)
        fn = native.entry(info.config.jit, arrays[0])  # (sets the meta's M_DEFER_FN)
        self._launch = (info, [*arrays, fn])
        self._undo = None
        return self._launch[1]

    def run_groups(self, run, threads: int) -> bool:
        info, arrays = self._launch
        return threads > 1 and parallel.run(info, arrays, run, threads, self._undo)

    def store_span(self, event: AccessEvent, first: str, count: str,
                   lane0: str = "0") -> str | None:
        """The records of a lane-major trip's stores to a buffer parameter, element
        ``first + j`` by lane ``lane0 + j``: all at once (``shadow._cs_stspan``), or, where that
        declines (something deferred already, or the buffer also has read records), one by
        one through the full recorder, a call that is not inlined: rare, so small code
        matters more than its speed. None where this does not apply."""
        if (not self._jit or self.locks or event.width != 1 or not event.in_kernel
                or event.buffer not in self._objs):
            return None
        number, _t, storage = self._objs[event.buffer]
        if storage != "param":
            return None
        scalars = ", ".join(_i64(code) for code in (first, count, 0, lane0, event.site.id,
                                                     number))
        lane = "_cs_j" if lane0 == "0" else f"{lane0} + _cs_j"
        each = ", ".join(_i64(code) for code in (
            native.OPS["_cs_st"], f"{first} + _cs_j", 1, number, 0, event.site.id, lane))
        return (f"if _cs_stspan({scalars}, _cs_md{number}, _cs_w{number}, _cs_gs, _cs_lg, "
                f"_cs_now, _cs_sa, _cs_ma) == 0:\n"
                f"    for _cs_j in range({count}):\n"
                f"        _cs_call(_cs_fn, {each}, {_FULL})\n"
                f"    if _err[{rec.CODE}] != 0:\n        return")

    def unrecorded_when(self, buffers: set[str]) -> str | None:
        """Buffers the kernel never writes are not tracked; a group-invariant local array is
        off (mode 0) in a group whose size already recorded it, with nothing found
        (``_skip_invariant``); any other tracked array is always recorded. JIT modules only
        (their copy without records is compiled beside the usual form)."""
        if not (self.lane_regions and self._jit):
            return None
        modes = []
        for name in sorted(buffers & set(self._objs)):
            if name not in self._invariant:
                return None
            modes.append(f"_cs_md{self._objs[name][0]} == 0")
        return " and ".join(modes) or "True"

    def undo_copies(self) -> list:
        """The snapshot a threaded run would take (``parallel.snapshot``), taken once: the
        threaded run undoes its own replay from it too."""
        info, arrays = self._launch
        self._undo = parallel.snapshot(info, arrays[1])
        return self._undo

    def finalize(self, info: LaunchInfo, arrays: list, result) -> list:
        return state.collect(info, arrays, self.warn_uninit)


_WRITTEN: dict[int, tuple] = {}


def _written(kernel) -> set[str]:
    """``analysis.written_arrays`` of a kernel, once per kernel version (it walks the source)."""
    parsed = parse(kernel)
    hit = _WRITTEN.get(id(kernel))
    if hit is None or hit[0] is not parsed:
        hit = _WRITTEN[id(kernel)] = (parsed, analysis.written_arrays(parsed))
    return hit[1]


_INVARIANT: dict[int, tuple] = {}
_ACQUIRE: dict[int, tuple] = {}


def _has_acquire(kernel) -> bool:
    """``locks.has_acquire`` of a kernel, once per kernel version."""
    parsed = parse(kernel)
    hit = _ACQUIRE.get(id(kernel))
    if hit is None or hit[0] is not parsed:
        hit = _ACQUIRE[id(kernel)] = (parsed, locks.has_acquire(parsed))
    return hit[1]


def _invariant(kernel) -> frozenset[str]:
    """``invariance.invariant_in`` of a kernel, once per kernel version (it walks the source,
    helpers included: milliseconds, too much for every launch)."""
    parsed = parse(kernel)
    hit = _INVARIANT.get(id(kernel))
    if hit is None or hit[0] is not parsed:
        hit = _INVARIANT[id(kernel)] = (parsed, invariance.invariant_in(parsed))
    return hit[1]


def _i64(code) -> str:
    """Non-literal int64: Numba would compile the full recorders once per literal value."""
    return f"np.int64({code})"


def _scalar(jit: bool):
    """How the work-group function copies a state element into a local the fast paths take:
    as it is for the JIT; as a Python int in plain Python, where arithmetic on NumPy scalars
    costs about twice as much."""
    return (lambda code: code) if jit else (lambda code: f"int({code})")


def _epoch_locals(jit: bool) -> str:
    """Refresh the work-group function's copies of the current epochs (at group start, in
    plain Python, the meta memoryview does not exist yet: ``int``)."""
    scalar = _scalar(jit)
    return (f"_cs_now = {scalar(f'_cs_m[{ly.M_NOW}]')}\n"
            f"_cs_ll = {scalar(f'_cs_m[{ly.M_LAST_LOCAL}]')}\n"
            f"_cs_lg = {scalar(f'_cs_m[{ly.M_LAST_GLOBAL}]')}")


def _meta_by_view(code: str, jit: bool) -> str:
    """Barrier and region-end code in plain Python: the meta array's elements through its
    memoryview (``_cs_ma``, set at group start), Python ints at half a NumPy element's cost;
    ``int(...)`` of an element is then the element itself."""
    if jit:
        return code
    return code.replace("int(_cs_m[", "(_cs_ma[").replace("_cs_m[", "_cs_ma[")


def _flatten(out: Emit, event: AccessEvent, codes: list[str]) -> str:
    """Park all but the last index in the site's slots (in place) and return the element
    offset they contribute, so the recorder sees one flat element index."""
    if len(codes) == 1:
        return "0"
    shape, lead = event.shape, len(event.lead)
    dims = [str(shape[d]) if shape else f"{event.array}.shape[{lead + d}]"
            for d in range(len(codes))]
    offset = "0"
    for d in range(len(codes) - 1):
        slot = ly.M_SLOTS + ly.SLOT_WIDTH * event.site.id + d
        codes[d] = f"{out.helper('_cs_sv')}({codes[d]}, {slot}, _cs_m)"
        offset = f"(({offset}) + _cs_m[{slot}]) * {dims[d + 1]}"
    return offset


def _create(config) -> ChecksInstrument | None:
    """The instrument for ``run(..., checks=..., uninit=..., report_all=...)``, or None."""
    mode = config.checks
    uninit_opt = config.option("uninit")
    races = mode in ("all", "races")
    uninit = mode in ("all", "uninit")
    if uninit_opt not in (None, "raise", "warn"):
        raise InvalidArgumentError(f"run(): uninit={uninit_opt!r}; use 'raise' or 'warn'")
    if uninit_opt == "warn":
        if mode in ("none", "bounds"):
            raise InvalidArgumentError(
                f"run(): uninit='warn' asks for uninitialised-read checks but checks={mode!r} "
                "turns them off; use checks='default', 'uninit' or 'all'")
        uninit = True
    if not (races or uninit):
        return None
    collect = bool(config.option("report_all"))
    return ChecksInstrument(races, uninit, raise_race=not collect,
                            raise_uninit=not collect and uninit_opt != "warn",
                            warn_uninit=uninit_opt == "warn")
