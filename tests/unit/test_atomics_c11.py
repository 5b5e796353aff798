"""OpenCL 2.0 atomics (atomic_load/store/fetch_*/exchange/compare_exchange, _explicit forms).

Contracts: each is one indivisible access returning the old value (compare-exchange: a bool,
with the current value written to the private ``expected`` element on failure), on global
buffers and local arrays of int/uint/long/ulong (float for load/store/exchange/add/sub/min/
max), in the work-item loop order; memory orders and scopes are accepted, and a constant that
is not a valid order for the operation is a compile error naming it; atomics do not race with
atomics under ``checks="races"``, a plain store racing an atomic still does.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    KernelCompileError,
    atomic_compare_exchange_strong,
    atomic_compare_exchange_strong_explicit,
    atomic_compare_exchange_weak,
    atomic_exchange,
    atomic_fetch_add,
    atomic_fetch_add_explicit,
    atomic_fetch_and,
    atomic_fetch_max,
    atomic_fetch_min,
    atomic_fetch_or,
    atomic_fetch_sub_explicit,
    atomic_fetch_xor,
    atomic_flag_clear_explicit,
    atomic_flag_test_and_set,
    atomic_init,
    atomic_load,
    atomic_load_explicit,
    atomic_store,
    atomic_store_explicit,
    atomic_work_item_fence,
    barrier,
    get_global_id,
    get_local_id,
    kernel,
    local_array,
    memory_order_acq_rel,
    memory_order_acquire,
    memory_order_relaxed,
    memory_order_release,
    memory_order_seq_cst,
    memory_scope_device,
    memory_scope_work_group,
    private_array,
)

I32, U32, I64, U64 = np.int32, np.uint32, np.int64, np.uint64


@kernel
def fetch_ops(x, acc, old_add):
    i = get_global_id(0)
    old_add[i] = atomic_fetch_add(acc[0], x[i])
    atomic_fetch_sub_explicit(acc[1], x[i], memory_order_relaxed)
    atomic_fetch_or(acc[2], x[i])
    atomic_fetch_xor(acc[3], x[i])
    atomic_fetch_and(acc[4], x[i])
    atomic_fetch_min(acc[5], x[i])
    atomic_fetch_max(acc, 6, x[i])
    atomic_fetch_add_explicit(acc[7], x[i], memory_order_seq_cst, memory_scope_device)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("dtype", [I32, U32, I64, U64])
def test_fetch_ops_match_numpy(jit, dtype):
    """Every fetch op over 128 work-items equals the numpy fold, with C wrap-around; the value
    returned by fetch_add is the running prefix in work-item order (groups serial)."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**30, 128).astype(dtype)
    init = np.array([5, 7, 0, 0, -1, -1, 0, 3], np.int64).astype(dtype)
    acc = init.copy()
    old = np.zeros(128, dtype)
    clsim.run(fetch_ops, (128,), (32,), (x, acc, old), jit=jit)
    with np.errstate(over="ignore"):
        want = [init[0] + x.sum(dtype=dtype), init[1] - x.sum(dtype=dtype),
                np.bitwise_or.reduce(x), np.bitwise_xor.reduce(x),
                np.bitwise_and.reduce(x) & init[4], min(x.min(), init[5]), x.max(),
                init[7] + x.sum(dtype=dtype)]
        prefix = (init[0] + np.concatenate([[0], np.cumsum(x, dtype=dtype)[:-1]])).astype(dtype)
    np.testing.assert_array_equal(acc, np.array(want).astype(dtype))
    np.testing.assert_array_equal(old, prefix)


@kernel
def float_ops(x, acc):
    i = get_global_id(0)
    atomic_fetch_add(acc[0], x[i])
    atomic_fetch_min(acc[1], x[i])
    atomic_fetch_max(acc[2], x[i])


@pytest.mark.parametrize("jit", [False, True])
def test_float_fetch_add_min_max(jit):
    """float add folds in work-item order; min/max follow fmin/fmax (a NaN operand is ignored)."""
    x = np.arange(64, dtype=np.float32) - 20.5
    x[10] = np.nan
    acc = np.array([0.0, np.inf, -np.inf], np.float32)
    clsim.run(float_ops, (64,), (16,), (x, acc), jit=jit)
    want_sum = np.float32(0)
    for v in x:
        want_sum = np.float32(want_sum + v)
    assert np.isnan(acc[0]) and np.isnan(want_sum)
    assert acc[1] == np.nanmin(x) and acc[2] == np.nanmax(x)


@kernel
def load_store_exchange(buf, out):
    i = get_global_id(0)
    out[i] = atomic_load(buf[i])
    atomic_store(buf[i], i * 2)
    out[64 + i] = atomic_load_explicit(buf[i], memory_order_acquire, memory_scope_work_group)
    atomic_store_explicit(buf[i], atomic_exchange(buf[i], 7) + 1, memory_order_release)


@pytest.mark.parametrize("jit", [False, True])
def test_load_store_exchange(jit):
    """load reads, store writes, exchange returns the old value and stores the new."""
    buf = np.arange(64, dtype=I64) + 100
    out = np.zeros(128, I64)
    clsim.run(load_store_exchange, (64,), (16,), (buf, out), jit=jit)
    np.testing.assert_array_equal(out[:64], np.arange(64) + 100)
    np.testing.assert_array_equal(out[64:], np.arange(64) * 2)
    np.testing.assert_array_equal(buf, np.arange(64) * 2 + 1)


@kernel
def cas_increment(counter, seen):
    i = get_global_id(0)
    e = private_array(1, np.int32)
    e[0] = atomic_load(counter[0])
    tries = 0
    while not atomic_compare_exchange_weak(counter[0], e[0], e[0] + 1):
        tries += 1
    seen[i] = e[0]


@pytest.mark.parametrize("jit", [False, True])
def test_cas_loop_counts_every_work_item(jit):
    """The usual CAS loop: every work-item increments once; each saw a distinct old value."""
    counter = np.zeros(1, I32)
    seen = np.full(96, -1, I32)
    clsim.run(cas_increment, (96,), (32,), (counter, seen), jit=jit)
    assert counter[0] == 96
    np.testing.assert_array_equal(np.sort(seen), np.arange(96))


@kernel
def cas_once(buf, expect, result, current):
    i = get_global_id(0)
    e = private_array(1, np.uint32)
    e[0] = expect[i]
    ok = atomic_compare_exchange_strong_explicit(buf[i], e[0], np.uint32(99),
                                                 memory_order_acq_rel, memory_order_relaxed)
    result[i] = 1 if ok else 0
    current[i] = e[0]


@pytest.mark.parametrize("jit", [False, True])
def test_compare_exchange_success_and_failure(jit):
    """Success: the object becomes desired, expected unchanged. Failure: the object unchanged,
    expected becomes the object's value."""
    buf = np.array([1, 2, 3, 4], U32)
    expect = np.array([1, 0, 3, 5], U32)
    result = np.zeros(4, I32)
    current = np.zeros(4, U32)
    clsim.run(cas_once, (4,), (4,), (buf, expect, result, current), jit=jit)
    np.testing.assert_array_equal(result, [1, 0, 1, 0])
    np.testing.assert_array_equal(buf, [99, 2, 99, 4])
    np.testing.assert_array_equal(current, [1, 2, 3, 4])


@kernel
def local_histogram(x, out):
    lid = get_local_id(0)
    h = local_array(8, np.int32)
    if lid < 8:
        atomic_store(h[lid], 0)
    barrier(CLK_LOCAL_MEM_FENCE)
    atomic_fetch_add(h[x[get_global_id(0)]], 1)
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid < 8:
        atomic_fetch_add(out[lid], atomic_load(h[lid]))


@pytest.mark.parametrize("checks", ["default", "races"])
def test_local_histogram_no_race_between_atomics(checks):
    """Local atomics count like bincount, and the race checker reports no race among them."""
    x = np.random.default_rng(2).integers(0, 8, 256).astype(I32)
    out = np.zeros(8, I32)
    clsim.run(local_histogram, (256,), (64,), (x, out), checks=checks, jit=False)
    np.testing.assert_array_equal(out, np.bincount(x, minlength=8))


@kernel
def store_vs_atomic(buf):
    i = get_global_id(0)
    if i == 0:
        buf[0] = 5
    else:
        atomic_fetch_add(buf[0], 1)


def test_plain_store_racing_atomic_is_reported():
    """A plain store and an atomic on the same element in one region is still a race."""
    with pytest.raises(clsim.DataRaceError, match="atomic"):
        clsim.run(store_vs_atomic, (8,), (8,), (np.zeros(1, I32),), checks="races", jit=False)


def _compile_error(body, match):
    with pytest.raises(KernelCompileError, match=match):
        clsim.run(body, (4,), (4,), (np.zeros(4, I32),), jit=False)


@kernel
def load_with_release(buf):
    buf[1] = atomic_load_explicit(buf[0], memory_order_release)


@kernel
def store_with_acquire(buf):
    atomic_store_explicit(buf[0], 1, memory_order_acquire)


@kernel
def order_not_an_order(buf):
    atomic_fetch_add_explicit(buf[0], 1, 42)


@kernel
def expected_not_private(buf):
    atomic_compare_exchange_strong(buf[0], buf[1], 3)


def test_bad_orders_and_spellings_are_compile_errors():
    """Orders C11 forbids, non-orders, a non-private expected: errors that say what to use."""
    _compile_error(load_with_release, "memory_order_release is not allowed")
    _compile_error(store_with_acquire, "memory_order_acquire is not allowed")
    _compile_error(order_not_an_order, "42 is not a memory order")
    _compile_error(expected_not_private, "expected must be an element of a private array")


@kernel
def float_or(buf, acc):
    atomic_fetch_or(acc[0], buf[0])


def test_bitwise_float_atomic_rejected():
    with pytest.raises(KernelCompileError, match="not an OpenCL atomic"):
        clsim.run(float_or, (4,), (4,), (np.zeros(4, np.float32), np.zeros(1, np.float32)),
                  jit=False)


@kernel
def spin_lock_counter(lock, counter, log):
    i = get_global_id(0)
    if i == 0:
        atomic_init(counter[1], 10)
    while atomic_flag_test_and_set(lock[0]):
        pass
    log[i] = counter[0]
    counter[0] = counter[0] + 1
    atomic_work_item_fence(CLK_LOCAL_MEM_FENCE, memory_order_release, memory_scope_work_group)
    atomic_flag_clear_explicit(lock[0], memory_order_release)


@pytest.mark.parametrize("jit", [False, True])
def test_flag_lock_and_init(jit):
    """test_and_set returns whether the flag was set and sets it; clear resets it: a spin lock
    around a plain increment counts every work-item (one at a time in the simulator);
    atomic_init stores its value."""
    lock = np.zeros(1, I32)
    counter = np.zeros(2, I32)
    log = np.full(32, -1, I32)
    clsim.run(spin_lock_counter, (32,), (32,), (lock, counter, log), jit=jit)
    assert lock[0] == 0 and counter[0] == 32 and counter[1] == 10
    np.testing.assert_array_equal(np.sort(log), np.arange(32))


@kernel
def init_races_atomic(buf):
    i = get_global_id(0)
    if i == 0:
        atomic_init(buf[0], 5)
    else:
        atomic_fetch_add(buf[0], 1)


def test_atomic_init_is_a_plain_store_for_the_race_checker():
    """C11: atomic_init is not atomic, so racing an atomic on the same object is a race."""
    with pytest.raises(clsim.DataRaceError, match="atomic"):
        clsim.run(init_races_atomic, (8,), (8,), (np.zeros(1, I32),), checks="races", jit=False)


def test_atomic_flags_and_c11_atomics_ask_for_opencl_c_2():
    """A twin calling atomic_flag_* (or any C11 atomic) builds with the device's -cl-std=CL2.0
    and is skipped, with the reason, on a device whose probe saw no OpenCL C 2.0."""
    from verify.features import cl2_uses, needs_cl2

    for call in ("atomic_flag_test_and_set(&f)", "atomic_flag_clear(&f)",
                 "atomic_flag_test_and_set_explicit(&f, memory_order_acquire)",
                 "atomic_flag_clear_explicit(&f, memory_order_release, memory_scope_device)",
                 "atomic_fetch_add(&a, 1)", "atomic_init(&a, 0)"):
        assert cl2_uses(f"__kernel void k(__global atomic_int *a) {{ {call}; }}") == [
            "opencl_c_2.0"], call
    assert not needs_cl2("// atomic_flag_clear(&f)\n__kernel void k() {}")
    assert cl2_uses("#if __OPENCL_C_VERSION__ >= 200\natomic_flag_clear(&f);\n#endif") == []


@kernel
def float_cas_add(x, acc):
    i = get_global_id(0)
    e = private_array(1, np.float32)
    e[0] = atomic_load(acc[0])
    while not atomic_compare_exchange_strong(acc[0], e[0], e[0] + x[i]):
        pass


@kernel
def float_cas_once(buf, expect, desired, result, current):
    i = get_global_id(0)
    e = private_array(1, np.float64)
    e[0] = expect[i]
    ok = atomic_compare_exchange_strong(buf[i], e[0], desired[i])
    result[i] = 1 if ok else 0
    current[i] = e[0]


@pytest.mark.parametrize("jit", [False, True])
def test_float_compare_exchange_compares_bit_patterns(jit):
    """atomic_compare_exchange_strong on atomic_float/atomic_double (core OpenCL 2.0):
    a float CAS loop adds every value once; the comparison is of the bits, as C11's: -0.0
    does not match +0.0, a NaN matches the same NaN, equal values match."""
    x = np.arange(1, 65, dtype=np.float32)
    acc = np.zeros(1, np.float32)
    clsim.run(float_cas_add, (64,), (32,), (x, acc), jit=jit)
    assert acc[0] == x.sum()
    buf = np.array([0.0, np.nan, 1.5, -0.0], np.float64)
    expect = np.array([-0.0, np.nan, 1.5, -0.0], np.float64)
    desired = np.array([7.0, 8.0, 9.0, 10.0], np.float64)
    result, current = np.zeros(4, I32), np.zeros(4, np.float64)
    clsim.run(float_cas_once, (4,), (4,), (buf, expect, desired, result, current), jit=jit)
    np.testing.assert_array_equal(result, [0, 1, 1, 1])
    np.testing.assert_array_equal(buf, [0.0, 8.0, 9.0, 10.0])
    assert not np.signbit(current[0])  # expected became the object's +0.0
