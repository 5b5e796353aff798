"""Group-level helpers of the checks (source text, Numba subset) and their registration.

``_cs_end`` runs after each work-item loop that deferred accesses or noted findings: it
replays the deferred log in order through the full recorders of ``shadow``, folds noted
findings into the findings table (``_cs_flush``), and releases a held uninitialised read into
the error record. ``_cs_sv`` parks the leading indices of multi-dimensional accesses.
``register`` adds the per-kernel helpers to the compiler's helper table; the shared ones are
compiled once in ``native``.
"""

from __future__ import annotations

from clsim.checks import layout as ly
from clsim.checks import shadow
from clsim.checks.shadow import SHARED, _keep
from clsim.compiler import helpers as hp

_END = f"""
def _cs_end(m, o, s, f, err, lg):
    n = m[{ly.M_NLOG}]
    if m[{ly.M_LOST}] != 0:  # the log overflowed: stop checking (keep it full, stay deferred)
        m[{ly.M_NLOG}] = {ly.LOG_CAPACITY}
    else:
        m[{ly.M_DEFER}] = 0
        m[{ly.M_NLOG}] = 0
        zero = np.int64(0)
        one = np.int64(1)
        for k in range(n):
            e = lg[2 * k]
            p = lg[2 * k + 1]
            kind = p & 3
            obj = (p >> 2) & {ly.MAX_OBJECTS - 1}
            site = (p >> 12) & {ly.MAX_SITE}
            lid = p >> 26
            # (int64, not literals: the entry point's signature, compiled once, not twice)
            _cs_rec(kind, zero, one, obj, e, site, lid, m, o, s, f, err, lg)
    if m[{ly.M_NPEND}] != 0:
        _cs_flush(m, f)
    if m[{ly.M_HELD}] != 0:
        if err[0] == 0:
            for c in range(16):
                err[c] = f[{ly.HELD_ROW}, c]
        m[{ly.M_HELD}] = 0
    return {_keep("m", "o", "s", "f", "err", "lg")}
"""

_FLUSH = f"""
def _cs_flush(m, f):
    for k in range(m[{ly.M_NPEND}]):
        r = {ly.MAX_FINDINGS} + k
        row = -1
        for j in range(m[{ly.M_NFIND}]):
            if row < 0 and f[j, {ly.F_KEY}] == f[r, {ly.F_KEY}]:
                row = j
        if row >= 0:
            f[row, {ly.F_COUNT}] += f[r, {ly.F_COUNT}]
        elif m[{ly.M_NFIND}] < {ly.MAX_FINDINGS}:
            row = m[{ly.M_NFIND}]
            m[{ly.M_NFIND}] = row + 1
            for c in range({ly.FIND_COLS}):
                f[row, c] = f[r, c]
            f[row, 7] = m[{ly.M_GX}]
            f[row, 8] = m[{ly.M_GY}]
            f[row, 9] = m[{ly.M_GZ}]
            f[row, 11] = m[{ly.M_L0}]
            f[row, 12] = m[{ly.M_L1}]
            f[row, 13] = m[{ly.M_L2}]
            f[row, 14] = m[{ly.M_G0}]
            f[row, 15] = m[{ly.M_G1}]
        else:
            m[{ly.M_OVERFLOW}] += f[r, {ly.F_COUNT}]
    m[{ly.M_NPEND}] = 0
    m[{ly.M_LAST_KEY}] = 0
    return {_keep("m", "f")}
"""

# Parks a leading index of a multi-dimensional access in the site's slot, returning it.
_SAVE = f"""
def _cs_sv(v, k, m):
    m[k] = v
    return v + {_keep("m")}
"""

# After a threaded launch (``parallel``): is there a global element that one thread's groups
# wrote plainly and another thread's accessed, or one accessed atomically and another read
# plainly? ``s`` holds one shadow per thread (rows), laid out by the object table ``o``; ``rg``
# each thread's touched ranges (its meta from ``layout.M_RANGES``). Only elements in the
# overlap of two threads' ranges can be touched by both, so only those are looked at.
_CROSS = f"""
def _cs_cross(s, o, rg):
    threads = s.shape[0]
    lo = np.zeros(threads, np.int64)
    hi = np.zeros(threads, np.int64)
    cols = np.zeros(7, np.int64)
    for k in range(o.shape[0]):
        n = o[k, {ly.O_LEN}]
        bw = o[k, {ly.O_W}]
        if (o[k, {ly.O_MODE}] & {ly.MB_CROSS}) == 0 or n == 0:
            continue
        for t in range(threads):  # element range of thread t, over k and objects sharing it
            lo[t] = n
            hi[t] = -1
            for j in range(o.shape[0]):
                if j == k or (bw != 0 and bw <= o[j, {ly.O_W}] and o[j, {ly.O_W}] < bw + n):
                    if rg[t, 2 * j + 1] != 0:
                        lo[t] = min(lo[t], {ly.RANGE_TOP} - rg[t, 2 * j] - bw)
                        hi[t] = max(hi[t], rg[t, 2 * j + 1] - 1 - bw)
            if bw == 0:  # no W records: no coordinates to compare, look at everything
                lo[t] = 0
                hi[t] = n - 1
        m = 0
        for c in range({ly.O_W}, {ly.O_AX + 1}):
            if o[k, c] != 0:
                cols[m] = o[k, c]
                m += 1
        for t in range(threads):
            for u in range(t + 1, threads):
                for e in range(max(lo[t], lo[u], 0), min(hi[t], hi[u], n - 1) + 1):
                    hits = 0
                    for v in range(threads):
                        for j in range(m):
                            if s[v, cols[j] + e] != 0:
                                hits += 1
                                break
                    if hits > 1 and _cs_cross_at(s, o, k, e):
                        return True
    return False
"""

# The exact rule for one element that more than one thread touched.
_CROSS_AT = f"""
def _cs_cross_at(s, o, k, e):
    writer = False
    reader = False
    atomic = False
    for t in range(s.shape[0]):
        w = o[k, {ly.O_W}] != 0 and s[t, o[k, {ly.O_W}] + e] != 0
        r = False
        a = False
        for c in ({ly.O_R1}, {ly.O_R2}, {ly.O_RX}):
            if o[k, c] != 0 and s[t, o[k, c] + e] != 0:
                r = True
        for c in ({ly.O_A1}, {ly.O_A2}, {ly.O_AX}):
            if o[k, c] != 0 and s[t, o[k, c] + e] != 0:
                a = True
        if (w or r or a) and writer:
            return True
        if (w and (reader or atomic)) or (a and reader) or (r and atomic):
            return True
        writer = writer or w
        reader = reader or r
        atomic = atomic or a
    return False
"""


def _lock() -> str:
    """``_cs_lock``: a lock atomic that took (``act`` an acquire) or may release (a release)
    the lock ``lk`` (``layout``'s lock id) for work-item ``lid``; it returns ``i``. One lock
    at a time per work-item: taking a second replaces the first. A release of a lock the
    work-item does not hold (an exchange that takes a lock) changes nothing."""
    held, relaxed = "m[lb + lid]", f"m[{ly.M_RELAXED}]"
    return f"""
def _cs_lock(i, act, lk, eb, site, lid, m, o, s, f, err, lg):
    lb = m[{ly.M_LOCK_BASE}]
    if lb != 0 and err[0] == 0:
        if act == {ly.LK_ACQUIRE}:
            {held} = lk
        elif act == {ly.LK_ACQUIRE_RELAXED}:
            {held} = lk | {ly.LOCK_WEAK}
            if {relaxed} == 0:
                {relaxed} = site + 1
        elif act >= {ly.LK_RELEASE} and {held} != 0 and ({held} >> 1) == (lk >> 1):
            {held} = 0
            if act == {ly.LK_RELEASE_RELAXED}:
                m[{ly.M_WEAK_RELEASE}] = 1
                if {relaxed} == 0:
                    {relaxed} = site + 1
    return i + {_keep("m", "o", "s", "f", "err", "lg")}
"""


def sources() -> dict[str, str]:
    """Name -> source of every group-level helper."""
    return {"_cs_flush": _FLUSH, "_cs_sv": _SAVE, "_cs_end": _END, "_cs_cross": _CROSS,
            "_cs_cross_at": _CROSS_AT, "_cs_lock": _lock()}


def register() -> None:
    """Add the per-kernel helpers (fast paths, ``_cs_sv``) to the compiler's helper table
    (idempotent). The shared ones are imported from ``native`` instead."""
    per_kernel = {**shadow.sources(), **sources()}
    for name, source in per_kernel.items():
        if name not in SHARED:
            hp._define(name, source)
