"""The verifier commands' errors as one line each: pyopencl's exceptions while listing
devices (no platform at all, with what to install), multi-line messages such as build logs
(first line and the line that says "error"; ``--debug`` keeps all), and failure folders whose
files are truncated or damaged (naming the file). ``verify.cli`` uses these; they raise
``DeviceError``/``SimulationError`` for ``clsim.cli`` to print and never print themselves.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
import zlib
from collections.abc import Iterator

from clsim.errors import DeviceError, SimulationError

_NO_PLATFORM = (
    "no OpenCL platform found (clGetPlatformIDs: PLATFORM_NOT_FOUND_KHR): the ICD loader found "
    "no vendor .icd file{why}. Install a driver (pip install pocl-binary-distribution, or "
    "apt-get install pocl-opencl-icd) and point OCL_ICD_VENDORS at the folder of its .icd file")


@contextlib.contextmanager
def opencl_errors() -> Iterator[None]:
    """Turn pyopencl's own exceptions while listing devices into one-line DeviceErrors."""
    try:
        yield
    except Exception as err:
        if not type(err).__module__.startswith("pyopencl"):
            raise
        if "PLATFORM_NOT_FOUND" in str(err):
            why = (" and CLSIM_NO_ICD_SETUP=1 turned off clsim's own vendor folder (unset it)"
                   if os.environ.get("CLSIM_NO_ICD_SETUP") == "1" else "")
            raise DeviceError(_NO_PLATFORM.format(why=why)) from None
        first = str(err).partition("\n")[0]
        raise DeviceError(f"OpenCL: {first}. Check the driver with 'clsim devices'") from None


def one_line(text: str, debug: bool = False) -> str:
    """A multi-line message (a build log) as one line: its first line and the first log line
    that says "error", with a count of what was left out; ``debug`` keeps every line."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if debug or len(lines) <= 1:
        return "\n".join(lines)
    rest = lines[1:]
    key = next((line for line in rest if "error" in line.lower()), rest[0])
    left = len(rest) - 1
    more = f" (+{left} more line{'s' if left != 1 else ''}: rerun with --debug)" if left else ""
    return f"{lines[0]} {key}{more}"


@contextlib.contextmanager
def damaged_failure_files(path: str) -> Iterator[None]:
    """A failure folder whose files are truncated or damaged: one line naming the file."""
    try:
        yield
    except (zipfile.BadZipFile, EOFError, zlib.error) as err:
        raise SimulationError(_damaged(path, "inputs.npz", err)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SimulationError(_damaged(path, "meta.json", err)) from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as err:
        where = err.filename or path
        raise SimulationError(f"replay {path}: cannot read {where} ({err.strerror or err}). "
                              "Give a failure folder saved by clsim verify") from None


def _damaged(path: str, name: str, err: Exception) -> str:
    folder = path if not str(path).endswith(".json") else os.path.dirname(path) or "."
    return (f"replay {path}: {os.path.join(folder, name)} is truncated or damaged "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no detail'}). "
            "Copy the folder again, or re-run clsim verify to save the case anew")
