"""``clsim report NAME [NAME...]``: traffic and roofline of every variant of kernel families.

A NAME is a kernel or a family (``clsim report softmax`` runs ``softmax`` and
``softmax_subgroup``; ``clsim report scan reduce`` two families), or ``path/file.py::SPEC`` (a
KernelSpec in a user file, found as ``clsim verify`` finds it). Every variant runs with
traffic counting on the same input (each input generator gets the same seed) and is checked
against its numpy reference; the variants are printed side by side (bytes, sectors, coalescing,
bank-conflict replays, flops, intensity, bound, predicted time on the profile), with a
column summing each pipeline's stages, with ``--json PATH`` written as JSON (nothing is written
unasked: a report is a table on stdout) and, with ``--plot FILE.png``, drawn on a roofline
chart. ``--device NAME`` adds, per device, each variant's
``.cl`` twin timed there against that device's roofs (``verify.timing``). Exit code 1 when a
variant disagrees with its reference.

This module only orchestrates: counting is ``clsim.traffic.instrument``, the table, JSON and
plot are ``clsim.traffic.report``, device times and roofs ``verify.timing``. The CLI imports
it to build its parser, so what only a running report needs (the engine, the kernel library,
matplotlib, the optional verifier) is imported in the functions that use it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from clsim.commands import options  # bad values are refused before any variant runs
from clsim.commands.progress import RunProgress
from clsim.commands.specs import parse_local, parse_shape
from clsim.commands.traffic_launch import PURPOSE as TRAFFIC
from clsim.errors import DeviceError, SimulationError
from clsim.traffic.roofline import BASES

HELP = "traffic and roofline report of kernel families on a device profile"
INTERPRETERS = ("oclgrind",)  # its times say nothing of hardware: not in --device all


def add_arguments(parser) -> None:
    parser.add_argument("names", nargs="+", metavar="NAME",
                        help="kernel or family names (a kernel brings its whole family), or "
                             "path/to/file.py::SPEC for a KernelSpec in your own file")
    parser.add_argument("--profile", default="h200",
                        help="device profile: a name from clsim/profiles or a .toml path "
                             "(default h200)")
    parser.add_argument("--precision", choices=("fp32", "fp16"), default="fp32",
                        help="which compute roof to use (default fp32)")
    parser.add_argument("--shape", help="problem shape: KEY=N[,KEY=N] or AxB (as 'clsim run')")
    parser.add_argument("--local-size", type=options.local_size,
                        help="work-group size for every variant, e.g. 128")
    parser.add_argument("--seed", type=options.seed, default=0,
                        help="input generator seed (default 0)")
    parser.add_argument("--no-jit", action="store_true", help="run as plain Python (slow)")
    parser.add_argument("--json", metavar="PATH", type=options.output_file(".json"),
                        help="also write the report as JSON to PATH (e.g. report.json)")
    parser.add_argument("--plot", metavar="FILE.png", type=options.output_file(".png"),
                        help="draw a roofline chart (matplotlib); with --device also "
                             "FILE-DEVICE.png per device, with its measured points")
    parser.add_argument("--basis", choices=tuple(BASES),
                        help="which bytes the intensity and the floor count: unique, dram "
                             "(through the cache model) or sectors (uncached; the default)")
    parser.add_argument("--device", action="append", metavar="NAME",
                        help="also time each variant's .cl twin on this OpenCL device (see "
                             "'clsim devices'; repeat it, or 'all') against that device's "
                             "roofs (measured once for CPUs)")


def variants(names: list[str], folders: dict | None = None) -> list:
    """The specs of every family named (or of each named kernel's family), in family order,
    each once. ``folders`` (when given) gets, per spec from a user file, the folder its
    ``.cl`` twin is found in."""
    from clsim.spec import all_specs

    specs = all_specs()
    families = {}
    for spec in specs.values():
        families.setdefault(spec.family_name, []).append(spec)
    chosen: dict[str, object] = {}
    for name in names:
        if "::" in name:  # path/file.py::SPEC, as clsim verify takes it
            from verify.replay import load_spec_ref

            spec, _origin, folder = load_spec_ref(name)
            if folders is not None:
                folders[spec.name] = folder
            chosen.setdefault(spec.name, spec)
            continue
        if name in specs:
            family = specs[name].family_name
        elif name in families:
            family = name
        else:
            raise SimulationError(
                f"no kernel or family named {name!r}. Kernels: {', '.join(specs)}; families: "
                f"{', '.join(sorted(families))}")
        for spec in sorted(families[family], key=lambda s, f=family: _family_order(s, f)):
            chosen.setdefault(spec.name, spec)
    return list(chosen.values())


def _family_order(spec, family: str) -> tuple:
    """The family's namesake first; a pipeline's stages together, in launch order."""
    return spec.name != family, spec.pipeline or spec.name, spec.stage, spec.name


def run_variant(spec, shape_text: str | None, local_text: str | None, seed: int, jit: bool,
                profile: str):
    """Run one variant with traffic counting; returns (result, output ok?)."""
    import clsim
    from clsim.compiler.frontend import parse
    from clsim.spec import matches_reference

    shape = parse_shape(shape_text, dict(spec.default_shape))
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    pristine = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    launch = spec.launch(inputs, shape, parse_local(local_text))
    args = tuple(inputs[name] for name in parse(spec.kernel).params)
    with RunProgress(spec.name, purpose=TRAFFIC, bar=False) as progress:
        result = clsim.run(spec.kernel, launch.global_size, launch.local_size, args, jit=jit,
                           subgroup_size=spec.subgroup_size, traffic=True, profile=profile,
                           progress=progress)
    ok = all(matches_reference(inputs[name], want, spec.tolerance)
             for name, want in spec.reference(pristine).items())
    return result, ok


def _with_pipelines(specs: list, rows: list, profile, precision: str) -> list:
    """The rows, with a combined row (sum of the stages) after the last stage of each
    pipeline that has every stage in the report."""
    from clsim.spec import pipeline_stages
    from clsim.traffic.report import combined_row

    out = []
    for index, (spec, row) in enumerate(zip(specs, rows, strict=True)):
        out.append(row)
        if spec.pipeline is None:
            continue
        stages = [s.name for s in pipeline_stages(spec.pipeline)]
        later = [s for s in specs[index + 1:] if s.pipeline == spec.pipeline]
        chosen = {s.name: r for s, r in zip(specs, rows, strict=True)}
        if not later and len(stages) > 1 and all(name in chosen for name in stages):
            out.append(combined_row(f"{spec.pipeline} (sum)", [chosen[n] for n in stages],
                                    profile, precision))
    return out


def main(args) -> int:
    from tqdm import tqdm

    from clsim.profiles import load_profile
    from clsim.traffic.report import compare_table, write_report_json
    from clsim.traffic.roofline import roofline

    profile = load_profile(args.profile)
    if args.basis == "dram" and not profile.has_caches:
        raise SimulationError(
            f"--basis dram: profile {profile.name} describes no caches, so there are no DRAM "
            "bytes to count. Use --basis unique or sectors, or a profile with caches")
    folders: dict = {}
    specs = variants(args.names, folders)
    devices = _devices(args.device)  # before any variant runs: a bad name is refused first
    rows, failed, compiled = [], [], []
    from clsim.commands import first_run

    once_s = first_run.prepare("traffic", not args.no_jit)  # said on stderr, counted below
    if once_s > 0:
        compiled.append(f"{first_run.PARTS['traffic'][1]} {once_s:.2f} s")
    bar = tqdm(specs, desc="clsim report", unit="variant", file=sys.stderr, disable=None,
               leave=False)
    for spec in bar:
        bar.set_postfix_str(spec.name)
        result, ok = run_variant(spec, args.shape, args.local_size, args.seed, not args.no_jit,
                                 args.profile)
        if not ok:
            failed.append(spec.name)
        if result.compile_s > 0:
            compiled.append(f"{spec.name} {result.compile_s:.2f} s")
        rows.append((spec.name, result.traffic,
                     roofline(result.traffic.totals, profile, args.precision, args.basis)))
    bar.close()
    table_rows = _with_pipelines(specs, rows, profile, args.precision)
    print(compare_table(table_rows))
    if compiled:
        print(f"compile ({TRAFFIC}): {', '.join(compiled)}")
    for name in failed:
        print(f"{name}: output disagrees with its numpy reference (see 'clsim run {name}')")
    measured = [measure_on(info, specs, rows, args, folders) for info in devices]
    for info, _profile, device_rows in measured:
        print(f"\nmeasured on {info.short_name} ({info.full_name}):")
        print(compare_table(device_rows))
    if args.json:
        path = write_report_json(args.json, table_rows, profile,
                                 [(i.short_name, p, r) for i, p, r in measured])
        print(f"wrote {path}")
    if args.plot:
        _plots(args.plot, table_rows, profile, measured, args.precision)
    return 1 if failed else 0


def _plots(path: str, rows: list, profile, measured: list, precision: str) -> None:
    """The model's chart, then one per device with its measured points: FILE-DEVICE.png."""
    from clsim.traffic.report import plot_roofline

    print(f"wrote {plot_roofline(path, rows, profile, precision)}")
    where = Path(path)
    for info, device_profile, device_rows in measured:
        out = where.with_name(f"{where.stem}-{info.short_name}{where.suffix}")
        drawn = plot_roofline(out, device_rows, device_profile, precision, info.short_name)
        print(f"wrote {drawn}")


def _devices(names: list[str] | None) -> list:
    """The devices --device names ('all': every usable device but interpreters)."""
    if not names:
        return []
    from verify.devices import list_devices
    from verify.runner import usable_device

    if "all" in names:
        return [d for d in list_devices() if d.short_name not in INTERPRETERS
                and _usable(d)]
    chosen = [usable_device(name) for name in dict.fromkeys(names)]
    for info in chosen:
        if info.short_name in INTERPRETERS:
            raise SimulationError(
                f"--device {info.short_name}: an interpreter; its kernel times say nothing of "
                "hardware, and its roofs would take hours to measure. Pick a hardware device "
                "('clsim devices')")
    return chosen


def _usable(info) -> bool:
    from verify.probe import health

    return health(info).usable


def measure_on(info, specs: list, rows: list, args, folders: dict) -> tuple:
    """(device, its profile, its rows): each variant's twin timed on ``info``, placed under
    the device's roofs with the traffic counted on the simulator; a variant the device cannot
    run has no measured time (its reason is printed)."""
    from clsim.traffic.roofline import roofline
    from verify.timing import device_profile, is_cached, variant_time_s

    if not is_cached(info) and info.device_type == "cpu":
        print(f"clsim: measuring the peaks of {info.short_name} with probe kernels (once; "
              "cached afterwards)...", file=sys.stderr, flush=True)
    profile = device_profile(info)
    device_rows = []
    for spec, (label, traffic, _roof) in zip(specs, rows, strict=True):
        shape = parse_shape(args.shape, dict(spec.default_shape))
        try:
            seconds = variant_time_s(spec, shape, args.seed, parse_local(args.local_size),
                                     info, folders.get(spec.name))
        except DeviceError as err:
            print(f"{label} on {info.short_name}: not timed: {str(err).splitlines()[0]}")
            seconds = None
        device_rows.append((label, traffic, roofline(traffic.totals, profile, args.precision,
                                                     args.basis), seconds))
    return info, profile, _with_pipelines(specs, device_rows, profile, args.precision)
