"""Device tests: discovery, the .cl twins on real OpenCL devices, and the verifier's errors.

Each kernel test runs once per device kind (``verify.testing.device_params``); an absent device
is a skip with a reason. Narrow with ``CLSIM_TEST_DEVICES=pocl,intel-cpu``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from clsim.errors import DeviceError, DeviceLacksFeature, DeviceUnavailable, InvalidArgumentError
from verify.clrun import LocalMem, run_cl
import verify.devices as devices_module
from verify.devices import (
    DeviceInfo,
    _wheel_entries,
    format_devices,
    get_device,
    icd_entries,
    import_pyopencl,
    list_devices,
)
from verify.platform_library import library_rank, platform_library
from verify.probe import health
from verify.testing import device_params

KERNELS_CL = Path(__file__).resolve().parents[2] / "kernels_cl"
BROKEN_SOURCE = "__kernel void broken(__global float* x) { x[0] = undeclared_thing; }\n"
SUBGROUP_SOURCE = """
#ifdef CLSIM_SUBGROUP_SIZE
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void sg(__global int* out, __local int* scratch)
{
    scratch[get_local_id(0)] = get_sub_group_size();
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = scratch[get_local_id(0)];
}
"""


def _source(name: str) -> str:
    return (KERNELS_CL / name).read_text()


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ULPs between float32 arrays, over the ordered integer line (sign changes included)."""
    def ordered(x: np.ndarray) -> np.ndarray:
        bits = x.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(a) - ordered(b))


# --- discovery --------------------------------------------------------------------------------


def test_discovery_finds_pocl():
    """pocl (a hard dependency) is always discovered, once, with its known capabilities."""
    names = [d.short_name for d in list_devices()]
    assert names.count("pocl") == 1
    pocl = get_device("pocl")
    assert pocl.platform == "Portable Computing Language"
    assert pocl.max_work_group_size >= 256 and pocl.local_mem_size >= 32 * 1024
    assert pocl.fp64 and not pocl.fp16 and not pocl.has_subgroups and pocl.subgroup_sizes == ()


def test_short_names_unique_and_stable():
    """Short names are unique and the same on a fresh discovery; the default device is the
    first one (pocl, intel-cpu, oclgrind, then others) that passes its health probe."""
    first = [d.short_name for d in list_devices()]
    again = [d.short_name for d in list_devices(refresh=True)]
    assert first == again and len(set(first)) == len(first)
    usable = [d.short_name for d in list_devices() if health(d).usable]
    assert get_device(None).short_name == usable[0]


def _fake_device(short: str, driver: str, platform: str, version: str, full: str) -> DeviceInfo:
    return DeviceInfo(short, full, platform, "vendor", "3.0", 2, 1024, (), False, False, True,
                      65536, frozenset(), platform_version=f"OpenCL 3.0 {version}  Linux",
                      driver_version=version, driver=driver)


@pytest.fixture
def two_pocls(monkeypatch):
    """The wheel's PoCL and Debian's beside it (and Oclgrind), whatever this machine has."""
    monkeypatch.setattr(devices_module, "_devices", [
        _fake_device("pocl", "pocl", "Portable Computing Language", "PoCL 3.0-rc2", "pthread"),
        _fake_device("pocl-1", "pocl", "Portable Computing Language", "PoCL 3.1+debian",
                     "pthread-haswell"),
        _fake_device("oclgrind", "oclgrind", "Oclgrind", "Oclgrind 21.10", "Oclgrind Simulator"),
    ])


def test_get_device_by_substring(two_pocls):
    """get_device accepts a case-insensitive substring of the full device name, the platform
    name or the platform version, when it matches one device."""
    assert get_device("OCLGRIND SIM").short_name == "oclgrind"
    assert get_device("3.1+debian").short_name == "pocl-1"
    assert get_device("haswell").short_name == "pocl-1"
    assert get_device("pocl-1").short_name == "pocl-1"  # a short name is exact, never a substring


def test_a_substring_of_two_devices_is_an_error_listing_both(two_pocls):
    with pytest.raises(DeviceError) as info:
        get_device("portable computing")
    assert info.value.matches == ("pocl", "pocl-1")
    assert "pocl (Portable Computing Language PoCL 3.0-rc2)" in str(info.value)
    assert "pocl-1 (Portable Computing Language PoCL 3.1+debian)" in str(info.value)


def test_every_device_of_this_machine_is_found_by_its_short_name():
    for info in list_devices():
        assert get_device(info.short_name) == info


def test_get_device_missing_lists_available():
    """An absent device raises DeviceUnavailable whose message lists every short name present."""
    with pytest.raises(DeviceUnavailable) as info:
        get_device("no-such-gpu")
    present = [d.short_name for d in list_devices()]
    assert info.value.available == tuple(present)
    for name in present:
        assert name in str(info.value)


def test_format_devices_table():
    """The devices table has a header and one row per device, starting with its short name
    and its health probe verdict."""
    devices = list_devices()
    lines = format_devices(devices).splitlines()
    assert lines[0].split()[:3] == ["name", "usable", "platform"]
    rows = lines[1:len(devices) + 1]
    assert [line.split()[0] for line in rows] == [d.short_name for d in devices]
    assert [line.split()[1] for line in rows] == [
        "yes" if health(d).usable else "NO" for d in devices]


def test_icd_folder_names_absolute_libraries():
    """The ICD setup points OCL_ICD_VENDORS at our folder, which holds every entry; the wheels'
    libraries are absolute paths that exist (the intel-opencl-rt .icd's placeholder path is
    replaced); a system .icd's library stays as its file wrote it (Debian's pocl names a bare
    libpocl.so.2.10.0, found by the dynamic linker)."""
    list_devices()
    folder = Path(os.environ["OCL_ICD_VENDORS"])
    libs = sorted(p.read_text().strip() for p in folder.glob("*.icd"))
    assert libs == sorted(lib for _, lib in icd_entries())
    assert any("pocl" in lib for lib in libs)
    for _, lib in _wheel_entries():
        assert os.path.isabs(lib) and os.path.exists(lib), lib
    assert not any("anaconda1anaconda2" in lib for lib in libs)


# --- the .cl twins ----------------------------------------------------------------------------


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("n", [1, 1000, 4096])
def test_vector_add_bit_exact(device, n):
    """vector_add.cl equals numpy's float32 a + b bit for bit (tail guarded), and the caller's
    arrays are left untouched."""
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    c = np.zeros(n, np.float32)
    run = run_cl(device, _source("vector_add.cl"), "vector_add", -(-n // 64) * 64, 64,
                 [a, b, c, np.int32(n)])
    assert run.device == device and run.buffers[3] is None
    np.testing.assert_array_equal(run.buffers[2].view(np.int32), (a + b).view(np.int32))
    assert not c.any()
    assert run.time_ns is None or run.time_ns >= 0


def _argmax_case(case: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    if case == "random":
        return rng.standard_normal(n, np.float32)
    if case == "ties":  # few distinct values: the maximum occurs many times, first must win
        return rng.integers(0, 4, n).astype(np.float32)
    if case == "nan":  # NaN beats every number; the first NaN wins
        x = rng.standard_normal(n, np.float32)
        x[[n // 3, n // 2]] = np.nan
        x[n - 1] = np.inf
        return x
    return np.full(n, -np.inf, np.float32)  # "all-inf": index 0, as numpy


@pytest.mark.parametrize("device", device_params(only=("pocl", "intel-cpu")))
@pytest.mark.parametrize("case", ["random", "ties", "nan", "all-inf"])
@pytest.mark.parametrize(("n", "wg"), [(5000, 256), (77, 100), (4096, 1024)])
def test_argmax_matches_numpy(device, case, n, wg):
    """argmax.cl returns numpy.argmax: first index on ties, first NaN when there is one, for
    power-of-two and other work-group sizes, also with fewer elements than work-items."""
    x = _argmax_case(case, n)
    run = run_cl(device, _source("argmax.cl"), "argmax", wg, wg,
                 [x, np.full(1, -1, np.int32), np.int32(n)])
    assert int(run.buffers[1][0]) == int(np.argmax(x))


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("scale", [1.0, 4.0])
@pytest.mark.parametrize(("rows", "cols", "wg"), [(16, 300, 64), (4, 1024, 256), (3, 37, 16)])
def test_softmax_within_16_ulp(device, scale, rows, cols, wg):
    """softmax.cl is within 16 ulp of a float64 numpy softmax, keeps the 2-D shape, and sums
    each row to 1. For x*4 inputs (the spec's) the reference rounds x - max to float32 as the
    kernel does: that one rounding alone costs up to ~16 ulp once |x - max| nears 32."""
    rng = np.random.default_rng(rows * cols)
    x = (rng.standard_normal((rows, cols), np.float32) * np.float32(scale)).astype(np.float32)
    run = run_cl(device, _source("softmax.cl"), "softmax", rows * wg, wg,
                 [x, np.zeros_like(x), np.int32(cols)])
    y = run.buffers[1]
    assert y.shape == x.shape
    shifted = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    if scale != 1.0:
        shifted = (x - x.max(axis=1, keepdims=True)).astype(np.float64)
    e = np.exp(shifted)
    expected = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    assert _ulp_distance(y, expected).max() <= 16
    np.testing.assert_allclose(y.sum(axis=1, dtype=np.float64), 1.0, rtol=1e-5)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", device_params())
def test_broken_source_raises_device_error(device):
    """A build failure raises DeviceError naming CL_BUILD_PROGRAM_FAILURE, with the build log,
    the options, and the path of a saved copy of the source in the message."""
    with pytest.raises(DeviceError) as info:
        run_cl(device, BROKEN_SOURCE, "broken", 1, 1, [np.zeros(1, np.float32)],
               options=["-DCLSIM_MARKER=1"])
    err = info.value
    message = str(err)
    assert "CL_BUILD_PROGRAM_FAILURE" in message and err.status == "CL_BUILD_PROGRAM_FAILURE"
    assert "undeclared_thing" in message and "undeclared_thing" in err.build_log
    assert "-DCLSIM_MARKER=1" in message and err.source_path in message
    assert Path(err.source_path).read_text() == BROKEN_SOURCE


@pytest.mark.parametrize(("feature", "reason"), [
    ("subgroups", "pocl lacks sub-groups"),
    ("fp16", "pocl lacks cl_khr_fp16"),
    ("subgroup_size:16", "pocl lacks cl_intel_required_subgroup_size"),
    ("work_group_size:100000", "pocl lacks work-group size 100000"),
])
def test_missing_feature_raises_before_build(feature, reason):
    """A required feature the device lacks raises DeviceLacksFeature with a reason, before the
    source is built (this source would not even compile)."""
    with pytest.raises(DeviceLacksFeature) as info:
        run_cl("pocl", BROKEN_SOURCE, "broken", 1, 1, [], required_features=[feature])
    assert info.value.reason.startswith(reason)
    assert info.value.feature == feature and info.value.reason in str(info.value)


@pytest.mark.parametrize("device", device_params())
def test_launch_error_names_status(device):
    """A launch the device refuses raises DeviceError with the CL status name."""
    source = ("__kernel __attribute__((reqd_work_group_size(64, 1, 1))) "
              "void fixed(__global float* x) { x[get_global_id(0)] = 1.0f; }")
    with pytest.raises(DeviceError, match="CL_INVALID_WORK_GROUP_SIZE"):
        run_cl(device, source, "fixed", 32, 32, [np.zeros(32, np.float32)])


@pytest.mark.parametrize("device", device_params(only=("pocl",)))
def test_python_scalar_rejected(device):
    """A plain Python int argument is refused: scalars must carry a numpy dtype."""
    with pytest.raises(InvalidArgumentError, match="argument 3 is a int"):
        run_cl(device, _source("vector_add.cl"), "vector_add", 64, 64,
               [np.zeros(64, np.float32)] * 3 + [64])


@pytest.mark.parametrize("device", device_params(requires=("subgroups", "subgroup_size:8")))
def test_subgroup_size_reported_and_forced(device):
    """On a device with sub-groups, ClRun.subgroup_size is the kernel's size for the launch, and
    subgroup_size=8 forces it through CLSIM_SUBGROUP_SIZE (intel_reqd_sub_group_size)."""
    args = [np.zeros(64, np.int32), LocalMem(64 * 4)]
    default = run_cl(device, SUBGROUP_SOURCE, "sg", 64, 64, args, required_features=["subgroups"])
    assert default.subgroup_size in get_device(device).subgroup_sizes
    assert (default.buffers[0] == default.subgroup_size).all()
    forced = run_cl(device, SUBGROUP_SOURCE, "sg", 64, 64, args, subgroup_size=8)
    assert forced.subgroup_size == 8 and (forced.buffers[0] == 8).all()


def test_device_params_skips_have_reasons(monkeypatch):
    """device_params never drops a device silently: an absent device or a missing feature is a
    skip mark with a reason; CLSIM_TEST_DEVICES narrows the set in its own order."""
    monkeypatch.setenv("CLSIM_TEST_DEVICES", "pocl,no-such-gpu")
    params = device_params()
    assert [p.id for p in params] == ["pocl", "no-such-gpu"]
    assert "device no-such-gpu not present" in params[1].marks[0].kwargs["reason"]
    fp16 = device_params(requires=("fp16",))
    verdict = health(get_device("pocl"))
    if not verdict.usable:  # e.g. the wheel's PoCL on AMD family 26: the probe's reason wins
        unusable = f"device pocl is unusable: {verdict.reason}"
        assert params[0].marks[0].kwargs["reason"] == unusable
        assert fp16[0].marks[0].kwargs["reason"] == unusable
    else:
        assert not params[0].marks
        assert fp16[0].marks[0].kwargs["reason"] == "pocl lacks cl_khr_fp16"
    none = device_params(only=("intel-cpu",))
    assert none[0].marks[0].kwargs["reason"].startswith("no selected device")


def test_each_platform_names_its_icd_library():
    """dladdr on a platform's dispatch table finds the driver's library file, which ranks at
    its own entry of the ICD setup (the names' order comes from there)."""
    cl = import_pyopencl()
    entries = icd_entries()
    for platform in cl.get_platforms():
        library = platform_library(platform)
        assert os.path.exists(library), (platform.name, library)
        assert library_rank(library, entries) < len(entries), (library, entries)


def test_library_rank_follows_the_entries(tmp_path):
    """The wheels' entries come first; a bare system library name (Debian's libpocl) matches
    the loaded file by its name; a symlinked path matches its target; unknown ranks last."""
    wheel = tmp_path / "libpocl-21062cec.so"
    wheel.write_bytes(b"")
    (tmp_path / "link.so").symlink_to(wheel)
    entries = [("pocl", str(tmp_path / "link.so")), ("pocl", "libpocl.so.2.10.0")]
    assert library_rank(str(wheel), entries) == 0
    assert library_rank("/lib/x86_64-linux-gnu/libpocl.so.2.10.0", entries) == 1
    assert library_rank("/elsewhere/libother.so", entries) == 2
    assert library_rank("", entries) == 2
