"""Atomics on global buffers and local arrays.

Contracts: each atomic is one read-modify-write returning the old value, with C integer
wrap-around, in the documented order (the work-item loop order: groups in linear order, lanes in
linear order within a region); a kernel with global atomics runs its groups serially even when
parallel=True is asked for; local atomics keep groups parallel; out-of-range atomics and
unsupported element types are clear errors; instruments see one access of kind "atomic".
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    KernelCompileError,
    OutOfBoundsError,
    atomic_add,
    atomic_and,
    atomic_cmpxchg,
    atomic_dec,
    atomic_inc,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_sub,
    atomic_xchg,
    atomic_xor,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
)
from clsim.compiler.frontend import parse
from clsim.instruments import registry
from clsim.instruments.base import Instrument


@kernel
def histogram(x, counts, n):
    i = get_global_id(0)
    if i < n:
        atomic_inc(counts[x[i]])


@pytest.mark.parametrize("jit", [False, True])
def test_global_histogram_and_serial_groups(jit):
    """atomic_inc on a global buffer counts like np.bincount; the kernel is flagged as using
    global atomics, so its groups run serially (even if parallel=True is asked for)."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 10, 1000).astype(np.int32)
    counts = np.zeros(10, np.int32)
    r = clsim.run(histogram, (1024,), (64,), (x, counts, np.int32(1000)), jit=jit,
                  parallel=True)
    assert (counts == np.bincount(x, minlength=10)).all()
    assert parse(histogram).uses_global_atomics and not r.parallel


@kernel
def ticket(counter, out):
    i = get_global_id(0)
    out[i] = atomic_add(counter, 0, 1)


def test_return_values_follow_work_item_loop_order():
    """Old values come back in work-item loop order: group 0's lanes in order, then group 1..."""
    counter = np.zeros(1, np.int64)
    out = np.zeros(100, np.int64)
    clsim.run(ticket, (100,), (16,), (counter, out))
    assert counter[0] == 100 and (out == np.arange(100)).all()


@kernel
def all_ops(a, b, c, d, e, f, g, h, k, m, old):
    i = get_global_id(0)
    v = i + 1
    old[i * 10 + 0] = atomic_sub(a[0], v)
    old[i * 10 + 1] = atomic_xchg(b[0], v)
    old[i * 10 + 2] = atomic_min(c[0], v * 7 % 11)
    old[i * 10 + 3] = atomic_max(d[0], v * 7 % 11)
    old[i * 10 + 4] = atomic_and(e[0], ~(1 << (i % 8)))
    old[i * 10 + 5] = atomic_or(f[0], 1 << (i % 8))
    old[i * 10 + 6] = atomic_xor(g[0], v)
    old[i * 10 + 7] = atomic_dec(h[0])
    old[i * 10 + 8] = atomic_cmpxchg(k[0], i, i + 1)
    old[i * 10 + 9] = atomic_add(m, 0, 2147483647)


def _wrap(value: int, dtype):
    """C conversion of a Python int to ``dtype`` (two's complement wrap-around)."""
    bits = np.dtype(dtype).itemsize * 8
    unsigned = np.array(value & ((1 << bits) - 1), f"uint{bits}")
    return unsigned.view(dtype)[()]


def _start(dtype):
    ones = -1 if np.dtype(dtype).kind == "i" else np.iinfo(dtype).max
    return [100, 0, 50, 0, ones, 0, 0, 0, 0, 0]


def _model(dtype, n):
    state = [int(v) for v in _start(dtype)]
    olds = []
    for i in range(n):
        v = i + 1
        olds.append([_wrap(x, dtype) for x in state])
        state[0] -= v
        state[1] = v
        state[2] = min(state[2], v * 7 % 11)
        state[3] = max(state[3], v * 7 % 11)
        state[4] &= ~(1 << (i % 8))
        state[5] |= 1 << (i % 8)
        state[6] ^= v
        state[7] -= 1
        state[8] = i + 1 if state[8] == i else state[8]
        state[9] += 2147483647
        state = [int(_wrap(x, dtype)) for x in state]
    return [_wrap(x, dtype) for x in state], np.array(olds, dtype)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_every_integer_atomic_wraps_like_c(dtype, jit):
    """sub, xchg, min, max, and, or, xor, dec, cmpxchg and add on 32- and 64-bit integers: the
    final values and every returned old value match a sequential model (with wrap-around)."""
    n = 20
    bufs = [np.array([v], dtype) for v in _start(dtype)]
    old = np.zeros(n * 10, dtype)
    clsim.run(all_ops, (n,), (8,), (*bufs, old), jit=jit)
    state, olds = _model(dtype, n)
    assert [b[0] for b in bufs] == state
    assert (old.reshape(n, 10) == olds).all()


@kernel
def float_sum(x, total):
    i = get_global_id(0)
    atomic_add(total[0], x[i])


def test_float_atomic_add_in_loop_order():
    """atomic_add on float32 (OpenCL 3.0 float atomics) sums in work-item loop order."""
    x = np.random.default_rng(1).standard_normal(300).astype(np.float32)
    total = np.zeros(1, np.float32)
    clsim.run(float_sum, (300,), (32,), (x, total))
    want = np.float32(0)
    for v in x:
        want = np.float32(want + v)
    assert total[0] == want


@kernel
def local_histogram(x, out):
    lid = get_local_id(0)
    bins = local_array(8, np.int32)
    if lid < 8:
        bins[lid] = 0
    barrier(CLK_LOCAL_MEM_FENCE)
    atomic_add(bins[x[get_global_id(0)] % 8], 1)
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid < 8:
        out[get_group_id(0) * 8 + lid] = bins[lid]


def test_local_atomics_keep_groups_parallel():
    """Atomics on a local array: per-group histograms are right and groups still run in
    parallel (only global atomics force serial groups)."""
    x = np.random.default_rng(2).integers(0, 100, 64 * 32).astype(np.int32)
    out = np.zeros(32 * 8, np.int32)
    r = clsim.run(local_histogram, (64 * 32,), (64,), (x, out))
    assert not parse(local_histogram).uses_global_atomics and r.parallel
    for g in range(32):
        assert (out[g * 8:g * 8 + 8] == np.bincount(x[g * 64:(g + 1) * 64] % 8, minlength=8)).all()


@kernel
def atomic_oob(counts, k):
    atomic_inc(counts[get_global_id(0) + k])


def test_out_of_bounds_atomic():
    """An atomic outside the buffer is OutOfBoundsError naming an atomic access."""
    with pytest.raises(OutOfBoundsError) as info:
        clsim.run(atomic_oob, (8,), (8,), (np.zeros(8, np.int32), np.int32(1)))
    err = info.value
    assert err.access == "atomic" and err.index == 8 and err.length == 8
    assert "atomic update of counts[8]" in str(err)


def test_unsupported_atomics_are_compile_errors():
    """Element types without an OpenCL atomic, float atomic_min, and atomics on a scalar are
    KernelCompileErrors saying what is supported."""

    @kernel
    def k_bytes(x):
        atomic_add(x[0], 1)

    @kernel
    def k_fmin(x):
        atomic_min(x[0], 1.0)

    @kernel
    def k_scalar(x, n):
        atomic_add(n, 1)

    with pytest.raises(KernelCompileError, match="int8 elements is not an OpenCL atomic"):
        clsim.run(k_bytes, (1,), (1,), (np.zeros(4, np.int8),))
    with pytest.raises(KernelCompileError, match="supported: int32, uint32, int64, uint64"):
        clsim.run(k_fmin, (1,), (1,), (np.zeros(4, np.float32),))
    with pytest.raises(KernelCompileError, match="first argument must be an element"):
        clsim.run(k_scalar, (1,), (1,), (np.zeros(4, np.int32), np.int32(3)))


class _Accesses(Instrument):
    name = "test_atomic_accesses"
    seen: ClassVar[list] = []

    def key(self):
        return (self.name, id(self))

    def access(self, gen, site, buffer, arrt, codes, kind, atomic=False):
        self.seen.append((buffer, kind, atomic, arrt.space))
        return codes

    @classmethod
    def create(cls, config):
        return cls()


def test_instruments_see_one_atomic_access(monkeypatch):
    """An atomic reaches the instruments as one access of kind "atomic" with atomic=True."""
    _Accesses.seen = []
    monkeypatch.setattr(registry, "INSTRUMENTS", (*registry.INSTRUMENTS, _Accesses))
    clsim.run(histogram, (8,), (8,), (np.zeros(8, np.int32), np.zeros(10, np.int32),
                                      np.int32(8)))
    assert ("counts", "atomic", True, "global") in _Accesses.seen
    assert [s for s in _Accesses.seen if s[0] == "counts"] == [("counts", "atomic", True,
                                                                 "global")]


@kernel
def float_cmpxchg(buf):
    atomic_cmpxchg(buf[0], np.float32(0), np.float32(1))


def test_atomic_cmpxchg_on_float_points_to_the_c11_compare_exchange():
    """OpenCL 1.x atomic_cmpxchg is integer-only; the error names the float alternative."""
    with pytest.raises(KernelCompileError, match="atomic_compare_exchange_strong"):
        clsim.run(float_cmpxchg, (4,), (4,), (np.zeros(1, np.float32),))
