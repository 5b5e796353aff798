"""C names to Python names: block scope, shadowing and reserved words.

C gives every block its own names; the Python twin has one namespace per function. A name
declared again while an outer one is visible (shadowing), or again with another type, gets a
fresh Python name (``t_2``); a name Python or the generated module reserves (``lambda``,
``range``, ``np``, a clsim builtin such as ``exp``) gets a trailing underscore.
"""

from __future__ import annotations

import builtins
import keyword

from clsim.compiler.builtins import PUBLIC_NAMES

RESERVED = set(keyword.kwlist) | set(dir(builtins)) | set(PUBLIC_NAMES) | {
    "np", "kernel", "func", "clsim", "view", "local_array", "private_array", "True", "False",
    "None"}


class Names:
    """One function's declarations: cursor -> Python name, with C's scopes."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)      # module-level names (functions, structs, tables)
        self.by_decl: dict = {}      # cursor hash -> Python name
        self.types: dict[str, object] = {}
        self.scopes: list[set[str]] = [set()]

    def push(self) -> None:
        self.scopes.append(set())

    def pop(self) -> None:
        self.scopes.pop()

    def declare(self, cursor, ctype) -> str:
        base = cursor.spelling
        if base in RESERVED or base in self.taken:
            base = base + "_"
        name, n = base, 1
        visible = set().union(*self.scopes[:-1])
        while name in self.taken or name in visible or \
                (name in self.types and self.types[name] != ctype) or name in self.scopes[-1]:
            n += 1
            name = f"{base}_{n}"
        self.types[name] = ctype
        self.scopes[-1].add(name)
        self.by_decl[cursor.hash] = name
        return name

    def get(self, cursor) -> str:
        try:
            return self.by_decl[cursor.hash]
        except KeyError:
            return cursor.spelling  # a program-scope constant: its module-level name
