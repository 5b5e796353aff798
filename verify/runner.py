"""Run one launch on the simulator and on an OpenCL device, and compare the outputs.

``run_pair`` gives the simulator and the device separate copies of every buffer of a ``Case``
(``verify.pairs``), runs both and returns a ``LaunchComparison``; ``compare`` is the one-call
form for users; ``time_on_device`` measures kernel time with profiling events.

Agreement rules applied here (see docs/verifying.md):

- the ``.cl`` source gets ``#pragma OPENCL FP_CONTRACT OFF`` on top (and ``#line 1``, so build
  logs keep their line numbers) unless it states an ``FP_CONTRACT`` pragma itself, and
  ``verify.clrun`` adds ``-cl-fp32-correctly-rounded-divide-sqrt`` where the device has it;
- both sides use one sub-group size: the pair's own (forced on the device through
  ``intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)``), else, when the ``.cl`` source uses
  sub-group builtins, the size the device picked for the launch;
- a launch without a local size gets the simulator's choice on both sides.

This module draws nothing (``verify.fuzz``) and saves nothing (``verify.failures``).
"""

from __future__ import annotations

import hashlib
import os
import time
from contextvars import ContextVar
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import clsim
from clsim.api import KernelFunction
from clsim.checks import Finding
from clsim.compiler import constants
from clsim.compiler.frontend import parse
from clsim.errors import InvalidArgumentError, SimulationError
from clsim.runtime.images import Image
from clsim.runtime.ndrange import make_ndrange
from clsim.spec import Policy
from verify import jit_choice
from verify.clargs import copy_args, memory_groups
from verify.clrun import ClRun, run_cl
from verify.devices import WORKING_POCL_HINT, DeviceInfo, get_device
from verify.errors import DeviceUnusable
from verify.orders import device_reduction_order, uses_work_group_sums
from verify.pairs import Case, Pair, contract_off, make_case, make_pair
from verify.policy import Difference, OutputsComparison, compare_outputs
from verify.probe import health
from verify.reference import ReferenceComparison, compare_reference
from verify.worker import run_isolated

PYTHON_LIMIT = jit_choice.PYTHON_LIMIT  # plain Python up to here, unless checked (jit_choice)
# Simulations kept for reuse (a drawn example verified on each device, a default shape): at
# most this many, and at most _MEMO_BYTES of buffers (a full default shape holds megabytes).
_MEMO_SIZE = 64
_MEMO_BYTES = 256 << 20
SLOW_NS = 10**9
# The simulator's checks while verifying: a race or an uninitialised read in both twins makes
# device and simulator agree on garbage (or on luck), so every case is checked unless a caller
# passes checks="default" for speed.
CHECKS = "all"
CHECK_MODES = ("all", "races", "uninit", "default", "bounds", "none")  # clsim.run's
# The modes whose simulation also answers for a mode (beside itself) when it found nothing:
# with no race and no uninitialised read, every work-item order gives the same buffers, and a
# launch that completed under the bounds checks wrote nothing out of bounds. So the verifier's
# checked run on one device serves the unchecked runs of the same case on the others.
_ANSWERS_FOR = {"races": ("all",), "uninit": ("all",), "default": ("all", "races", "uninit"),
                "bounds": ("all", "races", "uninit", "default"),
                "none": ("all", "races", "uninit", "default", "bounds")}
CHECKS_ENV = "CLSIM_VERIFY_CHECKS"
# set by verify.pytest_plugin for one test (marker verify_checks / --clsim-checks)
_CHECKS_OVERRIDE: ContextVar[str | None] = ContextVar("clsim_verify_checks", default=None)


def default_checks() -> str:
    """The simulator's checks where a caller names none: the pytest plugin's for the running
    test, else ``$CLSIM_VERIFY_CHECKS``, else CHECKS ("all")."""
    mode = _CHECKS_OVERRIDE.get() or os.environ.get(CHECKS_ENV) or CHECKS
    if mode not in CHECK_MODES:
        raise SimulationError(f"{CHECKS_ENV}={mode!r}: not a checks mode. Use one of "
                              f"{', '.join(CHECK_MODES)}.")
    return mode


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
    checks: str = "default"
    findings: tuple[Finding, ...] = ()
    reference: ReferenceComparison | None = None

    @property
    def equal(self) -> bool:
        """Device and simulator agree, the simulator's checks found nothing, and the
        simulator agrees with the spec's reference (where there is one)."""
        return self.outputs.equal and not self.findings and (
            self.reference is None or self.reference.equal)

    @property
    def disagreeing(self) -> list[str]:
        """Who disagreed, in words: "simulator vs device pocl", "simulator vs reference",
        "simulator checks"; empty when all agree."""
        sides = []
        if not self.outputs.equal:
            sides.append(f"simulator vs device {self.device}")
        if self.reference is not None and not self.reference.equal:
            sides.append("simulator vs reference")
        if self.findings:
            sides.append(f'simulator checks="{self.checks}"')
        return sides

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
        head = f"simulator vs device {self.device}: " + (
            "agree" if self.outputs.equal else "DIFFER")
        lines = [head, self.outputs.describe()]
        if self.reference is not None:
            lines.append(self.reference.describe())
        lines += describe_findings(self.findings, self.checks)
        return "\n".join(lines)


def describe_findings(findings: Sequence[Finding], checks: str) -> list[str]:
    """The simulator's findings, first in full (its accesses and source lines), the rest by
    their first line."""
    if not findings:
        return []
    races = sum(1 for f in findings if f.category == "race")
    lines = [f'simulator with checks="{checks}": {races} data race(s), '
             f"{len(findings) - races} uninitialised read(s)"]
    lines += ["  " + line for line in findings[0].describe().splitlines()]
    lines += ["  also: " + f.message.splitlines()[0] for f in findings[1:4]]
    if len(findings) > 4:
        lines.append(f"  ... and {len(findings) - 4} more")
    return lines


# ---------------------------------------------------------------------------------------------
# Running


def _digest(args: Sequence[Any]) -> str:
    h = hashlib.sha256(repr(memory_groups(args)).encode())
    for value in args:
        if isinstance(value, Image):
            h.update(repr(value).encode())
            value = value.data
        arr = np.asarray(value)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


_memo: OrderedDict[tuple, tuple[list[Any], tuple[Finding, ...]]] = OrderedDict()


def _memo_get(key: tuple) -> tuple[list[Any], tuple[Finding, ...]] | None:
    """The memoised simulation for ``key``, or one under a stronger checks mode that found
    nothing (``_ANSWERS_FOR``); key[5] is the checks mode."""
    keys = [key] + [key[:5] + (mode,) + key[6:] for mode in _ANSWERS_FOR.get(key[5], ())]
    for k in keys:
        if k in _memo and (k is key or not _memo[k][1]):
            _memo.move_to_end(k)
            return _memo[k]
    return None


def _memo_put(key: tuple, after: list[Any], findings: tuple[Finding, ...]) -> None:
    _memo[key] = (after, findings)
    while len(_memo) > 1 and (len(_memo) > _MEMO_SIZE or _memo_bytes() > _MEMO_BYTES):
        _memo.popitem(last=False)


def _memo_bytes() -> int:
    return sum(np.asarray(_host_array(v)).nbytes for after, _ in _memo.values() for v in after
               if isinstance(v, (np.ndarray, Image)))


def simulate(kernel: KernelFunction, global_size: Sequence[int],
             local_size: Sequence[int] | None, args: Sequence[Any],
             subgroup_size: int | None = None, jit: bool | None = None,
             reduction_order: str | None = None, checks: str = "default") -> list[Any]:
    """Run the simulator on copies of ``args``; returns the arguments after the launch.
    ``reduction_order``: the order of float sub-group sums (None: the simulator's default).

    ``jit=None`` runs small launches (up to PYTHON_LIMIT work-items plus elements) as plain
    Python and larger ones with Numba, checked ones with Numba once plain Python has cost,
    or is predicted to cost, a compile (``jit_choice``); both give identical results. Results are memoised on the
    argument bytes, so verifying one example on several devices simulates it once (a checked
    simulation that found nothing also serves the unchecked ones, ``_ANSWERS_FOR``).
    """
    return simulate_checked(kernel, global_size, local_size, args, subgroup_size, jit,
                            reduction_order, checks)[0]


def simulate_checked(kernel: KernelFunction, global_size: Sequence[int],
                     local_size: Sequence[int] | None, args: Sequence[Any],
                     subgroup_size: int | None = None, jit: bool | None = None,
                     reduction_order: str | None = None, checks: str = CHECKS
                     ) -> tuple[list[Any], tuple[Finding, ...]]:
    """``simulate`` under ``checks`` (``clsim.run``'s: "all" adds the race and uninitialised-
    read checks), also returning every race or uninitialised read found (``report_all``)."""
    key = (kernel, tuple(global_size), None if local_size is None else tuple(local_size),
           subgroup_size, reduction_order, checks, _digest(args),
           constants.fingerprint(parse(kernel)))  # a module-level table changed since
    if (memoised := _memo_get(key)) is not None:
        after, findings = memoised
        return copy_args(after), findings
    copies = copy_args(args)
    choice = None
    if jit is None:
        jit, choice = jit_choice.choose(kernel, global_size, local_size, copies, subgroup_size,
                                        reduction_order, checks)
    start = time.process_time()  # CPU seconds: see jit_choice.record
    # Groups in parallel even for a one-group launch (clsim.run's default takes them serially
    # there, a second module to compile): every JIT launch of the kernel at this local size
    # then shares one module, e.g. a default shape and the one-group shapes verified beside it
    # (1-5 CPU s each). One group has nothing to run in parallel, so results are the same.
    result = clsim.run(kernel, tuple(global_size), local_size, copies, jit=jit,
                       parallel=None if jit is False else True,
                       subgroup_size=subgroup_size, reduction_order=reduction_order,
                       checks=checks, report_all=checks not in ("default", "none", "bounds"))
    if choice is not None:
        jit_choice.record(choice, result, time.process_time() - start)
    findings = tuple(getattr(result, "findings", None) or ())
    _memo_put(key, copies, findings)
    return copy_args(copies), findings


def _host_array(value: Any) -> Any:
    """What the comparison reads of an argument: an image's pixels (the device side reads
    its image back into the same shape, ``verify.climages``)."""
    return value.data if isinstance(value, Image) else value


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
    memory_groups(args, pair.name, [repr(p) for p in pair.params])  # overlaps, by name
    return args


def usable_device(device: str | DeviceInfo | None) -> DeviceInfo:
    """The device, or the first usable one for None; raises DeviceUnusable when it failed its
    health probe (``verify.probe``)."""
    info = device if isinstance(device, DeviceInfo) else get_device(device)
    verdict = health(info)
    if not verdict.usable:
        reason = f"{info.short_name} is unusable: {verdict.reason}"
        raise DeviceUnusable(f"{reason}. Pick another device ('clsim devices'); "
                             f"{WORKING_POCL_HINT}.", device=info.short_name,
                             feature="health", reason=reason)
    return info


def launch_device(pair: Pair, case: Case, info: DeviceInfo, local: tuple[int, ...],
                  args: Sequence[Any], isolate: bool = True,
                  timeout_s: float | None = None) -> ClRun:
    """One device launch of the case (in the device's worker process unless not ``isolate``)."""
    launch = run_isolated if isolate else run_cl
    extra = {"timeout_s": timeout_s} if isolate else {}
    return launch(info, contract_off(pair.source), pair.kernel_name, case.global_size, local,
                  copy_args(args), options=pair.options,
                  required_features=sorted(pair.requires), subgroup_size=pair.subgroup_size,
                  **extra)


def run_pair(pair: Pair, case: Case, device: str | DeviceInfo | None = None,
             jit: bool | None = None, *, isolate: bool = True,
             timeout_s: float | None = None, checks: str | None = None) -> LaunchComparison:
    """Run ``case`` on ``device`` (default: the first usable) and on the simulator (separate
    copies; arguments that are one array stay one on each side) and compare.

    The device launch runs in the device's worker process (``verify.worker``) unless
    ``isolate=False``. Raises DeviceUnusable (the device failed its health probe),
    DeviceLacksFeature (a missing feature, before building), DeviceError (build or launch
    failures, with the build log), DeviceCrashed / DeviceTimedOut (the launch took the worker
    down or ran past ``timeout_s``) and the simulator's own SimulationErrors.

    The simulator runs under ``checks`` (None: ``default_checks()``, "all" unless the pytest
    plugin or ``$CLSIM_VERIFY_CHECKS`` says otherwise: races and uninitialised reads are
    findings that fail the comparison even where the device agrees; "default" leaves them
    out), and its outputs are compared with the pair's reference where it has one.
    """
    checks = checks or default_checks()
    info = usable_device(device)
    args = _check_args(pair, case)
    local = resolve_local(pair, case, info)
    run = launch_device(pair, case, info, local, args, isolate, timeout_s)
    # Float sub-group and work-group sums in the order this device adds them (measured once,
    # cached), so correct reductions agree bit for bit instead of within an order-dependent
    # bound; a work-group sum's order follows the sub-group size the device picked.
    folds = pair.uses_subgroups or uses_work_group_sums(pair.source)
    size = pair.subgroup_size
    if size is None and folds:
        size = run.subgroup_size
    order = device_reduction_order(info) if folds else None
    after, findings = simulate_checked(pair.kernel, case.global_size, local, args, size, jit,
                                       order, checks)
    policies = pair.policy_map(case.args)
    index = {p: i for i, p in enumerate(pair.params)}
    expected = {name: _host_array(after[index[name]]) for name in policies}
    actual = {name: run.buffers[index[name]] for name in policies
              if run.buffers[index[name]] is not None}
    reference = None if pair.reference is None or case.edge_values else compare_reference(
        pair.reference, case.inputs if case.inputs is not None else case.args, expected,
        pair.tolerance, policies)
    return LaunchComparison(info.short_name,
                            compare_outputs(expected, actual, policies, case.args,
                                            sides=("simulator", f"device {info.short_name}")),
                            expected, actual, run.time_ns, size, run.options, local, checks,
                            findings, reference)


def diagnose(pair: Pair, case: Case, device: DeviceInfo,
             comparison: LaunchComparison | None = None) -> str:
    """What the simulator's ``checks="all"`` finds on ``case`` (same local and sub-group
    sizes as the device run), in one line: races and uninitialised reads hide in the default
    simulation, and a missing barrier is the usual cause of a device disagreeing."""
    if comparison is not None and comparison.checks == "all":  # already checked: no rerun
        findings = list(comparison.findings)
    else:
        local = comparison.local_size if comparison is not None else None
        local = local or resolve_local(pair, case, device)
        size = comparison.subgroup_size if comparison is not None else pair.subgroup_size
        args = copy_args(_check_args(pair, case))
        try:
            result = clsim.run(pair.kernel, tuple(case.global_size), local, args,
                               checks="all", report_all=True, subgroup_size=size)
        except Exception as err:  # any failure of the diagnosis must not hide the finding
            first = str(err).splitlines()[0] if str(err) else ""
            return f'checks="all" stopped the simulation: {type(err).__name__}: {first}'
        findings = list(getattr(result, "findings", None) or [])
    if not findings:
        return 'checks="all": no data race or uninitialised read on this case'
    races = sum(1 for f in findings if f.category == "race")
    head = (f'checks="all" found {races} data race(s) and {len(findings) - races} '
            "uninitialised read(s) on this case; first: ")
    return head + findings[0].message.splitlines()[0]


def time_on_device(pair: Pair, case: Case, device: str | DeviceInfo | None = None,
                   repeats: int = 3) -> int | None:
    """The fastest of ``repeats`` kernel times (ns, profiling events) after one warm-up run;
    None when the device gives no profiling times. A warm-up over SLOW_NS (an interpreter such
    as Oclgrind) is the answer: repeating it would only cost time."""
    info = usable_device(device)
    args = _check_args(pair, case)
    local = resolve_local(pair, case, info)
    times: list[int | None] = []
    for _ in range(repeats + 1):
        run = launch_device(pair, case, info, local, args)
        times.append(run.time_ns)
        if len(times) == 1 and run.time_ns is not None and run.time_ns > SLOW_NS:
            return run.time_ns
    measured = [t for t in times[1:] if t is not None]
    return min(measured) if measured else None


def compare(kernel: KernelFunction, cl_source: str | Path, *, kernel_name: str | None = None,
            global_size: int | Sequence[int], local_size: int | Sequence[int] | None = None,
            args: Sequence[Any] | Mapping[str, Any], device: str | None = None,
            policy: Policy | str | Mapping[str, Policy | str] = "exact",
            outputs: Sequence[str] | Mapping[str, Policy | str] | None = None,
            subgroup_size: int | None = None, options: str | Sequence[str] = (),
            jit: bool | None = None, timeout_s: float | None = None,
            checks: str | None = None) -> LaunchComparison:
    """Run one launch of ``kernel`` (simulator) and ``cl_source`` (``device``, default the
    first usable one) and compare. The device runs in a worker process: a crash raises
    DeviceCrashed, a launch past ``timeout_s`` DeviceTimedOut.

    ``args`` in parameter order (or by name): numpy arrays and numpy scalars, as for
    ``clsim.run``; neither side modifies them. ``policy``: "exact", "ulp(N)", a Policy, or a
    mapping buffer -> policy. ``outputs`` names the buffers to compare (default: every array
    argument, so a kernel writing an input is caught too). ``checks`` is the simulator's
    (default "all": a data race or uninitialised read makes ``.equal`` False and is listed in
    ``.findings`` even where the device agrees; "default" for speed). Returns a
    LaunchComparison (``.equal``, ``.first_difference`` with buffer, index, both values, hex and
    ULP distance, ``.findings``, ``.disagreeing``).
    """
    pair = make_pair(kernel, cl_source, kernel_name=kernel_name, policy=policy, outputs=outputs,
                     subgroup_size=subgroup_size, options=options)
    case = make_case(pair, global_size, local_size, args)
    return run_pair(pair, case, device, jit, timeout_s=timeout_s, checks=checks)
