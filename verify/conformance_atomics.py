"""The atomics part of ``clsim conformance``: every legacy ``atomic_*`` and C11
``atomic_fetch_*`` / ``atomic_exchange`` / ``atomic_compare_exchange_strong`` / ``atomic_store``
on int, uint, long and ulong (and the float ones: ``atomic_xchg``, C11 add/sub/min/max where a
device has the float atomics), with edge values (INT_MIN/INT_MAX wrap, min/max signedness,
inc/dec wrap, a compare that matches and one that does not).

Deterministic by construction: work-item i stores ``a[i]`` into element i of a global buffer,
then applies one atomic to that element with operand ``b[i]`` (compare value ``c[i]``), so
each address has one work-item and the result is one read-modify-write. Judged: the old value
returned (must be ``a[i]``), the memory afterwards, and for compare-exchange the success flag
and the expected value written back, each bit for bit against C's result (floats: the sum
rounded once; fetch_min/max of +0 and -0 is not judged, the sign is open).

64-bit legacy atomics are spelled ``atom_*`` in OpenCL C (cl_khr_int64_base_atomics /
cl_khr_int64_extended_atomics); C11 atomics need OpenCL C 2.0, float C11 add/min/max the
cl_ext_float_atomics functions: a device without them skips the group with the reason.
``atomic_suite`` also runs the ``__local`` forms, many work-items per element
(``verify.conformance_atomics_local``); their rows' type reads "local int32".
"""

from __future__ import annotations

import numpy as np

from verify.conformance_cases import _C, Call, Group, _wrap, int_column

LEGACY = ("atomic_add", "atomic_sub", "atomic_xchg", "atomic_min", "atomic_max", "atomic_and",
          "atomic_or", "atomic_xor", "atomic_inc", "atomic_dec", "atomic_cmpxchg")
C11 = ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_or", "atomic_fetch_xor",
       "atomic_fetch_and", "atomic_fetch_min", "atomic_fetch_max", "atomic_exchange",
       "atomic_store", "atomic_load", "atomic_compare_exchange_strong")
FLOAT_C11 = ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_min", "atomic_fetch_max",
             "atomic_exchange", "atomic_store", "atomic_load", "atomic_compare_exchange_strong")
_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "xchg": lambda a, b: b,
        "exchange": lambda a, b: b, "store": lambda a, b: b, "load": lambda a, b: a,
        "min": min, "max": max,
        "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
        "inc": lambda a, b: a + 1, "dec": lambda a, b: a - 1}
_ATOMIC_C = {"int32": "atomic_int", "uint32": "atomic_uint", "int64": "atomic_long",
             "uint64": "atomic_ulong", "float32": "atomic_float"}


def _op(name: str) -> str:
    return name.split("_")[-1]


_NO_OPERAND = ("atomic_inc", "atomic_dec", "atomic_load")


def _operands(name: str) -> tuple[int, ...]:
    """Input columns a call reads after the initial store: b, and c for compare-exchange
    (inc and dec read none; their rows show the initial value a)."""
    if name in _NO_OPERAND:
        return (0,)
    return (2, 1) if "cmpxchg" in name or "compare" in name else (1,)


def _outs(name: str, t: str) -> tuple[str, ...]:
    """memory afterwards, then the old value (or the success flag and the expected value)."""
    if name == "atomic_store":
        return (t,)
    return (t, "int32", t) if "compare_exchange" in name else (t, t)


def _int_call(name: str, t: str, a, b, c) -> Call:
    n = len(a)
    old, mem, flag = [], [], []
    for x, y, z in zip(a, b, c, strict=True):
        if "cmpxchg" in name or "compare" in name:
            hit = x == z
            mem.append(y if hit else x)
            flag.append(int(hit))
        else:
            mem.append(_wrap(_OPS[_op(name)](x, y), t))
        old.append(x)
    ok = np.ones(n, bool)
    if name == "atomic_store":
        return Call(name, _operands(name), _outs(name, t), (np.array(mem, t),), (ok,))
    if "compare_exchange" in name:
        return Call(name, _operands(name), _outs(name, t),
                    (np.array(mem, t), np.array(flag, np.int32), np.array(old, t)),
                    (ok, ok, ok))
    return Call(name, _operands(name), _outs(name, t), (np.array(mem, t), np.array(old, t)),
                (ok, ok))


def _float_call(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Call:
    ok = np.ones(a.size, bool)
    with np.errstate(all="ignore"):
        if "compare_exchange" in name:  # C11 compares the bytes (memcmp): NaN == NaN, -0 != 0
            hit = a.view(np.uint32) == c.view(np.uint32)
            return Call(name, (2, 1), _outs(name, "float32"),
                        (np.where(hit, b, a), hit.astype(np.int32), a), (ok, ok, ok),
                        ("bits", "exact", "bits"))
        mem = {"add": a + b, "sub": a - b, "min": np.fmin(a, b), "max": np.fmax(a, b),
               "exchange": b, "store": b, "load": a}[_op(name)].astype(np.float32)
    defined = ok
    if _op(name) in ("min", "max"):  # the sign of min(+0, -0) is open; NaN operands too
        defined = ~((a == 0) & (b == 0)) & ~np.isnan(a) & ~np.isnan(b)
    if name == "atomic_store":
        return Call(name, (1,), ("float32",), (mem,), (ok,), ("bits",))
    if name == "atomic_load":  # the bits as stored, NaN payloads included
        return Call(name, (0,), ("float32", "float32"), (mem, a), (ok, ok), ("bits", "bits"))
    return Call(name, (1,), ("float32", "float32"), (mem, a), (defined, ok), ("exact", "bits"))


def atomic_groups(seed: int = 0, draws: int = 200, wanted=None) -> list[Group]:
    rng = np.random.default_rng(seed)
    out = []
    for k, t in enumerate(("int32", "uint32", "int64", "uint64")):
        a = int_column(t, rng, draws)
        b = int_column(t, rng, draws, shift=4 + k)
        c = np.where(rng.random(a.size) < 0.5, a, b).astype(t)
        values = [[int(v) for v in col.tolist()] for col in (a, b, c)]
        for names, kind in ((LEGACY, "legacy"), (C11, "c11")):
            calls = [_int_call(nm, t, *values) for nm in names
                     if wanted is None or nm in wanted]
            if calls:
                out.append(Group(f"atomics {kind} {t}", [a, b, c], calls))
    from verify.conformance import edge_values

    f = np.concatenate([edge_values(np.float32), rng.standard_normal(draws).astype(np.float32)])
    g = np.roll(f, 3)
    h = np.where(rng.random(f.size) < 0.5, f, g).astype(np.float32)
    xchg = _float_call("atomic_exchange", f, g, h)
    legacy = Call("atomic_xchg", xchg.args, xchg.outs, xchg.wants, xchg.defined, ("bits",) * 2)
    if wanted is None or "atomic_xchg" in wanted:
        out.append(Group("atomics legacy float32", [f, g, h], [legacy]))
    calls = [_float_call(nm, f, g, h) for nm in FLOAT_C11 if wanted is None or nm in wanted]
    if calls:
        out.append(Group("atomics c11 float32", [f, g, h], calls))
    return out


def _cl_call(name: str, t: str, mem: str, args: list[str]) -> str:
    if name.startswith("atomic_") and name in LEGACY:
        spelled = "atom_" + name[len("atomic_"):] if t in ("int64", "uint64") else name
        return f"{spelled}(&{mem}, {', '.join(args)})" if args else f"{spelled}(&{mem})"
    pointer = f"(volatile __global {_ATOMIC_C[t]} *)&{mem}"
    return f"{name}({', '.join([pointer, *args])})"


class AtomicForms:
    """One work-item per address: store a[i], apply the call to that element, keep the rest."""

    @staticmethod
    def python(group: Group, calls: list[Call]) -> str:
        outs, body, j = [], [], 0
        for c in calls:
            outs += [f"o{j + k}" for k in range(len(c.outs))]
            args = [] if c.name in _NO_OPERAND else [f"a{k}[i]" for k in c.args]
            body.append(f"    o{j}[i] = a0[i]")
            if "compare_exchange" in c.name:
                body += [f"    e{j} = clsim.private_array(1, np.{c.outs[2]})",
                         f"    e{j}[0] = {args[0]}",
                         f"    o{j + 1}[i] = 1 if clsim.{c.name}(o{j}[i], e{j}[0], "
                         f"{args[1]}) else 0", f"    o{j + 2}[i] = e{j}[0]"]
            elif c.name == "atomic_store":
                body.append(f"    clsim.atomic_store(o{j}[i], {args[0]})")
            else:
                rest = "".join(", " + a for a in args)
                body.append(f"    o{j + 1}[i] = clsim.{c.name}(o{j}[i]{rest})")
            j += len(c.outs)
        params = ", ".join([f"a{k}" for k in range(len(group.cols))] + outs)
        return ("import numpy as np\n\nimport clsim\nfrom clsim import get_global_id, kernel\n\n\n"
                f"@kernel\ndef probe({params}):\n    i = get_global_id(0)\n" + "\n".join(body)
                + "\n")

    @staticmethod
    def cl(group: Group, calls: list[Call]) -> str:
        t = group.cols[0].dtype.name
        params = [f"__global const {_C[c.dtype.name]} *a{k}" for k, c in enumerate(group.cols)]
        body, j = [], 0
        for c in calls:
            params += [f"__global {_C[o]} *o{j + k}" for k, o in enumerate(c.outs)]
            args = [] if c.name in _NO_OPERAND else [f"a{k}[i]" for k in c.args]
            body.append(f"    o{j}[i] = a0[i];")
            mem = f"o{j}[i]"
            if "compare_exchange" in c.name:
                body += [f"    {_C[t]} e{j} = {args[0]};",
                         f"    o{j + 1}[i] = {_cl_call(c.name, t, mem, [f'&e{j}', args[1]])};",
                         f"    o{j + 2}[i] = e{j};"]
            elif c.name == "atomic_store":
                body.append(f"    {_cl_call(c.name, t, mem, args)};")
            else:
                body.append(f"    o{j + 1}[i] = {_cl_call(c.name, t, mem, args)};")
            j += len(c.outs)
        pragmas = ("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
                   "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable\n")
        return (pragmas + f"__kernel void probe({', '.join(params)}) {{\n"
                "    size_t i = get_global_id(0);\n" + "\n".join(body) + "\n}\n")

    @staticmethod
    def global_size(group: Group) -> int:
        return group.cols[0].size


def atomic_suite(devices=(), builtins=None, draws: int = 200, seed: int = 0,
                 simulator_modes=("jit", "nojit"), report=None):
    """Rows of every atomics group on the simulator and ``devices`` (into ``report``)."""
    from verify.conformance import ConformanceReport
    from verify.conformance_exact import run_group

    from verify.conformance_atomics_local import local_atomic_suite

    report = report if report is not None else ConformanceReport()
    for group in atomic_groups(seed, draws, None if builtins is None else set(builtins)):
        run_group(group, devices, simulator_modes, report, AtomicForms)
    local_atomic_suite(devices, builtins, draws, seed, simulator_modes, report)
    return report
