"""Local-memory atomics in ``clsim conformance``: the legacy ``atomic_*`` and the C11
``atomic_fetch_*`` / ``atomic_exchange`` / ``atomic_compare_exchange_strong`` on ``__local``
int and uint (float: ``atomic_xchg``, and the C11 add/sub/min/max/exchange/compare-exchange of
cl_ext_float_atomics), with many work-items of one group hitting the same element.

Two work-groups of 64 work-items; per operation a 4-element ``__local`` array, initialised from
a buffer, then every work-item applies the operation once: the even ones to element 0 (32 on
one element), the odd ones spread over elements 1-3; after a barrier the array is written out.
Judged per element: the final value and the values the work-items got back (the old values;
for compare-exchange the success flag and the expected value written back) must be those of
*some* serial order of the work-items on that element, the order being the device's. The
check replays the operations (``replay``): from the initial value, the work-item that saw the
current value is next; items that saw it and left it unchanged go first, at most one may
change it. The inputs make the order recoverable: add/sub with one operand on element 0 and
random operands elsewhere, distinct single bits for and/or/xor, distinct operands for xchg
and min/max, compare-exchange with most items expecting the initial value (one winner) and
the rest a value never present. Floats take exactly representable sums. C11 forms need OpenCL
C 2.0 and float ones cl_ext_float_atomics: a device without them is skipped with the reason.
"""

from __future__ import annotations

import numpy as np

from verify.conformance_atomics import _op
from verify.conformance_cases import _C, _wrap

GROUPS, LOCAL, ELEMS = 2, 64, 4
LEGACY = ("atomic_add", "atomic_sub", "atomic_xchg", "atomic_min", "atomic_max", "atomic_and",
          "atomic_or", "atomic_xor", "atomic_inc", "atomic_dec", "atomic_cmpxchg")
C11 = ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_or", "atomic_fetch_xor",
       "atomic_fetch_and", "atomic_fetch_min", "atomic_fetch_max", "atomic_exchange",
       "atomic_compare_exchange_strong")
FLOAT = {"legacy": ("atomic_xchg",),
         "c11": ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_min", "atomic_fetch_max",
                 "atomic_exchange", "atomic_compare_exchange_strong")}
_ATOMIC_C = {"int32": "atomic_int", "uint32": "atomic_uint", "float32": "atomic_float"}


def element_of(lid: np.ndarray) -> np.ndarray:
    return np.where(lid % 2 == 0, 0, 1 + (lid // 2) % 3)


def _is_cas(name: str) -> bool:
    return "cmpxchg" in name or "compare_exchange" in name


def apply(name: str, t: str, cur, operand, cmp):
    """The value after ``name`` on ``cur`` (C's wrapping; floats rounded once in float)."""
    op = _op(name)
    if _is_cas(name):
        return operand if cur == cmp else cur
    if t == "float32":
        f = np.float32
        return {"add": lambda: f(cur + operand), "sub": lambda: f(cur - operand),
                "min": lambda: min(cur, operand), "max": lambda: max(cur, operand),
                "xchg": lambda: operand, "exchange": lambda: operand}[op]()
    table = {"add": lambda: cur + operand, "sub": lambda: cur - operand,
             "inc": lambda: cur + 1, "dec": lambda: cur - 1, "and": lambda: cur & operand,
             "or": lambda: cur | operand, "xor": lambda: cur ^ operand, "min": lambda: min(
                 cur, operand), "max": lambda: max(cur, operand), "xchg": lambda: operand,
             "exchange": lambda: operand}
    return _wrap(table[op](), t)


def replay(name: str, t: str, init, final, items) -> bool:
    """True when ``items`` ((old, operand, compare) per work-item on one element) and
    ``final`` are those of some serial order starting at ``init``."""
    cur, pending = init, list(items)
    while pending:
        seen = [it for it in pending if it[0] == cur]
        changing = [it for it in seen if apply(name, t, cur, it[1], it[2]) != cur]
        if not seen or len(changing) > 1:
            return False
        pending = [it for it in pending if it not in seen]
        if changing:
            cur = apply(name, t, cur, changing[0][1], changing[0][2])
        elif pending:
            return False
    return cur == final


def _distinct(rng, t: str, n: int, avoid=()) -> np.ndarray:
    if t == "float32":
        pool = np.arange(1, 4 * n + len(avoid) + 8, dtype=np.float32) / 8 - n / 4
        vals = rng.permutation([v for v in pool if v not in avoid])[:n]
        return np.asarray(vals, np.float32)
    info = np.iinfo(t)
    out: list[int] = []
    while len(out) < n:
        v = int(rng.integers(info.min, info.max, endpoint=True))
        if v not in out and v not in avoid:
            out.append(v)
    return np.array(out, t)


def _inputs(name: str, t: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(init per group and element, operand and compare value per work-item)."""
    n = GROUPS * LOCAL
    lid = np.arange(n) % LOCAL
    elem = element_of(lid)
    init = _distinct(rng, t, GROUPS * ELEMS)
    operand, cmp = _distinct(rng, t, n, avoid=set(init.tolist())), np.zeros(n, t)
    op = _op(name)
    rank, counts = np.zeros(n, np.int64), {}
    for k in range(n):  # the work-item's place among those of its group on its element
        key = (k // LOCAL, int(elem[k]))
        rank[k] = counts.get(key, 0)
        counts[key] = rank[k] + 1
    if op in ("and", "or", "xor"):
        bits = np.array([1 << int(r) for r in rank], np.uint64).astype(np.uint32).view(t)
        operand = ~bits if op == "and" else bits
        init = np.array([0 if (k % ELEMS == 0) else int(init[k]) & ~0x7FF for k in
                         range(init.size)], np.int64).astype(np.uint32).view(t)
        if op == "and":
            init = ~init
    elif op in ("add", "sub") and t == "float32":  # exact sums: any order, same bits
        operand = np.where(elem == 0, np.float32(0.5), (rank + 1).astype(np.float32))
        init = np.arange(init.size, dtype=np.float32)
    elif op in ("add", "sub"):  # element 0: one operand 32 times (and wrapping)
        operand = np.where(elem == 0, np.array(0x40000001, t), operand).astype(t)
    elif op in ("inc", "dec"):  # element 0 wraps within its 32 steps
        info = np.iinfo(t)
        init[::ELEMS] = info.max - 10 if op == "inc" else info.min + 10
    elif _is_cas(name):
        contender = lid % 4 != 3
        cmp = np.where(contender, init[(np.arange(n) // LOCAL) * ELEMS + elem], cmp)
        never = _distinct(rng, t, n, avoid=set(init.tolist()) | set(operand.tolist()))
        cmp = np.where(contender, cmp, never).astype(t)
    return init.astype(t), operand.astype(t), cmp.astype(t)


_PREFIX = {"final": "fin", "flag": "flag", "old": "old"}


class LocalCase:
    """One operation on one type: its inputs and, per backend, what came back."""

    def __init__(self, name: str, t: str, rng):
        self.name, self.t = name, t
        self.init, self.operand, self.cmp = _inputs(name, t, rng)

    @property
    def outs(self) -> tuple[str, ...]:
        """final values, old values (C11 compare-exchange: the flag, then the expected)."""
        return ("final", "flag", "old") if "compare_exchange" in self.name else ("final", "old")


def python_source(cases: list[LocalCase]) -> str:
    params, init, body, out = ["idx"], [], [], []
    for j, c in enumerate(cases):
        params += [f"i{j}", f"v{j}", f"c{j}", *[f"{_PREFIX[o]}{j}" for o in c.outs]]
        init += [f"    t{j} = local_array({ELEMS}, np.{c.t})"]
        out.append(f"        fin{j}[g * {ELEMS} + l] = t{j}[l]")
        if c.name in ("atomic_inc", "atomic_dec"):
            body.append(f"    old{j}[i] = clsim.{c.name}(t{j}[e])")
        elif "compare_exchange" in c.name:
            body += [f"    x{j} = clsim.private_array(1, np.{c.t})", f"    x{j}[0] = c{j}[i]",
                     f"    flag{j}[i] = 1 if clsim.{c.name}(t{j}[e], x{j}[0], v{j}[i]) else 0",
                     f"    old{j}[i] = x{j}[0]"]
        elif c.name == "atomic_cmpxchg":
            body.append(f"    old{j}[i] = clsim.atomic_cmpxchg(t{j}[e], c{j}[i], v{j}[i])")
        else:
            body.append(f"    old{j}[i] = clsim.{c.name}(t{j}[e], v{j}[i])")
    fill = [f"        t{j}[l] = i{j}[g * {ELEMS} + l]" for j in range(len(cases))]
    return ("import numpy as np\n\nimport clsim\nfrom clsim import CLK_LOCAL_MEM_FENCE, barrier, "
            "get_global_id, get_group_id, get_local_id, kernel, local_array\n\n\n@kernel\n"
            f"def probe({', '.join(params)}):\n    i = get_global_id(0)\n"
            "    l = get_local_id(0)\n    g = get_group_id(0)\n" + "\n".join(init)
            + f"\n    if l < {ELEMS}:\n" + "\n".join(fill)
            + "\n    barrier(CLK_LOCAL_MEM_FENCE)\n    e = idx[i]\n"
            + "\n".join(body) + "\n    barrier(CLK_LOCAL_MEM_FENCE)\n"
            f"    if l < {ELEMS}:\n" + "\n".join(out) + "\n")


def _cl_call(c: LocalCase, j: int, args: list[str]) -> str:
    target = f"&t{j}[e]" if c.name in LEGACY else \
        f"(volatile __local {_ATOMIC_C[c.t]} *)&t{j}[e]"
    return f"{c.name}({', '.join([target, *args])})"


def cl_source(cases: list[LocalCase]) -> str:
    params, decl, fill, body, out = ["__global const int *idx"], [], [], [], []
    for j, c in enumerate(cases):
        ty = _C[c.t]
        params += [f"__global const {ty} *i{j}", f"__global const {ty} *v{j}",
                   f"__global const {ty} *c{j}", f"__global {ty} *fin{j}"]
        params += [f"__global int *flag{j}"] if "flag" in c.outs else []
        params.append(f"__global {ty} *old{j}")
        decl.append(f"    __local {ty} t{j}[{ELEMS}];")
        fill.append(f"        t{j}[l] = i{j}[g * {ELEMS} + l];")
        out.append(f"        fin{j}[g * {ELEMS} + l] = t{j}[l];")
        if c.name in ("atomic_inc", "atomic_dec"):
            body.append(f"    old{j}[i] = {_cl_call(c, j, [])};")
        elif "compare_exchange" in c.name:
            body += [f"    {ty} x{j} = c{j}[i];",
                     f"    flag{j}[i] = {_cl_call(c, j, [f'&x{j}', f'v{j}[i]'])};",
                     f"    old{j}[i] = x{j};"]
        elif c.name == "atomic_cmpxchg":
            body.append(f"    old{j}[i] = {_cl_call(c, j, [f'c{j}[i]', f'v{j}[i]'])};")
        else:
            body.append(f"    old{j}[i] = {_cl_call(c, j, [f'v{j}[i]'])};")
    return (f"__kernel void probe({', '.join(params)}) {{\n    size_t i = get_global_id(0);\n"
            "    int l = get_local_id(0);\n    int g = get_group_id(0);\n" + "\n".join(decl)
            + f"\n    if (l < {ELEMS}) {{\n" + "\n".join(fill)
            + "\n    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n    int e = idx[i];\n"
            + "\n".join(body) + f"\n    barrier(CLK_LOCAL_MEM_FENCE);\n    if (l < {ELEMS}) {{\n"
            + "\n".join(out) + "\n    }\n}\n")


def _buffers(cases: list[LocalCase]) -> list[np.ndarray]:
    n = GROUPS * LOCAL
    bufs = [element_of(np.arange(n) % LOCAL).astype(np.int32)]
    for c in cases:
        bufs += [c.init, c.operand, c.cmp, np.zeros(GROUPS * ELEMS, c.t)]
        bufs += [np.zeros(n, np.int32)] if "flag" in c.outs else []
        bufs.append(np.zeros(n, c.t))
    return bufs


def _split(cases, bufs) -> list[list[np.ndarray]]:
    out, k = [], 1
    for c in cases:
        out.append(bufs[k + 3:k + 3 + len(c.outs)])
        k += 3 + len(c.outs)
    return out


def run_simulator(cases: list[LocalCase], *, jit: bool) -> list[list[np.ndarray]]:
    import clsim
    from verify.conformance_exact import _simulator_kernel

    bufs = _buffers(cases)
    clsim.run(_simulator_kernel(python_source(cases)), (GROUPS * LOCAL,), (LOCAL,), bufs,
              jit=jit, checks="none")
    return _split(cases, bufs)


def run_device(info, cases: list[LocalCase]) -> list[list[np.ndarray]]:
    from verify.clrun import run_cl

    run = run_cl(info, cl_source(cases), "probe", (GROUPS * LOCAL,), (LOCAL,), _buffers(cases))
    return _split(cases, run.buffers)


def judge(case: LocalCase, backend: str, outs: list[np.ndarray]):
    """A Row: deviations = elements whose final and old values no serial order gives, plus
    compare-exchange flags that disagree with the expected value written back."""
    from verify.conformance import Row

    final, old = outs[0], outs[-1]
    lid = np.arange(GROUPS * LOCAL)
    elem, group = element_of(lid % LOCAL), lid // LOCAL
    bad, examples = 0, []
    for g in range(GROUPS):
        for e in range(ELEMS):
            on = np.flatnonzero((group == g) & (elem == e))
            items = [(old[k].item(), case.operand[k].item(), case.cmp[k].item()) for k in on]
            init, fin = case.init[g * ELEMS + e].item(), final[g * ELEMS + e].item()
            ok = replay(case.name, case.t, init, fin, items)
            if len(outs) == 3:  # success exactly where the expected value came back equal
                ok &= bool(np.all((outs[1][on] != 0) == (old[on] == case.cmp[on])))
            if not ok:
                bad += 1
                examples.append({"group": g, "element": e, "init": init, "final": fin,
                                 "olds": sorted(it[0] for it in items)[:6]})
    return Row(case.name, f"local {case.t}", backend, 0.0, 0.0, bad, examples[:3])


def local_cases(seed: int = 0, wanted=None) -> dict[tuple[str, str], list[LocalCase]]:
    """(type, "legacy" | "c11") -> the cases of one kernel."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in ("int32", "uint32", "float32"):
        for kind, names in (("legacy", LEGACY), ("c11", C11)):
            names = FLOAT[kind] if t == "float32" else names
            cases = [LocalCase(nm, t, rng) for nm in names if wanted is None or nm in wanted]
            if cases:
                out[(t, kind)] = cases
    return out


def local_atomic_suite(devices=(), builtins=None, draws: int = 0, seed: int = 0,
                       simulator_modes=("jit", "nojit"), report=None):
    """Rows of every local-atomics kernel on the simulator and ``devices`` (``draws`` is
    unused: the inputs are the fixed design above)."""
    from clsim.errors import DeviceError, SimulationError
    from verify.conformance import ConformanceReport
    from verify.devices import get_device

    report = report if report is not None else ConformanceReport()
    for (t, kind), cases in local_cases(seed, None if builtins is None else set(builtins)
                                        ).items():
        results = {f"sim-{m}": run_simulator(cases, jit=m == "jit") for m in simulator_modes}
        for device in devices:
            try:
                results[device] = run_device(get_device(device), cases)
            except (DeviceError, SimulationError) as exc:
                report.skipped.append(f"{device}: local atomics {kind} {t}: "
                                      f"{str(exc).splitlines()[0]}")
        for backend, outs in results.items():
            report.rows += [judge(c, backend, o) for c, o in zip(cases, outs, strict=True)]
    return report
