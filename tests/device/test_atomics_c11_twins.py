"""OpenCL 2.0 atomics against their OpenCL C twins on the devices present.

Contract: the order-independent results of C11 atomics (the final value of every fetch op on
global and local memory, a compare-exchange loop counting each work-item once) agree exactly
with the device. Devices without OpenCL C 2.0 (Oclgrind, PoCL builds reporting 1.2) skip with
the reason the verifier gives.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    atomic_compare_exchange_strong,
    atomic_compare_exchange_weak_explicit,
    atomic_exchange,
    atomic_fetch_add,
    atomic_fetch_and,
    atomic_fetch_max,
    atomic_fetch_min,
    atomic_fetch_min_explicit,
    atomic_fetch_or,
    atomic_fetch_xor,
    atomic_load,
    atomic_store,
    barrier,
    get_global_id,
    get_local_id,
    kernel,
    local_array,
    memory_order_relaxed,
    memory_scope_device,
    private_array,
)
from verify.clrun import missing_feature, run_cl
from verify.devices import get_device
from verify.policy import EXACT, compare
from verify.testing import device_params

DEVICES = device_params()


@kernel
def c11_mix(x, acc, hist):
    i = get_global_id(0)
    lid = get_local_id(0)
    h = local_array(8, np.int32)
    if lid < 8:
        atomic_store(h[lid], 0)
    barrier(CLK_LOCAL_MEM_FENCE)
    atomic_fetch_add(acc[0], x[i])
    atomic_fetch_or(acc[1], x[i])
    atomic_fetch_xor(acc[2], x[i])
    atomic_fetch_and(acc[3], x[i] | 0x10)
    atomic_fetch_min_explicit(acc[4], x[i], memory_order_relaxed, memory_scope_device)
    atomic_fetch_max(acc[5], x[i])
    e = private_array(1, np.int32)
    e[0] = atomic_load(acc[6])
    while not atomic_compare_exchange_weak_explicit(acc[6], e[0], e[0] + 1,
                                                    memory_order_relaxed, memory_order_relaxed):
        pass
    atomic_fetch_add(h[x[i] & 7], 1)
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid < 8:
        atomic_fetch_add(hist[lid], atomic_load(h[lid]))


C11_CL = r"""
__kernel void c11_mix(__global const int *x, volatile __global atomic_int *acc,
                      volatile __global atomic_int *hist)
{
    size_t i = get_global_id(0);
    size_t lid = get_local_id(0);
    volatile __local atomic_int h[8];
    if (lid < 8)
        atomic_store(&h[lid], 0);
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_fetch_add(&acc[0], x[i]);
    atomic_fetch_or(&acc[1], x[i]);
    atomic_fetch_xor(&acc[2], x[i]);
    atomic_fetch_and(&acc[3], x[i] | 0x10);
    atomic_fetch_min_explicit(&acc[4], x[i], memory_order_relaxed, memory_scope_device);
    atomic_fetch_max(&acc[5], x[i]);
    int e = atomic_load(&acc[6]);
    while (!atomic_compare_exchange_weak_explicit(&acc[6], &e, e + 1,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    atomic_fetch_add(&h[x[i] & 7], 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < 8)
        atomic_fetch_add(&hist[lid], atomic_load(&h[lid]));
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_c11_atomics_match_their_twin(device):
    reason = missing_feature(get_device(device), "opencl_c_2.0")
    if reason:
        pytest.skip(f"{reason}: C11 atomics (atomic_int, atomic_fetch_*) are OpenCL C 2.0")
    x = np.random.default_rng(3).integers(-1000, 1000, 256).astype(np.int32)
    init = np.array([0, 0, 0, -1, 2**31 - 1, -(2**31), 0, 0], np.int32)
    sim_acc, sim_hist = init.copy(), np.zeros(8, np.int32)
    clsim.run(c11_mix, (256,), (64,), (x, sim_acc, sim_hist))
    assert sim_acc[6] == 256  # the CAS loop ran once per work-item
    dev = run_cl(device, C11_CL, "c11_mix", (256,), (64,), (x, init.copy(),
                                                             np.zeros(8, np.int32)))
    for name, sim, k in (("acc", sim_acc, 1), ("hist", sim_hist, 2)):
        result = compare(name, sim, dev.buffers[k], EXACT)
        assert result.equal, result.describe()


@kernel
def float_min_max(x, acc):
    i = get_global_id(0)
    atomic_fetch_min(acc[0], x[i])
    atomic_fetch_max(acc[1], x[i])
    atomic_exchange(acc[2], atomic_load(acc[2]))


FLOAT_CL = r"""
__kernel void float_min_max(__global const float *x, volatile __global atomic_float *acc)
{
    size_t i = get_global_id(0);
    atomic_fetch_min(&acc[0], x[i]);
    atomic_fetch_max(&acc[1], x[i]);
    atomic_exchange(&acc[2], atomic_load(&acc[2]));
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_float_min_max_match_their_twin(device):
    """cl_ext_float_atomics min/max over finite floats agree exactly (order-independent)."""
    info = get_device(device)
    reason = missing_feature(info, "opencl_c_2.0")
    if reason or "cl_ext_float_atomics" not in info.extensions:
        pytest.skip(reason or f"{info.short_name} lacks cl_ext_float_atomics")
    x = np.random.default_rng(6).standard_normal(256).astype(np.float32)
    init = np.array([np.inf, -np.inf, 1.5], np.float32)
    sim = init.copy()
    clsim.run(float_min_max, (256,), (64,), (x, sim))
    assert sim[0] == x.min() and sim[1] == x.max()
    dev = run_cl(device, FLOAT_CL, "float_min_max", (256,), (64,), (x, init.copy()))
    result = compare("acc", sim, dev.buffers[1], EXACT)
    assert result.equal, result.describe()


@kernel
def float_cas(buf, expect, desired, result, current, x, acc):
    i = get_global_id(0)
    e = private_array(1, np.float32)
    if i < 4:
        e[0] = expect[i]
        ok = atomic_compare_exchange_strong(buf[i], e[0], desired[i])
        result[i] = 1 if ok else 0
        current[i] = e[0]
    e[0] = atomic_load(acc[0])
    while not atomic_compare_exchange_strong(acc[0], e[0], e[0] + x[i]):
        pass


FLOAT_CAS_CL = r"""
__kernel void float_cas(volatile __global atomic_float *buf, __global const float *expect,
                        __global const float *desired, __global int *result,
                        __global float *current, __global const float *x,
                        volatile __global atomic_float *acc)
{
    size_t i = get_global_id(0);
    float e;
    if (i < 4) {
        e = expect[i];
        bool ok = atomic_compare_exchange_strong(&buf[i], &e, desired[i]);
        result[i] = ok ? 1 : 0;
        current[i] = e;
    }
    e = atomic_load(&acc[0]);
    while (!atomic_compare_exchange_strong(&acc[0], &e, e + x[i]))
        ;
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_float_compare_exchange_matches_its_twin(device):
    """atomic_compare_exchange_strong on atomic_float compares bits on the device too (-0.0
    is not +0.0, a NaN matches itself), and a float CAS loop adds every value once."""
    reason = missing_feature(get_device(device), "opencl_c_2.0")
    if reason:
        pytest.skip(f"{reason}: atomic_float compare-exchange is OpenCL C 2.0")
    args = (np.array([0.0, np.nan, 1.5, -0.0], np.float32),
            np.array([-0.0, np.nan, 1.5, -0.0], np.float32),
            np.array([7.0, 8.0, 9.0, 10.0], np.float32), np.zeros(4, np.int32),
            np.zeros(4, np.float32), np.arange(1, 65, dtype=np.float32),
            np.zeros(1, np.float32))
    sim = [a.copy() for a in args]
    clsim.run(float_cas, (64,), (32,), sim)
    dev = run_cl(device, FLOAT_CAS_CL, "float_cas", (64,), (32,), [a.copy() for a in args])
    for k in (0, 3, 4, 6):
        assert sim[k].tobytes() == dev.buffers[k].tobytes(), k
