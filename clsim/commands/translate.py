"""``clsim translate``: one source, the other form generated, in either direction.

- ``clsim translate FILE.cl [-o OUT.py] [--options "-D N=4"]``: the Python kernels the OpenCL C
  front end makes of a ``.cl`` file (docs/opencl-c.md), to read, edit or step through in pdb. A
  kernel the Python language cannot express yet is written as a comment naming the construct
  and its line, and listed on stderr. Exit 2 when the file is not valid OpenCL C (clang's
  message, file:line:column).
- ``clsim translate NAME --to cl [-o out.cl]``: the OpenCL C twin of a Python kernel
  (``clsim.to_cl``, docs/to_cl.md), typed by its spec's arguments.

The direction follows the source (a ``.cl`` file is OpenCL C, anything else names a Python
kernel); ``--to`` may say it, and a ``--to`` that contradicts the source is an error.
"""

from __future__ import annotations

import sys
from pathlib import Path

from clsim.errors import InvalidArgumentError, KernelCompileError, SimulationError

HELP = "write the other form of a kernel: a .cl file's Python kernels, or a Python kernel's .cl"


def add_arguments(parser) -> None:
    parser.add_argument("source", help="a .cl file, or a kernel name (see 'clsim list') or "
                                       "path/to/file.py::NAME (a KernelSpec or a @clsim.kernel)")
    parser.add_argument("--to", choices=("py", "cl"), default=None,
                        help="output language: py for a .cl file, cl for a Python kernel "
                             "(the default follows the source)")
    parser.add_argument("-o", "--output", type=Path,
                        help="write to this file instead of stdout")
    parser.add_argument("--options", default="",
                        help="a .cl file's device build options (-D, -U)")
    parser.add_argument("--subgroup-size", type=int, default=None,
                        help="to cl: CLSIM_SUBGROUP_SIZE's default in the output (else the "
                             "spec's)")


def main(args) -> int:
    from_cl = args.source.endswith(".cl")
    wanted = args.to or ("py" if from_cl else "cl")
    if (wanted == "py") != from_cl:
        raise InvalidArgumentError(
            f"clsim translate {args.source} --to {wanted}: "
            + ("a .cl file translates to Python (--to py)" if from_cl else
               "a Python kernel translates to OpenCL C (--to cl); Python from OpenCL C needs "
               "a .cl file"))
    return _cl_to_python(args) if from_cl else _python_to_cl(args)


def _cl_to_python(args) -> int:
    from clsim.frontends.opencl_c.load import translate  # loads libclang only when used

    path = Path(args.source)
    if not path.is_file():
        raise KernelCompileError(f"{path}: no such .cl file")
    translation = translate(str(path), args.options)
    _write(args.output, translation.source,
           f"{len(translation.kernels)} kernels")
    for function, failure in translation.failures.items():
        print(f"clsim: warning: {failure.message(path.name)} ({function} not translated)",
              file=sys.stderr)
    return 0


def _python_to_cl(args) -> int:
    from clsim.backends.opencl_c import to_cl

    _write(args.output, to_cl(_target(args.source), subgroup_size=args.subgroup_size), "")
    return 0


def _write(output: Path | None, text: str, what: str) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SimulationError(f"{output}: cannot write ({exc.strerror}). Choose another -o "
                              "path") from None
    print(f"clsim: wrote {output}" + (f" ({what})" if what else ""), file=sys.stderr)


def _target(name: str):
    """A KernelSpec (library name or a file's spec), or a file's @clsim.kernel."""
    from clsim.api import KernelFunction
    from clsim.spec import get_spec

    if "::" not in name:
        return get_spec(name)
    from verify.replay import import_file, load_spec_ref

    path, _, attr = name.rpartition("::")
    value = getattr(import_file(path), attr, None)
    if isinstance(value, KernelFunction) and value.is_kernel:
        return value
    return load_spec_ref(name)[0]
