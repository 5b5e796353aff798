"""``docs/language.md``'s builtin tables, generated from the table.

The page is written by hand except the part between the two markers below, which this module
renders from the entries' ``c``/``py``/``types``/``note`` and traits. ``python -m
clsim.compiler.builtins.docs`` rewrites that part in place; a test fails when it is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from clsim.compiler.builtins import TABLE
from clsim.compiler.builtins.entry import FAMILIES, Builtin

BEGIN = "<!-- BEGIN GENERATED: builtin tables (python -m clsim.compiler.builtins.docs) -->"
END = "<!-- END GENERATED: builtin tables -->"
PAGE = Path(__file__).resolve().parents[3] / "docs" / "language.md"

_TITLES = {
    "work-item": "Work-item functions", "math": "Math and common functions",
    "integer": "Integer functions", "relational": "Relational functions",
    "conversion": "Conversions and reinterpretation", "vector": "Vectors",
    "half": "Half precision (cl_khr_fp16)",
    "memory": "Synchronisation and memory", "atomics": "Atomics",
    "collectives": "Sub-group and work-group collectives", "image": "Images",
}
_FLOP_WORDS = {"add": "1 add", "mul": "1 mul", "fma": "1 fma (2 flops)", "div": "1 div",
               "sqrt": "1 sqrt", "transcendental": "1 transcendental", "int": "1 int op"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _traits(entry: Builtin) -> str:
    parts = []
    if entry.cut == "work":
        parts.append("work-group cut")
    elif entry.cut == "sub":
        parts.append("sub-group cut")
    if entry.varying:
        parts.append("varying")
    if entry.access:
        parts.append(entry.access)
    if entry.flop:
        parts.append(_FLOP_WORDS[entry.flop])
    return ", ".join(parts)


def _row(entry: Builtin) -> str:
    c = entry.c or f"{entry.name}(...)"
    py = entry.py or c
    cells = [f"`{c}`", f"`{py}`", entry.types, _traits(entry), entry.note]
    return "| " + " | ".join(_cell(x) for x in cells) + " |"


def render() -> str:
    """The generated part of docs/language.md, markers included."""
    out = [BEGIN, ""]
    for family in FAMILIES:
        entries = [e for e in TABLE.values()
                   if e.family == family and e.public and e.listed]
        if not entries:
            continue
        out += [f"### {_TITLES[family]}", "",
                "| OpenCL C | Python | types | traits | notes |", "| --- | --- | --- | --- | --- |"]
        out += [_row(e) for e in entries]
        out.append("")
    out.append(END)
    return "\n".join(out)


def current(text: str) -> str:
    """``text`` (the page) with its generated part replaced by ``render()``."""
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render() + text[stop:]


def main() -> int:
    text = PAGE.read_text()
    new = current(text)
    if new != text:
        PAGE.write_text(new)
        print(f"updated {PAGE}")
    else:
        print(f"{PAGE} is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
