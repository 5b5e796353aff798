"""Findings of the race and uninitialised-read checks: records, messages, exceptions.

The compiled kernel leaves integers behind (in the engine's error record when the first finding
stops the launch, or in the findings table with ``report_all``); both have the same layout and
are turned into a ``Finding`` here, using the site table for files, lines and source text. A
``Finding`` knows how to describe itself as one readable block and how to become the matching
``clsim`` exception. Detection itself is in ``clsim.checks.shadow``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clsim.checks import layout as ly
from clsim.errors import DataRaceError, SimulationError, UninitializedReadError

KIND_NAMES = {ly.K_LOAD: "load", ly.K_STORE: "store", ly.K_ATOMIC: "atomic"}
CATEGORIES = {ly.CAT_RACE: "race", ly.CAT_UNINIT: "uninit"}


@dataclass(frozen=True)
class SiteRef:
    """A program point: where an access was written."""

    file: str
    line: int
    func: str
    text: str

    def __str__(self) -> str:
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line} in {self.func}"


@dataclass(frozen=True)
class WorkItem:
    """One work-item: its work-group, local id and global id (tuples of work_dim ints)."""

    group: tuple[int, ...]
    lid: tuple[int, ...]
    gid: tuple[int, ...]

    def __str__(self) -> str:
        return f"gid={self.gid}, lid={self.lid}"


@dataclass(frozen=True)
class Finding:
    """One problem the checks found.

    ``category`` is "race" or "uninit". ``sites``, ``work_items`` and ``kinds`` are aligned:
    entry 0 is the access that revealed the problem, entry 1 (races only) the earlier access it
    conflicts with. ``count`` is how many times this (category, site pair) was seen when
    findings were collected with ``report_all``.
    """

    category: str
    message: str
    buffer: str
    space: str
    index: int | tuple[int, ...]
    sites: tuple[SiteRef, ...]
    work_items: tuple[WorkItem, ...]
    kinds: tuple[str, ...]
    kernel: str = ""
    hint: int = 0
    count: int = 1

    @property
    def lines(self) -> tuple[int, ...]:
        return tuple(s.line for s in self.sites)

    def describe(self) -> str:
        """The message, then each access with its work-item and source line."""
        rows = [self.message]
        width = max(len(k) for k in self.kinds)
        for kind, site, item in zip(self.kinds, self.sites, self.work_items, strict=True):
            rows.append(f"    {kind:<{width}} at {site} ({item}): {site.text}")
        if self.count > 1:
            rows.append(f"    (seen {self.count} times at these sites)")
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.describe()

    def error(self) -> SimulationError:
        """The exception that reports this finding (DataRaceError / UninitializedReadError)."""
        site, item = self.sites[0], self.work_items[0]
        fields = dict(kernel=self.kernel, file=site.file, line=site.line, source=site.text,
                      buffer=self.buffer, space=self.space, index=self.index, gid=item.gid,
                      lid=item.lid, group=item.group, access=self.kinds[0], finding=self)
        if self.category == "uninit":
            return UninitializedReadError(self.describe(), **fields)
        other, other_item = self.sites[1], self.work_items[1]
        return DataRaceError(
            self.describe(), other_file=other.file, other_line=other.line,
            other_source=other.text, other_gid=other_item.gid, other_lid=other_item.lid,
            other_group=other_item.group, other_access=self.kinds[1],
            lines=(site.line, other.line), **fields)


# -- decoding ---------------------------------------------------------------------------------
def _gid(group, lid, enqueued, offset):
    return tuple(g * e + l + o for g, e, l, o in zip(group, enqueued, lid, offset, strict=False))


def _lid_tuple(lid: int, local) -> tuple[int, int, int]:
    l0, l1 = max(int(local[0]), 1), max(int(local[1]), 1)
    return (lid % l0, (lid // l0) % l1, lid // (l0 * l1))


def _index(e: int, obj: TrackedObject) -> int | tuple[int, ...]:
    shape = obj.shape
    if not shape:
        return e
    flat = e % int(np.prod(shape))
    idx = tuple(int(v) for v in np.unravel_index(flat, shape))
    return idx[0] if len(idx) == 1 else idx


def _ref(site) -> SiteRef:
    return SiteRef(site[1], int(site[2]), site[3], site[4])


SHADOW = "shadow:"  # kind prefix of the sites that name tracked objects (space "none")


@dataclass(frozen=True)
class TrackedObject:
    """A memory object of a compiled kernel as its "shadow" site describes it."""

    name: str
    space: str  # global, constant, local, private
    dtype: str
    count: int  # elements (per work-item for private arrays); state.READ_ONLY: never written
    shape: tuple[int, ...]


def objects(sites) -> list[TrackedObject]:
    """The tracked objects of a compiled kernel, in object-id order."""
    out = []
    for site in sites:
        kind = site[6]
        if isinstance(kind, str) and kind.startswith(SHADOW):
            shape = tuple(int(v) for v in site[4].split(",")) if site[4] else ()
            out.append(TrackedObject(site[5], kind[len(SHADOW):], site[8], int(site[9]), shape))
    return out


def _split_group(linear: int, ng0: int, ng1: int) -> tuple[int, int, int]:
    return (linear % ng0, (linear // ng0) % ng1, linear // (ng0 * ng1))


def from_record(rec, sites, kernel: str, enqueued, offset, work_dim: int,
                count: int = 1) -> Finding:
    """A ``Finding`` from an error record / findings row (layout in ``checks.layout``)."""
    rec = [int(v) for v in rec[:16]]
    cat = CATEGORIES[rec[0] - ly.ERR_BASE]
    obj = objects(sites)[rec[3]]
    buffer, space = obj.name, obj.space
    index = _index(rec[2], obj)
    info = rec[6]
    kind, pkind = info & 15, (info >> 4) & 15
    hint, sg_size = (info >> 8) & 255, max((info >> 16) & 0xFFFFFF, 1)
    relaxed = info >> ly.RELAXED_SHIFT  # 1 + the site of a relaxed lock atomic
    d = work_dim
    group = tuple(rec[7:10])
    lid = _lid_tuple(rec[4], rec[11:14])
    here = WorkItem(group[:d], lid[:d], _gid(group, lid, enqueued, offset)[:d])
    site = _ref(sites[rec[1]])
    target = f"{space} {buffer}[{index}]"
    where = f"{site}, gid={here.gid}, lid={here.lid}"
    if cat == "uninit":
        msg = _uninit_message(where, KIND_NAMES[kind], target, space, here)
        return Finding(cat, msg, buffer, space, index, (site,), (here,), (KIND_NAMES[kind],),
                       kernel, 0, count)
    prev = rec[5]
    gsize = (rec[14], rec[15])
    ng = [-(-g // e) for g, e in zip(gsize, enqueued, strict=False)]
    pgroup = _split_group(rec[10], ng[0], ng[1])
    plocal = [min(e, g - p * e) for e, g, p in zip(enqueued, gsize, pgroup, strict=False)]
    plid = _lid_tuple(prev & ly.MAX_LID, plocal)
    there = WorkItem(pgroup[:d], plid[:d], _gid(pgroup, plid, enqueued, offset)[:d])
    other = _ref(sites[(prev >> ly.SITE_SHIFT) & ly.MAX_SITE])
    msg = _race_message(where, KIND_NAMES[kind], KIND_NAMES[pkind], target, space, other,
                        there, hint, sg_size, same_site=other == site,
                        across_subgroups=rec[4] // sg_size != (prev & ly.MAX_LID) // sg_size,
                        relaxed=_ref(sites[relaxed - 1]) if relaxed else None)
    return Finding(cat, msg, buffer, space, index, (site, other), (here, there),
                   (KIND_NAMES[kind], KIND_NAMES[pkind]), kernel, hint, count)


def _uninit_message(where, kind, target, space, here) -> str:
    if space == "private":
        return (f"{where}: {kind} of {target}, which this work-item has not written yet "
                "(private arrays start undefined). Write the element before reading it.")
    return (f"{where}: {kind} of {target}, which no work-item of work-group {here.group} has "
            "written (local memory starts undefined in every work-group). Write the element "
            "first, with a barrier(CLK_LOCAL_MEM_FENCE) between the write and this read, or "
            "guard the read.")


def _race_message(where, kind, pkind, target, space, other, there, hint, sg_size,
                  same_site: bool = False, across_subgroups: bool = False,
                  relaxed: SiteRef | None = None) -> str:
    fence = "CLK_GLOBAL_MEM_FENCE" if space in ("global", "constant") else "CLK_LOCAL_MEM_FENCE"
    head = f"{where}: data race on {target}: this {kind} and a {pkind} at {other} ({there})"
    both_store = kind == pkind == "store"
    if hint & ly.H_CROSS_GROUP:
        why, fix = _cross_group(both_store)
    elif both_store and same_site:
        why, fix = _one_statement(across_subgroups, fence, sg_size)
    elif hint & ly.H_WRONG_FENCE:
        # Checked before H_SUBGROUP: a work-group barrier also synchronises each sub-group,
        # so both bits are set, and the barrier that is there is the one to name.
        other_fence = ("CLK_LOCAL_MEM_FENCE" if fence == "CLK_GLOBAL_MEM_FENCE"
                       else "CLK_GLOBAL_MEM_FENCE")
        why = (f" are separated only by a barrier({other_fence}), which does not order "
               f"{space} memory")
        fix = f"Add {fence} to that barrier's flags"
    elif hint & ly.H_SUBGROUP:
        why = (" are separated only by sub-group synchronisation (a sub_group_barrier or a "
               "sub-group collective such as sub_group_reduce_add), which orders the lanes of "
               f"one sub-group, but the two work-items are in different sub-groups (size "
               f"{sg_size})")
        fix = f"Put a work-group barrier({fence}) between the two accesses"
    else:
        why = " in the same work-group are not separated by a barrier"
        fix = f"Put barrier({fence}) between the two accesses"
        if both_store:
            fix += ", or let only one work-item store the element"
    if hint & ly.H_ATOMIC_MIX:
        why += "; one of them is atomic and the other is not (atomics exclude only atomics)"
        fix += ", or make both accesses atomic"
    why, fix = _lock_reason(hint, relaxed, why, fix)
    return f"{head}{why}. {fix}."


def _lock_reason(hint: int, relaxed: SiteRef | None, why: str, fix: str) -> tuple[str, str]:
    """What the locks built from atomics had to do with it (docs/checks.md, "Atomics and
    locks")."""
    if hint & ly.H_RELAXED_LOCK:
        where = f" at {relaxed}" if relaxed is not None else ""
        return (why + "; both hold the same lock, but the lock atomic" + where + " uses "
                "memory_order_relaxed, which orders no other access"), (
            fix + ", or take the lock with memory_order_acquire and release it with "
                  "memory_order_release")
    if hint & ly.H_LOCKSET:
        return (why + "; no lock is held by both (a lock built from atomics orders only "
                "accesses made while holding it)"), (
            fix + ", or make both accesses while holding the same lock")
    return why, fix


def _cross_group(both_store: bool) -> tuple[str, str]:
    why = (" run in different work-groups, which are not ordered within a launch, so no "
           "barrier can order them")
    if both_store:
        return why, ("Let a single work-group store each element (guard the store, e.g. on "
                     "get_group_id), or combine the groups' values with atomics or in a second "
                     "kernel launch")
    return why, ("Give each element a single owning work-group, use atomics for values shared "
                 "between groups, or split the work into two kernel launches")


def _one_statement(across_subgroups: bool, fence: str, sg_size: int) -> tuple[str, str]:
    """Two work-items storing one element from the same statement: a barrier cannot order two
    copies of one statement, so the fix is a guard (or one element per writer)."""
    if across_subgroups:
        return (f" are the same statement run by two sub-groups (size {sg_size}) of one "
                "work-group: each sub-group stores the element, and a barrier cannot order "
                "two runs of one statement"), (
            "Guard the store so one sub-group makes it (e.g. if get_sub_group_id() == 0), or "
            f"combine the sub-groups' values in local memory, barrier({fence}), then store "
            "once")
    return (" are the same statement run by two work-items of one work-group, which both "
            "store the element; a barrier cannot order two runs of one statement"), (
        "Guard the store so one work-item makes it (e.g. if get_local_id(0) == 0), give each "
        "work-item its own element, or combine the values with atomics or a reduction")
