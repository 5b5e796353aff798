"""The record that describes one builtin, and the helper-source record it carries.

Every pass reads the same record: the API exports a marker per public name, the type checker
calls ``result``, the region builder reads ``cut`` and ``varying``, the code generator calls
``emit`` (or ``lower``, or ``emit_cut`` at group level), instruments read ``flop`` and
``access``, and ``docs/language.md`` prints ``c``/``py``/``types``/``note``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clsim.compiler.helpers import Helper

FAMILIES = ("work-item", "math", "integer", "relational", "conversion", "vector", "half",
            "memory", "atomics", "collectives", "image")


@dataclass(frozen=True)
class Builtin:
    """One OpenCL builtin, described once.

    ``result(types, call)`` gives the OpenCL C result type for the argument types (``None``
    for a statement such as ``vstore4``) or raises a ``KernelCompileError`` at ``call.loc``;
    ``types`` holds ``None`` for no argument. Exactly one way to generate code is set:

    - ``emit(gen, codes, types, call)``: an expression from the arguments' code (already cast
      to nothing; cast them with ``gen.cast``); the usual case;
    - ``lower(gen, call)``: full control (work-item ids, memory builtins, atomics); may emit
      lines before the statement with ``gen.pre`` and return ``None`` for a statement;
    - ``emit_cut(gen, item)``: group-level code at a cut point (``cut`` is "work" or "sub").

    ``varying``: the result may differ between work-items for uniform arguments (ids, memory
    reads, collectives). ``flop``: the operation class instruments count per call
    (``clsim.traffic.model.FLOP_KINDS``). ``access``: "load", "store" or "atomic" for builtins
    that touch memory. ``effects``: refused under ``and``/``or``/``x if c else y``, where only
    some work-items would evaluate it. ``on_parse(parsed, call)`` checks a call once per parsed
    function. ``typing(typer, call)`` replaces ``result`` for declarations whose arguments are
    not values (``local_array(n, np.float32)``). ``helpers``: runtime helper sources the
    emitted code may call (by name, through ``gen.helper``). ``listed=False`` leaves the entry
    out of the generated docs when one row stands for a whole family (``float4`` for every
    ``TN`` constructor).
    """

    name: str
    family: str
    result: Callable | None = None
    emit: Callable | None = None
    lower: Callable | None = None
    cut: str | None = None
    emit_cut: Callable | None = None
    varying: bool = False
    flop: str | None = None
    access: str | None = None
    effects: bool = False
    on_parse: Callable | None = None
    typing: Callable | None = None
    helpers: tuple[Helper, ...] = ()
    public: bool = True
    keywords: tuple[str, ...] = ()  # keyword arguments its typing accepts (fill=...)
    listed: bool = True  # one row in docs/language.md (False: a sibling's row covers it)
    c: str = ""
    py: str = ""
    types: str = ""
    note: str = ""

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"builtin {self.name}: unknown family {self.family!r}")
        ways = [w for w in (self.emit, self.lower, self.emit_cut) if w is not None]
        if len(ways) > 1:
            raise ValueError(f"builtin {self.name}: set one of emit, lower, emit_cut")
        if (self.cut is None) != (self.emit_cut is None):
            raise ValueError(f"builtin {self.name}: a cut needs emit_cut and vice versa")
        if self.cut not in (None, "work", "sub"):
            raise ValueError(f"builtin {self.name}: cut must be 'work', 'sub' or None")
        if (self.result is None) == (self.typing is None):
            raise ValueError(f"builtin {self.name}: set exactly one of result, typing")
