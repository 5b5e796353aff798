"""One source, both ways: a library kernel printed as OpenCL C (``clsim.to_cl``) and read back
by the OpenCL C front end (``clsim.load_cl``) simulates bit for bit as the Python kernel it
came from, on the spec's generated inputs and on the verifier's drawn cases.

Like tests/kernels/test_cl_twins_translated.py, both kernels run without Numba (``jit=False``,
the same generated code as plain Python) on small shapes, so the test costs seconds.
"""

from __future__ import annotations

import os

import pytest

import clsim
import kernels_py  # noqa: F401  (registers the library's specs)
from clsim.spec import all_specs

from twin_runs import assert_same_on_drawn_cases, assert_same_outputs  # beside this file

SPECS = all_specs()
# One drawn case per kernel by default (68 kernels, two plain-Python runs and a translation
# each, beside the generated inputs); the thorough profile draws more.
EXAMPLES = 4 if os.environ.get("CLSIM_HYPOTHESIS_PROFILE") == "thorough" else 1


@pytest.mark.parametrize("name", sorted(SPECS))
def test_printed_cl_reads_back_as_the_same_kernel(name):
    spec = SPECS[name]
    reread = clsim.load_cl(clsim.to_cl(spec), spec.kernel.name)
    what = "after to_cl and load_cl"
    assert_same_outputs(spec, spec.kernel, reread, what)
    assert_same_on_drawn_cases(spec, spec.kernel, reread, what, examples=EXAMPLES)
