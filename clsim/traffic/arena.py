"""The traffic instrument's state before and after a launch: building the arena, reading it.

``build`` lays out the arrays described in ``clsim.traffic.layout`` for one launch (one arena
row per Numba thread, per-buffer footprint flags); ``read`` turns them into a
``TrafficReport`` after the launch: sites merged by (file, line, buffer, kind, space), unique
bytes per buffer, operation counts. Neither runs kernel code; the generated code and
``clsim.traffic.steps`` fill the arrays in between.
"""

from __future__ import annotations

import mmap
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from clsim.traffic import layout as lay
from clsim.traffic.model import FLOP_KINDS, TrafficReport, TrafficSite

COUNTED_SPACES = ("global", "constant", "local", "image")
# Virtual size of the lane logs and of the sector streams (all threads): pages are only touched
# as far as the launch goes, so these bound address space, not memory. A lane running one site
# more than cap times in one work-item loop pass has its extra runs counted as single-lane
# steps (a warning says so); steps past a full stream are not replayed through the caches.
STEP_BUFFER_BYTES = 1 << 30
STREAM_BYTES = 1 << 30
MIN_CAP, MAX_CAP = 256, 1 << 20
ROW_PAD = 16  # int64 entries between two threads' arena rows
_KINDS = {"load": lay.R_LOAD, "store": lay.R_STORE}
_READS = (lay.R_LOAD, lay.R_ATOMIC_LOAD)  # the slot kinds reported as loads


# The last launch's sector streams, kept for the next launch (``_streams``) when they used at
# most KEEP_STREAM_BYTES: their pages stay committed (memory held between launches).
KEEP_STREAM_BYTES = 256 << 20
_kept_streams: list[np.ndarray] = []


def _streams(rows: int, columns: int) -> np.ndarray:
    """The sector streams of a launch: the last launch's when their shape fits, else fresh
    pages (``_untouched_zeros``). A fresh page costs a fault when first written: GEMV
    4096 x 4096 writes 136 MB of stream, 34,000 faults, ~110 ms of CPU per launch. Nothing
    reads a stream past what its launch wrote, so the old entries need no clearing."""
    kept = _take_kept(_kept_streams, (rows, columns))
    return kept if kept is not None else _untouched_zeros(rows, columns)


def _take_kept(kept: list, shape: tuple) -> np.ndarray | None:
    """The array the last launch left in ``kept``, when it has ``shape`` (a launch running
    beside this one may have taken it: then None)."""
    try:
        array = kept.pop()
    except IndexError:
        return None
    return array if array.shape == shape else None


def _keep_streams(RR: np.ndarray, entries: int) -> None:
    """Keep a launch's streams, of which ``entries`` were written, for the next launch."""
    if entries * 8 <= KEEP_STREAM_BYTES:
        _kept_streams[:] = [RR]


# The last launch's footprint flags, kept for the next launch of the same buffers' sizes
# when they take at most KEEP_FLAG_BYTES (memory held between launches, as the streams).
KEEP_FLAG_BYTES = 64 << 20
_kept_flags: list[np.ndarray] = []


def _flags(size: int) -> np.ndarray:
    """Zeroed footprint flags (``M``): the last launch's when their size fits, which ``read``
    cleared. Fresh zeros cost a page fault and the kernel's clearing of each page as the
    launch first sets a flag there (softmax 1024^2: 4 MB, ~1 ms a launch); clearing pages
    already mapped costs ~0.1 ms."""
    kept = _take_kept(_kept_flags, (size,))
    return np.zeros(size, np.uint8) if kept is None else kept


def _untouched_zeros(rows: int, columns: int) -> np.ndarray:
    """An int64 array of zeros on fresh pages of the OS, committed 4 KiB at a time as they
    are first written. ``np.zeros`` of this size asks for transparent huge pages, each
    zeroed whole (2 MiB) on its first write: the logs and streams are written sparsely,
    and softmax's traffic run spent about 2 ms per launch on it (with stalls of 5 ms)."""
    pages = mmap.mmap(-1, max(rows * columns, 1) * 8)
    return np.frombuffer(pages, np.int64, rows * columns).reshape(rows, columns)


@dataclass(frozen=True)
class Device:
    """What the counts depend on besides the kernel: SIMD width, sector/line size, banks, and
    the caches (None: the profile describes none, so no DRAM estimate)."""

    simd_width: int
    sector_bytes: int
    line_bytes: int
    banks: int
    bank_width: int
    cache: Any = None  # clsim.traffic.cache.CacheConfig


def counted_slots(sites) -> dict[int, int]:
    """Engine site id -> dense slot for every counted access site (global, constant, local).

    A site's slot depends only on the sites registered before it, so the compile-time hooks
    (which see the table growing) and ``build`` (which sees it finished) agree. ``sites`` are
    ``clsim.runtime.record.Site`` records or the tuples of a generated module's ``_SITES``.
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


def _site_rows(info, slots, dev: Device) -> tuple[np.ndarray, int]:
    """The slots' constant columns (bytes per access, space, kind) and the most bank words
    one access covers."""
    rows = np.zeros((max(1, len(slots)), lay.S_COLS), np.int64)
    max_words = 2
    for site in info.sites:
        if site[0] in slots:
            nbytes = np.dtype(site[8]).itemsize * int(site[9])
            row = rows[slots[site[0]]]
            row[lay.S_NBYTES] = nbytes
            isz = np.dtype(site[8]).itemsize
            row[lay.S_ISZ] = isz
            row[lay.S_ISZ_SHIFT] = isz.bit_length() - 1 if isz & (isz - 1) == 0 else -1
            row[lay.S_SPACE] = lay.SPACE_LOCAL if site[7] == "local" else lay.SPACE_GLOBAL
            row[lay.S_KIND] = _KINDS.get(site[6], lay.R_ATOMIC)
            max_words = max(max_words, nbytes // max(dev.bank_width, 1) + 2)
    return rows, max_words


def build(info, dev: Device) -> list[np.ndarray]:
    """The state arrays ``[TT, M, LL, RR]`` for the launch ``info`` (a ``LaunchInfo``)."""
    slots = counted_slots(info.sites)
    ns, simd, threads = max(1, len(slots)), dev.simd_width, _threads()
    local = info.ndrange.local_size
    nl = int(local[0] * local[1] * local[2])
    cap = int(np.clip(STEP_BUFFER_BYTES // (threads * ns * nl * 8), MIN_CAP, MAX_CAP))
    cap = cap // 8 * 8  # whole blocks of 8 runs, then a block for the dump (layout.py)
    rows, max_words = _site_rows(info, slots, dev)
    # One row per kernel argument, then a dummy row (one flag) for unknown buffers; each
    # buffer's flags from a whole block on (layout.py ``M``).
    args = np.zeros((len(info.values) + 1, lay.B_COLS), np.int64)
    flags = 0
    for p, value in enumerate(info.values):
        if isinstance(value, np.ndarray) and value.ndim >= 1:  # an image's pixels: 2-D
            args[p, :3] = (flags, value.ctypes.data, value.size)
            flags += _whole_blocks(value.size)
    args[-1, :3] = (flags, 0, 1)
    flags += _whole_blocks(1)
    b0 = lay.S0 + rows.size
    x0 = b0 + args.size
    # Scratch: gathered lanes, sorted words, per-bank counts, then 2 cursors per lane.
    cnt0 = x0 + simd * (max_words + 3) + max(dev.banks, 0) + 2
    pend0 = cnt0 + ns * nl
    stage0 = pend0 + ns
    staged0 = stage0 + 3 * ns * nl
    lanes0 = staged0 + ns
    strided0 = lanes0 + lay.LANE_COLS * ns
    # Rows padded to whole, separate cache lines: threads write their own rows per access.
    TT = np.zeros((threads, -(-(strided0 + lay.STRIDED_COLS * ns) // 8) * 8 + ROW_PAD),
                  np.int64)
    T = TT[0]
    config = {
        lay.C_SIMD: simd, lay.C_SECTOR: dev.sector_bytes, lay.C_LINE: dev.line_bytes,
        lay.C_BANKS: dev.banks, lay.C_BANK_WIDTH: dev.bank_width, lay.C_CAP: cap,
        lay.C_NSLOTS: ns, lay.C_NL: nl, lay.C_NSG: -(-nl // simd), lay.C_CNT0: cnt0,
        lay.C_PEND0: pend0, lay.C_STAGE0: stage0, lay.C_STAGED0: staged0,
        lay.C_LANES0: lanes0, lay.C_STRIDED0: strided0,
        lay.C_M_WRITE: flags, lay.C_B0: b0, lay.C_X0: x0,
        lay.C_R_CAP: STREAM_BYTES // (8 * threads) if dev.cache else 0,
    }
    for index, value in config.items():
        T[index] = value
    for i, size in enumerate((dev.sector_bytes, dev.line_bytes, dev.bank_width)):
        T[lay.C_SHIFTS + i] = size.bit_length() - 1 if size > 0 and size & (size - 1) == 0 else -1
    T[lay.S0:b0] = rows.reshape(-1)
    T[b0:x0] = args.reshape(-1)
    T[lanes0 + lay.L_END:lanes0 + lay.LANE_COLS * ns:lay.LANE_COLS] = -1  # no lane run yet
    TT[1:] = T
    # Zeroed memory from the OS: untouched pages of the logs and streams are never committed.
    LL = _untouched_zeros(threads, ns * (cap + 8) * nl)
    RR = _streams(threads, max(1, int(T[lay.C_R_CAP])))
    return [TT, _flags(2 * flags + 2 * flags // lay.FOOTPRINT_BLOCK), LL, RR]


def _whole_blocks(elements: int) -> int:
    """``elements`` rounded up to whole footprint blocks (layout.py ``M``)."""
    return -(-elements // lay.FOOTPRINT_BLOCK) * lay.FOOTPRINT_BLOCK


def read(info, state: list[np.ndarray], dev: Device) -> TrafficReport:
    """The report of the launch whose state ``build`` made and the kernel filled."""
    TT, M, _, RR = state[:4]  # then the step counter's address (steps.address)
    T = TT[0]
    ns = int(T[lay.C_NSLOTS])
    rows = TT[:, lay.S0:lay.S0 + ns * lay.S_COLS].reshape(-1, ns, lay.S_COLS).sum(axis=0)
    rows[:, lay.S_NBYTES] = T[lay.S0 + lay.S_NBYTES:lay.S0 + ns * lay.S_COLS:lay.S_COLS]
    # A C11 atomic's kind is set by the threads that ran it (helpers.py ``_tr_k``).
    kinds = TT[:, lay.S0 + lay.S_KIND:lay.S0 + ns * lay.S_COLS:lay.S_COLS]
    rows[:, lay.S_KIND] = kinds[(kinds != lay.R_ATOMIC).argmax(axis=0), np.arange(ns)]
    records, overflow = _records(info, rows, dev)
    reads, writes = {}, {}
    half, b0 = int(T[lay.C_M_WRITE]), int(T[lay.C_B0])
    buffers, unset = [], []
    for p, (name, value) in enumerate(zip(info.params, info.values, strict=True)):
        if isinstance(value, np.ndarray) and value.ndim >= 1:
            # Only the flags a thread's step counter set may be set (``B_FLAGGED``): a GEMV
            # 4096^2 never writes its matrix, whose 16 MB of write flags were counted and
            # cleared every launch (1.1 ms).
            b = b0 + p * lay.B_COLS
            flagged = int(np.bitwise_or.reduce(TT[:, b + lay.B_FLAGGED]))
            for counts, off, read in ((reads, int(T[b]), True),
                                      (writes, half + int(T[b]), False)):
                bits = flagged >> (0 if read else 1)  # a write's bits: the read's, shifted
                elements, blocks = bits & lay.B_READ, bits & lay.B_READ_BLOCKS
                counts[name] = _footprint(M, off, value.size, 2 * half, elements, blocks,
                                          unset) * value.itemsize
            buffers.append((p, name))
    flops = {k: int(TT[:, lay.C_FLOPS + i].sum()) for i, k in enumerate(FLOP_KINDS)}
    if overflow:
        warnings.warn(
            f"traffic of {info.kernel}: {overflow:,} accesses ran past the step buffer "
            f"({int(T[lay.C_CAP]):,} runs of one site by one work-item between two barriers) and "
            "were counted as single-lane steps, so their sectors are an upper bound.",
            RuntimeWarning, stacklevel=4)
    dram = _dram(info, TT, RR, dev, buffers)
    _keep_streams(RR, int(TT[:, lay.C_R_LEN].sum()))
    if M.nbytes <= KEEP_FLAG_BYTES:  # cleared for the next launch where any may be set
        start = 0
        for lo, hi in sorted(unset):
            M[start:lo] = 0
            start = max(start, hi)
        M[start:] = 0
        _kept_flags[:] = [M]
    return TrafficReport(info.kernel, dev.simd_width, records, reads, writes, flops,
                         work_items=info.ndrange.work_items,
                         work_groups=info.ndrange.total_groups, sector_bytes=dev.sector_bytes,
                         line_bytes=dev.line_bytes, **dram)


def _footprint(M, first: int, size: int, blocks0: int, elements: int, blocks: int,
               unset: list) -> int:
    """How many of the ``size`` elements whose flags are ``M[first:first + size]`` are set,
    by their own flag or their block's (layout.py ``M``; ``elements`` and ``blocks``: whether
    any of either may be set). The ranges that cannot be set go on ``unset`` (not cleared)."""
    n_blocks = _whole_blocks(size) // lay.FOOTPRINT_BLOCK
    lo = blocks0 + first // lay.FOOTPRINT_BLOCK
    if not elements:
        unset.append((first, first + size))
    if not blocks:
        unset.append((lo, lo + n_blocks))
        return int(np.count_nonzero(M[first:first + size])) if elements else 0
    # Only whole blocks within the buffer have block flags (a step's range is clamped to it).
    whole = np.count_nonzero(M[lo:lo + n_blocks]) * lay.FOOTPRINT_BLOCK
    if not elements:
        return int(whole)
    per_block = M[first:first + n_blocks * lay.FOOTPRINT_BLOCK].reshape(n_blocks, -1)
    return int(whole + np.count_nonzero(per_block[M[lo:lo + n_blocks] == 0]))


def _dram(info, TT, RR, dev: Device, buffers) -> dict:
    """The cache model's figures for the report (nothing when the profile has no caches)."""
    if dev.cache is None:
        return {}
    from clsim.traffic import cache

    lens = np.minimum(TT[:, lay.C_R_LEN], RR.shape[1])
    result = cache.simulate(RR, lens, dev.cache, len(info.values) + 1)
    sb = dev.sector_bytes
    lost = int(TT[:, lay.C_R_LOST].sum())
    if lost:
        warnings.warn(
            f"traffic of {info.kernel}: the sector stream of the cache model filled up; "
            f"{lost:,} sectors were not replayed and count as DRAM traffic (an upper bound).",
            RuntimeWarning, stacklevel=5)
    return {
        "dram_read_bytes": {n: int(result.dram_read[p]) * sb for p, n in buffers},
        "dram_write_bytes": {n: int(result.dram_write[p]) * sb for p, n in buffers},
        "uncached_bytes": {n: int(result.requested[p]) * sb for p, n in buffers},
        "unreplayed_bytes": lost * sb,
        "cache_model": dev.cache.describe(),
    }


def _records(info, rows, dev: Device) -> tuple[list[TrafficSite], int]:
    """One record per (file, line, buffer, kind, space), in site order; and the overflow."""
    slots = counted_slots(info.sites)
    merged: dict[tuple, list] = {}
    for site in info.sites:
        sid, file, line, func, text, buffer, kind, space, dtype, _width = site
        if sid not in slots:
            continue
        row = rows[slots[sid]]
        kind = "load" if row[lay.S_KIND] in _READS else "store"  # atomics: a read-modify-write
        counts = [int(row[c]) for c in (lay.S_EXECS, lay.S_SECTORS, lay.S_LINES, lay.S_REPLAYS,
                                        lay.S_STEPS, lay.S_OVERFLOW)]
        counts.append(int(row[lay.S_EXECS] * row[lay.S_NBYTES]))
        key = (file, line, buffer, kind, space)
        if key in merged:
            merged[key][1] = [a + b for a, b in zip(merged[key][1], counts, strict=True)]
        else:
            merged[key] = [(file, line, text, buffer, kind, space, dtype, func), counts]
    records, overflow = [], 0
    for (file, line, text, buffer, kind, space, dtype, func), c in merged.values():
        execs, sectors, lines, replays, steps, lost, nbytes = c
        overflow += lost
        records.append(TrafficSite(
            line, text, buffer, kind, space, dtype, executions=execs, bytes=nbytes,
            sectors=sectors, lines=lines, bank_conflicts=replays, steps=steps,
            sector_bytes=dev.sector_bytes, func=func, file=file))
    return records, overflow
