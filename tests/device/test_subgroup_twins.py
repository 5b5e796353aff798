"""The simulator's sub-group builtins and sub-group kernels against a real device.

On every device with sub-groups (the Intel CPU runtime here), for sub-group sizes 8, 16 and 32
forced with ``intel_reqd_sub_group_size``: (1) one kernel calling most builtins on integer data
(so the free order of reductions cannot show) agrees bit for bit with its Python twin, including
work-groups that are not a multiple of the sub-group size; (2) softmax_subgroup, reduce_sum and
prefix_sum agree with their ``.cl`` twins under each spec's policy over several work-group sizes.
A device without sub-groups, or without a size, is a skip with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    get_global_id,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    sub_group_all,
    sub_group_any,
    sub_group_ballot,
    sub_group_ballot_bit_count,
    sub_group_ballot_inclusive_scan,
    sub_group_broadcast,
    sub_group_clustered_reduce_add,
    sub_group_reduce_add,
    sub_group_reduce_max,
    sub_group_reduce_min,
    sub_group_scan_exclusive_add,
    sub_group_scan_exclusive_min,
    sub_group_scan_inclusive_add,
    sub_group_scan_inclusive_max,
    sub_group_shuffle,
    sub_group_shuffle_down,
    sub_group_shuffle_up,
    sub_group_shuffle_xor,
)
from clsim.spec import get_spec
from verify.clrun import missing_feature, run_cl
from verify.devices import get_device
from verify.policy import compare
from verify.testing import device_params

SIZES = (8, 16, 32)
DEVICES = device_params(requires=("subgroups",))

BUILTINS_CL = r"""
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle_relative : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_clustered_reduce : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_ballot : enable
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
__kernel void builtins(__global const int* x, __global int* out)
{
    long i = get_global_id(0);
    long lane = get_sub_group_local_id();
    long width = get_sub_group_size();
    int v = x[i];
    __global int* o = out + i * 20;
    o[0] = get_sub_group_size();
    o[1] = get_sub_group_id();
    o[2] = get_num_sub_groups();
    o[3] = sub_group_reduce_add(v);
    o[4] = sub_group_reduce_min(v);
    o[5] = sub_group_reduce_max(v);
    o[6] = sub_group_scan_inclusive_add(v);
    o[7] = sub_group_scan_exclusive_add(v);
    o[8] = sub_group_scan_inclusive_max(v);
    o[9] = sub_group_scan_exclusive_min(v);
    o[10] = sub_group_broadcast(v, (uint)((get_sub_group_id() * 5 + 3) % width));
    o[11] = sub_group_any(v > 900);
    o[12] = sub_group_all(v > -900);
    o[13] = sub_group_shuffle(v, (uint)((lane * 3 + 1) % width));
    o[14] = sub_group_shuffle_xor(v, (uint)(((lane ^ 1) < width) ? 1 : 0));
    int up = sub_group_shuffle_up(v, 1u);
    o[15] = lane >= 1 ? up : v;
    int down = sub_group_shuffle_down(v, 2u);
    o[16] = lane + 2 < width ? down : v;
    o[17] = sub_group_clustered_reduce_add(v, 4);
    uint4 b = sub_group_ballot(v > 0);
    o[18] = sub_group_ballot_bit_count(b);
    o[19] = sub_group_ballot_inclusive_scan(b);
}
"""


@kernel
def builtins(x, out):
    i = get_global_id(0)
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    v = x[i]
    o = i * 20
    out[o + 0] = get_sub_group_size()
    out[o + 1] = get_sub_group_id()
    out[o + 2] = get_num_sub_groups()
    out[o + 3] = sub_group_reduce_add(v)
    out[o + 4] = sub_group_reduce_min(v)
    out[o + 5] = sub_group_reduce_max(v)
    out[o + 6] = sub_group_scan_inclusive_add(v)
    out[o + 7] = sub_group_scan_exclusive_add(v)
    out[o + 8] = sub_group_scan_inclusive_max(v)
    out[o + 9] = sub_group_scan_exclusive_min(v)
    out[o + 10] = sub_group_broadcast(v, (get_sub_group_id() * 5 + 3) % width)
    out[o + 11] = sub_group_any(v > 900)
    out[o + 12] = sub_group_all(v > -900)
    out[o + 13] = sub_group_shuffle(v, (lane * 3 + 1) % width)
    mask = 1
    if (lane ^ 1) >= width:
        mask = 0
    out[o + 14] = sub_group_shuffle_xor(v, mask)
    out[o + 15] = sub_group_shuffle_up(v, 1)
    out[o + 16] = sub_group_shuffle_down(v, 2)
    out[o + 17] = sub_group_clustered_reduce_add(v, 4)
    b = sub_group_ballot(v > 0)
    out[o + 18] = sub_group_ballot_bit_count(b)
    out[o + 19] = sub_group_ballot_inclusive_scan(b)


def _size_or_skip(device: str, size: int) -> None:
    reason = missing_feature(get_device(device), f"subgroup_size:{size}")
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("groups_of", [2, 2.5])
def test_builtins_match_the_device(device, size, groups_of):
    """Every sub-group builtin gives the device's values bit for bit (integer data, wrapping
    sums), with work-groups that are and are not a multiple of the sub-group size."""
    _size_or_skip(device, size)
    local = int(size * groups_of) + (3 if groups_of != int(groups_of) else 0)
    n = 3 * local
    x = np.random.default_rng(size + local).integers(-1000, 1000, n).astype(np.int32)
    x[::7] = np.int32(2**30)  # sums overflow
    dev = run_cl(device, BUILTINS_CL, "builtins", n, local,
                 [x, np.zeros(20 * n, np.int32)], subgroup_size=size)
    assert dev.subgroup_size == size
    sim = np.zeros(20 * n, np.int32)
    clsim.run(builtins, (n,), (local,), (x, sim), subgroup_size=size, jit=False)
    got, want = sim.reshape(n, 20), dev.buffers[1].reshape(n, 20)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"first differences (work-item, column): {bad[:5].tolist()}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["softmax_subgroup", "reduce_sum", "prefix_sum"])
def test_kernels_match_their_twins(device, size, name):
    """Each sub-group kernel agrees with its .cl twin under the spec's policy, for several
    work-group sizes (one not a multiple of the sub-group size) and shapes with tails."""
    _size_or_skip(device, size)
    spec = get_spec(name)
    shapes = {"softmax_subgroup": [{"rows": 37, "cols": 300}, {"rows": 1, "cols": 5}],
              "reduce_sum": [{"n": 5003, "groups": 7}, {"n": 1, "groups": 1}],
              "prefix_sum": [{"n": 3001}, {"n": 1}]}[name]
    source = spec.cl_path.read_text()
    for local in (size, 4 * size, 3 * size + 5):
        for shape in shapes:
            inputs = spec.make_inputs(np.random.default_rng(local), shape)
            extra = {"subgroup_size": size} if name == "softmax_subgroup" else {}
            launch = spec.launch(inputs, shape, (local,), **extra)
            args = [a.copy() if isinstance(a, np.ndarray) else a for a in launch.args]
            dev = run_cl(device, source, spec.cl_kernel_name, launch.global_size,
                         launch.local_size, args, subgroup_size=size)
            clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                      subgroup_size=size, jit=False)  # each local size would be a compile
            for out, policy in spec.outputs.items():
                index = next(k for k, a in enumerate(launch.args) if a is inputs[out])
                result = compare(out, inputs[out], dev.buffers[index], policy)
                assert result.equal, f"{name} local={local} shape={shape}: {result.describe()}"
