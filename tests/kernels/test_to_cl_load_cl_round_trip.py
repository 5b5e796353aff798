"""One source, both ways: a library kernel printed as OpenCL C (``clsim.to_cl``) and read back
by the OpenCL C front end (``clsim.load_cl``) simulates bit for bit as the Python kernel it
came from, on the spec's generated inputs and on the verifier's drawn cases.

Like tests/kernels/test_cl_twins_translated.py, both kernels run without Numba (``jit=False``,
the same generated code as plain Python) on small shapes, so the test costs seconds. The
kernel is printed for the arguments of the small shape (the same types and local size as
the spec's default shape). ``to_cl(spec)`` itself makes the default shape's inputs (a quarter
of this file's time went to quantizing the GEMVs' 4096-row weights for their types); it is
tested in tests/unit/test_to_cl.py.
"""

from __future__ import annotations

import os

import pytest

import clsim
import kernels_py  # noqa: F401  (registers the library's specs)
from clsim.spec import all_specs

from twin_runs import (  # beside this file
    assert_same_on_drawn_cases,
    assert_same_outputs,
    small_launch,
)

SPECS = all_specs()
# One drawn case per kernel by default (68 kernels, two plain-Python runs and a translation
# each, beside the generated inputs); the thorough profile draws more.
EXAMPLES = 4 if os.environ.get("CLSIM_HYPOTHESIS_PROFILE") == "thorough" else 1


@pytest.mark.parametrize("name", sorted(SPECS))
def test_printed_cl_reads_back_as_the_same_kernel(name):
    spec = SPECS[name]
    _, launch = small_launch(spec)
    printed = clsim.to_cl(spec.kernel, launch.args, local_size=launch.local_size,
                          subgroup_size=spec.subgroup_size)
    reread = clsim.load_cl(printed, spec.kernel.name)
    what = "after to_cl and load_cl"
    assert_same_outputs(spec, spec.kernel, reread, what)
    assert_same_on_drawn_cases(spec, spec.kernel, reread, what, examples=EXAMPLES)
