"""Contracts of verify/replay.py for folders someone sent you: replay imports no Python file or
module a folder's meta.json names, reads no file outside the folder (``cl_path``, links), and
says in one line what to pass instead; it loads a library kernel by name or the file the user
names with ``--kernel``, and tells what it will load before loading it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from clsim.errors import SimulationError
from verify import cli
from verify.failures import save_failure
from verify.replay import load_failure_case, plan_replay

SAVED_CL = "__kernel void vector_add(__global const float* a, __global const float* b,\n" \
           "    __global float* c, const int n) { int i = get_global_id(0);\n" \
           "    if (i < n) c[i] = a[i] + b[i]; }\n"
EVIL = """
from pathlib import Path
Path({marker!r}).write_text("ran")
from kernels_py.vector_add import SPEC as vector_add
"""


@pytest.fixture
def opened():
    """Every file path opened while the test runs (an audit hook cannot be removed, so it
    records only while the list is live)."""
    paths: list[str] = []
    live = [True]

    def hook(event: str, args: tuple) -> None:
        if live[0] and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
            paths.append(os.fsdecode(args[0]))

    sys.addaudithook(hook)
    yield paths
    live[0] = False


def _folder(tmp_path: Path, origin: dict, *, cl_path: str | None = None,
            files: dict | None = None, **launch_extra) -> Path:
    n = 5
    inputs = {"a": np.arange(n, dtype=np.float32), "b": np.ones(n, np.float32),
              "c": np.zeros(n, np.float32), "n": np.int32(n)}
    launch = {"global_size": (8,), "local_size": (4,), "kernel_name": "vector_add",
              "params": ["a", "b", "c", "n"], "options": [], "requires": [],
              "cl_path": cl_path, "origin": origin, "policies": {"c": "exact"},
              "default_policy": "exact", "all_arrays": False, **launch_extra}
    return save_failure(tmp_path / "failures", spec_name="vector_add", inputs=inputs,
                        launch=launch, device="pocl", difference="buffer 'c' differs",
                        files={"kernel.cl": SAVED_CL} if files is None else files)


def _evil(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    evil = tmp_path / "evil.py"
    evil.write_text(EVIL.format(marker=str(marker)))
    return evil, marker


def test_file_origin_is_never_imported(tmp_path, opened, capsys):
    """A folder whose origin names a Python file: replay refuses before importing it (the
    marker the file would write is absent, the file is never opened) and the one-line CLI
    error says to name the file with --kernel if it is trusted."""
    evil, marker = _evil(tmp_path)
    folder = _folder(tmp_path, {"kind": "file", "path": str(evil), "name": "vector_add"})
    opened.clear()  # writing the files above opened them
    with pytest.raises(SimulationError, match=r"never imports.*--kernel .*evil\.py::vector_add"):
        load_failure_case(folder)
    assert cli.main(["replay", str(folder)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--kernel" in err
    assert not marker.exists()
    assert str(evil) not in opened
    assert not [m for m in sys.modules if m.startswith("clsim_user_evil")]


def test_kernel_origin_module_is_never_imported(tmp_path, capsys):
    """origin kind "kernel" naming the module 'this' (prints the Zen of Python on import):
    not imported, nothing printed but the error."""
    sys.modules.pop("this", None)
    folder = _folder(tmp_path, {"kind": "kernel", "module": "this", "path": "", "attr": "x"})
    assert cli.main(["replay", str(folder)]) == 2
    captured = capsys.readouterr()
    assert "this" not in sys.modules
    assert "Beautiful is better" not in captured.out + captured.err
    assert "never imports" in captured.err


def test_cl_path_outside_the_folder_is_not_read(tmp_path, opened):
    """cl_path in meta.json pointing at /etc/passwd (and at an existing .cl file): the pair's
    source is the kernel.cl saved in the folder; neither path is opened; the plan shows it."""
    outside = tmp_path / "outside.cl"
    outside.write_text("// outside\n")
    for recorded in ("/etc/passwd", str(outside)):
        folder = _folder(tmp_path, {"kind": "spec", "name": "vector_add"}, cl_path=recorded)
        opened.clear()  # writing the files above opened them
        plan = plan_replay(folder)
        _, pair, case = load_failure_case(folder)
        assert pair.source == SAVED_CL and case.global_size == (8,)
        assert f"it was {recorded}" in plan.describe()
        assert recorded not in opened


def test_missing_saved_source_asks_for_cl(tmp_path):
    """No kernel.cl in the folder: an error naming --cl and the recorded path, and the
    recorded path is not read even when it exists."""
    folder = _folder(tmp_path, {"kind": "spec", "name": "vector_add"}, cl_path="/etc/passwd",
                     files={})
    with pytest.raises(SimulationError, match=r"no kernel\.cl .*--cl FILE \(it was /etc/passwd"):
        load_failure_case(folder)


@pytest.mark.parametrize("name", ["kernel.cl", "inputs.npz", "meta.json"])
def test_linked_files_out_of_the_folder_are_refused(tmp_path, opened, name):
    """A file of the folder replaced by a symbolic link to /etc/passwd: refused as a link,
    the target never opened."""
    folder = _folder(tmp_path, {"kind": "spec", "name": "vector_add"})
    (folder / name).unlink()
    (folder / name).symlink_to("/etc/passwd")
    opened.clear()
    with pytest.raises(SimulationError, match="a link"):
        load_failure_case(folder)
    assert "/etc/passwd" not in opened


def test_user_named_kernel_is_loaded_after_the_announcement(tmp_path):
    """--kernel FILE::NAME loads the file the user named; the plan is announced before it is
    imported (the file's marker does not exist yet when the announcement comes)."""
    evil, marker = _evil(tmp_path)
    folder = _folder(tmp_path, {"kind": "file", "path": "/elsewhere/x.py", "name": "vector_add"})
    told = []

    def announce(text: str) -> None:
        told.append((text, marker.exists()))

    _, pair, _ = load_failure_case(folder, kernel=f"{evil}::vector_add", announce=announce)
    assert told == [(f"loading Python kernel: {evil}::vector_add (named with --kernel); "
                     "OpenCL C: kernel.cl saved in the folder", False)]
    assert marker.exists() and pair.kernel.name == "vector_add"


def test_library_kernel_by_name_and_unknown_names(tmp_path):
    """A library spec's folder replays with the library kernel; a spec name that is not in the
    library is an error asking for --kernel."""
    from kernels_py.vector_add import vector_add

    _, pair, _ = load_failure_case(_folder(tmp_path, {"kind": "spec", "name": "vector_add"}))
    assert pair.kernel is vector_add
    folder = _folder(tmp_path, {"kind": "spec", "name": "os.system"})
    with pytest.raises(SimulationError, match=r"'os.system' is not a library kernel.*--kernel"):
        load_failure_case(folder)


def test_build_options_that_read_files_are_refused(tmp_path):
    """-I (include from a folder) in the saved options is refused; -D and -cl-* pass."""
    ok = _folder(tmp_path, {"kind": "spec", "name": "vector_add"},
                 options=["-DN=4", "-cl-fast-relaxed-math"])
    assert load_failure_case(ok)[1].options == ("-DN=4", "-cl-fast-relaxed-math")
    bad = _folder(tmp_path, {"kind": "spec", "name": "vector_add"}, options=["-I/etc"])
    with pytest.raises(SimulationError, match=r"build option '-I/etc' is not replayed"):
        load_failure_case(bad)


def test_control_characters_from_the_folder_are_escaped(tmp_path):
    """A path with a terminal escape in meta.json is shown escaped in the error."""
    folder = _folder(tmp_path, {"kind": "file", "path": "/x/\x1b[2Jevil.py", "name": "k"})
    with pytest.raises(SimulationError) as info:
        load_failure_case(folder)
    assert "\x1b" not in str(info.value) and "\\x1b[2Jevil.py" in str(info.value)
