"""Vector forms in ``clsim conformance``: the simulator's vector builtins (int4, uchar16,
long2, float4, conversions from float4 and int4, geometric functions, any/all) have no
deviation from the spec; each component equals the scalar builtin on that component bit for
bit; JIT and no-JIT give the same bytes; each device runs every group."""

from dataclasses import replace

import pytest

from verify.conformance_cases import Group
from verify.conformance_exact import ScalarForms, _chunks, run_simulator
from verify.conformance_vectors import VectorForms, vector_groups, vector_suite
from verify.testing import device_params

# A few builtins per family for the JIT test (compiling every group costs minutes of CPU).
JIT_SAMPLE = {"add_sat", "rotate", "mul_hi", "convert_int_sat_rte", "convert_float_rtz",
              "convert_uchar_sat", "sin", "fma", "fmin", "isnan", "select", "frexp", "dot",
              "normalize", "cross", "any"}
EXPECTED = {("add_sat", "int4"), ("add_sat", "uchar16"), ("mul_hi", "long2"),
            ("convert_int4_sat_rte", "float4"), ("convert_float4_rtp", "int4"),
            ("convert_double4_rtz", "float4"), ("as_uint4", "float4"), ("isless", "float4"),
            ("select", "float4"), ("bitselect", "float4"), ("frexp", "float4"),
            ("sin", "float4"), ("pow", "float4"), ("fma", "float4"), ("ldexp", "float4"),
            ("dot", "float4"), ("cross", "float4"), ("length", "float4"),
            ("distance", "float4"), ("normalize", "float4"), ("any", "int4"),
            ("all", "char16")}


def test_simulator_vector_forms_have_no_deviation():
    """Every vector group on the simulator (no-JIT): the spec's value component by component
    (bits where exact, ULP and absolute bounds elsewhere)."""
    report = vector_suite((), draws=60, simulator_modes=("nojit",))
    rows = {(r.builtin, r.dtype) for r in report.rows}
    assert EXPECTED <= rows, EXPECTED - rows
    assert len(rows) > 300
    bad = [(r.builtin, r.dtype, r.examples[:2]) for r in report.rows if r.deviations]
    assert bad == []


def _scalar_twin(group: Group) -> Group:
    calls = [replace(c, name=c.scalar) for c in group.calls]
    return Group(group.key, group.cols, calls)


def test_vector_components_equal_the_scalar_builtin_bit_for_bit():
    """Each component of a vector call equals the scalar call on that component (relational
    functions: -1 for the scalar's 1; select compares the top bit, the scalar compares != 0,
    so it is left to the spec test above)."""
    checked = 0
    for group in vector_groups(seed=3, draws=40):
        calls = [c for c in group.calls if c.scalar and c.scalar != "select"]
        if not calls:
            continue
        group.calls = calls
        for chunk in _chunks(group):
            vec = run_simulator(group, chunk, jit=False, forms=VectorForms)
            twin = _scalar_twin(Group(group.key, group.cols, chunk))
            scalar = run_simulator(twin, twin.calls, jit=False, forms=ScalarForms)
            flat = [(c, k) for c in chunk for k in range(len(c.outs))]
            for (c, _k), v, s in zip(flat, vec, scalar, strict=True):
                want = -s if c.name.startswith("is") or c.name == "signbit" else s
                assert v.tobytes() == want.tobytes(), (c.name, c.scalar, group.key)
                checked += 1
    assert checked > 250


def test_jit_and_no_jit_vector_forms_give_the_same_bytes():
    """A sample of every family compiled with Numba: the same bytes as no-JIT."""
    for group in vector_groups(seed=5, draws=40, wanted=JIT_SAMPLE):
        for chunk in _chunks(group):
            a = run_simulator(group, chunk, jit=True, forms=VectorForms)
            b = run_simulator(group, chunk, jit=False, forms=VectorForms)
            assert [x.tobytes() for x in a] == [x.tobytes() for x in b], group.key


@pytest.mark.parametrize("device", device_params())
def test_devices_run_every_vector_group(device):
    """Each device builds and runs every vector group (nothing skipped but what the device
    lacks), and the integer builtins, which the spec fixes bit for bit and every device here
    gets right, show no deviation (the float deviations are listed in docs/conformance.md)."""
    report = vector_suite((device,), draws=40, simulator_modes=())
    assert report.rows and not [s for s in report.skipped if "BUILD" in s], report.skipped
    integer = [r for r in report.rows if r.dtype in ("int4", "uchar16", "long2", "char16")
               and not r.builtin.startswith(("convert_", "as_")) and r.deviations]
    assert integer == []
