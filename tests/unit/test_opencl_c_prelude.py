"""The prelude the OpenCL C front end parses with declares every public builtin of clsim's
table (with clang's own declarations): a builtin added to the table is usable from .cl kernels
at once, or this test names it."""

from __future__ import annotations

import clang.cindex as ci

from clsim.compiler.builtins import PUBLIC_NAMES
from clsim.frontends.opencl_c.parse import CLANG_ARGS
from clsim.frontends.opencl_c.prelude import PRELUDE_NAME, prelude_text

PYTHON_ONLY = {"view", "local_array", "private_array", "pointer_array"}


def test_every_public_builtin_is_declared():
    names = sorted(set(PUBLIC_NAMES) - PYTHON_ONLY)
    body = "\n".join(f"void use_{i}(void) {{ (void){n}; }}" for i, n in enumerate(names))
    tu = ci.Index.create().parse(
        "probe.cl", args=[*CLANG_ARGS, "-include", PRELUDE_NAME],
        unsaved_files=[("probe.cl", body), (PRELUDE_NAME, prelude_text())])
    missing = sorted({d.spelling.split("'")[1] for d in tu.diagnostics
                      if "undeclared identifier" in d.spelling})
    assert not missing, f"builtins the .cl front end cannot call: {missing}"


def test_calls_resolve_to_one_overload():
    """Declared is not enough: a float call of a sub-group builtin must pick the float
    overload (with only cl_khr_subgroup_extended_types' char/short ones it is ambiguous)."""
    body = """kernel void k(global float *x, global half *h, global uint *u) {
        x[0] = sub_group_reduce_add(x[1]) + sub_group_broadcast(x[2], 0u);
        x[1] = work_group_reduce_max(x[3]) + as_float(u[0]) + vload_half(0, &h[1]);
        u[1] = get_sub_group_local_id() + get_max_sub_group_size();
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        x[2] = INFINITY + FLT_MAX + M_PI_F;
    }"""
    tu = ci.Index.create().parse(
        "calls.cl", args=[*CLANG_ARGS, "-include", PRELUDE_NAME],
        unsaved_files=[("calls.cl", body), (PRELUDE_NAME, prelude_text())])
    errors = [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    assert not errors
