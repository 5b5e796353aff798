"""Contracts of clsim/runtime/cache.py under damage: an empty or truncated Numba index (.nbi) or
data (.nbc) file, or a damaged bytecode file, is removed and the kernel recompiled with one
warning line; a cache folder that cannot be written (EROFS, or a path under a regular file)
falls back to a private temporary cache with one warning line; processes filling one cache at
once all succeed and leave it valid."""

from __future__ import annotations

import errno
import importlib.util
import os
import py_compile
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel
from clsim.runtime import cache, launch

ROOT = Path(__file__).resolve().parents[2]


@kernel
def triple(x, y):
    i = get_global_id(0)
    y[i] = x[i] * 3.0


def _fresh_process_state(monkeypatch) -> None:
    """Forget every compiled kernel, as a new process would (the next run imports the cached
    module again and Numba loads its cache files)."""
    monkeypatch.setattr(launch, "_COMPILED", {})
    monkeypatch.setattr(cache, "_LOADED", {})
    for name in [m for m in sys.modules if m.startswith("clsim_gen_triple_")]:
        del sys.modules[name]


def _run() -> clsim.RunResult:
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    result = clsim.run(triple, (16,), (8,), (x, y), jit=True)
    np.testing.assert_array_equal(y, x * 3)
    return result


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CLSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_FALLBACK", {})
    monkeypatch.setattr(cache, "_TOLD", set())
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    _fresh_process_state(monkeypatch)
    return tmp_path / "cache"


def _warnings(capfd) -> list[str]:
    return [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("clsim: warning")]


@pytest.mark.parametrize("damage", ["empty index", "truncated index", "truncated data"])
def test_damaged_numba_cache_is_recompiled(fresh_cache, monkeypatch, capfd, damage):
    """The run after the damage gives the right result with one warning naming the entry;
    the entry is rewritten, so the run after that is silent."""
    _run()
    pattern = "*.nbc" if "data" in damage else "*.nbi"
    files = sorted((fresh_cache / "__pycache__").glob(pattern))
    assert files, "numba cache written"
    for f in files:
        data = f.read_bytes()
        f.write_bytes(b"" if damage == "empty index" else data[: len(data) // 2])
    capfd.readouterr()
    _fresh_process_state(monkeypatch)
    _run()
    told = _warnings(capfd)
    assert len(told) == 1 and "unreadable" in told[0] and "recompiled" in told[0], told
    assert all(f.stat().st_size > 0 for f in (fresh_cache / "__pycache__").glob("*.nbi"))
    _fresh_process_state(monkeypatch)
    monkeypatch.setattr(cache, "_TOLD", set())
    _run()
    assert _warnings(capfd) == []


def test_damaged_bytecode_is_removed_and_recompiled(fresh_cache, monkeypatch, capfd):
    """A truncated __pycache__/*.pyc of the generated module does not break the import."""
    module = Path(_run().module_path)
    pyc = Path(importlib.util.cache_from_source(str(module)))
    py_compile.compile(str(module), cfile=str(pyc), doraise=True)
    pyc.write_bytes(pyc.read_bytes()[:40])  # a valid header, half a code object
    capfd.readouterr()
    _fresh_process_state(monkeypatch)
    _run()
    assert any(".pyc was unreadable" in w for w in _warnings(capfd))


def test_cache_dir_under_a_regular_file_falls_back(tmp_path, fresh_cache, monkeypatch, capfd):
    """CLSIM_CACHE_DIR that cannot be created (ENOTDIR): one warning line naming it and the
    reason, and the kernel runs from a private temporary cache."""
    (tmp_path / "plain").write_text("")
    monkeypatch.setenv("CLSIM_CACHE_DIR", str(tmp_path / "plain" / "cache"))
    first = _run()
    _fresh_process_state(monkeypatch)
    _run()
    told = _warnings(capfd)
    assert len(told) == 1 and "ENOTDIR" in told[0] and str(tmp_path / "plain") in told[0]
    folder = Path(first.module_path).parent
    assert folder == tmp_path / "tmp" / f"clsim-kernels-{os.getuid()}"
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)


def test_read_only_cache_falls_back(fresh_cache, monkeypatch, capfd):
    """Writing into the cache folder fails with EROFS (as on a read-only mount; root ignores
    chmod, so the write is refused by a mock): one warning line, the run succeeds from the
    temporary cache, and later kernels go straight there."""
    real = tempfile.mkstemp

    def refuse(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == fresh_cache:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(cache.tempfile, "mkstemp", refuse)
    result = _run()
    assert Path(result.module_path).parent != fresh_cache
    told = _warnings(capfd)
    assert len(told) == 1 and "EROFS" in told[0] and str(fresh_cache) in told[0]
    assert cache.cache_dir() == Path(result.module_path).parent


_WORKER = """
import numpy as np, clsim
from clsim import get_global_id, kernel

@kernel
def quad(x, y):
    i = get_global_id(0)
    y[i] = x[i] * 4.0

x = np.arange(64, dtype=np.float32); y = np.zeros(64, np.float32)
clsim.run(quad, (64,), (16,), (x, y), jit=True)
assert (y == x * 4).all()
print("ok")
"""


def test_concurrent_processes_fill_one_cache(tmp_path):
    """Three processes compile the same kernel into one empty cache at once: all succeed
    without a warning, and a later process loads the cache without a warning."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLSIM_CACHE_DIR": str(tmp_path / "cache")}
    worker = tmp_path / "worker.py"  # clsim reads a kernel's source from its file
    worker.write_text(_WORKER)
    procs = [subprocess.Popen([sys.executable, str(worker)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0 and out.strip() == "ok", err
        assert "clsim: warning" not in err
    later = subprocess.run([sys.executable, str(worker)], env=env, text=True,
                           capture_output=True, timeout=600)
    assert later.returncode == 0 and "clsim: warning" not in later.stderr, later.stderr
    assert not list((tmp_path / "cache").glob("*.tmp"))


def test_racing_creators_keep_the_first_file(tmp_path, monkeypatch):
    """Two processes that both found the module missing: the second does not replace the
    first's file (same inode and mtime, Numba's stamp), and leaves no temporary file."""
    path = tmp_path / "clsim_gen_k_0123.py"
    path.write_text("x = 1\n")
    before = path.stat()
    real = Path.read_text

    def not_there_yet(self, *args, **kwargs):
        if self == path:
            raise FileNotFoundError(str(path))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", not_there_yet)
    cache._write(path, "x = 1\n")
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
