"""``#include`` in OpenCL C sources that clsim hands a compiler: resolved here, never by it.

A ``.cl`` file may come from someone else (a failure folder, a file passed with ``--cl``), and
the device compiler would read whatever its ``#include`` lines name: ``/dev/zero`` (memory
without end), ``/dev/stdin`` (a hang), ``/etc/passwd`` (printed in the build log).
``resolve_includes(source, folder, name)`` returns the source with every ``#include "file"``
replaced by that file's text (between ``#line`` markers, so compiler messages keep their file
and line), and raises ``IncludeRefused`` naming ``file:line`` for anything else: an absolute
path, a ``..`` component, ``<...>`` or a macro, a link anywhere on the way, anything but a
regular file inside ``folder`` (or the folder of the file that includes it), files nested
deeper than ``MAX_DEPTH`` or larger than ``MAX_BYTES`` in all. ``folder=None`` (a source given
as text) refuses every include, so a resolved source passes through unchanged and a source
that still includes something never reaches a compiler. ``#include_next``, ``#import``,
``#embed`` and ``__has_include``/``__has_embed`` are refused too.

Directives are found the way the C preprocessor finds them (translation phases 1-3):
trigraphs (``??=`` is ``#``), backslash-newline splices, ``\\r`` line ends, comments (a comment
is one space, also one that spans lines: ``#/*\\n*/include`` is a directive) and string
literals (``"/*"`` opens no comment). A directive in an ``#if 0`` block is checked too.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from clsim.errors import IncludeRefused

__all__ = ["MAX_BYTES", "MAX_DEPTH", "IncludeRefused", "resolve_includes"]

MAX_DEPTH = 16
MAX_BYTES = 4 << 20
_NEWLINE = re.compile(r"\r\n|\r|\n")
_TRIGRAPHS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{", ">": "}",
              "-": "~"}
_TRIGRAPH = re.compile(r"\?\?([=/'()!<>-])")
_DIRECTIVE = re.compile(r"\s*(?:#|%:)\s*(include_next|include|import|embed)\b\s*(.*?)\s*")
_QUOTED = re.compile(r'"([^"]*)"')
# Without one of these words no directive reads or marks a file (a comment cannot split a
# word; only a splice can, and it needs a backslash or its trigraph): no scan needed.
_MAYBE = re.compile(r"include|import|embed|__has_|once|\\|\?\?")
_PROBE = re.compile(r"\b__has_(include|include_next|embed)\b")
_PRAGMA_ONCE = re.compile(r"\s*(?:#|%:)\s*pragma\s+once\s*")
_LINE = re.compile(r"\s*(?:#|%:)\s*line\s+(\d+)\b.*")
_FIX = ('Only #include "file" with a path relative to the kernel\'s folder (no "..", no '
        "links, a regular file) is allowed; paste the text into the .cl file instead")


@dataclass(frozen=True)
class _Line:
    """One line as the preprocessor sees it: ``code`` (comments blanked, splices joined) made of
    physical lines ``first``..``last`` (0-based)."""

    code: str
    first: int
    last: int


def _logical_lines(text: str) -> list[_Line]:
    physical = _NEWLINE.split(text)
    chars = "\n".join(_TRIGRAPH.sub(lambda m: _TRIGRAPHS[m.group(1)], p) for p in physical)
    lines: list[_Line] = []
    code: list[str] = []
    line = first = 0
    state = "code"  # code, line_comment, block_comment, string, char
    i, n = 0, len(chars)
    while i < n:
        c = chars[i]
        if c == "\\" and i + 1 < n and chars[i + 1] == "\n":  # a splice: one line goes on
            i += 2
            line += 1
            continue
        nxt = chars[i + 1] if i + 1 < n else ""
        if c == "\n":
            line += 1
            if state == "block_comment":
                i += 1
                continue
            lines.append(_Line("".join(code), first, line - 1))
            code, first = [], line
            state = "code"
        elif state == "code":
            if c == "/" and nxt == "/":
                state, c = "line_comment", " "
            elif c == "/" and nxt == "*":
                state, c = "block_comment", " "
                i += 1
            elif c in "\"'":
                state = "string" if c == '"' else "char"
            code.append(c)
        elif state == "block_comment":
            if c == "*" and nxt == "/":
                state = "code"
                i += 1
        elif state in ("string", "char"):
            code.append(c)
            if c == "\\" and nxt and nxt != "\n":
                code.append(nxt)
                i += 1
            elif c == ('"' if state == "string" else "'"):
                state = "code"
        i += 1
    lines.append(_Line("".join(code), first, line))
    return lines


def _refused(name: str, line: int, what: str, why: str) -> IncludeRefused:
    return IncludeRefused(f"{name}:{line}: {what} refused: {why}. {_FIX}.")


def open_inside(root: Path, here: Path, target: str, name: str, line: int) -> tuple[Path, str]:
    """(real path, text) of ``target`` included from folder ``here``, checked to stay in
    ``root`` without links and to be a regular file."""
    what = f'#include "{target}"'
    if not target or os.path.isabs(target) or target.startswith("~"):
        raise _refused(name, line, what, "an absolute path")
    parts = [p for p in re.split(r"[\\/]+", target) if p not in ("", ".")]
    if ".." in parts:
        raise _refused(name, line, what, 'a ".." component leaves the kernel\'s folder')
    path = here
    for part in parts:
        path = path / part
        try:
            mode = path.lstat().st_mode
        except OSError as err:
            raise _refused(name, line, what, f"{path}: {err.strerror or err}") from None
        if stat.S_ISLNK(mode):
            raise _refused(name, line, what, f"{path} is a link")
    real = Path(os.path.realpath(path))
    if root not in real.parents:
        raise _refused(name, line, what, f"{real} is outside {root}")
    try:  # O_NONBLOCK: a fifo swapped in after the checks must not hang the open
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise _refused(name, line, what, f"{path}: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(name, line, what, f"{path} is not a regular file")
        if info.st_size > MAX_BYTES:
            raise _refused(name, line, what, f"{path} is larger than {MAX_BYTES} bytes")
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return real, data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _refused(name, line, what, f"{path} is not UTF-8 text ({err.reason})") from None


class _Resolver:
    def __init__(self, root: Path | None):
        self.root = root
        self.total = 0
        self.once: set[Path] = set()

    def resolve(self, text: str, name: str, here: Path | None, stack: tuple[Path, ...]) -> str:
        if not _MAYBE.search(text):
            return text
        physical = _NEWLINE.split(text)
        out: list[str] = []
        done = 0
        shift = 1  # line number minus physical index: 1-based, moved by #line (a prefix's)
        for logical in _logical_lines(text):
            number = logical.first + shift
            marker = _LINE.fullmatch(logical.code)
            if marker:
                shift = int(marker.group(1)) - logical.last - 1
            probe = _PROBE.search(logical.code)
            if probe:
                raise _refused(name, number, f"__has_{probe.group(1)}",
                               "it looks for files outside the kernel")
            if stack and _PRAGMA_ONCE.fullmatch(logical.code):
                self.once.add(stack[-1])
            match = _DIRECTIVE.fullmatch(logical.code)
            if not match:
                continue
            directive, argument = match.groups()
            what = f"#{directive} {argument}".strip()
            if directive != "include":
                raise _refused(name, number, what, f"#{directive} is not supported")
            quoted = _QUOTED.fullmatch(argument)
            if quoted is None:
                raise _refused(name, number, what,
                               'only a quoted "file" name is resolved (not <...> or a macro)')
            if self.root is None or here is None:
                raise _refused(name, number, what,
                               "a source given as text has no folder to include from (pass "
                               "the .cl file's path)")
            real, body = open_inside(self.root, here, quoted.group(1), name, number)
            if real in stack:
                raise _refused(name, number, what, "it includes itself")
            if len(stack) >= MAX_DEPTH:
                raise _refused(name, number, what, f"nested deeper than {MAX_DEPTH}")
            self.total += len(body)
            if self.total > MAX_BYTES:
                raise _refused(name, number, what,
                               f"the included files exceed {MAX_BYTES} bytes in all")
            out += physical[done:logical.first]
            done = logical.last + 1
            if real in self.once:
                out.append("")
                continue
            inner = self.resolve(body, quoted.group(1), real.parent, (*stack, real))
            out += [f'#line 1 "{_c_string(quoted.group(1))}"', inner,
                    f'#line {done + 1} "{_c_string(name)}"']
        if done == 0:
            return text
        return "\n".join(out + physical[done:])


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def resolve_includes(source: str, folder: str | os.PathLike[str] | None,
                     name: str = "<source>") -> str:
    """``source`` with each ``#include "file"`` replaced by the file's text; ``folder`` is the
    kernel's own folder (None: the source came as text, and no include is allowed); ``name``
    is the file name used in errors and ``#line`` markers. Raises ``IncludeRefused`` with
    ``name:line`` for an include that could read anything outside ``folder``."""
    root = None if folder is None else Path(os.path.realpath(folder))
    here = root
    return _Resolver(root).resolve(source, name, here, ())
