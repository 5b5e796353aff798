"""In-kernel helpers of the race and uninitialised-read checks (source text, Numba subset).

Generated kernels call one *recorder* per memory access: ``_cs_ld`` (load), ``_cs_st`` (store)
or ``_cs_at`` (atomic), each returning the index it was given so it can wrap the index
expression; the ``...p`` variants serve helper functions, whose array parameters are matched
to a tracked object by address. A recorder checks the access against the element's shadow
records (layout: ``clsim.checks.layout``), notes a finding, and updates the records.

Speed matters here (every access of a checked kernel runs this), and one Numba property shapes
the code: a call to another compiled function that is not inlined keeps the reference counts
of every array argument alive around it (atomic increments, ~40x slower than the check itself).
So each recorder is generated as one flat, call-free function from the text templates below,
and every array argument is used once more on the single exit path (``_keep``). Findings are
noted with plain stores; ``_cs_flush`` (group level, after each work-item loop) folds them into
the findings table. Detection rules are in docs/checks.md; decoding is ``findings``.
"""

from __future__ import annotations

import textwrap

from clsim.checks import layout as ly
from clsim.compiler import helpers as hp

STATE = "m, o, s, f, err"


def _keep(*arrays: str) -> str:
    """An expression worth 0 that uses every array argument on the function's exit path, so
    Numba's reference-count pruning can pair each argument's incref with its decref."""
    return " + ".join(f"({a}.size - {a}.size)" for a in arrays)


def _ind(text: str, n: int) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * n) + "\n"


def _conflict(rec: str) -> str:
    """Sets ``_c``: is the access in ``rec`` unordered with this one (and not this item's)?"""
    return f"""
_c = False
if {rec} != 0:
    _st = {rec} >> {ly.STAMP_SHIFT}
    if _st < gs:
        _c = cross
    else:
        _rl = {rec} & {ly.MAX_LID}
        if _rl != lid and _st >= last:
            _c = True
            if _st < lasts:
                if _rl // sgs == lid // sgs:
                    _c = False
"""


def _check(cols: tuple[int, ...], bit: int, kind: int) -> str:
    """Sets ``prev``/``pk`` to the first unordered record among ``cols`` (X only if cross)."""
    out = f"if prev == 0 and (mode & {bit}) != 0:\n"
    body = ""
    for n, col in enumerate(cols):
        step = f"_p = s[o[obj, {col}] + e]\n{_conflict('_p')}if _c:\n    prev = _p\n    pk = {kind}\n"
        if n == 0:
            body = step
        elif n == 1:
            body += "else:\n" + _ind(step, 4)
        else:
            body += _ind("elif cross:\n" + _ind(step, 4), 4)
    return out + _ind(body, 4)


def _note(cat: int, kind: int, prev: str, pk: str) -> str:
    """Notes a finding: into ``err`` (first-error mode) or the pending rows (report_all)."""
    mix = f"if {'not ' if kind == ly.K_ATOMIC else ''}({pk} == {ly.K_ATOMIC}):\n" \
          f"        _info |= {ly.H_ATOMIC_MIX << 8}\n"
    return f"""
_info = {kind} | ({pk} << 4) | (sgs << 16)
_pg = -1
_b = -1
if {prev} != 0:
    _st = {prev} >> {ly.STAMP_SHIFT}
    _pg = _st >> m[{ly.M_EPOCH_BITS}]
    _b = ({prev} >> {ly.SITE_SHIFT}) & {ly.MAX_SITE}
    if _st < gs:
        _info |= {ly.H_CROSS_GROUP << 8}
    else:
        if _st < (m[{ly.M_LAST_LOCAL}] if cross else m[{ly.M_LAST_GLOBAL}]):
            _info |= {ly.H_WRONG_FENCE << 8}
        if _st < lasts:
            if ({prev} & {ly.MAX_LID}) // sgs != lid // sgs:
                _info |= {ly.H_SUBGROUP << 8}
    {mix}if m[{ly.M_RAISE_RACE + cat - 1}] != 0:
    if err[0] == 0:
        err[0] = {ly.ERR_BASE + cat}
        err[1] = site
        err[2] = e
        err[3] = obj
        err[4] = lid
        err[5] = {prev}
        err[6] = _info
        err[10] = _pg
        err[14] = m[{ly.M_G0}]
        err[15] = m[{ly.M_G1}]
else:
    _key = {cat} + 4 * (min(site, _b) + 1 + (max(site, _b) + 1) * {ly.MAX_SITE + 2})
    _n = m[{ly.M_NPEND}]
    if _key == m[{ly.M_LAST_KEY}]:
        m[{ly.M_REPEAT}] += 1
    elif _n < {ly.PENDING}:
        _r = {ly.MAX_FINDINGS} + _n
        f[_r, 0] = {ly.ERR_BASE + cat}
        f[_r, 1] = site
        f[_r, 2] = e
        f[_r, 3] = obj
        f[_r, 4] = lid
        f[_r, 5] = {prev}
        f[_r, 6] = _info
        f[_r, 10] = _pg
        f[_r, {ly.F_KEY}] = _key
        m[{ly.M_NPEND}] = _n + 1
        m[{ly.M_LAST_KEY}] = _key
    else:
        m[{ly.M_OVERFLOW}] += 1
"""


def _uninit(kind: int) -> str:
    return f"""
if (mode & {ly.MB_UNINIT}) != 0:
    if (s[o[obj, {ly.O_W}] + e] >> {ly.STAMP_SHIFT}) < gs:
        if (mode & {ly.MB_A}) == 0 or (s[o[obj, {ly.O_A1}] + e] >> {ly.STAMP_SHIFT}) < gs:
{_ind(_note(ly.CAT_UNINIT, kind, "0", "0"), 12)}"""


def _put(c1: int, c2: int, cx: int) -> str:
    """Adds this access to a record set (1, 2, X)."""
    return f"""
_rec = (m[{ly.M_NOW}] << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid
_b1 = o[obj, {c1}] + e
_r1 = s[_b1]
if _r1 != 0:
    _st = _r1 >> {ly.STAMP_SHIFT}
    if _st < gs or (_r1 & {ly.MAX_LID}) != lid:
        if cross and _st < gs:
            s[o[obj, {cx}] + e] = _r1
        s[o[obj, {c2}] + e] = _r1
s[_b1] = _rec
"""


_W = ((ly.O_W,), ly.MB_W, ly.K_STORE)
_R = ((ly.O_R1, ly.O_R2, ly.O_RX), ly.MB_R, ly.K_LOAD)
_A = ((ly.O_A1, ly.O_A2, ly.O_AX), ly.MB_A, ly.K_ATOMIC)
# per access kind: which record sets it conflicts with, which set it joins, uninit check?
_RULES = {
    "ld": (ly.K_LOAD, (_W, _A), "R", True),
    "st": (ly.K_STORE, (_W, _R, _A), "W", False),
    "at": (ly.K_ATOMIC, (_W, _R), "A", True),
}


def _recorder(short: str, pointer: bool) -> str:
    kind, conflicts, joins, uninit = _RULES[short]
    name = f"_cs_{short}{'p' if pointer else ''}"
    target = "v" if pointer else "obj"
    race = "".join(_check(*c) for c in conflicts)
    race += f"if prev != 0:\n{_ind(_note(ly.CAT_RACE, kind, 'prev', 'pk'), 4)}"
    if joins == "W":
        update = (f"if (mode & {ly.MB_W}) != 0:\n    s[o[obj, {ly.O_W}] + e] = "
                  f"(m[{ly.M_NOW}] << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid\n")
    else:
        bit, cols = (ly.MB_R, (ly.O_R1, ly.O_R2, ly.O_RX)) if joins == "R" else (
            ly.MB_A, (ly.O_A1, ly.O_A2, ly.O_AX))
        update = f"if (mode & {bit}) != 0:\n{_ind(_put(*cols), 4)}"
    body = (_uninit(kind) if uninit else "") + \
        f"if (mode & {ly.MB_RACE}) != 0:\n    prev = 0\n    pk = 0\n{_ind(race, 4)}" + update
    if pointer:
        find = f"""
p = np.int64(v.ctypes.data)
obj = -1
off = 0
for k in range(o.shape[0]):
    if obj < 0:
        if o[k, {ly.O_ADDR}] <= p and p < o[k, {ly.O_ADDR}] + o[k, {ly.O_NBYTES}]:
            obj = k
            off = (p - o[k, {ly.O_ADDR}]) // o[k, {ly.O_ITEM}]
mode = 0
if obj >= 0:
    mode = o[obj, {ly.O_MODE}]
"""
    else:
        find = f"off = 0\nmode = o[obj, {ly.O_MODE}]\n"
    keep = _keep("m", "o", "s", "f", "err", *(["v"] if pointer else []))
    return f"""
def {name}(i, width, {target}, eb, site, lid, {STATE}):
{_ind(find, 4)}    if mode != 0 and err[0] == 0:
        gs = m[{ly.M_GSTART}]
        cross = (mode & {ly.MB_CROSS}) != 0
        last = m[{ly.M_LAST_GLOBAL}] if cross else m[{ly.M_LAST_LOCAL}]
        lasts = m[{ly.M_LAST_SUB}]
        sgs = m[{ly.M_SG_SIZE}]
        for k in range(width):
            e = off + eb + i + k
{_ind(body, 12)}    return i + {keep}
"""


def _fast(short: str) -> str:
    """The common case of a load or store, small enough for Numba to inline into the kernel:
    returns 1 when it handled the access (or nothing was to be done), 0 when the full
    recorder must run (a possible finding, atomics, vectors). It changes nothing before it is
    sure it can finish."""
    if short == "ld":
        decide = f"""
if (mode & {ly.MB_UNINIT}) != 0 and wst < gs:
    ok = 0
if ok == 1 and (mode & {ly.MB_R}) != 0:
    _b1 = o[obj, {ly.O_R1}] + e
    _r1 = s[_b1]
    if _r1 != 0:
        _st = _r1 >> {ly.STAMP_SHIFT}
        if _st < gs or (_r1 & {ly.MAX_LID}) != lid:
            if cross and _st < gs:
                s[o[obj, {ly.O_RX}] + e] = _r1
            s[o[obj, {ly.O_R2}] + e] = _r1
    s[_b1] = (m[{ly.M_NOW}] << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid
"""
    else:
        decide = f"""
if ok == 1 and (mode & {ly.MB_R}) != 0:
    for _c in range({ly.O_R1}, {ly.O_RX} + 1):
        _r = s[o[obj, _c] + e]
        if _r != 0:
            _st = _r >> {ly.STAMP_SHIFT}
            if _st < gs or _c == {ly.O_RX}:
                if cross:
                    ok = 0
            elif (_r & {ly.MAX_LID}) != lid and _st >= last:
                ok = 0
if ok == 1 and (mode & {ly.MB_W}) != 0:
    s[o[obj, {ly.O_W}] + e] = (m[{ly.M_NOW}] << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid
"""
    return f"""
def _cs_{short}f(i, obj, eb, site, lid, {STATE}):
    ok = 1
    mode = o[obj, {ly.O_MODE}]
    if mode != 0 and err[0] == 0:
        if (mode & {ly.MB_A}) != 0:
            ok = 0
        else:
            e = eb + i
            gs = m[{ly.M_GSTART}]
            cross = (mode & {ly.MB_CROSS}) != 0
            last = m[{ly.M_LAST_GLOBAL}] if cross else m[{ly.M_LAST_LOCAL}]
            w = 0
            if (mode & {ly.MB_W}) != 0:
                w = s[o[obj, {ly.O_W}] + e]
            wst = w >> {ly.STAMP_SHIFT}
            if (mode & {ly.MB_RACE}) != 0 and w != 0:
                if wst < gs:
                    if cross:
                        ok = 0
                elif (w & {ly.MAX_LID}) != lid and wst >= last:
                    ok = 0
{_ind(decide, 12)}    return ok + {_keep("m", "o", "s", "f", "err")}
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
            f[row, {ly.F_COUNT}] += 1
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
            f[row, {ly.F_COUNT}] = 1
        else:
            m[{ly.M_OVERFLOW}] += 1
    for j in range(m[{ly.M_NFIND}]):
        if f[j, {ly.F_KEY}] == m[{ly.M_LAST_KEY}]:
            f[j, {ly.F_COUNT}] += m[{ly.M_REPEAT}]
            m[{ly.M_REPEAT}] = 0
    m[{ly.M_OVERFLOW}] += m[{ly.M_REPEAT}]
    m[{ly.M_REPEAT}] = 0
    m[{ly.M_NPEND}] = 0
    m[{ly.M_LAST_KEY}] = 0
    return {_keep("m", "f")}
"""

RECORDERS = {"load": "_cs_ld", "store": "_cs_st", "atomic": "_cs_at"}
FAST = ("ld", "st")  # recorders with an inlinable fast path ``_cs_<short>f``


def sources() -> dict[str, str]:
    """Name -> source of every helper (recorders, their pointer variants, the flush)."""
    out = {"_cs_flush": _FLUSH}
    for short in _RULES:
        out[f"_cs_{short}"] = _recorder(short, pointer=False)
        out[f"_cs_{short}p"] = _recorder(short, pointer=True)
    for short in FAST:
        out[f"_cs_{short}f"] = _fast(short)
    return out


def register() -> None:
    """Add the helpers to the compiler's helper table (idempotent)."""
    for name, source in sources().items():
        hp._define(name, source)
