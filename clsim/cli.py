"""The ``clsim`` command: dispatches subcommands and turns errors into one line and an exit code.

Each subcommand lives in its own module with ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int``; this module only wires them together. Library code raises
``SimulationError`` subclasses; here they become ``clsim: error: <message>`` on one line and
exit code 2 (1 means "ran, but results disagree"; 3 an internal error; 130 Ctrl-C). A bad
command line is one line too (``OneLineParser``), never argparse's usage block. ``--debug``
adds the traceback and keeps the exit code.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
import traceback

from clsim import interrupts
from clsim.errors import KernelInterrupted, SimulationError
from clsim.library import import_module
from clsim.library import load_library as _load_library

# name -> (module, prefix of its functions); prefix "" means HELP/add_arguments/main.
COMMANDS = {
    "list": ("clsim.commands.list_", ""),
    "run": ("clsim.commands.run", ""),
    "report": ("clsim.traffic.cli", ""),
    "devices": ("verify.cli", "devices"),
    "verify": ("verify.cli", "verify"),
    "replay": ("verify.cli", "replay"),
    "conformance": ("verify.conformance", "conformance"),
    "translate": ("clsim.commands.translate", ""),
}
_FALLBACK_HELP = {  # what `clsim --help` lists without importing each command
    "list": "list the library's kernels",
    "run": "run a kernel on generated input and compare with its numpy reference",
    "report": "traffic and roofline report of a kernel family",
    "devices": "list the OpenCL devices of this machine",
    "verify": "fuzz a kernel on real OpenCL devices against the simulator",
    "replay": "re-run a saved failing example",
    "conformance": "max ULP of every scalar builtin on the simulator and each device",
    "translate": "write the other form of a kernel: a .cl file's Python, a Python kernel's .cl",
}


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (with where to find help) and exit 2."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message}. See '{self.prog} --help'", file=sys.stderr)
        sys.exit(2)


def _entry(name: str):
    module_name, prefix = COMMANDS[name]
    module = import_module(module_name)  # a failure names the module and the missing package
    if prefix:
        return (getattr(module, f"{prefix.upper()}_HELP", _FALLBACK_HELP.get(name, "")),
                getattr(module, f"add_{prefix}_arguments", None),
                getattr(module, f"{prefix}_main", None))
    return module.HELP, module.add_arguments, module.main


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or with ``only`` the full arguments of that one alone:
    a command's module is imported only when its arguments are needed (``clsim run`` does
    not pay for the verifier's Hypothesis and mpmath)."""
    parser = OneLineParser(
        prog="clsim", description="OpenCL kernels in Python: simulate, check, count, verify.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            sub.add_parser(name, help=_FALLBACK_HELP.get(name, ""), add_help=False)
            continue
        entry = _entry(name)
        if entry[1] is None:
            continue
        help_text, add_arguments, main = entry
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--debug", dest="debug_here", action="store_true", help=argparse.SUPPRESS)
        add_arguments(p)
        p.set_defaults(_main=main)
    return parser


def _command(argv: list[str]) -> str | None:
    """The subcommand named on the command line (the first word that is not an option)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def load_library() -> None:
    """Register the shipped kernel library's specs (clsim.spec imports no library itself). A
    library module that fails to import raises ``LibraryImportError`` (never a shorter list)."""
    _load_library()


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: this program's command line) and return its exit
    code. As the program itself (``argv`` None) it ends the process at once when a launch left
    a work-group stuck in compiled code (Ctrl-C or --timeout on an endless kernel)."""
    code = _run_command(sys.argv[1:] if argv is None else list(argv))
    if argv is None:
        # The process ends next: its objects (Numba's compiler holds ~200K) need not be
        # visited again by the interpreter's last collections, which took 0.15-0.2 s of a
        # warm `clsim run softmax` (0.95 s) after its last line.
        gc.freeze()
    if argv is None and _launch_threads_stuck():
        # Finalizing the interpreter around a thread that still spins (and writes buffers)
        # took seconds on a busy machine after the one line was out, and frees memory under it.
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    return code


def _launch_threads_stuck() -> bool:
    watch = sys.modules.get("clsim.runtime.watch")  # not imported: nothing was launched
    return watch is not None and watch.stuck_workers() > 0


def _run_command(argv: list[str]) -> int:
    try:
        load_library()
        parser = build_parser(_command(argv))
    except SimulationError as exc:  # a library or command module that cannot be imported
        if "--debug" in argv:
            traceback.print_exc()
        print(_failure(exc)[1], file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad command line (2), already printed
        return int(exc.code or 0)
    if not getattr(args, "_main", None):
        parser.print_help()
        return 2
    debug = args.debug or getattr(args, "debug_here", False)
    try:
        with interrupts.recorded():
            code = int(args._main(args) or 0)
            interrupts.raise_if_interrupted()  # a Ctrl-C dropped on the way still ends in 130
        return code
    except BaseException as exc:  # every way out becomes one line and a documented code
        code, line = _failure(exc)
        if code is None:
            raise  # SystemExit from argparse inside a command: already handled
        if debug:
            traceback.print_exc()
        # Messages quote files a user received (a failure folder): no terminal escapes.
        print("".join(c if c.isprintable() else repr(c)[1:-1] for c in line), file=sys.stderr)
        return code


def _failure(exc: BaseException) -> tuple[int | None, str]:
    """(exit code, the one line to print) for an exception that ended a command."""
    first = str(exc).partition("\n")[0]
    if isinstance(exc, SystemExit):
        return None, ""
    if isinstance(exc, KernelInterrupted):
        return 130, f"clsim: interrupted: {first}"
    if isinstance(exc, KeyboardInterrupt):
        return 130, "clsim: interrupted"
    if isinstance(exc, SimulationError):
        return 2, f"clsim: error: {first}"
    if isinstance(exc, MemoryError):  # the problem's size, not a bug in clsim
        return 2, (f"clsim: error: out of memory ({first or 'MemoryError'}). Use a smaller "
                   "--shape, or fewer checks")
    return 3, (f"clsim: internal error: {type(exc).__name__}: {first} (rerun with --debug for "
               "the traceback and report it)")


if __name__ == "__main__":
    sys.exit(main())
