"""The builtin table: every OpenCL builtin clsim knows, described once.

One module per family (``workitem``, ``math``, ``integer``, ``relational``, ``conversion``,
``vector`` (+ ``vector_convert``, ``geometric``), ``half``, ``memory``, ``atomics``,
``collectives``, ``images``), each with a list ``ENTRIES`` of frozen
``Builtin`` records (``entry.py`` documents every field). Every pass reads this table and
nothing else: ``clsim.api`` exports a marker per public name, the front end reads ``cut``,
``effects`` and ``on_parse``, typing calls ``result`` (or ``typing``), the region builder reads
``cut`` and ``varying``, the code generator calls ``emit``/``lower``/``emit_cut`` and pulls in
``helpers``, instruments read ``flop`` and ``access``, and ``docs/language.md`` is generated
from ``c``/``py``/``types``/``note``.

Adding a builtin is one entry plus its test:

1. In the family's module, append a ``Builtin(name, family, result, emit, ...)`` to
   ``ENTRIES``: a typing rule (``rules.py`` has the common ones: ``need_float(name, n)``,
   ``common_type(name, n)``), an emitter (``call_helper(stem)`` calls ``_STEM_float32`` /
   ``_STEM_float64``, ``call_common(helper)``), the ``helper(...)`` sources it calls (plain
   Python in Numba's subset: the same code runs in JIT and no-JIT mode), ``flop`` if it is
   arithmetic, ``varying=True`` if its value differs per work-item for uniform arguments, and
   the documentation fields ``c``, ``types``, ``note``.
2. Add a test that runs it in a kernel against numpy (and its ``.cl`` twin on the devices).
3. Run ``python -m clsim.compiler.builtins.docs`` to refresh ``docs/language.md``.
4. Run ``python -m clsim.compiler.shared_helpers`` to regenerate
   ``clsim/runtime/helper_lib.py``, the helpers JIT kernels import compiled once per machine
   (``tests/unit/test_shared_helpers.py`` fails while it is stale).

``from clsim import NAME`` then works, and the name is usable in kernels.
"""

from __future__ import annotations

from clsim.compiler.builtins import (
    atomics,
    atomics_c11,
    collectives,
    common,
    conversion,
    conversion_modes,
    geometric,
    half,
    images,
    intbits,
    intdot,
    integer,
    math,
    math_more,
    math_parts,
    memory,
    memory_async,
    printf,
    registry,
    relational,
    vector,
    vector_convert,
    workitem,
)
from clsim.compiler.builtins.entry import FAMILIES, Builtin
from clsim.compiler.helpers import Helper
from clsim.compiler.structs import HELPERS as STRUCT_HELPERS

_MODULES = (workitem, math, math_more, math_parts, common, integer, intbits, intdot, relational,
            conversion, conversion_modes, vector, geometric, vector_convert, half, memory,
            memory_async, printf, atomics, atomics_c11, collectives, images)


def _build() -> tuple[dict[str, Builtin], dict[str, Helper]]:
    table: dict[str, Builtin] = {}
    helpers: dict[str, Helper] = {}
    for module in _MODULES:
        for entry in module.ENTRIES:
            if entry.name in table:
                raise ValueError(f"builtin {entry.name} is defined twice")
            table[entry.name] = entry
            for h in entry.helpers:
                if h.name in helpers and helpers[h.name] != h:
                    raise ValueError(f"runtime helper {h.name} has two different sources "
                                     f"(builtin {entry.name})")
                helpers[h.name] = h
    for h in STRUCT_HELPERS:  # struct field loads and stores (clsim.compiler.structs)
        helpers[h.name] = h
    return table, helpers


TABLE, HELPERS = registry.TABLE, registry.HELPERS
for _table, _built in zip((TABLE, HELPERS), _build(), strict=True):
    _table.update(_built)
PUBLIC_NAMES = tuple(name for name, entry in TABLE.items() if entry.public)
lookup = registry.lookup


def is_cut(name: str | None) -> bool:
    entry = lookup(name)
    return entry is not None and entry.cut is not None


def cut_level(name: str | None) -> str | None:
    """"work" (barrier, work_group_*), "sub" (sub_group_*) or None."""
    entry = lookup(name)
    return entry.cut if entry is not None else None


def is_varying(name: str | None) -> bool:
    entry = lookup(name)
    return entry is not None and entry.varying


__all__ = ["FAMILIES", "HELPERS", "PUBLIC_NAMES", "TABLE", "Builtin", "cut_level", "is_cut",
           "is_varying", "lookup"]
