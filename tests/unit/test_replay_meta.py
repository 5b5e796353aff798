"""Crafted failure folders (verify.replay_meta): a meta.json field of the wrong type, nested
thousands deep or naming a launch too large to simulate is "the folder is damaged" (exit 2,
one line), never an internal error (exit 3) or an unbounded run; terminal escapes in the
folder's text are printed escaped; case folders respect the umask."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from clsim import cli
from verify import replay as replay_module
from verify.failures import save_failure

KERNEL = "__kernel void vector_add(__global const float* a, __global const float* b,\n" \
         "    __global float* c, const int n) { int i = get_global_id(0);\n" \
         "    if (i < n) c[i] = a[i] + b[i]; }\n"
ESC = "\x1b]0;owned\x07\x1b[2J"


def _folder(tmp_path: Path, **launch_extra) -> Path:
    n = 5
    inputs = {"a": np.arange(n, dtype=np.float32), "b": np.ones(n, np.float32),
              "c": np.zeros(n, np.float32), "n": np.int32(n)}
    launch = {"global_size": (8,), "local_size": (4,), "kernel_name": "vector_add",
              "params": ["a", "b", "c", "n"], "options": [], "requires": [],
              "origin": {"kind": "spec", "name": "vector_add"}, "policies": {"c": "exact"},
              "default_policy": "exact", "all_arrays": False, "shape": {"n": n},
              "forced_subgroup_size": None, **launch_extra}
    return save_failure(tmp_path / "failures", spec_name="vector_add", inputs=inputs,
                        launch=launch, device="pocl", seed=1, files={"kernel.cl": KERNEL})


def _edit(folder: Path, change) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta))


def _replay(folder: Path, capsys) -> tuple[int, str, str]:
    code = cli.main(["replay", str(folder)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_devices(monkeypatch):
    """Replay up to its report without any device: these tests are about the folder."""
    monkeypatch.setattr(replay_module, "replay_devices", lambda *a, **k: [])


@pytest.mark.parametrize("value", ["8 -I/etc", 8.5, True, "16", -1, 1 << 20, [8]])
def test_wrong_typed_subgroup_size_is_a_damaged_folder(tmp_path, capsys, no_devices, value):
    folder = _folder(tmp_path)
    _edit(folder, lambda meta: meta["launch"].update(forced_subgroup_size=value))
    code, _, err = _replay(folder, capsys)
    assert code == 2, err
    assert "launch.forced_subgroup_size is" in err and "The folder is damaged" in err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err


@pytest.mark.parametrize("field, value", [
    ("kernel_name", "k -I/etc"), ("params", "abcd"), ("options", "-DX"), ("shape", [1]),
    ("input_seed", "7"), ("all_arrays", "no"), ("aliases", {"a": 1}), ("local_size", [0]),
    ("global_size", [8, 8, 8, 8]),
])
def test_other_wrong_typed_launch_fields(tmp_path, capsys, no_devices, field, value):
    folder = _folder(tmp_path)
    _edit(folder, lambda meta: meta["launch"].update({field: value}))
    code, _, err = _replay(folder, capsys)
    assert code == 2 and f"launch.{field} is" in err and "damaged" in err, err


def test_deeply_nested_meta_is_a_damaged_folder(tmp_path, capsys):
    folder = _folder(tmp_path)
    depth = 100_000
    (folder / "meta.json").write_text('{"inputs": {}, "x": ' + "[" * depth + "]" * depth + "}")
    code, _, err = _replay(folder, capsys)
    assert code == 2 and "nested too deeply" in err and "damaged" in err, err


def test_huge_launch_is_refused_before_running(tmp_path, capsys, no_devices):
    folder = _folder(tmp_path, global_size=(1 << 40,), local_size=None)
    code, _, err = _replay(folder, capsys)
    assert code == 2 and f"{1 << 40} work-items" in err and "at most" in err, err


def test_terminal_escapes_from_the_folder_are_escaped(tmp_path, capsys, no_devices):
    folder = _folder(tmp_path)
    _edit(folder, lambda meta: meta.update(device="pocl" + ESC, seed="1" + ESC))
    code, out, err = _replay(folder, capsys)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "failed on pocl\\x1b]0;owned\\x07" in out and "(seed 1\\x1b" in out
    folder = _folder(tmp_path)
    _edit(folder, lambda meta: meta.update(spec_name="vector_add" + ESC))
    code, out, err = _replay(folder, capsys)
    assert code == 0 and "vector_add\\x1b]0;owned" in out, err
    folder = _folder(tmp_path)  # a shape key is a name: escapes make the folder damaged
    _edit(folder, lambda meta: meta["launch"]["shape"].update({"n" + ESC: 5}))
    code, out, err = _replay(folder, capsys)
    assert code == 2 and "launch.shape is" in err and "\\x1b" in err, err
    assert "\x1b" not in out + err and "\x07" not in out + err


@pytest.mark.parametrize("mask", [0o077, 0o022, 0o002])
def test_case_folders_respect_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        folder = _folder(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE((folder / "meta.json").stat().st_mode) == 0o666 & ~mask
