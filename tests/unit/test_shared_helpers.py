"""The engine's and the builtin table's runtime helpers are one module compiled once per machine.

Contract: ``clsim/runtime/helper_lib.py`` is exactly what ``python -m
clsim.compiler.shared_helpers`` generates from the helper tables (a stale file would run old
helpers); a JIT kernel imports the helpers it calls from there and defines none of them itself,
while an instrument's helpers and every helper of a no-JIT module stay in the kernel's own
source; both modes give the same bits; group-level code passes helpers an int64 work-item
index, never the literal 0 (Numba would compile each such helper once more for
``Literal[int](0)``); a group's arrays are allocated by shared helpers, not by ``np.empty``
(a Numba overload compiled again in every process).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim.compiler import helpers as hp
from clsim.compiler import shared_helpers
from clsim.runtime import helper_lib, jit_helpers
from kernels_py.softmax import SPEC as SOFTMAX


def test_helper_lib_is_generated_from_the_tables():
    """The committed module is the generator's current output (else run
    ``python -m clsim.compiler.shared_helpers``)."""
    assert shared_helpers.PATH.read_text() == shared_helpers.module_source()
    assert shared_helpers.main(["--check"]) == 0


def test_a_changed_helper_makes_the_lib_stale(monkeypatch):
    """The staleness check compares sources: a helper edited in its table no longer matches."""
    edited = hp.helper("_ck", hp.CORE["_ck"].source.replace("return index", "return 0"),
                       hp.CORE["_ck"].deps)
    monkeypatch.setitem(hp.CORE, "_ck", edited)
    shared_helpers.module_source.cache_clear()
    try:
        assert shared_helpers.main(["--check"]) == 1
    finally:
        shared_helpers.module_source.cache_clear()


def _softmax(jit: bool, **options) -> tuple[np.ndarray, str]:
    shape = {"rows": 3, "cols": 100}
    inputs = SOFTMAX.make_inputs(np.random.default_rng(7), shape)
    launch = SOFTMAX.launch(inputs, shape, (32,))
    result = clsim.run(SOFTMAX.kernel, launch.global_size, launch.local_size, launch.args,
                       jit=jit, **options)
    return inputs["y"].copy(), Path(result.module_path).read_text()


def test_jit_kernels_import_the_shared_helpers_and_no_jit_ones_hold_them():
    """softmax calls _ck, _fmax_float32, _exp_float32 and _idiv_int64: the JIT module imports
    them (with the lib's content hash; fmax and exp as their intrinsics, NAME_il) and defines
    none; the no-JIT module defines them all. Both modes store the same bits."""
    y_jit, jit_source = _softmax(True)
    y_py, py_source = _softmax(False)
    np.testing.assert_array_equal(y_jit.view(np.uint32), y_py.view(np.uint32))
    defined = set(re.findall(r"^def (_\w+)\(", jit_source, re.M))
    assert not defined & (set(hp.CORE) | set(shared_helpers.table.HELPERS))
    assert f"shared helpers {shared_helpers.digest()}" in jit_source
    called = {"_ck", "_fmax_float32", "_exp_float32", "_idiv_int64", "_empty_float32"}
    intrinsic = {"_fmax_float32", "_exp_float32"}
    imported = {name + "_il" if name in intrinsic else name for name in called}
    assert imported <= set(re.findall(r"'(_\w+)'", jit_source.split("_use_helpers(", 1)[1]))
    assert called <= set(re.findall(r"^def (_\w+)\(", py_source, re.M))
    assert {f"{name}_il = {name}" for name in intrinsic} <= set(py_source.splitlines())
    assert "np.empty(" not in jit_source and "np.empty(" not in py_source.split("def _group")[1]


def test_instrument_helpers_stay_in_the_kernel_module(monkeypatch):
    """A helper an instrument registers is emitted into the JIT kernel's source; the shared
    helpers it calls are imported instead."""
    monkeypatch.setitem(hp._REGISTERED, "_inst_probe", hp.helper(
        "_inst_probe", "def _inst_probe(i, n, err):\n    return _ck(i, n, err, 0, 0)", ("_ck",)))
    imported: set[str] = set()
    sources = hp.helper_sources({"_inst_probe", "_fmax_float32"}, shared_helpers.table.HELPERS,
                                imported)
    assert [s.split("(")[0] for s in sources] == ["def _inst_probe"]
    assert imported == {"_ck", "_fmax_float32"}
    every = hp.helper_sources({"_inst_probe"}, shared_helpers.table.HELPERS)
    assert [s.split("(")[0] for s in every] == ["def _oob", "def _ck", "def _inst_probe"]


def test_group_level_calls_never_pass_the_literal_zero():
    """The tree reductions' ``half = (active + 1) // 2`` runs at group level: its _idiv_int64
    call gets an int64 constant as the work-item index, not ``0``."""
    _y, source = _softmax(True)
    calls = re.findall(r"_idiv_int64\((.*)\)$", source, re.M)
    assert len(calls) == 2
    assert all(re.search(r", _K\d+$", args) for args in calls), calls


def test_use_compiles_each_helper_once_with_what_it_calls():
    """``use`` decorates a helper and its dependencies once; asking again returns the same
    dispatcher."""
    first, = jit_helpers.use("_irem_int32")
    again, = jit_helpers.use("_irem_int32")
    assert first is again and hasattr(first, "signatures")
    assert hasattr(helper_lib._oob, "signatures")  # _irem_int32 calls _oob
    with pytest.raises(AttributeError):
        jit_helpers.use("_no_such_helper")
