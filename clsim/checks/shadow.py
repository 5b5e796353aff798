"""In-kernel helpers of the race and uninitialised-read checks (source text, Numba subset).

Generated kernels wrap the index of every access in a *recorder* call that returns the index.
Two tiers keep that cheap:

- ``_cs_<ld|st>q<l|g|p>`` (load/store on local/global/private memory): tiny, call-free, so Numba
  inlines them into the work-item loops. They settle the common case (no possible finding)
  against the element's shadow records and update them. When they cannot, they append the
  access to a log and switch the group to *deferred* mode, in which every later access of the
  same work-item loop is logged too, preserving the order;
- ``_cs_ld``/``_cs_st``/``_cs_at`` (and ``...p`` for helper-function parameters, matched to
  an object by the address they point at): the full rules, findings included. Kernels reach
  them (and ``_cs_end``) only through ``native``'s C entry point, so their code is compiled
  once per machine, never into a kernel. ``_cs_end`` replays the log
  through them after each work-item loop, and folds noted findings into the table.

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
def _conflict(rec: str, lcol: int | None) -> str:
    """Sets ``_c``: is the access in ``rec`` unordered with this one (and not this item's)?
    With lock tracking (``lb``), an access holding the lock ``rec``'s access held (its twin
    in ``lcol``) is ordered with it, unless either took or released it relaxed (``_lh``
    says why no lock ordered them)."""
    locks = "" if lcol is None else f"""
    if _c and lb != 0:
        _rk = s[o[obj, {lcol}] + e]
        if hl != 0 or _rk != 0:
            if hl != 0 and (hl >> 1) == (_rk >> 1) and (_st >= gs or (hl & {ly.LOCK_LOCAL}) == 0):
                if ((hl | _rk) & {ly.LOCK_WEAK}) == 0 and m[{ly.M_WEAK_RELEASE}] == 0:
                    _c = False
                else:
                    _lh = {ly.H_RELAXED_LOCK}
            else:
                _lh = {ly.H_LOCKSET}
"""
    return f"""
_c = False
_lh = 0
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
                    _c = False{locks}
"""


def _check(cols: tuple[int, ...], bit: int, kind: int) -> str:
    """Sets ``prev``/``pk`` to the first unordered record among ``cols`` (X only if cross)."""
    body = ""
    for n, col in enumerate(cols):
        step = (f"_p = s[o[obj, {col}] + e]\n{_conflict('_p', ly.LOCK_COLS.get(col))}"
                f"if _c:\n    prev = _p\n    pk = {kind}\n    ph = _lh\n")
        if n == 0:
            body = step
        elif n == 1:
            body += "else:\n" + _ind(step, 4)
        else:
            body += _ind("elif cross:\n" + _ind(step, 4), 4)
    return f"if prev == 0 and (mode & {bit}) != 0:\n" + _ind(body, 4)


def _note(cat: int, kind: int, prev: str, pk: str, ph: str = "0") -> str:
    """Notes a finding: into ``err`` (first-error mode) or the pending rows (report_all);
    ``ph``: the lock hints of the earlier access (``_conflict``)."""
    mix = (f"if {'not ' if kind == ly.K_ATOMIC else ''}({pk} == {ly.K_ATOMIC}):\n"
           f"        _info |= {ly.H_ATOMIC_MIX << 8}\n")
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
    {mix}_info |= {ph} << 8
if ({ph} & {ly.H_RELAXED_LOCK}) != 0:
    _info |= m[{ly.M_RELAXED}] << {ly.RELAXED_SHIFT}
if m[{ly.M_RAISE_RACE + cat - 1}] != 0:
{_ind(_raise(cat, prev), 4)}else:
    _key = {cat} + 4 * (min(site, _b) + 1 + (max(site, _b) + 1) * {ly.MAX_SITE + 2})
    _n = m[{ly.M_NPEND}]
    if _key == m[{ly.M_LAST_KEY}] and _n > 0:  # the same pair again: count it on its row
        f[{ly.MAX_FINDINGS} + _n - 1, {ly.F_COUNT}] += 1
    elif _n < {ly.PENDING}:
        _r = {ly.MAX_FINDINGS} + _n
        f[_r, {ly.F_COUNT}] = 1
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


def _raise(cat: int, prev: str) -> str:
    """First-error mode: a race goes straight into ``err``; an uninitialised read is held
    until the end of the work-item loop, because the write that makes it a race (a missing
    barrier: the writer runs later in the simulator's order) may still come."""
    if cat == ly.CAT_RACE:
        target, guard, done = "err", "err[0] == 0", ""
    else:
        target, guard = f"f[{ly.HELD_ROW}]", f"m[{ly.M_HELD}] == 0"
        done = f"    m[{ly.M_HELD}] = 1\n"
    return f"""
if {guard}:
    _t = {target}
    _t[0] = {ly.ERR_BASE + cat}
    _t[1] = site
    _t[2] = e
    _t[3] = obj
    _t[4] = lid
    _t[5] = {prev}
    _t[6] = _info
    _t[10] = _pg
    _t[14] = m[{ly.M_G0}]
    _t[15] = m[{ly.M_G1}]
{done}"""


def _uninit(kind: int) -> str:
    return f"""
if (mode & {ly.MB_UNINIT}) != 0:
    if (s[o[obj, {ly.O_W}] + e] >> {ly.STAMP_SHIFT}) < gs:
        if (mode & {ly.MB_A}) == 0 or (s[o[obj, {ly.O_A1}] + e] >> {ly.STAMP_SHIFT}) < gs:
{_ind(_note(ly.CAT_UNINIT, kind, "0", "0"), 12)}"""


def _stamp(target: str) -> str:
    return f"{target} = (m[{ly.M_NOW}] << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid\n"


def _put(c1: int, c2: int, cx: int) -> str:
    """Adds this access to a record set (1, 2, X); the lock twins (plain reads only, with
    lock tracking) move with their records."""
    twins = c1 in ly.LOCK_COLS
    l1, l2, lx = (ly.LOCK_COLS.get(c) for c in (c1, c2, cx))

    def move(col: int, lcol: int | None) -> str:
        code = f"s[o[obj, {col}] + e] = _r1\n"
        if twins:
            code += f"if lb != 0:\n    s[o[obj, {lcol}] + e] = s[o[obj, {l1}] + e]\n"
        return code

    held = f"if lb != 0:\n    s[o[obj, {l1}] + e] = hl\n" if twins else ""
    return f"""
_b1 = o[obj, {c1}] + e
_r1 = s[_b1]
if _r1 != 0:
    _st = _r1 >> {ly.STAMP_SHIFT}
    if _st < gs or (_r1 & {ly.MAX_LID}) != lid:
        if cross and _st < gs:
{_ind(move(cx, lx), 12)}{_ind(move(c2, l2), 8)}{_stamp("s[_b1]")}{held}"""


_W = ((ly.O_W,), ly.MB_W, ly.K_STORE)
_R = ((ly.O_R1, ly.O_R2, ly.O_RX), ly.MB_R, ly.K_LOAD)
_A = ((ly.O_A1, ly.O_A2, ly.O_AX), ly.MB_A, ly.K_ATOMIC)
# per access kind: its code, the record sets it conflicts with, the set it joins, uninit?
_RULES = {
    "ld": (ly.K_LOAD, (_W, _A), (ly.MB_R, (ly.O_R1, ly.O_R2, ly.O_RX)), True),
    "st": (ly.K_STORE, (_W, _R, _A), None, False),
    "at": (ly.K_ATOMIC, (_W, _R), (ly.MB_A, (ly.O_A1, ly.O_A2, ly.O_AX)), True),
}


def _recorder(short: str, pointer: bool) -> str:
    kind, conflicts, joins, uninit = _RULES[short]
    race = "".join(_check(*c) for c in conflicts)
    race += f"if prev != 0:\n{_ind(_note(ly.CAT_RACE, kind, 'prev', 'pk', 'ph'), 4)}"
    if joins is None:
        update = (f"if (mode & {ly.MB_W}) != 0:\n    s[o[obj, {ly.O_W}] + e] = "
                  f"(m[{ly.M_NOW}] << {ly.STAMP_SHIFT}) | (site << {ly.SITE_SHIFT}) | lid\n"
                  f"    if lb != 0:\n        s[o[obj, {ly.O_LW}] + e] = hl\n")
    else:
        update = f"if (mode & {joins[0]}) != 0:\n{_ind(_put(*joins[1]), 4)}"
    start = "prev = 0\npk = 0\nph = 0\n"  # the earlier access, its kind, its lock hints
    body = (_uninit(kind) if uninit else "") + \
        f"if (mode & {ly.MB_RACE}) != 0:\n{_ind(start + race, 4)}" + update
    if pointer:
        return _by_address(short)
    find = f"off = 0\nmode = o[obj, {ly.O_MODE}]\n"
    keep = _keep("m", "o", "s", "f", "err", "lg")
    return f"""
def _cs_{short}(i, width, obj, eb, site, lid, {STATE}):
{_ind(find, 4)}    if mode != 0 and err[0] == 0:
        if m[{ly.M_DEFER}] != 0:
            for k in range(width):
{_ind(_log(kind, "off + eb + i + k"), 16)}        else:
            gs = m[{ly.M_GSTART}]
            cross = (mode & {ly.MB_CROSS}) != 0
            last = m[{ly.M_LAST_GLOBAL}] if cross else m[{ly.M_LAST_LOCAL}]
            lasts = m[{ly.M_LAST_SUB}]
            sgs = m[{ly.M_SG_SIZE}]
            lb = m[{ly.M_LOCK_BASE}]
            hl = m[lb + lid] if lb != 0 else 0  # this work-item's lock (``_cs_lock``)
            for k in range(width):
                e = off + eb + i + k
                if cross:
{_ind(_range(f"o[obj, {ly.O_W}] + e"), 20)}{_ind(body, 16)}    return i + {keep}
"""


def _by_address(short: str) -> str:
    """``_cs_<short>p``: an access through a helper's parameter ``p`` (an address): the
    object holding that address and the element offset of ``p`` in it, then the recorder."""
    return f"""
def _cs_{short}p(i, width, p, eb, site, lid, {STATE}):
    obj = -1
    off = 0
    for k in range(o.shape[0]):
        if obj < 0:
            if o[k, {ly.O_ADDR}] <= p and p < o[k, {ly.O_ADDR}] + o[k, {ly.O_NBYTES}]:
                obj = k
                off = (p - o[k, {ly.O_ADDR}]) // o[k, {ly.O_ITEM}]
    if obj < 0:
        return i + {_keep("m", "o", "s", "f", "err", "lg")}
    return _cs_{short}(i, width, np.int64(obj), np.int64(eb + off), site, lid, {STATE})
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


RECORDERS = {"load": "_cs_ld", "store": "_cs_st", "atomic": "_cs_at"}
# Helpers the same for every kernel: compiled once into their own module (``native``).
FAST = ("ld", "st")  # recorders with fast paths ``_cs_<short>q<l|g|p>``
FAST_PATHS = tuple(f"_cs_{short}q{space}" for short in FAST for space in "lgp")
SHARED = ("_cs_ld", "_cs_st", "_cs_at", "_cs_ldp", "_cs_stp", "_cs_atp", "_cs_lock",
          "_cs_flush", "_cs_end", "_cs_cross_at", "_cs_cross", "_cs_defer", *FAST_PATHS)


def sources() -> dict[str, str]:
    """Name -> source of every recorder and fast path (group-level helpers: ``replay``)."""
    out = {}
    for short in _RULES:
        out[f"_cs_{short}"] = _recorder(short, pointer=False)
        out[f"_cs_{short}p"] = _recorder(short, pointer=True)
    for short in FAST:
        for space in "lgp":
            out[f"_cs_{short}q{space}"] = _fast(short, space)
    out["_cs_defer"] = _DEFER
    return out
