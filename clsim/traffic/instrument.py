"""The traffic instrument: counts memory traffic and arithmetic inside simulated launches.

``clsim.run(..., traffic=True)`` compiles this instrument into the kernel and fills
``result.traffic`` with a ``TrafficReport``. What it counts (docs/traffic-model.md):

* every global/constant/local access site: lane executions, bytes, and per *step* (the lanes
  of one sub-group running their k-th execution of the site in one work-item loop pass) the
  distinct sectors and lines (global) or bank-conflict replays (local);
* distinct elements read and written per global buffer (the unique footprint);
* arithmetic operations by kind, per work-item.

How: every index of a counted access is wrapped in a helper (``clsim.traffic.helpers``) that
records the lane's byte address into the step buffers and returns the index unchanged, so
results cannot change. The work-item loop runs lanes in order, so a sub-group's steps are
complete when the loop moves to the next sub-group and at the end of the loop; they are
counted then. State is launch-level, so groups run one after another (``parallel_safe`` is
False). This module does not define the counting rules (``counting``) or the records
(``model``).
"""

from __future__ import annotations

import warnings

import numpy as np

from clsim.compiler.instrument import Instrument, LaunchInfo, register_instrument
from clsim.traffic import helpers as th
from clsim.traffic.counting import DEFAULT_BANK_WIDTH, DEFAULT_BANKS, LINE_BYTES, SECTOR_BYTES
from clsim.traffic.model import FLOP_KINDS, KINDS, TrafficReport, TrafficSite

VERSION = 1
COUNTED_SPACES = ("global", "constant", "local")
# Virtual size of the step buffer A: pages are only touched as far as steps go, so this bounds
# address space, not memory. A lane running one site more than CAP times in one work-item loop
# pass has its extra accesses counted as steps of their own (and a warning says so).
STEP_BUFFER_BYTES = 512 << 20
MIN_CAP, MAX_CAP = 256, 1 << 20

_STATE = ("_trT", "_trM")


def counted_slots(sites) -> dict[int, int]:
    """Engine site id -> dense slot for every counted access site (global, constant, local).

    A site's slot depends only on the sites registered before it, so the compile-time hooks and
    ``allocate`` (which sees the finished site table) agree.
    """
    slots: dict[int, int] = {}
    for site in sites:
        sid, space = _field(site, "id", 0), _field(site, "space", 7)
        if space in COUNTED_SPACES:
            slots[sid] = len(slots)
    return slots


def _field(site, name: str, index: int):
    return site[index] if isinstance(site, tuple) else getattr(site, name)


class TrafficInstrument(Instrument):
    """Counts traffic for one run; see the module docstring."""

    name = "traffic"
    parallel_safe = False

    def __init__(self, options: dict):
        simd = options.get("simd_width") or options.get("subgroup_size") or 32
        self.simd_width = int(simd)
        if not 1 <= self.simd_width <= 1024:
            from clsim.errors import InvalidArgumentError

            raise InvalidArgumentError(f"run(): simd_width={simd} must be 1 to 1024")
        self.sector_bytes, self.line_bytes = SECTOR_BYTES, LINE_BYTES
        self.banks, self.bank_width = DEFAULT_BANKS, DEFAULT_BANK_WIDTH
        self.profile = options.get("profile")
        if self.profile is not None:
            from clsim.traffic.profiles import DeviceProfile, load_profile

            prof = self.profile if isinstance(self.profile, DeviceProfile) else load_profile(
                str(self.profile))
            self.sector_bytes, self.line_bytes = prof.sector_bytes, prof.line_bytes
            self.banks, self.bank_width = prof.local_banks, prof.local_bank_width_bytes

    # -- compile time -----------------------------------------------------------------------
    def state_args(self) -> list[str]:
        return list(_STATE)

    def key(self) -> tuple:
        return (self.name, VERSION)

    def group_start(self, gen) -> None:
        gen.emit(f"{gen.helper('_tr_end')}(_trT)\n_trT[{th.C_SP}] = 0")

    def region_start(self, gen) -> None:
        # Inline, not a helper call: it runs for every lane of every work-item loop.
        gen.emit(f"_trT[{th.C_STAMP}] += 1\n"
                 f"if _lid >= _trT[{th.C_SG_END}] or _lid < _trT[{th.C_SG_START}]:\n"
                 f"    {gen.helper('_tr_new_sg')}(_trT, _lid)")

    def region_end(self, gen) -> None:
        gen.emit(f"{gen.helper('_tr_end')}(_trT)")

    def access(self, gen, site: int, buffer: str, arrt, codes: list[str], kind: str,
               atomic: bool = False) -> list[str]:
        info = gen.module.sites[site]
        if info.space not in COUNTED_SPACES or not codes:
            return codes
        slot = counted_slots(gen.module.sites)[site]
        isz = np.dtype(arrt.dtype).itemsize
        last = codes[-1]
        if info.space == "local":
            return self._local(gen, slot, arrt, codes, isz)
        param = self._param(gen, buffer, arrt)
        if info.width > 1:
            rw = 0 if kind == "load" else 1
            wrapped = (f"{gen.helper('_tr_gv')}(_trT, _trM, {slot}, {param}, {last}, {isz}, "
                       f"{info.width}, {rw})")
        else:
            helper = "_tr_grw" if atomic else ("_tr_gr" if kind == "load" else "_tr_gw")
            wrapped = f"{gen.helper(helper)}(_trT, _trM, {slot}, {param}, {last}, {isz})"
        return [*codes[:-1], wrapped]

    def _param(self, gen, buffer: str, arrt) -> str:
        """Which kernel argument a global access reads: known by name in the kernel body,
        looked up by data pointer inside helper functions (whose parameters are renamed)."""
        params = list(gen.module.program.arg_types)
        if gen.in_group_fn and gen.storage.get(buffer) == "param" and buffer in params:
            return str(params.index(buffer))
        base, _ = gen.array_base(buffer, arrt)
        return f"{gen.helper('_tr_param')}(_trT, {base})"

    def _local(self, gen, slot: int, arrt, codes: list[str], isz: int) -> list[str]:
        if len(codes) == 1:
            return [f"{gen.helper('_tr_l')}(_trT, {slot}, {codes[0]}, {isz})"]
        shape = arrt.shape or (0,) * len(codes)
        out = [f"{gen.helper('_tr_i0')}(_trT, {codes[0]})"]
        for dim, code in zip(shape[1:-1], codes[1:-1], strict=True):
            out.append(f"{gen.helper('_tr_i1')}(_trT, {code}, {dim})")
        out.append(f"{gen.helper('_tr_lm')}(_trT, {slot}, {codes[-1]}, {shape[-1]}, {isz})")
        return out

    def flop(self, gen, kind: str, dtype: str) -> None:
        """One operation per work-item. Group-level (hoisted, uniform) code runs once for the
        group but stands for every work-item's copy, so it adds ``_NL``."""
        if kind not in FLOP_KINDS:
            return
        per = "_NL" if (gen.in_group_fn and not gen.in_wi) else "1"
        gen.emit(f"_trT[{th.C_FLOPS + FLOP_KINDS.index(kind)}] += {per}")

    # -- run time ---------------------------------------------------------------------------
    def allocate(self, info: LaunchInfo) -> list:
        slots = counted_slots(info.sites)
        ns, simd = max(1, len(slots)), self.simd_width
        cap = int(np.clip(STEP_BUFFER_BYTES // (ns * simd * 8), MIN_CAP, MAX_CAP))
        rows = np.zeros((ns, th.S_COLS), np.int64)
        max_words = 2
        for site in info.sites:
            if site[0] in slots:
                nbytes = np.dtype(site[8]).itemsize * int(site[9])
                rows[slots[site[0]], th.S_NBYTES] = nbytes
                rows[slots[site[0]], th.S_SPACE] = (th.SPACE_LOCAL if site[7] == "local"
                                                    else th.SPACE_GLOBAL)
                max_words = max(max_words, nbytes // max(self.bank_width, 1) + 2)
        # One row per kernel argument, then a dummy row (one flag) for unknown buffers.
        args = np.zeros((len(info.values) + 1, th.B_COLS), np.int64)
        flags = 0
        for p, value in enumerate(info.values):
            if isinstance(value, np.ndarray) and value.ndim == 1:
                args[p] = (flags, value.ctypes.data, value.size)
                flags += value.size
        args[-1] = (flags, 0, 1)
        flags += 1
        b0 = th.S0 + rows.size
        x0 = b0 + args.size
        n0 = x0 + simd * max_words + 2
        a0 = n0 + (cap + 1) * ns
        # One zeroed arena; the step buffer's untouched pages are never committed.
        T = np.zeros(a0 + (cap + 1) * ns * (simd + 1), np.int64)
        config = {th.C_SIMD: simd, th.C_SECTOR: self.sector_bytes, th.C_LINE: self.line_bytes,
                  th.C_BANKS: self.banks, th.C_BANK_WIDTH: self.bank_width, th.C_CAP: cap,
                  th.C_NSLOTS: ns, th.C_SG_END: -1, th.C_M_WRITE: flags, th.C_B0: b0,
                  th.C_X0: x0, th.C_N0: n0, th.C_A0: a0}
        for index, value in config.items():
            T[index] = value
        T[th.S0:b0] = rows.reshape(-1)
        T[b0:x0] = args.reshape(-1)
        M = np.zeros(2 * flags, np.uint8)
        return [T, M]

    def finalize(self, info: LaunchInfo, state: list, result) -> None:
        T, M = state
        ns = int(T[th.C_NSLOTS])
        rows = T[th.S0:th.S0 + ns * th.S_COLS].reshape(ns, th.S_COLS)
        records, overflow = self._records(info, rows)
        reads, writes = {}, {}
        half = int(T[th.C_M_WRITE])
        b0 = int(T[th.C_B0])
        for p, (name, value) in enumerate(zip(info.params, info.values, strict=True)):
            if isinstance(value, np.ndarray) and value.ndim == 1:
                off = int(T[b0 + p * th.B_COLS])
                size = value.size
                reads[name] = int(np.count_nonzero(M[off:off + size])) * value.itemsize
                writes[name] = int(np.count_nonzero(M[half + off:half + off + size])) * (
                    value.itemsize)
        flops = {k: int(T[th.C_FLOPS + i]) for i, k in enumerate(FLOP_KINDS)}
        if overflow:
            warnings.warn(
                f"traffic of {info.kernel}: {overflow:,} accesses ran past the step buffer "
                f"({int(T[th.C_CAP]):,} executions of one site by one work-item between two "
                "barriers) and were counted as single-lane steps, so their sectors are an "
                "upper bound.", RuntimeWarning, stacklevel=3)
        result.traffic = TrafficReport(
            info.kernel, self.simd_width, records, reads, writes, flops,
            work_items=info.ndrange.work_items, sector_bytes=self.sector_bytes,
            line_bytes=self.line_bytes)

    def _records(self, info: LaunchInfo, rows) -> tuple[list[TrafficSite], int]:
        """One record per (file, line, buffer, kind, space), in site order."""
        slots = counted_slots(info.sites)
        merged: dict[tuple, list] = {}
        for site in info.sites:
            sid, file, line, func, text, buffer, kind, space, dtype, _width = site
            if sid not in slots:
                continue
            kind = kind if kind in KINDS else "store"  # atomics: read-modify-write
            row = rows[slots[sid]]
            counts = [int(row[th.S_EXECS]), int(row[th.S_EXECS] * row[th.S_NBYTES]),
                      int(row[th.S_SECTORS]), int(row[th.S_LINES]), int(row[th.S_REPLAYS]),
                      int(row[th.S_STEPS]), int(row[th.S_OVERFLOW])]
            key = (file, line, buffer, kind, space)
            if key in merged:
                merged[key][1] = [a + b for a, b in zip(merged[key][1], counts, strict=True)]
            else:
                merged[key] = [(line, text, buffer, kind, space, dtype, func), counts]
        records, overflow = [], 0
        for (line, text, buffer, kind, space, dtype, func), c in merged.values():
            overflow += c[6]
            records.append(TrafficSite(
                line, text, buffer, kind, space, dtype, executions=c[0], bytes=c[1],
                sectors=c[2], lines=c[3], bank_conflicts=c[4], steps=c[5],
                sector_bytes=self.sector_bytes, func=func))
        return records, overflow


def _factory(options: dict) -> TrafficInstrument | None:
    return TrafficInstrument(options) if options.get("traffic") else None


register_instrument("traffic", _factory)
