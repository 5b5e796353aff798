"""Turns the error record a generated kernel leaves behind into a clsim exception.

The compiled code only writes integers (error code, site, index, length, work-item); the site
table maps them back to file, line, buffer and source text, so messages name exactly where and
who, in the house shape ``<where>: <what>. <how to fix>``.
"""

from __future__ import annotations

from clsim.errors import (
    BarrierDivergenceError,
    DivisionByZeroError,
    MisalignedAccessError,
    OutOfBoundsError,
    SimulationError,
    SubGroupError,
)
from clsim.compiler.ctypes import NULL_BELOW
from clsim.runtime import record as rec


def _lid_tuple(lid: int, local: tuple[int, int, int], work_dim: int) -> tuple[int, ...]:
    lx = lid % local[0]
    ly = (lid // local[0]) % local[1]
    lz = lid // (local[0] * local[1])
    return (lx, ly, lz)[:work_dim]


def _gid_tuple(group, lid, enqueued, offset, work_dim):
    return tuple(g * e + l + o for g, e, l, o in zip(group, enqueued, lid, offset,
                                                     strict=False))[:work_dim]


def decode(row, sites, kernel: str, enqueued, offset, work_dim: int,
           decoders=None) -> SimulationError:
    """The exception for an error record ``row``. ``decoders`` maps the codes instruments
    write to their decoder ``(row, sites, kernel, enqueued, offset, work_dim)``, which reads
    the row in the instrument's own layout (``CODE``, ``SITE`` and the group fields shared)."""
    record = rec.ErrorRecord.from_row(row)
    if decoders and record.code in decoders:
        return decoders[record.code](row, sites, kernel, enqueued, offset, work_dim)
    code, index, length, lid = record.code, record.index, record.length, record.lid
    a, b = record.count_a, record.count_b
    site = sites[record.site]
    where = site.where
    lid_t = _lid_tuple(lid, record.group_size, work_dim)
    gid_t = _gid_tuple(record.group, lid_t, enqueued, offset, work_dim)
    group_t = record.group[:work_dim]
    fields = dict(kernel=kernel, file=site.file, line=site.line, source=site.text, group=group_t)
    src = f"\n    {site.text}" if site.text else ""
    if code in _SUBGROUP_CODES:
        return _subgroup_error(record, site, where, src, work_dim, gid_t, lid_t, fields)
    buffer = site.buffer
    if code in (rec.OOB_LOAD, rec.OOB_STORE, rec.OOB_ATOMIC):
        kind = {rec.OOB_LOAD: "load from", rec.OOB_STORE: "store to",
                rec.OOB_ATOMIC: "atomic update of"}[code]
        why = "negative index" if index < 0 else f"len {length}"
        hint = ("Guard the access with a bounds test such as 'if i < n'" if index >= 0 else
                "Negative indices do not wrap around in OpenCL; check the index arithmetic")
        if index < NULL_BELOW:  # a pointer variable holding None (C's NULL)
            why, hint = "through a null pointer", "Guard it with 'if p is not None:'"
        return OutOfBoundsError(
            f"{where}, gid={gid_t}, lid={lid_t}: {kind} {buffer}[{index}] out of bounds "
            f"({why}). {hint}.{src}",
            buffer=buffer, index=index, length=length, gid=gid_t, lid=lid_t,
            access={rec.OOB_LOAD: "load", rec.OOB_STORE: "store"}.get(code, "atomic"),
            **fields)
    if code in (rec.OOB_VIEW_LOAD, rec.OOB_VIEW_STORE) and index < NULL_BELOW:
        access = "load" if code == rec.OOB_VIEW_LOAD else "store"
        return OutOfBoundsError(
            f"{where}, gid={gid_t}, lid={lid_t}: {access} of {a} bytes through a null "
            f"pointer into '{buffer}' (a pointer variable holding None). Guard it with "
            f"'if p is not None:'.{src}", buffer=buffer, index=index, length=length + a - 1,
            gid=gid_t, lid=lid_t, access=access, **fields)
    if code in (rec.OOB_VIEW_LOAD, rec.OOB_VIEW_STORE):  # index: a byte offset
        access = "load" if code == rec.OOB_VIEW_LOAD else "store"
        return OutOfBoundsError(
            f"{where}, gid={gid_t}, lid={lid_t}: {access} of {a} bytes at byte offset {index} "
            f"of '{buffer}' through a view, out of bounds ('{buffer}' has "
            f"{length + a - 1} bytes). Guard the access with a bounds test, or check the "
            f"view's byte offset.{src}",
            buffer=buffer, index=index, length=length + a - 1, gid=gid_t, lid=lid_t,
            access=access, **fields)
    if code in (rec.OOB_IMAGE_READ, rec.OOB_IMAGE_WRITE):
        return _image_error(code, buffer, index, a, length, b, where, src, gid_t, lid_t,
                            fields)
    if code == rec.MISALIGNED and site.kind == "cast":  # a view pointer local assigned
        return MisalignedAccessError(
            f"{where}, gid={gid_t}, lid={lid_t}: misaligned pointer: a view of '{buffer}' "
            f"with {length}-byte elements at byte offset {index} (a cast pointer must be "
            f"aligned to its type's size; undefined in OpenCL C). Make the byte offset a "
            f"multiple of {length}, or read bytes (view(x, np.uint8, off)).{src}",
            buffer=buffer, index=index, length=length, gid=gid_t, lid=lid_t,
            access="cast", **fields)
    if code == rec.MISALIGNED:
        return MisalignedAccessError(
            f"{where}, gid={gid_t}, lid={lid_t}: misaligned {site.kind} of {length} bytes "
            f"through a view of '{buffer}' at byte offset {index} (an access through a "
            f"cast pointer must be aligned to its type's size; undefined in OpenCL C). Make "
            f"the byte offset a multiple of {length} (vectors: or read with vloadN/vstoreN, "
            f"which need only the element's alignment).{src}",
            buffer=buffer, index=index, length=length, gid=gid_t, lid=lid_t,
            access=site.kind, **fields)
    if code == rec.DIVERGENT_BRANCH:
        first_false = _lid_tuple(lid, record.group_size, work_dim)
        first_true = _lid_tuple(record.other_lid, record.group_size, work_dim)
        return BarrierDivergenceError(
            f"{where}, group={group_t}: barrier divergence: the condition of this '{site.kind}' "
            f"around a barrier is true for {a} work-items and false for {b} (e.g. lid="
            f"{first_true} true, lid={first_false} false). Every work-item of a group must "
            f"reach the same barriers; make the condition uniform.{src}",
            taken=a, not_taken=b, lid=first_false, **fields)
    if code == rec.DIVERGENT_RANGE:
        first = _lid_tuple(record.other_lid, record.group_size, work_dim)
        return BarrierDivergenceError(
            f"{where}, group={group_t}: barrier divergence: argument {index + 1} of the range "
            f"of this loop around a barrier is {a} for lid={first} but {b} for lid={lid_t}. "
            f"Every work-item of a group must run a barrier loop the same number of times; "
            f"make the bounds the same for the whole group.{src}",
            lid=lid_t, **fields)
    if code == rec.EXIT_BEFORE_BARRIER:
        return BarrierDivergenceError(
            f"{where}, group={group_t}: barrier divergence: {a} work-items returned before this "
            f"barrier and {b} reached it. Every work-item of a group must reach the barrier; "
            f"replace the early return with an if around the work after the barrier.{src}",
            taken=b, not_taken=a, **fields)
    if code == rec.DIV_ZERO:
        return DivisionByZeroError(
            f"{where}, gid={gid_t}, lid={lid_t}: integer division or remainder by zero "
            f"(undefined in OpenCL C; crashes CPU devices). Guard the divisor.{src}",
            gid=gid_t, lid=lid_t, **fields)
    if code == rec.SUBGROUP_ERROR:
        return SubGroupError(f"{where}, gid={gid_t}: {site.buffer}{src}", gid=gid_t, lid=lid_t,
                             **fields)
    if code == rec.COLLECTIVE_DIVERGENCE:
        return BarrierDivergenceError(
            f"{where}, group={group_t}: {site.buffer} reached by {a} work-items but not by {b}; "
            f"collectives must be reached by all work-items of the (sub-)group.{src}",
            taken=a, not_taken=b, **fields)
    return SimulationError(f"{where}: kernel error code {code}{src}", **fields)


def _image_error(code, image, x, y, width, height, where, src, gid, lid, fields):
    """A read with CLK_ADDRESS_NONE (or no sampler) or a write outside the image."""
    read = code == rec.OOB_IMAGE_READ
    coord = f"({x}, {y})" if height > 1 or y != 0 else f"{x}"
    size = f"{width}x{height}" if height > 1 else f"width {width}"
    hint = ("Guard the read, or read through a sampler with CLK_ADDRESS_CLAMP_TO_EDGE or "
            "CLK_ADDRESS_CLAMP (without a sampler, or with CLK_ADDRESS_NONE, the result is "
            "undefined in OpenCL)" if read else "Guard the write with the image's size "
            "(get_image_width)")
    return OutOfBoundsError(
        f"{where}, gid={gid}, lid={lid}: {'read of' if read else 'write to'} image "
        f"'{image}' at {coord} out of range ({size}). {hint}.{src}",
        buffer=image, index=x, length=width, gid=gid, lid=lid,
        access="load" if read else "store", **fields)


_SUBGROUP_CODES = (rec.SG_BRANCH, rec.SG_PARTIAL, rec.SG_NONUNIFORM_ARG, rec.SG_RANGE,
                   rec.WG_PARTIAL)

_RANGE_WHAT = {
    "sub_group_broadcast": ("lane", "it must be below the sub-group size; compute it from "
                                    "get_sub_group_size()"),
    "sub_group_shuffle": ("source lane", "every lane's index must be below the sub-group size"),
    "sub_group_shuffle_xor": ("source lane (lane ^ mask)", "the mask must keep every lane "
                                                           "inside the sub-group"),
    "work_group_broadcast": ("local id", "it must be below get_local_size(d)"),
}


def _subgroup_error(record, site, where, src, work_dim, gid_t, lid_t, fields):
    """Messages for sub-group / work-group collective errors."""
    code, index, length = record.code, record.index, record.length
    a, b, other, sg, dim = record.count_a, record.count_b, record.other_lid, record.subgroup, \
        record.dim
    local = record.group_size
    what = site.kind  # the builtin's name, or "if"/"while"/"for" for a masked condition
    group_t = fields["group"]
    scope = f"sub-group {sg}" if sg >= 0 else "the work-group"
    sg_fields = dict(subgroup=sg if sg >= 0 else None, **fields)
    if code == rec.SG_BRANCH:
        first_true = _lid_tuple(other, local, work_dim)
        return BarrierDivergenceError(
            f"{where}, group={group_t}: sub-group divergence: the condition of this '{what}' "
            f"around a sub-group collective is true for {a} lanes and false for {b} lanes of "
            f"{scope} (e.g. lid={first_true} true, lid={lid_t} false). All lanes of a "
            "sub-group must reach the same collectives; make the condition uniform within "
            f"each sub-group (e.g. depend on get_sub_group_id(), not the lane).{src}",
            taken=a, not_taken=b, lid=lid_t, **sg_fields)
    if code in (rec.SG_PARTIAL, rec.WG_PARTIAL):
        unit = "lanes" if code == rec.SG_PARTIAL else "work-items"
        return BarrierDivergenceError(
            f"{where}, group={group_t}: {what}() reached by {a} of {a + b} {unit} of {scope}; "
            f"the other {b} returned earlier. Collectives must be reached by all {unit} of the "
            f"{'sub-group' if sg >= 0 else 'work-group'}; replace the early return with an if "
            f"around the work after the collective.{src}",
            taken=a, not_taken=b, lid=lid_t, **sg_fields)
    if code == rec.SG_NONUNIFORM_ARG:
        first = _lid_tuple(other, local, work_dim)
        arg = "lane" if what == "sub_group_broadcast" else f"local id (dimension {dim})"
        return SubGroupError(
            f"{where}, group={group_t}: {what}()'s {arg} differs within {scope}: lid={first} "
            f"passes {a}, lid={lid_t} passes {b}. It must be the same for every "
            f"{'lane' if sg >= 0 else 'work-item'}; broadcast from a uniform value.{src}",
            lid=lid_t, value=b, expected=a, **sg_fields)
    noun, hint = _RANGE_WHAT.get(what, ("index", "keep it inside the sub-group"))
    if what == "work_group_broadcast":
        noun = f"{noun} (dimension {dim})"
    size = "local size" if sg < 0 else "sub-group size"
    return SubGroupError(
        f"{where}, gid={gid_t}, lid={lid_t}: {what}() {noun} {index} is out of range for "
        f"{scope} ({size} {length}); {hint}. (OpenCL leaves the result undefined; clsim stops "
        f"instead of returning garbage.){src}",
        lid=lid_t, gid=gid_t, index=index, length=length,
        **{k: v for k, v in sg_fields.items() if k not in ("lid", "gid")})
