"""One source, both ways: a library kernel printed as OpenCL C (``clsim.to_cl``) and read back
by the OpenCL C front end (``clsim.load_cl``) simulates bit for bit as the Python kernel it
came from, on the spec's fuzz.

Like tests/kernels/test_cl_twins_translated.py, both kernels run without Numba (``jit=False``,
the same generated code as plain Python) on small drawn cases, so the test costs seconds.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import clsim
import kernels_py  # noqa: F401  (registers the library's specs)
from clsim.spec import all_specs, differing_elements
from verify.fuzz import spec_cases

from twin_runs import assert_same_outputs  # beside this file

SPECS = all_specs()
# One drawn case per kernel by default (68 kernels, two plain-Python runs and a translation
# each); the thorough profile draws more.
EXAMPLES = 4 if os.environ.get("CLSIM_HYPOTHESIS_PROFILE") == "thorough" else 1
# Kernels whose printed C uses a construct the front end cannot translate yet: each is an
# expected KernelCompileError naming the construct (strict: the test fails once it works).
BLOCKED: dict[str, str] = {}


def _run(kernel, spec, case):
    args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in case.args.items()}
    clsim.run(kernel, case.global_size, case.local_size, tuple(args.values()), jit=False,
              subgroup_size=spec.subgroup_size)
    return args


def _params():
    for name in SPECS:
        marks = [pytest.mark.xfail(reason=f"front end: {BLOCKED[name]}", strict=True,
                                   raises=clsim.KernelCompileError)] if name in BLOCKED else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(_params()))
def test_printed_cl_reads_back_as_the_same_kernel(name):
    spec = SPECS[name]
    reread = clsim.load_cl(clsim.to_cl(spec), spec.kernel.name)
    assert_same_outputs(spec, spec.kernel, reread, "after to_cl and load_cl")

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(spec_cases(spec, max_elements=2048, vary_local=False))
    def agree(case):
        want = _run(spec.kernel, spec, case)
        got = _run(reread, spec, case)
        for out in spec.outputs:
            assert differing_elements(got[out], want[out]) == 0, \
                f"{name}: output '{out}' differs after to_cl and load_cl"

    agree()
