"""The on-disk cache of generated modules, and its recovery from damage.

Generated source is written to ``$CLSIM_CACHE_DIR`` (default ``~/.cache/clsim/kernels``) under a
name derived from its content, and imported from there, so Numba's ``cache=True`` can store the
machine code next to it and a second process skips compilation. A file is only rewritten when
its content changes, which keeps Numba's cache stamps valid; it is written to a temporary file
and renamed (``os.replace``), so processes compiling the same kernel at once (pytest-xdist
workers, ``clsim verify --jobs``) never see half a file. Numba writes its own index (``.nbi``)
and data (``.nbc``) files the same way.

A cache must never break a run. An index or data file that cannot be loaded (empty, truncated,
from a crash) is deleted and the function recompiled; a cache folder that cannot be written
(read-only, EROFS/EACCES, or not a folder) is replaced by a private temporary one for the rest
of the process. Each is told once on stderr, in one line. This module compiles nothing itself.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import stat
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

_LOADED: dict[str, tuple[ModuleType, Path]] = {}
# Configured folder -> the temporary folder used instead, once writing there failed.
_FALLBACK: dict[Path, Path] = {}
_TOLD: set[str] = set()
_GUARDED = "_clsim_cache_guarded"


def _warn(message: str, key: str | None = None) -> None:
    """One line on stderr, once per ``key`` (default: the message) per process: every kernel,
    or every function of one module, would repeat it."""
    key = message if key is None else key
    if key not in _TOLD:
        _TOLD.add(key)
        print(f"clsim: warning: {message}", file=sys.stderr, flush=True)


def _configured() -> Path:
    base = os.environ.get("CLSIM_CACHE_DIR")
    return Path(base) if base else Path.home() / ".cache" / "clsim" / "kernels"


def cache_dir() -> Path:
    """The folder generated modules go to: the configured one, or its temporary stand-in."""
    path = _configured()
    if path in _FALLBACK:
        return _FALLBACK[path]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return _fall_back(path, err)
    return path


def _reason(err: OSError) -> str:
    return f"{errno.errorcode.get(err.errno or 0, 'OSError')}: {err.strerror or err}"


def _fall_back(path: Path, err: OSError) -> Path:
    fallback = _private_temp_dir()
    _FALLBACK[path] = fallback
    _warn(f"kernel cache {path} is not writable ({_reason(err)}); using {fallback} instead. "
          "Set CLSIM_CACHE_DIR to a writable folder.")
    return fallback


def _private_temp_dir() -> Path:
    """A temporary cache only this user can write (we import code from it), reused by later
    processes of the same user when it is safe, else a fresh one."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    shared = Path(tempfile.gettempdir()) / f"clsim-kernels-{uid}"
    try:
        shared.mkdir(mode=0o700, exist_ok=True)
        info = shared.lstat()
        if (stat.S_ISDIR(info.st_mode) and info.st_uid == uid
                and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
            return shared
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="clsim-kernels-"))


def write_source(path: Path, source: str) -> None:
    """Make ``path`` hold ``source`` the way the cache's own modules are written (atomically,
    untouched when it already does): for kernel sources generated elsewhere whose generated
    modules should hit this cache in the next process too (``verify.probe_kernels``)."""
    _write(path, source)


def _write(path: Path, source: str) -> None:
    """Make ``path`` hold ``source``, atomically. A missing file is created only if still
    missing (a link, not a rename), so when processes race to create one kernel the first
    file stays: its mtime is the stamp Numba's cache index was written against."""
    try:
        current: str | None = path.read_text()
    except FileNotFoundError:
        current = None
    except (UnicodeDecodeError, ValueError):
        current = ""  # a damaged file: replaced below
    if current == source:
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        if current is None:
            try:
                os.link(tmp, path)
                return
            except FileExistsError:
                return  # another process created it meanwhile, with this same content
            except OSError:
                pass  # a file system without hard links: replace instead
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def load_source(kernel_name: str, source: str) -> tuple[ModuleType, Path]:
    """Import ``source`` as a module from a content-addressed file in the cache."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    mod_name = f"clsim_gen_{kernel_name}_{digest}"
    if mod_name in _LOADED:
        return _LOADED[mod_name]
    directory = cache_dir()
    path = directory / f"{mod_name}.py"
    try:
        _write(path, source)
    except OSError as err:
        path = _fall_back(_configured(), err) / f"{mod_name}.py"
        _write(path, source)
    module = _import(mod_name, path)
    guard_numba_cache(module)
    _LOADED[mod_name] = (module, path)
    return module, path


def _import(mod_name: str, path: Path) -> ModuleType:
    """Import the module; a damaged bytecode file (``__pycache__/*.pyc``) is removed and the
    import retried once from the source."""
    for attempt in (1, 2):
        spec = importlib.util.spec_from_file_location(mod_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
            return module
        except (EOFError, ValueError, ImportError) as err:
            del sys.modules[mod_name]
            stale = list(path.parent.glob(f"__pycache__/{mod_name}.*.pyc"))
            if attempt == 2 or not stale:
                raise
            for pyc in stale:
                pyc.unlink(missing_ok=True)
            _warn(f"kernel cache: {stale[0].name} was unreadable ({type(err).__name__}); "
                  "removed it and recompiled.")
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------------
# Numba's cache files


def guard_numba_cache(module: ModuleType) -> None:
    """Make every cached Numba function of ``module`` survive its cache files: one that
    cannot be loaded or saved is deleted (index and data) and the function compiled anew."""
    for value in list(vars(module).values()):
        cache = getattr(value, "_cache", None)
        files = getattr(cache, "_cache_file", None)
        if files is None or getattr(cache, _GUARDED, False):
            continue
        cache.load_overload = _guarded_load(cache.load_overload, files, module.__name__)
        cache.save_overload = _guarded_save(cache.save_overload, files)
        setattr(cache, _GUARDED, True)


def _drop(files: Any) -> str:
    """Delete a function's index and data files; the index file's name, for the warning."""
    index = Path(files._index_path)
    index.unlink(missing_ok=True)
    base = index.name[: -len(".nbi")]
    for data in index.parent.glob(f"{base}.*.nbc"):
        data.unlink(missing_ok=True)
    return index.name


def _guarded_load(load: Any, files: Any, module_name: str) -> Any:
    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return load(sig, target_context)
        except Exception as err:  # any damage (EOFError, UnpicklingError...) means: recompile
            try:
                name = _drop(files)
            except OSError:
                name = Path(files._index_path).name
            _warn(f"kernel cache entry {name} was unreadable ({type(err).__name__}); removed "
                  "the damaged entries of the kernel and recompiled.", key=f"load:{module_name}")
            return None  # Numba compiles, then saves a fresh entry
    return load_overload


def _guarded_save(save: Any, files: Any) -> Any:
    def save_overload(sig: Any, data: Any) -> None:
        try:
            save(sig, data)
        except OSError as err:
            _warn(f"kernel cache: cannot write {Path(files._index_path).parent} "
                  f"({_reason(err)}); compiled kernels are not kept for later runs.")
        except Exception as err:  # a damaged index read back while saving
            try:
                _drop(files)
                save(sig, data)
            except Exception:
                _warn(f"kernel cache entry {Path(files._index_path).name} cannot be saved "
                      f"({type(err).__name__}); compiled kernels are not kept.")
    return save_overload
