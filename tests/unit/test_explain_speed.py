"""clsim.explain_speed: LLVM's loop-vectorize remarks, summarised per generated function."""

import subprocess
import sys
import textwrap
from pathlib import Path

from clsim.explain_speed import parse_remarks, run_explained, summarise

REMARKS = """\
remark: clsim_gen_k_1.py:2:1: vectorized loop (vectorization width: 8, interleaved count: 4)
remark: clsim_gen_k_1.py:9:1: loop not vectorized: Early exit loop with store
remark: clsim_gen_k_1.py:9:1: loop not vectorized
remark: clsim_gen_k_1.py:9:1: call instruction cannot be vectorized
some other stderr line
"""

GENERATED = """\
def _group(a, b):
    for i in range(a.size):
        b[i] = a[i]


def _launch(a, b):
    x = 0
    for i in range(a.size):
        if a[i] > 3:
            return
        b[i] = a[i]
"""


def test_parse_groups_remarks_by_location_and_keeps_other_lines():
    loops, others = parse_remarks(REMARKS)
    assert others == ["some other stderr line"]
    by_line = {loop.line: loop for loop in loops}
    assert by_line[2].widths == {(8, 4)} and by_line[2].vectorised
    assert not by_line[9].vectorised and by_line[9].missed
    assert by_line[9].reasons == ["Early exit loop with store",
                                   "call instruction cannot be vectorized"]


def test_summary_names_the_enclosing_generated_function(tmp_path):
    (tmp_path / "clsim_gen_k_1.py").write_text(GENERATED)
    text = "\n".join(summarise(parse_remarks(REMARKS)[0], [tmp_path]))
    assert "clsim_gen_k_1.py::_group: 1 loop(s) vectorised, 0 not" in text
    assert "clsim_gen_k_1.py::_launch: 0 loop(s) vectorised, 1 not" in text
    assert "line 9: NOT vectorised: Early exit loop with store" in text


SCRIPT = """\
import numpy as np
import clsim
from clsim import get_global_id, kernel


@kernel
def scale_unchecked(a, c):
    i = get_global_id(0)
    c[i] = a[i] * 2.0


@kernel
def scale_checked(a, c, n):
    i = get_global_id(0)
    if i < n:
        c[i] = a[i] * 2.0


a = np.ones(1024, np.float32)
clsim.run(scale_unchecked, (1024,), (64,), (a, np.zeros_like(a)), checks="none")
clsim.run(scale_checked, (1024,), (64,), (a, np.zeros_like(a), np.int32(1024)))
"""


def _work_item_loop(summary: list[str], kernel: str) -> str:
    """The remark line for the ``for _lid`` loop of ``kernel``'s group function."""
    start = next(i for i, line in enumerate(summary)
                 if f"clsim_gen_{kernel}_" in line and "::_group:" in line)
    for line, source in zip(summary[start + 1:], summary[start + 2:]):
        if source.strip().startswith("for _lid in range("):
            return line
    raise AssertionError(f"no work-item loop remark for {kernel}: {summary}")


def test_child_reports_one_work_item_loop_vectorised_and_one_not(tmp_path):
    script = tmp_path / "two_kernels.py"
    script.write_text(textwrap.dedent(SCRIPT))
    code, summary, others = run_explained([str(script)], stdout=subprocess.DEVNULL)
    assert code == 0, others
    # unchecked and unguarded: a straight loop over contiguous work-items
    assert "vectorised, width" in _work_item_loop(summary, "scale_unchecked")
    # the bounds check returns from inside the loop: an early exit LLVM cannot vectorise
    checked = _work_item_loop(summary, "scale_checked")
    assert "NOT vectorised" in checked and "early exit" in checked.lower()


def test_cli_option_prints_the_summary():
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "clsim.cli", "run", "vector_add", "--shape",
                          "n=4096", "--check", "default", "--explain-speed"], cwd=root,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "check c:" in out.stdout  # the run itself, in the child
    assert "clsim_gen_vector_add_" in out.stdout and "::_group:" in out.stdout
