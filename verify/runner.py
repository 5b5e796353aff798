"""Run one launch on the simulator and on an OpenCL device, and compare the outputs.

A ``Pair`` is a Python kernel and its OpenCL C twin, with the policies their outputs must agree
under; ``spec_pair`` makes one from a ``KernelSpec``, ``make_pair`` from a user's kernel and
source. A ``Case`` is one launch: every kernel argument by parameter name, plus the sizes.
``run_pair`` gives the simulator and the device separate copies of every buffer, runs both and
returns a ``LaunchComparison``; ``compare`` is the one-call form for users.

Agreement rules applied here (see docs/verifying.md):

- the ``.cl`` source gets ``#pragma OPENCL FP_CONTRACT OFF`` on top (and ``#line 1``, so build
  logs keep their line numbers) unless it states an ``FP_CONTRACT`` pragma itself, and
  ``verify.clrun`` adds ``-cl-fp32-correctly-rounded-divide-sqrt`` where the device has it;
- both sides use one sub-group size: the pair's own (forced on the device through
  ``intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)``), else, when the ``.cl`` source uses
  sub-group builtins, the size the device picked for the launch;
- a launch without a local size gets the simulator's choice on both sides.

This module draws nothing (``verify.strategies``), searches nothing (``verify.fuzz``) and saves
nothing (``verify.failures``).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import clsim
from clsim.api import KernelFunction
from clsim.errors import InvalidArgumentError
from clsim.runtime.ndrange import make_ndrange
from clsim.spec import EXACT, KernelSpec, Launch, Policy
from verify.clrun import LocalMem, missing_feature, run_cl
from verify.devices import DeviceInfo, get_device
from verify.policy import Difference, OutputsComparison, compare_outputs, parse_policy

_SUBGROUP_USE = re.compile(
    r"\b(?:(?:get_(?:max_|num_|enqueued_num_)?sub_group_\w+)|(?:sub_group_\w+)|"
    r"(?:intel_sub_group_\w+)|(?:intel_reqd_sub_group_size))\b")
_CONTRACT_PRAGMA = re.compile(r"#\s*pragma\s+OPENCL\s+FP_CONTRACT\b")
CONTRACT_OFF = "#pragma OPENCL FP_CONTRACT OFF\n#line 1\n"

# Launches up to this many work-items plus buffer elements run on the simulator as plain Python
# (no Numba compile per local size: the fuzzer draws many small launches); larger ones JIT.
PYTHON_LIMIT = 1 << 17
_MEMO_SIZE = 32


@dataclass(frozen=True)
class Pair:
    """A Python kernel and its OpenCL C twin, with the policies their outputs must agree under.

    ``policies`` names the output buffers (by kernel parameter name); None means every array
    argument, under ``default_policy``. ``origin`` tells ``clsim replay`` how to find the Python
    kernel again (``{"kind": "spec", "name": ...}``, ``{"kind": "file", ...}``,
    ``{"kind": "kernel", ...}``).
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

    @property
    def uses_subgroups(self) -> bool:
        """Whether the ``.cl`` source calls sub-group builtins (then sizes must match)."""
        return uses_subgroups(self.source)

    def policy_map(self, args: Mapping[str, Any]) -> dict[str, Policy]:
        """Output buffer -> policy for one launch's arguments."""
        if self.policies is not None:
            return dict(self.policies)
        return {name: self.default_policy for name, value in args.items()
                if isinstance(value, np.ndarray) and value.ndim > 0}

    def features(self, local_size: Sequence[int] | None = None) -> list[str]:
        """Device features this pair needs (for ``verify.clrun.missing_feature``)."""
        features = sorted(self.requires)
        if self.subgroup_size is not None:
            features.append(f"subgroup_size:{self.subgroup_size}")
        if local_size is not None:
            features.append(f"work_group_size:{math.prod(local_size)}")
        return features

    def skip_reason(self, device: DeviceInfo, local_size: Sequence[int] | None = None
                    ) -> str | None:
        """Why ``device`` cannot run this pair (e.g. "pocl lacks sub-groups ..."), or None."""
        for feature in self.features(local_size):
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

    def describe(self) -> str:
        parts = []
        if self.shape:
            parts.append("shape " + ", ".join(f"{k}={v}" for k, v in self.shape.items()))
        parts.append(f"global {self.global_size}, local {self.local_size}")
        return "; ".join(parts)


@dataclass(frozen=True)
class LaunchComparison:
    """One launch on the simulator and on ``device``, compared buffer by buffer.

    ``simulator`` and ``device_outputs`` hold every output buffer as each side left it;
    ``time_ns`` is the device's kernel time from profiling events; ``subgroup_size`` the size
    both sides ran with (None when the kernel uses no sub-groups).
    """

    device: str
    outputs: OutputsComparison
    simulator: Mapping[str, np.ndarray]
    device_outputs: Mapping[str, np.ndarray]
    time_ns: int | None = None
    subgroup_size: int | None = None
    options: tuple[str, ...] = ()
    local_size: tuple[int, ...] | None = None

    @property
    def equal(self) -> bool:
        return self.outputs.equal

    @property
    def first_difference(self) -> Difference | None:
        return self.outputs.first_difference

    @property
    def n_different(self) -> int:
        return self.outputs.n_different

    @property
    def max_ulp(self) -> dict[str, int]:
        """Largest ULP distance per float output buffer (0 when bit-identical)."""
        return {name: c.max_ulp for name, c in self.outputs.comparisons.items()
                if c.max_ulp is not None}

    def describe(self) -> str:
        head = f"simulator vs {self.device}: " + ("agree" if self.equal else "DIFFER")
        return head + "\n" + self.outputs.describe()


# ---------------------------------------------------------------------------------------------
# Pairs


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
    """(source text, path or None): a Path or an existing ``*.cl`` path string is read."""
    if isinstance(cl_source, Path) or (
            "\n" not in cl_source and cl_source.endswith(".cl") and Path(cl_source).is_file()):
        path = Path(cl_source).resolve()
        return path.read_text(), str(path)
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
    """The spec's ``.cl`` file: under kernels_cl/, else (user specs) beside ``base_dir``."""
    if spec.cl_path.is_file() or base_dir is None:
        return spec.cl_path
    return (base_dir / spec.cl_file).resolve()


def spec_pair(spec: KernelSpec, cl_source: str | Path | None = None,
              origin: Mapping[str, Any] | None = None, base_dir: Path | None = None) -> Pair:
    """The pair a spec describes; ``cl_source`` (text or path) replaces its ``.cl`` file."""
    source, path = read_source(cl_source if cl_source is not None
                               else spec_cl_path(spec, base_dir))
    return Pair(spec.name, spec.kernel, source, spec.cl_kernel_name, kernel_params(spec.kernel),
                dict(spec.outputs), EXACT, spec.subgroup_size, frozenset(spec.requires), (),
                path, dict(origin or {"kind": "spec", "name": spec.name}))


def spec_case(spec: KernelSpec, inputs: Mapping[str, Any], shape: Mapping[str, int],
              local_size: tuple[int, ...] | None = None, seed: int | None = None) -> Case:
    """The Case of ``spec``'s launch plan for these inputs (all buffers by parameter name)."""
    launch: Launch = spec.launch(inputs, shape, local_size)
    params = kernel_params(spec.kernel)
    if len(launch.args) != len(params):
        raise InvalidArgumentError(
            f"{spec.name}: launch plan gives {len(launch.args)} arguments, the kernel takes "
            f"{len(params)} ({', '.join(params)}).", kernel=spec.name)
    return Case(dict(zip(params, launch.args, strict=True)), tuple(launch.global_size),
                None if launch.local_size is None else tuple(launch.local_size),
                dict(shape), seed)


def default_case(spec: KernelSpec, shape: Mapping[str, int] | None = None, seed: int = 0) -> Case:
    """The spec's own inputs (its generator, seeded) at ``shape`` (default: its default)."""
    shape = dict(spec.default_shape if shape is None else shape)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    return spec_case(spec, inputs, shape, None, seed)


# ---------------------------------------------------------------------------------------------
# Running


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _digest(args: Sequence[Any]) -> str:
    h = hashlib.sha256()
    for value in args:
        arr = np.asarray(value)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


_memo: OrderedDict[tuple, list[Any]] = OrderedDict()


def simulate(kernel: KernelFunction, global_size: Sequence[int],
             local_size: Sequence[int] | None, args: Sequence[Any],
             subgroup_size: int | None = None, jit: bool | None = None) -> list[Any]:
    """Run the simulator on copies of ``args``; returns the arguments after the launch.

    ``jit=None`` runs small launches (up to PYTHON_LIMIT work-items plus elements) as plain
    Python and larger ones with Numba; both give identical results. Results are memoised on the
    argument bytes, so verifying one example on several devices simulates it once.
    """
    key = (id(kernel), tuple(global_size), None if local_size is None else tuple(local_size),
           subgroup_size, _digest(args))
    if key in _memo:
        _memo.move_to_end(key)
        return [_copy(v) for v in _memo[key]]
    copies = [_copy(v) for v in args]
    if jit is None:
        size = math.prod(global_size) + sum(
            v.size for v in copies if isinstance(v, np.ndarray))
        jit = False if size <= PYTHON_LIMIT else None
    clsim.run(kernel, tuple(global_size), local_size, copies, jit=jit,
              subgroup_size=subgroup_size)
    _memo[key] = copies
    while len(_memo) > _MEMO_SIZE:
        _memo.popitem(last=False)
    return [_copy(v) for v in copies]


def resolve_local(pair: Pair, case: Case, device: DeviceInfo) -> tuple[int, ...]:
    """The case's local size, or the one the simulator would pick (given to the device too,
    so both sides split the work the same way)."""
    if case.local_size is not None:
        return tuple(case.local_size)
    nd = make_ndrange(case.global_size, None, kernel=pair.kernel_name,
                      max_work_group_size=device.max_work_group_size)
    return tuple(nd.local_size[: nd.work_dim])


def _check_args(pair: Pair, case: Case) -> list[Any]:
    missing = [p for p in pair.params if p not in case.args]
    extra = [k for k in case.args if k not in pair.params]
    if missing or extra:
        raise InvalidArgumentError(
            f"{pair.name}: arguments do not match the kernel's parameters "
            f"({', '.join(pair.params)}): missing {missing}, unexpected {extra}.",
            kernel=pair.name)
    args = [case.args[p] for p in pair.params]
    for name, value in zip(pair.params, args, strict=True):
        if isinstance(value, LocalMem):
            raise InvalidArgumentError(
                f"{pair.name}: argument {name!r} is LocalMem; the simulator's kernels declare "
                "local memory with local_array(...) inside the kernel. Declare it there (and "
                "as a __local array in the .cl kernel).", kernel=pair.name, argument=name)
    return args


def run_pair(pair: Pair, case: Case, device: str | DeviceInfo = "pocl",
             jit: bool | None = None) -> LaunchComparison:
    """Run ``case`` on ``device`` and on the simulator (separate copies) and compare.

    Raises DeviceLacksFeature (a missing feature, before building), DeviceError (build or
    launch failures, with the build log) and the simulator's own SimulationErrors.
    """
    info = device if isinstance(device, DeviceInfo) else get_device(device)
    args = _check_args(pair, case)
    local = resolve_local(pair, case, info)
    run = run_cl(info, contract_off(pair.source), pair.kernel_name, case.global_size, local,
                 [_copy(v) for v in args], options=pair.options,
                 required_features=sorted(pair.requires), subgroup_size=pair.subgroup_size)
    size = pair.subgroup_size
    if size is None and pair.uses_subgroups:
        size = run.subgroup_size
    after = simulate(pair.kernel, case.global_size, local, args, size, jit)
    policies = pair.policy_map(case.args)
    index = {p: i for i, p in enumerate(pair.params)}
    expected = {name: after[index[name]] for name in policies}
    actual = {name: run.buffers[index[name]] for name in policies
              if run.buffers[index[name]] is not None}
    return LaunchComparison(info.short_name, compare_outputs(expected, actual, policies),
                            expected, actual, run.time_ns, size, run.options, local)


def time_on_device(pair: Pair, case: Case, device: str | DeviceInfo = "pocl",
                   repeats: int = 3) -> int | None:
    """The fastest of ``repeats`` kernel times (ns, profiling events) after one warm-up run;
    None when the device gives no profiling times."""
    info = device if isinstance(device, DeviceInfo) else get_device(device)
    args = _check_args(pair, case)
    local = resolve_local(pair, case, info)
    times = []
    for _ in range(repeats + 1):
        run = run_cl(info, contract_off(pair.source), pair.kernel_name, case.global_size, local,
                     args, options=pair.options, required_features=sorted(pair.requires),
                     subgroup_size=pair.subgroup_size)
        times.append(run.time_ns)
    measured = [t for t in times[1:] if t is not None]
    return min(measured) if measured else None


def compare(kernel: KernelFunction, cl_source: str | Path, *, kernel_name: str | None = None,
            global_size: int | Sequence[int], local_size: int | Sequence[int] | None = None,
            args: Sequence[Any] | Mapping[str, Any], device: str = "pocl",
            policy: Policy | str | Mapping[str, Policy | str] = "exact",
            outputs: Sequence[str] | Mapping[str, Policy | str] | None = None,
            subgroup_size: int | None = None, options: str | Sequence[str] = (),
            jit: bool | None = None) -> LaunchComparison:
    """Run one launch of ``kernel`` (simulator) and ``cl_source`` (``device``) and compare.

    ``args`` in parameter order (or by name): numpy arrays and numpy scalars, as for
    ``clsim.run``; neither side modifies them. ``policy``: "exact", "ulp(N)", a Policy, or a
    mapping buffer -> policy. ``outputs`` names the buffers to compare (default: every array
    argument, so a kernel writing an input is caught too). Returns a LaunchComparison
    (``.equal``, ``.first_difference`` with buffer, index, both values, hex and ULP distance).
    """
    pair = make_pair(kernel, cl_source, kernel_name=kernel_name, policy=policy, outputs=outputs,
                     subgroup_size=subgroup_size, options=options)
    case = make_case(pair, global_size, local_size, args)
    return run_pair(pair, case, device, jit)


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
