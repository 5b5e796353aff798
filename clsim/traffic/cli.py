"""``clsim report NAME [NAME...]``: traffic and roofline of every variant of kernel families.

A NAME is a kernel or a family (``clsim report softmax`` runs ``softmax`` and
``softmax_subgroup``; ``clsim report scan reduce`` two families), or ``path/file.py::SPEC`` (a
KernelSpec in a user file, found as ``clsim verify`` finds it). Every variant runs with
traffic counting on the same input (each input generator gets the same seed) and is checked
against its numpy reference; the variants are printed side by side (bytes, sectors, coalescing,
bank-conflict replays, flops, intensity, bound, predicted time on the profile), written to
``report.json`` and, with ``--plot FILE.png``, drawn on a roofline chart. Exit code 1 when a
variant disagrees with its reference.

This module only orchestrates: counting is ``clsim.traffic.instrument``, the table, JSON and
plot are ``clsim.traffic.report``.
"""

from __future__ import annotations

import sys

import numpy as np

HELP = "traffic and roofline report of kernel families on a device profile"


def add_arguments(parser) -> None:
    from clsim.commands import options  # bad values are refused before any variant runs

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
    parser.add_argument("--json", default="report.json", metavar="PATH",
                        type=options.output_file(".json"),
                        help="where to write the JSON report (default report.json)")
    parser.add_argument("--plot", metavar="FILE.png", type=options.output_file(".png"),
                        help="draw a roofline chart (matplotlib)")


def variants(names: list[str]) -> list:
    """The specs of every family named (or of each named kernel's family), in family order,
    each once."""
    from clsim.errors import SimulationError
    from clsim.spec import all_specs

    specs = all_specs()
    families = {}
    for spec in specs.values():
        families.setdefault(spec.family_name, []).append(spec)
    chosen: dict[str, object] = {}
    for name in names:
        if "::" in name:  # path/file.py::SPEC, as clsim verify takes it
            from verify.replay import load_spec_ref

            spec = load_spec_ref(name)[0]
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
        for spec in sorted(families[family], key=lambda s: (s.name != family, s.name)):
            chosen.setdefault(spec.name, spec)
    return list(chosen.values())


def run_variant(spec, shape_text: str | None, local_text: str | None, seed: int, jit: bool,
                profile: str):
    """Run one variant with traffic counting; returns (result, output ok?)."""
    import clsim
    from clsim.commands.specs import parse_local, parse_shape
    from clsim.compiler.frontend import parse

    shape = parse_shape(shape_text, dict(spec.default_shape))
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    pristine = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    launch = spec.launch(inputs, shape, parse_local(local_text))
    args = tuple(inputs[name] for name in parse(spec.kernel).params)
    result = clsim.run(spec.kernel, launch.global_size, launch.local_size, args, jit=jit,
                       subgroup_size=spec.subgroup_size, traffic=True, profile=profile)
    rtol, atol = spec.tolerance
    ok = all(np.allclose(inputs[name], want, rtol=rtol, atol=atol, equal_nan=True)
             for name, want in spec.reference(pristine).items())
    return result, ok


def main(args) -> int:
    from tqdm import tqdm

    from clsim.profiles import load_profile
    from clsim.traffic.report import compare_table, plot_roofline, write_report_json
    from clsim.traffic.roofline import roofline

    profile = load_profile(args.profile)
    specs = variants(args.names)
    rows, failed = [], []
    bar = tqdm(specs, desc="clsim report", unit="variant", file=sys.stderr, disable=None,
               leave=False)
    for spec in bar:
        bar.set_postfix_str(spec.name)
        result, ok = run_variant(spec, args.shape, args.local_size, args.seed, not args.no_jit,
                                 args.profile)
        if not ok:
            failed.append(spec.name)
        rows.append((spec.name, result.traffic,
                     roofline(result.traffic.totals, profile, args.precision)))
    bar.close()
    print(compare_table(rows))
    for name in failed:
        print(f"{name}: output disagrees with its numpy reference (see 'clsim run {name}')")
    path = write_report_json(args.json, rows, profile)
    print(f"wrote {path}")
    if args.plot:
        print(f"wrote {plot_roofline(args.plot, rows, profile, args.precision)}")
    return 1 if failed else 0
