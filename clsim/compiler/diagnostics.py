"""Where a kernel's nodes came from, and the compile errors that name it.

Every pass raises ``compile_error(loc, what)``: ``<file>:<line> in <func>: <what>`` plus the
source line, as a ``KernelCompileError`` with structured fields. This module imports nothing
of the compiler, so the builtin table and the passes can all use it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from clsim.errors import KernelCompileError


@dataclass(frozen=True)
class Loc:
    """Where a node came from: file, absolute line, the function it was written in."""

    file: str
    line: int
    func: str
    text: str

    def __str__(self) -> str:
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line} in {self.func}"


def compile_error(loc: Loc | None, what: str) -> KernelCompileError:
    where = f"{loc}: " if loc else ""
    line = f"\n    {loc.text.strip()}" if loc and loc.text.strip() else ""
    return KernelCompileError(
        f"{where}{what}{line}",
        file=loc.file if loc else None,
        line=loc.line if loc else None,
        kernel=loc.func if loc else None,
    )


def node_error(node, what: str) -> KernelCompileError:
    """``compile_error`` at ``node``'s location (or none, for nodes the compiler made)."""
    return compile_error(getattr(node, "loc", None), what)


def builtin_name(call: ast.AST) -> str | None:
    """The builtin a call node calls (resolved by the front end), else None."""
    if isinstance(call, ast.Call):
        target = getattr(call.func, "resolved", None)
        if target and target[0] == "builtin":
            return target[1]
    return None


def internal_compile_error(kernel: str, module_path: str, exc: Exception) -> KernelCompileError:
    """A KernelCompileError for generated code that Numba refused: a clsim bug, reported in
    one paragraph instead of Numba's traceback."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc)
                 .__name__)
    return KernelCompileError(
        f"{kernel}: internal error: Numba could not compile the generated code ({first[:200]}). "
        f"This is a clsim bug: please report it with the generated module {module_path}. "
        "Meanwhile rewrite the construct it names, or run with jit=False to step through it",
        kernel=kernel)
