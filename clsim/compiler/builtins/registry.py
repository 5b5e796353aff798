"""The built table itself, for the family modules that look builtins up while compiling.

``clsim.compiler.builtins`` imports every family module and then fills ``TABLE`` and
``HELPERS`` here; a family module that needs them at compile time (whether a half version
of a helper exists, whether an argument's call has effects) imports this module, which
imports nothing, instead of the package that is still importing it.
"""

from __future__ import annotations

from typing import Any

TABLE: dict[str, Any] = {}  # builtin name -> entry.Builtin
HELPERS: dict[str, Any] = {}  # runtime helper name -> clsim.compiler.helpers.Helper


def lookup(name: str | None):
    """The table entry of builtin ``name`` (None for anything else)."""
    return TABLE.get(name) if name is not None else None
