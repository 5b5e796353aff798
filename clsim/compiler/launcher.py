"""The generated module's ``_launch``: the loop over a chunk of work-groups, and which kind.

``kind`` decides how a launch's groups run ("serial", "prange" or "threads") from the launch
configuration and its instruments; ``source`` writes the launcher of that kind. Splitting a
"threads" launcher's chunks over Python threads is ``clsim.runtime.threads``'s job.
"""

from __future__ import annotations

import re

from clsim.runtime import record as rec

# A group array whose contents start undefined (np.empty through a shared helper): the same
# memory serves every group a thread runs, as a CPU OpenCL runtime reuses a thread's local
# and private memory. Arrays that must start zeroed stay allocated per group. (``_unset_``:
# an instrument's array that every group leaves as the helper made it.)
_SCRATCH = re.compile(r"(\w+) = (_(?:empty|unset)_\w+\(.*\))")


def split_scratch(allocations: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, allocation) of the arrays the launcher allocates once per thread, and the
    allocation lines that stay in ``_group``."""
    scratch, per_group = [], []
    for line in allocations:
        m = _SCRATCH.fullmatch(line)
        if m:
            scratch.append((m.group(1), m.group(2)))
        else:
            per_group.append(line)
    return scratch, per_group


def source(pnames: str, how: str, jit: bool, state: str,
           scratch: list[tuple[str, str]] = ()) -> str:
    """``_launch``: groups ``_start .. _start + _count - 1``, each recording into its own row
    of ``_errs`` (``how`` "prange": in Numba's parallel loop, "threads": serially, on one of
    the Python threads a chunk is split over) or into row 0, stopping at the first error
    ("serial"; a thread's launcher stops too, its lower groups having run, but goes on past
    a group that asks to be run again, ``rec.RERUN_GROUP``: clsim.runtime.launch does that)."""
    loop = "prange" if how == "prange" else "range"
    row = "0" if how == "serial" else "_c"
    # Every array the groups use is borrowed (intrinsics._borrowed): the parameters, which
    # the caller holds, and the scratch arrays, kept alive to the loop's end by ``_alive``.
    borrows = [f"{name} = _borrowed({name})" for name in (*_names(pnames), "_errs")]
    allocs = [line for name, code in scratch
              for line in (f"_own{name} = {code}", f"{name} = _borrowed(_own{name})")]
    alive = [f"_alive(_own{name})" for name, _ in scratch]
    per_group = how == "prange"
    # conditional expressions, not min(): Numba compiles its overload again in every process
    lines = [
        "@_jitp" if (jit and how == "prange") else ("@_jit" if jit else ""),
        "def _launch(_start, _count, _NG0, _NG1, _NG2, _G0, _G1, _G2, _O0, _O1, _O2, "
        f"{pnames}, _errs):",
        *("    " + b for b in borrows),
        *([] if per_group else ["    " + a for a in allocs]),
        f"    for _c in {loop}(_count):",
        *(["        " + a for a in allocs] if per_group else []),
        "        _g = np.int64(_start + _c)",
        "        _gx = np.int64(_g % _NG0)",
        "        _gy = np.int64((_g // _NG0) % _NG1)",
        "        _gz = np.int64(_g // (_NG0 * _NG1))",
        "        _L0 = np.int64(_E0 if _E0 < _G0 - _gx * _E0 else _G0 - _gx * _E0)",
        "        _L1 = np.int64(_E1 if _E1 < _G1 - _gy * _E1 else _G1 - _gy * _E1)",
        "        _L2 = np.int64(_E2 if _E2 < _G2 - _gz * _E2 else _G2 - _gz * _E2)",
        f"        _e = _errs[{row}]",
        "        _group(_gx, _gy, _gz, _L0, _L1, _L2, _G0, _G1, _G2, _NG0, _NG1, _NG2, "
        f"_O0, _O1, _O2, {pnames.removesuffix(state)}, _e{state}"
        + "".join(", " + name for name, _ in scratch) + ")",
        f"        if _e[{rec.CODE}] != 0:",
        *(f"            _e[{field}] = {value}" for field, value in zip(
            (*rec.GROUP, *rec.GROUP_SIZE), ("_gx", "_gy", "_gz", "_L0", "_L1", "_L2"),
            strict=True)),
    ]
    if how == "threads":  # a group to run again (RERUN_GROUP) leaves the others running
        lines += [f"            if _e[{rec.CODE}] != {rec.RERUN_GROUP}:", "                return"]
    elif how != "prange":
        lines.append("            return")
    lines += [("        " if per_group else "    ") + a for a in alive]
    return "\n".join(line for line in lines if line != "")


def _names(pnames: str) -> list[str]:
    return [name.strip() for name in pnames.split(",") if name.strip()]


def kind(jit: bool, parallel: bool, instruments) -> str:
    """How the launch's groups run: "serial", "prange" or "threads". Parallel JIT launches
    use Python threads over a serial launcher unless an instrument needs Numba's parallel
    loop: compiling ``prange`` (Numba's parfor lowering, its gufunc and a third optimisation
    of the group function's code) costs about 0.5-0.9 s of CPU per kernel."""
    if not parallel:
        return "serial"
    if jit and all(inst.python_threads for inst in instruments):
        return "threads"
    return "prange"
