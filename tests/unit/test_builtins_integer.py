"""Integer bit builtins (clz ... bitselect) against Python integers, for every integer type.

Edge values (0, 1, 2, MIN, MAX, MAX-1, MIN+1) and random draws; no-JIT for every type, JIT for
the widths where Numba's own typing is most likely to differ (char, long, ulong) and the bytes
of both modes compared.
"""

import numpy as np
import pytest

from verify.probe_kernels import evaluate, evaluate_many
from verify.testing import device_params

ARITY = {"clz": 1, "ctz": 1, "popcount": 1, "rotate": 2, "abs_diff": 2, "hadd": 2,
         "rhadd": 2, "bitselect": 3, "mad_hi": 3, "add_sat": 2, "sub_sat": 2, "mul_hi": 2}
TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _reference(name, t, args):
    info = np.iinfo(t)
    width, mask = info.bits, 2**info.bits - 1

    def wrap(v):
        v &= mask
        return v - 2**width if info.min < 0 and v >= 2 ** (width - 1) else v

    x, *rest = args
    y = rest[0] if rest else 0
    z = rest[1] if len(rest) > 1 else 0
    u = x & mask
    k = (y & mask) % width
    table = {
        "clz": lambda: width - u.bit_length(),
        "ctz": lambda: width if u == 0 else (u & -u).bit_length() - 1,
        "popcount": lambda: bin(u).count("1"),
        "rotate": lambda: wrap((u << k) | (u >> (width - k))) if k else x,
        "abs_diff": lambda: abs(x - y),
        "hadd": lambda: (x + y) >> 1,
        "rhadd": lambda: (x + y + 1) >> 1,
        "bitselect": lambda: wrap((u & ~(z & mask)) | (y & mask & z & mask)),
        "mul_hi": lambda: (x * y) >> width,
        "mad_hi": lambda: wrap(((x * y) >> width) + z),
        "add_sat": lambda: min(max(x + y, info.min), info.max),
        "sub_sat": lambda: min(max(x - y, info.min), info.max),
    }
    return table[name]()


def _columns(t, n, seed):
    info = np.iinfo(t)
    edge = [0, 1, 2, info.max, info.min, info.max - 1, info.min + 1]
    rng = np.random.default_rng(seed)
    cols = []
    for k in range(n):
        rolled = edge[k:] + edge[:k]
        draws = rng.integers(info.min, info.max, 60, dtype=t, endpoint=True).tolist()
        cols.append(np.array(rolled + draws, t))
    return cols


def _result_type(name, t):
    dt = np.dtype(t)
    return np.dtype("u" + dt.name) if name == "abs_diff" and dt.kind == "i" else dt


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("name", list(ARITY))
def test_integer_builtin_matches_python_integers(name, t):
    """Every integer builtin gives C's value for every type (no-JIT mode)."""
    cols = _columns(t, ARITY[name], seed=len(name))
    (got,) = evaluate(name, cols, [_result_type(name, t)], jit=False)
    want = [_reference(name, t, [int(c[i]) for c in cols]) for i in range(cols[0].size)]
    assert got.tolist() == want


JIT_CHECKED = ["clz", "rotate", "abs_diff", "mul_hi", "add_sat", "sub_sat", "bitselect", "rhadd"]


@pytest.mark.parametrize("t", [np.int8, np.int64, np.uint64], ids=lambda t: t.__name__)
def test_integer_builtin_jit_matches_no_jit_bytes(t):
    """Each builtin of JIT_CHECKED gives the same bytes compiled and not. The builtins of one
    arity and result type share one kernel (evaluate_many: one compile, not one per builtin)."""
    shapes: dict = {}
    for name in JIT_CHECKED:
        shapes.setdefault((ARITY[name], _result_type(name, t)), []).append(name)
    differ = []
    for (arity, result), names in shapes.items():
        cols = _columns(t, arity, seed=3)
        a = evaluate_many(names, cols, result, jit=False)
        b = evaluate_many(names, cols, result, jit=True)
        differ += [name for name, x, y in zip(names, a, b, strict=True)
                   if x.tobytes() != y.tobytes()]
    assert differ == []


def test_upsample_mul24_mad24():
    hi = np.array([-1, 2, -128], np.int8)
    lo = np.array([255, 3, 0], np.uint8)
    (got,) = evaluate("upsample", [hi, lo], [np.int16], jit=False)
    assert got.tolist() == [(-1 << 8) | 255, (2 << 8) | 3, -128 << 8]
    a = np.array([2**23 - 1, -(2**23), 5], np.int32)
    b = np.array([3, 2, -7], np.int32)
    c = np.array([1, 1, 1], np.int32)
    (m,) = evaluate("mul24", [a, b], [np.int32], jit=False)
    (d,) = evaluate("mad24", [a, b, c], [np.int32], jit=False)
    assert m.tolist() == [(2**23 - 1) * 3, -(2**24), -35]
    assert d.tolist() == [v + 1 for v in m.tolist()]


def test_ctz_asks_for_the_opencl_c_2_option_only():
    """ctz is OpenCL C 2.0: the Intel runtime's default 1.2 build rejects it, so a twin calling
    it builds with -cl-std=CL2.0 there; PoCL (no 2.0 option, default accepts it) still runs it;
    only a 1.x device without the option lacks it."""
    from types import SimpleNamespace
    from unittest import mock

    from verify import features

    assert features.cl2_uses("__kernel void k(__global int *x) { x[0] = ctz(x[1]); }") == [
        "opencl_c_2.0_std"]
    assert features.cl2_uses("int ctz_count = 0;") == []
    for option, builtins, version, lacks in ((None, False, "3.0", False),
                                             ("-cl-std=CL2.0", True, "1.2", False),
                                             ("-cl-std=CL2.0", False, "1.2", True),
                                             (None, False, "1.2", True)):
        info = SimpleNamespace(short_name="dev", opencl_version=version)
        verdict = SimpleNamespace(cl2_option=option, cl2_builtins=builtins, cl2_reason="")
        with mock.patch.object(features, "health", return_value=verdict):
            reason = features.missing_feature(info, "opencl_c_2.0_std")
        assert (reason is not None) == lacks
        if lacks:
            assert "dev lacks OpenCL C 2.0" in reason


@pytest.mark.parametrize("device", device_params())
def test_integer_builtins_run_on_each_device_as_on_the_simulator(device):
    """The integer group of the conformance suite (ctz included) builds and runs on every
    device; where the spec defines the result, the device gives the simulator's bits."""
    from verify.conformance_cases import integer_group
    from verify.conformance_exact import _chunks, judge, run_device
    from verify.devices import get_device
    from verify.features import missing_feature

    group = integer_group("int32", 0, 40)
    info = get_device(device)
    lacks = missing_feature(info, "opencl_c_2.0_std")
    group.calls = [c for c in group.calls if c.name != "ctz" or lacks is None]
    for calls in _chunks(group):
        outs = run_device(info, group, calls)
        j = 0
        for call in calls:
            row = judge(call, group, device, outs[j:j + len(call.outs)])
            assert row.deviations == 0, (call.name, row.examples[:2])
            j += len(call.outs)
    if lacks:
        pytest.skip(f"ctz not run: {lacks}; the other integer builtins agree")
