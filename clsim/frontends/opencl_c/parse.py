"""OpenCL C to a typed clang AST: libclang's setup, the build options it honours, the include
rule, and clang's diagnostics as clsim errors.

Only ``-D``/``-U`` of a device build's options change the parse (the rest concern code
generation, which the simulator does itself). ``#include "name"`` is read from the kernel's own
folder only; every file is read here, validated, and handed to clang as an unsaved buffer, so
clang opens nothing on its own. This module writes no Python.
"""

from __future__ import annotations

import ctypes
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import clang.cindex as ci

from clsim.cl_includes import open_inside, resolve_includes
from clsim.errors import KernelCompileError
from clsim.frontends.opencl_c.prelude import PRELUDE_NAME, prelude_text

# OpenCL C 2.0 with clang's table-declared builtins; no default header (the wheel ships none)
# and no system include paths (translation reads only the kernel's folder).
CLANG_ARGS = ["-x", "cl", "-cl-std=CL2.0", "-cl-no-stdinc", "-nostdinc",
              "-Xclang", "-fdeclare-opencl-builtins", "-Xclang",
              "-cl-ext=+cl_khr_fp16,+cl_khr_fp64,+cl_khr_subgroups,+cl_intel_subgroups,"
              "+cl_intel_subgroups_short,+cl_khr_subgroup_extended_types,"
              "+cl_khr_subgroup_non_uniform_arithmetic,+cl_khr_subgroup_shuffle,"
              "+cl_khr_subgroup_shuffle_relative,+cl_khr_subgroup_clustered_reduce,"
              "+cl_khr_subgroup_ballot,+cl_khr_subgroup_non_uniform_vote,+cl_ext_float_atomics,"
              "+cl_khr_int64_base_atomics,+cl_khr_global_int32_base_atomics,"
              "+cl_khr_local_int32_base_atomics",
              "-Wno-everything"]

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include\b[ \t]*(.*)$', re.M)
_SEVERE = (ci.Diagnostic.Error, ci.Diagnostic.Fatal)


@dataclass
class Parsed:
    """A translation unit and where it came from."""

    tu: ci.TranslationUnit
    path: str          # the .cl file's name as errors show it
    lines: list[str]   # its lines, for the generated comments and error texts
    files: dict[str, str]  # every file read: main and includes


def defines_from_options(options: str) -> list[str]:
    """The clang arguments a device build's option string implies: its -D and -U."""
    try:
        words = shlex.split(options or "")
    except ValueError as exc:
        raise KernelCompileError(f"build options {options!r}: {exc}") from exc
    out, i = [], 0
    while i < len(words):
        word = words[i]
        if word in ("-D", "-U") and i + 1 < len(words):
            out.append(word + words[i + 1])
            i += 2
            continue
        if word.startswith(("-D", "-U")):
            out.append(word)
        i += 1
    return out


def _gather(text: str, here: Path, shown: str, root: Path, files: dict[str, str]) -> None:
    """Read every file ``text`` includes (recursively) for clang's unsaved files, each through
    ``clsim.cl_includes.open_inside``: the one include policy, also the device side's."""
    for match in _INCLUDE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        target = match.group(1).split("//")[0].strip()[1:-1]  # quoted: resolve_includes checked
        real, body = open_inside(root, here, target, shown, line)
        if str(real) not in files:
            files[str(real)] = body
            _gather(body, real.parent, real.name, root, files)


def parse_cl(source: str, path: str | None, options: str = "") -> Parsed:
    """Parse OpenCL C (``source``, read from ``path`` when given) with types on every node.
    A source a device compiler would reject raises KernelCompileError with clang's message at
    file:line:column."""
    folder = Path(path).resolve().parent if path else None
    name = str(Path(path).resolve()) if path else "kernel.cl"
    files = {name: source}
    # Directives are judged as the preprocessor sees them (splices, comments, trigraphs) and
    # anything but a quoted file inside the kernel's folder is refused before clang reads it.
    resolve_includes(source, folder, Path(name).name)
    if folder is not None:
        _gather(source, folder, Path(name).name, folder, files)
    files[PRELUDE_NAME] = prelude_text()
    args = [*CLANG_ARGS, *defines_from_options(options), "-include", PRELUDE_NAME]
    index = ci.Index.create()
    try:
        tu = index.parse(name, args=args, unsaved_files=list(files.items()),
                         options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    except ci.TranslationUnitLoadError as exc:
        raise KernelCompileError(f"{name}: clang could not parse the file ({exc})") from exc
    _raise_diagnostics(tu, name)
    return Parsed(tu, name, source.splitlines(), files)


def _raise_diagnostics(tu: ci.TranslationUnit, name: str) -> None:
    for diag in tu.diagnostics:
        if diag.severity in _SEVERE:
            loc = diag.location
            file = loc.file.name if loc.file else name
            short = Path(file).name
            raise KernelCompileError(
                f"{short}:{loc.line}:{loc.column}: {diag.spelling} (OpenCL C)",
                file=file, line=loc.line)


# libclang 18 exports the operator kinds; its Python binding does not wrap them yet.
_lib = ci.conf.lib
_lib.clang_getCursorBinaryOperatorKind.argtypes = [ci.Cursor]
_lib.clang_getCursorBinaryOperatorKind.restype = ctypes.c_int
_lib.clang_getCursorUnaryOperatorKind.argtypes = [ci.Cursor]
_lib.clang_getCursorUnaryOperatorKind.restype = ctypes.c_int
_lib.clang_getBinaryOperatorKindSpelling.argtypes = [ctypes.c_int]
_lib.clang_getBinaryOperatorKindSpelling.restype = ci._CXString
_lib.clang_getUnaryOperatorKindSpelling.argtypes = [ctypes.c_int]
_lib.clang_getUnaryOperatorKindSpelling.restype = ci._CXString
_lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
_lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
_lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
_lib.clang_EvalResult_getKind.restype = ctypes.c_int
_lib.clang_EvalResult_isUnsignedInt.argtypes = [ctypes.c_void_p]
_lib.clang_EvalResult_isUnsignedInt.restype = ctypes.c_uint
_lib.clang_EvalResult_getAsUnsigned.argtypes = [ctypes.c_void_p]
_lib.clang_EvalResult_getAsUnsigned.restype = ctypes.c_ulonglong
_lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
_lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
_lib.clang_EvalResult_getAsDouble.argtypes = [ctypes.c_void_p]
_lib.clang_EvalResult_getAsDouble.restype = ctypes.c_double
_lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
_lib.clang_getCursorPrintingPolicy.argtypes = [ci.Cursor]
_lib.clang_getCursorPrintingPolicy.restype = ctypes.c_void_p
_lib.clang_getCursorPrettyPrinted.argtypes = [ci.Cursor, ctypes.c_void_p]
_lib.clang_getCursorPrettyPrinted.restype = ci._CXString
_lib.clang_PrintingPolicy_dispose.argtypes = [ctypes.c_void_p]


def _spelling(cx) -> str:
    return ci._CXString.from_result(cx)


def binary_op(cursor: ci.Cursor) -> str:
    """``+``, ``<<=``, ``,``... of a binary or compound-assignment operator node."""
    return _spelling(_lib.clang_getBinaryOperatorKindSpelling(
        _lib.clang_getCursorBinaryOperatorKind(cursor)))


def unary_op(cursor: ci.Cursor) -> str:
    """``-``, ``!``, ``++`` (prefix or postfix: see ``is_postfix``), ``&``, ``*``..."""
    return _spelling(_lib.clang_getUnaryOperatorKindSpelling(
        _lib.clang_getCursorUnaryOperatorKind(cursor)))


_POSTFIX = {1, 2}  # CXUnaryOperator_PostInc, _PostDec


def is_postfix(cursor: ci.Cursor) -> bool:
    return _lib.clang_getCursorUnaryOperatorKind(cursor) in _POSTFIX


def pretty(cursor: ci.Cursor) -> str:
    """The expression as clang prints it (macros expanded): what a node means when its source
    text is a macro's name."""
    policy = _lib.clang_getCursorPrintingPolicy(cursor)
    try:
        return _spelling(_lib.clang_getCursorPrettyPrinted(cursor, policy))
    finally:
        _lib.clang_PrintingPolicy_dispose(policy)


def evaluate(cursor: ci.Cursor):
    """The compile-time value of a constant expression (int or float), else None."""
    result = _lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        kind = _lib.clang_EvalResult_getKind(result)
        if kind == 1:  # CXEval_Int
            if _lib.clang_EvalResult_isUnsignedInt(result):
                return int(_lib.clang_EvalResult_getAsUnsigned(result))
            return int(_lib.clang_EvalResult_getAsLongLong(result))
        if kind == 2:  # CXEval_Float
            return float(_lib.clang_EvalResult_getAsDouble(result))
        return None
    finally:
        _lib.clang_EvalResult_dispose(result)
