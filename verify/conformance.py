"""``clsim conformance``: every scalar builtin of the table it can judge, on edge values and
random draws, on the simulator (both modes) and each OpenCL device, against a correctly
rounded or exact reference. This module runs the float math builtins (ULP bounds);
``verify.conformance_exact`` the builtins whose bits the spec fixes.

For each builtin, type (float, double) and backend it reports the largest ULP distance from the
reference, the OpenCL C spec's bound (full profile, OpenCL C 7.4), and every deviation: a
result beyond the bound, a NaN where the reference has a number or the reverse, the wrong sign
of a zero for an exact function. Inputs where devices disagree among themselves are listed too.

Reference: the value in float64 (Python's ``math`` with C's special cases) rounded once to
float32 for float; for double, mpmath at 200 bits where the result is finite and nonzero (math's
value where mpmath is absent). Builtins are grouped by shape so that one kernel (one
compilation) evaluates a group. ``conformance(...)`` returns a ``ConformanceReport``;
``conformance_main`` is the CLI. The other parts of the suite (``PARTS``): the exact builtins
(``verify.conformance_exact``), vector forms (``verify.conformance_vectors``,
``verify.conformance_geometric``), half (``verify.conformance_half``), atomics
(``verify.conformance_atomics``, ``verify.conformance_atomics_local``), collectives
(``verify.conformance_collectives``) and async copies (``verify.conformance_memory``). Not
judged: work-item functions (their own tests).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from clsim.errors import DeviceError, SimulationError
from verify.conformance_refs import BOUNDS, ZERO_SIGN_FREE, bound, reference
from verify.probe_kernels import evaluate_many

F, D = np.float32, np.float64
CONFORMANCE_HELP = ("every builtin (math, integer, conversions, relational; vector forms, half, "
                    "atomics, collectives, async copies) vs a correctly rounded or exact "
                    "reference, on the simulator and each device: max ULP, the spec's bound "
                    "and deviations")


def _shapes() -> dict[tuple[int, str], list[str]]:
    """(arity, 'f' float args / 'fi' float and int) -> builtin names, from the table."""
    from clsim.compiler import builtins as table
    from clsim.compiler.builtins.math import FLOAT_ONLY

    groups: dict[tuple[int, str], list[str]] = {}
    for name, e in table.TABLE.items():
        if name not in BOUNDS or (e.family != "math" and e.family != "relational"):
            continue
        if e.types in ("float, double", FLOAT_ONLY):
            arity = e.c.count(",") + 1
            groups.setdefault((arity, "f"), []).append(name)
        elif e.types.startswith("float, double; n int"):
            groups.setdefault((2, "fi"), []).append(name)
    return groups


def edge_values(dt) -> np.ndarray:
    info = np.finfo(dt)
    tiny, big = float(info.tiny), float(info.max)
    sub = float(np.nextafter(dt(0), dt(1)))
    base = [0.0, 1.0, 0.5, 1.5, 2.5, 2.0, 3.0, 10.0, 100.5, math.pi / 2, math.pi, 1e-7,
            sub, tiny, tiny * 3.5, 2.0**24 + 1, 1e10, 1e30, big, 88.7, 709.0, 0.75, 0.25, 1e-3]
    vals = [v for b in base for v in (b, -b)] + [math.inf, -math.inf, math.nan]
    return np.array(vals, dt)


def inputs(dt, arity: int, kind: str, seed: int = 0, draws: int = 300) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    e = edge_values(dt)
    rand = [np.concatenate([rng.uniform(-10, 10, draws // 2),
                            rng.standard_normal(draws - draws // 2) *
                            10.0 ** rng.integers(-8, 9, draws - draws // 2)]).astype(dt)
            for _ in range(arity)]
    if arity == 1:
        return [np.concatenate([e, rand[0]])]
    small = e[::2] if arity == 2 else e[::5]
    grid = np.meshgrid(*([small] * arity), indexing="ij")
    cols = [np.concatenate([g.ravel(), r]) for g, r in zip(grid, rand, strict=True)]
    if kind == "fi":
        ints = np.array([0, 1, -1, 2, -2, 3, -3, 5, 127, -128, 1000, -1000], np.int32)
        n = cols[0].size
        cols[1] = np.resize(np.concatenate([ints, rng.integers(-40, 40, n).astype(np.int32)]),
                            n)
        # results beyond the range: rootn(denormal, -1), pown(huge, 2), ldexp(1, 2000), ...
        info = np.finfo(dt)
        sub = np.nextafter(dt(0), dt(1))
        xs = np.array([sub, -sub, info.tiny, info.max, -info.max, 1.0, 0.5, sub * 3], dt)
        ns = np.array([-1, -1, -1, 2, 3, 2000, -2000, -2], np.int32)
        cols = [np.concatenate([cols[0], xs]), np.concatenate([cols[1], ns])]
    return cols


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in ULPs of their type (NaN vs NaN is 0, NaN vs a number is inf)."""
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    # Python integers: int64 keys do not fit float64 exactly, nor their difference int64.
    a = got.view(ints).astype(object)
    b = want.view(ints).astype(object)
    top = 2 ** (got.dtype.itemsize * 8 - 1)
    a = np.where(a < 0, -(a + top), a)
    b = np.where(b < 0, -(b + top), b)
    d = np.abs(a - b).astype(np.float64)
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    d = np.where(nan_g & nan_w, 0.0, d)
    return np.where(nan_g != nan_w, np.inf, d)


@dataclass
class Row:
    """One builtin, type and backend."""

    builtin: str
    dtype: str
    backend: str
    max_ulp: float
    bound: float | None
    deviations: int
    examples: list = field(default_factory=list)


@dataclass
class ConformanceReport:
    rows: list[Row] = field(default_factory=list)
    disagreements: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"rows": [asdict(r) for r in self.rows],
                           "disagreements": self.disagreements, "skipped": self.skipped},
                          indent=1, default=_jsonable)

    def format(self) -> str:
        lines = [f"{'builtin':<25}{'type':<8}{'backend':<16}{'max ulp':>10}{'bound':>8}"
                 f"{'deviations':>12}"]
        for r in self.rows:
            bound = "-" if r.bound is None else f"{r.bound:g}"
            lines.append(f"{r.builtin:<24} {r.dtype:<8}{r.backend:<16}{r.max_ulp:>10g}"
                         f"{bound:>8}{r.deviations:>12}")
            lines += [f"    {ex}" for ex in r.examples[:3]]
        lines += [f"devices disagree: {d}" for d in self.disagreements[:50]]
        lines += [f"skipped: {s}" for s in self.skipped]
        return "\n".join(lines)

    @property
    def simulator_deviations(self) -> int:
        return sum(r.deviations for r in self.rows if r.backend.startswith("sim"))


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    return str(v)


def _judge(name, dt, backend, cols, got, want) -> Row:
    limit = bound(name, dt)
    d = ulp_distance(got, want)
    exact = limit == 0 and name not in ZERO_SIGN_FREE
    zero_sign = exact & (got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))
    bad = (d > limit) if limit is not None else np.isinf(d)
    bad = bad | zero_sign
    if name == "ilogb":  # FP_ILOGBNAN is INT_MIN or INT_MAX, implementation-defined
        bad = bad & ~np.isnan(cols[0])
    finite = d[np.isfinite(d)]
    examples = [{"inputs": [c[k].item() for c in cols], "got": got[k].item(),
                 "want": want[k].item(), "ulp": float(d[k])} for k in np.flatnonzero(bad)[:5]]
    return Row(name, np.dtype(dt).name, backend, float(finite.max()) if finite.size else 0.0,
               limit, int(bad.sum()), examples)


def _device_rows(device, names, cols, dt, want_rows, report) -> dict[str, np.ndarray]:
    from verify.devices import get_device

    outs: dict[str, np.ndarray] = {}
    info = get_device(device)
    if dt is D and not info.fp64:
        report.skipped.append(f"{device}: double (no fp64)")
        return outs
    for name in names:
        try:
            outs[name] = _run_device(info, name, cols, dt)
        except (DeviceError, SimulationError) as exc:
            report.skipped.append(f"{device}: {name} {np.dtype(dt).name}: "
                                  f"{str(exc).splitlines()[0]}")
    return outs


def _run_device(info, name, cols, dt) -> np.ndarray:
    from verify.clrun import run_cl
    from verify.probe_kernels import cl_source

    out_dt = np.int32 if name == "ilogb" else dt
    src = cl_source(name, [c.dtype for c in cols], [out_dt])
    if dt is D:
        src = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + src
    run = run_cl(info, src, "probe", (cols[0].size,), None, [*cols, np.zeros(cols[0].size,
                                                                             out_dt)])
    return run.buffers[-1]


PARTS = ("math", "exact", "vectors", "half", "atomics", "collectives", "memory")


def conformance(devices=(), builtins=None, draws: int = 300, seed: int = 0,
                simulator_modes=("jit", "nojit"), exact: bool = True,
                parts=PARTS) -> ConformanceReport:
    """Run the suite. ``devices``: short names (() for the simulator only); ``builtins``: names
    to restrict to (None: all). ``parts``: "math" (float math, ULP bounds), "exact" (integer
    builtins, conversions, bit casts, relational and tuple builtins:
    ``verify.conformance_exact``), "vectors" (``verify.conformance_vectors``), "half",
    "atomics" (``verify.conformance_atomics``, ``__local`` ones included), "collectives"
    (``verify.conformance_collectives``), "memory" (``verify.conformance_memory``: async
    copies, prefetch); ``exact=False`` leaves out all but "math"."""
    from verify.conformance_atomics import atomic_suite
    from verify.conformance_collectives import collective_suite
    from verify.conformance_exact import exact_suite
    from verify.conformance_half import half_suite
    from verify.conformance_memory import memory_suite
    from verify.conformance_vectors import vector_suite

    report = ConformanceReport()
    suites = {"math": float_suite, "exact": exact_suite, "vectors": vector_suite,
              "half": half_suite, "atomics": atomic_suite, "collectives": collective_suite,
              "memory": memory_suite}
    for part in (parts if exact else ("math",)):
        if part in suites:
            suites[part](devices, builtins, draws, seed, simulator_modes, report=report)
    return report


def probe_names(names, dt) -> tuple[list[str], list[str]]:
    """``names`` (one call shape) as the simulator evaluates them for ``dt``: the builtins with
    a float result and those with an int one (ilogb), one probe kernel each; half_ and native_
    exist for float only (OpenCL C 6.15.2). The JIT tests take the same lists, so they reuse
    this suite's compiled kernels."""
    if np.dtype(dt) == np.float64:
        names = [n for n in names if not n.startswith(("half_", "native_"))]
    return [n for n in names if n != "ilogb"], [n for n in names if n == "ilogb"]


def float_suite(devices, builtins, draws, seed, simulator_modes, report) -> None:
    """The float math part: every math builtin with a ULP bound, float and double."""
    for (arity, kind), names in _shapes().items():
        names = [n for n in names if builtins is None or n in builtins]
        for dt in (F, D):
            floats, ints = probe_names(names, dt)
            names = [n for n in names if n in floats or n in ints]
            if not names:
                continue
            cols = inputs(dt, arity, kind, seed, draws)
            wants = {n: reference(n, cols, dt) for n in names}
            results: dict[str, dict[str, np.ndarray]] = {}
            for mode in simulator_modes:
                got = {}
                if floats:
                    got.update(zip(floats, evaluate_many(floats, cols, dt, jit=mode == "jit"),
                                   strict=True))
                if ints:
                    got.update(zip(ints, evaluate_many(ints, cols, np.int32,
                                                       jit=mode == "jit"), strict=True))
                results[f"sim-{mode}"] = got
            for device in devices:
                results[device] = _device_rows(device, names, cols, dt, wants, report)
            for backend, got in results.items():
                for n, g in got.items():
                    if n == "ilogb":
                        g = g.astype(np.float64).astype(dt)
                    report.rows.append(_judge(n, dt, backend, cols, g, wants[n]))
            _disagreements(report, results, list(devices), cols, dt)


def _disagreements(report, results, devices, cols, dt) -> None:
    present = [d for d in devices if results.get(d)]
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            for name in set(results[a]) & set(results[b]):
                x, y = results[a][name], results[b][name]
                differ = ~((x == y) & (np.signbit(x) == np.signbit(y)) |
                           (np.isnan(x) & np.isnan(y)))
                for k in np.flatnonzero(differ)[:3]:
                    report.disagreements.append({
                        "builtin": name, "dtype": np.dtype(dt).name,
                        "inputs": [c[k].item() for c in cols],
                        a: x[k].item(), b: y[k].item()})


def format_markdown(report: ConformanceReport) -> str:
    """The tables of docs/conformance.md: deviations from the spec per backend, and the inputs
    where devices disagree (first example per builtin, type and pair)."""
    lines = ["| builtin | type | backend | max ulp | bound | deviations | example (inputs -> got, "
             "want) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in report.rows:
        if r.deviations:
            ex = r.examples[0] if r.examples else {}
            lines.append(f"| {r.builtin} | {r.dtype} | {r.backend} | {r.max_ulp:g} | "
                         f"{'-' if r.bound is None else f'{r.bound:g}'} | {r.deviations} | "
                         f"{ex.get('inputs')} -> {ex.get('got')!r}, {ex.get('want')!r} |")
    groups: dict[tuple, list[dict]] = {}
    for d in report.disagreements:
        pair = tuple(k for k in d if k not in ("builtin", "dtype", "inputs"))
        groups.setdefault((d["builtin"], d["dtype"], pair), []).append(d)
    lines += ["", "| builtin | type | devices | inputs | values |",
              "| --- | --- | --- | --- | --- |"]
    for (name, dtype, pair), ds in sorted(groups.items()):
        d = ds[0]
        values = ", ".join(f"{k}: {d[k]!r}" for k in pair)
        lines.append(f"| {name} | {dtype} | {' vs '.join(pair)} | {d['inputs']} | {values} |")
    return "\n".join(lines)


def add_conformance_arguments(parser) -> None:
    parser.add_argument("-d", "--device", action="append", default=None, metavar="D",
                        help="a device short name; repeat for several (default: every device)")
    parser.add_argument("--simulator-only", action="store_true", help="no devices")
    parser.add_argument("--builtin", action="append", default=None, metavar="NAME",
                        help="restrict to these builtins")
    parser.add_argument("--draws", type=int, default=300, help="random draws per group")
    parser.add_argument("--part", action="append", default=None, choices=PARTS,
                        help="run only these parts of the suite (repeat; default: all)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def conformance_main(args) -> int:
    from verify.devices import list_devices

    devices = () if args.simulator_only else (
        tuple(args.device) if args.device else tuple(d.short_name for d in list_devices()))
    report = conformance(devices, args.builtin, draws=args.draws,
                         parts=tuple(args.part) if args.part else PARTS)
    print(report.to_json() if args.json else report.format())
    return 1 if report.simulator_deviations else 0
