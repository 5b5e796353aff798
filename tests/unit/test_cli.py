"""The clsim command line: list, run, and errors as one line with a non-zero exit code."""

import shutil
import subprocess
import sys

import pytest

from clsim.cli import main


def test_list_names_every_library_kernel(capsys):
    """clsim list prints each kernel with its one-line description."""
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("vector_add", "argmax", "softmax"):
        assert name in out


def test_run_prints_ndrange_time_check_and_traffic(capsys):
    """clsim run compares with numpy, states the tolerance and the max error, exit 0."""
    assert main(["run", "softmax", "--shape", "rows=4,cols=300", "--local-size", "64"]) == 0
    out = capsys.readouterr().out
    assert "global=(256,) local=(64,), 4 work-groups" in out
    assert "tolerance rtol=1e-05 atol=1e-07" in out and ": OK" in out
    assert "M work-items/s" in out


def test_run_no_jit_and_shape_shorthand(capsys):
    """--no-jit runs the same code as plain Python; AxB maps onto the shape keys in order."""
    assert main(["run", "softmax", "--shape", "2x50", "--local-size", "16", "--no-jit"]) == 0
    assert "no-jit" in capsys.readouterr().out


@pytest.mark.parametrize("argv, fragment", [
    (["run", "no_such_kernel"], "no kernel named 'no_such_kernel'"),
    (["run", "vector_add", "--shape", "n=0"], "n must be positive"),
    (["run", "vector_add", "--local-size", "4096"], "CL_INVALID_WORK_GROUP_SIZE"),
    (["run", "softmax", "--shape", "rows=2"], "x"),
])
def test_errors_are_one_line_and_exit_code_2(capsys, argv, fragment):
    """Simulation errors become 'clsim: error: ...' on one line, exit code 2, no traceback."""
    if argv[-1] == "rows=2":
        argv = ["run", "softmax", "--shape", "rows=2,depth=3"]
        fragment = "unknown key 'depth'"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("clsim: error: ") and fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_console_script_is_installed():
    """The clsim entry point exists and --debug shows a traceback instead of one line."""
    assert shutil.which("clsim"), "pip install -e . installs the clsim command"
    proc = subprocess.run([sys.executable, "-m", "clsim.cli", "--debug", "run", "nope"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "clsim.cli", "run", "nope", "--debug"],
                          capture_output=True, text=True)
    assert "Traceback" in proc.stderr
