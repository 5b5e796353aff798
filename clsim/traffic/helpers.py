"""Source of the run-time helpers the traffic instrument compiles into kernels.

Registered with ``clsim.compiler.helpers`` at import, like the engine's own helpers: plain
Python in the Numba subset, so one definition serves the JIT and the no-JIT modes. The sector
and bank counters are ``clsim.traffic.counting``'s functions, copied in by source so that the
generated code and the unit-tested pure functions are the same code.

State arrays (allocated by ``TrafficInstrument.allocate``, all int64 unless noted):

* ``C`` config and scratch: see the ``C_*`` indices below; ``C[C_FLOPS + k]`` counts the
  ``FLOP_KINDS[k]`` operations.
* ``S[slot, col]`` per access site: the ``S_*`` columns.
* ``N[k, slot]`` lanes of the current sub-group that ran their k-th access of ``slot``.
* ``A[k, slot, n]`` byte address of the n-th such lane (lanes arrive in lane order).
* ``X`` scratch for the words of one local-memory step.
* ``M`` (uint8, ``[2, elements]``) read/write flags per element of every global buffer, and
  ``B[param] = (first element in M, data pointer, elements)``.

This module holds source text only; which code calls these helpers, and when, is decided by
``clsim.traffic.instrument``.
"""

from __future__ import annotations

import inspect

from clsim.compiler import helpers as hp
from clsim.traffic import counting

# C: config, then scratch. C_CUR_SG is the sub-group whose steps are pending (-1: none).
C_SIMD, C_SECTOR, C_LINE, C_BANKS, C_BANK_WIDTH, C_CAP, C_CUR_SG, C_SP = range(8)
C_FLOPS = 16  # FLOP_KINDS counters
C_STACK = 32  # partial linear indices of multi-dimensional local accesses
C_STACK_DEPTH = 32
C_SIZE = C_STACK + C_STACK_DEPTH

# S columns.
S_COUNT, S_MAXK, S_NBYTES, S_SPACE, S_EXECS, S_STEPS, S_SECTORS, S_LINES, S_REPLAYS, \
    S_OVERFLOW = range(10)
S_COLS = 10
SPACE_GLOBAL, SPACE_LOCAL = 1, 2


def _renamed(fn, name: str) -> str:
    src = inspect.getsource(fn)
    return src.replace(f"def {fn.__name__}(", f"def {name}(", 1)


hp._define("_tr_count_sectors", _renamed(counting.count_sectors, "_tr_count_sectors"))
hp._define("_tr_bank_replays", _renamed(counting.bank_replays, "_tr_bank_replays"))

hp._define("_tr_bank_step", f"""
def _tr_bank_step(C, X, addrs, n, nb):
    w = C[{C_BANK_WIDTH}]
    m = 0
    for i in range(n):
        a = addrs[i]
        for word in range(a // w, (a + nb - 1) // w + 1):
            if m < X.shape[0]:
                X[m] = word
                m += 1
    return _tr_bank_replays(X, m, C[{C_BANKS}])
""", ("_tr_bank_replays",))

hp._define("_tr_count_step", f"""
def _tr_count_step(C, S, X, s, addrs, n):
    nb = S[s, {S_NBYTES}]
    S[s, {S_EXECS}] += n
    S[s, {S_STEPS}] += 1
    if S[s, {S_SPACE}] == {SPACE_GLOBAL}:
        sec, lin = _tr_count_sectors(addrs, nb, n, C[{C_SECTOR}], C[{C_LINE}])
        S[s, {S_SECTORS}] += sec
        S[s, {S_LINES}] += lin
    else:
        S[s, {S_REPLAYS}] += _tr_bank_step(C, X, addrs, n, nb)
""", ("_tr_count_sectors", "_tr_bank_step"))

hp._define("_tr_flush", f"""
def _tr_flush(C, S, N, A, X):
    for s in range(S.shape[0]):
        mk = S[s, {S_MAXK}]
        if mk == 0:
            continue
        for k in range(mk):
            n = N[k, s]
            if n > 0:
                N[k, s] = 0
                _tr_count_step(C, S, X, s, A[k, s], n)
        S[s, {S_MAXK}] = 0
""", ("_tr_count_step",))

# Top of every work-item loop body: a new lane. Moving to another sub-group completes the
# pending sub-group's steps; every lane starts its per-site execution counts at 0.
hp._define("_tr_lane", f"""
def _tr_lane(C, S, N, A, X, lid):
    sg = lid // C[{C_SIMD}]
    if sg != C[{C_CUR_SG}]:
        _tr_flush(C, S, N, A, X)
        C[{C_CUR_SG}] = sg
    for s in range(S.shape[0]):
        S[s, {S_COUNT}] = 0
""", ("_tr_flush",))

hp._define("_tr_end", f"""
def _tr_end(C, S, N, A, X):
    _tr_flush(C, S, N, A, X)
    C[{C_CUR_SG}] = -1
""", ("_tr_flush",))

# One lane's access: the lane's k-th execution of the site in this region pass joins step k.
# Past the capacity (or if lanes arrive out of the expected pattern) the access is counted as
# a step of its own and flagged in S_OVERFLOW; memory is never written out of bounds.
hp._define("_tr_rec", f"""
def _tr_rec(C, S, N, A, X, s, addr):
    k = S[s, {S_COUNT}]
    S[s, {S_COUNT}] = k + 1
    if k < C[{C_CAP}]:
        n = N[k, s]
        if n < C[{C_SIMD}]:
            A[k, s, n] = addr
            N[k, s] = n + 1
            if k >= S[s, {S_MAXK}]:
                S[s, {S_MAXK}] = k + 1
            return
    S[s, {S_OVERFLOW}] += 1
    X[0] = addr
    _tr_count_step(C, S, X[1:], s, X, 1)
""", ("_tr_count_step",))

hp._define("_tr_l", """
def _tr_l(C, S, N, A, X, s, idx, isz):
    _tr_rec(C, S, N, A, X, s, idx * isz)
    return idx
""", ("_tr_rec",))

hp._define("_tr_g", """
def _tr_g(C, S, N, A, X, M, B, s, p, rw, idx, isz, w):
    _tr_rec(C, S, N, A, X, s, idx * isz)
    if p >= 0:
        off = B[p, 0]
        size = B[p, 2]
        for j in range(w):
            e = idx + j
            if e >= 0 and e < size:
                if rw != 1:
                    M[0, off + e] = 1
                if rw != 0:
                    M[1, off + e] = 1
    return idx
""", ("_tr_rec",))

# A buffer reached through a helper function's parameter: find the kernel argument it is.
hp._define("_tr_param", """
def _tr_param(B, arr):
    ptr = arr.ctypes.data
    for p in range(B.shape[0]):
        if B[p, 2] > 0 and B[p, 1] == ptr:
            return p
    return -1
""")

# Multi-dimensional local arrays: the leading indices are folded into a partial linear index
# on a small stack (an index may itself contain an access), the last one completes it.
hp._define("_tr_i0", f"""
def _tr_i0(C, i):
    sp = C[{C_SP}]
    if sp < {C_STACK_DEPTH}:
        C[{C_STACK} + sp] = i
    C[{C_SP}] = sp + 1
    return i
""")

hp._define("_tr_i1", f"""
def _tr_i1(C, i, dim):
    sp = C[{C_SP}] - 1
    if sp >= 0 and sp < {C_STACK_DEPTH}:
        C[{C_STACK} + sp] = C[{C_STACK} + sp] * dim + i
    return i
""")

hp._define("_tr_lm", f"""
def _tr_lm(C, S, N, A, X, s, idx, dim, isz):
    sp = C[{C_SP}] - 1
    C[{C_SP}] = sp
    lin = idx
    if sp >= 0 and sp < {C_STACK_DEPTH}:
        lin = C[{C_STACK} + sp] * dim + idx
    _tr_rec(C, S, N, A, X, s, lin * isz)
    return idx
""", ("_tr_rec",))
