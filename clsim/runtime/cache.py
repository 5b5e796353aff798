"""The on-disk cache of generated modules.

Generated source is written to ``$CLSIM_CACHE_DIR`` (default ``~/.cache/clsim/kernels``) under a
name derived from its content, and imported from there, so Numba's ``cache=True`` can store the
machine code next to it and a second process skips compilation. A file is only rewritten when
its content changes, which keeps Numba's cache stamps valid.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

_LOADED: dict[str, ModuleType] = {}


def cache_dir() -> Path:
    base = os.environ.get("CLSIM_CACHE_DIR")
    path = Path(base) if base else Path.home() / ".cache" / "clsim" / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        path = Path(tempfile.gettempdir()) / "clsim-kernels"
        path.mkdir(parents=True, exist_ok=True)
    return path


def load_source(kernel_name: str, source: str) -> tuple[ModuleType, Path]:
    """Import ``source`` as a module from a content-addressed file in the cache."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    mod_name = f"clsim_gen_{kernel_name}_{digest}"
    path = cache_dir() / f"{mod_name}.py"
    if mod_name in _LOADED:
        return _LOADED[mod_name], path
    if not path.exists() or path.read_text() != source:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    _LOADED[mod_name] = module
    return module, path
