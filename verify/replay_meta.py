"""A failure folder's ``meta.json`` checked field by field before replay uses any of it.

A folder may have been crafted: every field replay reads must have the type the verifier
writes, or replay stops with "the folder is damaged" (exit 2) naming the field, before it
builds, launches or prints anything from it. A sub-group size is an int (a string ``"16"`` or
``"8 -I/etc"`` would reach the build options), sizes are positive ints, names are
identifiers, and a launch larger than ``MAX_WORK_ITEMS`` is refused (the simulator side of a
replay has no time limit). ``shown`` makes folder text safe to print (no terminal escapes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from clsim.errors import SimulationError

MAX_WORK_ITEMS = 1 << 24
MAX_SUBGROUP_SIZE = 1024
_IDENT = re.compile(r"[A-Za-z_]\w*")


def shown(value: Any, limit: int = 200) -> str:
    """Text from a folder, safe to print: control characters (terminal escapes) as ``\\x1b``."""
    text = str(value)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


def terminal_safe(text: str) -> str:
    """``text`` with its lines kept and every other control character escaped."""
    return "\n".join(shown(line, limit=len(line)) for line in str(text).split("\n"))


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ident(value: Any) -> bool:
    return isinstance(value, str) and _IDENT.fullmatch(value) is not None


def _sizes(value: Any) -> bool:
    return (isinstance(value, tuple) and 1 <= len(value) <= 3
            and all(_int(v) and v > 0 for v in value))


def _strings(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


def _mapping(key: Callable[[Any], bool], item: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, Mapping) and all(
        key(k) and item(v) for k, v in value.items())


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


# field -> (check, what it must be); launch fields as loaded (JSON lists are tuples).
_TOP: dict[str, tuple[Callable[[Any], bool], str]] = {
    "spec_name": (lambda v: isinstance(v, str) and v != "", "a kernel name"),
    "device": (lambda v: isinstance(v, str), "a device name"),
    "seed": (lambda v: v is None or _int(v) or isinstance(v, str), "null, an int or text"),
}
_LAUNCH: dict[str, tuple[Callable[[Any], bool], str]] = {
    "global_size": (_sizes, "1 to 3 positive ints"),
    "local_size": (_optional(_sizes), "null or 1 to 3 positive ints"),
    "forced_subgroup_size": (_optional(lambda v: _int(v) and 1 <= v <= MAX_SUBGROUP_SIZE),
                             f"null or an int from 1 to {MAX_SUBGROUP_SIZE}"),
    "subgroup_size": (_optional(_int), "null or an int"),
    "kernel_name": (_ident, "an OpenCL C identifier"),
    "params": (lambda v: isinstance(v, tuple) and all(_ident(p) for p in v),
               "a list of identifiers"),
    "shape": (_optional(_mapping(_ident, _int)), "a mapping of names to ints"),
    "input_seed": (_optional(_int), "null or an int"),
    "options": (_strings, "a list of strings"),
    "requires": (_strings, "a list of strings"),
    "cl_path": (_optional(lambda v: isinstance(v, str)), "null or a path"),
    "origin": (_optional(lambda v: isinstance(v, Mapping)), "a mapping"),
    "policies": (_optional(_mapping(_ident, lambda v: isinstance(v, str))),
                 "a mapping of buffer names to policies"),
    "default_policy": (lambda v: isinstance(v, str), "a policy"),
    "all_arrays": (lambda v: isinstance(v, bool), "true or false"),
    "aliases": (_optional(_mapping(_ident, _ident)), "a mapping of parameter names"),
}


def damaged(path: Any, field: str, value: Any, what: str) -> SimulationError:
    return SimulationError(f"{path}/meta.json: {field} is {shown(value, 60)!r}, not {what}. "
                           "The folder is damaged; save the case anew with clsim verify")


def check_meta(path: Any, meta: Mapping[str, Any], launch: Mapping[str, Any]) -> None:
    """Raise SimulationError ("the folder is damaged") for the first field of ``meta`` (and its
    ``launch``, as loaded) that replay would use and that is not what the verifier writes."""
    for fields, values, prefix in ((_TOP, meta, ""), (_LAUNCH, launch, "launch.")):
        for field, (check, what) in fields.items():
            if field in values and not check(values[field]):
                raise damaged(path, prefix + field, values[field], what)
    size = launch.get("global_size")
    if size is not None and math.prod(size) > MAX_WORK_ITEMS:
        raise SimulationError(
            f"{path}/meta.json: launch.global_size {shown(size)} is "
            f"{math.prod(size)} work-items; replay runs at most {MAX_WORK_ITEMS} (the "
            "simulator's side has no time limit). Rerun it by hand with verify.compare")
