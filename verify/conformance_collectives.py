"""The collectives part of ``clsim conformance``: sub-group and work-group reduce, inclusive
and exclusive scan (add, min, max) and broadcast on int, uint, long, ulong and float, at
sub-group sizes 8, 16 and 32 in work-groups of four sub-groups, on the simulator and on each
device with sub-groups at that size (work-group functions: OpenCL C 2.0). Rows name the size
in their backend ("sim-jit sg8", "intel-cpu sg32").

Integers are judged bit for bit against C's result (sums wrap: the data holds INT_MAX and
INT_MIN, uint values past 2^31 for min/max signedness; an exclusive scan starts from the
identity: 0, the type's max for min, its min for max). Float min/max and broadcast are exact.
Float sums and scans depend on the order, which OpenCL leaves to the device: the simulator's
rows are judged against a left fold (its default order), each device's against the simulator
run in that device's measured order (``verify.orders.device_reduction_order``) — a deviation
there is an order clsim does not reproduce.
"""

from __future__ import annotations

import numpy as np

from verify.conformance_cases import _C, Call, Group, int_column

SUBGROUP_SIZES = (8, 16, 32)
SUBGROUP = 16  # the default size (and the tests' single-size cases)
SUBGROUPS_PER_GROUP = 4
GROUPS = 4
BROADCAST_LANE = 5
TYPES = ("int32", "uint32", "int64", "uint64", "float32")
_SCOPES = ("sub_group", "work_group")
_KINDS = ("reduce", "scan_inclusive", "scan_exclusive")


def local_size(subgroup: int) -> int:
    return SUBGROUPS_PER_GROUP * subgroup


def broadcast_item(subgroup: int) -> int:
    """The work-item work_group_broadcast reads: inside the third sub-group, off its lane 0."""
    return 2 * subgroup + BROADCAST_LANE


def names() -> list[str]:
    out = [f"{s}_{k}_{op}" for s in _SCOPES for k in _KINDS for op in ("add", "min", "max")]
    return [*out, "sub_group_broadcast", "work_group_broadcast"]


def _column(t: str, rng, subgroup: int) -> np.ndarray:
    n = local_size(subgroup) * GROUPS
    if t == "float32":
        return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 6, n)).astype(np.float32)
    edge = int_column(t, rng, 0)
    head = 48  # the edge values first, so whole sub-groups hold INT_MAX/INT_MIN and wrap
    return np.concatenate([np.resize(edge, head), rng.choice(
        np.concatenate([edge, rng.integers(np.iinfo(t).min, np.iinfo(t).max, 64,
                                           dtype=t, endpoint=True)]), n - head)]
                          ).astype(t)


def _fold(op: str, t: str):
    if op != "add":
        return np.minimum if op == "min" else np.maximum
    if t == "float32":
        return lambda a, b: np.float32(a) + np.float32(b)
    bits = np.iinfo(t).bits
    return lambda a, b: np.array((int(a) + int(b)) % 2**bits, np.uint64).astype(t)


def _identity(op: str, t: str):
    if op == "add":
        return np.zeros((), t)[()]
    if t == "float32":
        return np.float32(np.inf if op == "min" else -np.inf)
    info = np.iinfo(t)
    return np.array(info.max if op == "min" else info.min, t)[()]


def reference(name: str, x: np.ndarray, subgroup: int = SUBGROUP) -> np.ndarray:
    """C's value (floats: the left fold) of collective ``name`` for every work-item."""
    t = x.dtype.name
    sub = name.startswith("sub_group")
    span = subgroup if sub else local_size(subgroup)
    out = np.empty_like(x)
    for start in range(0, x.size, span):
        seg = x[start:start + span]
        if name.endswith("broadcast"):
            out[start:start + span] = seg[BROADCAST_LANE if sub else broadcast_item(subgroup)]
            continue
        op = name.rsplit("_", 1)[1]
        f, acc = _fold(op, t), _identity(op, t)
        running, inclusive = [], []  # exclusive and inclusive prefixes, left to right
        for v in seg:
            running.append(acc)
            acc = f(acc, v)
            inclusive.append(acc)
        if "_reduce_" in name:
            out[start:start + span] = inclusive[-1]
        elif "inclusive" in name:
            out[start:start + span] = inclusive
        else:
            out[start:start + span] = running
    return out


def collective_group(t: str, seed: int = 0, wanted=None, subgroup: int = SUBGROUP) -> Group:
    x = _column(t, np.random.default_rng(seed + TYPES.index(t) + 97 * subgroup), subgroup)
    ok = np.ones(x.size, bool)
    calls = [Call(n, (0,), (t,), (reference(n, x, subgroup),), (ok,), ("bits",))
             for n in names() if wanted is None or n in wanted]
    return Group(f"collectives {t} sg{subgroup}", [x], calls, subgroup=subgroup)


def order_dependent(call: Call, group: Group) -> bool:
    return group.cols[0].dtype.kind == "f" and "_add" in call.name


def _python_call(name: str, subgroup: int) -> str:
    if name == "sub_group_broadcast":
        return f"clsim.sub_group_broadcast(v, {BROADCAST_LANE})"
    if name == "work_group_broadcast":
        return f"clsim.work_group_broadcast(v, {broadcast_item(subgroup)})"
    return f"clsim.{name}(v)"


class CollectiveForms:
    """One kernel per type: every collective of the group applied to x[i]."""

    @staticmethod
    def python(group: Group, calls: list[Call]) -> str:
        outs = ", ".join(f"o{j}" for j in range(len(calls)))
        body = [f"    o{j}[i] = {_python_call(c.name, group.subgroup)}"
                for j, c in enumerate(calls)]
        return ("import clsim\nfrom clsim import get_global_id, kernel\n\n\n@kernel\n"
                f"def probe(a0, {outs}):\n    i = get_global_id(0)\n    v = a0[i]\n"
                + "\n".join(body) + "\n")

    @staticmethod
    def cl(group: Group, calls: list[Call]) -> str:
        t = _C[group.cols[0].dtype.name]
        params = [f"__global const {t} *a0"] + [f"__global {t} *o{j}" for j in range(len(calls))]
        body = [f"    o{j}[i] = {_python_call(c.name, group.subgroup).removeprefix('clsim.')};"
                for j, c in enumerate(calls)]
        return ("#pragma OPENCL FP_CONTRACT OFF\n"
                "#pragma OPENCL EXTENSION cl_khr_subgroups : enable\n"
                "__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))\n"
                f"__kernel void probe({', '.join(params)}) {{\n    size_t i = get_global_id(0);\n"
                f"    {t} v = a0[i];\n" + "\n".join(body) + "\n}\n")


def _simulate(group: Group, calls: list[Call], jit: bool, order: str | None):
    import clsim
    from verify.conformance_exact import _simulator_kernel

    kern = _simulator_kernel(CollectiveForms.python(group, calls))
    outs = [np.zeros_like(group.cols[0]) for _ in calls]
    options = {} if order is None else {"reduction_order": order}
    clsim.run(kern, (group.cols[0].size,), (local_size(group.subgroup),),
              (group.cols[0], *outs), jit=jit, checks="none", subgroup_size=group.subgroup,
              **options)
    return outs


def _device(info, group: Group, calls: list[Call]):
    from verify.clrun import run_cl

    outs = [np.zeros_like(group.cols[0]) for _ in calls]
    run = run_cl(info, CollectiveForms.cl(group, calls), "probe", (group.cols[0].size,),
                 (local_size(group.subgroup),), [group.cols[0], *outs],
                 subgroup_size=group.subgroup, required_features=("subgroups",))
    return run.buffers[1:]


def _judged_rows(group, calls, backend, outs, report, sim_in_order=None) -> None:
    from dataclasses import replace

    from verify.conformance_exact import judge

    for k, (call, got) in enumerate(zip(calls, outs, strict=True)):
        if sim_in_order is not None and order_dependent(call, group):
            call = replace(call, wants=(sim_in_order[k],))
        report.rows.append(judge(call, group, backend, [got]))


def _device_rows(device: str, group: Group, calls, report) -> None:
    from clsim.errors import DeviceError, SimulationError
    from verify.devices import get_device
    from verify.orders import device_reduction_order

    info = get_device(device)
    try:
        outs = _device(info, group, calls)
        order = device_reduction_order(info) if group.cols[0].dtype.kind == "f" else None
    except (DeviceError, SimulationError) as exc:
        report.skipped.append(f"{device}: {group.key}: {str(exc).splitlines()[0]}")
        return
    in_order = _simulate(group, calls, False, order) if order not in (None, "fixed") else None
    _judged_rows(group, calls, f"{device} sg{group.subgroup}", outs, report, in_order)


def collective_suite(devices=(), builtins=None, draws: int = 0, seed: int = 0,
                     simulator_modes=("jit", "nojit"), report=None, sizes=SUBGROUP_SIZES):
    """Rows of every collective and type at each sub-group size of ``sizes`` on the simulator
    and ``devices`` (into ``report``); a device without a size is skipped with the reason.
    ``draws`` is unused: the data is one launch of four work-groups per type and size."""
    from verify.conformance import ConformanceReport

    report = report if report is not None else ConformanceReport()
    wanted = None if builtins is None else set(builtins)
    for size in sizes:
        for t in TYPES:
            group = collective_group(t, seed, wanted, size)
            if not group.calls:
                continue
            for mode in simulator_modes:
                outs = _simulate(group, group.calls, mode == "jit", None)
                _judged_rows(group, group.calls, f"sim-{mode} sg{size}", outs, report)
            for device in devices:
                _device_rows(device, group, group.calls, report)
    return report
