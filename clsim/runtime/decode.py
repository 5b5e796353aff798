"""Turns the error record a generated kernel leaves behind into a clsim exception.

The compiled code only writes integers (error code, site, index, length, work-item); the site
table maps them back to file, line, buffer and source text, so messages name exactly where and
who, in the house shape ``<where>: <what>. <how to fix>``.
"""

from __future__ import annotations

from clsim.compiler import helpers as hp
from clsim.errors import (
    BarrierDivergenceError,
    DivisionByZeroError,
    OutOfBoundsError,
    SimulationError,
    SubGroupError,
)


def _lid_tuple(lid: int, local: tuple[int, int, int], work_dim: int) -> tuple[int, ...]:
    lx = lid % local[0]
    ly = (lid // local[0]) % local[1]
    lz = lid // (local[0] * local[1])
    return (lx, ly, lz)[:work_dim]


def _gid_tuple(group, lid, enqueued, offset, work_dim):
    return tuple(g * e + l + o for g, e, l, o in zip(group, enqueued, lid, offset,
                                                     strict=False))[:work_dim]


def decode(record, sites, kernel: str, enqueued, offset, work_dim: int) -> SimulationError:
    code, site_id, index, length, lid = (int(v) for v in record[:5])
    a, b = int(record[5]), int(record[6])
    group = tuple(int(v) for v in record[7:10])
    local = tuple(int(v) for v in record[11:14])
    site = sites[site_id]
    file, line, func, text, buffer = site[1], site[2], site[3], site[4], site[5]
    where = f"{file.rsplit('/', 1)[-1]}:{line} in {func}"
    lid_t = _lid_tuple(lid, local, work_dim)
    gid_t = _gid_tuple(group, lid_t, enqueued, offset, work_dim)
    group_t = group[:work_dim]
    fields = dict(kernel=kernel, file=file, line=line, source=text, group=group_t)
    src = f"\n    {text}" if text else ""
    if code in (hp.ERR_OOB_LOAD, hp.ERR_OOB_STORE):
        kind = "load from" if code == hp.ERR_OOB_LOAD else "store to"
        why = "negative index" if index < 0 else f"len {length}"
        hint = ("Guard the access with a bounds test such as 'if i < n'" if index >= 0 else
                "Negative indices do not wrap around in OpenCL; check the index arithmetic")
        return OutOfBoundsError(
            f"{where}, gid={gid_t}, lid={lid_t}: {kind} {buffer}[{index}] out of bounds "
            f"({why}). {hint}.{src}",
            buffer=buffer, index=index, length=length, gid=gid_t, lid=lid_t,
            access="load" if code == hp.ERR_OOB_LOAD else "store", **fields)
    if code == hp.ERR_DIVERGENT_BRANCH:
        first_false = _lid_tuple(lid, local, work_dim)
        first_true = _lid_tuple(int(record[10]), local, work_dim)
        return BarrierDivergenceError(
            f"{where}, group={group_t}: barrier divergence: the condition of this '{site[6]}' "
            f"around a barrier is true for {a} work-items and false for {b} (e.g. lid="
            f"{first_true} true, lid={first_false} false). Every work-item of a group must "
            f"reach the same barriers; make the condition uniform.{src}",
            taken=a, not_taken=b, lid=first_false, **fields)
    if code == hp.ERR_EXIT_BEFORE_BARRIER:
        return BarrierDivergenceError(
            f"{where}, group={group_t}: barrier divergence: {a} work-items returned before this "
            f"barrier and {b} reached it. Every work-item of a group must reach the barrier; "
            f"replace the early return with an if around the work after the barrier.{src}",
            taken=b, not_taken=a, **fields)
    if code == hp.ERR_DIV_ZERO:
        return DivisionByZeroError(
            f"{where}, gid={gid_t}, lid={lid_t}: integer division or remainder by zero "
            f"(undefined in OpenCL C; crashes CPU devices). Guard the divisor.{src}",
            gid=gid_t, lid=lid_t, **fields)
    if code == hp.ERR_SUBGROUP:
        return SubGroupError(f"{where}, gid={gid_t}: {buffer}{src}", gid=gid_t, lid=lid_t,
                             **fields)
    if code == hp.ERR_COLLECTIVE_DIVERGENCE:
        return BarrierDivergenceError(
            f"{where}, group={group_t}: {buffer} reached by {a} work-items but not by {b}; "
            f"collectives must be reached by all work-items of the (sub-)group.{src}",
            taken=a, not_taken=b, **fields)
    return SimulationError(f"{where}: kernel error code {code}{src}", **fields)
