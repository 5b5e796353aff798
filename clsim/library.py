"""Importing a kernel library (or a command's module) so that a failure names its cause.

A library registers its specs when imported. Where one of its modules cannot be imported (a
package it needs is not installed), the failure is a ``LibraryImportError`` naming that module
and the package, never a shorter kernel list: ``clsim list`` showing 15 of 50 kernels hid a
missing ``gguf`` from a new user.
"""

from __future__ import annotations

import importlib
import traceback
from types import ModuleType

from clsim.errors import LibraryImportError

LIBRARY = "kernels_py"


def import_module(name: str) -> ModuleType:
    """``importlib.import_module(name)``; an ImportError (or any error while it runs) becomes a
    ``LibraryImportError`` naming the module whose import failed and the missing package."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise _named(name, exc) from exc


def load_library(name: str = LIBRARY) -> ModuleType | None:
    """Import the shipped library (registers its specs); None where it is not installed at all
    (a clsim without its library: user files, ``path/file.py::NAME``, still work)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise _named(name, exc) from exc
    except ImportError as exc:
        raise _named(name, exc) from exc


def _named(requested: str, exc: ImportError) -> LibraryImportError:
    failing = _failing_module(exc, requested) or requested
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing:
        top = missing.partition(".")[0]
        return LibraryImportError(
            f"{failing}: cannot import it: package '{top}' is not installed. Install it "
            f"(pip install {top}) or reinstall clsim with its dependencies "
            "(pip install -e '.[devices]')", module=failing, package=top)
    return LibraryImportError(
        f"{failing}: cannot import it: {exc}. Reinstall clsim (pip install -e '.[devices]')",
        module=failing, package=None)


def _failing_module(exc: BaseException, requested: str) -> str | None:
    """The name of the deepest module of the requested package in the traceback (the one whose
    import statement failed), read from the frames' globals; importlib's frames are skipped."""
    package = requested.partition(".")[0]
    names = [frame.f_globals.get("__name__", "") for frame, _ in traceback.walk_tb(
        exc.__traceback__)]
    ours = [n for n in names if n == package or n.startswith(package + ".")]
    return ours[-1] if ours else None
