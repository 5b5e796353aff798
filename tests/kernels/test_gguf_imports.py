"""Importing the kernel library, and `clsim list`, import no Hypothesis (it cost about 1 s on
every clsim command while kernels_py.gguf_q4_k and gemv_quant_k built their ``fuzz_shapes``
strategies at import); the verifier still draws the narrowed shapes, built on demand. No
library module imports Hypothesis, or the verifier (which imports Hypothesis), at module
level: a policy such as magnitude comes from clsim.spec."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clsim.spec import get_spec
from verify.fuzz import spec_shapes

ROOT = Path(__file__).resolve().parents[2]

IMPORT_LIBRARY = "import kernels_py"
CLSIM_LIST = ("import contextlib, io\n"
              "from clsim.cli import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    assert main(['list']) == 0\n")


def test_no_library_module_imports_hypothesis_at_module_level():
    """No kernels_py module has a top-level import of hypothesis or of the verifier (a spec's
    fuzz_shapes builds its strategy inside a function; policies come from clsim.spec)."""
    offenders = []
    for path in sorted((ROOT / "kernels_py").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}:{node.lineno}" for n in names
                          if n.split(".")[0] in ("hypothesis", "verify")]
    assert offenders == []


@pytest.mark.parametrize("code", [IMPORT_LIBRARY, CLSIM_LIST], ids=["import", "clsim-list"])
def test_library_and_clsim_list_import_no_hypothesis(code):
    """A fresh interpreter running the code has no 'hypothesis' in sys.modules afterwards."""
    probe = code + "\nimport sys\nprint('hypothesis' in sys.modules)\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


@given(data=st.data())
def test_fuzz_shapes_built_on_demand_still_narrow_the_drawn_shapes(data):
    """The verifier calls a spec's fuzz_shapes function and draws from its strategy: Q4_K
    quantizer cases have 1 to 6 blocks, Q4_K GEMV cases 1 to 9 rows of 1 to 8 super-blocks."""
    quant = data.draw(spec_shapes(get_spec("quantize_q4_k")))
    assert set(quant) == {"blocks"} and 1 <= quant["blocks"] <= 6
    for name in ("gemv_q4_k", "gemv_q4_k_subgroup"):
        gemv = data.draw(spec_shapes(get_spec(name)))
        assert set(gemv) == {"rows", "blocks"}
        assert 1 <= gemv["rows"] <= 9 and 1 <= gemv["blocks"] <= 8
