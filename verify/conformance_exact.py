"""Runs the exact part of ``clsim conformance`` (``verify.conformance_cases``): each group as
one or a few kernels on the simulator (both modes) and on each device, judged call by call
against the reference where the spec defines the result.

A kernel writes one output array per call component: ``o3[i] = clsim.convert_int_sat(a0[i])``,
``r0, r1 = clsim.frexp(a0[i])``; its OpenCL C twin passes tuple components through pointers.
Groups are split into kernels of at most ``_PER_KERNEL`` outputs (a device's parameter space is
at least 1 KiB: 128 pointers). Rows are ``verify.conformance.Row``s.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np

from clsim.compiler import builtins as table
from verify.conformance_cases import _C, Absolute, Call, Group, OneOf, groups
from verify.probe_kernels import PROBE_LOCAL_SIZE

_PER_KERNEL = 40
_CL2_STD = ("ctz",)  # OpenCL C 2.0 builtins some devices lack (verify.features)
_DIR: list[Path] = []
_KERNELS: dict[str, object] = {}


def _chunks(group: Group) -> list[list[Call]]:
    chunks, current, width = [], [], 0
    for call in group.calls:
        if width + len(call.outs) > _PER_KERNEL and current:
            chunks.append(current)
            current, width = [], 0
        current.append(call)
        width += len(call.outs)
    return [*chunks, current] if current else chunks


def python_source(ncols: int, calls: list[Call]) -> str:
    outs = [f"o{j}" for j in range(sum(len(c.outs) for c in calls))]
    params = ", ".join([f"a{k}" for k in range(ncols)] + outs)
    body, j = [], 0
    for c in calls:
        call = f"clsim.{c.name}({', '.join(f'a{k}[i]' for k in c.args)})"
        if len(c.outs) == 1:
            body.append(f"    o{j}[i] = {call}")
        else:
            names = [f"r{j + k}" for k in range(len(c.outs))]
            body.append(f"    {', '.join(names)} = {call}")
            body += [f"    o{j + k}[i] = r{j + k}" for k in range(len(c.outs))]
        j += len(c.outs)
    return ("import clsim\nfrom clsim import get_global_id, kernel\n\n\n@kernel\n"
            f"def probe({params}):\n    i = get_global_id(0)\n" + "\n".join(body) + "\n")


def cl_source(cols: list[np.ndarray], calls: list[Call]) -> str:
    params = [f"__global const {_C[c.dtype.name]} *a{k}" for k, c in enumerate(cols)]
    body, j = [], 0
    for c in calls:
        params += [f"__global {_C[t]} *o{j + k}" for k, t in enumerate(c.outs)]
        args = [f"a{k}[i]" for k in c.args]
        if len(c.outs) > 1:
            body += [f"    {_C[t]} r{j + k};" for k, t in enumerate(c.outs) if k]
            args += [f"&r{j + k}" for k in range(1, len(c.outs))]
        body.append(f"    o{j}[i] = {c.name}({', '.join(args)});")
        body += [f"    o{j + k}[i] = r{j + k};" for k in range(1, len(c.outs))]
        j += len(c.outs)
    return ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n"
            f"__kernel void probe({', '.join(params)}) {{\n    size_t i = get_global_id(0);\n"
            + "\n".join(body) + "\n}\n")


def _folder() -> Path:
    """Where the probe kernels' sources live: a content-addressed folder beside clsim's kernel
    cache, so a later run imports the same file and reuses Numba's compiled code (a fresh
    temporary folder would recompile everything, about 20 s per group)."""
    if not _DIR:
        from clsim.runtime.cache import cache_dir

        try:
            folder = cache_dir().parent / "conformance"
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            folder = Path(tempfile.mkdtemp(prefix="clsim-conformance-"))
        _DIR.append(folder)
    return _DIR[0]


def _simulator_kernel(source: str):
    if source not in _KERNELS:
        digest = hashlib.sha256(source.encode()).hexdigest()[:20]
        path = _folder() / f"exact_{digest}.py"
        if not path.exists() or path.read_text() != source:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            tmp.replace(path)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _KERNELS[source] = module.probe
    return _KERNELS[source]


def _outputs(calls, n) -> list[np.ndarray]:
    return [np.zeros(n, t) for c in calls for t in c.outs]


class ScalarForms:
    """How a group's calls become kernels: one work-item per element, scalar calls. Other
    forms (``verify.conformance_vectors``: the same calls on vectors) override the three."""

    @staticmethod
    def python(group: Group, calls: list[Call]) -> str:
        return python_source(len(group.cols), calls)

    @staticmethod
    def cl(group: Group, calls: list[Call]) -> str:
        return cl_source(group.cols, calls)

    @staticmethod
    def global_size(group: Group) -> int:
        return group.cols[0].size


def run_simulator(group: Group, calls: list[Call], *, jit: bool,
                  forms=ScalarForms) -> list[np.ndarray]:
    import clsim

    kern = _simulator_kernel(forms.python(group, calls))
    outs = _outputs(calls, group.cols[0].size)
    clsim.run(kern, (forms.global_size(group),), PROBE_LOCAL_SIZE, (*group.cols, *outs),
              jit=jit, checks="none")
    return outs


def run_device(info, group: Group, calls: list[Call], forms=ScalarForms) -> list[np.ndarray]:
    from verify.clrun import run_cl

    outs = _outputs(calls, group.cols[0].size)
    run = run_cl(info, forms.cl(group, calls), "probe", (forms.global_size(group),), None,
                 [*group.cols, *outs])
    return run.buffers[len(group.cols):]


def _same(got: np.ndarray, want: np.ndarray, how) -> np.ndarray:
    if isinstance(how, Absolute):
        with np.errstate(invalid="ignore"):
            close = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= how.tolerance
        return close | (got == want) | (np.isnan(got) & np.isnan(want))  # == for ±inf
    if isinstance(how, OneOf):
        return _same(got, want, "exact") | _same(got, how.alternative, "exact")
    if how == "bits":
        return got.view(f"u{got.dtype.itemsize}") == want.view(f"u{want.dtype.itemsize}")
    if how == "quo7":
        got = np.where(got < 0, -(np.abs(got.astype(np.int64)) % 128), got % 128)
        return got == want
    if got.dtype.kind != "f":
        return got == want
    nan = np.isnan(got) & np.isnan(want)
    if how == "exact":
        return nan | ((got == want) & (np.signbit(got) == np.signbit(want)))
    from verify.conformance import ulp_distance

    return ulp_distance(got, want) <= how


def judge(call: Call, group: Group, backend: str, outs: list[np.ndarray]):
    """One Row per call and backend: deviations where the spec defines the result."""
    from verify.conformance import Row, ulp_distance

    bad = np.zeros(group.cols[0].size, bool)
    worst = 0.0
    for k, (got, want, ok) in enumerate(zip(outs, call.wants, call.defined, strict=True)):
        bad |= ok & ~_same(got, want, call.how(k))
        if got.dtype.kind == "f" and call.how(k) not in ("bits",):
            d = ulp_distance(got[ok], want[ok])
            worst = max(worst, float(d[np.isfinite(d)].max(initial=0.0)))
    examples = [{"inputs": group.inputs_at(call, i),
                 "got": [o[i].item() for o in outs], "want": [w[i].item() for w in call.wants]}
                for i in np.flatnonzero(bad)[:5]]
    dtype = group.type_name(call.args[0])
    bounds = [call.how(k) for k in range(len(call.outs))]
    limit = max((b for b in bounds if isinstance(b, (int, float))), default=0.0)
    return Row(call.name, dtype, backend, worst, limit, int(bad.sum()), examples)


# Scalar builtins of the judged families that the suite does not judge, and why.
NOT_JUDGED = {
    "native_recip": "precision implementation-defined (native_)",
    "native_divide": "precision implementation-defined (native_)",
    **{f"dot{acc}_4x8packed_{signs}": "cl_khr_integer_dot_product (two packed char4 in a "
       "uint): judged against numpy and the Intel runtime in tests/unit/test_builtins_intdot.py"
       for acc in ("", "_acc_sat") for signs in ("uu_uint", "ss_int", "us_int", "su_int")},
}
_JUDGED_FAMILIES = ("math", "integer", "relational", "conversion")


def judged_names() -> set[str]:
    """Every builtin name the whole suite (float and exact parts) judges."""
    from verify.conformance import _shapes

    names = {n for ns in _shapes().values() for n in ns}
    return names | {c.name for g in groups(0, 4) for c in g.calls if c.name in table.TABLE}


def unjudged_names() -> set[str]:
    """Public scalar builtins of the judged families the suite leaves out (must be NOT_JUDGED)."""
    judged = judged_names()  # once: it builds every group (a second per call, per name)
    return {n for n, e in table.TABLE.items() if e.public and e.family in _JUDGED_FAMILIES
            and n not in judged}


def exact_suite(devices=(), builtins=None, draws: int = 300, seed: int = 0,
                simulator_modes=("jit", "nojit"), report=None, sources=None):
    """Rows of every group on the simulator and ``devices``; device results go into
    ``report.disagreements`` where two devices differ on a defined input. ``sources``:
    restrict to groups whose first column has one of these dtypes ("int64", ...)."""
    from verify.conformance import ConformanceReport

    report = report if report is not None else ConformanceReport()
    for group in groups(seed, draws, None if builtins is None else set(builtins)):
        if sources is not None and group.cols[0].dtype.name not in sources:
            continue
        group.calls = [c for c in group.calls if c.name in table.TABLE and (
            builtins is None or c.name in builtins)]
        run_group(group, devices, simulator_modes, report)
    return report


def run_group(group: Group, devices, simulator_modes, report, forms=ScalarForms) -> None:
    """Every call of ``group`` on the simulator and ``devices``: rows and disagreements into
    ``report``."""
    from verify.devices import get_device

    for calls in _chunks(group):
        results = {}
        for mode in simulator_modes:
            results[f"sim-{mode}"] = (calls, run_simulator(group, calls, jit=mode == "jit",
                                                           forms=forms))
        for device in devices:
            ran, outs = _device_outputs(get_device(device), group, calls, report, forms)
            if outs is not None:
                results[device] = (ran, outs)
        _record(report, group, results, list(devices))


def _device_outputs(info, group, calls, report, forms=ScalarForms):
    from clsim.errors import DeviceError, SimulationError

    if any(c.dtype == np.float64 for c in group.cols) or any(
            t == "float64" for c in calls for t in c.outs):
        if not info.fp64:
            report.skipped.append(f"{info.short_name}: {group.key}: lacks cl_khr_fp64")
            return calls, None
    from verify.features import missing_feature

    lacks = missing_feature(info, "opencl_c_2.0_std")
    if lacks and any(c.name in _CL2_STD for c in calls):
        report.skipped.append(f"{info.short_name}: {', '.join(_CL2_STD)}: {lacks}")
        calls = [c for c in calls if c.name not in _CL2_STD]
    try:
        return calls, run_device(info, group, calls, forms)
    except (DeviceError, SimulationError) as exc:
        report.skipped.append(f"{info.short_name}: {group.key}: {str(exc).splitlines()[0]}")
        return calls, None


def _by_call(ran, outs) -> dict[int, list[np.ndarray]]:
    """Outputs per call (keyed by the call object: one builtin may be called on several
    source types in a group)."""
    out, j = {}, 0
    for call in ran:
        out[id(call)] = outs[j:j + len(call.outs)]
        j += len(call.outs)
    return out


def _record(report, group, results, devices) -> None:
    split = {backend: _by_call(*r) for backend, r in results.items()}
    for backend, (ran, _outs) in results.items():
        for call in ran:
            report.rows.append(judge(call, group, backend, split[backend][id(call)]))
    present = [d for d in devices if d in results]
    for a_i, a in enumerate(present):
        for b in present[a_i + 1:]:
            for call in results[a][0]:
                if id(call) not in split[b]:
                    continue
                for k, ok in enumerate(call.defined):
                    x, y = split[a][id(call)][k], split[b][id(call)][k]
                    differ = ok & ~_same(x, y, "bits" if call.how(k) == "bits" else "exact")
                    for i in np.flatnonzero(differ)[:3]:
                        report.disagreements.append({
                            "builtin": call.name, "dtype": group.type_name(call.args[0]),
                            "inputs": group.inputs_at(call, i),
                            a: x[i].item(), b: y[i].item()})
