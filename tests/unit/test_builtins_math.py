"""Math builtins against correctly rounded references, and JIT against no-JIT bytes.

References: Python's ``math`` in float64 (fmod, remainder, hypot, ldexp are exact or correctly
rounded there), rounded once to float32 for float arguments. Exact functions must match bit for
bit; transcendentals within 1 ulp of the float64 value rounded to float32.
"""

import math

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel
from clsim.compiler import builtins as table
from clsim.compiler.builtins.math import FLOAT_ONLY
from verify.probe_kernels import evaluate, evaluate_many
from verify.testing import device_params

F, D = np.float32, np.float64
EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.0, -2.5, np.inf, -np.inf, np.nan, 1e-40, 3.0,
        1e30, -7.25, 100.5, 0.25, 0.75, 2.0**-1074]


def _safe(f):
    def g(*a):
        try:
            return f(*a)
        except (ValueError, OverflowError):
            return math.nan
    return g


EXACT2 = {
    "fmod": _safe(math.fmod),
    "remainder": _safe(math.remainder),
    "hypot": math.hypot,
    "fdim": lambda x, y: (x - y if x > y else 0.0) if x == x and y == y else math.nan,
    "maxmag": lambda x, y: x if abs(x) > abs(y) else y if abs(y) > abs(x) else (
        y if x != x else x if y != y else max(x, y)),
    "minmag": lambda x, y: x if abs(x) < abs(y) else y if abs(y) < abs(x) else (
        y if x != x else x if y != y else min(x, y)),
}


def _grid(dt, seed):
    rng = np.random.default_rng(seed)
    e = np.array(EDGE, dt)
    return (np.concatenate([np.repeat(e, e.size), rng.uniform(-10, 10, 100).astype(dt)]),
            np.concatenate([np.tile(e, e.size), rng.uniform(-10, 10, 100).astype(dt)]))


@pytest.mark.parametrize("dt", [F, D], ids=["float", "double"])
@pytest.mark.parametrize("name", list(EXACT2))
def test_exact_two_argument_builtins(name, dt):
    """fmod, remainder, hypot, fdim, maxmag, minmag: the exact (correctly rounded) value."""
    x, y = _grid(dt, 1)
    (got,) = evaluate(name, [x, y], [dt], jit=False)
    ref = EXACT2[name]
    want = np.array([ref(float(a), float(b)) for a, b in zip(x, y, strict=True)]).astype(dt)
    same = (got.tobytes() == want.tobytes()) or bool(np.all(
        (np.isnan(got) & np.isnan(want)) | (got.view(f"i{dt().itemsize}") ==
                                             want.view(f"i{dt().itemsize}"))))
    assert same, [(a, b, g, w) for a, b, g, w in zip(x, y, got, want, strict=True)
                  if not (g == w or (g != g and w != w))][:4]


def test_pi_functions_are_exact_at_integers_and_halves():
    x = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.0, -2.0, 3.5, 1e20, np.inf], D)
    (s,) = evaluate("sinpi", [x], [D], jit=False)
    (c,) = evaluate("cospi", [x], [D], jit=False)
    (t,) = evaluate("tanpi", [x], [D], jit=False)
    assert s.tolist()[:11] == [0.0, -0.0, 0.0, -0.0, 1.0, -1.0, -1.0, 0.0, -0.0, -1.0, 0.0]
    assert np.signbit(s[[1, 3, 8]]).all() and not np.signbit(s[[0, 2, 7]]).any()
    assert c.tolist()[:11] == [1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    assert t.tolist()[:9] == [0.0, -0.0, -0.0, 0.0, np.inf, -np.inf, -np.inf, 0.0, -0.0]
    assert np.isnan(s[11]) and np.isnan(c[11]) and np.isnan(t[11])
    xs = np.linspace(-3, 3, 101)
    (s,) = evaluate("sinpi", [xs], [D], jit=False)
    np.testing.assert_allclose(s, np.sin(np.pi * xs), atol=1e-15)


def test_integer_argument_builtins():
    x = np.array([1.5, -2.0, 0.0, -0.0, 8.0, -8.0, np.inf, 3.0, 1.0], D)
    n = np.array([3, 3, -1, -1, 3, 3, 2, 2000, -1075], np.int32)
    (ld,) = evaluate("ldexp", [x, n], [D], jit=False)
    assert ld.tolist()[:8] == [12.0, -16.0, 0.0, -0.0, 64.0, -64.0, np.inf, np.inf]
    assert ld[8] == 0.0  # 2**-1075 rounds to even: 0
    (pn,) = evaluate("pown", [x, n], [D], jit=False)
    assert pn.tolist()[:6] == [3.375, -8.0, np.inf, -np.inf, 512.0, -512.0]
    (rn,) = evaluate("rootn", [x, n], [D], jit=False)
    assert rn[4] == 2.0 and rn[5] == -2.0 and rn[2] == np.inf and rn[3] == -np.inf
    (il,) = evaluate("ilogb", [np.array([0.0, 1.0, 1e-40, np.nan, -np.inf, 3.0], F)],
                     [np.int32], jit=False)
    assert il.tolist() == [-(2**31), 0, -133, 2**31 - 1, 2**31 - 1, 1]
    (nx,) = evaluate("nextafter", [np.array([1.0, 0.0], F), np.array([2.0, -1.0], F)], [F],
                     jit=False)
    assert nx[0] == np.nextafter(F(1), F(2)) and nx[1] == -np.float32(1e-45)


def _float_unary_names():
    rule_shapes = []
    for name, entry in table.TABLE.items():
        if entry.family != "math" or not entry.c.endswith("(x)") or entry.types not in (
                "float, double", FLOAT_ONLY):
            continue
        rule_shapes.append(name)
    return sorted(rule_shapes)


@pytest.mark.parametrize("dt", [F, D], ids=["float", "double"])
def test_unary_math_builtins_give_identical_bytes_in_both_modes(dt):
    """Every one-argument float builtin of the table, JIT vs no-JIT, over edge values and
    random draws: the same bits (one kernel for all of them)."""
    names = _float_unary_names()
    assert len(names) > 50
    rng = np.random.default_rng(4)
    x = np.concatenate([np.array(EDGE, dt), rng.uniform(-20, 20, 200).astype(dt),
                        (rng.standard_normal(100) * 1e10).astype(dt)])
    a = evaluate_many(names, [x], dt, jit=False)
    b = evaluate_many(names, [x], dt, jit=True)
    differ = [names[j] for j in range(len(names)) if a[j].tobytes() != b[j].tobytes()]
    assert differ == []


@kernel
def out_arguments(x, y, m, e, f, ip, fr, fl, s, c, r, q):
    i = get_global_id(0)
    mm, ee = clsim.frexp(x[i])
    m[i] = mm
    e[i] = ee
    a, b = clsim.modf(x[i])
    f[i] = a
    ip[i] = b
    a2, b2 = clsim.fract(x[i])
    fr[i] = a2
    fl[i] = b2
    s1, c1 = clsim.sincos(x[i])
    s[i] = s1
    c[i] = c1
    rr, qq = clsim.remquo(x[i], y[i])
    r[i] = rr
    q[i] = qq


@kernel
def frexp_not_unpacked(x, out):
    i = get_global_id(0)
    out[i] = clsim.frexp(x[i])


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_builtins_with_out_arguments_unpack_as_tuples(jit):
    """m, e = frexp(x); f, i = modf(x); f, fl = fract(x); s, c = sincos(x); r, q = remquo(x, y)
    give C's values (signed zeros, infinities and NaN included) in both modes."""
    x = np.array([3.5, -2.25, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-9, 7.0], F)
    y = np.array([2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -2.0], F)
    ints = {1, 9}
    outs = [np.zeros(x.size, np.int32 if k in ints else F) for k in range(10)]
    clsim.run(out_arguments, (x.size,), None, (x, y, *outs), jit=jit)
    m, e, f, ip, fr, fl, s, c, r, q = outs
    assert m.tolist()[:3] == [0.875, -0.5625, 0.0] and e.tolist()[:3] == [2, 2, 0]
    assert np.signbit(m[2]) and m[3] == np.inf and np.isnan(m[5]) and e[6] == -132
    assert f.tolist()[:5] == [0.5, -0.25, 0.0, 0.0, 0.0] and np.signbit(f[[2, 4]]).all()
    assert ip.tolist()[:5] == [3.0, -2.0, 0.0, np.inf, -np.inf]
    assert fr[7] == np.float32(0.99999994) and fl[7] == -1.0 and fr.tolist()[:2] == [0.5, 0.75]
    assert s.tobytes() == np.array([math.sin(v) if np.isfinite(v) else np.nan
                                    for v in x.astype(D)], F).tobytes() or \
        np.allclose(s[np.isfinite(x)], np.sin(x[np.isfinite(x)]))
    assert c[0] == np.float32(math.cos(3.5)) and c[2] == 1.0 and np.isnan(c[3])
    assert r.tolist()[:2] == [-0.5, -0.25] and r[8] == -1.0
    assert q.tolist()[0] == 2 and q.tolist()[1] == -2 and q[8] == -4


def test_an_out_argument_builtin_must_be_unpacked():
    with pytest.raises(clsim.KernelCompileError, match="unpack them"):
        clsim.run(frexp_not_unpacked, (1,), None, (np.ones(1, F), np.ones(1, F)))


HALF_NATIVE_CL = """#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void probe(__global const double *a0, __global const double *a1, __global double *o) {
    size_t i = get_global_id(0), n = get_global_size(0);
    o[i] = half_sqrt(a0[i]);
    o[n + i] = native_sqrt(a0[i]);
    o[2 * n + i] = native_divide(a0[i], a1[i]);
    o[3 * n + i] = half_exp(a0[i]);
}
"""


def _half_native_on_doubles(x, y, jit):
    rows = [evaluate("half_sqrt", [x], [np.float64], jit=jit)[0],
            evaluate("native_sqrt", [x], [np.float64], jit=jit)[0],
            evaluate("native_divide", [x, y], [np.float64], jit=jit)[0],
            evaluate("half_exp", [x], [np.float64], jit=jit)[0]]
    return np.concatenate(rows)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_half_and_native_convert_a_double_argument_to_float(jit):
    """half_* and native_* exist for float only (gentype float): a double argument converts
    to float and the result is a float, as overload resolution does on the devices."""
    x = np.array([2.0, 1e-300, 3.0000000001, 1e300], np.float64)
    y = np.array([3.0, 3e-300, 7.0, 1.0], np.float64)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    with np.errstate(all="ignore"):
        want = np.concatenate([np.sqrt(xf), np.sqrt(xf), xf / yf,
                               np.exp(xf.astype(np.float64)).astype(np.float32)])
    got = _half_native_on_doubles(x, y, jit)
    np.testing.assert_array_equal(got, want.astype(np.float64))  # NaN (0/0 in float) = NaN
    assert np.isnan(got[9]) and got[3] == np.inf


@pytest.mark.parametrize("device", device_params(requires=("fp64",)))
def test_half_and_native_on_doubles_match_the_devices(device):
    from verify.clrun import run_cl

    x = np.array([2.0, 1e-300, 3.0000000001, 0.5], np.float64)
    y = np.array([3.0, 3e-300, 7.0, 1.0], np.float64)
    dev = run_cl(device, HALF_NATIVE_CL, "probe", (4,), None,
                 [x, y, np.zeros(16, np.float64)]).buffers[2]
    sim = _half_native_on_doubles(x, y, False)
    # native_ and half_ precision is the device's own: sqrt is exact on all three, the rest
    # must at least be the float computation (a float's bits widened to double)
    assert dev[:8].tolist() == sim[:8].tolist()
    assert np.all(dev.astype(np.float32).astype(np.float64)[~np.isnan(dev)] ==
                  dev[~np.isnan(dev)])
