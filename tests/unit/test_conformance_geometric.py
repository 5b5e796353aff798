"""Geometric functions in ``clsim conformance``: dot, cross, length, distance, normalize on
float, float2-4, double, double2-4 and fast_length/fast_distance/fast_normalize on float-float4,
over edge rows (±0, denormals, squares that overflow or underflow, FLT_MAX/DBL_MAX, inf, NaN):
the simulator keeps the spec's bounds and special cases in both modes (length without
overflow, normalize's zero/NaN/inf rules), JIT and no-JIT give the same bytes, the spec's
missing overloads are compile errors, and each device deviates only where
docs/conformance.md says."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import clsim
from clsim.errors import KernelCompileError
from verify.conformance import ConformanceReport
from verify.conformance_cases import Group
from verify.conformance_exact import _chunks, judge, run_group, run_simulator
from verify.conformance_geometric import WIDTHS, geometric_group
from verify.conformance_vectors import VectorForms
from verify.devices import get_device
from verify.testing import device_params

TYPES = ("float32", "float64")
NAMES = {"dot", "cross", "length", "distance", "normalize", "fast_length", "fast_distance",
         "fast_normalize"}


def _rows(mode, groups):
    report = ConformanceReport()
    for g in groups:
        run_group(g, (), (mode,), report, VectorForms)
    return report.rows


def test_simulator_keeps_the_spec_for_every_type_and_width():
    """No-JIT, every group: rows for each builtin, type and width, no deviation. Strict: the
    double dot and cross within DBL_EPSILON (the spec writes FLT_EPSILON)."""
    groups = [geometric_group(t, w, 1, 80, strict=True) for t in TYPES for w in WIDTHS]
    rows = _rows("nojit", groups)
    got = {(r.builtin, r.dtype) for r in rows}
    for t, c in (("float32", "float"), ("float64", "double")):
        for w in WIDTHS:
            name = c if w == 1 else f"{c}{w}"
            dtype = t if w == 1 else name
            want = {"dot", "length", "distance", "normalize"} | ({"cross"} if w >= 3 else set())
            want |= {"fast_length", "fast_distance", "fast_normalize"} if c == "float" else set()
            assert {(n, dtype) for n in want} <= got, (name, want)
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in rows if r.deviations] == []


def test_jit_keeps_the_spec_too():
    """Numba-compiled, a float and a double group (each group costs a compilation)."""
    rows = _rows("jit", [geometric_group("float32", 3, 2, 40),
                         geometric_group("float64", 4, 2, 40)])
    assert len(rows) == 8 + 5
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in rows if r.deviations] == []


def _edge_row(group: Group, comps) -> int:
    x = group.cols[0].reshape(-1, group.width)
    hits = np.flatnonzero((x.view(f"u{x.itemsize}") == np.array(comps, x.dtype).view(
        f"u{x.itemsize}")).all(axis=1))
    return int(hits[0])


def _outputs(group, name):
    call = next(c for c in group.calls if c.name == name)
    return call, run_simulator(group, [call], jit=False, forms=VectorForms)[0]


def test_the_edge_rows_are_judged_where_naive_code_fails():
    """length of (1e200, 1e200, 1e200, 1e200) is 2e200 (a naive sum of squares overflows),
    of (3e-170, 4e-170, 0, 0) 5e-170 (underflows); normalize of a zero vector is that vector,
    of (inf, 1, 0, 0) is (1, 0, 0, 0), of a NaN vector all NaNs; the judge counts a naive
    answer there as a deviation."""
    group = geometric_group("float64", 4, 0, 8)
    call, out = _outputs(group, "length")
    big = _edge_row(group, (1e200,) * 4)
    small = _edge_row(group, (3e-170, 4e-170, 0, 0))
    assert out[big] == 2e200 and call.defined[0][big]
    assert out[small] == pytest.approx(5e-170, rel=1e-15) and call.defined[0][small]
    naive = out.copy()
    naive[big] = np.inf
    assert judge(call, group, "sim", [naive]).deviations == 1
    call, out = _outputs(group, "normalize")
    vec = out.reshape(-1, 4)
    assert vec[_edge_row(group, (-0.0,) * 4)].tobytes() == np.full(4, -0.0).tobytes()
    assert vec[_edge_row(group, (np.inf, 1, 0, 0))].tolist() == [1, 0, 0, 0]
    assert np.isnan(vec[_edge_row(group, (1, np.nan, 1, 1))]).all()
    wrong = out.copy().reshape(-1, 4)
    wrong[_edge_row(group, (np.inf, 1, 0, 0))] = np.nan
    assert judge(call, group, "sim", [wrong.ravel()]).deviations == 4


def test_float_length_of_huge_and_tiny_components():
    group = geometric_group("float32", 2, 0, 8)
    _call, out = _outputs(group, "length")
    assert out[_edge_row(group, (1e30, 1e30))] == np.float32(1e30 * 2**0.5)
    assert out[_edge_row(group, (3e-20, np.float32(4e-20)))] == pytest.approx(5e-20, rel=1e-6)


@pytest.mark.parametrize("t,w", [("float32", 3), ("float64", 4), ("float64", 1)], ids=str)
@given(data=st.data())
def test_jit_and_no_jit_give_identical_bytes(t, w, data):
    """Drawn vectors (every float bit pattern class: inf, NaN, denormals): both modes write
    the same bytes for every geometric call of the type and width."""
    template = geometric_group(t, w, 0, 4)
    n = data.draw(st.integers(1, 6)) * w
    elements = st.floats(width=np.dtype(t).itemsize * 8)
    cols = [data.draw(hnp.arrays(t, n, elements=elements)) for _ in template.cols]
    group = Group(template.key, cols, template.calls, w)
    for calls in _chunks(group):
        a = run_simulator(group, calls, jit=False, forms=VectorForms)
        b = run_simulator(group, calls, jit=True, forms=VectorForms)
        assert [c.name for c, x, y in zip(calls, a, b, strict=True)
                if x.tobytes() != y.tobytes()] == []


def _compile(tmp_path, body: str, arg_dtype):
    import importlib.util

    path = tmp_path / "geo_kernel.py"
    path.write_text(f"import clsim\nfrom clsim import kernel\n\n\n@kernel\ndef k(a, o):\n"
                    f"    {body}\n")
    spec = importlib.util.spec_from_file_location("geo_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    clsim.run(module.k, (1,), None, (np.zeros(16, arg_dtype), np.zeros(16, arg_dtype)),
              checks="none")


@pytest.mark.parametrize("body,dtype,message", [
    ("o[0] = clsim.fast_length(clsim.vload4(0, a))", np.float64, "exists for float only"),
    ("o[0] = clsim.dot(clsim.vload8(0, a), clsim.vload8(0, a))", np.float32,
     "2-, 3- or 4-vectors"),
    ("o[0] = clsim.length(clsim.vload16(0, a))", np.float32, "2-, 3- or 4-vectors"),
])
def test_overloads_the_spec_lacks_are_compile_errors(tmp_path, body, dtype, message):
    with pytest.raises(KernelCompileError, match=message):
        _compile(tmp_path, body, dtype)


# (driver, builtin, element type) where a device deviates (docs/conformance.md, geometric); by
# driver, so Debian's PoCL (pocl-1) is held to pocl's rows
KNOWN = {("intel-cpu", "normalize", "float"), ("intel-cpu", "normalize", "double"),
         ("oclgrind", "normalize", "double"), ("pocl", "normalize", "float"),
         ("pocl", "normalize", "double")}


@pytest.mark.parametrize("device", device_params())
def test_devices_deviate_only_where_the_docs_say(device):
    """Every geometric group runs on the device (double skipped only for lacking
    cl_khr_fp64); deviations only in the (device, builtin, type) rows listed in the docs."""
    report = ConformanceReport()
    for g in [geometric_group(t, w, 0, 120) for t in TYPES for w in WIDTHS]:
        run_group(g, (device,), (), report, VectorForms)
    assert all("cl_khr_fp64" in s for s in report.skipped), report.skipped
    assert {r.builtin for r in report.rows} == NAMES
    driver = get_device(device).driver
    bad = {(driver, r.builtin, "double" if r.dtype in ("float64", "double2", "double3",
                                                        "double4") else "float")
           for r in report.rows if r.deviations}
    assert bad <= KNOWN, bad - KNOWN
