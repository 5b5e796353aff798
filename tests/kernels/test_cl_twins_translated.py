"""Every library ``.cl`` twin, loaded with ``clsim.load_cl``, simulates bit for bit as its
hand-written Python twin (kernels_py) on the spec's generated inputs and on the verifier's
drawn cases (``verify.fuzz.spec_cases``, edge values included): one source is enough.

Both kernels run without Numba (``jit=False``, the same generated code as plain Python) on
small shapes, so the test costs seconds, not compilations.
"""

from __future__ import annotations

import pytest

import clsim
import kernels_py  # noqa: F401  (registers the library's specs)
from clsim.spec import all_specs

from twin_runs import assert_same_on_drawn_cases, assert_same_outputs  # beside this file

SPECS = all_specs()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_translated_twin_matches_python_twin(name):
    spec = SPECS[name]
    translated = clsim.load_cl(spec.cl_path, spec.cl_kernel_name)
    what = "between the translated .cl and the Python twin"
    assert_same_outputs(spec, spec.kernel, translated, what)
    assert_same_on_drawn_cases(spec, spec.kernel, translated, what, examples=3)
