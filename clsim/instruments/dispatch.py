"""Calls the instruments' compile-time hooks from the code generator, with typed events.

The code generator (``clsim.compiler.module.ModuleEmitter``) hands its emitter to these
functions at each hook point; they build the ``clsim.instruments.events`` records and an
``Emit`` over it, and call each instrument's ``on_*`` hook in registry order. An instrument
that still overrides one of the older hooks receiving the emitter itself (``access(gen, ...)``,
``group_start(gen)``...) is called through that hook instead, so it keeps working until it
moves to events.

Nothing here knows any particular instrument.
"""

from __future__ import annotations

import dataclasses

from clsim.instruments import events as ev
from clsim.instruments.base import Instrument


def _legacy(inst, hook: str) -> bool:
    """Whether ``inst`` overrides the emitter-receiving form of ``hook``."""
    return getattr(type(inst), hook, None) is not getattr(Instrument, hook)


def group_start(instruments, gen) -> None:
    for inst in instruments:
        if _legacy(inst, "group_start"):
            inst.group_start(gen)
        else:
            inst.on_group_start(ev.Emit(gen))


def function_start(instruments, gen, arrays: list[str]) -> None:
    for inst in instruments:
        inst.on_function_start(arrays, ev.Emit(gen))


def function_end(instruments, gen) -> None:
    for inst in instruments:
        inst.on_function_end(ev.Emit(gen))


def region_start(instruments, gen) -> None:
    for inst in instruments:
        if _legacy(inst, "region_start"):
            inst.region_start(gen)
        else:
            inst.on_region_start(ev.Emit(gen))


def region_end(instruments, gen) -> None:
    for inst in instruments:
        if _legacy(inst, "region_end"):
            inst.region_end(gen)
        else:
            inst.on_region_end(ev.Emit(gen))


def barrier(instruments, gen, stmt, site: int, flags: str) -> None:
    event = ev.SyncEvent("barrier", gen.module.sites[site], flags)
    for inst in instruments:
        if _legacy(inst, "barrier"):
            inst.barrier(gen, stmt, site, flags)
        else:
            inst.on_sync(event, ev.Emit(gen))


def subgroup_barrier(instruments, gen, stmt, site: int) -> None:
    event = ev.SyncEvent("subgroup", gen.module.sites[site])
    for inst in instruments:
        if _legacy(inst, "subgroup_barrier"):
            inst.subgroup_barrier(gen, stmt, site)
        else:
            inst.on_sync(event, ev.Emit(gen))


def access(instruments, gen, site: int, buffer: str, arrt, codes: list[str], kind: str,
           atomic: bool = False, values: tuple[str, ...] = ()) -> list[str]:
    """The index codes after every instrument has wrapped them, in registry order
    (``values``: the codes of an atomic's operands, ``AccessEvent.values``)."""
    event = None
    for inst in instruments:
        if _legacy(inst, "access"):
            codes = inst.access(gen, site, buffer, arrt, codes, kind, atomic)
            continue
        if event is None:
            event = _access_event(gen, site, buffer, arrt, kind, atomic, values)
        event = dataclasses.replace(event, index=tuple(codes))
        codes = list(inst.on_access(event, ev.Emit(gen)))
    return codes


def store_span(instruments, gen, site: int, buffer: str, arrt, first: str,
               count: str, lane0: str = "0") -> str | None:
    """The one instrument's ``store_span`` of stores at ``first + j`` by local ids
    ``lane0 + j``, or None (then each store is recorded by ``access``)."""
    if len(instruments) != 1 or _legacy(instruments[0], "access"):
        return None
    event = _access_event(gen, site, buffer, arrt, "store", False)
    return instruments[0].store_span(event, first, count, lane0)


def _access_event(gen, site: int, buffer: str, arrt, kind: str, atomic, values=()):
    storage = gen.storage.get(buffer, "param") if gen.in_group_fn else "helper"
    array, lead = gen.array_base(buffer, arrt)
    record = gen.module.sites[site]
    shape = tuple(arrt.shape) if arrt.shape else None
    params = list(gen.module.program.arg_types)
    param = params.index(buffer) if storage == "param" and buffer in params else None
    kind = "atomic" if atomic or kind not in ("load", "store") else kind
    return ev.AccessEvent(
        kind=kind, space=arrt.space, buffer=buffer, storage=storage, dtype=str(arrt.dtype),
        shape=shape, index=(), width=record.width, site=record,
        lanes=ev.ONE_ITEM if gen.in_wi else ev.WHOLE_GROUP, lid=gen.lid_code(),
        array=array, lead=tuple(lead), param=param, effect=_effect(kind, atomic),
        node=gen.module.site_nodes.get(site), values=tuple(values))


def _effect(kind: str, atomic) -> str:
    """``AccessEvent.effect``: ``atomic`` is True (a read-modify-write) or, for the C11
    atomics that move data one way, "load" or "store"."""
    if kind != "atomic":
        return kind
    return atomic if atomic in ("load", "store") else "rmw"


def loop(instruments, gen, node, range_tuple: str, var_type: str, start: bool) -> None:
    """Before or after a work-item ``for`` loop (``range_tuple``: the code of its range
    arguments); only in the kernel body, where the loop runs per work-item."""
    if not (gen.in_group_fn and gen.in_wi):
        return
    event = ev.LoopEvent(node, _trip_count(range_tuple, len(node.iter.args)), str(var_type),
                         start)
    for inst in instruments:
        inst.on_loop(event, ev.Emit(gen))


def lane_loop(instruments, gen, *, node, var_type: str, start: bool, offsets: dict,
              first: str, span: str, stride: str) -> None:
    """Before or after the trips of a work-item loop run lane-major (``LaneLoopEvent``)."""
    event = ev.LaneLoopEvent(node, str(var_type), start, offsets, first, span, stride)
    for inst in instruments:
        inst.on_lane_loop(event, ev.Emit(gen))


def lane_prefix(instruments, gen, *, start: bool, offsets: dict, count: str) -> None:
    """Before or after the body of ``if lid < X`` run lane-major (``LanePrefixEvent``)."""
    event = ev.LanePrefixEvent(start, offsets, count)
    for inst in instruments:
        inst.on_lane_prefix(event, ev.Emit(gen))


def handle(instruments, hook: str) -> bool:
    """Whether any of ``instruments`` does something at ``hook`` (overrides it): what only
    it reads need not be worked out."""
    return any(getattr(type(inst), hook) is not getattr(Instrument, hook)
               for inst in instruments)


def lane_grid(instruments, gen, *, start: bool, forms: dict) -> None:
    """Before or after the lane loops of a proven 2-D region (``LaneGridEvent``)."""
    event = ev.LaneGridEvent(start, forms)
    for inst in instruments:
        inst.on_lane_grid(event, ev.Emit(gen))


def _trip_count(t: str, nargs: int) -> str:
    """Code of the iteration count of ``range(*t)`` (``t`` a tuple of ``nargs`` int64s), in
    plain arithmetic: Numba's ``len(range(*t))`` costs more than a short loop's body."""
    if nargs == 1:
        return f"max({t}[0], 0)"
    if nargs == 2:
        return f"max({t}[1] - {t}[0], 0)"
    up = f"max(({t}[1] - {t}[0] + {t}[2] - 1) // {t}[2], 0)"
    down = f"max(({t}[0] - {t}[1] - {t}[2] - 1) // -{t}[2], 0)"
    return f"({up} if {t}[2] > 0 else {down})"


def flop(instruments, gen, kind: str, dtype) -> None:
    for inst in instruments:
        if _legacy(inst, "flop"):
            inst.flop(gen, kind, dtype)
        else:
            inst.on_flops(kind, str(dtype), None, ev.Emit(gen))


def flops(instruments, gen, kind: str, dtype, count: str) -> None:
    for inst in instruments:
        if _legacy(inst, "flops"):
            inst.flops(gen, kind, dtype, count)
        else:
            inst.on_flops(kind, str(dtype), count, ev.Emit(gen))
