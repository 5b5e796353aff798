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

from clsim.traffic.layout import (
    L_BASE,
    L_END,
    L_FIRST,
    L_ISZ,
    L_KEPT,
    L_ORIGIN,
    L_ROW,
    L_ROW_STRIDE,
    L_STRIDE,
    NOT_RUN,
    STAGED_GIVEN_UP,
    STAGED_LANES,
    STAGED_LOOP,
)

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
def lane(T, x, lid, lx, ly, index):
    """Lane ``lid`` (local ids ``lx``, ``ly``) ran a slot at element ``index``: extend the
    pass's lane run at ``T[x:]`` (layout.py ``LANES``) when the lane fits it (1). Else 0
    when the run was given up (the caller records the lane as ``record`` does), -1 when
    ``lanes`` decides. Small and without arrays but ``T``, so that LLVM inlines it at each
    access: with ``record`` inside it stayed a call, 25 ns per lane (a copy ran 5x slower)."""
    end = T[x + L_END]
    if lid == end and index == T[x + L_ORIGIN] + T[x + L_STRIDE] * lx + T[
            x + L_ROW_STRIDE] * ly:
        T[x + L_END] = lid + 1
        return 1
    return 0 if end == -2 else -1


@_jit
def lanes(T, L, c0, p0, cap, nl, s, x, lid, lx, ly, row, index, base, isz):
    """A lane that ``lane`` could not place (rows of ``row`` lanes). The first lane starts
    the run; its second lane along its first row sets its stride, its first lane of the
    next row the row stride; any other lane gives the run up: it is recorded as ``record``
    does, and so is every later lane (``lane`` returns 0), while the run's own lanes are
    left for the step counter to move into the logs (each ran the slot once this pass, so
    their log entries do not depend on when they are written). Loop-free on purpose: a
    loop here cost softmax's traffic variant about 1.5 s of compile."""
    end, origin = T[x + L_END], T[x + L_ORIGIN]
    if end == -1:  # the first lane: the origin is its index while both strides are 0
        T[x + L_FIRST], T[x + L_END], T[x + L_ORIGIN] = lid, lid + 1, index
        T[x + L_STRIDE], T[x + L_ROW_STRIDE] = 0, 0
        T[x + L_ROW], T[x + L_BASE], T[x + L_ISZ] = row, base, isz
    elif lid == end and end == T[x + L_FIRST] + 1 and lx != 0:
        T[x + L_STRIDE] = index - origin
        T[x + L_ORIGIN] = origin - (index - origin) * (lx - 1)
        T[x + L_END] = lid + 1
    elif lid == end and lx == 0 and T[x + L_FIRST] // row == ly - 1:
        # The first row change, row stride 0 so far: lane (0, ly - 1) sits at ``origin``.
        T[x + L_ROW_STRIDE] = index - origin
        T[x + L_ORIGIN] = origin - (index - origin) * (ly - 1)
        T[x + L_END] = lid + 1
    else:
        T[x + L_KEPT], T[x + L_END] = end, -2
        record(T, L, c0, p0, cap, nl, s, lid, base + index * isz)


@_jit
def stage_lanes(T, x, flag):
    """After a pass: stage the lane run at ``T[x:]`` (layout.py ``LANES``) for the step
    counter, in bytes from its first lane; or flag a run given up, whose lanes the step
    counter then moves into the logs. The step counter clears the run."""
    end, first, row = T[x + L_END], T[x + L_FIRST], T[x + L_ROW]
    if end == -2:
        T[flag] = STAGED_GIVEN_UP
    elif end >= 0:
        isz = T[x + L_ISZ]
        origin = T[x + L_ORIGIN] + T[x + L_STRIDE] * (first % row) + T[x + L_ROW_STRIDE] * (
            first // row)
        T[x + L_ORIGIN] = T[x + L_BASE] + origin * isz
        T[x + L_STRIDE] *= isz
        T[x + L_ROW_STRIDE] *= isz
        T[flag] = STAGED_LANES


@_jit
def block(T, L, c0, p0, cap, nl, s, x, index, count, row, base, isz):
    """After a pass of a 1-D group's lanes ``0 .. count - 1``, in order: the lanes that ran
    slot ``s`` once, each at its element ``index[lane]`` (``NOT_RUN``: it did not;
    ``index[nl]``: the highest lane that ran it, plus 1), given to the pass's lane run at
    ``T[x:]`` (layout.py ``LANES``) as ``lane`` and ``lanes`` would have been lane by lane,
    which is what this does unless the run is fresh and the lanes that ran it are the first
    ones, at equally spaced elements (the usual pass, and a tree reduction's
    ``if lid < half``): then the run is written at once. The lanes are left ``NOT_RUN``
    again and ``index[nl]`` 0. The lanes' indices are plain stores in the pass's loop, which
    LLVM may widen; a call of ``lane`` per lane (~2.7 ns) was a quarter of softmax's
    counting."""
    top = min(index[nl], count)
    index[nl] = 0
    ran = 0  # lanes 0 .. ran - 1 ran it, the others not? (no early exits: loops LLVM widens)
    for i in range(top):
        ran += index[i] != NOT_RUN
    first = index[0]
    stride = index[1] - first if ran > 1 else 0
    off = 0
    for i in range(top):
        off |= index[i] != (first + stride * i if i < ran else NOT_RUN)
    if ran > 0 and off == 0 and T[x + L_END] == -1:
        T[x + L_FIRST], T[x + L_END], T[x + L_ORIGIN] = 0, ran, first
        T[x + L_STRIDE], T[x + L_ROW_STRIDE] = stride, 0
        T[x + L_ROW], T[x + L_BASE], T[x + L_ISZ] = row, base, isz
        for i in range(ran):
            index[i] = NOT_RUN
        return
    for i in range(top):
        at = index[i]
        if at == NOT_RUN:
            continue
        index[i] = NOT_RUN
        fits = lane(T, x, i, i, 0, at)
        if fits == 0:
            record(T, L, c0, p0, cap, nl, s, i, base + at * isz)
        elif fits < 0:
            lanes(T, L, c0, p0, cap, nl, s, x, i, i, 0, row, at, base, isz)
