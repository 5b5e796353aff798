"""Recorders the traffic instrument's generated code calls, compiled once per machine.

A kernel's traffic variant used to paste each recording into the kernel as a few statements
per access site (``instrument._record_inline``, ``_stage``): Numba types and lowers every
copy again, which made the variant's first compile ~2 s slower than the plain one. A call
to one of these functions is one statement; they are compiled once into Numba's on-disk cache
(``cache=True``) and linked into the kernel, where LLVM inlines them, so a warm run costs
the same as the pasted stores (measured on softmax). They take only arrays and integers:
a function argument (the step counter's C entry point) would stop the inlining, so a lane
that must first have its previous descriptor moved calls the step counter itself.

The layout of what they write is ``clsim.traffic.layout``; ``clsim.traffic.helpers`` holds
the recorders that wrap an index expression (those are still pasted per kernel).
"""

from __future__ import annotations

import numba
import numpy as np

from clsim.traffic.layout import STAGED_LANES, STAGED_LOOP

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@_jit
def record(T, L, c0, p0, cap, nl, s, lid, addr):
    """Lane ``lid`` (of ``nl``) ran slot ``s`` at byte ``addr``: its next entry of ``L``
    (helpers.py ``_RECORD``, the same stores), its run counter and the slot's pending flag
    (the highest lane that ran it, plus 1)."""
    c = np.uint64(c0 + s * nl + lid)
    n = T[c]
    T[c] = n + 1
    k = min(n, cap)
    L[np.uint64((((s * ((cap >> 3) + 1) + (k >> 3)) * nl + lid) << 3) + (k & 7))] = addr
    p = np.uint64(p0 + s)
    T[p] = max(T[p], lid + 1)


@_jit
def stage(T, x, flag, last, prev, count):
    """Stage a lane's loop descriptor at ``T[x:x + 3]`` (layout.py ``STAGE``: its last two
    byte addresses and the runs) and set the slot's staged flag ``T[flag]``."""
    T[x] = last
    T[x + 1] = prev
    T[x + 2] = count
    T[flag] = STAGED_LOOP


@_jit
def stage_range(T, x, flag, last, prev, start, stop, step):
    """``stage`` of a loop over ``range(start, stop, step)``, its runs counted here."""
    if step > 0:
        count = max((stop - start + step - 1) // step, 0)
    else:
        count = max((start - stop - step - 1) // -step, 0)
    T[x] = last
    T[x + 1] = prev
    T[x + 2] = count
    T[flag] = STAGED_LOOP


@_jit
def lanes(T, L, c0, p0, cap, nl, s, lid, base, isz, end, first, index0, stride, index):
    """Lane ``lid`` ran slot ``s`` at element ``index`` and does not extend the pass's lane
    run (``end``: the lane after it, -1 for none yet, -2 for a run given up; ``first``,
    ``index0``, ``stride``: its first lane, that lane's index, the step per lane). The first
    lane starts a run and the second sets its stride; any other lane gives the run up: its
    lanes go to their logs as ``record`` would have put them, then this lane. Returns the
    run's new (end, first, index0, stride)."""
    if end == -1:
        return lid + 1, lid, index, np.int64(0)
    if end >= 0 and lid == end and end == first + 1:
        return lid + 1, first, index0, index - index0
    if end >= 0:
        for lane in range(first, end):
            record(T, L, c0, p0, cap, nl, s, lane, base + (index0 + stride * (lane - first)) * isz)
    record(T, L, c0, p0, cap, nl, s, lid, base + index * isz)
    return np.int64(-2), first, index0, stride


@_jit
def stage_lanes(T, x, flag, first, end, address, stride):
    """Stage a pass's lane run of a slot at ``T[x:x + 4]`` (layout.py ``LANES``)."""
    T[x] = first
    T[x + 1] = end
    T[x + 2] = address
    T[x + 3] = stride
    T[flag] = STAGED_LANES
