"""clsim's pyopencl compiler cache (verify.cl_cache): one slot folder per live process, held
with flock, so a ``lock`` file found in a slot just taken is a dead writer's and is removed
(pyopencl's shared cache made every build fail after a minute instead)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from verify import cl_cache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cl_cache, "_held", None)
    return tmp_path


def test_a_stale_lock_in_a_free_slot_is_removed(fresh):
    stale = cl_cache.cache_root() / "slot-0" / "lock"
    stale.parent.mkdir(parents=True)
    stale.write_text("")
    folder = cl_cache.cache_dir()
    assert folder == str(stale.parent) and not stale.exists()
    assert cl_cache.cache_dir() == folder  # kept for the process's life
    assert os.environ["PYOPENCL_CACHE_FAILURE_FATAL"] == ""  # pyopencl reads it, unset


def test_a_live_process_keeps_its_slot_and_its_lock(fresh):
    mine = Path(cl_cache.cache_dir())
    (mine / "lock").write_text("")  # this process is building: another must not touch it
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    other = subprocess.run(
        [sys.executable, "-c", "from verify import cl_cache; print(cl_cache.cache_dir())"],
        capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert other == str(mine.with_name("slot-1")) and (mine / "lock").exists()


def test_no_writable_cache_means_uncached_builds(fresh, monkeypatch):
    blocker = fresh / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert cl_cache.cache_dir() is False
