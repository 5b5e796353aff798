"""``clsim translate FILE.cl [-o OUT.py] [--options "-D N=4"]``: the Python kernels the OpenCL C
front end makes of a ``.cl`` file (docs/opencl-c.md), to read, edit or step through in pdb.

Writes the module (stdout without ``-o``); a kernel the Python language cannot express yet is
written as a comment naming the construct and its line, and listed on stderr. Exit 2 when the
file is not valid OpenCL C (clang's message, file:line:column), 0 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

from clsim.errors import KernelCompileError

HELP = "write the clsim Python kernels of an OpenCL C file"


def add_arguments(parser) -> None:
    parser.add_argument("file", type=Path, help="the .cl file")
    parser.add_argument("-o", "--output", type=Path, help="the .py file to write (default: "
                                                           "stdout)")
    parser.add_argument("--options", default="", help="the device build options (-D, -U)")


def main(args) -> int:
    from clsim.frontends.opencl_c.load import translate  # loads libclang only when used

    if not args.file.is_file():
        raise KernelCompileError(f"{args.file}: no such .cl file")
    translation = translate(str(args.file), args.options)
    if args.output:
        args.output.write_text(translation.source, encoding="utf-8")
        print(f"clsim: wrote {args.output} ({len(translation.kernels)} kernels)",
              file=sys.stderr)
    else:
        sys.stdout.write(translation.source)
    name = args.file.name
    for function, failure in translation.failures.items():
        print(f"clsim: warning: {failure.message(name)} ({function} not translated)",
              file=sys.stderr)
    return 0
