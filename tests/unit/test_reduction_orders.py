"""Float orders of sub-group reductions, scans and work-group reductions: the simulator's orders
against numpy folds, the order a device uses (measured once per collective by verify.orders),
and the simulator in that order against the device, bit for bit."""

import numpy as np
import pytest

import clsim
from clsim import (
    get_global_id,
    kernel,
    sub_group_reduce_add,
    sub_group_reduce_max,
    sub_group_shuffle_xor,
    work_group_reduce_add,
    work_group_scan_exclusive_add,
)
from verify import orders

F = np.float32


def _left(v):
    a = v[0]
    for b in v[1:]:
        a = F(a + b)
    return a


def _tree(v):
    v = list(v)
    h = len(v) // 2
    while h >= 1:
        for i in range(h):
            v[i] = F(v[i] + v[i + h])
        h //= 2
    return v[0]


def _halfpairs(v):
    h = len(v) // 2
    v = [F(v[i] + v[i + h]) for i in range(h)]
    while len(v) > 1:
        v = [F(v[i] + v[i + 1]) for i in range(0, len(v), 2)]
    return v[0]


@kernel
def sg_sum(x, out):
    i = get_global_id(0)
    out[i] = sub_group_reduce_add(x[i])


def _sums(x, size, order, jit):
    out = np.zeros_like(x)
    clsim.run(sg_sum, (x.size,), (64,), (x, out), subgroup_size=size, reduction_order=order,
              jit=jit)
    return out[::size]


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize(("order", "size", "fold"), [
    ("fixed", 16, _left), ("left", 8, _left), ("tree", 16, _tree), ("tree", 8, _tree),
    ("halfpairs", 8, _halfpairs), ("tree16", 16, _tree), ("tree16", 32, _left),
    ("8:halfpairs,16:left", 8, _halfpairs), ("8:halfpairs,16:left", 16, _left),
    ("8:halfpairs", 32, _left),
])
def test_simulator_orders_are_the_documented_folds(order, size, fold, jit):
    """Each reduction_order adds each sub-group's lanes in the documented order, on data whose
    sums differ by order (several orders of magnitude, both signs)."""
    x = orders.probe_data(size)[:256]
    got = _sums(x, size, order, jit)
    want = np.array([fold(x[k:k + size]) for k in range(0, x.size, size)], F)
    assert got.tobytes() == want.tobytes()
    assert not all(_left(x[k:k + size]) == _tree(x[k:k + size]) for k in range(0, 64, size))


def test_an_unknown_order_is_refused_with_the_choices():
    x = np.zeros(16, F)
    with pytest.raises(clsim.InvalidArgumentError, match="halfpairs"):
        clsim.run(sg_sum, (16,), (16,), (x, x.copy()), reduction_order="8:zigzag")


def _desc_scan(v, excl):
    out = []
    for k in range(len(v)):
        hi = k - 1 if excl else k
        a = F(0) if hi < 0 else v[hi]
        for j in range(hi - 1, -1, -1):
            a = F(a + v[j])
        out.append(a)
    return out


def _columns(v, m):
    cols = [_left(v[j::m]) for j in range(m)]
    return _left(cols)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("size", [8, 16])
def test_scan_and_work_group_orders_are_the_documented_folds(size, jit):
    """sub_scan=descending adds lane k's prefix from lane k down to lane 0 (inclusive and
    exclusive); work_reduce=columns folds each sub-group lane over the sub-groups, then the
    lanes; work-group scans and unnamed collectives stay left folds."""
    x = orders.probe_data(size)[: size * 16]
    order = f"{size}:left;sub_scan={size}:descending;work_reduce={size}:columns"
    got = orders._simulated(x, size, order, orders.probe_collectives, 6)
    n, wg = x.size, size * 4
    sub = [x[k:k + size] for k in range(0, n, size)]
    work = [x[k:k + wg] for k in range(0, n, wg)]
    assert got[1].tolist() == [a for v in sub for a in _desc_scan(v, False)]
    assert got[2].tolist() == [a for v in sub for a in _desc_scan(v, True)]
    assert got[3].tolist() == [_columns(v, size) for v in work for _ in v]
    assert got[0].tolist() == [_left(v) for v in sub for _ in v]
    plain = orders._simulated(x, size, "fixed", orders.probe_collectives, 6)
    assert got[4].tobytes() == plain[4].tobytes() and got[5].tobytes() == plain[5].tobytes()
    assert got[1].tobytes() != plain[1].tobytes() and got[3].tobytes() != plain[3].tobytes()


def test_collective_orders_are_checked_by_name():
    x = np.zeros(16, F)
    for bad in ("sub_scan=8:halfpairs", "work_scan=8:descending", "8:left;8:tree",
                "zigzag=8:left"):
        with pytest.raises(clsim.InvalidArgumentError, match="sub_scan"):
            clsim.run(sg_sum, (16,), (16,), (x, x.copy()), reduction_order=bad)


def test_order_for_names_what_was_measured():
    intel = {8: {"sub_reduce": "halfpairs", "sub_scan": "descending", "work_reduce": "columns",
                 "work_scan": "left"},
             16: {"sub_reduce": "left", "sub_scan": "left", "work_reduce": "columns",
                  "work_scan": "left"}}
    assert orders.order_for(intel) == ("8:halfpairs,16:left;sub_scan=8:descending,16:left;"
                                       "work_reduce=8:columns,16:columns")
    assert orders.order_for({8: {"sub_reduce": "left", "sub_scan": "left"}}) == "fixed"
    assert orders.order_for({8: {"sub_reduce": "tree", "work_reduce": "columns"}}) == \
        "8:tree;work_reduce=8:columns"
    assert orders.order_for({8: {"sub_reduce": "left", "sub_scan": "unknown"}}) is None
    assert orders.order_for({}) == "fixed"
    assert orders.order_for({8: "left", 16: "left"}) == "fixed"
    assert orders.order_for({8: "tree", 16: "tree"}) == "tree"
    assert orders.order_for({8: "halfpairs", 16: "left"}) == "8:halfpairs,16:left"
    assert orders.order_for({8: "unknown"}) is None


@pytest.mark.device_requires("subgroups")
def test_simulator_in_the_measured_order_matches_the_device(device, tmp_path, monkeypatch):
    """verify.orders measures the device's order per sub-group size (cached by identity), and
    the simulator run in that order gives the device's sums bit for bit on fresh data."""
    from verify.clrun import run_cl
    from verify.devices import get_device

    monkeypatch.setenv("CLSIM_ORDERS_CACHE", str(tmp_path / "orders.json"))
    info = get_device(device)
    measured = orders.measured_orders(info)
    assert (tmp_path / "orders.json").exists()
    order = orders.order_for(measured)
    if order is None:
        pytest.skip(f"{device}: an order clsim does not model: {measured}")
    rng = np.random.default_rng(99)
    for size, found in measured.items():
        x = (rng.standard_normal(size * 32) * 10.0 ** rng.integers(-2, 6, size * 32)).astype(F)
        if "work_reduce" in found:  # every collective of the probe, on fresh data
            dev = run_cl(info, orders.PROBE_COLLECTIVES_CL, "probe_collectives", (x.size,),
                         (size * 4,), [x, np.zeros(x.size * 6, F)], subgroup_size=size)
            sim = orders._simulated(x, size, order, orders.probe_collectives, 6).ravel()
        else:
            dev = run_cl(info, orders.PROBE_CL, "probe_order", (x.size,), (size * 4,),
                         [x, np.zeros_like(x)], subgroup_size=size)
            sim = orders._simulated(x, size, order)[0]
        assert sim.tobytes() == dev.buffers[1].tobytes(), (size, order)


@pytest.mark.device_requires("subgroups")
def test_the_verifier_simulates_in_the_devices_order(device, tmp_path, monkeypatch):
    """verify.compare runs the simulator in the device's measured order by itself, so a
    correct float sub-group sum agrees bit for bit (policy exact) at every sub-group size the
    device offers, on data where the sum depends on the order."""
    from verify.devices import get_device
    from verify.runner import compare

    monkeypatch.setenv("CLSIM_ORDERS_CACHE", str(tmp_path / "orders.json"))
    monkeypatch.setattr(orders, "_IN_PROCESS", {})
    info = get_device(device)
    if orders.device_reduction_order(info) is None:
        pytest.skip(f"{device}: an order clsim does not model: {orders.measured_orders(info)}")
    sizes = [s for s in orders.PROBE_SIZES if s in info.subgroup_sizes]
    for size in sizes:
        x = orders.probe_data(size)
        out = np.zeros_like(x)
        result = compare(orders.probe_order, orders.PROBE_CL, global_size=x.size,
                         local_size=size * 4, args=[x, out], subgroup_size=size,
                         outputs=["out"], device=device)
        assert result.equal, (size, result.first_difference)


@kernel
def wg_sums(x, total, prefix):
    i = get_global_id(0)
    total[i] = work_group_reduce_add(x[i])
    prefix[i] = work_group_scan_exclusive_add(x[i])


WG_SUMS_CL = """
__kernel void wg_sums(__global const float *x, __global float *total, __global float *prefix) {
    size_t i = get_global_id(0);
    total[i] = work_group_reduce_add(x[i]);
    prefix[i] = work_group_scan_exclusive_add(x[i]);
}
"""


@pytest.mark.device_requires("subgroups")
def test_the_verifier_simulates_work_group_sums_in_the_devices_order(device, tmp_path,
                                                                      monkeypatch):
    """A kernel with float work-group sums and no sub-group builtin: the verifier still runs
    the simulator in the device's order, at the sub-group size the device picked, so the
    sums agree bit for bit (policy exact) on data whose sum depends on the order."""
    from verify.devices import get_device
    from verify.features import missing_feature
    from verify.runner import compare

    info = get_device(device)
    reason = missing_feature(info, "opencl_c_2.0")
    if reason:
        pytest.skip(f"{reason}: work-group functions are OpenCL C 2.0")
    monkeypatch.setenv("CLSIM_ORDERS_CACHE", str(tmp_path / "orders.json"))
    monkeypatch.setattr(orders, "_IN_PROCESS", {})
    if orders.device_reduction_order(info) is None:
        pytest.skip(f"{device}: an order clsim does not model: {orders.measured_orders(info)}")
    x = orders.probe_data(16)[:1024]
    result = compare(wg_sums, WG_SUMS_CL, global_size=x.size, local_size=128,
                     args=[x, np.zeros_like(x), np.zeros_like(x)], outputs=["total", "prefix"],
                     device=device)
    assert result.equal, result.first_difference


@clsim.func
def _lane_max(v):
    return sub_group_reduce_max(v)


@kernel
def sg_max_and_shuffle(x, out):
    i = get_global_id(0)
    top = _lane_max(x[i])
    out[i] = top + sub_group_shuffle_xor(x[i], 1)


@kernel
def sg_sum_in_helper(x, out):
    i = get_global_id(0)
    total = _sum_in_helper(x[i])
    out[i] = total


@clsim.func
def _sum_in_helper(v):
    return sub_group_reduce_add(v)


@pytest.mark.parametrize("order", ["tree", "halfpairs", "shuffled", "8:halfpairs,16:tree"])
def test_an_order_only_changes_the_module_of_kernels_that_sum(order):
    """A kernel without a collective sum or scan adds nothing in an order, so a device's order
    (verify passes one for every sub-group kernel) reuses the default's compiled module; a sum,
    even in a helper, still gets its own."""
    x = np.linspace(-3, 5, 128, dtype=F)

    def module(kern, reduction_order):
        out = np.zeros_like(x)
        result = clsim.run(kern, (x.size,), (64,), (x, out), subgroup_size=16,
                           reduction_order=reduction_order)
        return result.module_path, out

    plain, plain_out = module(sg_max_and_shuffle, None)
    ordered, ordered_out = module(sg_max_and_shuffle, order)
    assert ordered == plain and ordered_out.tobytes() == plain_out.tobytes()
    if order == "tree":  # one order shows it: each is a compile of its own
        assert module(sg_sum_in_helper, order)[0] != module(sg_sum_in_helper, None)[0]
