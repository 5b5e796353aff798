"""Contracts of verify/failures.py: a saved failure loads back bit-exactly, with the dtypes and
kinds (array, 0-d array, numpy scalar, Python scalar) it was saved with, and is listed; a full
disk reports the disagreement instead of hiding it; a writer killed mid-save leaves nothing
visible and its partial folder is cleaned later."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from clsim.spec import EXACT, ulp
from verify.failures import (
    STALE_PARTIAL_S,
    Failure,
    FailureNotSaved,
    clean_partials,
    discard_failure,
    list_failures,
    load_failure,
    record_outcome,
    save_failure,
)
from verify.folders import host
from verify.testing import device_params

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


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


# --- faults: full disk, killed writers, cases saved before their launch ----------------------


def _enospc_on_second_write(monkeypatch):
    """The disk fills up after the first file of a case is written."""
    from verify import failures

    real = failures._sync
    calls = []

    def sync(f):
        calls.append(f)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(f)

    monkeypatch.setattr(failures, "_sync", sync)


def test_full_disk_reports_the_disagreement(tmp_path, monkeypatch, capfd):
    """ENOSPC mid-save: FailureNotSaved names ENOSPC, the spec, the device and carries the
    difference text; the same is printed on stderr at once; no folder, partial or not, is
    left behind."""
    monkeypatch.setattr("verify.failures._NOT_SAVED_TOLD", {})
    _enospc_on_second_write(monkeypatch)
    with pytest.raises(FailureNotSaved) as info:
        _save(tmp_path, files={"kernel.cl": "__kernel void k() {}"})
    err = info.value
    assert err.reason.startswith("ENOSPC") and err.spec == "vector_add"
    assert err.difference == "buffer 'c' differs at index (3,)"
    assert "ENOSPC" in str(err) and "differs at index (3,)" in str(err)
    printed = capfd.readouterr().err
    assert "NOT SAVED" in printed and "ENOSPC" in printed and "differs at index (3,)" in printed
    assert list((tmp_path / "failures").iterdir()) == []


def test_unwritable_directory_is_not_saved_with_the_reason(tmp_path, capfd, monkeypatch):
    """A failures directory that cannot be created (a path under a regular file) is reported
    the same way, naming ENOTDIR."""
    monkeypatch.setattr("verify.failures._NOT_SAVED_TOLD", {})
    (tmp_path / "file").write_text("")
    with pytest.raises(FailureNotSaved, match="ENOTDIR"):
        save_failure(tmp_path / "file" / "failures", spec_name="k", inputs={}, launch={},
                     difference="outputs differ")
    assert "outputs differ" in capfd.readouterr().err


def test_case_saved_before_launch_then_completed_or_discarded(tmp_path):
    """A case saved before its launch is listed at once (nothing lost if the launch kills the
    process); record_outcome adds the difference and extra keys; discard_failure removes it
    and leaves no partial folder."""
    root = tmp_path / "failures"
    first = _save(tmp_path, difference="", extra={"stage": "pending"})
    assert list_failures(root) == [first]
    record_outcome(first, difference="device crashed (signal 11)", extra={"stage": "crashed"})
    got = load_failure(first)
    assert got.difference == "device crashed (signal 11)"
    assert got.meta["extra"] == {"stage": "crashed"} and got.inputs.keys() == _inputs().keys()
    assert sorted(p.name for p in first.iterdir()) == ["inputs.npz", "meta.json"]
    second = _save(tmp_path, difference="")
    discard_failure(second)
    assert list_failures(root) == [first] and sorted(root.iterdir()) == [first]
    with pytest.raises(FileNotFoundError):
        discard_failure(tmp_path)  # not a failure folder: never removed


_SLOW_WRITER = """
import sys, time
from verify import failures
real = failures._sync
def slow(f):
    real(f)
    print("writing", flush=True)
    time.sleep(60)
failures._sync = slow
failures.save_failure(sys.argv[1], spec_name="k", inputs={"x": 1.5}, launch={})
"""


def test_writer_killed_mid_save_leaves_nothing_visible_and_is_cleaned(tmp_path):
    """A writer SIGKILLed in the middle of a save leaves only a .partial-* folder: no failure
    is listed, and the next listing removes the partial (its pid is dead)."""
    root = tmp_path / "failures"
    child = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(root)],
                             stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert child.stdout.readline().strip() == "writing"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    partials = [p.name for p in root.iterdir()]
    assert len(partials) == 1 and partials[0].startswith(f".partial-{host()}-{child.pid}-")
    assert list_failures(root) == []
    assert list(root.iterdir()) == []


def test_stale_partials_of_other_hosts_are_cleaned_by_age(tmp_path):
    """A partial folder of another host (its pid cannot be checked) or of a live writer is
    kept while young; clean_partials removes both once older than STALE_PARTIAL_S (a pid may
    have been reused; no save takes that long)."""
    root = tmp_path / "failures"
    other = root / ".partial-otherhost-123-abc"
    other.mkdir(parents=True)
    mine = root / f".partial-{host()}-{os.getpid()}-abc"
    mine.mkdir()
    assert clean_partials(root) == []
    later = time.time() + STALE_PARTIAL_S + 1
    assert sorted(clean_partials(root, now=later)) == sorted([other, mine])
    assert list(root.iterdir()) == []


def test_full_disk_during_shrinking_is_told_once_then_summarised(tmp_path, monkeypatch, capfd):
    """Every shrink step saves a case: on a full disk the first is printed in full, the second
    gets one summary line, later ones are silent (each still raises FailureNotSaved)."""
    monkeypatch.setattr("verify.failures._NOT_SAVED_TOLD", {})
    monkeypatch.setattr("verify.failures._write_folder", _raise_enospc)
    for i in range(4):
        with pytest.raises(FailureNotSaved, match=f"differs at {i}"):
            _save(tmp_path, difference=f"differs at {i}")
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "differs at 0" in lines[0]
    assert "further failing cases of vector_add" in lines[1] and "ENOSPC" in lines[1]


def _raise_enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("device", device_params(only=("pocl", "intel-cpu")))
def test_verify_on_a_full_disk_still_reports_the_disagreement(device, tmp_path, monkeypatch,
                                                              capsys):
    """'clsim verify' with the planted off-by-one twin on a full disk: exit 1 (not an internal
    error), and the terminal shows the disagreement (index, values) with ENOSPC."""
    from verify import cli

    monkeypatch.setattr("verify.failures._NOT_SAVED_TOLD", {})
    monkeypatch.setattr("verify.failures._write_folder", _raise_enospc)
    code = cli.main(["verify", "vector_add", "-d", device, "-n", "20", "--seed", "3",
                     "--cl", str(ROOT / "kernels_cl" / "planted" / "vector_add_off_by_one.cl"),
                     "--no-progress", "--failures-dir", str(tmp_path / "failures")])
    captured = capsys.readouterr()
    assert code == 1
    for stream in (captured.out, captured.err):
        assert "ENOSPC" in stream and "differs at index" in stream
    # the search went on to a minimal example (shrinking is not stopped by the disk)
    assert "DIFFER" in captured.out and "minimal example" in captured.out
    assert "NOT SAVED (ENOSPC" in captured.out
    assert not (tmp_path / "failures").exists() or not list((tmp_path / "failures").iterdir())


def test_next_save_cleans_partials_of_dead_writers(tmp_path):
    """A partial folder of a writer on this host that has exited is removed by the next
    save, which is then the only folder."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    root = tmp_path / "failures"
    left = root / f".partial-{host()}-{dead.stdout.strip()}-abc"
    left.mkdir(parents=True)
    (left / "inputs.npz").write_bytes(b"PK")
    saved = _save(tmp_path)
    assert list(root.iterdir()) == [saved]


def test_outcome_on_a_full_disk_keeps_the_saved_case(tmp_path, monkeypatch, capfd):
    """record_outcome on a full disk: FailureNotSaved carries the outcome (printed too), and
    the case saved before the launch is still there, whole, with its old meta.json."""
    monkeypatch.setattr("verify.failures._NOT_SAVED_TOLD", {})
    folder = _save(tmp_path, difference="")
    monkeypatch.setattr("verify.failures.replace_file", _raise_enospc)
    with pytest.raises(FailureNotSaved, match="device timed out after 10 s"):
        record_outcome(folder, difference="device timed out after 10 s")
    assert "device timed out" in capfd.readouterr().err
    assert load_failure(folder).difference == "" and list_failures(folder.parent) == [folder]
