"""The half part of ``clsim conformance`` (cl_khr_fp16): arithmetic on half values, fma, sqrt
and common math builtins on half, every ``convert_half`` rounding mode from float, double and
int, ``convert_float``/``convert_int`` of a half and the bit casts, judged against correctly
rounded references, on the simulator and on each device with fp16 (the others are skipped with
the reason, as ``verify.clrun`` gives it).

References: + - * / and sqrt are computed in float64 and rounded once to half (53 >= 2 * 11 +
2 bits, so that is the correctly rounded half result); fma and the conversions are exact
rationals rounded once by the mode (``verify.conformance_cases.round_to_float``). Math
builtins (exp, log, sin, ...) are float64 values rounded to half and allowed the float
function's ULP bound, counted in half ULPs (the simulator computes them in float and rounds to
half). ``vload_half``/``vstore_half`` and their rounding modes are tested bit for bit over all
65 536 half patterns in ``tests/unit/test_half.py`` and are not repeated here.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verify.conformance_cases import Call, Group, round_to_float
from verify.conformance_refs import bound

OPERATORS = {"x+y": "+", "x-y": "-", "x*y": "*", "x/y": "/"}
_MATH = ("exp", "log", "sin", "cos", "fabs", "floor", "rint", "fmin", "fmax", "sqrt")
_MODES = ("", "_rte", "_rtz", "_rtp", "_rtn")
_C = {"float16": "half", "float32": "float", "float64": "double", "int32": "int",
      "uint16": "ushort", "int16": "short", "uint8": "uchar"}
H, F, D = np.float16, np.float32, np.float64


def half_edges() -> np.ndarray:
    tiny, sub = 2.0**-14, 2.0**-24
    base = [0.0, 1.0, 0.5, 1.5, 2.0, 3.0, 65504.0, 2048.0, 2049.0 - 1, tiny, sub, 3 * sub,
            tiny - sub, 1 + 2.0**-10, 0.1, 100.0, 1000.5]
    return np.array([v for b in base for v in (b, -b)] + [math.inf, -math.inf, math.nan], H)


def rounding_edges() -> list[float]:
    """Values where rounding to half is decided: ties, just past them, overflow, underflow."""
    ulp1 = 2.0**-10
    return [1 + ulp1 / 2, 1 + ulp1 * 1.5, 1 + ulp1 / 2 + 2.0**-30, 65519.996, 65520.0, 65536.0,
            70000.0, 2.0**-25, 2.0**-25 * 1.5, 2.0**-26, 2049.0, 2051.0, 4097.0, 1e-9, 1e10]


def half_columns(seed: int, draws: int) -> list[np.ndarray]:
    """x, y, z (half), then float, double, int and ushort sources of the same length."""
    rng = np.random.default_rng(seed)
    e = half_edges()
    pairs = np.meshgrid(e, e, indexing="ij")
    rand = rng.integers(0, 65536, (3, draws), dtype=np.uint16).view(H)
    x = np.concatenate([pairs[0].ravel(), rand[0]])
    y = np.concatenate([pairs[1].ravel(), rand[1]])
    z = np.concatenate([np.roll(pairs[0].ravel(), 5), rand[2]])
    n = x.size
    edges = [v for b in rounding_edges() for v in (b, -b)]
    wide = rng.standard_normal(n) * 10.0 ** rng.integers(-9, 6, n)
    f = np.resize(np.concatenate([np.array(edges), wide]), n)
    ints = np.resize(np.array([0, 1, -1, 2049, 2051, 4097, 65519, 65520, 70000, -70000,
                               2**31 - 1, -(2**31)], np.int64), n)
    ints = np.where(np.arange(n) < 12, ints, rng.integers(-(2**20), 2**20, n))
    return [x, y, z, f.astype(F), f.astype(D), ints.astype(np.int32), x.view(np.uint16).copy()]


def _exact(values) -> np.ndarray:
    return np.array(values, D).astype(H)


def _fma_half(a, b, c) -> float:
    a, b, c = float(a), float(b), float(c)
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c  # inf and NaN cases: float64's fma agrees
    q = Fraction(a) * Fraction(b) + Fraction(c)
    r = round_to_float(q, "float16", "")
    return r if r != 0 else (math.copysign(0.0, a * b + c) if q == 0 else r)


def _convert_half(values, mode: str, integral: bool) -> np.ndarray:
    out = []
    for v in values.tolist():
        if not integral and not math.isfinite(v):
            out.append(v)
            continue
        q = Fraction(int(v)) if integral else Fraction(v)
        out.append(math.copysign(round_to_float(q, "float16", mode), v))
    return np.array(out, D).astype(H)


def _calls(cols) -> list[Call]:
    x, y, z, _f, _d, _ints, bits = cols
    x64, y64 = x.astype(D), y.astype(D)
    ok = np.ones(x.size, bool)
    with np.errstate(all="ignore"):
        ops = {"x+y": x64 + y64, "x-y": x64 - y64, "x*y": x64 * y64, "x/y": x64 / y64}
        calls = [Call(name, (0, 1), ("float16",), (v.astype(H),), (ok,))
                 for name, v in ops.items()]
        calls.append(Call("fma", (0, 1, 2), ("float16",), (_exact(
            [_fma_half(a, b, c) for a, b, c in zip(x.tolist(), y.tolist(), z.tolist(),
                                                   strict=True)]),), (ok,)))
        unary = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "fabs": np.abs,
                 "floor": np.floor, "rint": np.rint, "sqrt": np.sqrt}
        for name in _MATH:
            if name in ("fmin", "fmax"):
                ref = (np.fmin if name == "fmin" else np.fmax)(x, y)
                calls.append(Call(name, (0, 1), ("float16",), (ref,), (ok,), (0.0,)))
                continue
            limit = 0 if name == "sqrt" else bound(name, F)
            how = "exact" if limit == 0 else float(limit)
            ref = unary[name](x64).astype(H)
            if name == "fabs":
                ref = np.abs(x)
            calls.append(Call(name, (0,), ("float16",), (ref,), (ok,), (how,)))
    for k, integral in ((3, False), (4, False), (5, True)):  # from float, double, int
        for mode in _MODES:
            calls.append(Call(f"convert_half{mode}", (k,), ("float16",),
                              (_convert_half(cols[k], mode, integral),), (ok,)))
    calls.append(Call("convert_float", (0,), ("float32",), (x.astype(F),), (ok,)))
    in_range = np.isfinite(x)
    calls.append(Call("convert_int", (0,), ("int32",),
                      (np.where(in_range, np.trunc(np.nan_to_num(x.astype(D))), 0)
                       .astype(np.int32),), (in_range,)))
    calls += _from_half_with_modes(x)
    calls.append(Call("as_half", (6,), ("float16",), (x,), (ok,), ("bits",)))
    calls.append(Call("as_ushort", (0,), ("uint16",), (bits,), (ok,), ("bits",)))
    return calls


_ROUNDERS = {"": np.trunc, "_rte": np.rint, "_rtz": np.trunc, "_rtp": np.ceil, "_rtn": np.floor}


def _from_half_with_modes(x: np.ndarray) -> list[Call]:
    """convert_T_sat[_mode] and convert_T_mode of a half: the half rounded to an integer by
    the mode (every half is exact in double), clamped to T with NaN giving 0; without _sat
    only where the result is in T's range (C leaves the rest undefined)."""
    x64 = x.astype(D)
    calls = []
    for t, name in ((np.int32, "int"), (np.int16, "short"), (np.uint8, "uchar")):
        info = np.iinfo(t)
        for mode, rounder in _ROUNDERS.items():
            with np.errstate(invalid="ignore"):
                whole = rounder(x64)
            clamped = np.where(np.isnan(whole), 0, np.clip(np.nan_to_num(whole), info.min,
                                                            info.max)).astype(t)
            calls.append(Call(f"convert_{name}_sat{mode}", (0,), (np.dtype(t).name,),
                              (clamped,), (np.ones(x.size, bool),)))
            if mode:
                fits = np.isfinite(whole) & (np.nan_to_num(whole) >= info.min) & (
                    np.nan_to_num(whole) <= info.max)
                calls.append(Call(f"convert_{name}{mode}", (0,), (np.dtype(t).name,),
                                  (np.where(fits, clamped, 0).astype(t),), (fits,)))
    for mode in ("_rte", "_rtz", "_rtp", "_rtn"):
        calls.append(Call(f"convert_float{mode}", (0,), ("float32",), (x.astype(F),),
                          (np.ones(x.size, bool),)))
    return calls


def half_group(seed: int = 0, draws: int = 300, wanted=None) -> Group:
    cols = half_columns(seed, draws)
    calls = [c for c in _calls(cols) if wanted is None or c.name in wanted]
    return Group("half", cols, calls)


def _expr(name: str, args: list[str], prefix: str) -> str:
    if name in OPERATORS:
        return f"({args[0]} {OPERATORS[name]} {args[1]})"
    return f"{prefix}{name}({', '.join(args)})"


class HalfForms:
    """Scalar kernels over half columns: the operators as expressions, the fp16 pragma."""

    @staticmethod
    def python(group: Group, calls: list[Call]) -> str:
        outs = [f"o{j}" for j in range(len(calls))]
        params = ", ".join([f"a{k}" for k in range(len(group.cols))] + outs)
        body = [f"    o{j}[i] = {_expr(c.name, [f'a{k}[i]' for k in c.args], 'clsim.')}"
                for j, c in enumerate(calls)]
        return ("import clsim\nfrom clsim import get_global_id, kernel\n\n\n@kernel\n"
                f"def probe({params}):\n    i = get_global_id(0)\n" + "\n".join(body) + "\n")

    @staticmethod
    def cl(group: Group, calls: list[Call]) -> str:
        params = [f"__global const {_C[c.dtype.name]} *a{k}" for k, c in enumerate(group.cols)]
        params += [f"__global {_C[c.outs[0]]} *o{j}" for j, c in enumerate(calls)]
        body = [f"    o{j}[i] = {_expr(c.name, [f'a{k}[i]' for k in c.args], '')};"
                for j, c in enumerate(calls)]
        return ("#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
                "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n"
                f"__kernel void probe({', '.join(params)}) {{\n    size_t i = get_global_id(0);\n"
                + "\n".join(body) + "\n}\n")

    @staticmethod
    def global_size(group: Group) -> int:
        return group.cols[0].size


def half_suite(devices=(), builtins=None, draws: int = 300, seed: int = 0,
               simulator_modes=("jit", "nojit"), report=None):
    """Rows of the half group on the simulator and ``devices`` (into ``report``)."""
    from verify.conformance import ConformanceReport
    from verify.conformance_exact import run_group

    report = report if report is not None else ConformanceReport()
    group = half_group(seed, draws, None if builtins is None else set(builtins))
    if group.calls:
        run_group(group, devices, simulator_modes, report, HalfForms)
    return report
