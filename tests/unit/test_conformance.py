"""The conformance suite as the project's differential test of the simulator: the simulator
against the spec in both modes (zero deviations), JIT against no-JIT bytes for every builtin of
the suite and the integer builtins (Hypothesis over types and values), and the CLI."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from clsim.cli import main
from verify.conformance import _shapes, conformance, ulp_distance
from verify.probe_kernels import evaluate_many


@pytest.mark.parametrize("mode", ["nojit", "jit"])
def test_simulator_has_no_deviation_from_the_spec(mode):
    """Every scalar float builtin of the table, float and double, on edge values and random
    draws: within the spec's bound, exact where the spec says exact (sign of zero too)."""
    report = conformance((), draws=120, simulator_modes=(mode,))
    assert len(report.rows) > 130
    bad = [(r.builtin, r.dtype, r.examples[:2]) for r in report.rows if r.deviations]
    assert bad == []


def test_ulp_distance_counts_ulps_and_nan_mismatches():
    a = np.array([1.0, 1.0, np.nan, np.nan, -0.0], np.float32)
    b = np.array([np.nextafter(np.float32(1), np.float32(2)), 1.0, np.nan, 1.0, 0.0],
                 np.float32)
    assert ulp_distance(a, b).tolist() == [1.0, 0.0, 0.0, np.inf, 0.0]


_FLOAT_NAMES = sorted(n for (arity, kind), names in _shapes().items()
                      if arity == 1 and kind == "f" for n in names if n != "ilogb")


@given(dt=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_jit_and_no_jit_give_identical_bytes_for_float_builtins(dt, data):
    x = data.draw(hnp.arrays(dt, st.integers(1, 40), elements=st.floats(
        allow_nan=True, allow_infinity=True, width=32 if dt is np.float32 else 64)))
    a = evaluate_many(_FLOAT_NAMES, [x], dt, jit=False)
    b = evaluate_many(_FLOAT_NAMES, [x], dt, jit=True)
    assert [n for j, n in enumerate(_FLOAT_NAMES) if a[j].tobytes() != b[j].tobytes()] == []


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
