"""``clsim run NAME``: run a library kernel on generated input and check it against numpy.

Prints what ran (ND-range, groups, time, work-items per second), what was compiled and how
long each variant took, which checks ran and what they found, the tolerance used and the
largest error found, and with ``--traffic`` the traffic table; on stderr, what is being
compiled when that takes a while and a progress bar on a terminal (``clsim.commands.progress``).
Traffic is counted only when asked: its variant is a second compile (seconds on a cold cache,
once per machine for the step counter), which a first ``clsim run`` must not pay unasked. With
``--traffic`` that launch compiles and runs beside the main one
(``clsim.commands.traffic_launch``). Exit code 1
on a mismatch or a finding; errors from the simulator propagate to the CLI, which prints them
as one line.
"""

from __future__ import annotations

import os

import numpy as np

import clsim
from clsim.commands import first_run, specs
from clsim.commands import options as opt
from clsim.commands.checks_beside import WHAT as BESIDE
from clsim.commands.checks_beside import ChecksBeside
from clsim.commands.progress import RunProgress
from clsim.commands.traffic_launch import PURPOSE as TRAFFIC
from clsim.commands.traffic_launch import PendingTraffic, TrafficOutcome, TrafficRequest
from clsim.errors import DataRaceError, SimulationError, UninitializedReadError
from clsim.runtime.images import Image
from clsim.spec import differing_elements

HELP = "run a kernel on generated input and compare with its numpy reference"


CHECKS_RUN = {  # what each --check mode runs (docs/checks.md has the same table)
    "default": ("bounds", "barrier divergence"),
    "bounds": ("bounds", "barrier divergence"),
    "races": ("bounds", "barrier divergence", "data races"),
    "uninit": ("bounds", "barrier divergence", "uninitialised reads"),
    "all": ("bounds", "barrier divergence", "data races", "uninitialised reads"),
    "none": (),
}
PURPOSE = {  # how the compile note names the variant each --check mode compiles
    "default": "", "bounds": "",
    "races": "with race checking",
    "uninit": "with uninitialised-read checking",
    "all": "with race and uninitialised-read checking",
    "none": "without checks",
}
_COLLECTING = ("all", "races", "uninit")  # the modes whose findings --report-all collects


def add_arguments(parser) -> None:
    parser.add_argument("name", help="kernel name (see 'clsim list') or path/to/file.py::NAME "
                                     "(a KernelSpec in your own file, docs/kernelspec.md)")
    parser.add_argument("--shape", help="problem shape: KEY=N[,KEY=N] or AxB in the order of "
                                        "the kernel's shape keys (e.g. rows=64,cols=1000)")
    parser.add_argument("--local-size", type=opt.local_size,
                        help="work-group size, e.g. 128 or 16,16")
    parser.add_argument("--seed", type=opt.seed, default=0,
                        help="input generator seed, 0 to 2**32-1 (default 0)")
    parser.add_argument("--no-jit", action="store_true",
                        help="run the generated code as plain Python (slow; for pdb)")
    parser.add_argument("--subgroup-size", type=opt.positive_int,
                        help="sub-group size (default: the kernel's, else 32)")
    parser.add_argument("--traffic", action="store_true",
                        help="also count memory traffic (a second launch, compiled beside the "
                             "main one) and print its table")
    parser.add_argument("--check", default="all", choices=tuple(CHECKS_RUN),
                        help="which checks to run (default all: bounds, barrier divergence, "
                             "data races, uninitialised reads)")
    parser.add_argument("--no-checks", action="store_const", const="default", dest="check",
                        help="only the engine's bounds and barrier-divergence checks (faster; "
                             "the same as --check default)")
    parser.add_argument("--report-all", action="store_true",
                        help="with --check all, races or uninit: collect every finding instead "
                             "of stopping at the first")
    parser.add_argument("--explain-speed", action="store_true",
                        help="run in a child that compiles afresh and print which loops LLVM "
                             "vectorised in the generated functions, and why not (slow)")
    parser.add_argument("--timeout", type=opt.positive_seconds, metavar="SECONDS",
                        help="stop the kernel after this many seconds (compilation not counted)")


def _max_errors(expected: np.ndarray, actual: np.ndarray) -> tuple[float, float, bool]:
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(a)
    diff = np.where(both_nan, 0.0, np.abs(a - e))
    rel = diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny)
    return float(np.nanmax(diff, initial=0.0)), float(np.nanmax(rel, initial=0.0)), bool(
        np.isnan(diff).any())


def main(args) -> int:
    started = _process_seconds()  # Python's start and the imports, before this command
    code = _main_checked(args)
    _print_wall(started)
    return code


def _process_seconds() -> float | None:
    """Seconds since this process started, from the kernel's clock (Linux ``/proc``), or
    None where that is not known."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22
            return float(uptime.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _print_wall(started: float | None) -> None:
    """The whole wait, which the compile seconds above are only part of: a first run also
    starts Python and imports numpy, Numba and clsim (about a second)."""
    now = _process_seconds()
    if started is not None and now is not None:
        print(f"  wall: {now:.2f} s from the process's start to this line, of it {started:.2f} s "
              f"before the command (Python's start, the imports of clsim, numpy and Numba)")


def _main_checked(args) -> int:
    if args.explain_speed:  # the same command, minus this option, in a remark-printing child
        from clsim.explain_speed import print_explained
        return print_explained(["-m", "clsim.cli", *_same_command(args)])
    if args.report_all and args.check not in _COLLECTING:
        raise SimulationError(
            f"--report-all collects the findings of race and uninitialised-read checks, which "
            f"--check {args.check} does not run. Add --check all (or races, uninit)")
    options_jit = not args.no_jit
    checked = args.check in first_run.NEEDS_CHECKS
    with ChecksBeside(options_jit and checked) as beside:  # a first run's second process
        return _main(args, beside, first_run.prepare("checks", options_jit)
                     if checked and not beside.started else beside.start_s)


def _main(args, beside: ChecksBeside, once_s: float) -> int:
    """The run, with the seconds the checks' helpers took before it (``once_s``) and their
    second process, if any."""
    spec = specs.load_spec(args.name)
    shape = specs.parse_shape(args.shape, dict(spec.default_shape))
    inputs = specs.make_inputs(spec, shape, args.seed)
    local = specs.parse_local(args.local_size)
    launch = spec.launch(inputs, shape, local)
    sg = spec.subgroup_size if args.subgroup_size is None else args.subgroup_size
    options = {"jit": not args.no_jit, "subgroup_size": sg, "checks": args.check}
    if args.report_all:
        options["report_all"] = True
    work = specs.fresh(inputs)
    run_args = specs.run_args(spec, inputs, work)
    try:
        if args.traffic:
            request = TrafficRequest(args.name, shape, args.seed, local, options, args.timeout)
            with PendingTraffic(request) as pending:  # a child compiles it meanwhile (JIT)
                result = _run(spec, launch, run_args, options, args.timeout)
                counted, failure = _traffic_outcome(pending)
        else:
            result = _run(spec, launch, run_args, options, args.timeout)
            counted, failure = TrafficOutcome(None, 0.0), None
    except (DataRaceError, UninitializedReadError) as finding:
        return _stopped_by(spec.name, args.check, finding)
    _print_run(spec, result, shape)
    _print_compile(spec.name, args.check, result.compile_s + once_s, counted, beside.seconds)
    findings = getattr(result, "findings", None) or []
    _print_findings(args.check, args.report_all, findings)
    ok = _print_check(spec, inputs, work)
    if failure is not None:  # the main launch's results are out first, as before
        raise failure
    if args.traffic:
        _print_traffic(counted.traffic)
    else:
        print("  traffic: not counted (add --traffic)")
    return 0 if ok and not findings else 1


def _same_command(args) -> list[str]:
    """``clsim run`` with the options ``args`` was parsed from, less --explain-speed."""
    argv = ["run", args.name, "--seed", str(args.seed), "--check", args.check]
    for flag, value in (("--shape", args.shape), ("--subgroup-size", args.subgroup_size),
                        ("--timeout", args.timeout)):
        if value is not None:
            argv += [flag, str(value)]
    if args.local_size is not None:
        argv += ["--local-size", ",".join(map(str, args.local_size))]
    argv += [flag for flag, on in (("--no-jit", args.no_jit), ("--traffic", args.traffic),
                                   ("--report-all", args.report_all)) if on]
    return argv


def _stopped_by(name: str, check: str, finding: SimulationError) -> int:
    """The first finding stopped the launch (no --report-all): a result, not an error."""
    print(f"{name}: stopped by the first finding")
    print(f"  checks: {', '.join(CHECKS_RUN[check])}: found "
          + ("a data race" if isinstance(finding, DataRaceError) else "an uninitialised read")
          + " (--report-all runs on and lists every finding)")
    print("  " + str(finding).splitlines()[0])
    return 1


def _traffic_outcome(pending: PendingTraffic) -> tuple[TrafficOutcome, SimulationError | None]:
    """The traffic launch's outcome, or the simulator's error it stopped with (e.g. a bounds
    error that --check none let the main launch pass), raised once the main run is shown."""
    try:
        return pending.result(), None
    except SimulationError as err:
        return TrafficOutcome(None, 0.0), err


def _run(spec, launch, run_args, options, timeout):
    also = first_run.HELPERS[1] if first_run.helpers_pending(options["jit"]) else ""
    with RunProgress(spec.name, purpose=PURPOSE[options["checks"]], also=also) as progress:
        return clsim.run(spec.kernel, launch.global_size, launch.local_size, run_args,
                         timeout_s=timeout, progress=progress, **options)


def _print_compile(name: str, check: str, main_s: float, traffic: TrafficOutcome,
                   beside_s: float | None = None) -> None:
    """Every variant this command compiled, with its seconds (none: nothing was compiled);
    ``beside_s``: the seconds of the checks' helpers compiled in a second process meanwhile
    (``main_s`` includes any wait for them)."""
    helpers = "" if beside_s is None else f" (with {BESIDE} compiled beside it, {beside_s:.2f} s)"
    parts = [(f"{name} {PURPOSE[check]}".rstrip(), main_s, helpers),
             (f"{name} {TRAFFIC}", traffic.compile_s, "")]
    compiled = [f"{what} {s:.2f} s{also}" for what, s, also in parts if s > 0]
    if compiled:
        both = all(s > 0 for _, s, _also in parts)
        side = (" (side by side)" if traffic.beside else " (one after the other)") if both else ""
        print(f"  compile: {', '.join(compiled)}{side}")


def _print_findings(check: str, report_all: bool, findings) -> None:
    ran = CHECKS_RUN[check]
    if not ran:
        print("  checks: none (--check none)")
        return
    found = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}" if report_all \
        else "nothing found"
    print(f"  checks: {', '.join(ran)}: {found}")
    for finding in findings:
        print(getattr(finding, "describe", lambda f=finding: str(f))())


def _print_run(spec, result, shape) -> None:
    shape_text = " ".join(f"{k}={v}" for k, v in shape.items())
    mode = "jit" if result.jit else "no-jit (plain Python)"
    par = ", groups in parallel" if result.parallel else ""
    print(f"{spec.name}: {shape_text}")
    print(f"  ND-range global={result.global_size} local={result.local_size}, "
          f"{result.work_groups} work-groups, {result.work_items} work-items ({mode}{par})")
    print(f"  time {_seconds(result.elapsed_s)}, {_rate(result.work_items_per_s)}")


def _seconds(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def _rate(per_s: float) -> str:
    """Work-items per second with a unit that keeps three significant digits."""
    for scale, unit in ((1e9, "G "), (1e6, "M "), (1e3, "k ")):
        if per_s >= scale:
            return f"{per_s / scale:.3g} {unit}work-items/s"
    return f"{per_s:.3g} work-items/s"


def _print_check(spec, inputs, work) -> bool:
    expected = spec.reference(inputs)
    rtol, atol = spec.tolerance
    ok = True
    for name, want in expected.items():
        got = work[name]
        got = got.data if isinstance(got, Image) else got  # a write_only image's pixels
        if np.issubdtype(want.dtype, np.integer) or want.dtype.names:
            bad = differing_elements(got, want)
            kind = "byte-exact struct" if want.dtype.names else "exact integer"
            status = "OK" if bad == 0 else f"MISMATCH ({bad} elements differ)"
            print(f"  check {name}: {kind} comparison: {status}")
            ok &= bad == 0
            continue
        abs_err, rel_err, nan_mismatch = _max_errors(want, got)
        close = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        status = "OK" if close and not nan_mismatch else "MISMATCH"
        print(f"  check {name}: tolerance rtol={rtol:g} atol={atol:g}; max abs error "
              f"{abs_err:.3g}, max rel error {rel_err:.3g}: {status}")
        ok &= close
    return ok


def _print_traffic(traffic) -> None:
    if traffic is None:
        print("  traffic: this launch cannot be counted (see docs/traffic-model.md)")
        return
    print(traffic.format_table())
