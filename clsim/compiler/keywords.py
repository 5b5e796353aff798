"""OpenCL C's reserved words, refused as variable and parameter names in kernels.

A Python kernel is the twin of a ``.cl`` kernel: a variable named ``half`` or ``local`` runs
in the simulator while every device refuses the ``.cl`` (OpenCL C 6.1, 6.4, 6.7), so the two
would drift. The table is the one place these names are listed.
"""

from __future__ import annotations

import ast

from clsim.compiler.astwalk import walk
from clsim.compiler.diagnostics import compile_error

_SCALARS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half",
            "float", "double")

RESERVED = frozenset({
    # C99 keywords (those that are not also Python's)
    "auto", "case", "char", "const", "default", "do", "double", "enum", "extern", "float",
    "goto", "inline", "int", "long", "register", "restrict", "short", "signed", "sizeof",
    "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile",
    "_Bool", "_Complex", "_Imaginary",
    # OpenCL C address spaces, access and function qualifiers
    "global", "__global", "local", "__local", "constant", "__constant", "private",
    "__private", "generic", "__generic", "kernel", "__kernel", "read_only", "__read_only",
    "write_only", "__write_only", "read_write", "__read_write", "uniform", "pipe",
    # OpenCL C types (scalars, their vectors, and the other built-in types)
    "bool", "uchar", "ushort", "uint", "ulong", "half", "size_t", "ptrdiff_t", "intptr_t",
    "uintptr_t", "event_t", "sampler_t", "queue_t", "ndrange_t", "clk_event_t",
    "reserve_id_t", "image1d_t", "image1d_buffer_t", "image1d_array_t", "image2d_t",
    "image2d_array_t", "image2d_depth_t", "image3d_t", "atomic_int", "atomic_uint",
    "atomic_long", "atomic_ulong", "atomic_float", "atomic_double", "atomic_flag",
    *(f"{t}{n}" for t in _SCALARS for n in (2, 3, 4, 8, 16)),
})


def check_names(tree: ast.FunctionDef) -> None:
    """Refuse a parameter or assigned variable named as an OpenCL C keyword or type."""
    for arg in tree.args.args:
        if arg.arg in RESERVED:
            raise compile_error(getattr(arg, "loc", tree.loc), _message(arg.arg, "parameter"))
    for node in walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and \
                node.id in RESERVED:
            raise compile_error(node.loc, _message(node.id, "variable"))


def _message(name: str, what: str) -> str:
    return (f"'{name}' is a reserved word of OpenCL C, so the kernel's .cl twin cannot name "
            f"a {what} so; rename it (e.g. '{name}_')")
