"""Straight-line helpers as intrinsics (clsim/runtime/straightline.py): the helper's own
source translated to LLVM instructions gives the bits the helper gives compiled by Numba
and run as plain Python, and a source outside the subset is refused rather than guessed."""

import numpy as np
import pytest
from numba import njit

from clsim.compiler import builtins as table
from clsim.runtime import straightline
from clsim.runtime.jit_helpers import use

INLINE = sorted(name for name, h in table.HELPERS.items() if h.inline)
SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72284, -103.9721,
                     -150.0, 150.0, 1e-30, 3.4028235e38, -3.4028235e38, 2.0**-149], np.float64)


def _values(dtype, count, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        v = np.concatenate([SPECIALS, rng.standard_normal(count) * 40,
                            rng.uniform(-1, 1, count)])
        return v.astype(dtype)
    info = np.iinfo(dtype)
    edge = np.array([0, 1, info.max, info.min, info.max - 1], dtype)
    return np.concatenate([edge, rng.integers(info.min, info.max, count, dtype, True)])


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _types_of(name):
    if name.endswith("_float32"):
        return ("float32",)
    if name.endswith("_float64"):
        return ("float64",)
    return ("float32", "float64", "int32", "int64", "uint32", "uint64")


@pytest.mark.parametrize("name", INLINE)
def test_every_inline_helper_gives_its_compiled_bits(name):
    """For each helper marked inline, per argument type: the intrinsic, the njit helper and
    the plain-Python helper agree bit for bit (NaN, signed zeros and infinities included).
    A helper reinterpreting bits (exp) has no plain-Python form here (the bitcasts are Numba
    intrinsics); its no-JIT twin is compared in test_exp_poly.py through a kernel."""
    plain_runs = "_bitcast" not in table.HELPERS[name].source
    helper = table.HELPERS[name]
    fast = straightline.make(helper.source)
    (compiled,) = use(name)
    arity = helper.source.split("(", 1)[1].split(")", 1)[0].count(",") + 1
    for dtype in _types_of(name):
        # special values paired with others: each argument's list rotated apart
        args = [np.roll(_values(dtype, 300, k), 3 * k) for k in range(arity)]
        if arity == 1:
            run = njit(lambda a, f=fast: [f(a[i]) for i in range(a.size)])
            # shared helpers have no CPython wrapper: called from compiled code only
            want = njit(lambda a, f=compiled: [f(a[i]) for i in range(a.size)])(args[0])
            plain = [compiled.py_func(a) for a in args[0]] if plain_runs else want
        else:
            run = njit(lambda a, b, f=fast: [f(a[i], b[i]) for i in range(a.size)])
            want = njit(lambda a, b, f=compiled: [f(a[i], b[i]) for i in range(a.size)])(*args)
            plain = ([compiled.py_func(a, b) for a, b in zip(*args, strict=True)]
                     if plain_runs else want)
        got = np.array(run(*args))
        want, plain = np.array(want), np.array(plain)
        assert got.dtype == want.dtype, (name, dtype)
        assert (_bits(got) == _bits(want)).all(), (name, dtype)
        assert (_bits(got) == _bits(plain.astype(want.dtype))).all(), (name, dtype)


@pytest.mark.parametrize("source", [
    "def f(x):\n    if x < 0:\n        return x\n    return -x",  # a statement that branches
    "def f(x):\n    return x / 2.0",  # division is not translated
    "def f(x):\n    return np.exp(x)",  # a call outside the subset
    "def f(x):\n    y = x\n    y += 1\n    return y",  # an augmented assignment
])
def test_a_source_outside_the_subset_is_refused(source):
    """What the translator does not emit is an error when the intrinsic is made, never a
    silently different function."""
    with pytest.raises(straightline.NotStraightLine):
        straightline.make(source)
