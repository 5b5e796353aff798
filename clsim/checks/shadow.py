"""In-kernel helpers of the race and uninitialised-read checks (source text, Numba subset).

Generated kernels wrap the index of every access in a *recorder* call that returns the index.
Two tiers keep that cheap:

- ``_cs_<ld|st>q<l|g|p>`` (load/store on local/global/private memory): tiny, call-free, so Numba
  inlines them into the work-item loops. They settle the common case (no possible finding)
  against the element's shadow records and update them. When they cannot, they append the
  access to a log and switch the group to *deferred* mode, in which every later access of the
  same work-item loop is logged too, preserving the order;
- ``_cs_rec`` (and ``_cs_recp`` for helper-function parameters, matched to an object by the
  address they point at): the full rules for loads, stores and atomics, findings included
  (``_cs_note``). Kernels reach them (and ``_cs_end``) only through ``native``'s C entry
  point, so their code is compiled once per machine, never into a kernel. ``_cs_end``
  replays the log through them after each work-item loop, and folds noted findings into the
  table.

Why not call the full recorder from the fast one? Numba keeps the reference counts of array
arguments alive around any call it does not inline (atomic operations, ~40x the cost of the
check), and a branch inside an index expression (``a[x if c else y]``) does the same to ``a``.
Hence single calls in index expressions, call-free fast paths, and ``_keep`` on every exit.
Layout constants: ``layout``; group-level helpers and registration: ``replay``; rules:
docs/checks.md; decoding: ``findings``.
"""

from __future__ import annotations

import textwrap

from clsim.checks import layout as ly

STATE = "m, o, s, f, err, lg"
_PACK = "(obj << 2) | (site << 12) | (lid << 26)"


def _keep(*arrays: str) -> str:
    """An expression worth 0 that uses every array argument on the function's exit path, so
    Numba's reference-count pruning can pair each argument's incref with its decref."""
    return " + ".join(f"({a}.size - {a}.size)" for a in arrays)


def _ind(text: str, n: int) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * n) + "\n"


def _log(kind: int, elem: str) -> str:
    """Append this access to the deferred log and turn deferred mode on."""
    return f"""
_n = m[{ly.M_NLOG}]
if _n < {ly.LOG_CAPACITY}:
    lg[2 * _n] = {elem}
    lg[2 * _n + 1] = {kind} | {_PACK}
    m[{ly.M_NLOG}] = _n + 1
else:
    m[{ly.M_LOST}] += 1
m[{ly.M_DEFER}] = 1
"""


def _range(index: str) -> str:
    """Widen this object's range of touched shadow indices (``layout.M_RANGES``)."""
    return f"""
_x = {index}
_q = {ly.M_RANGES} + 2 * obj
if {ly.RANGE_TOP} - _x > m[_q]:
    m[_q] = {ly.RANGE_TOP} - _x
if _x + 1 > m[_q + 1]:
    m[_q + 1] = _x + 1
"""


# -- the full recorders -----------------------------------------------------------------------
# Their shared parts are helpers of their own, called rather than pasted into each recorder:
# Numba's compile time grows with a function's length, and these helpers are compiled once per
# machine before a first checked run (``native``). They take int64 and bool scalars only (the
# callers pass ``np.int64`` values, never literals, so each compiles for one signature).

# Is the access in record ``rec`` unordered with this one (and not this work-item's)?
_UNORDERED = f"""
def _cs_unordered(rec, gs, cross, lid, last, lasts, sgs):
    if rec == 0:
        return False
    st = rec >> {ly.STAMP_SHIFT}
    if st < gs:
        return cross
    rl = rec & {ly.MAX_LID}
    if rl == lid or st < last:
        return False
    return not (st < lasts and rl // sgs == lid // sgs)
"""

# With lock tracking: an access unordered with an earlier one is still ordered with it when
# both held the same lock (``hl`` this work-item's, ``rk`` the earlier access's twin record),
# unless either took or released it relaxed. Returns (unordered, why no lock ordered them).
_LOCKSET = f"""
def _cs_lockset(hl, rk, same_group, weak_release):
    if hl == 0 and rk == 0:
        return True, 0
    if hl != 0 and (hl >> 1) == (rk >> 1) and (same_group or (hl & {ly.LOCK_LOCAL}) == 0):
        if ((hl | rk) & {ly.LOCK_WEAK}) == 0 and weak_release == 0:
            return False, 0
        return True, {ly.H_RELAXED_LOCK}
    return True, {ly.H_LOCKSET}
"""


def _row(target: str, prev: str) -> str:
    """Writes a finding's columns into the row ``target`` (``_t`` or ``f[_r, ``)."""
    cols = {0: "code", 1: "site", 2: "e", 3: "obj", 4: "lid", 5: prev, 6: "_info", 10: "_pg"}
    return "".join(f"{target}{c}] = {v}\n" for c, v in cols.items())


# Notes a finding of category ``cat`` by an access of ``kind`` against the earlier record
# ``prev`` (0: none, an uninitialised read) of kind ``pk`` with lock hints ``ph``: into ``err``
# (first-error mode) or the pending rows (report_all). First-error mode: a race goes straight
# into ``err``; an uninitialised read is held until the end of the work-item loop, because the
# write that makes it a race (a missing barrier: the writer runs later in the simulator's
# order) may still come.
_NOTE = f"""
def _cs_note(cat, kind, prev, pk, ph, site, e, obj, lid, sgs, gs, cross, lasts, m, f, err):
    code = {ly.ERR_BASE} + cat
    _info = kind | (pk << 4) | (sgs << 16)
    _pg = -1
    _b = -1
    if prev != 0:
        _st = prev >> {ly.STAMP_SHIFT}
        _pg = _st >> m[{ly.M_EPOCH_BITS}]
        _b = (prev >> {ly.SITE_SHIFT}) & {ly.MAX_SITE}
        if _st < gs:
            _info |= {ly.H_CROSS_GROUP << 8}
        else:
            if _st < (m[{ly.M_LAST_LOCAL}] if cross else m[{ly.M_LAST_GLOBAL}]):
                _info |= {ly.H_WRONG_FENCE << 8}
            if _st < lasts:
                if (prev & {ly.MAX_LID}) // sgs != lid // sgs:
                    _info |= {ly.H_SUBGROUP << 8}
        if (kind == {ly.K_ATOMIC}) != (pk == {ly.K_ATOMIC}):
            _info |= {ly.H_ATOMIC_MIX << 8}
    _info |= ph << 8
    if (ph & {ly.H_RELAXED_LOCK}) != 0:
        _info |= m[{ly.M_RELAXED}] << {ly.RELAXED_SHIFT}
    if m[{ly.M_RAISE_RACE} + cat - 1] != 0:
        if cat == {ly.CAT_RACE}:
            if err[0] == 0:
{_ind(_row("err[", "prev") + f"err[14] = m[{ly.M_G0}]" + chr(10) + f"err[15] = m[{ly.M_G1}]", 16)}        elif m[{ly.M_HELD}] == 0:
{_ind(_row("f[" + str(ly.HELD_ROW) + ", ", "prev") + f"f[{ly.HELD_ROW}, 14] = m[{ly.M_G0}]" + chr(10) + f"f[{ly.HELD_ROW}, 15] = m[{ly.M_G1}]" + chr(10) + f"m[{ly.M_HELD}] = 1", 12)}    else:
        _key = cat + 4 * (min(site, _b) + 1 + (max(site, _b) + 1) * {ly.MAX_SITE + 2})
        _n = m[{ly.M_NPEND}]
        if _key == m[{ly.M_LAST_KEY}] and _n > 0:  # the same pair again: count it on its row
            f[{ly.MAX_FINDINGS} + _n - 1, {ly.F_COUNT}] += 1
        elif _n < {ly.PENDING}:
            _r = {ly.MAX_FINDINGS} + _n
            f[_r, {ly.F_COUNT}] = 1
{_ind(_row("f[_r, ", "prev"), 12)}            f[_r, {ly.F_KEY}] = _key
            m[{ly.M_NPEND}] = _n + 1
            m[{ly.M_LAST_KEY}] = _key
        else:
            m[{ly.M_OVERFLOW}] += 1
    return 0 + {_keep("m", "f", "err")}
"""


# The record sets an access of each kind is checked against: W, R, A in this order (the first
# unordered record is reported), bit k of the mask for set k; a plain record's lock twin sits
# at a fixed distance from it.
_SETS = (((ly.O_W,), ly.MB_W, ly.K_STORE), ((ly.O_R1, ly.O_R2, ly.O_RX), ly.MB_R, ly.K_LOAD),
         ((ly.O_A1, ly.O_A2, ly.O_AX), ly.MB_A, ly.K_ATOMIC))
_CONFLICTS = {ly.K_LOAD: 0b101, ly.K_STORE: 0b111, ly.K_ATOMIC: 0b011}
_TWIN = ly.O_LW - ly.O_W
assert all(cols == tuple(range(cols[0], cols[0] + len(cols))) and bit == 1 << k
           for k, (cols, bit, _kind) in enumerate(_SETS))
assert all(twin == col + _TWIN for col, twin in ly.LOCK_COLS.items())


def _record() -> str:
    """``_cs_rec``: the full rules for an access of ``kind`` (load, store, atomic) to
    ``width`` elements from ``eb + i`` of object ``obj``: one recorder for the three kinds
    (they differ in the sets checked and joined only), so it compiles once."""
    firsts = ", ".join(str(cols[0]) for cols, _bit, _kind in _SETS)
    kinds = ", ".join(str(kind) for _cols, _bit, kind in _SETS)
    stamp = f"(m[{ly.M_NOW}] << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid"
    return f"""
def _cs_rec(kind, i, width, obj, eb, site, lid, {STATE}):
    mode = o[obj, {ly.O_MODE}]
    if mode != 0 and err[0] == 0:
        if m[{ly.M_DEFER}] != 0:
            for k in range(width):
{_ind(_log("kind", "eb + i + k"), 16)}        else:
            gs = m[{ly.M_GSTART}]
            cross = (mode & {ly.MB_CROSS}) != 0
            last = m[{ly.M_LAST_GLOBAL}] if cross else m[{ly.M_LAST_LOCAL}]
            lasts = m[{ly.M_LAST_SUB}]
            sgs = m[{ly.M_SG_SIZE}]
            lb = m[{ly.M_LOCK_BASE}]
            hl = m[lb + lid] if lb != 0 else 0  # this work-item's lock (``_cs_lock``)
            zero = np.int64(0)
            conflicts = {_CONFLICTS[ly.K_LOAD]} if kind == {ly.K_LOAD} else ({_CONFLICTS[ly.K_STORE]} if kind == {ly.K_STORE} else {_CONFLICTS[ly.K_ATOMIC]})
            for k in range(width):
                e = eb + i + k
                if cross:
{_ind(_range(f"o[obj, {ly.O_W}] + e"), 20)}                if kind != {ly.K_STORE} and (mode & {ly.MB_UNINIT}) != 0:
                    if (s[o[obj, {ly.O_W}] + e] >> {ly.STAMP_SHIFT}) < gs:
                        if (mode & {ly.MB_A}) == 0 or (s[o[obj, {ly.O_A1}] + e] >> {ly.STAMP_SHIFT}) < gs:
                            _cs_note(np.int64({ly.CAT_UNINIT}), kind, zero, zero, zero, site, e, obj, lid, sgs, gs, cross, lasts, m, f, err)
                if (mode & {ly.MB_RACE}) != 0:
                    prev = zero  # the earlier access, its kind, its lock hints
                    pk = zero
                    ph = zero
                    for rs in range({len(_SETS)}):
                        if (((conflicts & mode) >> rs) & 1) != 0:
                            first = ({firsts})[rs]
                            for j in range(1 if rs == 0 else (3 if cross else 2)):  # X only if cross
                                if prev == 0:
                                    _p = s[o[obj, first + j] + e]
                                    _c = _cs_unordered(_p, gs, cross, lid, last, lasts, sgs)
                                    _lh = zero
                                    if _c and lb != 0 and rs < 2:  # plain records: lock twins
                                        _c, _lh = _cs_lockset(hl, s[o[obj, first + j + {_TWIN}] + e], (_p >> {ly.STAMP_SHIFT}) >= gs, m[{ly.M_WEAK_RELEASE}])
                                    if _c:
                                        prev = _p
                                        pk = np.int64(({kinds})[rs])
                                        ph = _lh
                    if prev != 0:
                        _cs_note(np.int64({ly.CAT_RACE}), kind, prev, pk, ph, site, e, obj, lid, sgs, gs, cross, lasts, m, f, err)
                if kind == {ly.K_STORE}:
                    if (mode & {ly.MB_W}) != 0:
                        s[o[obj, {ly.O_W}] + e] = {stamp}
                        if lb != 0:
                            s[o[obj, {ly.O_LW}] + e] = hl
                elif (mode & ({ly.MB_R} if kind == {ly.K_LOAD} else {ly.MB_A})) != 0:
                    # this access joins R1 (A1); the old R1 moves to R2, and to RX if an
                    # earlier group made it, unless it was this work-item's
                    c1 = {ly.O_R1} if kind == {ly.K_LOAD} else {ly.O_A1}
                    twins = lb != 0 and kind == {ly.K_LOAD}
                    _b1 = o[obj, c1] + e
                    _r1 = s[_b1]
                    if _r1 != 0:
                        _st = _r1 >> {ly.STAMP_SHIFT}
                        if _st < gs or (_r1 & {ly.MAX_LID}) != lid:
                            if cross and _st < gs:
                                s[o[obj, c1 + 2] + e] = _r1
                                if twins:
                                    s[o[obj, c1 + 2 + {_TWIN}] + e] = s[o[obj, c1 + {_TWIN}] + e]
                            s[o[obj, c1 + 1] + e] = _r1
                            if twins:
                                s[o[obj, c1 + 1 + {_TWIN}] + e] = s[o[obj, c1 + {_TWIN}] + e]
                    s[_b1] = {stamp}
                    if twins:
                        s[o[obj, c1 + {_TWIN}] + e] = hl
    return i + {_keep("m", "o", "s", "f", "err", "lg")}
"""


# ``_cs_recp``: an access through a helper's parameter ``p`` (an address): the object holding
# that address and the element offset of ``p`` in it, then the recorder.
_BY_ADDRESS = f"""
def _cs_recp(kind, i, width, p, eb, site, lid, {STATE}):
    obj = -1
    off = 0
    for k in range(o.shape[0]):
        if obj < 0:
            if o[k, {ly.O_ADDR}] <= p and p < o[k, {ly.O_ADDR}] + o[k, {ly.O_NBYTES}]:
                obj = k
                off = (p - o[k, {ly.O_ADDR}]) // o[k, {ly.O_ITEM}]
    if obj < 0:
        return i + {_keep("m", "o", "s", "f", "err", "lg")}
    return _cs_rec(kind, i, width, np.int64(obj), np.int64(eb + off), site, lid, {STATE})
"""


# -- the fast paths ---------------------------------------------------------------------------
# Appends an access to the deferred log through addresses (``_log``'s twin). Fast paths call it
# through its C address (``native``, meta slot ``M_DEFER_FN``), never inlined.
_DEFER = f"""
def _cs_defer(m, lg, e, packed):
    _n = _peek(m, {ly.M_NLOG})
    if _n < {ly.LOG_CAPACITY}:
        _poke(lg, 2 * _n, e)
        _poke(lg, 2 * _n + 1, packed)
        _poke(m, {ly.M_NLOG}, _n + 1)
    else:
        _poke(m, {ly.M_LOST}, _peek(m, {ly.M_LOST}) + 1)
    _poke(m, {ly.M_DEFER}, 1)
"""


def _log_at(kind: int) -> str:
    """Defer this access (``_cs_defer``, called by address)."""
    return f"_call_defer(_peek(m, {ly.M_DEFER_FN}), m, lg, e, {kind} | {_PACK})\n"


def _range_at() -> str:
    """``_range`` through addresses, for the W record at ``bw + e``."""
    return f"""
_x = bw + e
_q = {ly.M_RANGES} + 2 * obj
if {ly.RANGE_TOP} - _x > _peek(m, _q):
    _poke(m, _q, {ly.RANGE_TOP} - _x)
if _x + 1 > _peek(m, _q + 1):
    _poke(m, _q + 1, _x + 1)
"""


def _fast_work(short: str, space: str, rec: str) -> str:
    """The record checks and updates of a fast path (sets ``ok = 0`` to defer)."""
    cross = space == "g"
    if space == "p":  # private: uninitialised reads only
        return (f"if (_peek(s, bw + e) >> {ly.STAMP_SHIFT}) < gs:\n    ok = 0\n"
                if short == "ld" else f"_poke(s, bw + e, {rec})\n")
    if cross:  # a write by an earlier group: always a conflict on global memory
        older = "if w != 0:\n        ok = 0"
    elif short == "ld":  # nothing written in this group yet: an uninitialised read
        older = f"if (mode & {ly.MB_UNINIT}) != 0:\n        ok = 0"
    else:
        older = "pass"
    work = f"""
w = _peek(s, bw + e)
wst = w >> {ly.STAMP_SHIFT}
if wst < gs:
    {older}
elif (w & {ly.MAX_LID}) != lid and wst >= last and (mode & {ly.MB_RACE}) != 0:
    ok = 0
"""
    if short == "ld":
        # The read joins R1; the old R1 moves to R2 only if it may still conflict (an
        # unordered read by another work-item), or to RX if an earlier group made it.
        to_rx = ("\n    elif _r1 != 0 and _st < gs:\n        _poke(s, brx + e, _r1)"
                 if cross else "")
        return work + f"""if ok == 1 and (mode & {ly.MB_R}) != 0:
    _r1 = _peek(s, br1 + e)
    _st = _r1 >> {ly.STAMP_SHIFT}
    if _st >= last and _st >= gs:
        if (_r1 & {ly.MAX_LID}) != lid:
            _poke(s, br2 + e, _r1){to_rx}
    _poke(s, br1 + e, {rec})
"""
    work += f"if ok == 1 and (mode & {ly.MB_R}) != 0:\n"
    for b in ("br1", "br2"):
        if cross:  # a read by an earlier group, or an unordered one by another item
            work += f"""    _r = _peek(s, {b} + e)
    _st = _r >> {ly.STAMP_SHIFT}
    if _st < gs:
        if _r != 0:
            ok = 0
    elif _st >= last and (_r & {ly.MAX_LID}) != lid:
        ok = 0
"""
        else:  # last >= gs: a record of an earlier group is never unordered
            work += f"""    _r = _peek(s, {b} + e)
    if (_r >> {ly.STAMP_SHIFT}) >= last and (_r & {ly.MAX_LID}) != lid:
        ok = 0
"""
    if cross:
        work += "    if _peek(s, brx + e) != 0:\n        ok = 0\n"
    return work + f"if ok == 1:\n    _poke(s, bw + e, {rec})\n"


def _fast(short: str, space: str) -> str:
    """The common case of a load or store on one address space ("l", "g", "p"): decides
    without any call; logs the access for the full recorder when it cannot. The object's mode
    and record bases and the group's epochs come in as scalars the kernel keeps in locals
    (``instrument.ChecksInstrument.group_start``), and the shadow, meta and log arrays as
    addresses (``pointers``): a call passing only scalars costs no reference counting, so the
    fast paths are compiled once per machine (``native``) and LLVM inlines them into each
    kernel, instead of Numba inlining them at every access site (seconds per kernel)."""
    kind = ly.K_LOAD if short == "ld" else ly.K_STORE
    rec = f"(now << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid"
    ranged = _ind(_range_at(), 8) if space == "g" else ""
    return f"""
def _cs_{short}q{space}(i, eb, site, lid, obj, mode, bw, br1, br2, brx, gs, last, now, s, m, lg):
    if mode != 0:
        e = eb + i
{ranged}        ok = 0
        if (_peek(m, {ly.M_DEFER}) | (mode & {ly.MB_A})) == 0:
            ok = 1
{_ind(_fast_work(short, space, rec), 12)}        if ok == 0:
{_ind(_log_at(kind), 12)}    return i
"""


def _store_span() -> str:
    """The W records of ``n`` plain stores to elements ``eb + i0 + j`` of a global object by
    local ids ``l0 + j`` (a lane-major trip's stores, clsim/compiler/lane_emit.py), when every
    one is the fast path's common case and the object has no read or atomic records: a
    loop that checks, then one that writes, both free of branches and calls, so LLVM
    vectorises them. Returns 0, recording nothing, when the caller must record them
    element by element (``ChecksInstrument.store_span``: the full recorder); 1 when done."""
    rec = f"(now << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | (l0 + j)"
    return f"""
def _cs_stspan(i0, n, eb, l0, site, obj, mode, bw, gs, last, now, s, m):
    if mode == 0 or n <= 0:
        return 1
    if (_peek(m, {ly.M_DEFER}) | (mode & ({ly.MB_A} | {ly.MB_R}))) != 0:
        return 0
    race = (mode & {ly.MB_RACE}) != 0
    first = bw + eb + i0
    bad = False
    for j in range(n):
        w = _peek(s, first + j)
        wst = w >> {ly.STAMP_SHIFT}
        bad |= (wst < gs) & (w != 0)
        bad |= (wst >= gs) & ((w & {ly.MAX_LID}) != l0 + j) & (wst >= last) & race
    if bad:
        return 0
    for e in (eb + i0, eb + i0 + n - 1):
{_ind(_range_at(), 8)}
    for j in range(n):
        _poke(s, first + j, {rec})
    return 1
"""


RECORDERS = {"load": "_cs_ld", "store": "_cs_st", "atomic": "_cs_at"}
# Helpers the same for every kernel: compiled once into their own module (``native``).
FAST = ("ld", "st")  # recorders with fast paths ``_cs_<short>q<l|g|p>``
FAST_PATHS = (*(f"_cs_{short}q{space}" for short in FAST for space in "lgp"), "_cs_stspan")
SHARED = ("_cs_unordered", "_cs_lockset", "_cs_note", "_cs_rec", "_cs_recp", "_cs_lock",
          "_cs_flush", "_cs_end", "_cs_cross_at", "_cs_cross", "_cs_defer", *FAST_PATHS)


def sources() -> dict[str, str]:
    """Name -> source of every recorder and fast path (group-level helpers: ``replay``)."""
    out = {}
    out["_cs_rec"] = _record()
    out["_cs_recp"] = _BY_ADDRESS
    for short in FAST:
        for space in "lgp":
            out[f"_cs_{short}q{space}"] = _fast(short, space)
    out["_cs_stspan"] = _store_span()
    out["_cs_defer"] = _DEFER
    out.update(_cs_unordered=_UNORDERED, _cs_lockset=_LOCKSET, _cs_note=_NOTE)
    return out
