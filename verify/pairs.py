"""Pairs and cases: what the verifier runs, before anything runs.

A ``Pair`` is a Python kernel and its OpenCL C twin, with the policies their outputs must agree
under; ``spec_pair`` makes one from a ``KernelSpec``, ``make_pair`` from a user's kernel and
source. A ``Case`` is one launch: every kernel argument by parameter name, plus the sizes
(``spec_case``, ``default_case``, ``make_case``). Also the source rules the runner applies:
``contract_off`` (``#pragma OPENCL FP_CONTRACT OFF`` on top unless the source states a
pragma) and ``uses_subgroups`` (whether sub-group sizes must match).

This module runs nothing (``verify.runner``) and draws nothing (``verify.fuzz``).
"""

from __future__ import annotations

import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clsim.api import KernelFunction
from clsim.cl_includes import resolve_includes
from clsim.errors import InvalidArgumentError, SimulationError
from clsim.runtime.images import Image
from clsim.spec import EXACT, KernelSpec, Launch, Policy
from verify.devices import DeviceInfo
from verify.features import launch_features, missing_feature
from verify.policy import parse_policy
from verify.probe import health

_SUBGROUP_USE = re.compile(
    r"\b(?:(?:get_(?:max_|num_|enqueued_num_)?sub_group_\w+)|(?:sub_group_\w+)|"
    r"(?:intel_sub_group_\w+)|(?:intel_reqd_sub_group_size))\b")
_CONTRACT_PRAGMA = re.compile(r"#\s*pragma\s+OPENCL\s+FP_CONTRACT\b")
CONTRACT_OFF = "#pragma OPENCL FP_CONTRACT OFF\n#line 1\n"


@dataclass(frozen=True)
class Pair:
    """A Python kernel and its OpenCL C twin, with the policies their outputs must agree under.

    ``policies`` names the output buffers (by kernel parameter name); None means every array
    argument, under ``default_policy``. ``origin`` tells ``clsim replay`` how to find the Python
    kernel again (``{"kind": "spec", "name": ...}``, ``{"kind": "file", ...}``,
    ``{"kind": "kernel", ...}``). ``reference`` (a spec's) is compared with the simulator on
    every case, within ``tolerance`` or the output's policy (``verify.reference``).
    """

    name: str
    kernel: KernelFunction
    source: str
    kernel_name: str
    params: tuple[str, ...]
    policies: Mapping[str, Policy] | None = None
    default_policy: Policy = EXACT
    subgroup_size: int | None = None
    requires: frozenset[str] = frozenset()
    options: tuple[str, ...] = ()
    cl_path: str | None = None
    origin: Mapping[str, Any] = field(default_factory=dict)
    # A spec's numpy reference and its (rtol, atol): the verifier's third side
    reference: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    tolerance: tuple[float, float] = (0.0, 0.0)
    generated: bool = False  # the source is clsim.to_cl's (a spec without a cl_file)

    @property
    def cl_origin(self) -> str:
        """Which OpenCL C this pair runs on devices, for messages."""
        if self.generated:
            return "OpenCL C printed by clsim.to_cl (the spec has no cl_file)"
        return self.cl_path or "the OpenCL C source given"

    @property
    def uses_subgroups(self) -> bool:
        """Whether the ``.cl`` source calls sub-group builtins (then sizes must match)."""
        return uses_subgroups(self.source)

    def policy_map(self, args: Mapping[str, Any]) -> dict[str, Policy]:
        """Output buffer -> policy for one launch's arguments."""
        if self.policies is not None:
            return dict(self.policies)
        return {name: self.default_policy for name, value in args.items()
                if isinstance(value, np.ndarray) and value.ndim > 0
                or isinstance(value, Image) and value.access == "write_only"}

    def features(self, local_size: Sequence[int] | None = None,
                 global_size: Sequence[int] | None = None) -> list[str]:
        """Device features this pair needs (for ``verify.clrun.missing_feature``), for a launch
        of these sizes when given (partial work-groups need OpenCL C 2.0)."""
        features = sorted(self.requires)
        features += launch_features(self.source, global_size or (), local_size if global_size
                                    else None)
        if self.subgroup_size is not None:
            features.append(f"subgroup_size:{self.subgroup_size}")
        if local_size is not None:
            features.append(f"work_group_size:{math.prod(local_size)}")
        return features

    def skip_reason(self, device: DeviceInfo, local_size: Sequence[int] | None = None,
                    global_size: Sequence[int] | None = None) -> str | None:
        """Why ``device`` cannot run this pair (e.g. "pocl lacks sub-groups ...", or "pocl is
        unusable: ..." when it failed its health probe), or None."""
        verdict = health(device)
        if not verdict.usable:
            return f"{device.short_name} is unusable: {verdict.reason}"
        for feature in self.features(local_size, global_size):
            reason = missing_feature(device, feature)
            if reason is not None:
                return reason
        return None


@dataclass(frozen=True)
class Case:
    """One launch: every kernel argument by parameter name (values before the launch), the
    ND-range, and for spec cases the problem shape and the input generator's seed."""

    args: Mapping[str, Any]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    shape: Mapping[str, int] | None = None
    seed: int | None = None
    # the float inputs were replaced by drawn edge values (infinities, cancelling huge terms):
    # the spec's reference tolerance is stated for its generator's inputs, so it is not
    # compared on such a case (device and simulator are)
    edge_values: bool = False
    # a spec case's make_inputs dict (it may hold more than the kernel's arguments, e.g. a
    # shape key the reference reads); None for user cases
    inputs: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        parts = []
        if self.shape:
            parts.append("shape " + ", ".join(f"{k}={v}" for k, v in self.shape.items()))
        parts.append(f"global {self.global_size}, local {self.local_size}")
        return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Construction


def uses_subgroups(source: str) -> bool:
    """True when OpenCL C ``source`` calls a sub-group builtin or requires a sub-group size."""
    return _SUBGROUP_USE.search(_strip_comments(source)) is not None


def _strip_comments(source: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)


def contract_off(source: str) -> str:
    """``source`` with ``#pragma OPENCL FP_CONTRACT OFF`` on top, unless it has a pragma."""
    if _CONTRACT_PRAGMA.search(_strip_comments(source)):
        return source
    return CONTRACT_OFF + source


def kernel_params(kernel: KernelFunction) -> tuple[str, ...]:
    """The Python kernel's parameter names, in order (the ``.cl`` kernel's order too)."""
    return tuple(inspect.signature(kernel.fn).parameters)


def read_source(cl_source: str | Path) -> tuple[str, str | None]:
    """(source text, path or None): a Path or an existing ``*.cl`` path string is read, its
    ``#include "file"`` lines resolved inside its folder (``clsim.cl_includes``)."""
    if isinstance(cl_source, Path) or (
            "\n" not in cl_source and cl_source.strip().endswith(".cl")):
        path = Path(cl_source).resolve()
        if not path.is_file():
            raise SimulationError(f"{path}: no such .cl file. Write the OpenCL C twin there or "
                                  "fix the path (a spec's cl_file is relative to the file that "
                                  "defines the spec; the library's are under kernels_cl/).")
        # The compiler never reads a file itself: includes are inlined here, or refused.
        return resolve_includes(path.read_text(), path.parent, path.name), str(path)
    return cl_source, None


def kernel_origin(kernel: KernelFunction) -> dict[str, Any]:
    """Where a user kernel lives, so ``clsim replay`` can import it again."""
    fn = kernel.fn
    module = inspect.getmodule(fn)
    attr = kernel.name
    if module is not None:
        for name, value in vars(module).items():
            if value is kernel:
                attr = name
                break
    try:
        path = str(Path(inspect.getsourcefile(fn) or "").resolve())
    except TypeError:
        path = ""
    return {"kind": "kernel", "module": fn.__module__, "path": path, "attr": attr}


def _policies(policy: Policy | str | Mapping[str, Policy | str],
              outputs: Sequence[str] | Mapping[str, Policy | str] | None,
              params: Sequence[str]) -> tuple[dict[str, Policy] | None, Policy]:
    default = EXACT if isinstance(policy, Mapping) else parse_policy(policy)
    if isinstance(outputs, Mapping):
        chosen = {k: parse_policy(v) for k, v in outputs.items()}
    elif isinstance(policy, Mapping):
        chosen = {k: parse_policy(v) for k, v in policy.items()}
    elif outputs is not None:
        chosen = {k: default for k in outputs}
    else:
        return None, default
    unknown = [k for k in chosen if k not in params]
    if unknown:
        raise InvalidArgumentError(
            f"outputs {unknown} are not parameters of the kernel ({', '.join(params)}). Name "
            "output buffers by their parameter names.", outputs=tuple(unknown))
    return chosen, default


def make_pair(kernel: KernelFunction, cl_source: str | Path, *, kernel_name: str | None = None,
              policy: Policy | str | Mapping[str, Policy | str] = "exact",
              outputs: Sequence[str] | Mapping[str, Policy | str] | None = None,
              subgroup_size: int | None = None, requires: Sequence[str] = (),
              options: str | Sequence[str] = ()) -> Pair:
    """A user's pair: ``cl_source`` is OpenCL C text or the path of a ``.cl`` file."""
    if not isinstance(kernel, KernelFunction) or not kernel.is_kernel:
        raise InvalidArgumentError(f"{kernel!r} is not a @clsim.kernel; pass the Python kernel.")
    source, path = read_source(cl_source)
    params = kernel_params(kernel)
    policies, default = _policies(policy, outputs, params)
    opts = tuple(options.split()) if isinstance(options, str) else tuple(options)
    return Pair(kernel.name, kernel, source, kernel_name or kernel.name, params, policies,
                default, subgroup_size, frozenset(requires), opts, path, kernel_origin(kernel))


def spec_cl_path(spec: KernelSpec, base_dir: Path | None = None) -> Path:
    """The spec's ``.cl`` file: under kernels_cl/ (library specs), else beside ``base_dir``
    (``file.py::NAME``: that file's folder), else beside the file that defines the spec (a
    module holding it, as ``fuzz_spec(SPEC)`` gets it), else beside the kernel's file."""
    if spec.cl_path.is_file():
        return spec.cl_path
    folders = [base_dir] if base_dir is not None else []
    folders += _defining_folders(spec)
    for folder in folders:
        if (folder / spec.cl_file).is_file():
            return (folder / spec.cl_file).resolve()
    return (folders[0] / spec.cl_file).resolve() if folders else spec.cl_path


def _defining_folders(spec: KernelSpec) -> list[Path]:
    """Folders of the modules that hold ``spec`` as a global, then of its kernel's file."""
    folders = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and any(value is spec for value in list(vars(module).values())):
            folders.append(Path(file).resolve().parent)
    try:
        folders.append(Path(inspect.getsourcefile(spec.kernel.fn)).resolve().parent)
    except (TypeError, AttributeError):  # a kernel made from source text has no file
        pass
    return list(dict.fromkeys(folders))


def spec_pair(spec: KernelSpec, cl_source: str | Path | None = None,
              origin: Mapping[str, Any] | None = None, base_dir: Path | None = None) -> Pair:
    """The pair a spec describes; ``cl_source`` (text or path) replaces its ``.cl`` file. A
    spec without a ``cl_file`` is paired with the OpenCL C ``clsim.to_cl`` prints."""
    generated = cl_source is None and not spec.cl_file
    if generated:
        from clsim.backends.opencl_c import to_cl

        source, path = to_cl(spec), None
    else:
        source, path = read_source(cl_source if cl_source is not None
                                   else spec_cl_path(spec, base_dir))
    return Pair(spec.name, spec.kernel, source, spec.cl_kernel_name, kernel_params(spec.kernel),
                dict(spec.outputs), EXACT, spec.subgroup_size, frozenset(spec.requires), (),
                path, dict(origin or {"kind": "spec", "name": spec.name}), spec.reference,
                tuple(spec.tolerance), generated)


def spec_case(spec: KernelSpec, inputs: Mapping[str, Any], shape: Mapping[str, int],
              local_size: tuple[int, ...] | None = None, seed: int | None = None,
              edge_values: bool = False) -> Case:
    """The Case of ``spec``'s launch plan for these inputs (all buffers by parameter name)."""
    launch: Launch = spec.launch(inputs, shape, local_size)
    params = kernel_params(spec.kernel)
    if len(launch.args) != len(params):
        raise InvalidArgumentError(
            f"{spec.name}: launch plan gives {len(launch.args)} arguments, the kernel takes "
            f"{len(params)} ({', '.join(params)}).", kernel=spec.name)
    return Case(dict(zip(params, launch.args, strict=True)), tuple(launch.global_size),
                None if launch.local_size is None else tuple(launch.local_size),
                dict(shape), seed, edge_values, dict(inputs))


def default_case(spec: KernelSpec, shape: Mapping[str, int] | None = None, seed: int = 0) -> Case:
    """The spec's own inputs (its generator, seeded) at ``shape`` (default: its default)."""
    shape = dict(spec.default_shape if shape is None else shape)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    return spec_case(spec, inputs, shape, None, seed)


def make_case(pair: Pair, global_size: int | Sequence[int],
              local_size: int | Sequence[int] | None,
              args: Sequence[Any] | Mapping[str, Any]) -> Case:
    """A Case from user-style arguments (sizes as int or tuple, args in order or by name)."""
    def sizes(value: int | Sequence[int]) -> tuple[int, ...]:
        return (int(value),) if isinstance(value, int | np.integer) else tuple(map(int, value))

    if isinstance(args, Mapping):
        by_name = dict(args)
    else:
        if len(args) != len(pair.params):
            raise InvalidArgumentError(
                f"{pair.name} takes {len(pair.params)} arguments ({', '.join(pair.params)}) "
                f"but got {len(args)}.", kernel=pair.name)
        by_name = dict(zip(pair.params, args, strict=True))
    return Case(by_name, sizes(global_size), None if local_size is None else sizes(local_size))
