"""Vector forms of the builtins in ``clsim conformance``: the exact suite's groups and the float
math builtins called on vectors (``vload4`` the inputs, call, ``vstore4`` the result), judged
component by component against the same references as the scalar calls.

One width per family: integer builtins on int4, uchar16 and long2; conversions and bit casts
from float4 and int4; relational functions, min/max/clamp/select/bitselect and the tuple
builtins on float4; every float math builtin with a bound on float4. Vector semantics that
differ from the scalar ones are the references' business here: a vector relational function
gives -1 (all bits) for true, and a vector ``select`` tests each component's top bit. The
geometric functions (dot, cross, length, distance, normalize) and ``any``/``all`` are vector
only: ``verify.conformance_geometric``. Rows carry the vector type ("int4") as their dtype.
"""

from __future__ import annotations

import re

import numpy as np

from verify.conformance_cases import (
    _C,
    Call,
    Group,
    OneOf,
    conversion_group,
    float_group,
    integer_group,
)
from verify.conformance_exact import ScalarForms, run_group

# element type -> vector width of the family's vector group
INTEGER_WIDTHS = {"int32": 4, "uint8": 16, "int64": 2}
CONVERSION_WIDTHS = {"float32": 4, "int32": 4}
FLOAT_WIDTH = 4
_RELATIONAL_RESULT = {"isnan", "isinf", "isfinite", "signbit", "isnormal", "isequal",
                      "isnotequal", "isgreater", "isgreaterequal", "isless", "islessequal",
                      "islessgreater", "isordered", "isunordered"}
_TYPED = re.compile(r"^(convert|as)_([a-z]+)(.*)$")
# vector-only builtins whose result is one scalar per vector (stored at the work-item's index)
SCALAR_RESULTS = {"dot", "length", "distance", "fast_length", "fast_distance", "any",
                  "all"}


def vector_name(name: str, width: int) -> str:
    """``convert_int_sat_rte`` -> ``convert_int4_sat_rte``, ``as_uint`` -> ``as_uint4``;
    other builtins keep their name (``add_sat`` takes an int4 as it is)."""
    m = _TYPED.match(name)
    return f"{m[1]}_{m[2]}{width}{m[3]}" if m else name


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    return np.resize(a, -(-a.size // width) * width)


def _top_bit(col: np.ndarray) -> np.ndarray:
    return col.view(f"i{col.dtype.itemsize}") < 0


def vectorize(group: Group, width: int) -> Group:
    """``group``'s calls on ``width``-wide vectors: columns padded to a multiple of the width,
    names of the vector forms, references of the vector semantics."""
    cols = [_pad(c, width) for c in group.cols]
    calls = []
    for call in group.calls:
        wants = tuple(_pad(w, width) for w in call.wants)
        defined = tuple(_pad(d, width) for d in call.defined)
        if call.name in _RELATIONAL_RESULT:
            wants = (-wants[0],)
        elif call.name == "select":
            x, y, cond = (cols[k] for k in call.args)
            wants = (np.where(_top_bit(cond), y, x).astype(wants[0].dtype),)
        judges = tuple(OneOf(_pad(j.alternative, width)) if isinstance(j, OneOf) else j
                       for j in call.judge)
        calls.append(Call(vector_name(call.name, width), call.args, call.outs, wants, defined,
                          judges, call.name))
    return Group(f"{group.key} x{width}", cols, calls, width)


class VectorForms:
    """Kernel sources for a vectorized group: one work-item per vector (width 1, the scalar
    geometric functions: ``ScalarForms``)."""

    @staticmethod
    def python(group: Group, calls: list[Call]) -> str:
        w = group.width
        if w == 1:
            return ScalarForms.python(group, calls)
        used = sorted({k for c in calls for k in c.args})
        outs = [f"o{j}" for j in range(sum(len(c.outs) for c in calls))]
        params = ", ".join([f"a{k}" for k in range(len(group.cols))] + outs)
        body = [f"    v{k} = clsim.vload{w}(i, a{k})" for k in used]
        j = 0
        for c in calls:
            call = f"clsim.{c.name}({', '.join(f'v{k}' for k in c.args)})"
            names = [f"r{j + k}" for k in range(len(c.outs))]
            body.append(f"    {', '.join(names)} = {call}")
            body += [f"    o{j}[i] = r{j}" if c.name in SCALAR_RESULTS else
                     f"    clsim.vstore{w}(r{j + k}, i, o{j + k})" for k in range(len(c.outs))]
            j += len(c.outs)
        return ("import clsim\nfrom clsim import get_global_id, kernel\n\n\n@kernel\n"
                f"def probe({params}):\n    i = get_global_id(0)\n" + "\n".join(body) + "\n")

    @staticmethod
    def cl(group: Group, calls: list[Call]) -> str:
        w = group.width
        if w == 1:
            return ScalarForms.cl(group, calls)
        used = sorted({k for c in calls for k in c.args})
        params = [f"__global const {_C[c.dtype.name]} *a{k}" for k, c in enumerate(group.cols)]
        body = [f"    {_C[group.cols[k].dtype.name]}{w} v{k} = vload{w}(i, a{k});" for k in used]
        j = 0
        for c in calls:
            params += [f"__global {_C[t]} *o{j + k}" for k, t in enumerate(c.outs)]
            args = [f"v{k}" for k in c.args]
            body += [f"    {_C[t]}{w} r{j + k};" for k, t in enumerate(c.outs) if k]
            args += [f"&r{j + k}" for k in range(1, len(c.outs))]
            result = f"{c.name}({', '.join(args)})"
            body.append(f"    o{j}[i] = {result};" if c.name in SCALAR_RESULTS else
                        f"    vstore{w}({result}, i, o{j});")
            body += [f"    vstore{w}(r{j + k}, i, o{j + k});" for k in range(1, len(c.outs))]
            j += len(c.outs)
        return ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n"
                f"__kernel void probe({', '.join(params)}) {{\n    size_t i = get_global_id(0);"
                "\n" + "\n".join(body) + "\n}\n")

    @staticmethod
    def global_size(group: Group) -> int:
        return group.cols[0].size // group.width


def math_group(seed: int, draws: int, wanted=None) -> list[Group]:
    """The float math builtins with a bound (``verify.conformance``'s shapes), float4: one
    group per shape, judged within the bound (exactly, sign of zero included, at bound 0)."""
    from verify.conformance import _shapes, inputs
    from verify.conformance_refs import ZERO_SIGN_FREE, bound, reference

    out = []
    for (arity, kind), names in _shapes().items():
        names = [n for n in names if bound(n, np.float32) is not None and n != "ilogb"
                 and (wanted is None or n in wanted)]
        if not names:
            continue
        cols = inputs(np.float32, arity, kind, seed, draws)
        ok = np.ones(cols[0].size, bool)
        calls = []
        with np.errstate(all="ignore"):
            for n in names:
                limit = bound(n, np.float32)
                how = "exact" if limit == 0 and n not in ZERO_SIGN_FREE else float(limit)
                calls.append(Call(n, tuple(range(arity)), ("float32",),
                                  (reference(n, cols, np.float32),), (ok,), (how,)))
        out.append(Group(f"math float {arity}{kind}", list(cols), calls))
    return out


def vector_groups(seed: int = 0, draws: int = 300, wanted=None) -> list[Group]:
    """Every vector group (``wanted``: builtin names in their scalar spelling, None: all)."""
    scalar = [(integer_group(t, seed + k, draws, wanted), w)
              for k, (t, w) in enumerate(INTEGER_WIDTHS.items())]
    scalar += [(conversion_group(t, seed + k, draws, wanted), w)
               for k, (t, w) in enumerate(CONVERSION_WIDTHS.items())]
    scalar.append((float_group("float32", seed, draws), FLOAT_WIDTH))
    scalar += [(g, FLOAT_WIDTH) for g in math_group(seed, draws, wanted)]
    from clsim.compiler import builtins as table
    from verify.conformance_geometric import vector_only_groups

    out = []
    for group, width in scalar:
        group.calls = [c for c in group.calls if c.name in table.TABLE
                       and (wanted is None or c.name in wanted)]
        if group.calls:
            out.append(vectorize(group, width))
    return out + vector_only_groups(seed, draws, wanted)


def vector_suite(devices=(), builtins=None, draws: int = 300, seed: int = 0,
                 simulator_modes=("jit", "nojit"), report=None):
    """Rows of every vector group on the simulator and ``devices`` (into ``report``)."""
    from verify.conformance import ConformanceReport

    report = report if report is not None else ConformanceReport()
    for group in vector_groups(seed, draws, None if builtins is None else set(builtins)):
        run_group(group, devices, simulator_modes, report, VectorForms)
    return report
