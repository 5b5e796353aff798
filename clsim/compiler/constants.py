"""Module-level constants a kernel reads (numbers and ``__constant`` tables), checked again at
every launch.

The front end resolves a free name once (``frontend.parse`` caches the tree) and the generated
module embeds the value, so a kernel whose table was changed in place (``TABLE[1] = 7``) or
whose constant was rebound (``SCALE = 3``, ``TABLE = other``) would silently keep the old
value. ``rebound`` says whether a name now refers to something else than the parse saw (the
kernel is parsed again), ``fingerprint`` summarises the current values (tables by a CRC of
their bytes) for the compiled-kernel key, so a change compiles again and an unchanged table
costs one hash of its bytes per launch. Constants of helpers (``@clsim.func``) are included.
"""

from __future__ import annotations

import ast
import zlib
from dataclasses import dataclass

import numpy as np

_KINDS = ("const", "table")


@dataclass(frozen=True)
class Reference:
    """A free name (or attribute chain, ``mod.TABLE``) of ``function`` and what it resolved to."""

    function: object  # the Python function, whose globals and closure hold the name
    path: tuple[str, ...]
    resolved: object


_REFERENCES: dict[int, tuple[object, tuple[Reference, ...]]] = {}


def references(parsed) -> tuple[Reference, ...]:
    """Every constant the kernel ``parsed`` and the helpers it calls read, once per parse."""
    hit = _REFERENCES.get(id(parsed))
    if hit is not None and hit[0] is parsed:
        return hit[1]
    found: list[Reference] = []
    seen: set[int] = set()
    stack = [parsed]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend(item.callees.values())
        for node in ast.walk(item.tree):
            resolved = getattr(node, "resolved", None)
            if isinstance(resolved, tuple) and resolved[:1] and resolved[0] in _KINDS:
                path = _path(node)
                if path:
                    found.append(Reference(item.fn.fn, path, resolved[1]))
    refs = tuple(found)
    _REFERENCES[id(parsed)] = (parsed, refs)
    return refs


def _path(node) -> tuple[str, ...]:
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    return (node.id, *reversed(chain)) if isinstance(node, ast.Name) else ()


_MISSING = object()


def _current(ref: Reference):
    fn = ref.function
    name = ref.path[0]
    code = fn.__code__
    if name in code.co_freevars and fn.__closure__ is not None:
        try:
            value = fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:  # an empty cell
            return _MISSING
    else:
        value = fn.__globals__.get(name, _MISSING)
    for attr in ref.path[1:]:
        value = getattr(value, attr, _MISSING)
    return value


def _scalar_key(value) -> tuple:
    if isinstance(value, np.generic):
        return (value.dtype.str, value.tobytes())  # bytes: a NaN equals itself
    return (type(value).__name__, repr(value))


def rebound(parsed) -> bool:
    """Whether a constant's name now refers to another table, another number, or nothing: the
    kernel must be parsed again (its tree holds the old object)."""
    for ref in references(parsed):
        value = _current(ref)
        if isinstance(ref.resolved, np.ndarray):
            if value is not ref.resolved:
                return True
        elif value is _MISSING or isinstance(value, np.ndarray) or \
                _scalar_key(value) != _scalar_key(ref.resolved):
            return True
    return False


def fingerprint(parsed) -> tuple:
    """The current values of the constants the parse resolved, tables by dtype, shape and a
    CRC of their bytes (a table changed in place, or a name rebound, gives another
    fingerprint)."""
    out = []
    for ref in references(parsed):
        value = _current(ref)
        if isinstance(value, np.ndarray):
            data = np.ascontiguousarray(value)
            # CRC-32: 6x faster than blake2b on a 256 KB table, and certain to see a change of
            # up to 32 contiguous bits (one element of up to 4 bytes: TABLE[i] = v)
            out.append((ref.path, data.dtype.str, data.shape,
                        zlib.crc32(data.view(np.uint8).reshape(-1))))
        else:
            out.append((ref.path, _scalar_key(value)))
    return tuple(out)
