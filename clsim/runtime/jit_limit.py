"""How large a generated function Numba is asked to compile, and what a compile that runs out of
stack or memory becomes.

Numba's compile time and memory grow faster than the function: its SSA pass scans a block once
per redefinition of a variable and recurses once per block, so a kernel of N straight-line
statements ``acc = acc + x[i + k] * c`` (ggml-style unrolling) compiled for N=250 in 20 s and
432 MB, raised RecursionError at N=500, MemoryError at N=2000 (5.6 GB) and was OOM-killed at
N=10000. A kernel whose largest generated function is longer than ``line_limit()`` lines runs
as plain Python instead (the same code, ``jit=False``), with a warning that says so; plain
Python compiles N=10000 in seconds. ``CLSIM_JIT_MAX_LINES`` moves the limit (the library's
largest kernels generate about 300 lines per function).
"""

from __future__ import annotations

import os
import re
import warnings

from clsim.errors import InvalidArgumentError, KernelCompileError

DEFAULT_LINE_LIMIT = 800  # N=260 statements as above: about 20 s and 450 MB to compile
_ENV = "CLSIM_JIT_MAX_LINES"
_TOP_LEVEL = re.compile(r"^\S")


def line_limit() -> int:
    text = os.environ.get(_ENV)
    if text is None:
        return DEFAULT_LINE_LIMIT
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidArgumentError(f"{_ENV}={text!r}: give a positive number of lines, e.g. "
                                   f"{_ENV}={DEFAULT_LINE_LIMIT}")
    return value


def longest_function(source: str) -> tuple[str, int]:
    """(name, lines) of the longest module-level function in generated ``source``."""
    best, name, start = ("", 0), "", None
    lines = source.splitlines()
    for number, line in enumerate([*lines, "end"]):
        if _TOP_LEVEL.match(line) and not line.startswith("@"):
            if start is not None and number - start > best[1]:
                best = (name, number - start)
            start = number if line.startswith("def ") else None
            name = line[4:line.find("(")] if start is not None else ""
    return best


def too_large(kernel: str, source: str) -> bool:
    """Whether ``source`` is too long for Numba; warns that the kernel runs as plain Python."""
    name, lines = longest_function(source)
    limit = line_limit()
    if lines <= limit:
        return False
    warnings.warn(
        f"{kernel}: the generated function {name} is {lines} lines, over the {limit} that "
        "Numba compiles in bounded time and memory (a long unrolled statement sequence), so "
        "the kernel runs as plain Python (jit=False: same results, slower). Roll the "
        f"unrolled statements into a loop to JIT it, or raise {_ENV}", RuntimeWarning,
        stacklevel=4)
    return True


def compile_failure(kernel: str, module_path: str, exc: BaseException) -> KernelCompileError:
    """Numba ran out of stack or memory compiling the kernel (below the line limit, e.g. a
    function of many small branches): a KernelCompileError saying so, not the raw error."""
    what = "ran out of stack (RecursionError)" if isinstance(exc, RecursionError) else \
        "ran out of memory (MemoryError)"
    return KernelCompileError(
        f"{kernel}: Numba {what} compiling the generated module {module_path}: the kernel is "
        f"too large for it to compile. Run it with jit=False, roll unrolled statements into "
        f"loops, or lower {_ENV} (now {line_limit()}) so that such kernels run as plain Python",
        kernel=kernel)
