"""Contracts of verify/failures.py: a saved failure loads back bit-exactly, with the dtypes and
kinds (array, 0-d array, numpy scalar, Python scalar) it was saved with, and is listed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clsim.spec import EXACT, ulp
from verify.failures import Failure, list_failures, load_failure, save_failure


def _nan32(payload: int) -> np.float32:
    return (np.array(np.nan, np.float32).view(np.uint32) | np.uint32(payload)).view(np.float32)[()]


def _inputs() -> dict:
    x = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, 1.0], dtype=np.float32)
    x[0] = _nan32(0x1234)  # a NaN payload must survive
    return {
        "x": x,
        "h": np.array([[1.5, -0.0], [np.nan, 6.1e-5]], dtype=np.float16),
        "idx": np.arange(6, dtype=np.int64).reshape(2, 3, order="F"),
        "bytes": np.frombuffer(b"\x00\xff\x7f", dtype=np.uint8),
        "alpha": np.float32(0.1),
        "n": np.int32(-7),
        "flag": np.bool_(True),
        "zero_d": np.array(2.5, dtype=np.float64),
        "py_int": 12,
        "py_float": 0.1,
        "py_bool": False,
        "big": 2**70,
        "weird/name with spaces": np.uint16(65535),
    }


def _save(tmp_path, **kw):
    args = {
        "spec_name": "vector_add",
        "inputs": _inputs(),
        "launch": {"global_size": (1024,), "local_size": (64,), "subgroup_size": np.int64(16)},
        "seed": 12345,
        "device": "Intel(R) Core(TM) CPU @ 2.6GHz",
        "policy": {"c": ulp(2), "d": EXACT},
        "difference": "buffer 'c' differs at index (3,)",
    }
    args.update(kw)
    return save_failure(tmp_path / "failures", **args)


def test_round_trip_is_bit_exact_with_dtypes_and_kinds(tmp_path):
    """Every input comes back with the same dtype, shape, bytes and kind: arrays stay arrays
    (0-d too), numpy scalars stay numpy scalars of their dtype, Python scalars stay Python
    scalars, including an int beyond 64 bits and a buffer name that is not a file name."""
    saved = _inputs()
    folder = _save(tmp_path)
    f = load_failure(folder)
    assert set(f.inputs) == set(saved)
    for name, value in saved.items():
        got = f.inputs[name]
        assert type(got) is type(value), name
        if isinstance(value, np.ndarray | np.generic):
            assert got.dtype == value.dtype and np.shape(got) == np.shape(value), name
            assert np.asarray(got).tobytes() == np.asarray(value).tobytes(), name
        else:
            assert got == value, name
    assert f.inputs["idx"].flags.f_contiguous  # memory order is kept too


def test_meta_fields_round_trip(tmp_path):
    """Launch sizes come back as tuples, numpy ints as ints; seed, device, spec, policy text
    and difference text are kept."""
    f = load_failure(_save(tmp_path))
    assert isinstance(f, Failure)
    assert f.launch == {"global_size": (1024,), "local_size": (64,), "subgroup_size": 16}
    assert f.seed == 12345 and f.spec_name == "vector_add"
    assert f.device == "Intel(R) Core(TM) CPU @ 2.6GHz"
    assert f.policy == {"c": "ulp(2)", "d": "exact"}
    assert f.difference == "buffer 'c' differs at index (3,)"
    assert f.meta["format"] == 1 and "created" in f.meta


def test_folder_name_and_files(tmp_path):
    """The folder is <spec>-<device>-<timestamp>-<hash>/ holding inputs.npz and meta.json,
    with the device name made file-safe; no partial folder remains."""
    folder = _save(tmp_path)
    parts = folder.name.split("-")
    assert parts[0] == "vector_add" and parts[1] == "Intel_R_Core_TM_CPU_2.6GHz"
    assert len(parts[2]) == len("20250101T120000Z") and len(parts[3]) == 10
    assert sorted(p.name for p in folder.iterdir()) == ["inputs.npz", "meta.json"]
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]
    json.loads((folder / "meta.json").read_text())  # plain JSON, readable by anything


def test_load_accepts_meta_json_path(tmp_path):
    """load_failure takes the folder or its meta.json."""
    folder = _save(tmp_path)
    assert load_failure(folder / "meta.json").path == folder


def test_same_failure_twice_gets_two_folders(tmp_path):
    """Saving identical content twice in one second never overwrites the first save."""
    first, second = _save(tmp_path), _save(tmp_path)
    assert first != second and first.is_dir() and second.is_dir()


def test_unstorable_values_are_kept_as_text(tmp_path):
    """Values numpy cannot store without pickle are saved as repr text, not raised on:
    a failure is never lost to an odd input."""
    folder = _save(tmp_path, inputs={"obj": np.array([object()]), "cb": print, "s": "abc"})
    f = load_failure(folder)
    assert f.inputs["cb"] == repr(print) and f.inputs["s"] == repr("abc")
    assert f.inputs["obj"].startswith("array(")
    assert f.meta["inputs"]["cb"]["kind"] == "repr"


def test_list_failures_filters_and_orders(tmp_path):
    """list_failures returns complete failure folders oldest first, filtered by spec or
    device; a missing directory gives an empty list."""
    a = _save(tmp_path, spec_name="softmax", device="pocl")
    b = _save(tmp_path, spec_name="argmax", device="pocl")
    c = _save(tmp_path, spec_name="softmax", device="intel")
    (tmp_path / "failures" / ".partial-xyz").mkdir()
    (tmp_path / "failures" / "junk").mkdir()
    root = tmp_path / "failures"
    assert list_failures(root) == [a, b, c]
    assert list_failures(root, spec_name="softmax") == [a, c]
    assert list_failures(root, device="pocl") == [a, b]
    assert list_failures(tmp_path / "nowhere") == []


def test_load_failure_on_a_non_failure_folder(tmp_path):
    """Loading a folder without meta.json raises FileNotFoundError naming the folder."""
    with pytest.raises(FileNotFoundError, match=r"meta\.json"):
        load_failure(tmp_path)
