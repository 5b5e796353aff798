"""Search for a disagreement between the simulator and a device over Hypothesis draws.

``fuzz_spec`` draws shapes, local sizes and inputs for a ``KernelSpec`` (``spec_cases``);
``fuzz`` takes a user's pair and a strategy of launches. Both drive Hypothesis from code (one
property per device, ``max_examples`` draws, a recorded seed, no example database), let it
shrink any disagreement to a minimal example and return a ``FuzzReport``.

Nothing is lost: the first failing example is saved under ``failures_dir`` the moment it is
found, before shrinking starts; the minimal one is saved before ``fuzz`` returns. Both folders
replay with ``clsim replay``. An error on either side (the simulator's OutOfBoundsError, a
launch the device refuses) counts as a failure too and is saved and shrunk the same way. Device
launches run in a worker process (``verify.worker``), so a crash or a time-out there is a
finding saved by this process (stage ``crash``/``timeout``), reported without shrinking; Ctrl-C
during an example saves it (stage ``interrupted``) before the KeyboardInterrupt propagates.
Cases are not written before every launch: a save costs ~30 ms (three fsyncs), more than the
launch; only a kill of this process itself (SIGKILL, out of memory) loses the case in flight.

This module prints nothing except an optional tqdm progress bar on stderr; ``verify.cli``
formats reports.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky, HypothesisException, Unsatisfiable
from tqdm import tqdm

from clsim.api import KernelFunction
from clsim.errors import DeviceLacksFeature, SimulationError
from clsim.spec import KernelSpec, Launch, Policy
from verify.clargs import memory_groups
from verify.clrun import build_options
from verify.devices import DeviceInfo, get_device
from verify.errors import DeviceCrashed, DeviceFault, DeviceTimedOut
from verify.failures import DEFAULT_DIR, FailureNotSaved, save_failure
from verify.features import needs_cl2
from verify.pairs import Case, Pair, contract_off, make_case, make_pair, spec_case
from verify.pairs import spec_pair as _spec_pair
from verify.probe import health
from verify.runner import CHECKS, LaunchComparison, default_checks, diagnose, run_pair
from verify.seeding import fixed_constants
from verify.strategies import float_arrays, problem_sizes
from verify.worker import build_isolated

# Local sizes tried for a spec: powers of two, odd sizes, one past a power of two. A fixed set,
# so the simulator generates few variants of each kernel.
SPEC_LOCAL_SIZES = (1, 2, 3, 7, 16, 32, 33, 64, 100, 128, 256)
# Drawn problems hold at most this many elements (Oclgrind interprets every work-item).
MAX_ELEMENTS = 1 << 14
DEFAULT_EXAMPLES = 100
GENERATED_SHARE = 4  # one drawn case in 4 keeps the spec's generated floats
# Called with every FuzzReport made: verify.pytest_plugin listens during a test, so that a test
# whose every report was skipped (the device lacks a feature) shows as skipped, not passed.
REPORT_LISTENERS: list[Callable[[FuzzReport], None]] = []


@dataclass(frozen=True)
class Found:
    """A failing example, minimal after shrinking: the comparison that failed, or the error
    one side raised. ``path`` is its saved folder, ``first_path`` the first failing example's
    (the same when no shrinking was possible); ``checks`` says whether ``checks="all"`` found
    a race or an uninitialised read in the kernel on this case (the usual cause of a device
    disagreeing is a missing barrier, which the default simulation hides)."""

    case: Case
    comparison: LaunchComparison | None
    error: str | None
    path: Path | None
    first_path: Path | None
    checks: str | None = None  # what the simulator's checks="all" found on this case
    not_saved: str | None = None  # why the case could not be saved (e.g. ENOSPC), if it wasn't

    flaky: bool = False  # failed once, then agreed when the same case ran again

    @property
    def outcome(self) -> str:
        """"crashed" or "timed out" when the device launch died (messages from ``_try``),
        "flaky" when the case failed once and agreed when run again, "checks" when only the
        simulator's checks found something, else "differ" (outputs, the reference, or an
        error on one side)."""
        for fault, word in ((DeviceTimedOut, "timed out"), (DeviceCrashed, "crashed")):
            if self.error is not None and self.error.startswith(fault.__name__ + ":"):
                return word
        if self.flaky:
            return "flaky"
        c = self.comparison
        if c is not None and c.findings and c.outputs.equal and (
                c.reference is None or c.reference.equal):
            return "checks"
        return "differ"


@dataclass(frozen=True)
class FuzzReport:
    """The outcome of fuzzing one pair on one device.

    ``examples``: launches run (shrinking included); ``max_ulp``: largest ULP distance seen per
    float output over every example; ``skipped``: why the device could not run it.
    """

    name: str
    device: str
    seed: int
    examples: int = 0
    found: Found | None = None
    max_ulp: Mapping[str, int] = field(default_factory=dict)
    policies: Mapping[str, Policy] = field(default_factory=dict)
    skipped: str | None = None

    def __post_init__(self) -> None:
        for listener in list(REPORT_LISTENERS):
            listener(self)

    @property
    def equal(self) -> bool:
        """True when every example agreed (a skip is not a disagreement: under
        ``verify.pytest_plugin`` a test whose reports were all skipped is itself skipped)."""
        return self.found is None


class _CaseFailed(Exception):
    """Raised inside the property so Hypothesis shrinks; carries the case and what failed."""

    def __init__(self, case: Case, comparison: LaunchComparison | None, error: str | None):
        super().__init__(error or "outputs differ")
        self.case, self.comparison, self.error = case, comparison, error


class _Fault(BaseException):
    """A device crash or time-out: stops the search at once (Hypothesis lets a BaseException
    through without shrinking), since every shrink step would restart the worker or wait out
    the whole time limit. Carries the case, already saved."""

    def __init__(self, case: Case, error: str):
        super().__init__(error)
        self.case, self.error = case, error


# ---------------------------------------------------------------------------------------------
# Strategies


@st.composite
def spec_shapes(draw: st.DrawFn, spec: KernelSpec, max_elements: int = MAX_ELEMENTS,
                max_shape: Mapping[str, int] | None = None) -> dict[str, int]:
    """A problem shape for ``spec``: each key of its default shape drawn with
    ``problem_sizes`` (1, sizes next to powers of two, anything), the last key (the contiguous
    one, e.g. cols) first, within ``max_elements`` in all and each key within ``max_shape``'s
    bound for it (default: the default shape's value). A spec attribute ``fuzz_shapes`` (a
    strategy of shape dicts, or a function returning one) replaces this; ``max_shape`` still
    bounds its keys (a larger value becomes the bound)."""
    caps = dict(max_shape or {})
    custom = getattr(spec, "fuzz_shapes", None)
    if callable(custom):  # built on demand, so a library of specs need not import Hypothesis
        custom = custom()
    if custom is not None:
        return {k: min(int(v), caps.get(k, int(v))) for k, v in draw(custom).items()}
    shape: dict[str, int] = {}
    budget = max_elements
    for key, default in reversed(list(spec.default_shape.items())):
        value = draw(problem_sizes(max(1, min(int(default), caps.get(key, default), budget))))
        shape[key] = value
        budget = max(1, budget // value)
    return {key: shape[key] for key in spec.default_shape}


def _local_choices(default: tuple[int, ...] | None, max_local: int, vary: bool
                   ) -> list[tuple[int, ...] | None]:
    if not vary or default is None or len(default) != 1:
        return [default]
    cap = min(default[0], max_local)
    return [(s,) for s in sorted({s for s in SPEC_LOCAL_SIZES if s <= cap} | {cap})]


@st.composite
def spec_cases(draw: st.DrawFn, spec: KernelSpec, max_elements: int = MAX_ELEMENTS,
               max_local: int = 1024, vary_local: bool = True,
               max_shape: Mapping[str, int] | None = None) -> Case:
    """A Case for ``spec``: a drawn shape (``spec_shapes``), a local size from SPEC_LOCAL_SIZES (up to the
    spec's default, which may be sized to its local arrays; 1-D launches only), the spec's
    generator with a drawn seed, and every float input buffer replaced by ``float_arrays``
    (edge values, all-equal, seeded). Integer inputs keep the generator's values: their
    range is meaningful (indices, counts, packed blocks). A spec attribute ``fuzz_floats``
    (keyword arguments of ``float_arrays``, e.g. ``{"allow_nan": False}``) narrows the floats.
    One case in GENERATED_SHARE keeps the generator's floats: the spec's reference is compared
    on those (its tolerance is stated for them), not on edge values.
    """
    shape = draw(spec_shapes(spec, max_elements, max_shape))
    input_seed = draw(st.integers(0, 2**32 - 1))
    inputs = spec.make_inputs(np.random.default_rng(input_seed), shape)
    float_options = dict(getattr(spec, "fuzz_floats", None) or {})
    # One case in GENERATED_SHARE keeps the generator's floats, where the spec's reference
    # tolerance holds, so the reference is compared on them; 0 (drawn floats) is the value
    # Hypothesis shrinks to.
    edge_values = draw(st.integers(0, GENERATED_SHARE - 1)) != GENERATED_SHARE - 1
    for name, value in list(inputs.items()):
        if (edge_values and name not in spec.outputs and isinstance(value, np.ndarray)
                and value.ndim > 0 and value.dtype.kind == "f"):
            inputs[name] = draw(float_arrays(value.shape, value.dtype, **float_options))
    default = spec.launch(inputs, shape, None).local_size
    local = draw(st.sampled_from(_local_choices(
        None if default is None else tuple(default), max_local, vary_local)))
    return spec_case(spec, inputs, shape, local, input_seed, edge_values)


def _launch_to_case(pair: Pair, drawn: Launch | Mapping[str, Any]) -> Case:
    if isinstance(drawn, Launch):
        return make_case(pair, drawn.global_size, drawn.local_size, drawn.args)
    if isinstance(drawn, Case):
        return drawn
    return make_case(pair, drawn["global_size"], drawn.get("local_size"), drawn["args"])


# ---------------------------------------------------------------------------------------------
# Saving


def saved_aliases(params: Sequence[str], args: Sequence[Any]) -> dict[str, str]:
    """Parameter -> the earlier parameter given the same array: inputs.npz stores each
    argument on its own, so replay needs this to pass one array twice again."""
    groups = memory_groups(args)
    return {params[i]: params[g] for i, g in enumerate(groups) if g is not None and g != i}


def save_case(pair: Pair, case: Case, device: str, *, comparison: LaunchComparison | None,
              error: str | None, seed_value: int | None, failures_dir: str | Path,
              stage: str, checks: str | None = None) -> Path:
    """Write one failing case (inputs, launch, seed, device, .cl source) and return its folder."""
    local = comparison.local_size if comparison is not None else case.local_size
    launch = {
        "global_size": case.global_size, "local_size": local,
        "subgroup_size": comparison.subgroup_size if comparison else pair.subgroup_size,
        "forced_subgroup_size": pair.subgroup_size,
        "kernel_name": pair.kernel_name, "params": list(pair.params),
        "shape": dict(case.shape or {}), "input_seed": case.seed, "options": list(pair.options),
        "requires": sorted(pair.requires), "cl_path": pair.cl_path, "origin": dict(pair.origin),
        "policies": {k: str(v) for k, v in pair.policy_map(case.args).items()},
        "default_policy": str(pair.default_policy), "all_arrays": pair.policies is None,
        "aliases": saved_aliases(pair.params, [case.args[p] for p in pair.params]),
    }
    difference = comparison.outputs.describe() if comparison is not None else (error or "")
    return save_failure(
        failures_dir, spec_name=pair.name, inputs=dict(case.args), launch=launch,
        seed=seed_value, device=device, policy=pair.policy_map(case.args),
        difference=difference, extra={"stage": stage, "error": error, "checks_all": checks},
        files={"kernel.cl": pair.source})


# ---------------------------------------------------------------------------------------------
# Search


# Hypothesis' explain phase reruns a failing example's variations to annotate a traceback that
# the verifier never prints; it was 56 of the 82 s a planted race took to report. Left out.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)


def _settings(examples: int) -> settings:
    return settings(max_examples=max(1, int(examples)), deadline=None, database=None,
                    derandomize=False, suppress_health_check=list(HealthCheck),
                    verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False,
                    phases=PHASES)


@dataclass
class _State:
    runs: int = 0
    first: Path | None = None
    first_case: Case | None = None
    max_ulp: dict[str, int] = field(default_factory=dict)
    # saved folder -> diagnosis (key None: the last case that could not be saved)
    checks: dict[Path | None, str | None] = field(default_factory=dict)
    not_saved: str | None = None  # why the disk refused a case: shrinking goes on regardless
    # the last case that failed: what a Flaky replay is reported with
    last: tuple[Case, LaunchComparison | None, str | None] | None = None


def _first(state: _State, case: Case, save: Callable[..., Path], bar: Any,
           comparison: LaunchComparison | None, error: str | None) -> None:
    if state.first_case is None:
        state.first, state.first_case = save(case, comparison, error, "first"), case
        bar.set_postfix_str("shrinking")


def _try(pair: Pair, case: Case, info: DeviceInfo, state: _State, save: Callable[..., Path],
         bar: Any, timeout_s: float | None, checks: str = CHECKS) -> None:
    state.runs += 1
    bar.update(1)
    try:
        result = run_pair(pair, case, info, timeout_s=timeout_s, checks=checks)
    except KeyboardInterrupt as err:  # e.g. at a launch that hangs: keep the case in flight
        path = save(case, None, "interrupted (Ctrl-C) while this case ran", "interrupted")
        raise KeyboardInterrupt(f"interrupted; the case in flight is saved: {path}") from err
    except DeviceFault as err:
        message = f"{type(err).__name__}: {err}"
        stage = "timeout" if isinstance(err, DeviceTimedOut) else "crash"
        state.first, state.first_case = save(case, None, message, stage), case
        raise _Fault(case, message) from err
    except SimulationError as err:
        if isinstance(err, DeviceLacksFeature):  # e.g. a local size over the device's maximum
            raise
        message = f"{type(err).__name__}: {err}"
        _first(state, case, save, bar, None, message)
        state.last = (case, None, message)
        raise _CaseFailed(case, None, message) from err
    for name, dist in result.max_ulp.items():
        state.max_ulp[name] = max(state.max_ulp.get(name, 0), dist)
    if not result.equal:
        _first(state, case, save, bar, result, None)
        state.last = (case, result, None)
        raise _CaseFailed(case, result, None)


def _fits(pair: Pair, info: DeviceInfo) -> Callable[[Case], bool]:
    def fits(case: Case) -> bool:
        local = case.local_size
        if local is not None and int(np.prod(local)) > info.max_work_group_size:
            return False
        return local is None or pair.skip_reason(info, local, case.global_size) is None
    return fits


def search(pair: Pair, cases: st.SearchStrategy[Case], device: str | DeviceInfo | None = None,
           *, examples: int = DEFAULT_EXAMPLES, seed_value: int | None = None,
           failures_dir: str | Path = DEFAULT_DIR, progress: bool = False,
           timeout_s: float | None = None, checks: str | None = None) -> FuzzReport:
    """Run ``pair`` on up to ``examples`` drawn cases; shrink, save and return any failure.
    A device crash or time-out ends the search with that case (saved), unshrunk. The
    simulator runs under ``checks`` (None: ``verify.runner.default_checks()``, "all" unless
    told otherwise: any race or uninitialised read is a failure)."""
    checks = checks or default_checks()
    info = device if isinstance(device, DeviceInfo) else get_device(device)
    seed_value = secrets.randbits(32) if seed_value is None else int(seed_value)
    reason = pair.skip_reason(info)
    if reason is not None:
        return FuzzReport(pair.name, info.short_name, seed_value, skipped=reason)
    # A build failure fails every case: raise it (with its log) now, not after shrinking.
    build_isolated(info, contract_off(pair.source),
                   build_options(info, pair.options, pair.subgroup_size, needs_cl2(pair.source)),
                   pair.kernel_name)
    state = _State()

    def save(case: Case, comparison: LaunchComparison | None, error: str | None,
             stage: str) -> Path | None:
        # A hang on the device may hang the simulator too, and Ctrl-C means stop now: no
        # diagnosis for either.
        checks = None if stage in ("timeout", "interrupted") else diagnose(
            pair, case, info, comparison)
        try:
            path = save_case(pair, case, info.short_name, comparison=comparison, error=error,
                             seed_value=seed_value, failures_dir=failures_dir, stage=stage,
                             checks=checks)
        except FailureNotSaved as err:  # printed by save_failure; keep shrinking, say why
            state.not_saved, path = err.reason, None
        state.checks[path] = checks
        return path

    bar = tqdm(total=examples, desc=f"{pair.name} on {info.short_name}", unit="ex",
               leave=False, disable=not progress)

    @_settings(examples)
    @given(cases.filter(_fits(pair, info)))
    def prop(case: Case) -> None:
        _try(pair, case, info, state, save, bar, timeout_s, checks)

    try:
        found = _drive(prop, seed_value, state, save)
    except Unsatisfiable:
        return FuzzReport(pair.name, info.short_name, seed_value, state.runs, skipped=(
            f"no drawn launch fits {info.short_name} (max work-group size "
            f"{info.max_work_group_size}, partial work-groups "
            f"{'supported' if health(info).cl2_option else 'unsupported'})"))
    finally:
        bar.close()
    return FuzzReport(pair.name, info.short_name, seed_value, state.runs, found,
                      dict(state.max_ulp), dict(pair.policies or {}), None)


def _drive(prop: Callable[[], None], seed_value: int, state: _State,
           save: Callable[..., Path]) -> Found | None:
    """Run the property under ``seed_value``; the failure Hypothesis ends with, or None."""
    try:
        with fixed_constants():  # the same seed draws the same cases in any process
            hypothesis_seed(seed_value)(prop)()
    except _Fault as fault:
        return Found(fault.case, None, fault.error, state.first, state.first,
                     state.checks.get(state.first), state.not_saved)
    except _CaseFailed as failed:
        return _found(failed.case, failed.comparison, failed.error, state, save)
    except Unsatisfiable:
        raise
    except Flaky:  # the same case failed once, then agreed: say so, never Hypothesis' words
        return _flaky(state, save)
    except HypothesisException as err:
        raise SimulationError(f"the search stopped: {type(err).__name__}: "
                              f"{str(err).splitlines()[0] if str(err) else ''}. This is a "
                              "verifier bug; rerun with the same --seed and report it.") from err
    return None


def _flaky(state: _State, save: Callable[..., Path]) -> Found:
    """A case that failed, then agreed when Hypothesis ran it again: the device (the simulator
    is deterministic) gives different results for one input. Saved as stage "flaky"."""
    if state.last is None:
        raise SimulationError("the search stopped on a flaky draw that never failed. This is "
                              "a verifier bug; rerun with the same --seed and report it.")
    case, comparison, error = state.last
    path = save(case, comparison, error, "flaky")
    what = ("it failed once and agreed when run again on the same inputs: the device gives "
            "different results from one run to the next (a race on the device, memory it "
            "never wrote, a timing-dependent driver); the failing run is shown")
    return Found(case, comparison, f"flaky: {what}" + (f"\n{error}" if error else ""), path,
                 state.first, state.checks.get(path), state.not_saved if path is None else None,
                 flaky=True)


def _found(case: Case, comparison: LaunchComparison | None, error: str | None, state: _State,
           save: Callable[..., Path]) -> Found:
    same = state.first_case is case or (
        state.first_case is not None and _same_case(state.first_case, case))
    path = state.first if same else save(case, comparison, error, "minimal")
    return Found(case, comparison, error, path, state.first, state.checks.get(path),
                 state.not_saved if path is None else None)


def _same_case(a: Case, b: Case) -> bool:
    if (a.global_size, a.local_size) != (b.global_size, b.local_size) or \
            a.args.keys() != b.args.keys():
        return False
    for key in a.args:
        x, y = np.asarray(a.args[key]), np.asarray(b.args[key])
        if (x.dtype, x.shape) != (y.dtype, y.shape) or x.tobytes() != y.tobytes():
            return False
    return True


def fuzz_spec(spec: KernelSpec, device: str | DeviceInfo | None = None, *,
              examples: int = DEFAULT_EXAMPLES, seed: int | None = None,
              failures_dir: str | Path = DEFAULT_DIR, progress: bool = False,
              cl_source: str | Path | None = None, max_elements: int = MAX_ELEMENTS,
              pair: Pair | None = None, timeout_s: float | None = None,
              checks: str | None = None, max_shape: Mapping[str, int] | None = None
              ) -> FuzzReport:
    """Fuzz a library (or user) spec on one device: drawn shapes, local sizes and inputs
    (``max_elements`` shape units at most, each shape key at most ``max_shape``'s value).

    ``cl_source`` (text or path) replaces the spec's ``.cl`` file, e.g. to check an edited
    twin; ``pair`` replaces the whole pair (``clsim verify file.py::NAME`` passes one).
    Every case also compares the simulator with the spec's reference, and runs the simulator
    under ``checks`` (default "all"; "default" skips the race and uninitialised-read checks).
    """
    pair = pair or _spec_pair(spec, cl_source)
    cases = spec_cases(spec, max_elements, vary_local=not (pair.uses_subgroups
                                                          or "subgroups" in pair.requires),
                       max_shape=max_shape)
    return search(pair, cases, device, examples=examples, seed_value=seed,
                  failures_dir=failures_dir, progress=progress, timeout_s=timeout_s,
                  checks=checks)


def fuzz(kernel: KernelFunction, cl_source: str | Path, *,
         launches: st.SearchStrategy[Launch] | st.SearchStrategy[Mapping[str, Any]],
         kernel_name: str | None = None, device: str | None = None,
         policy: Policy | str | Mapping[str, Policy | str] = "exact",
         outputs: Sequence[str] | Mapping[str, Policy | str] | None = None,
         examples: int = DEFAULT_EXAMPLES, seed: int | None = None,
         subgroup_size: int | None = None, options: str | Sequence[str] = (),
         failures_dir: str | Path = DEFAULT_DIR, progress: bool = False,
         timeout_s: float | None = None, checks: str | None = None) -> FuzzReport:
    """``verify.compare`` over Hypothesis draws: ``launches`` yields ``clsim.spec.Launch``
    (global size, local size, args in parameter order) or dicts with those keys. Returns a
    FuzzReport whose ``found`` (None when all agreed) holds the minimal failing example.
    ``device`` defaults to the first usable one; ``timeout_s`` limits each device launch;
    ``checks`` is the simulator's (default "all": a race or an uninitialised read fails)."""
    pair = make_pair(kernel, cl_source, kernel_name=kernel_name, policy=policy, outputs=outputs,
                     subgroup_size=subgroup_size, options=options)
    cases = launches.map(lambda drawn: _launch_to_case(pair, drawn))
    return search(pair, cases, device, examples=examples, seed_value=seed,
                  failures_dir=failures_dir, progress=progress, timeout_s=timeout_s,
                  checks=checks)
