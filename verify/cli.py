"""The verifier's commands: ``clsim devices``, ``clsim verify`` and ``clsim replay``.

``clsim.cli`` wires each command to an ``add_*_arguments(parser)`` / ``*_main(args) -> int``
pair here. Disagreements are reported in full (minimal example, first differing index, both
values as float and hex, ULP distance, where the failure was saved) and give exit status 1; a
device that cannot run a kernel is a skip with its reason. Errors before anything runs (an
unknown kernel or device) are raised as SimulationError for ``clsim.cli`` to print.

``python -m verify.cli devices|verify|replay ...`` runs the same commands without clsim.cli.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clsim.errors import DeviceError, SimulationError
from clsim.spec import all_specs
from verify.campaign import fuzz_jobs, jobs_count
from verify.cli_errors import damaged_failure_files, one_line, opencl_errors
from verify.devices import DeviceInfo, format_devices, get_device, list_devices
from verify.failures import DEFAULT_DIR
from verify.fuzz import DEFAULT_EXAMPLES, MAX_ELEMENTS, Found, FuzzReport, fuzz_spec
from verify.pairs import Case, Pair, default_case
from verify.policy import Difference
from verify.probe import health_fields
from verify.replay import ReplayOutcome, replay, spec_ref_pair
from verify.replay_meta import terminal_safe
from verify.runner import CHECKS, default_checks, describe_findings, time_on_device

DEVICES_HELP = "list the OpenCL devices: platform, version, limits, sub-groups, fp16/fp64"
VERIFY_HELP = "compare the simulator with OpenCL devices on drawn inputs; shrink and save failures"
REPLAY_HELP = "re-run a saved failure (.clsim/failures/...) on the simulator and devices"
_EXCERPT = 8
VERIFY_CHECKS = ("all", "races", "uninit", "default")
_LABELS = {"differ": "DIFFER ", "crashed": "CRASHED", "timed out": "TIMEOUT", "flaky": "FLAKY  ",
           "checks": "FOUND  "}
def _debug(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "debug", False) or getattr(args, "debug_here", False))


# ---------------------------------------------------------------------------------------------
# devices


def add_devices_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the table as JSON")


def _device_dict(d: DeviceInfo) -> dict[str, Any]:
    return {"name": d.short_name, "device": d.full_name, "platform": d.platform,
            "opencl": d.opencl_version, "compute_units": d.compute_units,
            "max_work_group_size": d.max_work_group_size,
            "subgroup_sizes": list(d.subgroup_sizes), "subgroups": d.has_subgroups,
            "fp16": d.fp16, "fp64": d.fp64, "local_mem_size": d.local_mem_size,
            "correctly_rounded_divide_sqrt": d.correctly_rounded_divide_sqrt,
            **health_fields(d)}


def devices_main(args: argparse.Namespace) -> int:
    with opencl_errors():
        devices = list_devices()
    if getattr(args, "json", False):
        print(json.dumps([_device_dict(d) for d in devices], indent=2))
    else:
        print(format_devices(devices))
    return 0


# ---------------------------------------------------------------------------------------------
# verify


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="kernel spec names or path/to/file.py::NAME (default: every "
                             "library kernel)")
    parser.add_argument("-d", "--device", action="append", dest="devices", metavar="D",
                        help="a device short name or name substring; repeat for several "
                             "(default: every device present)")
    parser.add_argument("-n", "--examples", type=int, default=DEFAULT_EXAMPLES,
                        help=f"drawn examples per kernel and device (default {DEFAULT_EXAMPLES})")
    parser.add_argument("--seed", type=int, default=None,
                        help="Hypothesis seed (default: random, printed and saved)")
    parser.add_argument("--time", action="store_true",
                        help="also time each device at the kernel's default shape "
                             "(profiling events)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs per device after a warm-up (best is shown; default 3)")
    parser.add_argument("--profile", default=None,
                        help="with --time: a traffic profile (e.g. cpu) to show measured time "
                             "against its roofline bound")
    parser.add_argument("--cl", default=None, metavar="FILE",
                        help="use this .cl file instead of the spec's twin (one NAME only)")
    parser.add_argument("--failures-dir", default=DEFAULT_DIR,
                        help=f"where failing examples are saved (default {DEFAULT_DIR})")
    parser.add_argument("--max-elements", type=int, default=MAX_ELEMENTS,
                        help=f"largest drawn problem, in elements (default {MAX_ELEMENTS})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--check", default=None, choices=VERIFY_CHECKS, dest="checks",
                        help="the simulator's checks on every case (default all, or "
                             "$CLSIM_VERIFY_CHECKS: a data race or uninitialised read fails "
                             "even where the device agrees)")
    parser.add_argument("--no-checks", action="store_const", const="default", dest="checks",
                        help="leave out the race and uninitialised-read checks (faster; "
                             "bounds and barrier divergence are still checked)")
    parser.add_argument("-j", "--jobs", type=jobs_count, default=1, metavar="N",
                        help="fuzz each kernel and device in N processes (or 'auto': one per "
                             "CPU), worker i under seed S+i with its share of the examples")


def _devices(names: Sequence[str] | None) -> list[DeviceInfo]:
    with opencl_errors():
        if names:
            return list({get_device(n).short_name: get_device(n) for n in names}.values())
        devices = list_devices()
    if not devices:
        raise DeviceError("no OpenCL devices found. pip install pocl-binary-distribution "
                          "(and '.[devices]' for intel-cpu and oclgrind).")
    return devices


def verify_main(args: argparse.Namespace) -> int:
    refs = list(args.names) or list(all_specs())
    if args.cl and len(refs) != 1:
        raise SimulationError("--cl replaces one kernel's .cl file: name exactly one kernel.")
    if args.examples < 1:
        raise SimulationError(f"--examples {args.examples}: give at least 1.")
    devices = _devices(args.devices)
    loaded = [spec_ref_pair(ref, args.cl) for ref in refs]  # fail fast on a bad name
    failed = False
    for ref, (spec, pair) in zip(refs, loaded, strict=True):
        print(_heading(pair, args.examples, _checks(args)))
        for info in devices:
            line, bad = _verify_one(spec, pair, info, args, ref)
            failed |= bad
            print(line)
        if args.time:
            print(_timing(spec, pair, devices, args.repeats, args.profile))
    return 1 if failed else 0


def _heading(pair: Pair, examples: int, checks: str = CHECKS) -> str:
    policies = ", ".join(f"{k}: {v}" for k, v in (pair.policies or {}).items())
    against = "simulator" + (f' (checks="{checks}")' if checks != "default" else "")
    against += " and reference" if pair.reference is not None else ""
    return (f"{pair.name} ({policies}): {examples} examples per device on {pair.cl_origin}, "
            f"against the {against}")


def _verify_one(spec: Any, pair: Pair, info: DeviceInfo, args: argparse.Namespace,
                ref: str) -> tuple[str, bool]:
    name = f"  {info.short_name:<12}"
    try:
        if getattr(args, "jobs", 1) > 1:
            report = fuzz_jobs(ref, info.short_name, jobs=args.jobs, examples=args.examples,
                               seed=args.seed, failures_dir=args.failures_dir,
                               max_elements=args.max_elements, cl_source=args.cl,
                               progress=_progress(args), checks=_checks(args))
        else:
            report = fuzz_spec(spec, info, examples=args.examples, seed=args.seed,
                               failures_dir=args.failures_dir, progress=_progress(args),
                               max_elements=args.max_elements, pair=pair,
                               checks=_checks(args))
    except SimulationError as err:  # a build failure: one line (--debug: the whole log)
        return name + "ERROR   " + one_line(f"{type(err).__name__}: {err}", _debug(args)), True
    if report.skipped:
        return name + f"skipped ({report.skipped})", False
    if report.found is None:
        return name + f"agree   {report.examples} examples, seed {report.seed}" + _ulps(report), \
            False
    label = _LABELS[report.found.outcome]
    text = name + f"{label} {report.examples} examples, seed {report.seed}; minimal example:\n"
    return text + _indent(format_found(report.found), 6), True


def _checks(args: argparse.Namespace) -> str:
    return getattr(args, "checks", None) or default_checks()


def _progress(args: argparse.Namespace) -> bool:
    """A bar only on a terminal: a redirected log never holds bar fragments."""
    return not args.no_progress and sys.stderr.isatty()


def _ulps(report: FuzzReport) -> str:
    ulp_outputs = {k: v for k, v in report.max_ulp.items()
                   if k in report.policies and report.policies[k].kind == "ulp"}
    if not ulp_outputs:
        return ""
    return " (max ULP seen: " + ", ".join(f"{k} {v}" for k, v in ulp_outputs.items()) + ")"


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def _values(arr: np.ndarray, lo: int, hi: int) -> str:
    flat = arr.reshape(-1)[lo:hi]
    body = ", ".join(str(v) for v in flat)
    return ("[... " if lo > 0 else "[") + body + (" ...]" if hi < arr.size else "]")


def _excerpt(name: str, value: Any, diff: Difference | None, size: int | None) -> str:
    if not isinstance(value, np.ndarray) or value.ndim == 0:
        return f"{name} = {value!r}"
    head = f"{name}: {value.dtype}{list(value.shape)} "
    at = diff.flat_index if diff is not None and diff.flat_index is not None else None
    if value.size <= _EXCERPT:
        return head + "= " + _values(value, 0, value.size)
    if at is not None and value.size == size:  # element-wise with the differing buffer
        lo = max(0, at - 3)
        return head + f"[{lo}:{min(value.size, at + 4)}] = " + _values(value, lo, at + 4)
    return head + "= " + _values(value, 0, _EXCERPT)


def format_found(found: Found) -> str:
    """A failing example for people: the case, an excerpt of every input around the first
    differing index, the difference (both values as float and hex, ULP distance), the files."""
    case: Case = found.case
    comparison = found.comparison
    diff = comparison.first_difference if comparison is not None else None
    size = None
    if diff is not None and comparison is not None and diff.buffer in comparison.simulator:
        size = np.asarray(comparison.simulator[diff.buffer]).size
    lines = [case.describe() + (f"; input seed {case.seed}" if case.seed is not None else "")]
    lines += ["  " + _excerpt(k, v, diff, size) for k, v in case.args.items()]
    if comparison is not None:
        lines.append("disagree: " + ", ".join(comparison.disagreeing))
        for c in comparison.outputs.comparisons.values():
            if not c.equal:
                lines.append(c.describe())
        if comparison.reference is not None and not comparison.reference.equal:
            lines.append(comparison.reference.describe())
        lines += describe_findings(comparison.findings, comparison.checks)
    if found.error:
        lines.append(found.error)
    if found.checks and not (comparison is not None and comparison.findings):
        lines.append(f"simulator with {found.checks}")
    if found.not_saved is not None:
        lines.append(f"NOT SAVED ({found.not_saved}): copy the example above to keep it")
    if found.path is not None:
        lines.append(f"saved: {found.path}")
        if found.first_path is not None and found.first_path != found.path:
            lines.append(f"first failing example (before shrinking): {found.first_path}")
        lines.append(f"replay: clsim replay {found.path}")
    return "\n".join(lines)


def _ms(ns: int | None) -> str:
    if ns is None:
        return "no profiling time"
    return f"{ns / 1e6:.3f} ms" if ns < 10**9 else f"{ns / 1e9:.2f} s"


def _timing(spec: Any, pair: Pair, devices: Sequence[DeviceInfo], repeats: int,
            profile: str | None) -> str:
    case = default_case(spec)
    lines = [f"  time at the default shape ({case.describe()}), best of {repeats}:"]
    roof = _roof(spec, case, profile) if profile else None
    for info in devices:
        reason = pair.skip_reason(info, case.local_size)
        if reason:
            lines.append(f"    {info.short_name:<12}skipped ({reason})")
            continue
        try:
            ns = time_on_device(pair, case, info, repeats)
        except SimulationError as err:
            lines.append(f"    {info.short_name:<12}ERROR "
                         + one_line(f"{type(err).__name__}: {err}"))
            continue
        lines.append(f"    {info.short_name:<12}{_ms(ns)}" + _versus(roof, ns))
    return "\n".join(lines)


def _roof(spec: Any, case: Case, profile: str) -> Any:
    """The roofline of the default launch on ``profile``, or a string saying why not."""
    import clsim
    from clsim.traffic import load_profile, roofline

    prof = load_profile(profile)
    args = [v.copy() if isinstance(v, np.ndarray) else v for v in case.args.values()]
    result = clsim.run(spec.kernel, case.global_size, case.local_size, args, traffic=True,
                       subgroup_size=spec.subgroup_size)
    totals = getattr(result.traffic, "totals", None)
    if not isinstance(totals, Mapping):
        return "no traffic counts from the simulator"
    return roofline(totals, prof)


def _versus(roof: Any, ns: int | None) -> str:
    if roof is None or ns is None or ns <= 0:
        return ""
    if isinstance(roof, str):
        return f"  ({roof})"
    from clsim.traffic import measured_vs_bound

    mvb = measured_vs_bound(ns / 1e9, roof)
    return (f"  vs {roof.bound}-bound floor {mvb.predicted_time_s * 1e3:.3f} ms on "
            f"{roof.profile}: {mvb.fraction_of_bound:.0%} of the bound, "
            f"{mvb.achieved_gbs:.1f} GB/s")


# ---------------------------------------------------------------------------------------------
# replay


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="FILE",
                        help="a failure folder under .clsim/failures (or its meta.json)")
    parser.add_argument("-d", "--device", action="append", dest="devices", metavar="D",
                        help="replay on this device; repeat for several (default: the device "
                             "it failed on)")
    parser.add_argument("--all-devices", action="store_true",
                        help="replay on every device present")
    parser.add_argument("--cl", default=None, metavar="FILE",
                        help="use this .cl file (e.g. a fix) instead of the kernel.cl saved "
                             "in the folder")
    parser.add_argument("--kernel", default=None, metavar="REF",
                        help="the Python kernel: path/file.py::NAME or a library spec name "
                             "(needed when it came from your own file; the folder's is never "
                             "imported)")


def _outcome_line(outcome: ReplayOutcome, debug: bool = False) -> tuple[str, bool]:
    name = f"  {outcome.device:<12}"
    if outcome.skipped:
        return name + f"skipped ({outcome.skipped})", False
    if outcome.error:
        return name + "ERROR   " + one_line(outcome.error, debug), True
    comparison = outcome.comparison
    assert comparison is not None
    if comparison.equal:
        return name + "agree" + (f" ({_ms(comparison.time_ns)})" if comparison.time_ns else ""), \
            False
    lines = [c.describe() for c in comparison.outputs.comparisons.values() if not c.equal]
    if comparison.reference is not None and not comparison.reference.equal:
        lines.append(comparison.reference.describe())
    lines += describe_findings(comparison.findings, comparison.checks)
    label = "DIFFER" if not comparison.outputs.equal else "FOUND"
    return name + f"{label} ({', '.join(comparison.disagreeing)})\n" + _indent(
        "\n".join(lines), 6), True


def replay_main(args: argparse.Namespace) -> int:
    def say(text: str) -> None:  # what a folder holds may hold terminal escapes
        print(terminal_safe(text))

    with damaged_failure_files(args.path), opencl_errors():
        failure, case, outcomes = replay(args.path, args.devices,
                                         all_devices=args.all_devices, cl_source=args.cl,
                                         kernel=args.kernel,
                                         announce=lambda plan: say(f"replay: {plan}"))
    say(f"replay {failure.path}: {failure.spec_name}, failed on {failure.device} "
        f"(seed {failure.seed}); {case.describe()}")
    failed = False
    for outcome in outcomes:
        line, bad = _outcome_line(outcome, _debug(args))
        failed |= bad
        say(line)
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------
# Standalone entry point (clsim.cli is the real one)


def main(argv: Sequence[str] | None = None) -> int:
    from clsim.cli import OneLineParser

    parser = OneLineParser(prog="python -m verify.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text, add, run in (
            ("devices", DEVICES_HELP, add_devices_arguments, devices_main),
            ("verify", VERIFY_HELP, add_verify_arguments, verify_main),
            ("replay", REPLAY_HELP, add_replay_arguments, replay_main)):
        p = sub.add_parser(name, help=help_text)
        add(p)
        p.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except SimulationError as err:
        print(f"clsim {args.command}: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
