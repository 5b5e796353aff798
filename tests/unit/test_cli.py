"""The clsim command line: list, run, and errors as one line with a non-zero exit code."""

import io
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clsim.cli import main


def test_list_names_every_library_kernel(capsys):
    """clsim list prints each kernel with its one-line description."""
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("vector_add", "argmax", "softmax"):
        assert name in out


def test_the_program_freezes_its_objects_before_it_ends(monkeypatch, capsys):
    """As the program (no argv), the command leaves the interpreter's last collections
    nothing to visit (``gc.freeze``: 0.15-0.2 s of a warm run's exit); called as a
    library function it leaves the collector alone."""
    import gc

    gc.unfreeze()
    try:
        assert main(["list"]) == 0
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(sys, "argv", ["clsim", "list"])
        assert main() == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert "softmax" in capsys.readouterr().out


def test_run_prints_ndrange_time_check_and_traffic(capsys):
    """clsim run compares with numpy, states the tolerance and the max error, exit 0."""
    assert main(["run", "softmax", "--shape", "rows=4,cols=300", "--local-size", "64"]) == 0
    out = capsys.readouterr().out
    assert "global=(256,) local=(64,), 4 work-groups" in out
    assert "tolerance rtol=1e-05 atol=1e-07" in out and ": OK" in out
    assert re.search(r"time [\d.]+ ms, [\d.]+ [kMG] work-items/s", out), out


def test_run_no_jit_and_shape_shorthand(capsys):
    """--no-jit runs the same code as plain Python; AxB maps onto the shape keys in order; its
    rate reads (k work-items/s), never "0.0 M work-items/s"."""
    assert main(["run", "softmax", "--shape", "2x50", "--local-size", "16", "--no-jit"]) == 0
    out = capsys.readouterr().out
    assert "no-jit" in out and "0.0 M" not in out
    assert re.search(r"[1-9][\d.]* [kM]? ?work-items/s", out), out


@pytest.mark.parametrize("per_s, text", [
    (25_400.0, "25.4 k work-items/s"), (1.31e6, "1.31 M work-items/s"),
    (2.5e9, "2.5 G work-items/s"), (850.0, "850 work-items/s"), (0.5, "0.5 work-items/s"),
])
def test_rates_keep_three_significant_digits(per_s, text):
    from clsim.commands.run import _rate

    assert _rate(per_s) == text


@pytest.mark.parametrize("argv, line", [
    (["--check", "all"], "checks: bounds, barrier divergence, data races, uninitialised reads: "
                         "nothing found"),
    (["--check", "all", "--report-all"], "checks: bounds, barrier divergence, data races, "
                                         "uninitialised reads: 0 findings"),
    (["--check", "races"], "checks: bounds, barrier divergence, data races: nothing found"),
    ([], "checks: bounds, barrier divergence, data races, uninitialised reads: nothing found"),
    (["--no-checks"], "checks: bounds, barrier divergence: nothing found"),
    (["--check", "default"], "checks: bounds, barrier divergence: nothing found"),
    (["--check", "none"], "checks: none (--check none)"),
])
def test_run_says_which_checks_ran_and_what_they_found(capsys, argv, line):
    """0 findings is news too: the checks line appears for every --check."""
    assert main(["run", "vector_add", "--shape", "n=256", "--local-size", "64", *argv]) == 0
    assert "  " + line in capsys.readouterr().out.splitlines()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal_only():
    """A tqdm bar is drawn on a terminal; on a redirected stream nothing at all."""
    from clsim.commands import progress

    for stream, drawn in ((_Terminal(), True), (io.StringIO(), False)):
        with progress.RunProgress("softmax", stream) as show:
            show("run", 0, 100)
            time.sleep(progress._BAR_AFTER_S + 0.1)
            show("run", 40, 100)
            show("run", 100, 100)
        text = stream.getvalue()
        assert ("softmax" in text and "40/100" in text) is drawn, repr(text)
        assert ("\r" in text) is drawn


def test_compile_note_only_when_compiling_takes_a_while():
    """'compiling NAME' appears when the JIT takes longer than a disk-cache load would."""
    from clsim.commands import progress

    slow, quick = io.StringIO(), io.StringIO()
    with progress.RunProgress("softmax", slow) as show:
        show("compile", 0, 4)
        time.sleep(progress._COMPILE_NOTE_AFTER_S + 0.3)
        show("run", 0, 4)
    with progress.RunProgress("softmax", quick) as show:
        show("compile", 0, 4)
        show("run", 0, 4)
        time.sleep(progress._COMPILE_NOTE_AFTER_S + 0.3)
    assert slow.getvalue().startswith("clsim: compiling softmax (first run; cached afterwards)")
    assert slow.getvalue().count("\n") == 1
    assert quick.getvalue() == ""


def test_a_redirected_run_log_has_no_bar_fragments(tmp_path):
    """clsim run with stderr to a file: no carriage returns, only whole lines."""
    log = tmp_path / "err.log"
    with log.open("w") as err:
        proc = subprocess.run([sys.executable, "-m", "clsim.cli", "run", "softmax", "--shape",
                               "8x64", "--no-jit"], stdout=subprocess.PIPE, stderr=err,
                              text=True)
    assert proc.returncode == 0
    assert "\r" not in log.read_text()


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


def test_run_a_spec_from_the_users_own_file(capsys, tmp_path):
    """docs/kernelspec.md's spec, saved as my_specs.py beside my_kernels.py and saxpy.cl, runs
    with 'clsim run my_specs.py::SAXPY' and agrees with its numpy reference."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec_code = re.findall(r"```python\n(.*?)```", (root / "docs" / "kernelspec.md").read_text(),
                           re.S)[0]
    assert "SAXPY = KernelSpec(" in spec_code
    for support in (root / "tests" / "docs_support").iterdir():
        shutil.copy(support, tmp_path / support.name)
    (tmp_path / "my_specs.py").write_text(spec_code)
    assert main(["run", f"{tmp_path / 'my_specs.py'}::SAXPY", "--shape", "n=1000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("saxpy: n=1000") and "check y: tolerance rtol=0 atol=0" in out
    assert ": OK" in out


STRUCT_SPEC = '''
import numpy as np
from clsim import get_global_id, kernel
from clsim.spec import EXACT, KernelSpec, Launch

BLOCK = np.dtype([("d", np.float16), ("qs", np.uint8, (4,))])


@kernel
def fill_blocks(y, salt):
    i = get_global_id(0)
    y[i].d = np.float16(i) * np.float16(0.5)
    for j in range(4):
        y[i].qs[j] = (i + j + salt) & 255


def make_inputs(rng, shape):
    return {"y": np.zeros(shape["n"], BLOCK), "salt": np.int32(3)}


def reference(inputs):
    n = inputs["y"].size
    y = np.zeros(n, BLOCK)
    y["d"] = np.arange(n, dtype=np.float16) * np.float16(0.5)
    y["qs"] = (np.arange(n)[:, None] + np.arange(4) + 3 + OFF) & 255
    return {"y": y}


OFF = 0
SPEC = KernelSpec(name="fill_blocks", description="struct output", kernel=fill_blocks,
                  cl_file="none.cl", make_inputs=make_inputs, reference=reference,
                  outputs={"y": EXACT},
                  launch=lambda inputs, shape, local=None: Launch(
                      (shape["n"],), local, (inputs["y"], inputs["salt"])),
                  default_shape={"n": 40})
'''


@pytest.mark.parametrize("offset, code, status", [(0, 0, "OK"), (1, 1, "MISMATCH")])
def test_run_compares_struct_outputs_byte_for_byte(capsys, tmp_path, offset, code, status):
    """A struct-array output is compared byte for byte (np.allclose cannot take records); a
    reference off by one in a uint8 field is a mismatch, not a crash."""
    path = tmp_path / f"struct_spec_{offset}.py"
    path.write_text(STRUCT_SPEC.replace("OFF = 0", f"OFF = {offset}"))
    assert main(["run", f"{path}::SPEC", "--no-jit"]) == code
    out = capsys.readouterr().out
    assert f"check y: byte-exact struct comparison: {status}" in out


def test_a_user_file_that_fails_to_import_is_one_line_naming_its_line(capsys, tmp_path):
    path = tmp_path / "broken_spec.py"
    path.write_text("import numpy as np\n\nSPEC = np.zeros(3)[7]\n")
    assert main(["run", f"{path}::SPEC"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "internal error" not in err
    assert f"{path}:3: importing it raised IndexError" in err


PLANTED = Path(__file__).resolve().parents[1] / "device" / "planted_bugs.py"


@pytest.mark.parametrize("name, found", [
    ("WRONG_FENCE", "found a data race"), ("UNINIT_LOCAL", "found an uninitialised read")])
def test_run_finds_planted_bugs_by_default(capsys, name, found):
    """``clsim run`` runs every check unless told not to: the wrong fence and the
    uninitialised local read (both agree with their reference often enough to pass a plain
    run) stop it with exit 1 and the finding; ``--no-checks`` runs them without."""
    argv = ["run", f"{PLANTED}::{name}", "--shape", "n=128", "--no-jit"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert found in out and "data races, uninitialised reads" in out
    main([*argv, "--no-checks"])
    assert "checks: bounds, barrier divergence: nothing found" in capsys.readouterr().out
