"""Launch rules: arguments checked against the .cl signature, one host array = one cl_mem,
-cl-std matching partial work-groups, the magnitude policy, and the checks="all" diagnosis.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import strategies as st

import clsim
import verify
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, local_array
from clsim.errors import DeviceLacksFeature, InvalidArgumentError
from clsim.spec import Launch
from verify.clrun import run_cl
from verify.devices import get_device
from verify.pairs import make_case, make_pair
from verify.policy import compare, magnitude, parse_policy, ulp_distance
from verify.probe import health
from verify.runner import diagnose
from verify.testing import device_params

ALIAS_CL = """
__kernel void alias(__global float* a, __global float* b)
{
    int i = get_global_id(0);
    a[i] = a[i] * 2.0f;
    b[i] = b[i] + 1.0f;
}
"""
REINTERPRET_CL = """
__kernel void reinterpret(__global uchar* src0, __global float* dst, __global float* src2)
{
    int i = get_global_id(0);
    src2[i] = src2[i] + 1.0f;
    dst[i] = (float)src0[4 * i + 3];
}
"""
LOCAL_SIZE_CL = """
__kernel void local_size(__global int* out, int n)
{
    int i = get_global_id(0);
    if (i < n) out[i] = (int)get_local_size(0);
}
"""


@clsim.kernel
def alias(a, b):
    i = get_global_id(0)
    a[i] = a[i] * np.float32(2.0)
    b[i] = b[i] + np.float32(1.0)


@clsim.kernel
def reinterpret(src0, dst, src2):
    i = get_global_id(0)
    src2[i] = src2[i] + np.float32(1.0)
    dst[i] = np.float32(src0[4 * i + 3])  # the top byte of the float just written


@clsim.kernel
def local_size(out, n):
    i = get_global_id(0)
    if i < n:
        out[i] = clsim.get_local_size(0)


@clsim.kernel
def shift_without_barrier(x, out):
    lid = get_local_id(0)
    scratch = local_array(16, np.float32)
    scratch[lid] = x[get_global_id(0)]
    out[get_global_id(0)] = scratch[(lid + 1) % 16]


@clsim.kernel
def shift_with_barrier(x, out):
    lid = get_local_id(0)
    scratch = local_array(16, np.float32)
    scratch[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = scratch[(lid + 1) % 16]


# --- argument checks ------------------------------------------------------------------------


@pytest.mark.parametrize("device", device_params())
def test_float64_buffer_to_float_pointer_names_the_parameter(device):
    """A float64 array sent to a 'float*' is an InvalidArgumentError naming the .cl parameter
    and both types, raised before the launch (not a DIFFER, not INVALID_ARG_SIZE)."""
    x = np.arange(8, dtype=np.float64)
    with pytest.raises(InvalidArgumentError) as info:
        verify.compare(alias, ALIAS_CL, global_size=8, local_size=8,
                       args=[x, np.zeros(8, np.float32)], device=device)
    err = info.value
    assert err.parameter == "a" and err.index == 0 and err.c_type == "float*"
    assert "holds float64 but the .cl kernel reads float" in str(err)


@pytest.mark.parametrize("device", device_params())
def test_signature_arity_and_scalar_types(device):
    """Too few arguments, or an int64 scalar for an 'int' parameter, name the .cl signature."""
    out = np.zeros(8, np.int32)
    with pytest.raises(InvalidArgumentError, match=r"takes 2 arguments \(int\* out, int n\)"):
        run_cl(device, LOCAL_SIZE_CL, "local_size", 8, 8, [out])
    with pytest.raises(InvalidArgumentError, match=r"argument 1 'n' \(int\) holds int64 "
                       r"but the \.cl kernel reads int"):
        run_cl(device, LOCAL_SIZE_CL, "local_size", 8, 8, [out, np.int64(8)])


# --- aliasing -------------------------------------------------------------------------------


@pytest.mark.parametrize("device", device_params())
def test_one_array_passed_twice_is_one_buffer(device):
    """The same array as 'a' and 'b' is one cl_mem on the device (and one array in the
    simulator): both see a*2 then +1; two distinct arrays do not. Overlapping views at
    different offsets are refused, naming both arguments."""
    x = np.arange(16, dtype=np.float32)
    result = verify.compare(alias, ALIAS_CL, global_size=16, local_size=16, args=[x, x],
                            device=device)
    assert result.equal
    assert np.array_equal(result.device_outputs["a"], x * 2 + 1)
    assert np.array_equal(result.device_outputs["b"], x * 2 + 1)
    assert np.array_equal(x, np.arange(16, dtype=np.float32))  # the caller's array untouched
    pair = make_pair(alias, ALIAS_CL)
    # One work-item touches its element through both names: no race through the alias.
    assert diagnose(pair, make_case(pair, 16, 16, [x, x]), get_device(device)) == (
        'checks="all": no data race or uninitialised read on this case')
    apart = run_cl(device, ALIAS_CL, "alias", 16, 16, [x, x.copy()])
    assert np.array_equal(apart.buffers[0], x * 2) and np.array_equal(apart.buffers[1], x + 1)
    base = np.zeros(17, np.float32)
    with pytest.raises(InvalidArgumentError, match="argument 0 and argument 1 are overlapping"):
        run_cl(device, ALIAS_CL, "alias", 16, 16, [base[0:16], base[1:17]])
    with pytest.raises(InvalidArgumentError, match="alias: 'a' and 'b' are overlapping views"):
        verify.compare(alias, ALIAS_CL, global_size=16, local_size=16,
                       args=[base[0:16], base[1:17]], device=device)


@pytest.mark.parametrize("device", device_params())
def test_one_array_as_two_pointee_types_is_one_buffer(device):
    """Views of one array's bytes as other dtypes (ggml's rope binds src0's buffer, a char*,
    again as the float* src2) are one cl_mem: the float written through src2 is read back as
    bytes through src0 in the same work-item, on the device as in the simulator."""
    data = np.ones(16, np.float32)
    raw = data.view(np.uint8)
    result = verify.compare(reinterpret, REINTERPRET_CL, global_size=16, local_size=16,
                            args=[raw, np.zeros(16, np.float32), data], device=device)
    assert result.equal
    assert np.array_equal(result.device_outputs["dst"], np.full(16, 0x40))  # 2.0f is 0x40000000
    assert result.device_outputs["src2"].dtype == np.float32
    assert np.array_equal(result.device_outputs["src2"], np.full(16, 2.0))
    assert result.device_outputs["src0"].dtype == np.uint8
    assert np.array_equal(data, np.ones(16))  # the caller's array untouched
    with pytest.raises(InvalidArgumentError, match=r"x\.view\(np\.float32\) is the same memory"):
        run_cl(device, REINTERPRET_CL, "reinterpret", 16, 16, [raw, np.zeros(16, np.float32), raw])


# --- -cl-std for partial work-groups ---------------------------------------------------------


@pytest.mark.parametrize("device", device_params())
def test_partial_work_groups_build_opencl_c_2(device):
    """A launch whose global size is not a multiple of the local size is built with the
    -cl-std the probe found (partial last group agrees with the simulator), or is refused as
    DeviceLacksFeature with the reason on a device that has none (PoCL 3.0 here)."""
    out = np.zeros(100, np.int32)
    option = health(get_device(device)).cl2_option
    if option is None:
        with pytest.raises(DeviceLacksFeature, match="lacks non-uniform work-groups") as info:
            verify.compare(local_size, LOCAL_SIZE_CL, global_size=100, local_size=64,
                           args=[out, np.int32(100)], device=device)
        assert info.value.feature == "non_uniform_work_groups"
        return
    result = verify.compare(local_size, LOCAL_SIZE_CL, global_size=100, local_size=64,
                            args=[out, np.int32(100)], device=device)
    assert result.equal and option in result.options
    assert result.device_outputs["out"][0] == 64 and result.device_outputs["out"][99] == 36


# --- magnitude policy -----------------------------------------------------------------------


def _cancelling_dot(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal(n).astype(np.float32) * np.float32(1e4)
    y = np.ones(n, np.float32)
    x[-1] = -np.sum(x[:-1], dtype=np.float64)  # the exact sum is (nearly) zero
    return x, y


def test_magnitude_policy_on_a_cancelling_dot():
    """Two correct float32 summation orders of a cancelling dot product differ by thousands
    of ULP near zero; magnitude(k) with scale = sum|x*y| accepts them, and still rejects a
    wrong result that is off by more than k*eps*sum|terms|."""
    rng = np.random.default_rng(3)
    forward, backward, scales, wrong = [], [], [], []
    for _ in range(32):
        x, y = _cancelling_dot(rng, 256)
        terms = x * y
        forward.append(np.float32(sum(terms.tolist(), np.float32(0))))
        acc = np.float32(0)
        for t in terms[::-1]:
            acc = np.float32(acc + t)
        backward.append(acc)
        scales.append(float(np.sum(np.abs(terms), dtype=np.float64)))
        wrong.append(np.float32(acc + np.float32(scales[-1] * 1e-3)))
    forward, backward = np.array(forward), np.array(backward)
    assert int(ulp_distance(forward, backward).max()) > 1000
    assert not compare("dot", forward, backward, parse_policy("ulp(16)")).equal
    policy = magnitude(256, scale=lambda inputs: inputs["scale"])
    scale = np.array(scales)
    assert compare("dot", forward, backward, policy, scale).equal
    assert not compare("dot", forward, np.array(wrong), policy, scale).equal
    assert str(policy) == "magnitude(256)" and parse_policy("magnitude(256)").kind == "magnitude"
    with pytest.raises(ValueError, match="needs the sum of \\|terms\\| per element"):
        compare("dot", forward, backward, parse_policy("magnitude(256)"))


# --- checks="all" on a disagreement -----------------------------------------------------------


@pytest.mark.parametrize("device", device_params(only=("intel-cpu", "pocl")))
def test_diagnosis_names_a_race(device):
    """diagnose() reruns a case with checks="all": it reports the data race of a kernel that
    reads its neighbour's local slot without a barrier, and nothing for the fixed kernel."""
    info = get_device(device)
    x = np.arange(32, dtype=np.float32)
    for kernel, expect in ((shift_without_barrier, "found 1 data race(s)"),
                           (shift_with_barrier, "no data race or uninitialised read")):
        pair = make_pair(kernel, "__kernel void k() {}", kernel_name="k")
        case = make_case(pair, 32, 16, [x, np.zeros(32, np.float32)])
        assert expect in diagnose(pair, case, info)


WG_REDUCE_CL = """
__kernel void total(__global const int* x, __global int* out)
{
    int s = work_group_reduce_add(x[get_global_id(0)]);
    if (get_local_id(0) == 0) out[get_group_id(0)] = s;
}
"""


@pytest.mark.parametrize("device", device_params())
def test_opencl_c_2_builtins_get_the_matching_std(device):
    """A source calling a 2.0 work-group function (with no __OPENCL_C_VERSION__ test of its
    own) is built with the device's -cl-std for 2.0, or refused with the reason; a source that
    tests __OPENCL_C_VERSION__ keeps the default build."""
    x = np.arange(64, dtype=np.int32)
    verdict = health(get_device(device))
    option = verdict.cl2_option if verdict.cl2_builtins else None
    if option is None:
        with pytest.raises(DeviceLacksFeature, match=r"lacks OpenCL C 2\.0"):
            run_cl(device, WG_REDUCE_CL, "total", 64, 32, [x, np.zeros(2, np.int32)])
        return
    run = run_cl(device, WG_REDUCE_CL, "total", 64, 32, [x, np.zeros(2, np.int32)])
    assert option in run.options and run.buffers[1].tolist() == [x[:32].sum(), x[32:].sum()]
    guarded = "#if __OPENCL_C_VERSION__ >= 200\n#endif\n" + LOCAL_SIZE_CL
    plain = run_cl(device, guarded, "local_size", 8, 8, [np.zeros(8, np.int32), np.int32(8)])
    assert not any(o.startswith("-cl-std") for o in plain.options)


SHIFT_CL = """
__kernel void shift(__global const float* x, __global float* out)
{
    __local float scratch[16];
    int lid = get_local_id(0);
    scratch[lid] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = scratch[(lid + 1) % 16];
}
"""


@pytest.mark.parametrize("device", device_params(only=("intel-cpu", "pocl")))
def test_disagreement_from_a_missing_barrier_is_diagnosed(device, tmp_path):
    """When the device (with its barrier) and the simulator (whose kernel lacks it) differ,
    the finding and its saved meta say that checks="all" found the data race."""
    x = np.arange(1, 33, dtype=np.float32)
    launches = st.just(Launch((32,), (16,), (x, np.zeros(32, np.float32))))
    report = verify.fuzz(shift_without_barrier, SHIFT_CL, kernel_name="shift",
                         launches=launches, device=device, examples=3, failures_dir=tmp_path,
                         seed=1)
    found = report.found
    assert found is not None and found.comparison is not None
    assert "data race" in found.checks
    meta = json.loads((found.path / "meta.json").read_text())
    assert meta["extra"]["checks_all"] == found.checks


def test_aliased_arguments_stay_one_array_through_save_and_replay(tmp_path):
    """A saved case records which parameters were one array (inputs.npz holds each on its
    own), and replay passes that array twice again, so the device sees one cl_mem as before."""
    from verify.fuzz import save_case
    from verify.replay import load_failure_case

    x = np.arange(16, dtype=np.float32)
    pair = make_pair(alias, ALIAS_CL)
    case = make_case(pair, 16, 16, [x, x])
    path = save_case(pair, case, "pocl", comparison=None, error="planted", seed_value=1,
                     failures_dir=tmp_path, stage="found")
    _failure, _pair, loaded = load_failure_case(path, kernel=f"{__file__}::alias")
    assert loaded.args["b"] is loaded.args["a"]
    assert np.array_equal(loaded.args["a"], x)
    apart = make_case(pair, 16, 16, [x, x.copy()])
    path = save_case(pair, apart, "pocl", comparison=None, error="planted", seed_value=1,
                     failures_dir=tmp_path, stage="found")
    _failure, _pair, loaded = load_failure_case(path, kernel=f"{__file__}::alias")
    assert loaded.args["b"] is not loaded.args["a"]
