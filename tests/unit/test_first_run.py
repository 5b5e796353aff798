"""A first `clsim run`: traffic is counted only with --traffic, and what compiles once per
machine is said on stderr while it happens and counted in the printed compile seconds
(clsim/commands/first_run.py)."""

from __future__ import annotations

import io
import re
import sys

import pytest

from clsim.cli import main
from clsim.commands import first_run, progress

_TINY = """from numba import cfunc, types


@cfunc(types.int64(types.int64), cache=True)
def twice(x):
    return 2 * x
"""


def test_no_traffic_launch_without_traffic(capsys, monkeypatch):
    """Without --traffic no second variant is compiled or run, and the output says how to get
    the counts."""
    import clsim.commands.run as run_command

    def refuse(*args, **kwargs):
        raise AssertionError("a traffic launch was started without --traffic")

    monkeypatch.setattr(run_command, "PendingTraffic", refuse)
    assert main(["run", "vector_add", "--shape", "n=300", "--local-size", "64"]) == 0
    out = capsys.readouterr().out
    assert "  traffic: not counted (add --traffic)" in out
    assert "with traffic counting" not in out


def test_a_once_per_machine_part_is_said_and_counted_once(tmp_path, monkeypatch):
    path = tmp_path / "tiny_part.py"
    path.write_text(_TINY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(first_run.PARTS, "tiny", (str(path), "the tiny part", "tiny_part"))
    assert not first_run.cached(str(path))
    stream = io.StringIO()
    assert first_run.prepare("tiny", jit=False, stream=stream) == 0.0  # nothing to compile
    seconds = first_run.prepare("tiny", jit=True, stream=stream)
    assert seconds > 0
    assert stream.getvalue() == ("clsim: compiling the tiny part (once per machine; cached "
                                 "afterwards)...\n")
    assert first_run.cached(str(path))
    monkeypatch.delitem(sys.modules, "tiny_part")  # a later process: the disk cache answers
    again = io.StringIO()
    assert first_run.prepare("tiny", jit=True, stream=again) == 0.0 and again.getvalue() == ""


def test_a_part_compiled_by_a_loader_is_loaded_by_it(tmp_path, monkeypatch):
    """``module:function`` in PARTS: the first run calls the loader (the checks' loader also
    compiles their after-launch merge), said and counted as an import is."""
    path = tmp_path / "tiny_loaded.py"
    path.write_text(_TINY + "\nLOADS = []\n\n\ndef load():\n    LOADS.append(twice(2))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(first_run.PARTS, "tiny", (str(path), "the tiny part", "tiny_loaded:load"))
    stream = io.StringIO()
    assert first_run.prepare("tiny", jit=True, stream=stream) > 0
    assert sys.modules["tiny_loaded"].LOADS == [4] and "the tiny part" in stream.getvalue()
    assert first_run.PARTS["checks"][2] == "clsim.checks.native:load_jit"
    monkeypatch.delitem(sys.modules, "tiny_loaded")


def test_the_printed_compile_seconds_include_the_once_per_machine_parts(capsys, monkeypatch):
    """--check all links the checks' shared helpers: their compile seconds are in the line."""
    from clsim.commands import traffic_launch

    monkeypatch.setattr(traffic_launch, "SIDE_BY_SIDE", False)  # compiled here, not beside
    monkeypatch.setattr(first_run, "prepare", lambda part, jit, stream=None: 500.0)
    assert main(["run", "vector_add", "--shape", "n=300", "--local-size", "64",
                 "--check", "all"]) == 0
    line = re.search(r"compile: vector_add with race and uninitialised-read checking "
                     r"([\d.]+) s", capsys.readouterr().out)
    assert line and float(line[1]) >= 500.0


def test_the_compile_note_names_the_shared_helpers_when_they_compile():
    stream = io.StringIO()
    with progress.RunProgress("softmax", stream, also=first_run.HELPERS[1]) as show:
        show._compile_note()
    assert stream.getvalue() == ("clsim: compiling softmax and clsim's shared helpers (first "
                                 "run on this machine; cached afterwards)...\n")


@pytest.mark.parametrize("relative", [first_run.HELPERS[0],
                                      *(p[0] for p in first_run.PARTS.values())])
def test_each_part_names_a_file_of_clsim(relative):
    assert (first_run._CLSIM / relative).is_file()


_MERGE_COMPILED = """
import numba, numpy as np
from clsim.checks import layout as ly
from clsim.checks import native
from clsim.checks.state import lazy_zeros
native.load_entry()
native_lib = native.load(True)
# the arrays clsim.checks.parallel._cross passes: per-thread shadows, object table, ranges
shadows = lazy_zeros(2 * 8).reshape(2, 8)
table = np.zeros((3, ly.OBJ_COLS), np.int64)
ranges = np.stack([np.zeros(2 * 3, np.int64)] * 2)
print(tuple(numba.typeof(a) for a in (shadows, table, ranges)) in native_lib._cs_cross.overloads)
"""


def test_the_threaded_checks_merge_compiles_with_the_checks_helpers():
    """The first checked launch on a machine took 1.2 s, not 42 ms, in its printed run time:
    the merge after a threaded launch (``_cs_cross``) compiled at its first call. Loading the
    checks' shared helpers, which a first run announces and counts (``first_run.PARTS``), and
    which a checked launch does before it starts, compiles it for the launch's argument types
    (a fresh process: nothing launched before)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", _MERGE_COMPILED], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


_KERNEL_FILE = """import numpy as np
import clsim


@clsim.kernel
def doubled(x, y):
    i = clsim.get_global_id(0)
    y[i] = 2.0 * x[i + 1]
"""


def _kernel_in(folder, name: str):
    import importlib.util

    folder.mkdir()
    (folder / "doubled.py").write_text(_KERNEL_FILE)
    spec = importlib.util.spec_from_file_location(name, folder / "doubled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.doubled


def test_a_kernel_in_another_checkout_is_the_same_generated_module(tmp_path, monkeypatch):
    """The generated source carries no folder: the same kernel file in a second checkout (or
    temporary folder) is the same module, whose compiled code the kernel cache already holds;
    messages still name the file and line."""
    import numpy as np

    import clsim
    from clsim.errors import OutOfBoundsError

    cache = tmp_path / "kernels"
    monkeypatch.setenv("CLSIM_CACHE_DIR", str(cache))
    paths = []
    for checkout in ("one", "two"):
        kernel = _kernel_in(tmp_path / checkout, f"doubled_{checkout}")
        x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
        with pytest.raises(OutOfBoundsError, match=r"doubled\.py:8"):
            clsim.run(kernel, (8,), (4,), (x, y), jit=False)
        paths.append(clsim.run(kernel, (7,), (7,), (x, y), jit=False).module_path)
    assert paths[0] == paths[1]
    generated = sorted(cache.glob("clsim_gen_doubled_*.py"))
    assert len(generated) == 2  # the two launch shapes, each once for both checkouts
    assert not [p for p in generated if str(tmp_path) in p.read_text()]


@pytest.fixture
def entry_not_loaded(monkeypatch):
    """This process as before its first checked launch: the checks' C entry points not yet
    loaded (they stay in Numba's disk cache)."""
    from clsim.checks import native

    monkeypatch.setattr(native, "_ENTRY", [])
    monkeypatch.setattr(native, "_ELSEWHERE", [])
    monkeypatch.delitem(sys.modules, "clsim.checks.native_entry", raising=False)
    return native


def test_the_kernel_compiles_while_the_entry_points_compile_elsewhere(entry_not_loaded, tmp_path,
                                                                     monkeypatch):
    """While another process compiles the entry points, a checked launch compiles its kernel
    first and waits for them at the kernel's first call: the wait is in the compile seconds,
    and the launch runs with the loaded entry points (the deferral's address set)."""
    import time
    from pathlib import Path

    import numpy as np

    import clsim
    from clsim.checks import layout as ly

    native = entry_not_loaded
    monkeypatch.setenv("CLSIM_CACHE_DIR", str(tmp_path))
    kernel = _kernel_in(tmp_path / "k", "doubled_elsewhere")
    seen = []

    def wait():  # the other process finishing: by now the kernel must have compiled
        groups = [m._group for name, m in sys.modules.items()
                  if name.startswith("clsim_gen_doubled_") and hasattr(m, "_cs_call")]
        seen.append(bool(groups) and all(group.signatures for group in groups))
        time.sleep(0.5)

    native.compiled_elsewhere(wait)
    assert isinstance(native.entry(True, np.zeros(ly.M_RANGES, np.int64)), native.LazyEntry)
    x, y = np.arange(65, dtype=np.float32), np.zeros(64, np.float32)
    result = clsim.run(kernel, (64,), (32,), (x, y), checks="all", report_all=True)
    assert seen == [True]
    assert result.compile_s >= 0.5 and result.findings == []
    assert result.elapsed_s < 0.4  # the wait was not in the launch's time (its timeout's)
    assert y.tolist() == (2 * x[1:]).tolist()
    meta = np.zeros(ly.M_RANGES, np.int64)
    assert native.entry(True, meta) is native.load_entry()._cs_native  # loaded: no more waits
    assert meta[ly.M_DEFER_FN] == native.load_entry()._cs_defer_c.address != 0
    clsim.run(kernel, (64,), (32,), (x, y), checks="all", report_all=True)  # the real entry:
    group = sys.modules[Path(result.module_path).stem]._group  # the same compiled kernel
    assert len(group.signatures) == 1


def test_clsim_run_compiles_the_checks_helpers_beside_and_says_so(entry_not_loaded, capsys,
                                                                  monkeypatch):
    """A first checked `clsim run` (their cache empty, two cores) starts the second process,
    says so while it compiles and names its seconds beside the counted compile seconds; a
    later run finds them loaded and says nothing."""
    from clsim.commands import checks_beside, traffic_launch

    native = entry_not_loaded
    monkeypatch.setattr(traffic_launch, "SIDE_BY_SIDE", True)
    monkeypatch.setattr(first_run, "cached", lambda relative: False)
    waited = []
    monkeypatch.setattr(checks_beside.ChecksBeside, "wait", lambda self, w=checks_beside.
                        ChecksBeside.wait: (waited.append(self.process.pid), w(self)))
    argv = ["run", "vector_add", "--shape", "n=77", "--local-size", "7", "--seed", "21"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert ("clsim: compiling the checks' shared helpers in a second process, beside the kernel "
            "(once per machine; cached afterwards)...") in captured.err
    line = re.search(r"compile: vector_add with race and uninitialised-read checking ([\d.]+) s "
                     r"\(with the checks' shared helpers compiled beside it, ([\d.]+) s\)",
                     captured.out)
    assert line and len(waited) == 1 and waited[0] > 0, captured.out
    assert not native.pending_elsewhere() and "clsim.checks.native_entry" in sys.modules
    assert main(argv) == 0
    again = capsys.readouterr()
    assert "second process" not in again.err and "beside it" not in again.out
