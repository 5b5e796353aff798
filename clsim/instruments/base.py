"""The instrument protocol: analyses compiled into kernels only when a launch asks for them.

An instrument is a class. What it declares, the runtime reads; nothing else needs to know it:

- ``options``: the ``run()`` keywords it accepts, with their defaults (``traffic=False``...);
- ``result``: the ``RunResult`` attribute its ``finalize`` fills, ``result_default()`` its
  value when the instrument is off;
- ``decoders``: error codes (``clsim.runtime.record.INSTRUMENT_CODES`` and up) it writes into
  the error record, each with the function that turns such a record into an exception;
- ``serial_groups``: whether work-groups must run one at a time while it records;
- ``drives_groups``: whether it runs the launch's groups itself (``run_groups``), e.g. in
  threads over contiguous ranges, each with its own state;
- ``threads_share_state``: whether its state arrays may serve groups running in several
  threads at once (an instrument without state always may);
- ``python_threads``: whether its code is right when parallel groups run on Python threads,
  each calling a serial launcher (``clsim.runtime.threads``), rather than in Numba's parallel
  loop. ``numba.get_thread_id()`` is 0 in every such thread: an instrument with per-thread
  state gives each thread its own part of it (``thread_state``).

``create(config)`` returns an instance when the launch configuration (``LaunchConfig``, options
included) enables it, else None. The registry (``clsim.instruments.registry``) lists the
instrument classes explicitly.

At compile time the code generator calls the ``on_*`` hooks below at fixed points
(``clsim.instruments.dispatch``), each with a typed event and an ``Emit`` interface
(``clsim.instruments.events``), never the emitter itself; at run time ``allocate`` makes the
state arrays named by ``state_args`` (parameters of every generated function) and
``finalize`` turns them into the result. Generated-code names a hook may use: the state
arrays, ``_err`` (the error record, ``clsim.runtime.record``), and the ids: in a work-item
loop ``_lid`` is the linear local id, ``_lx/_ly/_lz`` the local ids, ``_gx/_gy/_gz`` the
group ids, ``_NG0.._NG2`` the number of groups, ``_L0.._L2`` this group's sizes, ``_NL``
their product. docs/checks.md ("Writing an instrument") shows a whole one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from clsim.instruments.events import (
    AccessEvent,
    Emit,
    LaneGridEvent,
    LaneLoopEvent,
    LanePrefixEvent,
    LoopEvent,
    SyncEvent,
)


@dataclass(frozen=True)
class LaunchInfo:
    """What a run-time hook knows about the launch."""

    config: Any  # clsim.runtime.config.LaunchConfig
    params: list[str]
    values: list  # kernel argument values (flattened buffers, numpy scalars)
    types: dict
    sites: tuple  # clsim.runtime.record.Site records

    @property
    def kernel(self) -> str:
        return self.config.kernel

    @property
    def ndrange(self):
        return self.config.ndrange

    @property
    def subgroup_size(self) -> int:
        return self.config.subgroup_size


class Instrument:
    """Base class: declares nothing, and every hook does nothing."""

    name: ClassVar[str] = "instrument"
    options: ClassVar[Mapping[str, Any]] = {}
    result: ClassVar[str | None] = None
    decoders: ClassVar[Mapping[int, Callable]] = {}
    serial_groups: ClassVar[bool] = False
    drives_groups: ClassVar[bool] = False
    threads_share_state: ClassVar[bool] = False
    python_threads: ClassVar[bool] = False

    @classmethod
    def create(cls, config) -> Instrument | None:
        """The instrument for this launch, or None when the configuration does not ask for it."""
        return None

    @staticmethod
    def result_default() -> Any:
        """``RunResult.<result>`` when the instrument is off."""
        return None

    def prepare(self, kernel, params: list[str], values: list) -> None:
        """See the launch's arguments before the kernel is compiled (what they reveal, such as
        two parameters sharing memory, may change the code: then ``key`` must say so)."""

    # -- compile time -----------------------------------------------------------------------
    def state_args(self) -> list[str]:
        """Names of the launch-level state arrays passed to every generated function."""
        return []

    def imports(self) -> list[str]:
        """Import lines the generated module needs at its top (after numpy and numba)."""
        return []

    def key(self) -> tuple:
        """Everything that changes the generated code (part of the compile cache key)."""
        return (self.name,)

    # Whether regions may run lane-major under this instrument (clsim/compiler/lane_emit.py):
    # its accesses are then recorded in lane order, and it must make the launch run again
    # with this off (``rec.REPLAY_LAUNCH``) when the order could show. Ids copied into
    # privates are then recomputed where read (``remat``) and straight-line helpers inlined
    # (``lane_inline``): an instrument that sees privates keeps the usual forms.
    lane_regions = False

    # Whether a region whose strided loop has a straight-line body may run lane-major under
    # this instrument, without ``lane_regions``: the region's statements before and after
    # the loop run lane by lane in work-item order, the loop's trips lanes innermost, with
    # ``on_lane_loop`` around them (the traffic counter, whose per-lane logs fill alike in
    # either order, records the loop's affine accesses after the trips). Ids are copied
    # into privates as usual, but for the ids themselves, recomputed where read.
    lane_loops = False

    def undo_copies(self) -> list:
        """(buffer, copy) pairs that undo a launch when copied back, taken after ``allocate``
        by a launch whose module may stop to run again with the usual forms
        (``lane_regions``; ``rec.REPLAY_LAUNCH``): the buffers the kernel may write, or
        none of them where running again rewrites them all alike."""
        return []

    def store_span(self, event: AccessEvent, first: str, count: str,
                   lane0: str = "0") -> str | None:
        """Group-level code recording ``count`` stores like ``event`` at once, element
        ``first + j`` by local id ``lane0 + j`` (a lane-major trip's stores); None: each is
        recorded by ``on_access`` in a lane loop (the default)."""
        return None

    def unrecorded_when(self, buffers: set[str]) -> str | None:
        """A group-level condition (code) under which this instrument records nothing for
        accesses to ``buffers`` (array names): a region touching only those may then run a
        copy compiled without the instrument (clsim/compiler/proven_emit.py). None: never
        (the default: an instrument observes every access)."""
        return None

    def on_group_start(self, out: Emit) -> None:
        """Emit per-group set-up at the top of the group function."""

    def on_function_start(self, arrays: list[str], out: Emit) -> None:
        """Emit code at the top of a helper function (``@clsim.func``), whose array
        parameters' codes are ``arrays`` (``AccessEvent.array`` of its accesses)."""

    def on_function_end(self, out: Emit) -> None:
        """The helper function begun by the last ``on_function_start`` is complete (helper
        functions may be emitted while another is: a call inside it)."""

    def on_region_start(self, out: Emit) -> None:
        """Emit code at the top of each work-item loop body (after ids are decoded)."""

    def on_region_end(self, out: Emit) -> None:
        """Emit code after each work-item loop (group level)."""

    def on_sync(self, event: SyncEvent, out: Emit) -> None:
        """Emit code where work-items are ordered: a work-group barrier (group level) or a
        sub-group barrier or collective (``event.kind``)."""

    def on_access(self, event: AccessEvent, out: Emit) -> tuple[str, ...]:
        """The index codes of one access (``event.index``), possibly wrapped: the wrapper runs
        exactly when the access does and must return the index unchanged."""
        return event.index

    def on_loop(self, event: LoopEvent, out: Emit) -> None:
        """Emit code before (``event.start``) or after a work-item ``for`` loop of the kernel
        body; the loop's accesses reach ``on_access`` in between."""

    def on_lane_loop(self, event: LaneLoopEvent, out: Emit) -> None:
        """Emit code before (``event.start``) or after the trips of a work-item loop run
        lane-major (only under ``lane_loops``); its accesses reach ``on_access`` in between,
        once per trip and lane."""

    def on_lane_prefix(self, event: LanePrefixEvent, out: Emit) -> None:
        """Emit code before (``event.start``) or after the body of ``if lid < X`` run
        lane-major (only under ``lane_loops``); its accesses reach ``on_access`` in between,
        once per lane."""

    def on_lane_grid(self, event: LaneGridEvent, out: Emit) -> None:
        """Emit code before (``event.start``) or after the lane loops of a 2-D region proven
        in range, for instruments that see it in work-item order; its accesses reach
        ``on_access`` in between, once per lane."""

    def on_flops(self, kind: str, dtype: str, count: str | None, out: Emit) -> None:
        """Count arithmetic of ``kind`` (add, mul, fma, div, sqrt, int...): one operation of
        the code being emitted (``count`` None), or ``count`` (a group-level code expression)
        done once for the group, such as the n - 1 adds inside ``sub_group_reduce_add``."""

    # -- compile time, older form ------------------------------------------------------------
    # These receive the code emitter itself. An instrument overriding one is called through it
    # instead of its ``on_*`` twin (``dispatch``); new instruments use the events above.
    def group_start(self, gen) -> None:
        """Older form of ``on_group_start``."""

    def region_start(self, gen) -> None:
        """Older form of ``on_region_start``."""

    def region_end(self, gen) -> None:
        """Older form of ``on_region_end``."""

    def barrier(self, gen, stmt, site: int, flags: str) -> None:
        """Older form of ``on_sync`` for a work-group barrier."""

    def subgroup_barrier(self, gen, stmt, site: int) -> None:
        """Older form of ``on_sync`` for a sub-group barrier or collective."""

    def access(self, gen, site: int, buffer: str, arrt, codes: list[str], kind: str,
               atomic: bool = False) -> list[str]:
        """Older form of ``on_access``."""
        return codes

    def flop(self, gen, kind: str, dtype: str) -> None:
        """Older form of ``on_flops`` for one operation."""

    def flops(self, gen, kind: str, dtype: str, count: str) -> None:
        """Older form of ``on_flops`` for a group-level count."""

    # -- run time ---------------------------------------------------------------------------
    def allocate(self, info: LaunchInfo) -> list:
        """The state arrays, aligned with ``state_args()``."""
        return []

    def thread_state(self, state: list, worker: int) -> list:
        """The state arrays Python thread ``worker`` (0, 1, ...) of a parallel launch passes
        to the launcher (``python_threads``); the same arrays unless the instrument keeps
        per-thread rows, which it then indexes with ``numba.get_thread_id()``."""
        return state

    def run_groups(self, run, threads: int) -> bool:
        """Run the launch's groups (only called when ``drives_groups``), after ``allocate``.
        ``run(start, count, state=None)`` runs groups ``start .. start + count - 1`` in order
        and raises the first error; ``state`` replaces this instrument's arrays for that call.
        It releases the GIL, so up to ``threads`` threads may call it at once. Whatever state
        ``finalize`` is given must describe the whole launch. Return False to let the runtime
        run the groups itself."""
        return False

    def finalize(self, info: LaunchInfo, state: list, result) -> Any:
        """The value of ``RunResult.<result>`` from the state after the launch."""
        return None
