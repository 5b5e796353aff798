"""The traffic variant of a kernel is recompiled when the shared recorders it inlines change.

What it proves: ``clsim/traffic/recorders.py`` is compiled once into Numba's cache and
inlined into each kernel's traffic variant, and Numba's cache of the kernel does not notice
a change in a function it calls; the generated source names the recorders' source digest,
so a changed recorder gives a new module (a fresh compile), never a kernel with the old
recorder inlined.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

import clsim
from clsim import get_global_id, kernel, local_array
from clsim.runtime import cache
from clsim.traffic import instrument as tr


@kernel
def stage_through_local(x, y):
    i = get_global_id(0)
    t = local_array(16, np.float32)
    t[i] = x[i]  # a local store's lane run, made by a call of ``recorders.block``
    y[i] = t[i]


def _generated_sources() -> list[str]:
    return [path.read_text() for _module, path in cache._LOADED.values()]


def test_the_digest_is_the_recorders_source():
    source = Path(tr.__file__).with_name("recorders.py").read_bytes()
    assert tr._recorders_digest() == hashlib.sha256(source).hexdigest()[:16]


def test_a_changed_recorder_digest_changes_the_generated_source(monkeypatch):
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    version = tr.VERSION
    for digest in ("feedfacefeedface", "0123456789abcdef"):
        # A new process would find the module by its source; this one keys compiled kernels
        # by the instrument's key, so make that new as well.
        monkeypatch.setattr(tr, "VERSION", (version, digest, os.getpid()))
        monkeypatch.setattr(tr, "_recorders_digest", lambda d=digest: d)
        result = clsim.run(stage_through_local, (16,), (16,), (x, y), traffic=True)
        assert np.array_equal(y, x)
        assert result.traffic.totals["local_store_bytes"] == 64
        named = [s for s in _generated_sources() if f"clsim.traffic.recorders {digest}" in s]
        assert len(named) == 1, f"no generated module names the recorders' digest {digest}"
        assert "_tr_block(" in named[0]
