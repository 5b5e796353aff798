"""Find kernels again: user spec files (``path/to/file.py::NAME``) and saved failures.

``load_spec_ref`` imports a user's file and returns the spec it names; ``load_failure_case``
rebuilds the pair and the case of a folder written by ``verify.fuzz.save_case``; ``replay``
re-runs it on the simulator and on devices. The Python kernel is found by the origin recorded
with the failure (a library spec, a spec in a user file, or a kernel in an importable module
or a file); the ``.cl`` source is the current file when it still exists, else the copy saved
as ``kernel.cl`` (``saved_source=True`` always takes the copy).

This module draws nothing and saves nothing.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from clsim.api import KernelFunction
from clsim.errors import DeviceLacksFeature, SimulationError
from clsim.spec import KernelSpec, all_specs, get_spec
from verify.devices import DeviceInfo, get_device, list_devices
from verify.failures import Failure, load_failure
from verify.pairs import Case, Pair, kernel_params, read_source
from verify.pairs import spec_pair as _spec_pair
from verify.policy import parse_policy
from verify.runner import LaunchComparison, run_pair


@dataclass(frozen=True)
class ReplayOutcome:
    """One device's answer to a replayed case: a comparison, a skip reason or an error."""

    device: str
    comparison: LaunchComparison | None = None
    skipped: str | None = None
    error: str | None = None

    @property
    def equal(self) -> bool:
        return self.comparison is not None and self.comparison.equal


# ---------------------------------------------------------------------------------------------
# User files


def import_file(path: str | Path) -> ModuleType:
    """Import a Python file by path (once per path), its folder on sys.path while it runs."""
    file = Path(path).resolve()
    if not file.is_file():
        raise SimulationError(f"{path}: no such file. Give the path of a .py file defining a "
                              "KernelSpec (clsim verify path/to/file.py::NAME).")
    digest = hashlib.sha256(str(file).encode()).hexdigest()[:8]
    name = f"clsim_user_{file.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(file.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.path.remove(str(file.parent))
    return module


def _find_spec(module: ModuleType, name: str, path: str) -> KernelSpec:
    value = getattr(module, name, None)
    if isinstance(value, KernelSpec):
        return value
    found = [v for v in vars(module).values() if isinstance(v, KernelSpec) and v.name == name]
    if found:
        return found[0]
    registered = all_specs()
    if name in registered:
        return registered[name]
    defined = sorted({v.name for v in vars(module).values() if isinstance(v, KernelSpec)})
    raise SimulationError(
        f"{path}: defines no KernelSpec named {name!r} (specs there: "
        f"{', '.join(defined) or 'none'}). Name a KernelSpec variable or a spec's name.")


def load_spec_ref(ref: str) -> tuple[KernelSpec, dict[str, Any], Path | None]:
    """(spec, origin, folder for relative .cl paths) for ``NAME`` or ``path/file.py::NAME``."""
    if "::" not in ref:
        return get_spec(ref), {"kind": "spec", "name": ref}, None
    path, _, name = ref.rpartition("::")
    module = import_file(path)
    spec = _find_spec(module, name, path)
    file = Path(path).resolve()
    return spec, {"kind": "file", "path": str(file), "name": name}, file.parent


def spec_ref_pair(ref: str, cl_source: str | Path | None = None) -> tuple[KernelSpec, Pair]:
    """The spec and pair for ``clsim verify REF [--cl FILE]``."""
    spec, origin, base = load_spec_ref(ref)
    return spec, _spec_pair(spec, cl_source, origin, base)


# ---------------------------------------------------------------------------------------------
# Saved failures


def _kernel_from_origin(origin: dict[str, Any]) -> tuple[KernelFunction, KernelSpec | None]:
    kind = origin.get("kind")
    if kind == "spec":
        spec = get_spec(origin["name"])
        return spec.kernel, spec
    if kind == "file":
        spec = _find_spec(import_file(origin["path"]), origin["name"], origin["path"])
        return spec.kernel, spec
    if kind == "kernel":
        try:
            module = importlib.import_module(origin["module"])
        except ImportError:
            module = import_file(origin["path"])
        value = getattr(module, origin["attr"], None)
        if isinstance(value, KernelFunction):
            return value, None
        raise SimulationError(
            f"{origin['path']}: no kernel {origin['attr']!r} any more. Restore it, or compare "
            "by hand with verify.compare.")
    raise SimulationError(f"unknown kernel origin {origin!r} in the saved failure.")


def _source(failure: Failure, cl_source: str | Path | None, saved_source: bool
            ) -> tuple[str, str | None]:
    saved = failure.path / "kernel.cl"
    current = failure.launch.get("cl_path")
    if cl_source is not None:
        return read_source(cl_source)
    if not saved_source and current and Path(current).is_file():
        return read_source(Path(current))
    if saved.is_file():
        return saved.read_text(), str(saved)
    raise SimulationError(f"{failure.path}: neither {current} nor a saved kernel.cl exists. "
                          "Pass the .cl file with --cl.")


def load_failure_case(path: str | Path, cl_source: str | Path | None = None,
                      saved_source: bool = False) -> tuple[Failure, Pair, Case]:
    """The saved failure, the pair that produced it and its case, ready for ``run_pair``."""
    try:
        failure = load_failure(path)
    except (OSError, ValueError, KeyError) as err:
        raise SimulationError(f"{path}: cannot load a saved failure ({err}). Give a folder "
                              "under .clsim/failures/ (or its meta.json).") from err
    launch = failure.launch
    if "global_size" not in launch:
        raise SimulationError(f"{failure.path}: saved without a launch (not written by the "
                              "verifier); rerun it by hand with verify.compare.")
    kernel, spec = _kernel_from_origin(dict(launch.get("origin") or {
        "kind": "spec", "name": failure.spec_name}))
    source, cl_path = _source(failure, cl_source, saved_source)
    params = kernel_params(kernel)
    if tuple(launch.get("params", params)) != params:
        raise SimulationError(
            f"{failure.path}: the kernel's parameters changed from {launch.get('params')} to "
            f"{params}; the saved inputs no longer fit.")
    policies = None if launch.get("all_arrays") else {
        k: parse_policy(v) for k, v in (launch.get("policies") or {}).items()}
    pair = Pair(failure.spec_name, kernel, source, launch.get("kernel_name", kernel.name),
                params, policies, parse_policy(launch.get("default_policy", "exact")),
                launch.get("forced_subgroup_size"),
                frozenset(launch.get("requires", spec.requires if spec else ())),
                tuple(launch.get("options", ())), cl_path, launch.get("origin") or {})
    case = Case({p: failure.inputs[p] for p in params}, tuple(launch["global_size"]),
                None if launch.get("local_size") is None else tuple(launch["local_size"]),
                dict(launch.get("shape") or {}), launch.get("input_seed"))
    return failure, pair, case


def replay_devices(failure: Failure, names: Sequence[str] | None, all_devices: bool
                   ) -> list[DeviceInfo]:
    """The devices to replay on: named ones, every present one, or the one it failed on
    (every present one when that device is gone)."""
    if names:
        return [get_device(n) for n in names]
    present = list_devices()
    if not all_devices:
        same = [d for d in present if d.short_name == failure.device]
        if same:
            return same
    return present


def replay(path: str | Path, devices: Sequence[str] | None = None, *, all_devices: bool = False,
           cl_source: str | Path | None = None, saved_source: bool = False
           ) -> tuple[Failure, Case, list[ReplayOutcome]]:
    """Re-run a saved failure on the simulator and on each device."""
    failure, pair, case = load_failure_case(path, cl_source, saved_source)
    outcomes = []
    for info in replay_devices(failure, devices, all_devices):
        reason = pair.skip_reason(info, case.local_size)
        if reason is not None:
            outcomes.append(ReplayOutcome(info.short_name, skipped=reason))
            continue
        try:
            outcomes.append(ReplayOutcome(info.short_name, run_pair(pair, case, info)))
        except DeviceLacksFeature as err:
            outcomes.append(ReplayOutcome(info.short_name, skipped=str(err.reason)))
        except SimulationError as err:
            outcomes.append(ReplayOutcome(info.short_name, error=f"{type(err).__name__}: {err}"))
    return failure, case, outcomes
