"""What ``clsim run`` compiles, said while it compiles and counted in the compile line; the
traffic launch compiled beside the main launch in a child process (clsim/commands/run.py,
clsim/commands/traffic_launch.py)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest

from clsim.commands import progress
from clsim.commands.traffic_launch import PendingTraffic, TrafficRequest
from clsim.errors import SimulationError


def test_the_compile_note_names_the_variant_and_that_it_is_paid_once():
    """The traffic variant's note says which instrument it compiles in."""
    stream = io.StringIO()
    with progress.RunProgress("softmax", stream, purpose="with traffic counting") as show:
        show("compile", 0, 4)
        time.sleep(progress._COMPILE_NOTE_AFTER_S + 0.3)
    assert stream.getvalue() == ("clsim: compiling softmax with traffic counting (first run; "
                                 "cached afterwards)...\n")


def _cold_cli(argv: list[str], cache: str) -> subprocess.CompletedProcess:
    """The command in a fresh process (nothing warm in memory) with its own kernel cache."""
    env = {**os.environ, "CLSIM_CACHE_DIR": cache}
    return subprocess.run([sys.executable, "-m", "clsim.cli", *argv], capture_output=True,
                          text=True, env=env, timeout=600)


def test_a_cold_run_counts_both_variants_in_its_compile_line(tmp_path):
    """Empty kernel cache, fresh process: both variants compile and the compile line lists
    both (the traffic one compiled in the child process, beside the main one); the notes
    said so on stderr (no terminal: the notes are whole lines, no bar)."""
    argv = ["run", "vector_add", "--shape", "n=300", "--local-size", "64", "--traffic"]
    proc = _cold_cli(argv, str(tmp_path / "kernels"))
    assert proc.returncode == 0, proc.stderr
    # The main variant is the checked one: clsim run checks everything by default.
    line = re.search(r"  compile: vector_add with race and uninitialised-read checking "
                     r"([\d.]+) s, vector_add with traffic counting ([\d.]+) s "
                     r"\(side by side\)", proc.stdout)
    assert line, proc.stdout
    assert float(line[1]) > 0 and float(line[2]) > 0
    assert "traffic of vector_add" in proc.stdout  # the child's traffic report arrived
    # The whole wait, of which the compile is a part, and the start before the command.
    wall = re.search(r"  wall: ([\d.]+) s from the process's start to this line, of it "
                     r"([\d.]+) s before the command \(Python's start, the imports of clsim, "
                     r"numpy and Numba\)\n", proc.stdout)
    assert wall, proc.stdout
    assert 0 < float(wall[2]) < float(wall[1])
    assert float(wall[1]) >= max(float(line[1]), float(line[2])) + float(wall[2])
    if float(line[2]) > progress._COMPILE_NOTE_AFTER_S + 0.5:
        # Where no test has compiled the traffic helpers yet, the note names them too.
        assert any(re.fullmatch(r"clsim: compiling vector_add with traffic counting( and "
                                r"clsim's shared helpers)? \(first run( on this machine)?; "
                                r"cached afterwards\)\.\.\.", note)
                   for note in proc.stderr.splitlines()), proc.stderr


def _request(name: str, **options) -> TrafficRequest:
    return TrafficRequest(name, {"n": 300}, 0, (64,), {"jit": True, "subgroup_size": None,
                                                       "checks": "default", **options})


def test_an_error_in_the_traffic_child_is_raised_here():
    """The child's SimulationError comes back whole, as if counted in this process."""
    with PendingTraffic(_request("no_such_kernel")) as pending, \
            pytest.raises(SimulationError, match="no kernel named 'no_such_kernel'"):
        pending.result()


def test_a_child_that_dies_is_replaced_by_counting_here():
    """A child killed before answering: the traffic is counted in this process."""
    with PendingTraffic(_request("vector_add")) as pending:
        pending.process.kill()
        outcome = pending.result()
    assert outcome.traffic is not None and outcome.traffic.kernel == "vector_add"
    assert pending.process is None  # nothing left running


def test_the_traffic_request_drops_the_checks_of_the_main_launch():
    """Counts do not depend on the checks: the child compiles the default-checks variant."""
    options = _request("vector_add", checks="all", report_all=True).run_options()
    assert options["checks"] == "default" and options["traffic"] is True
    assert "report_all" not in options


def test_a_command_imports_only_its_own_module():
    """clsim list builds only its own arguments: the verifier's fuzzer and the conformance
    suite (mpmath) are not imported; clsim --help still lists every command."""
    probe = ("import sys; from clsim.cli import main; main(['list']); "
             "print(sorted(m for m in ('verify.fuzz', 'verify.conformance', 'mpmath') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
    listing = subprocess.run([sys.executable, "-m", "clsim.cli", "--help"],
                             capture_output=True, text=True).stdout
    for name in ("list", "run", "report", "devices", "verify", "replay", "conformance"):
        assert f"    {name}" in listing


def test_the_child_is_forked_only_from_a_single_threaded_process():
    """Fork copies one thread: with another thread alive (locks it may hold) the child is
    spawned instead."""
    import multiprocessing
    import threading

    from clsim.commands import traffic_launch

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("this platform cannot fork")
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    alone = threading.active_count() == 1
    worker.start()
    try:
        assert traffic_launch.start_method() == "spawn"
    finally:
        stop.set()
        worker.join()
    if alone and not traffic_launch.numba_threads_started():
        assert traffic_launch.start_method() == "fork"


def test_warming_numba_before_the_fork_starts_no_thread():
    """The parent sets up Numba's CPU target before forking, so the child inherits it; that
    must leave the process single-threaded and Numba's pool unstarted (else no fork)."""
    import subprocess
    import sys

    code = ("import sys, threading; from clsim.commands import traffic_launch as t; "
            "before = 'numba.np.arraymath' in sys.modules; t.warm_numba(); "
            "print(before, 'numba.np.arraymath' in sys.modules, threading.active_count(), "
            "t.numba_threads_started(), t.start_method())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "1", "False", "fork"]  # (the registries: numba.np.*)


def test_no_fork_once_numba_threads_run():
    """After a parallel launch Numba's native pool runs: the child is spawned."""
    import numpy as np

    import clsim
    from clsim.commands import traffic_launch
    from kernels_py.vector_add import vector_add

    a = np.ones(4096, np.float32)
    clsim.run(vector_add, (4096,), (64,), (a, a.copy(), np.zeros_like(a), np.int32(4096)))
    assert traffic_launch.numba_threads_started()
    assert traffic_launch.start_method() == "spawn"


_UNGUARDED = '''
import numpy as np

import clsim
from clsim import get_global_id
from clsim.spec import EXACT, KernelSpec, Launch


@clsim.kernel
def unguarded(x, y, n):
    i = get_global_id(0)
    v = x[i]  # no 'if i < n': the last work-items read past the end
    if i < n:
        y[i] = v


def make_inputs(rng, shape):
    n = shape["n"]
    return {"x": np.ones(n, np.float32), "y": np.zeros(n, np.float32), "n": np.int32(n)}


SPEC = KernelSpec(
    name="unguarded", description="reads past the end", kernel=unguarded,
    cl_file="unguarded.cl", make_inputs=make_inputs,
    launch=lambda inputs, shape, local=None: Launch(
        (64,), (64,), (inputs["x"], inputs["y"], inputs["n"])),
    reference=lambda inputs: {"y": inputs["x"]}, outputs={"y": EXACT},
    default_shape={"n": 50})
'''


def test_a_traffic_launch_error_comes_after_the_main_results(tmp_path):
    """--check none lets an out-of-bounds read pass the main launch; the traffic launch
    (default checks) stops on it: the main run's lines are printed first, then the error as
    one line, exit code 2."""
    (tmp_path / "unguarded.py").write_text(_UNGUARDED)
    proc = _cold_cli(["run", f"{tmp_path / 'unguarded.py'}::SPEC", "--check", "none",
                      "--traffic"], str(tmp_path / "kernels"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith("unguarded: n=50")
    assert "checks: none (--check none)" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1].startswith("clsim: error: ")
    assert "out of bounds" in proc.stderr


@pytest.mark.parametrize("beside, words", [(True, "(side by side)"),
                                           (False, "(one after the other)")])
def test_the_compile_line_says_how_the_variants_compiled(capsys, beside, words):
    """Both variants compiled: the line says whether the traffic one compiled in the child
    (beside the main one) or after it in this process; one variant alone: no such words."""
    from clsim.commands.run import _print_compile
    from clsim.commands.traffic_launch import TrafficOutcome

    _print_compile("softmax", "all", 2.5, TrafficOutcome(None, 7.25, beside))
    assert capsys.readouterr().out == (
        "  compile: softmax with race and uninitialised-read checking 2.50 s, softmax with "
        f"traffic counting 7.25 s {words}\n")
    _print_compile("softmax", "default", 0.0, TrafficOutcome(None, 7.25, beside))
    assert capsys.readouterr().out == "  compile: softmax with traffic counting 7.25 s\n"


def test_side_by_side_can_be_turned_off():
    """CLSIM_SIDE_BY_SIDE=0: the traffic variant compiles in this process, after the main."""
    probe = "import clsim.commands.traffic_launch as t; print(t.SIDE_BY_SIDE)"
    for value, expected in (("0", "False"), ("1", str(len(os.sched_getaffinity(0)) > 1))):
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             env={**os.environ, "CLSIM_SIDE_BY_SIDE": value}, check=True)
        assert out.stdout.strip() == expected
