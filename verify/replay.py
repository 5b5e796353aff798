"""Find kernels again: user spec files (``path/to/file.py::NAME``) and saved failures.

``load_spec_ref`` imports a user's file and returns the spec it names; ``load_failure_case``
rebuilds the pair and the case of a folder written by ``verify.fuzz.save_case``; ``replay``
re-runs it on the simulator and on devices.

A failure folder is data someone may have sent you, so replay runs nothing it names. The
Python kernel is a library kernel found by its spec name, or the file the user names
(``kernel="path/file.py::NAME"``, ``clsim replay FOLDER --kernel ...``); a folder whose kernel
came from a user file or module says so and asks for ``--kernel``, it never imports it. The
OpenCL C source is the ``kernel.cl`` saved inside the folder, or the file the user names
(``cl_source``, ``--cl``); the ``cl_path`` recorded in ``meta.json`` is shown, never read.
``plan_replay`` tells what would be loaded before anything is (the CLI prints it first).

This module draws nothing and saves nothing.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import shlex
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from clsim.api import KernelFunction
from clsim.cl_includes import resolve_includes
from clsim.errors import DeviceLacksFeature, SimulationError
from clsim.spec import KernelSpec, all_specs, get_spec
from verify.clargs import view_as
from verify.devices import DeviceInfo, get_device, list_devices
from verify.failures import Failure, load_failure, saved_text
from verify.pairs import Case, Pair, kernel_params, read_source
from verify.pairs import spec_pair as _spec_pair
from verify.policy import parse_policy
from verify.replay_meta import check_meta
from verify.replay_meta import shown as _shown
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
    except SimulationError:
        del sys.modules[name]
        raise
    except Exception as exc:  # the user's file is bad input: one line naming it, not a crash
        del sys.modules[name]
        raise SimulationError(f"{path}{_user_line(exc, file)}: importing it raised "
                              f"{type(exc).__name__}: {exc}. Fix the file.") from exc
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.path.remove(str(file.parent))
    return module


def _user_line(exc: BaseException, file: Path) -> str:
    """':N', the last line of ``file`` in the traceback (the user's own line, not ours)."""
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if Path(frame.filename) == file]
    if isinstance(exc, SyntaxError) and exc.lineno:
        lines.append(exc.lineno)
    return f":{lines[-1]}" if lines else ""


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
    if spec.kernel is None:  # a spec of a .cl kernel alone: simulate its translation
        from clsim.frontends.opencl_c.specs import with_translated_kernel
        spec = with_translated_kernel(spec, file.parent)
    return spec, {"kind": "file", "path": str(file), "name": name}, file.parent


def spec_ref_pair(ref: str, cl_source: str | Path | None = None) -> tuple[KernelSpec, Pair]:
    """The spec and pair for ``clsim verify REF [--cl FILE]``."""
    spec, origin, base = load_spec_ref(ref)
    return spec, _spec_pair(spec, cl_source, origin, base)


# ---------------------------------------------------------------------------------------------
# Saved failures

SAVED_CL = "kernel.cl"
LIBRARY = "kernels_py"
# Build options a replay passes on: macros and -cl-* switches. Anything else (-I, -include...)
# could make the OpenCL compiler read files named by the folder.
_SAFE_OPTION = re.compile(r"-D[A-Za-z_]\w*(=[\w.+-]*)?|-cl-[a-z0-9-]+(=[\w.]+)?|-w|-Werror")
_FEATURE = re.compile(r"subgroups|fp16|fp64|(subgroup_size|work_group_size):\d{1,6}")


@dataclass(frozen=True)
class ReplayPlan:
    """What a replay would load, decided from the folder's data alone (nothing imported,
    nothing read outside the folder): ``python`` is a library spec name or a user ref
    (``path/file.py::NAME``) the caller gave; ``cl_source`` the file the caller gave, or None
    for the folder's saved ``kernel.cl``."""

    failure: Failure
    python: str
    python_from_user: bool
    cl_source: str | Path | None
    recorded_cl_path: str | None

    def describe(self) -> str:
        if self.python_from_user:
            py = f"{_shown(self.python)} (named with --kernel)"
        else:
            py = f"library kernel {_shown(self.python)!s}"
        if self.cl_source is not None:
            cl = f"{_shown(self.cl_source)} (named with --cl)"
        else:
            cl = f"{SAVED_CL} saved in the folder"
            if self.recorded_cl_path:
                cl += f" (it was {_shown(self.recorded_cl_path)}; --cl FILE to use a file)"
        return f"loading Python kernel: {py}; OpenCL C: {cl}"


def _load(path: str | Path) -> Failure:
    try:
        return load_failure(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise SimulationError(f"{path}: cannot load a saved failure ({_shown(err)}). The "
                              "folder is damaged; give a folder under .clsim/failures/ (or "
                              "its meta.json)") from err


def _origin(failure: Failure) -> dict[str, Any]:
    origin = failure.launch.get("origin") or {"kind": "spec", "name": failure.spec_name}
    if not isinstance(origin, Mapping):
        raise SimulationError(f"{failure.path}/meta.json: 'origin' is not a mapping. The "
                              "folder is damaged; pass the kernel with --kernel.")
    return dict(origin)


def _user_kernel_refusal(failure: Failure, origin: Mapping[str, Any]) -> SimulationError:
    path = _shown(origin.get("path") or origin.get("module") or "?")
    name = _shown(origin.get("name") or origin.get("attr") or failure.spec_name)
    return SimulationError(
        f"{failure.path}: the Python kernel came from your own code ({path}, "
        f"{_shown(origin.get('kind'))} {name!r}), not the library; replay never imports code "
        f"a failure folder names. If you trust that file, name it: --kernel "
        + shlex.quote(f"{path}::{name}"))


def plan_replay(path: str | Path, kernel: str | None = None,
                cl_source: str | Path | None = None) -> ReplayPlan:
    """What replaying ``path`` would load; raises SimulationError when the folder needs a
    kernel the user must name (``kernel``) or has no saved ``kernel.cl`` and no ``cl_source``."""
    failure = _load(path)
    check_meta(failure.path, failure.meta, failure.launch)
    origin = _origin(failure)
    recorded = failure.launch.get("cl_path")
    recorded = str(recorded) if recorded else None
    if kernel is None and origin.get("kind", "spec") != "spec":
        raise _user_kernel_refusal(failure, origin)
    if cl_source is None and _saved_cl(failure) is None:
        raise SimulationError(
            f"{failure.path}: no {SAVED_CL} saved in the folder. Pass the OpenCL C file with "
            f"--cl FILE" + (f" (it was {_shown(recorded)})." if recorded else "."))
    python = kernel if kernel is not None else str(origin.get("name", failure.spec_name))
    return ReplayPlan(failure, python, kernel is not None, cl_source, recorded)


def _saved_cl(failure: Failure) -> str | None:
    try:
        return saved_text(failure, SAVED_CL)
    except (OSError, UnicodeDecodeError) as err:
        raise SimulationError(f"{failure.path}: cannot read its {SAVED_CL} ({err}). Pass the "
                              "OpenCL C file with --cl FILE.") from err


def _library_spec(name: str, failure: Failure) -> KernelSpec:
    if name not in all_specs():
        try:
            importlib.import_module(LIBRARY)  # our own library, by a fixed name
        except ImportError:
            pass
    specs = all_specs()
    if name not in specs:
        raise SimulationError(
            f"{failure.path}: {_shown(name)!r} is not a library kernel (library: "
            f"{', '.join(specs) or 'none'}). Pass its Python kernel with --kernel "
            "path/file.py::NAME.")
    return specs[name]


def _user_kernel(ref: str, origin: Mapping[str, Any], failure: Failure
                 ) -> tuple[KernelFunction, KernelSpec | None]:
    """The kernel the user named: ``file.py::NAME``, ``file.py`` (NAME as saved) or a
    library spec name."""
    if "::" not in ref and not ref.endswith(".py"):
        spec = _library_spec(ref, failure)
        return spec.kernel, spec
    file, _, name = ref.rpartition("::") if "::" in ref else (ref, "", "")
    name = name or str(origin.get("name") or origin.get("attr") or failure.spec_name)
    module = import_file(file)
    value = getattr(module, name, None)
    if isinstance(value, KernelFunction) and value.is_kernel:
        return value, None
    spec = _find_spec(module, name, file)
    return spec.kernel, spec


def _sizes(value: Any, what: str, failure: Failure) -> tuple[int, ...]:
    if not isinstance(value, tuple | list) or not value or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
        raise SimulationError(f"{failure.path}/meta.json: {what} {_shown(value)} is not a "
                              "tuple of positive ints. The folder is damaged.")
    return tuple(value)


def _options(launch: Mapping[str, Any], failure: Failure) -> tuple[str, ...]:
    options = tuple(str(o) for o in launch.get("options", ()))
    for option in options:
        if not _SAFE_OPTION.fullmatch(option):
            raise SimulationError(
                f"{failure.path}/meta.json: build option {_shown(option)!r} is not replayed "
                "(only -D and -cl-* options are: others can read files). Rerun it by hand "
                "with verify.compare.")
    return options


def _requires(launch: Mapping[str, Any], spec: KernelSpec | None, failure: Failure
              ) -> frozenset[str]:
    features = frozenset(map(str, launch.get("requires", spec.requires if spec else ())))
    unknown = sorted(f for f in features if not _FEATURE.fullmatch(f))
    if unknown:
        raise SimulationError(f"{failure.path}/meta.json: unknown device features "
                              f"{_shown(unknown)}. The folder is damaged.")
    return features


def _policies(launch: Mapping[str, Any], failure: Failure) -> tuple[Any, Any]:
    try:
        policies = None if launch.get("all_arrays") else {
            str(k): parse_policy(v) for k, v in (launch.get("policies") or {}).items()}
        return policies, parse_policy(launch.get("default_policy", "exact"))
    except (ValueError, AttributeError) as err:
        raise SimulationError(f"{failure.path}/meta.json: {err}") from err


def _alias(first: np.ndarray, saved: np.ndarray, path) -> np.ndarray:
    """The array of an earlier parameter, seen as this parameter's saved dtype and shape (one
    buffer bound as two pointee types); a saved copy over other bytes is a damaged folder."""
    if not isinstance(saved, np.ndarray) or saved.nbytes != first.nbytes:
        raise SimulationError(f"{path}: meta.json's launch.aliases pairs inputs of different "
                              "sizes. The folder is damaged.")
    return view_as(first, saved.dtype, saved.shape)


def _pair_and_case(plan: ReplayPlan, kernel: KernelFunction, spec: KernelSpec | None,
                   source: str, cl_path: str | None) -> tuple[Pair, Case]:
    failure, launch = plan.failure, plan.failure.launch
    params = kernel_params(kernel)
    if tuple(launch.get("params", params)) != params:
        raise SimulationError(
            f"{failure.path}: the kernel's parameters changed from "
            f"{_shown(launch.get('params'))} to {params}; the saved inputs no longer fit.")
    missing = [p for p in params if p not in failure.inputs]
    if missing:
        raise SimulationError(f"{failure.path}: no saved input for {missing}. The folder is "
                              "damaged or belongs to another kernel.")
    policies, default = _policies(launch, failure)
    pair = Pair(failure.spec_name, kernel, source, str(launch.get("kernel_name", kernel.name)),
                params, policies, default, launch.get("forced_subgroup_size"),
                _requires(launch, spec, failure),
                _options(launch, failure), cl_path, _origin(failure))
    local = launch.get("local_size")
    args = {p: failure.inputs[p] for p in params}
    aliases = launch.get("aliases") or {}
    if not isinstance(aliases, dict) or any(
            a not in params or b not in params or aliases.get(b) is not None
            for a, b in aliases.items()):
        raise SimulationError(f"{failure.path}: meta.json's launch.aliases "
                              f"{_shown(aliases)} does not name the kernel's parameters.")
    for name, first in aliases.items():  # one array passed twice, as when it was found
        args[name] = _alias(args[first], failure.inputs[name], failure.path)
    case = Case(args,
                _sizes(launch.get("global_size"), "global_size", failure),
                None if local is None else _sizes(local, "local_size", failure),
                dict(launch.get("shape") or {}), launch.get("input_seed"))
    return pair, case


def load_plan(plan: ReplayPlan) -> tuple[Pair, Case]:
    """Load what ``plan`` names (this imports a user's --kernel file) and build the pair."""
    failure = plan.failure
    if "global_size" not in failure.launch:
        raise SimulationError(f"{failure.path}: saved without a launch (not written by the "
                              "verifier); rerun it by hand with verify.compare.")
    if plan.python_from_user:
        kernel, spec = _user_kernel(plan.python, _origin(failure), failure)
    else:
        spec = _library_spec(plan.python, failure)
        kernel = spec.kernel
    if plan.cl_source is not None:
        source, cl_path = read_source(plan.cl_source)
    else:
        source = resolve_includes(_saved_cl(failure) or "", failure.path, SAVED_CL)
        cl_path = str(failure.path / SAVED_CL)
    return _pair_and_case(plan, kernel, spec, source, cl_path)


def load_failure_case(path: str | Path, cl_source: str | Path | None = None,
                      kernel: str | None = None,
                      announce: Callable[[str], None] | None = None
                      ) -> tuple[Failure, Pair, Case]:
    """The saved failure, the pair that produced it and its case, ready for ``run_pair``.
    ``announce`` gets the plan's one-line description before anything is loaded."""
    plan = plan_replay(path, kernel, cl_source)
    if announce is not None:
        announce(plan.describe())
    pair, case = load_plan(plan)
    return plan.failure, pair, case


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
           cl_source: str | Path | None = None, kernel: str | None = None,
           announce: Callable[[str], None] | None = None
           ) -> tuple[Failure, Case, list[ReplayOutcome]]:
    """Re-run a saved failure on the simulator and on each device (see the module text for
    what is loaded; ``announce`` is told first)."""
    failure, pair, case = load_failure_case(path, cl_source, kernel, announce)
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
