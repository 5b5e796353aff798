"""Asynchronous work-group copies: ``async_work_group_copy``, ``wait_group_events``,
``prefetch``.

The model (docs/language.md, "Asynchronous copies"): the copy is done by the work-group as a
whole, each work-item moving its strided share (elements ``lid, lid + NL, ...``) where it
reaches the call, as plain instrumented loads of the source and stores of the destination;
``wait_group_events`` is a work-group barrier. So the copied data is there for every work-item
after the wait and not before: a read of another work-item's share before the wait is a race
for ``checks="races"``, as it is on a device. Every work-item must reach each copy with the
same arguments (OpenCL C 6.15.11): each call site counts its callers and compares their
(destination, source, count) with the first caller's, and the wait reports a copy reached by
only some work-items, or with other arguments, as a ``BarrierDivergenceError``. Events are
``int`` values (0); a wait completes every copy of the group, whatever events it is given.
``prefetch`` is a hint and does nothing.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.memory import emit_barrier
from clsim.compiler.collective_helpers import HELPERS as CG_HELPERS
from clsim.compiler.diagnostics import node_error
from clsim.runtime import record as rec

FAMILY = "memory"
MAX_COPY_SITES = 16  # per kernel: one row of the group's bookkeeping array each
_SPACES = {("local", "global"), ("global", "local")}
_SPELLING = {False: "async_work_group_copy(dst, src, n, event)",
             True: "async_work_group_strided_copy(dst, src, n, stride, event)"}
# _awc row per call site: callers, then the first caller's dst offset, src offset, count and
# stride, then the callers whose arguments differed, and the site naming the copy.
_DIFFER, _SITE = 5, 6
_SCRATCH = f"_awc = np.zeros(({MAX_COPY_SITES}, 7), np.int64)"


def _strided(call) -> bool:
    return call.func.resolved[1] == "async_work_group_strided_copy"


def _copy_typing(typer, call):
    strided = _strided(call)
    if len(call.args) != 4 + strided:
        raise node_error(call, f"{_SPELLING[strided]} takes a destination and a source "
                               "pointer, an element count" + (", the global side's stride"
                               if strided else "") + " and an event (0)")
    dst, src = typer.pointer(call.args[0]), typer.pointer(call.args[1])
    ints = [typer.expr(a) for a in call.args[2:]]
    if dst is None or src is None:
        return None
    if not isinstance(dst, ct.PtrT) or not isinstance(src, ct.PtrT) or dst.view or src.view:
        raise node_error(call, "async_work_group_copy(): dst and src must be buffers, local "
                               "arrays or pointers into them (p + k)")
    spaces = (dst.array.space, src.array.space)
    if spaces not in _SPACES:
        raise node_error(call, f"async_work_group_copy() from {spaces[1]} to {spaces[0]} "
                               "memory: OpenCL copies global to local or local to global")
    if dst.array.dtype != src.array.dtype:
        raise node_error(call, f"async_work_group_copy(): dst holds {ct.cname(dst.array.dtype)}"
                               f" but src holds {ct.cname(src.array.dtype)}")
    for t in ints:
        if t is not None and not ct.is_int(ct.promote(t)):
            raise node_error(call, f"{_SPELLING[strided]}: the count, stride and event must "
                                   "be integers")
    return "int32"


def _slot(gen, call) -> int:
    sites = gen.module.__dict__.setdefault("async_copy_sites", {})
    if id(call) not in sites:
        if len(sites) == MAX_COPY_SITES:
            raise node_error(call, f"more than {MAX_COPY_SITES} async_work_group_copy calls in "
                                   "one kernel; copy larger blocks with fewer calls")
        sites[id(call)] = len(sites)
    if _SCRATCH not in gen.allocs:
        gen.alloc(_SCRATCH)
    return sites[id(call)]


def _range_check(gen, base: str, off: str, n: str, stride: str, site: int, code: int) -> None:
    """Every element off, off + stride, ... (n of them) inside the array, checked once."""
    if not gen.bounds_checks:
        return
    last = f"{off} + ({n} - 1) * {stride}"
    bad = f"{off} if {off} < 0 else {last}"
    gen.pre(f"if {n} > 0 and ({off} < 0 or {last} >= {base}.shape[0]):\n"
            f"    {gen.helper('_oob')}(_err, {gen.const(code, 'int64')}, "
            f"{gen.const(site, 'int64')}, np.int64({bad}), np.int64({base}.shape[0]), _lid)\n"
            f"    {gen.err_return}")


def _record_call(gen, slot: int, site: int, values: tuple[str, ...]) -> None:
    """Count this caller; the first one's arguments are kept, later callers compared."""
    row = f"_awc[{slot}]"
    keep = "".join(f"\n    {row}[{1 + j}] = {v}" for j, v in enumerate(values))
    differs = " or ".join(f"{row}[{1 + j}] != {v}" for j, v in enumerate(values))
    gen.pre(f"if {row}[0] == 0:{keep}\n    {row}[{_SITE}] = {site}\n"
            f"elif {differs}:\n    {row}[{_DIFFER}] += 1\n{row}[0] += 1")


def _copy_lower(gen, call):
    if not gen.in_group_fn or gen.masks:
        raise node_error(call, "async_work_group_copy() is called by the whole work-group: "
                               "call it from the kernel body, outside sub-group control flow")
    dname, darr, doff = gen.pointer_offset(call.args[0])
    sname, sarr, soff = gen.pointer_offset(call.args[1])
    slot = _slot(gen, call)
    d, s, n, k, st = (gen.fresh(p) for p in ("_acd", "_acs", "_acn", "_ack", "_acst"))
    gen.pre(f"{d} = np.int64({doff})\n{s} = np.int64({soff})\n"
            f"{n} = np.int64({gen.typed(call.args[2], 'int64')})")
    strided = _strided(call)
    gen.pre(f"{st} = " + (f"np.int64({gen.typed(call.args[3], 'int64')})" if strided
                          else "np.int64(1)"))
    gen.typed(call.args[-1], "int64")  # evaluated for its checks; events carry nothing
    # The stride applies to the global side (OpenCL C 6.15.11).
    dstep, sstep = (st, "1") if darr.space == "global" else ("1", st)
    dbase, dlead = gen.array_base(dname, darr)
    sbase, slead = gen.array_base(sname, sarr)
    lsite = gen.module.site(call, sname, "load", sarr.space, sarr.dtype)
    ssite = gen.module.site(call, dname, "store", darr.space, darr.dtype)
    _range_check(gen, sbase, s, n, sstep, lsite, hp.ERR_OOB_LOAD)
    _range_check(gen, dbase, d, n, dstep, ssite, hp.ERR_OOB_STORE)
    what = (f"{call.func.resolved[1]}({dname} <- {sname}) with the same dst, src, n"
            + (" and stride" if strided else ""))
    _record_call(gen, slot, gen.module.site(call, what, "async_copy", "none", "none"),
                 (d, s, n, st))
    src_idx = gen.module.access(gen, lsite, sname, sarr, [f"{s} + {k} * {sstep}"], "load")
    dst_idx = gen.module.access(gen, ssite, dname, darr, [f"{d} + {k} * {dstep}"], "store")
    gen.pre(f"for {k} in range(_lid, {n}, _NL):\n"
            f"    {dbase}[{', '.join(dlead + dst_idx)}] = {sbase}[{', '.join(slead + src_idx)}]")
    return gen.const(0, "int32")


def _wait_rule(types, call):
    if len(types) != 2 or not ct.is_int(ct.promote(types[0])):
        raise node_error(call, "wait_group_events(n, events) takes the number of events and "
                               "an event (or an array of them)")
    return None


def _wait_cut(gen, item) -> None:
    """A work-group barrier; first every copy since the last wait is checked and forgotten."""
    emit_barrier(gen, item, fence=3)  # CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE
    if _SCRATCH not in gen.allocs:
        gen.alloc(_SCRATCH)
    if gen.module.bounds:
        gen.emit(f"for _aw in range({MAX_COPY_SITES}):\n"
                 f"    _awr = _awc[_aw, 0] % _NL\n"
                 f"    if _awr != 0 or _awc[_aw, {_DIFFER}] != 0:\n"
                 f"        _awb = _awc[_aw, {_DIFFER}] if _awr == 0 else _NL - _awr\n"
                 f"        {gen.helper('_cg_fail')}(_err, {rec.COLLECTIVE_DIVERGENCE}, "
                 f"_awc[_aw, {_SITE}], 0, _NL, 0, _NL - _awb, _awb, -1)\n"
                 f"        {gen.err_return}")
    gen.emit("_awc[:, :] = 0")


def _prefetch_rule(types, call):
    if len(call.args) != 2:
        raise node_error(call, "prefetch(p, n) takes a global pointer and an element count")
    return None


def _prefetch_lower(gen, call):
    return None


ENTRIES = [
    Builtin("async_work_group_copy", FAMILY, typing=_copy_typing, lower=_copy_lower,
            varying=True, effects=True, access="store",
            helpers=(CG_HELPERS["_cg_fail"],), c="e = async_work_group_copy(dst, src, n, e0)",
            py="e = async_work_group_copy(dst, src, n, 0)",
            types="global to local, local to global; any element type",
            note="every work-item copies its strided share; the data is there after "
                 "wait_group_events; same arguments in every work-item (checked)"),
    Builtin("async_work_group_strided_copy", FAMILY, typing=_copy_typing, lower=_copy_lower,
            varying=True, effects=True, access="store",
            helpers=(CG_HELPERS["_cg_fail"],),
            c="e = async_work_group_strided_copy(dst, src, n, stride, e0)",
            py="e = async_work_group_strided_copy(dst, src, n, stride, 0)",
            types="global to local, local to global; any element type",
            note="element k moves between global[k * stride] and local[k]; as "
                 "async_work_group_copy otherwise"),
    Builtin("wait_group_events", FAMILY, _wait_rule, cut="work", emit_cut=_wait_cut,
            helpers=(CG_HELPERS["_cg_fail"],), c="wait_group_events(n, &e)",
            py="wait_group_events(n, e)", types="events from async_work_group_copy",
            note="a work-group barrier; completes every copy of the group"),
    Builtin("prefetch", FAMILY, _prefetch_rule, lower=_prefetch_lower, c="prefetch(p, n)",
            note="a hint: does nothing"),
]
