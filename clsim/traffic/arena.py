"""The traffic instrument's state before and after a launch: building the arena, reading it.

``build`` lays out the arrays described in ``clsim.traffic.layout`` for one launch (one arena
row per Numba thread, per-buffer footprint flags); ``read`` turns them into a
``TrafficReport`` after the launch: sites merged by (file, line, buffer, kind, space), unique
bytes per buffer, operation counts. Neither runs kernel code; the generated code and
``clsim.traffic.steps`` fill the arrays in between.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from clsim.traffic import layout as lay
from clsim.traffic.model import FLOP_KINDS, KINDS, TrafficReport, TrafficSite

COUNTED_SPACES = ("global", "constant", "local")
# Virtual size of the step buffers (all threads): pages are only touched as far as steps go, so
# this bounds address space, not memory. A lane running one site more than cap times in one
# work-item loop pass has its extra runs counted as single-lane steps (a warning says so).
STEP_BUFFER_BYTES = 1 << 30
MIN_CAP, MAX_CAP = 256, (1 << lay.RUN_BITS) - 2


@dataclass(frozen=True)
class Device:
    """What the counts depend on besides the kernel: SIMD width, sector/line size, banks."""

    simd_width: int
    sector_bytes: int
    line_bytes: int
    banks: int
    bank_width: int


def counted_slots(sites) -> dict[int, int]:
    """Engine site id -> dense slot for every counted access site (global, constant, local).

    A site's slot depends only on the sites registered before it, so the compile-time hooks
    (which see the table growing) and ``build`` (which sees it finished) agree. ``sites`` are
    ``compiler.module.Site`` records or the tuples of a generated module's ``_SITES``.
    """
    slots: dict[int, int] = {}
    for site in sites:
        sid, space = (site[0], site[7]) if isinstance(site, tuple) else (site.id, site.space)
        if space in COUNTED_SPACES:
            slots[sid] = len(slots)
    return slots


def _threads() -> int:
    import numba

    return max(numba.config.NUMBA_NUM_THREADS, numba.get_num_threads())


def build(info, dev: Device) -> list[np.ndarray]:
    """The state arrays ``[TT, M]`` for the launch ``info`` (a ``LaunchInfo``)."""
    slots = counted_slots(info.sites)
    ns, simd, threads = max(1, len(slots)), dev.simd_width, _threads()
    local = info.ndrange.local_size
    nl = int(local[0] * local[1] * local[2])
    nsg = -(-nl // simd)
    ks = ns * nsg
    cap = int(np.clip(STEP_BUFFER_BYTES // (threads * ks * (simd + 1) * 8), MIN_CAP, MAX_CAP))
    rows = np.zeros((ns, lay.S_COLS), np.int64)
    max_words = 2
    for site in info.sites:
        if site[0] in slots:
            nbytes = np.dtype(site[8]).itemsize * int(site[9])
            rows[slots[site[0]], lay.S_NBYTES] = nbytes
            rows[slots[site[0]], lay.S_SPACE] = lay.SPACE_LOCAL if site[7] == "local" else (
                lay.SPACE_GLOBAL)
            max_words = max(max_words, nbytes // max(dev.bank_width, 1) + 2)
    # One row per kernel argument, then a dummy row (one flag) for unknown buffers.
    args = np.zeros((len(info.values) + 1, lay.B_COLS), np.int64)
    flags = 0
    for p, value in enumerate(info.values):
        if isinstance(value, np.ndarray) and value.ndim == 1:
            args[p] = (flags, value.ctypes.data, value.size)
            flags += value.size
    args[-1] = (flags, 0, 1)
    flags += 1
    b0 = lay.S0 + rows.size
    x0 = b0 + args.size
    n0 = x0 + simd * max_words + 2
    a0 = n0 + (cap + 1) * ks
    # Zeroed memory from the OS: untouched pages of the step buffers are never committed.
    TT = np.zeros((threads, a0 + (cap + 1) * ks * (simd + 1)), np.int64)
    T = TT[0]
    config = {
        lay.C_SIMD: simd, lay.C_SECTOR: dev.sector_bytes, lay.C_LINE: dev.line_bytes,
        lay.C_BANKS: dev.banks, lay.C_BANK_WIDTH: dev.bank_width, lay.C_CAP: cap,
        lay.C_NSLOTS: ns, lay.C_NL: nl, lay.C_NSG: nsg, lay.C_KSTRIDE: ks,
        lay.C_M_WRITE: flags, lay.C_B0: b0, lay.C_X0: x0, lay.C_N0: n0, lay.C_A0: a0,
    }
    for index, value in config.items():
        T[index] = value
    for i, size in enumerate((dev.sector_bytes, dev.line_bytes, dev.bank_width)):
        T[lay.C_SHIFTS + i] = size.bit_length() - 1 if size > 0 and size & (size - 1) == 0 else -1
    T[lay.S0:b0] = rows.reshape(-1)
    T[b0:x0] = args.reshape(-1)
    TT[1:, :x0] = T[:x0]
    return [TT, np.zeros(2 * flags, np.uint8)]


def read(info, state: list[np.ndarray], dev: Device) -> TrafficReport:
    """The report of the launch whose state ``build`` made and the kernel filled."""
    TT, M = state
    T = TT[0]
    ns = int(T[lay.C_NSLOTS])
    rows = TT[:, lay.S0:lay.S0 + ns * lay.S_COLS].reshape(-1, ns, lay.S_COLS).sum(axis=0)
    rows[:, lay.S_NBYTES] = T[lay.S0 + lay.S_NBYTES:lay.S0 + ns * lay.S_COLS:lay.S_COLS]
    records, overflow = _records(info, rows, dev)
    reads, writes = {}, {}
    half, b0 = int(T[lay.C_M_WRITE]), int(T[lay.C_B0])
    for p, (name, value) in enumerate(zip(info.params, info.values, strict=True)):
        if isinstance(value, np.ndarray) and value.ndim == 1:
            off = int(T[b0 + p * lay.B_COLS])
            reads[name] = int(np.count_nonzero(M[off:off + value.size])) * value.itemsize
            writes[name] = int(np.count_nonzero(M[half + off:half + off + value.size])) * (
                value.itemsize)
    flops = {k: int(TT[:, lay.C_FLOPS + i].sum()) for i, k in enumerate(FLOP_KINDS)}
    if overflow:
        warnings.warn(
            f"traffic of {info.kernel}: {overflow:,} accesses ran past the step buffer "
            f"({int(T[lay.C_CAP]):,} runs of one site by one work-item between two barriers) and "
            "were counted as single-lane steps, so their sectors are an upper bound.",
            RuntimeWarning, stacklevel=4)
    return TrafficReport(info.kernel, dev.simd_width, records, reads, writes, flops,
                         work_items=info.ndrange.work_items, sector_bytes=dev.sector_bytes,
                         line_bytes=dev.line_bytes)


def _records(info, rows, dev: Device) -> tuple[list[TrafficSite], int]:
    """One record per (file, line, buffer, kind, space), in site order; and the overflow."""
    slots = counted_slots(info.sites)
    merged: dict[tuple, list] = {}
    for site in info.sites:
        sid, file, line, func, text, buffer, kind, space, dtype, _width = site
        if sid not in slots:
            continue
        kind = kind if kind in KINDS else "store"  # atomics: a read-modify-write
        row = rows[slots[sid]]
        counts = [int(row[c]) for c in (lay.S_EXECS, lay.S_SECTORS, lay.S_LINES, lay.S_REPLAYS,
                                        lay.S_STEPS, lay.S_OVERFLOW)]
        counts.append(int(row[lay.S_EXECS] * row[lay.S_NBYTES]))
        key = (file, line, buffer, kind, space)
        if key in merged:
            merged[key][1] = [a + b for a, b in zip(merged[key][1], counts, strict=True)]
        else:
            merged[key] = [(line, text, buffer, kind, space, dtype, func), counts]
    records, overflow = [], 0
    for (line, text, buffer, kind, space, dtype, func), c in merged.values():
        execs, sectors, lines, replays, steps, lost, nbytes = c
        overflow += lost
        records.append(TrafficSite(
            line, text, buffer, kind, space, dtype, executions=execs, bytes=nbytes,
            sectors=sectors, lines=lines, bank_conflicts=replays, steps=steps,
            sector_bytes=dev.sector_bytes, func=func))
    return records, overflow
