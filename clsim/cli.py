"""The ``clsim`` command: dispatches subcommands and turns errors into one line and an exit code.

Each subcommand lives in its own module with ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int``; this module only wires them together. Library code raises
``SimulationError`` subclasses; here they become ``clsim: error: <message>`` and exit code 2
(1 means "ran, but results disagree"; 3 an internal error). ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, prefix of its functions); prefix "" means HELP/add_arguments/main.
COMMANDS = {
    "list": ("clsim.commands.list_", ""),
    "run": ("clsim.commands.run", ""),
    "report": ("clsim.traffic.cli", ""),
    "devices": ("verify.cli", "devices"),
    "verify": ("verify.cli", "verify"),
    "replay": ("verify.cli", "replay"),
    "conformance": ("verify.conformance", "conformance"),
}
_FALLBACK_HELP = {
    "report": "traffic and roofline report of a kernel family",
    "devices": "list the OpenCL devices of this machine",
    "verify": "fuzz a kernel on real OpenCL devices against the simulator",
    "replay": "re-run a saved failing example",
    "conformance": "max ULP of every scalar builtin on the simulator and each device",
}


def _entry(name: str):
    module_name, prefix = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    if prefix:
        return (getattr(module, f"{prefix.upper()}_HELP", _FALLBACK_HELP.get(name, "")),
                getattr(module, f"add_{prefix}_arguments", None),
                getattr(module, f"{prefix}_main", None))
    return module.HELP, module.add_arguments, module.main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clsim", description="OpenCL kernels in Python: simulate, check, count, verify.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        entry = _entry(name)
        if entry is None or entry[1] is None:
            continue
        help_text, add_arguments, main = entry
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--debug", dest="debug_here", action="store_true", help=argparse.SUPPRESS)
        add_arguments(p)
        p.set_defaults(_main=main)
    return parser


def _load_library() -> None:
    """Register the shipped kernel library's specs (clsim.spec imports no library itself)."""
    try:
        importlib.import_module("kernels_py")
    except ImportError:
        pass  # a clsim without its library: user files (path/file.py::NAME) still work


def main(argv: list[str] | None = None) -> int:
    from clsim.errors import SimulationError

    _load_library()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_main", None):
        parser.print_help()
        return 2
    try:
        return int(args._main(args) or 0)
    except SimulationError as exc:
        if args.debug or getattr(args, "debug_here", False):
            raise
        first = str(exc).partition("\n")[0]
        print(f"clsim: error: {first}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("clsim: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in clsim itself: still one line unless --debug
        if args.debug or getattr(args, "debug_here", False):
            raise
        first = str(exc).partition("\n")[0]
        print(f"clsim: internal error: {type(exc).__name__}: {first} (rerun with --debug for "
              "the traceback and report it)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
