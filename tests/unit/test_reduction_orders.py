"""Float orders of sub-group reductions: the simulator's orders against numpy folds, the order
a device uses (measured once by verify.orders), and the simulator in that order against the
device, bit for bit."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, sub_group_reduce_add
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


def test_order_for_names_what_was_measured():
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
    for size in measured:
        x = (rng.standard_normal(size * 32) * 10.0 ** rng.integers(-2, 6, size * 32)).astype(F)
        dev = run_cl(info, orders.PROBE_CL, "probe_order", (x.size,), (size * 4,),
                     [x, np.zeros_like(x)], subgroup_size=size).buffers[1]
        sim = np.zeros_like(x)
        clsim.run(orders.probe_order, (x.size,), (size * 4,), (x, sim), subgroup_size=size,
                  reduction_order=order)
        assert sim.tobytes() == dev.tobytes(), (size, order)


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
