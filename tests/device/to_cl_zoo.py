"""Kernels using the constructs the library's kernels do not (swaps, fills, component
stores, 2-D local arrays, pointer locals, views, record copies, elif chains, negative
steps, hex literals...): tests/device/test_to_cl_round_trip.py prints each with to_cl and
compares it with the simulator on a device."""

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    atomic_add,
    atomic_fetch_add_explicit,
    atomic_fetch_max_explicit,
    atomic_inc,
    atomic_max,
    barrier,
    float4,
    get_global_id,
    get_local_id,
    local_array,
    memory_order_relaxed,
    memory_scope_device,
    private_array,
    view,
)

REC = np.dtype([("d", np.float32), ("q", np.uint8, (4,))])
SHIFT = 3


@clsim.func
def clamp_add(a, b):
    s = a + b
    if s > 100:
        return 100
    elif s < -100:
        return -100
    return s


@clsim.kernel
def scalars(x, y, n):
    i = get_global_id(0)
    if i >= n:
        return
    a = x[i]
    b = x[(i + 1) % n]
    a, b = b, a
    acc = private_array(4, np.int32, fill=(1, 2))
    for k in range(3, -1, -1):
        acc[k] += a * k - b
    t = acc[0] if a > b else acc[3]
    u = 0x80000000
    v = (np.uint32(a) * u) >> SHIFT
    w = clamp_add(a // 3, -b % 5) if not (0 < a < 10 or b == 2) else a ^ b
    while w > 50:
        w -= 7
        if w == 60:
            break
    y[i] = t + np.int32(v & 0xFFFF) + w + (a << (b & 7))
    mixed = np.uint32(a) > b  # C converts b to uint: -1 is the largest
    wide = np.int64(a) * 3000000000 // np.int64(b | 1)
    flag = a > b
    small = np.int8(a * 5)
    y[i] += mixed + np.int32(wide % 1000) + flag + small + max(a, 3) + min(abs(b), 7)


@clsim.kernel
def vectors_and_memory(x, rec, y, n):
    i = get_global_id(0)
    lid = get_local_id(0)
    tile = local_array((4, 8), np.float32)
    tile[lid % 4, lid // 4] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)
    v = float4(x[i], 1.0, 2.0, 3.0)
    v.y = tile[(lid + 1) % 4, (lid + 3) % 8]
    v.zw = v.xy * 0.5
    p = x + (i - lid)
    quads = view(x, float4, 0)
    r = rec[i % n]
    s = v.x + v.y * v.z - v.w + p[lid] + quads[i // 4].x + r.d + np.float32(r.q[i % 4])
    s += abs(x[i]) + np.float32(np.float64(x[i]) * np.float64(0.1))
    y[i] = s


@clsim.kernel
def atomics(x, counts, n):
    i = get_global_id(0)
    if i < n:
        atomic_add(counts[0], x[i])
        atomic_max(counts, 1, x[i])
        atomic_inc(counts[2 + (x[i] & 1)])


@clsim.kernel
def atomics_c11(x, counts, n):
    i = get_global_id(0)
    if i < n:
        atomic_fetch_add_explicit(counts[0], x[i], memory_order_relaxed, memory_scope_device)
        atomic_fetch_max_explicit(counts[1], x[i], memory_order_relaxed, memory_scope_device)


INFO = np.dtype([("qd", np.float32), ("q_sum", np.int32), ("tag", np.uint8, (2,))])


@clsim.func
def quantised_info(x, i):
    qd = x[i] / np.float32(127.0)
    info = clsim.struct_value(INFO, qd, q_sum=np.int32(i) * 3)
    info.tag[1] = 5
    return info


@clsim.func
def first_field_only(x, i):
    return clsim.struct_value(INFO, x[i] * np.float32(2.0))


@clsim.kernel
def struct_values(x, y, counts):
    i = get_global_id(0)
    info = quantised_info(x, i)
    z = first_field_only(x, i)
    y[i] = info.qd + z.qd
    counts[i] = info.q_sum + z.q_sum + np.int32(info.tag[1]) + np.int32(z.tag[0])
