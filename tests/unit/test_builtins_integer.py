"""Integer bit builtins (clz ... bitselect) against Python integers, for every integer type.

Edge values (0, 1, 2, MIN, MAX, MAX-1, MIN+1) and random draws; no-JIT for every type, JIT for
the widths where Numba's own typing is most likely to differ (char, long, ulong) and the bytes
of both modes compared.
"""

import numpy as np
import pytest

from verify.probe_kernels import evaluate

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


@pytest.mark.parametrize("t", [np.int8, np.int64, np.uint64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("name", ["clz", "rotate", "abs_diff", "mul_hi", "add_sat", "sub_sat",
                                  "bitselect", "rhadd"])
def test_integer_builtin_jit_matches_no_jit_bytes(name, t):
    cols = _columns(t, ARITY[name], seed=3)
    out = [_result_type(name, t)]
    (a,) = evaluate(name, cols, out, jit=False)
    (b,) = evaluate(name, cols, out, jit=True)
    assert a.tobytes() == b.tobytes()


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
