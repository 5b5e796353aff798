"""printf's output: the records a launch collected, formatted with C's format strings and
printed in a stable order (by global linear id; each work-item's lines in program order).

The generated code appends ``[site, global linear id, argument bits...]`` rows to the buffer
made by ``buffer()``; row 0 holds the count. ``clsim.compiler.builtins.printf`` types the
calls and says which argument is a float, a signed or an unsigned integer (and its width).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from clsim.compiler.builtins.printf import MAX_ARGS, SPEC

CAPACITY = 1 << 16  # lines per launch; more are counted and dropped with a warning


def buffer() -> np.ndarray:
    return np.zeros((CAPACITY + 1, 2 + MAX_ARGS), np.int64)


def _python_format(fmt: str) -> str:
    def spec(m):
        flags, width, precision, _length, conv = m.groups()
        if conv == "%":
            return "%%"
        conv = {"i": "d", "u": "d", "a": "s", "A": "s"}.get(conv, conv)
        return f"%{flags}{width or ''}{precision or ''}{conv}"

    return SPEC.sub(spec, fmt.replace("%%", "\0")).replace("\0", "%%")


def _value(bits: int, kind: tuple[str, int], conv: str):
    what, width = kind
    if what == "f":
        value = float(np.int64(bits).view(np.float64))
        return value.hex() if conv in "aA" else value
    if what == "u" or conv in "ouxX":
        return int(bits) & ((1 << width) - 1)
    return int(bits)


def format_lines(buf: np.ndarray, sites: dict) -> list[str]:
    count = int(buf[0, 0])
    rows = buf[1:min(count, CAPACITY) + 1]
    if count > CAPACITY:
        warnings.warn(f"printf: {count - CAPACITY} lines beyond the first {CAPACITY} were "
                      "dropped", stacklevel=3)
    order = np.argsort(rows[:, 1], kind="stable")
    lines = []
    for row in rows[order]:
        fmt, kinds = sites[int(row[0])]
        convs = [m.group(5) for m in SPEC.finditer(fmt) if m.group(5) != "%"]
        values = tuple(_value(int(row[2 + k]), kind, conv)
                       for k, (kind, conv) in enumerate(zip(kinds, convs, strict=True)))
        lines.append(_python_format(fmt) % values)
    return lines


def emit(buf: np.ndarray, sites: dict) -> list[str]:
    """Print the launch's printf lines (stdout) and return them."""
    lines = format_lines(buf, sites)
    sys.stdout.write("".join(lines))
    sys.stdout.flush()
    return lines
