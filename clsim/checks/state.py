"""Run-time state of the checks: sizing the shadow memory per launch, reading findings back.

``allocate`` turns the compiled kernel's object list (its "shadow" sites) and the actual
buffers into the state arrays of ``layout`` — which records each object needs follows from how
the kernel accesses it (a buffer only ever stored needs just ``W``). ``collect`` turns the
findings table into ``Finding`` records. The in-kernel side is ``shadow``.
"""

from __future__ import annotations

import mmap
import warnings

import numpy as np

from clsim.checks import findings as fd
from clsim.checks import layout as ly
from clsim.errors import InvalidArgumentError
from clsim.instruments.base import LaunchInfo

_NOT_ACCESSES = {"barrier", "if", "while", "arith", "for", "cast", ""}
READ_ONLY = -1  # shadow-site width of a buffer parameter the kernel never writes


def allocate(info: LaunchInfo, races: bool, uninit: bool, raise_race: bool,
             raise_uninit: bool, locks: bool = False) -> list:
    """The state arrays ``[meta, objects, shadow, findings, log]`` for one launch (``locks``:
    with lock tracking, ``layout.M_LOCK_BASE``)."""
    nd = info.ndrange
    _check_limits(info)
    objs = fd.objects(info.sites)
    table = np.zeros((max(len(objs), 1), ly.OBJ_COLS), np.int64)
    usage = usage_of(info.sites, objs, info.kernel)
    lengths, shared, offsets = _placement(info, objs, table)
    for k in range(len(objs)):  # aliased buffers share one shadow: unite their usage
        usage[shared[k]] |= usage[k]
    for k, obj in enumerate(objs):
        table[k, ly.O_MODE] = 0 if obj.count == READ_ONLY else _mode(
            obj.space, usage[shared[k]], races, uninit)
    total = _place_records(table, lengths, shared, offsets, locks)
    slots = ly.M_SLOTS + ly.SLOT_WIDTH * len(info.sites)
    meta = np.zeros(slots + (nd.group_items if locks else 0), np.int64)
    meta[ly.M_LOCK_BASE] = slots if locks else 0  # then each work-item's held lock
    meta[ly.M_EPOCH_BITS] = ly.STAMP_BITS - max(1, (nd.total_groups - 1).bit_length())
    meta[ly.M_SG_SIZE] = info.subgroup_size
    meta[ly.M_RAISE_RACE] = raise_race
    meta[ly.M_RAISE_UNINIT] = raise_uninit
    meta[ly.M_G0], meta[ly.M_G1] = nd.global_size[0], nd.global_size[1]
    found = np.zeros((ly.HELD_ROW + 1, ly.FIND_COLS), np.int64)
    log = np.empty(2 * ly.LOG_CAPACITY, np.int64)
    return [meta, table, lazy_zeros(total), found, log]


def _place_records(table, lengths, shared, offsets, locks: bool) -> int:
    """Give each object's records (and, with ``locks``, their lock twins) their bases in the
    shadow; returns its size."""
    cols = list(ly.SHADOW_COLS)
    total = 1
    for k in range(len(lengths)):  # each shadow's leader first, then the objects sharing it
        if shared[k] == k:
            table[k, ly.O_LEN] = lengths[k]
            for col, need in _records(int(table[k, ly.O_MODE])):
                for c in (col, ly.LOCK_COLS.get(col)) if locks else (col,):
                    if need and c is not None:
                        table[k, c] = total
                        total += lengths[k]
    for k in range(len(lengths)):
        if shared[k] != k:
            lead = table[shared[k], cols]
            table[k, cols] = np.where(lead != 0, lead + offsets[k], 0)
    return total


_LAZY_BYTES = 1 << 20


def lazy_zeros(count: int) -> np.ndarray:
    """``count`` int64 zeros whose pages the OS maps (zeroed) on first touch: a threaded clean
    launch never touches the launch's own shadow, which ``np.zeros`` would clear (about 1 ms
    per 8 MB once the allocator serves large blocks from its heap)."""
    if count * 8 < _LAZY_BYTES:
        return np.zeros(count, np.int64)
    return np.frombuffer(mmap.mmap(-1, count * 8), np.int64)


def _check_limits(info: LaunchInfo) -> None:
    nd = info.ndrange
    group_bits = max(1, (nd.total_groups - 1).bit_length())
    limits = [
        (len(info.sites) > ly.MAX_SITE, f"up to {ly.MAX_SITE} access sites per kernel "
                                        f"(this one has {len(info.sites)})"),
        (nd.group_items > ly.MAX_LID + 1, f"work-groups of up to {ly.MAX_LID + 1} work-items"),
        (len(fd.objects(info.sites)) > ly.MAX_OBJECTS,
         f"up to {ly.MAX_OBJECTS} buffers and arrays per kernel"),
        (ly.STAMP_BITS - group_bits < ly.MIN_EPOCH_BITS,
         f"up to 2**{ly.STAMP_BITS - ly.MIN_EPOCH_BITS} work-groups per launch "
         f"(this one has {nd.total_groups})"),
    ]
    for broken, what in limits:
        if broken:
            raise InvalidArgumentError(f"{info.kernel}: the race checks support {what}; run "
                                       "with checks='default' or change the launch")


def _mode(space: str, use: int, races: bool, uninit: bool) -> int:
    load, store, atom = use & 1, use & 2, use & 4
    mode = 0
    if races and space != "private":
        if store:
            mode |= ly.MB_W | ly.MB_RACE
        if load and (store or atom):
            mode |= ly.MB_R | ly.MB_RACE
        if atom and (load or store):
            mode |= ly.MB_A | ly.MB_RACE
        if mode and space != "local":
            mode |= ly.MB_CROSS
    if uninit and space in ("local", "private"):
        mode |= ly.MB_W | ly.MB_UNINIT | (ly.MB_A if atom else 0)
    return mode


def _records(mode: int):
    cross = bool(mode & ly.MB_CROSS)
    r, a = bool(mode & ly.MB_R), bool(mode & ly.MB_A)
    return ((ly.O_W, bool(mode & ly.MB_W)), (ly.O_R1, r), (ly.O_R2, r), (ly.O_RX, r and cross),
            (ly.O_A1, a), (ly.O_A2, a), (ly.O_AX, a and cross))


def aliased_read_only(params: list[str], values: list, written: set[str]) -> tuple[str, ...]:
    """The parameters the kernel never writes whose memory overlaps a written parameter's."""
    arrays = {p: v for p, v in zip(params, values, strict=True) if isinstance(v, np.ndarray)}
    out = []
    for name, value in arrays.items():
        if name not in written and any(_overlap(value, arrays[w]) for w in written
                                       if w in arrays):
            out.append(name)
    return tuple(out)


def _span(value: np.ndarray) -> tuple[int, int]:
    return value.ctypes.data, value.ctypes.data + value.nbytes


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1


def _placement(info: LaunchInfo, objs, table) -> tuple[list[int], list[int], list[int]]:
    """Shadow elements per object; which object's shadow each one shares, and at which element
    offset. Buffers whose memory overlaps (one array passed twice, overlapping views of one
    array) are one memory: they share the shadow of their union, keyed by byte address."""
    values = dict(zip(info.params, info.values, strict=True))
    lanes = info.ndrange.group_items
    lengths, shared, offsets = [], list(range(len(objs))), [0] * len(objs)
    buffers = []
    for k, obj in enumerate(objs):
        item = np.dtype(obj.dtype).itemsize
        table[k, ly.O_ITEM] = item
        # a local object named as a parameter is a LocalMem argument: each group's bytes
        value = values.get(obj.name) if obj.space != "local" else None
        if isinstance(value, np.ndarray):
            lengths.append(value.size)
            table[k, ly.O_ADDR] = value.ctypes.data
            table[k, ly.O_NBYTES] = value.nbytes
            if obj.count != READ_ONLY:
                buffers.append((k, value))
            continue
        count = obj.count * lanes if obj.space == "private" else obj.count
        lengths.append(count)
        table[k, ly.O_NBYTES] = count * item
    for members in _clusters(buffers):
        _share(info, objs, members, lengths, shared, offsets)
    return lengths, shared, offsets


def _clusters(buffers: list) -> list[list]:
    """Groups of buffers whose byte ranges overlap (transitively), in address order."""
    out: list[list] = []
    end = -1
    for k, value in sorted(buffers, key=lambda kv: _span(kv[1])):
        start, stop = _span(value)
        if out and start < end:
            out[-1].append((k, value))
            end = max(end, stop)
        else:
            out.append([(k, value)])
            end = stop
    return [c for c in out if len(c) > 1]


def _share(info, objs, members, lengths, shared, offsets) -> None:
    """Let the first member's shadow cover the whole cluster; the others index into it."""
    lead, lead_value = members[0]
    base = _span(lead_value)[0]
    item = lead_value.itemsize
    if any(v.itemsize != item or (_span(v)[0] - base) % item for _k, v in members):
        names = ", ".join(f"'{objs[k].name}'" for k, _v in members)
        warnings.warn(f"{info.kernel}: buffers {names} share memory with different element "
                      "sizes or alignments; races between them are not looked for",
                      stacklevel=5)
        return
    stop = max(_span(v)[1] for _k, v in members)
    lengths[lead] = (stop - base) // item
    for k, value in members[1:]:
        shared[k] = lead
        offsets[k] = (_span(value)[0] - base) // item


def usage_of(sites, objs, kernel: str) -> list[int]:
    """Per object: bit 1 loaded, 2 stored, 4 atomically accessed (from the access sites).

    An access in a helper function names the helper's parameter, not the object, so it counts
    for every object of its address space: over-approximating only costs time.
    """
    by_name = {obj.name: k for k, obj in enumerate(objs)}
    usage = [0] * len(objs)
    for site in sites:
        kind, buffer, func, space = site[6], site[5], site[3], site[7]
        if kind in _NOT_ACCESSES or not buffer or kind.startswith(fd.SHADOW):
            continue
        bits = {"load": 1, "store": 2, "atomic": 4}.get(kind, 7)
        targets = [by_name[buffer]] if buffer in by_name else []
        if func != kernel or not targets:
            targets = [k for k, obj in enumerate(objs) if obj.space == space] + targets
        for k in targets:
            usage[k] |= bits
    return usage


class UninitializedReadWarning(UserWarning):
    """Uninitialised reads found with ``uninit="warn"`` (listed in ``result.findings``)."""


def collect(info: LaunchInfo, state: list, warn_uninit: bool) -> list:
    """The launch's findings; warns about what was not seen."""
    meta, found = state[0], state[3]
    nd = info.ndrange
    findings = [fd.from_record(row, info.sites, info.kernel, nd.local_size, nd.offset,
                               nd.work_dim, count=int(row[ly.F_COUNT]))
                for row in found[: int(meta[ly.M_NFIND])]]
    uninit = [f for f in findings if f.category == "uninit"]
    if uninit and warn_uninit:
        warnings.warn(UninitializedReadWarning(
            f"{info.kernel}: {len(uninit)} uninitialised-read site(s); the first: "
            f"{uninit[0].message}"), stacklevel=4)
    if meta[ly.M_LOST]:
        warnings.warn(f"{info.kernel}: the checks stopped part-way: more than "
                      f"{ly.LOG_CAPACITY} accesses of one work-item loop needed the full "
                      "rules; later findings were not looked for", stacklevel=4)
    if meta[ly.M_OVERFLOW]:
        warnings.warn(f"{info.kernel}: {int(meta[ly.M_OVERFLOW])} finding occurrences were "
                      f"not kept (more than {ly.MAX_FINDINGS} distinct findings, or more than "
                      f"{ly.PENDING} in one work-item loop)", stacklevel=4)
    return findings
