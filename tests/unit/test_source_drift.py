"""A kernel whose file was edited after Python imported it: clsim reads the source from the
file when it first compiles, so the lines now hold other code. That is a clear
KernelCompileError naming the file and saying to reload, not an error about code the user is
not running (once a misleading "takes 5 arguments, got 4")."""

import importlib
import sys

import numpy as np
import pytest

import clsim
from clsim.errors import KernelCompileError

ORIGINAL = """from clsim import get_global_id, kernel


@kernel
def scale(x, y, k):
    i = get_global_id(0)
    y[i] = x[i] * k
"""

EDITED = """from clsim import get_global_id, kernel


@kernel
def other(x, y):
    i = get_global_id(0)
    y[i] = x[i]
"""


def _import(tmp_path, monkeypatch, text):
    (tmp_path / "drift_kernels.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("drift_kernels", None)
    importlib.invalidate_caches()
    return importlib.import_module("drift_kernels")


def test_unchanged_file_compiles(tmp_path, monkeypatch):
    mod = _import(tmp_path, monkeypatch, ORIGINAL)
    y = np.zeros(4, np.float32)
    clsim.run(mod.scale, (4,), (4,), (np.ones(4, np.float32), y, np.float32(2)), jit=False)
    assert (y == 2).all()


def test_file_edited_after_import_is_a_clear_error(tmp_path, monkeypatch):
    mod = _import(tmp_path, monkeypatch, ORIGINAL)
    (tmp_path / "drift_kernels.py").write_text(EDITED)
    with pytest.raises(KernelCompileError, match=r"drift_kernels\.py:4: the source of scale .*"
                                                 r"edited after it was imported"):
        clsim.run(mod.scale, (4,), (4,), (np.ones(4, np.float32), np.zeros(4, np.float32),
                                          np.float32(2)), jit=False)
