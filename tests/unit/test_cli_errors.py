"""Bad command lines and bad files give one line on stderr and exit code 2 (130 for Ctrl-C, 3
for a bug in clsim), never a traceback or argparse's usage block; --debug adds the traceback
and keeps the exit code."""

import sys
import types

import numpy as np
import pytest

from clsim.cli import main
from clsim.errors import DeviceError, KernelInterrupted


def _one_line_error(capsys, argv, code=2):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err and "usage:" not in err
    return err


@pytest.mark.parametrize("argv, fragment", [
    (["run", "vector_add", "--local-size", "0"], "--local-size: '0': 1 to 3 sizes, each at least"),
    (["run", "vector_add", "--local-size", "64,0"], "--local-size"),
    (["run", "vector_add", "--seed", "-1"], "--seed: -1 must be from 0"),
    (["run", "vector_add", "--subgroup-size", "0"], "--subgroup-size: 0 must be at least 1"),
    (["run", "vector_add", "--timeout", "0"], "--timeout"),
    (["run", "vector_add", "--report-all", "--no-checks"], "--check default does not run"),
    (["run", "vector_add", "--report-all", "--check", "bounds"], "--check bounds does not run"),
    (["run", "vector_add", "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "vector_add", "--check", "foo"], "invalid choice: 'foo'"),
    (["run"], "the following arguments are required: name"),
    (["nosuchcommand"], "invalid choice: 'nosuchcommand'"),
    (["run", "softmax", "--shape", "rows=100000,cols=100000"], "do not fit in memory (37.3 GiB"),
    (["report", "softmax", "--plot", "roofline"], "'roofline' must end in .png"),
    (["report", "softmax", "--plot", "/no/such/folder/r.png"], "does not exist"),
    (["report", "softmax", "--plot", "/proc/r.png"], "cannot write in '/proc'"),
    (["report", "softmax", "--seed", "-1"], "--seed: -1 must be from 0"),
    (["report", "softmax", "--local-size", "0"], "--local-size: '0'"),
])
def test_bad_command_lines_are_one_line_and_exit_2(capsys, argv, fragment):
    """Each case names the option and what is wrong with it, before any kernel runs."""
    err = _one_line_error(capsys, argv)
    assert err.startswith("clsim"), err
    assert fragment in err, err


def test_plot_check_runs_before_any_report_is_written(capsys, tmp_path, monkeypatch):
    """An unwritable --plot refuses at once: no report.json written first."""
    monkeypatch.chdir(tmp_path)
    _one_line_error(capsys, ["report", "softmax", "--plot", str(tmp_path / "no" / "r.png")])
    assert not (tmp_path / "report.json").exists()


def _fake_command(monkeypatch, exc):
    """Make 'clsim list' raise ``exc``."""
    import clsim.commands.list_ as list_command

    def boom(args):
        raise exc
    monkeypatch.setattr(list_command, "main", boom)


@pytest.mark.parametrize("exc, code, fragment", [
    (DeviceError("no device\nsecond line"), 2, "clsim: error: no device"),
    (RuntimeError("a bug"), 3, "clsim: internal error: RuntimeError: a bug"),
    (KernelInterrupted("k: stopped by Ctrl-C; 3 of 9 work-groups", kernel="k"), 130,
     "clsim: interrupted: k: stopped by Ctrl-C; 3 of 9"),
    (KeyboardInterrupt(), 130, "clsim: interrupted"),
    (MemoryError("Unable to allocate 9 GiB"), 2, "clsim: error: out of memory (Unable to"),
])
def test_debug_adds_the_traceback_and_keeps_the_exit_code(capsys, monkeypatch, exc, code,
                                                          fragment):
    _fake_command(monkeypatch, exc)
    err = _one_line_error(capsys, ["list"], code)
    assert fragment in err
    assert main(["--debug", "list"]) == code
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith(fragment)
    assert main(["list", "--debug"]) == code


def _platform_not_found():
    import pyopencl as cl

    return cl.LogicError(cl._cl._ErrorRecord(
        msg="clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR", code=-1001,
        routine="clGetPlatformIDs"))


@pytest.mark.parametrize("no_setup", [True, False])
def test_no_opencl_platform_is_one_line_that_says_what_to_install(capsys, monkeypatch,
                                                                   no_setup):
    """PLATFORM_NOT_FOUND_KHR from the ICD loader (e.g. CLSIM_NO_ICD_SETUP=1 on a machine with
    no vendors) explains itself instead of a pyopencl LogicError as an internal error."""
    import verify.cli

    def no_platform(refresh=False):
        raise _platform_not_found()
    monkeypatch.setattr(verify.cli, "list_devices", no_platform)
    if no_setup:
        monkeypatch.setenv("CLSIM_NO_ICD_SETUP", "1")
    else:
        monkeypatch.delenv("CLSIM_NO_ICD_SETUP", raising=False)
    for argv in (["devices"], ["verify", "vector_add"]):
        err = _one_line_error(capsys, argv)
        assert "no OpenCL platform found" in err and "pocl" in err
        assert ("CLSIM_NO_ICD_SETUP=1" in err) is no_setup


def _fake_device():
    return types.SimpleNamespace(short_name="fakecl")


def test_a_device_build_failure_is_one_line_unless_debug(capsys, monkeypatch):
    """The build log's error line is kept on the device's line; --debug shows the whole log."""
    import verify.cli

    log = ("vector_add on fakecl: CL_BUILD_PROGRAM_FAILURE (options: -cl-std=CL1.2). Fix the "
           "OpenCL C source; build log:\nwarning: something\nerror: unknown target CPU "
           "'generic'\nnote: more\nnote: even more")

    def fails(*args, **kwargs):
        raise DeviceError(log)
    monkeypatch.setattr(verify.cli, "_devices", lambda names: [_fake_device()])
    monkeypatch.setattr(verify.cli, "fuzz_spec", fails)
    assert main(["verify", "vector_add", "--no-progress"]) == 1
    out = capsys.readouterr().out.splitlines()
    error_line = next(line for line in out if "fakecl" in line)
    assert "ERROR" in error_line and "CL_BUILD_PROGRAM_FAILURE" in error_line
    assert "unknown target CPU 'generic'" in error_line and "+3 more lines" in error_line
    assert len(out) == 2, out
    assert main(["--debug", "verify", "vector_add", "--no-progress"]) == 1
    assert "note: even more" in capsys.readouterr().out


def test_one_line_keeps_a_single_line_as_it_is():
    from verify.cli_errors import one_line

    assert one_line("just one line") == "just one line"
    assert one_line("head\nbody") == "head body"


@pytest.fixture
def saved_failure(tmp_path):
    from verify.failures import save_failure

    a = np.arange(16, dtype=np.float32)
    return save_failure(tmp_path / "failures", spec_name="vector_add",
                        inputs={"a": a, "b": a.copy(), "c": np.zeros_like(a)},
                        launch={"global_size": (16,), "local_size": (4,)}, device="pocl")


@pytest.mark.parametrize("damage, fragment", [
    (lambda f: (f / "inputs.npz").write_bytes((f / "inputs.npz").read_bytes()[:100]),
     "inputs.npz is truncated or damaged (BadZipFile"),
    (lambda f: (f / "inputs.npz").write_bytes(b""), "inputs.npz is truncated or damaged"),
    (lambda f: (f / "meta.json").write_text('{"spec_name": "vec'), "meta.json"),
])
def test_replay_of_a_damaged_failure_folder_names_the_file(capsys, saved_failure, damage,
                                                           fragment):
    damage(saved_failure)
    err = _one_line_error(capsys, ["replay", str(saved_failure)])
    assert fragment in err and str(saved_failure) in err


def test_replay_of_a_missing_folder_is_one_line(capsys, tmp_path):
    err = _one_line_error(capsys, ["replay", str(tmp_path / "nothing-here")])
    assert "nothing-here" in err


def test_standalone_verify_cli_errors_are_one_line(capsys):
    import verify.cli

    with pytest.raises(SystemExit) as info:
        verify.cli.main(["verify", "--examples"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage:" not in err and "--examples" in err


def test_the_console_script_prints_one_line_without_a_traceback():
    """The real entry point in a subprocess: usage errors and failures are one line."""
    import subprocess

    for argv in (["run", "vector_add", "--seed", "-1"], ["run", "nope"]):
        proc = subprocess.run([sys.executable, "-m", "clsim.cli", *argv],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr


_ENDLESS_SPEC = '''
import numpy as np
import clsim
from clsim.spec import EXACT, KernelSpec, Launch


@clsim.kernel
def spin(flag, out):
    i = clsim.get_global_id(0)
    while flag[0] == 0:
        out[i] += 1


SPIN = KernelSpec(
    name="spin", description="never finishes", kernel=spin, cl_file="spin.cl",
    make_inputs=lambda rng, shape: {"flag": np.zeros(1, np.int32),
                                    "out": np.zeros(shape["n"], np.int32)},
    launch=lambda inputs, shape, local: Launch((shape["n"],), local or (32,),
                                               (inputs["flag"], inputs["out"])),
    reference=lambda inputs: {"out": inputs["out"]}, outputs={"out": EXACT},
    default_shape={"n": 64})
'''


def _spin_command(folder, *options):
    return [sys.executable, "-m", "clsim.cli", "run", f"{folder / 'endless.py'}::SPIN", *options]


@pytest.fixture(scope="module")
def endless(tmp_path_factory):
    """A folder with the endless spec, and the outcome of ``clsim run --timeout 1`` on it: that
    run is a test of its own and compiles the kernel into the folder's cache for the next."""
    import subprocess

    folder = tmp_path_factory.mktemp("endless")
    (folder / "endless.py").write_text(_ENDLESS_SPEC)
    timed_out = subprocess.run(_spin_command(folder, "--timeout", "1"), capture_output=True,
                               text=True, timeout=600)
    return folder, timed_out


def test_run_timeout_stops_an_endless_kernel_with_one_line(endless):
    """clsim run --timeout: exit 2 and one line naming the kernel and the groups done (the
    stuck JIT thread ends with the process)."""
    proc = endless[1]
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("clsim: error: spin: ran past timeout_s=1; 0 of 2 work-groups")
    assert "Traceback" not in proc.stderr


def _wait_until_spinning(child) -> None:
    """Until a thread of ``child`` other than its main one has used 0.3 s of CPU: the launch's
    threads are the only ones that compute, so the endless kernel is running (a signal in the
    imports or the compile would test those, not a stuck kernel). Without /proc, 10 seconds."""
    import os
    import time
    from pathlib import Path

    tasks = Path(f"/proc/{child.pid}/task")
    if not tasks.exists():
        time.sleep(10)
        return
    tick = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + 300
    while child.poll() is None and time.monotonic() < deadline:
        for task in tasks.iterdir():
            try:
                fields = (task / "stat").read_text().rpartition(")")[2].split()
            except OSError:  # the thread ended meanwhile
                continue
            if task.name != str(child.pid) and int(fields[11]) / tick >= 0.3:  # utime
                return
        time.sleep(0.05)
    raise AssertionError("clsim run's launch never started")


# A user presses Ctrl-C and waits: the process must be gone within this many seconds (it takes
# 1 s, the grace a stopped work-group gets, on a loaded 2-core machine; finalizing the
# interpreter around the stuck thread took 3-4 s more before clsim.cli ended the process itself).
_CTRL_C_EXIT_S = 20


def test_ctrl_c_ends_clsim_run_with_exit_130_promptly(endless):
    """SIGINT to a clsim run stuck in an endless JIT kernel: one line, exit code 130, and the
    process gone promptly."""
    import signal
    import subprocess
    import time

    folder = endless[0]
    child = subprocess.Popen(_spin_command(folder, "--timeout", "300"),
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        _wait_until_spinning(child)
        signalled = time.monotonic()
        child.send_signal(signal.SIGINT)
        try:
            _, err = child.communicate(timeout=_CTRL_C_EXIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"clsim run still running {_CTRL_C_EXIT_S} s after Ctrl-C")
        took = time.monotonic() - signalled
    finally:
        child.kill()
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("clsim: interrupted: spin: stopped by Ctrl-C")
    assert "Traceback" not in err
    assert took < _CTRL_C_EXIT_S


def test_the_program_ends_at_once_when_a_work_group_is_left_stuck(monkeypatch):
    """As the program (no argv), a command that left a launch thread stuck ends the process
    with os._exit and its exit code (atexit handlers run first); called with an argv, as here
    and in tests, main() returns as usual."""
    import atexit

    from clsim import cli
    from clsim.runtime import watch

    ended, ran_exitfuncs = [], []
    monkeypatch.setattr(cli.os, "_exit", lambda code: ended.append(code))
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: ran_exitfuncs.append(True))
    monkeypatch.setattr(cli, "_run_command", lambda argv: 130)
    monkeypatch.setattr(sys, "argv", ["clsim", "run", "spin"])
    monkeypatch.setattr(watch, "stuck_workers", lambda: 1)
    assert cli.main(["run", "spin"]) == 130 and ended == []
    cli.main()
    assert ended == [130] and ran_exitfuncs == [True]
    monkeypatch.setattr(watch, "stuck_workers", lambda: 0)
    ended.clear()
    assert cli.main() == 130 and ended == []
