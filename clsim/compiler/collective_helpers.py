"""Runtime helpers for sub-group and work-group collectives.

Each is a ``Helper`` record in ``HELPERS``; the collectives' entries in the builtin table carry
the ones they call. A collective is computed between two work-item loops, over the context
arrays its argument was written to: ``src[s:s+n]`` is one sub-group (or the whole work-group,
``s = 0, n = _NL``) in lane order, and the result goes to ``dst[s:s+n]``. Like every helper
these are plain Python in Numba's subset, so the JIT and no-JIT modes run the same code and
agree bit for bit.

Order (documented in docs/subgroups.md): reductions are a left fold in lane order (PoCL's order),
scans a running fold in lane order; ``_cg_reduce_add_tree`` is the halving tree of the Intel CPU
runtime's sub-group reductions (``reduction_order="tree"``), ``_cg_reduce_add_halfpairs`` its
8-lane order (``"halfpairs"``). The ``_p`` variants fold in the order of a seeded
permutation (``reduction_order="shuffled"``), made by ``_cg_perm`` from splitmix64, which gives
the same numbers in both modes. Checks write the error record through ``_cg_fail`` and return.
"""

from __future__ import annotations

from clsim.compiler.helpers import Helper, helper
from clsim.runtime import record as rec

# Combine a (running value) with b (next lane); fmin/fmax semantics for floats (a NaN is
# ignored unless both are NaN); for integers the NaN test is always false.
COMBINE = {
    "add": "a + b",
    "min": "b if (b < a or a != a) else a",
    "max": "b if (b > a or a != a) else a",
}

_FAIL = rec.fill("""
def _cg_fail(err, code, site, index, length, lid, a, b, sg):
    if err[{CODE}] == 0:
        err[{CODE}] = code
        err[{SITE}] = site
        err[{INDEX}] = index
        err[{LENGTH}] = length
        err[{LID}] = lid
        err[{COUNT_A}] = a
        err[{COUNT_B}] = b
        err[{SUBGROUP}] = sg
""")

_PERM = """
def _cg_perm(perm, n, seed, key):
    for j in range(n):
        perm[j] = j
    x = np.uint64(seed) ^ (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15))
    for j in range(n - 1, 0, -1):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        k = np.int64(z % np.uint64(j + 1))
        t = perm[j]
        perm[j] = perm[k]
        perm[k] = t
"""

_REDUCE = """
def _cg_reduce_{op}(src, dst, s, n):
    a = src[s]
    for j in range(s + 1, s + n):
        b = src[j]
        a = {combine}
    for j in range(s, s + n):
        dst[j] = a
"""

_REDUCE_P = """
def _cg_reduce_{op}_p(src, dst, s, n, perm, seed, key):
    _cg_perm(perm, n, seed, key)
    a = src[s + perm[0]]
    for j in range(1, n):
        b = src[s + perm[j]]
        a = {combine}
    for j in range(s, s + n):
        dst[j] = a
"""

_SCAN = """
def _cg_scan_{op}(src, dst, s, n, ident, excl):
    if excl:
        dst[s] = ident
        if n > 1:
            a = src[s]
            dst[s + 1] = a
            for j in range(s + 2, s + n):
                b = src[j - 1]
                a = {combine}
                dst[j] = a
    else:
        a = src[s]
        dst[s] = a
        for j in range(s + 1, s + n):
            b = src[j]
            a = {combine}
            dst[j] = a
"""

# Shuffled scan: lane i's prefix (lanes 0..i, or 0..i-1 when exclusive) is folded in the order
# the permutation lists those lanes. Quadratic in n; only used when asked for.
_SCAN_P = """
def _cg_scan_{op}_p(src, dst, s, n, ident, excl, perm, seed, key):
    _cg_perm(perm, n, seed, key)
    for i in range(n):
        lim = i if excl else i + 1
        a = ident
        first = True
        for k in range(n):
            j = perm[k]
            if j < lim:
                b = src[s + j]
                if first:
                    a = b
                    first = False
                else:
                    a = {combine}
        dst[s + i] = a
"""

_CLUSTERED = """
def _cg_clustered_{op}(src, dst, s, n, c):
    for cs in range(s, s + n, c):
        ce = min(cs + c, s + n)
        a = src[cs]
        for j in range(cs + 1, ce):
            b = src[j]
            a = {combine}
        for j in range(cs, ce):
            dst[j] = a
"""

_CLUSTERED_P = """
def _cg_clustered_{op}_p(src, dst, s, n, c, perm, seed, key):
    for cs in range(s, s + n, c):
        ce = min(cs + c, s + n)
        _cg_perm(perm, ce - cs, seed, key * 131 + cs - s)
        a = src[cs + perm[0]]
        for j in range(1, ce - cs):
            b = src[cs + perm[j]]
            a = {combine}
        for j in range(cs, ce):
            dst[j] = a
"""

_OTHERS = {
    "_cg_broadcast": ("""
def _cg_broadcast(src, idx, dst, s, n, err, site, sg):
    k = idx[s]
    for j in range(s + 1, s + n):
        if idx[j] != k:
            _cg_fail(err, {SG_NONUNIFORM_ARG}, site, idx[j], n, j, k, idx[j], sg)
            err[{OTHER_LID}] = s
            return
    if k < 0 or k >= n:
        _cg_fail(err, {SG_RANGE}, site, k, n, s, k, 0, sg)
        return
    v = src[s + k]
    for j in range(s, s + n):
        dst[j] = v
""", ("_cg_fail",)),
    "_cg_wg_broadcast": ("""
def _cg_wg_broadcast(src, ix, iy, iz, nd, dst, nl, l0, l1, l2, err, site):
    for d in range(nd):
        ids = ix if d == 0 else (iy if d == 1 else iz)
        size = l0 if d == 0 else (l1 if d == 1 else l2)
        k = ids[0]
        for j in range(1, nl):
            if ids[j] != k:
                _cg_fail(err, {SG_NONUNIFORM_ARG}, site, ids[j], size, j, k, ids[j], -1)
                err[{OTHER_LID}] = 0
                err[{DIM}] = d
                return
        if k < 0 or k >= size:
            _cg_fail(err, {SG_RANGE}, site, k, size, 0, k, 0, -1)
            err[{DIM}] = d
            return
    lin = ix[0]
    if nd > 1:
        lin = lin + iy[0] * l0
    if nd > 2:
        lin = lin + iz[0] * l0 * l1
    v = src[lin]
    for j in range(nl):
        dst[j] = v
""", ("_cg_fail",)),
    "_cg_vote": ("""
def _cg_vote(src, dst, s, n, want_all):
    r = 1 if want_all else 0
    for j in range(s, s + n):
        if want_all:
            if src[j] == 0:
                r = 0
        elif src[j] != 0:
            r = 1
    for j in range(s, s + n):
        dst[j] = r
""", ()),
    "_cg_shuffle": ("""
def _cg_shuffle(src, idx, dst, s, n, err, site, sg, xor):
    for j in range(n):
        k = idx[s + j]
        if xor:
            k = j ^ k
        if k < 0 or k >= n:
            _cg_fail(err, {SG_RANGE}, site, k, n, s + j, idx[s + j], j, sg)
            return
    for j in range(n):
        k = idx[s + j]
        if xor:
            k = j ^ k
        dst[s + j] = src[s + k]
""", ("_cg_fail",)),
    "_cg_shuffle_rel": ("""
def _cg_shuffle_rel(src, delta, dst, s, n, sign):
    for j in range(n):
        d = delta[s + j]
        k = j + sign * d
        if d < 0 or k < 0 or k >= n:
            k = j
        dst[s + j] = src[s + k]
""", ()),
    "_cg_ballot": ("""
def _cg_ballot(src, dst, s, n):
    w0 = 0
    w1 = 0
    w2 = 0
    w3 = 0
    for j in range(n):
        if src[s + j] != 0:
            bit = 1 << (j & 31)
            if j < 32:
                w0 = w0 | bit
            elif j < 64:
                w1 = w1 | bit
            elif j < 96:
                w2 = w2 | bit
            else:
                w3 = w3 | bit
    for j in range(s, s + n):
        dst[j, 0] = w0
        dst[j, 1] = w1
        dst[j, 2] = w2
        dst[j, 3] = w3
""", ()),
    "_cg_mask_check": ("""
def _cg_mask_check(m, nl, size, err, site):
    seen = 0
    for st in range(0, nl, size):
        nt = 0
        nf = 0
        ft = -1
        ff = -1
        for j in range(st, min(st + size, nl)):
            v = m[j]
            if v == 1:
                nt += 1
                if ft < 0:
                    ft = j
            elif v == 0:
                nf += 1
                if ff < 0:
                    ff = j
        if nt != 0 and nf != 0:
            _cg_fail(err, {SG_BRANCH}, site, 0, 0, ff, nt, nf, st // size)
            err[{OTHER_LID}] = ft
            return 0
        if nt != 0:
            seen = seen | 1
        if nf != 0:
            seen = seen | 2
    return seen
""", ("_cg_fail",)),
    "_cg_mask_seen": ("""
def _cg_mask_seen(m, nl):
    seen = 0
    for j in range(nl):
        if m[j] == 1:
            seen = seen | 1
        elif m[j] == 0:
            seen = seen | 2
    return seen
""", ()),
}

# Tree orders of float sub-group sums, computed in dst[s:s+n] as scratch (dst is overwritten
# with the result anyway). "tree": x[i] += x[i + h] for h = n/2, n/4, ... 1 (a non-power-of-two
# n pairs i with i + h for h = next power of two / 2, where i + h < n). "halfpairs" (the Intel
# CPU runtime at 8 lanes, measured by verify/orders.py): one halving step, then adjacent pairs,
# ((x0+x4)+(x1+x5)) + ((x2+x6)+(x3+x7)). The halving is by the sub-group size w, not by the
# n active lanes: a partial last sub-group adds like a full one whose missing lanes are zeros
# (measured on the Intel runtime at w = 8 and n = 1 .. 7: 4 lanes give (x0+x1)+(x2+x3)).
_REDUCE_TREE = """
def _cg_reduce_add_tree(src, dst, s, n):
    for j in range(s, s + n):
        dst[j] = src[j]
    h = 1
    while h < n:
        h = h * 2
    h = h // 2
    while h >= 1:
        for i in range(h):
            if i + h < n:
                dst[s + i] = dst[s + i] + dst[s + i + h]
        h = h // 2
    a = dst[s]
    for j in range(s, s + n):
        dst[j] = a
"""
_REDUCE_HALFPAIRS = """
def _cg_reduce_add_halfpairs(src, dst, s, n, w):
    h = max(w, n) // 2 if max(w, n) > 1 else 1
    m = min(h, n)
    for i in range(m):
        dst[s + i] = src[s + i] + src[s + i + h] if i + h < n else src[s + i]
    while m > 1:
        k = 0
        for i in range(0, m, 2):
            dst[s + k] = dst[s + i] + dst[s + i + 1] if i + 1 < m else dst[s + i]
            k += 1
        m = k
    a = dst[s]
    for j in range(s, s + n):
        dst[j] = a
"""
# sub_scan=descending (Intel CPU runtime, 8 lanes): lane k adds x[k] + x[k-1] + ... + x[0]
# left to right. Lanes are written from the last down, so src may be dst.
_SCAN_ADD_DESC = """
def _cg_scan_add_desc(src, dst, s, n, ident, excl):
    for k in range(n - 1, -1, -1):
        hi = k - 1 if excl else k
        a = ident
        if hi >= 0:
            a = src[s + hi]
            for j in range(hi - 1, -1, -1):
                a = a + src[s + j]
        dst[s + k] = a
"""
# work_reduce=columns (Intel CPU runtime): sub-group lane j folds x[j], x[j + m], x[j + 2m],
# ... over the sub-groups (m lanes each), then the m lane sums fold left.
_REDUCE_ADD_COLUMNS = """
def _cg_reduce_add_columns(src, dst, s, n, m):
    total = src[s]
    for j in range(min(m, n)):
        a = src[s + j]
        for i in range(s + j + m, s + n, m):
            a = a + src[i]
        total = a if j == 0 else total + a
    for j in range(s, s + n):
        dst[j] = total
"""

HELPERS: dict[str, Helper] = {
    "_cg_scan_add_desc": helper("_cg_scan_add_desc", _SCAN_ADD_DESC),
    "_cg_reduce_add_columns": helper("_cg_reduce_add_columns", _REDUCE_ADD_COLUMNS),
    "_cg_fail": helper("_cg_fail", _FAIL),
    "_cg_perm": helper("_cg_perm", _PERM),
    "_cg_reduce_add_tree": helper("_cg_reduce_add_tree", _REDUCE_TREE),
    "_cg_reduce_add_halfpairs": helper("_cg_reduce_add_halfpairs", _REDUCE_HALFPAIRS),
}
for _op, _combine in COMBINE.items():
    for _stem, _template in (("reduce", _REDUCE), ("scan", _SCAN), ("clustered", _CLUSTERED),
                             ("reduce_p", _REDUCE_P), ("scan_p", _SCAN_P),
                             ("clustered_p", _CLUSTERED_P)):
        _name = f"_cg_{_stem.removesuffix('_p')}_{_op}" + ("_p" if _stem.endswith("_p") else "")
        _deps = ("_cg_perm",) if _stem.endswith("_p") else ()
        HELPERS[_name] = helper(_name, _template.format(op=_op, combine=_combine), _deps)
for _name, (_src, _deps) in _OTHERS.items():
    HELPERS[_name] = helper(_name, rec.fill(_src), _deps)

# Per-lane ballot consumers (cl_khr_subgroup_ballot); v is a uint4 (tuple or row).
_BALLOT = {
    "_bal_count": """
def _bal_count(v):
    c = 0
    for w in range(4):
        x = np.int64(v[w])
        while x != 0:
            x = x & (x - 1)
            c += 1
    return np.uint32(c)
""",
    "_bal_extract": """
def _bal_extract(v, i):
    if i < 0 or i >= 128:
        return np.int32(0)
    return np.int32((np.int64(v[i >> 5]) >> (i & 31)) & 1)
""",
    "_bal_prefix": """
def _bal_prefix(v, lane, inclusive):
    lim = lane + 1 if inclusive else lane
    c = 0
    for i in range(lim):
        c += (np.int64(v[i >> 5]) >> (i & 31)) & 1
    return np.uint32(c)
""",
    "_bal_lsb": """
def _bal_lsb(v):
    for i in range(128):
        if (np.int64(v[i >> 5]) >> (i & 31)) & 1:
            return np.uint32(i)
    return np.uint32(4294967295)
""",
    "_bal_msb": """
def _bal_msb(v):
    for i in range(127, -1, -1):
        if (np.int64(v[i >> 5]) >> (i & 31)) & 1:
            return np.uint32(i)
    return np.uint32(4294967295)
""",
}
for _name, _src in _BALLOT.items():
    HELPERS[_name] = helper(_name, _src)
