"""``clsim run NAME``: run a library kernel on generated input and check it against numpy.

Prints what ran (ND-range, groups, time, work-items per second), the tolerance used and the
largest error found, and a traffic summary per buffer. Exit code 1 on a mismatch; errors from
the simulator propagate to the CLI, which prints them as one line.
"""

from __future__ import annotations

import numpy as np

HELP = "run a kernel on generated input and compare with its numpy reference"


def add_arguments(parser) -> None:
    parser.add_argument("name", help="kernel name (see 'clsim list')")
    parser.add_argument("--shape", help="problem shape: KEY=N[,KEY=N] or AxB in the order of "
                                        "the kernel's shape keys (e.g. rows=64,cols=1000)")
    parser.add_argument("--local-size", help="work-group size, e.g. 128 or 16,16")
    parser.add_argument("--seed", type=int, default=0, help="input generator seed (default 0)")
    parser.add_argument("--no-jit", action="store_true",
                        help="run the generated code as plain Python (slow; for pdb)")
    parser.add_argument("--subgroup-size", type=int, help="sub-group size (default: the "
                                                          "kernel's, else 32)")
    parser.add_argument("--traffic", action="store_true", help="print the full traffic table")
    parser.add_argument("--check", default="default",
                        choices=("default", "all", "races", "uninit", "bounds", "none"),
                        help="which checks to run (default: bounds and barrier divergence)")
    parser.add_argument("--report-all", action="store_true",
                        help="with --check: collect every finding instead of stopping at one")


def parse_shape(text: str | None, defaults: dict) -> dict:
    from clsim.errors import SimulationError

    shape = dict(defaults)
    if not text:
        return shape
    keys = list(defaults)
    if "=" not in text:
        values = text.lower().replace("x", ",").split(",")
        if len(values) != len(keys):
            raise SimulationError(f"--shape {text}: this kernel's shape is "
                                  f"{'x'.join(keys)}, e.g. --shape {'x'.join('64' for _ in keys)}")
        pairs = zip(keys, values, strict=True)
    else:
        pairs = (item.split("=", 1) for item in text.split(","))
    for key, value in pairs:
        key = key.strip()
        if key not in defaults:
            raise SimulationError(f"--shape: unknown key {key!r}; this kernel takes "
                                  f"{', '.join(keys)}")
        try:
            shape[key] = int(value)
        except ValueError:
            raise SimulationError(f"--shape: {key}={value!r} is not an integer") from None
        if shape[key] <= 0:
            raise SimulationError(f"--shape: {key} must be positive")
    return shape


def parse_local(text: str | None):
    from clsim.errors import SimulationError

    if not text:
        return None
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise SimulationError(f"--local-size {text}: write e.g. 128 or 16,16") from None


def _fresh(inputs: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


def _max_errors(expected: np.ndarray, actual: np.ndarray) -> tuple[float, float, bool]:
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(a)
    diff = np.where(both_nan, 0.0, np.abs(a - e))
    rel = diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny)
    return float(np.nanmax(diff, initial=0.0)), float(np.nanmax(rel, initial=0.0)), bool(
        np.isnan(diff).any())


def main(args) -> int:
    import clsim
    from clsim.spec import get_spec

    spec = get_spec(args.name)
    shape = parse_shape(args.shape, dict(spec.default_shape))
    inputs = spec.make_inputs(np.random.default_rng(args.seed), shape)
    launch = spec.launch(inputs, shape, parse_local(args.local_size))
    sg = args.subgroup_size or spec.subgroup_size
    options = {"jit": not args.no_jit, "subgroup_size": sg, "checks": args.check}
    if args.report_all:
        options["report_all"] = True
    work = _fresh(inputs)
    run_args = tuple(work[name] if isinstance(inputs[name], np.ndarray) else inputs[name]
                     for name in _param_names(spec, inputs, launch))
    result = clsim.run(spec.kernel, launch.global_size, launch.local_size, run_args, **options)
    _print_run(spec, result, shape)
    findings = getattr(result, "findings", None) or []
    for finding in findings:
        print(getattr(finding, "describe", lambda f=finding: str(f))())
    ok = _print_check(spec, inputs, work)
    _print_traffic(spec, inputs, launch, shape, options, args.traffic)
    return 0 if ok and not findings else 1


def _param_names(spec, inputs, launch) -> list[str]:
    """Kernel parameter names in order (Launch.args holds the values in that order)."""
    from clsim.compiler.frontend import parse

    return parse(spec.kernel).params


def _print_run(spec, result, shape) -> None:
    shape_text = " ".join(f"{k}={v}" for k, v in shape.items())
    mode = "jit" if result.jit else "no-jit (plain Python)"
    par = ", groups in parallel" if result.parallel else ""
    print(f"{spec.name}: {shape_text}")
    print(f"  ND-range global={result.global_size} local={result.local_size}, "
          f"{result.work_groups} work-groups, {result.work_items} work-items ({mode}{par})")
    compile_note = f", compile {result.compile_s:.2f} s" if result.compile_s else ""
    print(f"  time {result.elapsed_s * 1e3:.2f} ms, "
          f"{result.work_items_per_s / 1e6:.1f} M work-items/s{compile_note}")


def _print_check(spec, inputs, work) -> bool:
    expected = spec.reference(inputs)
    rtol, atol = spec.tolerance
    ok = True
    for name, want in expected.items():
        got = work[name]
        if np.issubdtype(want.dtype, np.integer):
            bad = int(np.count_nonzero(got != want))
            status = "OK" if bad == 0 else f"MISMATCH ({bad} elements differ)"
            print(f"  check {name}: exact integer comparison: {status}")
            ok &= bad == 0
            continue
        abs_err, rel_err, nan_mismatch = _max_errors(want, got)
        close = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        status = "OK" if close and not nan_mismatch else "MISMATCH"
        print(f"  check {name}: tolerance rtol={rtol:g} atol={atol:g}; max abs error "
              f"{abs_err:.3g}, max rel error {rel_err:.3g}: {status}")
        ok &= close
    return ok


def _print_traffic(spec, inputs, launch, shape, options, full: bool) -> None:
    import clsim

    work = _fresh(inputs)
    run_args = tuple(work[name] if isinstance(inputs[name], np.ndarray) else inputs[name]
                     for name in _param_names(spec, inputs, launch))
    try:
        result = clsim.run(spec.kernel, launch.global_size, launch.local_size, run_args,
                           **{**options, "traffic": True, "checks": "default"})
    except clsim.InvalidArgumentError:
        return
    traffic = result.traffic
    if traffic is None:
        print("  traffic: counting unavailable in this build")
        return
    if full:
        print(traffic.format_table())
        return
    per_buffer: dict[tuple[str, str], list[int]] = {}
    for site in traffic.sites:
        if site["space"] != "global":
            continue
        entry = per_buffer.setdefault((site["buffer"], site["kind"]), [0, 0])
        entry[0] += site["bytes"]
        entry[1] += site["sectors"]
    print("  traffic (global memory):")
    for (buffer, kind), (nbytes, sectors) in sorted(per_buffer.items()):
        verb = "loaded" if kind == "load" else ("stored" if kind == "store" else kind)
        print(f"    {buffer:<12} {verb:<7} {nbytes:>12,} bytes in {sectors:>10,} sectors")
