"""``clsim translate NAME --to cl [-o out.cl]``: print the OpenCL C twin of a Python kernel
(``clsim.to_cl``), typed by its spec's arguments."""

from __future__ import annotations

import sys
from pathlib import Path

from clsim.errors import SimulationError

HELP = "print the OpenCL C twin of a Python kernel"


def add_arguments(parser) -> None:
    parser.add_argument("name", help="kernel name (see 'clsim list') or path/to/file.py::NAME "
                                     "(a KernelSpec, or a @clsim.kernel with a registered spec)")
    parser.add_argument("--to", choices=("cl",), default="cl",
                        help="output language: cl (OpenCL C, the default and only one)")
    parser.add_argument("-o", "--output", help="write to this file instead of stdout")
    parser.add_argument("--subgroup-size", type=int, default=None,
                        help="CLSIM_SUBGROUP_SIZE's default in the output (else the spec's)")


def main(args) -> int:
    from clsim.backends.opencl_c import to_cl

    target = _target(args.name)
    source = to_cl(target, subgroup_size=args.subgroup_size)
    if args.output:
        try:
            Path(args.output).write_text(source)
        except OSError as exc:
            raise SimulationError(f"{args.output}: cannot write ({exc.strerror}). Choose "
                                  "another -o path") from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(source)
    return 0


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
