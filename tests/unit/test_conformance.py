"""The conformance suite as the project's differential test of the simulator: the simulator
against the spec in both modes (zero deviations), JIT against no-JIT bytes for every builtin of
the suite and the integer builtins (Hypothesis over types and values), and the CLI."""

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from clsim.cli import main
from verify.conformance import _shapes, conformance, probe_names, ulp_distance
from verify.conformance_cases import Group, convert_reference, float_group, groups, round_to_float
from verify.conformance_exact import (
    NOT_JUDGED,
    _chunks,
    exact_suite,
    judge,
    run_simulator,
    unjudged_names,
)
from verify.probe_kernels import _CACHE, evaluate, evaluate_many


@pytest.mark.parametrize("mode", ["nojit", "jit"])
def test_simulator_has_no_deviation_from_the_spec(mode):
    """Every scalar float builtin of the table, float and double, on edge values and random
    draws: within the spec's bound, exact where the spec says exact (sign of zero too)."""
    report = conformance((), draws=120, simulator_modes=(mode,), exact=False)
    assert len(report.rows) > 130
    bad = [(r.builtin, r.dtype, r.examples[:2]) for r in report.rows if r.deviations]
    assert bad == []


def test_exact_suite_no_jit_has_no_deviation_and_covers_the_table():
    """Integer builtins (every type), conversions with _sat and every rounding mode from every
    type, bit casts, relational and tuple builtins: bit for bit the spec's value wherever the
    spec defines it; every public scalar builtin of those families is judged or has a reason."""
    report = exact_suite((), draws=120, simulator_modes=("nojit",))
    assert len(report.rows) > 1000
    assert {r.builtin for r in report.rows} >= {"convert_ulong_sat_rtn", "as_uchar", "frexp",
                                                "remquo", "upsample", "mad24", "isunordered"}
    bad = [(r.builtin, r.dtype, r.examples[:2]) for r in report.rows if r.deviations]
    assert bad == []
    assert unjudged_names() == set(NOT_JUDGED)


# JIT compilation costs about 20 s of CPU per group: by default the JIT tests take the groups
# of the 64-bit types (long, ulong, double: where Numba's typing differs most; the 8-bit ones
# have their own JIT test in test_builtins_integer.py), CLSIM_CONFORMANCE_FULL=1 takes all.
_FULL = bool(os.environ.get("CLSIM_CONFORMANCE_FULL"))
_JIT_SOURCES = None if _FULL else {"int64", "uint64", "float64"}
_NOT_FULL = "JIT over this type's group runs with CLSIM_CONFORMANCE_FULL=1 (compile time)"


def test_exact_suite_jit_has_no_deviation():
    """The same suite in JIT mode (the kernels the bytes test below compiles too)."""
    report = exact_suite((), draws=60, simulator_modes=("jit",), sources=_JIT_SOURCES)
    assert len(report.rows) > (1000 if _FULL else 300)
    assert [(r.builtin, r.dtype, r.examples[:2]) for r in report.rows if r.deviations] == []


_TEMPLATES = {g.key: g for g in groups(0, 4)}


def _template_params():
    out = []
    for key in sorted(_TEMPLATES):
        source = _TEMPLATES[key].cols[0].dtype.name
        skip = _JIT_SOURCES is not None and source not in _JIT_SOURCES
        out.append(pytest.param(key, id=key, marks=[pytest.mark.skip(reason=_NOT_FULL)]
                                if skip else []))
    return out


def _elements(dt):
    if dt.kind == "f":
        return st.floats(width=dt.itemsize * 8, allow_nan=True, allow_infinity=True)
    return None  # hypothesis' full range of the integer type


@pytest.mark.parametrize("key", _template_params())
@given(data=st.data())
def test_jit_and_no_jit_give_identical_bytes_for_every_builtin(key, data):
    """Every call of the exact suite's group (integer builtins of one type, conversions from
    one type incl. long/ulong, relational/tuple builtins of one float type) on drawn values:
    JIT and no-JIT write the same bytes, undefined inputs (NaN to int, out of range) too."""
    template = _TEMPLATES[key]
    n = data.draw(st.integers(1, 24))
    cols = [data.draw(hnp.arrays(c.dtype, n, elements=_elements(c.dtype)))
            for c in template.cols]
    group = Group(key, cols, template.calls)
    for calls in _chunks(group):
        a = run_simulator(group, calls, jit=False)
        b = run_simulator(group, calls, jit=True)
        names = [c.name for c in calls for _ in c.outs]
        assert [nm for nm, x, y in zip(names, a, b, strict=True)
                if x.tobytes() != y.tobytes()] == []


@pytest.mark.parametrize("shape", sorted(s for s in _shapes() if s != (1, "f")), ids=str)
@given(dt=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_jit_and_no_jit_give_identical_bytes_for_float_math(shape, dt, data):
    """Every float math builtin of the ULP suite with two or three arguments, one kernel per
    call shape (the one-argument ones: the float builtins test above)."""
    arity, kind = shape
    n = data.draw(st.integers(1, 24))
    cols = [data.draw(hnp.arrays(dt, n, elements=_elements(np.dtype(dt))))
            for _ in range(arity)]
    if kind == "fi":
        cols[1] = data.draw(hnp.arrays(np.int32, n, elements=st.integers(-300, 300)))
    floats, ints = probe_names(_shapes()[shape], dt)
    for group, out in ((floats, dt), (ints, np.int32)):
        if group:
            a = evaluate_many(group, cols, out, jit=False)
            b = evaluate_many(group, cols, out, jit=True)
            assert [nm for j, nm in enumerate(group) if a[j].tobytes() != b[j].tobytes()] == []


def test_exact_judge_catches_a_wrong_value_and_a_wrong_zero_sign():
    group = float_group("float32", 0, 8)
    call = next(c for c in group.calls if c.name == "modf")
    outs = run_simulator(group, [call], jit=False)
    assert judge(call, group, "sim", outs).deviations == 0
    frac = outs[0].copy()
    k = int(np.flatnonzero(frac == 0)[0])
    frac[k] = -frac[k]
    assert judge(call, group, "sim", [frac, outs[1]]).deviations == 1
    whole = outs[1].copy()
    whole[np.isfinite(whole)] += 1
    assert judge(call, group, "sim", [outs[0], whole]).deviations > 10


def test_conversion_references_round_once_by_the_mode():
    from fractions import Fraction

    halfway = 2**24 + 1  # exactly between two floats
    assert round_to_float(Fraction(halfway), "float32", "_rte") == 2.0**24
    assert round_to_float(Fraction(halfway), "float32", "_rtp") == 2.0**24 + 2
    assert round_to_float(Fraction(-(2**129)), "float32", "_rtz") == -float(np.finfo("f4").max)
    assert round_to_float(Fraction(-(2**129)), "float32", "_rtp") == -float(np.finfo("f4").max)
    assert round_to_float(Fraction(-(2**129)), "float32", "_rtn") == -np.inf
    # double -> float near a subnormal: one rounding, not two
    tiny = Fraction(3, 2) * Fraction(2) ** -149 + Fraction(2) ** -200
    assert round_to_float(tiny, "float32", "") == 2.0**-148
    assert convert_reference(np.float64(-2.5), "float64", "int32", False, "_rte") == (-2, True)
    assert convert_reference(np.float64(3e9), "float64", "int32", False, "") == (0, False)
    assert convert_reference(np.float64(np.nan), "float64", "uint8", True, "_rtp") == (0, True)
    assert convert_reference(np.int64(-1), "int64", "uint16", False, "") == (65535, True)


def test_ulp_distance_counts_ulps_and_nan_mismatches():
    a = np.array([1.0, 1.0, np.nan, np.nan, -0.0], np.float32)
    b = np.array([np.nextafter(np.float32(1), np.float32(2)), 1.0, np.nan, 1.0, 0.0],
                 np.float32)
    assert ulp_distance(a, b).tolist() == [1.0, 0.0, 0.0, np.inf, 0.0]


@given(dt=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_jit_and_no_jit_give_identical_bytes_for_float_builtins(dt, data):
    """The one-argument float builtins in the math suite's kernels (compiled once for both)."""
    names, _ilogb = probe_names(_shapes()[(1, "f")], dt)
    x = data.draw(hnp.arrays(dt, st.integers(1, 40), elements=st.floats(
        allow_nan=True, allow_infinity=True, width=32 if dt is np.float32 else 64)))
    a = evaluate_many(names, [x], dt, jit=False)
    b = evaluate_many(names, [x], dt, jit=True)
    assert len(names) > 40
    assert [n for j, n in enumerate(names) if a[j].tobytes() != b[j].tobytes()] == []


_INT_GROUPS = {1: ["clz", "ctz", "popcount"],
               2: ["rotate", "hadd", "rhadd", "add_sat", "sub_sat", "mul_hi"],
               3: ["bitselect", "mad_hi"]}


@given(dt=st.sampled_from([np.int64, np.uint64, np.int32, np.uint8]),
       arity=st.sampled_from([1, 2, 3]), data=st.data())
def test_jit_and_no_jit_give_identical_bytes_for_integer_builtins(dt, arity, data):
    n = data.draw(st.integers(1, 30))
    cols = [data.draw(hnp.arrays(dt, n)) for _ in range(arity)]
    names = _INT_GROUPS[arity]
    a = evaluate_many(names, cols, dt, jit=False)
    b = evaluate_many(names, cols, dt, jit=True)
    assert a.tobytes() == b.tobytes()


def test_cli_conformance_json_on_the_simulator(capsys):
    import json

    assert main(["conformance", "--simulator-only", "--builtin", "fma", "--builtin", "sqrt",
                 "--draws", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["builtin"] for r in out["rows"]} == {"fma", "sqrt"}
    assert all(r["deviations"] == 0 for r in out["rows"])


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_rootn_whose_root_overflows_is_inf_not_a_crash(jit):
    """rootn(4.9e-324, -1) is 2^1074, beyond DBL_MAX: inf (no-JIT raised OverflowError from
    math.ldexp); the conformance inputs hold that row, so the suite would catch it again."""
    sub = np.nextafter(0.0, 1.0)
    x = np.array([sub, -sub, sub * 3, 0.5], np.float64)
    n = np.array([-1, -1, -2, -2000], np.int32)
    names, _ = probe_names(_shapes()[(2, "fi")], np.float64)  # the math suite's kernel
    got = evaluate_many(names, [x, n], np.float64, jit=jit)[names.index("rootn")]
    assert got[:2].tolist() == [np.inf, -np.inf]
    assert got[2] == pytest.approx(2.0**537 / 3**0.5, rel=1e-15)
    assert got[3] == pytest.approx(2 ** (1 / 2000), rel=1e-15)
    from verify.conformance import inputs

    cols = inputs(np.float64, 2, "fi")
    assert ((cols[0] == sub) & (cols[1] == -1)).any()


def test_mad_mix_smoothstep_judges_accept_the_spec_and_nothing_else():
    """mad: the fma or the rounded multiply-add pass, one ulp off either fails; smoothstep
    within 1e-5, mix within 1e-3 absolute (float; OpenCL C 7.4)."""
    group = float_group("float32", 0, 40)
    calls = {c.name: c for c in group.calls if c.name in ("mad", "mix", "smoothstep")}
    outs = run_simulator(group, list(calls.values()), jit=False)
    for call, got in zip(calls.values(), outs, strict=True):
        assert judge(call, group, "sim", [got]).deviations == 0, call.name
    mad = calls["mad"]
    fused = mad.wants[0].copy()
    assert judge(mad, group, "sim", [fused]).deviations == 0
    moved = np.isfinite(fused) & (fused != 0)
    fused[moved] = np.nextafter(fused[moved], np.float32(np.inf))
    wrong = moved & (fused != mad.judge[0].alternative)
    assert judge(mad, group, "sim", [fused]).deviations == wrong.sum() > 10
    for name, off in (("smoothstep", 2e-5), ("mix", 2e-3)):
        call, got = calls[name], outs[list(calls).index(name)].copy()
        got += np.float32(off)
        assert judge(call, group, "sim", [got]).deviations == call.defined[0].sum() > 10


_PROBE_FILES = """
import inspect
from verify.probe_kernels import evaluate_many, probe_kernel, _CACHE
import numpy as np
evaluate_many(["clz", "popcount"], [np.arange(4, dtype=np.int32)], np.int32, jit=False)
print(inspect.getsourcefile(probe_kernel("clz", 1).fn))
print(inspect.getsourcefile(_CACHE[("many", ("clz", "popcount"), 1)].fn))
"""


def test_probe_kernels_live_at_the_same_path_in_every_process():
    """A probe kernel's generated module names the probe's file: a path that changed per process
    (a temporary folder, a name from Python's salted hash) compiled every probe again in every
    process. Another process, with another hash seed, finds them at this process's paths."""
    import inspect
    import subprocess
    import sys

    from verify.probe_kernels import _CACHE, probe_kernel

    evaluate_many(["clz", "popcount"], [np.arange(4, dtype=np.int32)], np.int32, jit=False)
    here = [inspect.getsourcefile(probe_kernel("clz", 1).fn),
            inspect.getsourcefile(_CACHE[("many", ("clz", "popcount"), 1)].fn)]
    proc = subprocess.run([sys.executable, "-c", _PROBE_FILES], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == here


def test_probes_of_every_length_share_one_compiled_module():
    """The Hypothesis tests above draw 1..24 elements; a probe launched with the local size
    clsim picks (the largest divisor of the length) compiled one module per length. All
    lengths of one probe, scalar-suite kernel and vector-suite kernel use one local size."""
    from clsim.runtime import launch
    from verify.conformance_exact import _simulator_kernel, python_source
    from verify.probe_kernels import probe_kernel

    names = ["clz", "popcount"]
    group = groups(0, 4)[0]
    calls = group.calls[:3]
    for n in (3, 7, 12):
        x = np.arange(n, dtype=np.int32)
        evaluate_many(names, [x], np.int32, jit=False)
        evaluate("clz", [x], [np.int32], jit=False)
        run_simulator(Group(group.key, [c[:n] for c in group.cols], calls), calls, jit=False)
    kernels = {"many": _CACHE[("many", tuple(names), 1)], "probe": probe_kernel("clz", 1),
               "exact": _simulator_kernel(python_source(len(group.cols), calls))}
    local_sizes = {name: {key[3] for key in launch._COMPILED if key[0] == id(kern)}
                   for name, kern in kernels.items()}
    assert local_sizes == {name: {(1, 1, 1)} for name in kernels}
