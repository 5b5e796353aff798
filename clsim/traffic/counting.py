"""Per-step counting kernels of the traffic model: sectors, lines, bank replays, footprint.

The engine calls these once per access site per sub-group step (the lanes of one sub-group, or
of one SIMD width when the kernel uses no sub-groups, executing one load or store together).
Every function here is written in the Numba nopython subset and calls no other Python function,
so each one works both as plain Python (tests, small launches) and under ``numba.njit`` (the
generated work-group loops); ``compiled()`` hands out the njit-compiled set.

This module does not decide *which* lanes form a step, keep per-site totals, or know about
buffers and dtypes: that is the engine's instrumentation and ``clsim.traffic.model``.

Footprint bitmaps hold one flag (0/1, ``uint8``) per *byte* of a buffer, not per element: a
buffer read through both ``vload4`` and scalar loads, or through a ``char`` view, is still
counted exactly, at the price of one byte of bookkeeping per byte of buffer.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

SECTOR_BYTES = 32
LINE_BYTES = 128
DEFAULT_BANKS = 32
DEFAULT_BANK_WIDTH = 4


def count_sectors(
    byte_addrs: np.ndarray,
    nbytes_each: int,
    count: int,
    sector_bytes: int = SECTOR_BYTES,
    line_bytes: int = LINE_BYTES,
) -> tuple[int, int]:
    """Distinct sectors and lines touched by one step of ``count`` lanes.

    ``byte_addrs[:count]`` (int64) are the first byte each active lane accesses, each access
    ``nbytes_each`` bytes wide (4 for a float, 16 for a ``vload4`` of floats); an access that
    crosses a sector or line boundary counts every unit it touches. Lanes may share addresses
    (a broadcast load touches one sector). Returns ``(sectors, lines)``; ``count == 0`` gives
    ``(0, 0)``.
    """
    if count <= 0:
        return 0, 0
    last_byte = nbytes_each - 1 if nbytes_each > 0 else 0
    # Which order are the addresses in? Coalesced code is almost always ascending, so checking
    # once and scanning linearly avoids sorting on the hot path.
    ascending = True
    descending = True
    for i in range(1, count):
        if byte_addrs[i] < byte_addrs[i - 1]:
            ascending = False
        if byte_addrs[i] > byte_addrs[i - 1]:
            descending = False
    if ascending or descending:
        addrs = byte_addrs
    else:
        # Arbitrary order (gathers, transposed reads): sort a copy; at most a few hundred lanes.
        addrs = np.sort(byte_addrs[:count])
        descending = False
    sectors = 0
    lines = 0
    # With equal widths, ascending starts give ascending ends, so each unit first shows up
    # after every smaller one: counting units above the last one seen counts distinct units.
    prev_sector = np.int64(-1)
    prev_line = np.int64(-1)
    have = False
    for k in range(count):
        i = count - 1 - k if descending else k
        a = np.int64(addrs[i])
        first_s = a // sector_bytes
        last_s = (a + last_byte) // sector_bytes
        first_l = a // line_bytes
        last_l = (a + last_byte) // line_bytes
        if not have:
            sectors += last_s - first_s + 1
            lines += last_l - first_l + 1
            have = True
        else:
            if last_s > prev_sector:
                sectors += last_s - max(first_s, prev_sector + 1) + 1
            if last_l > prev_line:
                lines += last_l - max(first_l, prev_line + 1) + 1
        prev_sector = max(prev_sector, last_s)
        prev_line = max(prev_line, last_l)
    return int(sectors), int(lines)


def bank_replays(word_addrs: np.ndarray, count: int, nbanks: int) -> int:
    """Extra local-memory passes one step needs: max distinct words in one bank, minus 1.

    ``word_addrs[:count]`` (int64) are word indices, ``byte address // bank width``; a lane that
    accesses several words (a float4) contributes one entry per word. Lanes on the *same* word
    are served by one broadcast and do not conflict. ``nbanks <= 0`` means local memory is not
    banked (CPUs): always 0. ``count == 0`` gives 0.
    """
    if count <= 0 or nbanks <= 0:
        return 0
    ascending = True
    for i in range(1, count):
        if word_addrs[i] < word_addrs[i - 1]:
            ascending = False
            break
    # Common conflict-free case (contiguous or broadcast lanes): ascending words spanning fewer
    # than nbanks words cannot put two distinct words in one bank. Answer without allocating.
    if ascending and word_addrs[count - 1] - word_addrs[0] < nbanks:
        return 0
    words = word_addrs if ascending else np.sort(word_addrs[:count])
    per_bank = np.zeros(nbanks, dtype=np.int64)
    worst = np.int64(0)
    for i in range(count):
        # Sorted, so a repeated word sits next to its twin: skip it (broadcast).
        if i > 0 and words[i] == words[i - 1]:
            continue
        b = words[i] % nbanks
        per_bank[b] += 1
        if per_bank[b] > worst:
            worst = per_bank[b]
    return int(worst - 1)


def mark_bytes(bitmap: np.ndarray, byte_addr: int, nbytes: int) -> int:
    """Flag bytes ``[byte_addr, byte_addr + nbytes)`` in a per-byte ``uint8`` bitmap.

    Returns how many bytes were newly flagged, so a caller can keep a running footprint without
    rescanning. Bytes outside the bitmap are ignored: bounds are the engine's checks' business,
    and under njit an unchecked write past the end would corrupt memory.
    """
    start = max(byte_addr, 0)
    stop = min(byte_addr + nbytes, bitmap.shape[0])
    fresh = 0
    for i in range(start, stop):
        if bitmap[i] == 0:
            bitmap[i] = 1
            fresh += 1
    return fresh


def count_marked(bitmap: np.ndarray) -> int:
    """Number of flagged bytes in a footprint bitmap made by ``mark_bytes``."""
    total = 0
    for i in range(bitmap.shape[0]):
        if bitmap[i] != 0:
            total += 1
    return total


def new_bitmap(nbytes: int) -> np.ndarray:
    """An all-clear footprint bitmap for a buffer of ``nbytes`` bytes (one flag per byte)."""
    return np.zeros(max(int(nbytes), 0), dtype=np.uint8)


_COMPILED: SimpleNamespace | None = None


def compiled() -> SimpleNamespace:
    """The njit-compiled counting functions (``count_sectors``, ``bank_replays``,
    ``mark_bytes``, ``count_marked``), compiled once per process on first use.

    Numba is imported here, not at module import, so the model and the report tools stay
    usable (and quick to import) without touching the compiler.
    """
    global _COMPILED
    if _COMPILED is None:
        import numba

        _COMPILED = SimpleNamespace(
            count_sectors=numba.njit(count_sectors),
            bank_replays=numba.njit(bank_replays),
            mark_bytes=numba.njit(mark_bytes),
            count_marked=numba.njit(count_marked),
        )
    return _COMPILED
