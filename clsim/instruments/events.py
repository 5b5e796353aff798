"""What an instrument's compile-time hooks receive: typed events and a small emit interface.

The code generator calls ``clsim.instruments.dispatch`` at fixed points; it turns its own
state into the records below, so an instrument never sees the emitter:

- ``AccessEvent``: one memory access (kind, space, buffer, index codes, width, the site with
  its file:line, which lanes run it);
- ``SyncEvent``: a work-group barrier, or a sub-group barrier or collective ordering the
  lanes of one sub-group;
- ``LoopEvent``: before and after a work-item ``for`` loop (an instrument may record once
  per loop what the accesses inside do per iteration);
- ``Emit``: what a hook may do with the generated code (emit lines, use a registered helper, a
  module constant, name an object in the site table, say that the code may set the error
  record) and what it may read (the kernel's parameters and arrays, its parsed source, the
  site table, the local size, JIT or not).

This module defines the records and the interface; it generates nothing itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.runtime.record import Site

# ``AccessEvent.lanes``: who runs the access where it is emitted.
ONE_ITEM = "item"  # inside a work-item loop (or a helper function): the work-item ``lid``
WHOLE_GROUP = "group"  # group-level code (uniform, hoisted): once, standing for every item


@dataclass(frozen=True)
class AccessEvent:
    """One memory access as the generated code will perform it.

    ``index`` holds one code expression per indexed dimension (the last varies fastest); a
    hook returns them, possibly wrapped, and the wrapped codes run exactly when the access
    does. ``array`` is the code of the array they index, after ``lead`` (leading index codes
    the access does not choose: the work-item's row of a private array). ``storage`` is
    "param" (a kernel argument), "larray" (a ``local_array``), "parray" (a ``private_array``)
    or "helper" (a parameter of a ``@clsim.func`` helper, whose object is found by address).
    ``param`` is the buffer's position among the kernel's parameters (``LaunchInfo.params``,
    ``values``) when ``storage`` is "param", else None. ``effect`` is what the access does to
    memory: "load", "store" or "rmw" (read-modify-write); an atomic's may be any of them
    (``atomic_load`` only reads, ``atomic_store`` only writes). ``values``: for an atomic,
    the codes of its value operands in source order (``atomic_cmpxchg``'s compare value and
    new value; the compare-exchange's expected value and desired value), evaluated before
    the index codes run, so a wrapper may compare them with the element's current value.
    """

    kind: str  # "load", "store" or "atomic" (read-modify-writes and exchanges)
    space: str  # "global", "constant", "local", "private"
    buffer: str
    storage: str
    dtype: str
    shape: tuple[int, ...] | None  # None: a buffer parameter (length known at run time)
    index: tuple[str, ...]
    width: int  # elements per access (vload4: 4)
    site: Site  # the site table's record: file, line, func, source text
    lanes: str  # ONE_ITEM or WHOLE_GROUP
    lid: str  # code of the linear local id of the lane running it ("0" at group level)
    array: str
    lead: tuple[str, ...] = ()
    param: int | None = None
    effect: str = "load"
    node: Any = None  # the access's node in the parsed source (``Emit.parsed``), if known
    values: tuple[str, ...] = ()

    @property
    def atomic(self) -> bool:
        return self.kind == "atomic"

    @property
    def in_kernel(self) -> bool:
        """In the kernel's own body (the work-group function), not in a helper function."""
        return self.storage != "helper"


@dataclass(frozen=True)
class SyncEvent:
    """A point that orders work-items: ``kind`` "barrier" (work-group, ``flags`` the code of
    its fence flags: 1 local, 2 global) or "subgroup" (a sub-group barrier or collective)."""

    kind: str
    site: Site
    flags: str = "0"


@dataclass(frozen=True)
class LoopEvent:
    """A ``for`` loop of work-item code in the kernel body, before or after it runs.

    ``node`` is its ``ast.For`` in the parsed source (target, range arguments, body: the
    accesses inside arrive later as ``AccessEvent``s with their ``node``); ``count`` is the
    code of its iteration count, valid at both hook points; ``var_type`` the type of its
    variable ("int64"...). Hooks run with the emit point just before the loop's ``for`` line
    (``start``) or just after the loop (its code then runs once per execution of the loop,
    after its last iteration).
    """

    node: Any
    count: str
    var_type: str
    start: bool


@dataclass(frozen=True)
class LaneLoopEvent:
    """A work-item ``for c in range(lid + U, stop, step)`` loop run lane-major
    (clsim/compiler/lane_emit.py): trip j runs every lane's iteration j, lanes innermost, so
    lane ``_lid``'s iterations are not consecutive in the code. Before the trips (``start``)
    and after them; its accesses reach ``on_access`` in between, once per trip and lane.
    Every access of its body is ``buf[P + c]`` on a 1-D array: ``offsets`` maps the id of
    its ``ast.Subscript`` to the group-level code of ``P``; ``first`` is the code of ``U``,
    ``span`` of ``stop - U`` and ``stride`` of ``step`` (at least 1), group-level names
    valid at both hook points: lane ``l`` ran ``ceil((span - l) / stride)`` iterations
    (none when that is below 1), ``c = U + l + j * step``.
    """

    node: Any
    var_type: str
    start: bool
    offsets: Any
    first: str
    span: str
    stride: str


@dataclass(frozen=True)
class LanePrefixEvent:
    """A region ``if lid < X: <body>`` run lane-major (clsim/compiler/lane_emit.py): lanes
    ``0 .. count - 1`` run the body, in work-item order, once each. Before the body
    (``start``) and after it; its accesses reach ``on_access`` in between. Every access of
    the body listed in ``offsets`` is ``buf[lid + P]`` on a 1-D array: ``offsets`` maps the
    id of its ``ast.Subscript`` to the group-level code of ``P``; ``count`` is the code of
    the lanes that run it, group-level and valid at both hook points."""

    start: bool
    offsets: Any
    count: str


@dataclass(frozen=True)
class LaneGridEvent:
    """A region of a 2-D group proven in range (clsim/compiler/proven_emit.py), run as
    ``for _ly in range(_L1): for _lx in range(_L0):``, every lane once, in work-item order.
    Before its loops (``start``) and after them; its accesses reach ``on_access`` in
    between, once per lane (and iteration). ``forms`` maps the id of an ``ast.Subscript``
    whose every index is affine in the local and global ids alone to ``(indices, None,
    None)``, where the access is in a top-level statement of the region; and to
    ``(indices, id(loop), trips)`` where it is in a top-level statement of a top-level
    ``for`` over a uniform ``range`` and its indices are affine in that loop's variable as
    well. ``indices`` holds one ``(origin, x, y, trip)`` per dimension: group-level codes,
    valid at both hook points, of the index at local id (0, 0) in the loop's first
    iteration and its steps along ``_lx``, ``_ly`` and the loop's iterations (``trips`` of
    them: its code). Such an access runs once for every lane (and iteration) unless its
    statement skips it (``and``/``or``, ``a if c else b``)."""

    start: bool
    forms: Any


@dataclass(frozen=True)
class ArrayInfo:
    """A memory object of the kernel: a buffer parameter or a local/private array.

    ``data`` is the code of the array holding it in the work-group function (a private array
    holds one row per work-item).
    """

    name: str
    type: Any  # clsim.compiler.ctypes.ArrayT: dtype, shape, space, ndim
    storage: str  # "param", "larray", "parray"
    data: str


class Emit:
    """The emit interface a hook receives; see the module docstring."""

    def __init__(self, gen):
        self._gen = gen

    # -- what a hook may read ---------------------------------------------------------------
    @property
    def jit(self) -> bool:
        return self._gen.module.jit

    @property
    def kernel(self) -> str:
        return self._gen.module.kernel_name

    @property
    def parsed(self):
        """The kernel's parsed source (``clsim.compiler.frontend.Parsed``: ``tree``,
        ``params``), for static analyses of what it may touch."""
        return self._gen.module.program.parsed

    @property
    def body(self) -> list:
        """The kernel body's statements as the emitter walks them (helpers with barriers
        inlined, names scoped): the nodes events carry are theirs."""
        return self._gen.module.body

    @property
    def local_size(self) -> tuple[int, int, int]:
        return self._gen.module.program.local_size

    @property
    def sites(self) -> list[Site]:
        """The site table so far (an event's ``site.id`` indexes it)."""
        return self._gen.module.sites

    @property
    def in_kernel(self) -> bool:
        """Emitting the work-group function (not a helper function)."""
        return self._gen.in_group_fn

    @property
    def in_work_item(self) -> bool:
        """Emitting work-item code (a work-item loop or a helper), not group-level code."""
        return self._gen.in_wi

    def arrays(self) -> list[ArrayInfo]:
        """Every memory object of the kernel: its array parameters (in order), then its local
        and private arrays (by name)."""
        gen = self._gen
        out = [ArrayInfo(n, t, "param", f"v_{n}")
               for n, t in gen.module.program.arg_types.items()
               if isinstance(t, ct.ArrayT) and gen.storage.get(n, "param") == "param"]
        for name, storage in sorted(gen.storage.items()):
            if storage in ("larray", "parray"):
                data = f"v_{name}__c" if storage == "parray" else f"v_{name}"
                out.append(ArrayInfo(name, gen.env[name], storage, data))
        return out

    # -- what a hook may do -----------------------------------------------------------------
    def emit(self, code: str) -> None:
        """Append lines (``\\n``-separated) at the current point and indentation."""
        self._gen.emit(code)

    def helper(self, name: str, source: str | None = None) -> str:
        """Use the runtime helper ``name`` and return the name to call. ``source`` (a
        top-level ``def`` in Numba's subset) defines it first, for helpers of an instrument's
        own; without it the name must be one the compiler's helper table knows."""
        if source is not None:
            hp.register_helper(name, source)
        return self._gen.helper(name)

    def const(self, value, dtype: str) -> str:
        """A module-level constant (folded by Numba; one compilation for all values)."""
        return self._gen.module.const(value, dtype)

    def name_object(self, node, name: str, kind: str, dtype: str, width: int) -> int:
        """Add a site for an object (kind of the instrument's own, space "none", so access
        counters skip it) and return its id; ``node.loc`` gives its file, line and text."""
        return self._gen.module.site(node, name, kind, "none", dtype, width=width)

    def lane_array(self, name: str, dtype: str, allocator: str | None = None) -> str:
        """A group function's array of one ``dtype`` element per work-item of the group
        (``name[_lid]``), allocated once per thread: uninitialised, or by the helper
        ``allocator`` (a name starting ``_unset_``, given the length), whose contents each
        group must leave as it found them."""
        gen = self._gen
        code = (f"{self.helper(allocator)}({gen.module.nl_max})" if allocator
                else gen.module.empty(gen.module.nl_max, dtype))
        line = f"{name} = {code}"
        if line not in gen.allocs:
            gen.alloc(line)
        return name

    def pre(self, code: str) -> None:
        """A line that runs before the statement being emitted (after its own earlier
        preparations), e.g. evaluating an access's index once into a local the hook
        returns as the index."""
        self._gen.pre(code)

    def may_fail(self) -> None:
        """The code just emitted may set the error record: the statement checks it after."""
        self._gen.checked()
