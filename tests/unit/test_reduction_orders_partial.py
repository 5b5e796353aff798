"""Partial last sub-groups in the measured reduction orders: "halfpairs" halves by the
sub-group size, as if the missing lanes were zeros (the Intel CPU runtime at 8 lanes), and on
a device with sub-groups the simulator in the device's measured order matches every collective
of the order probe bit for bit at local sizes that are not a multiple of the sub-group size
(24 at 16, 40 at 32, 12 and 20 at 8), "columns" work-group sums included."""

import numpy as np
import pytest

import clsim
from verify.clrun import run_cl
from verify.devices import get_device
from verify.orders import (
    _NOUT,
    OUTPUTS,
    PROBE_COLLECTIVES_CL,
    device_reduction_order,
    partial_local,
    probe_collectives,
    probe_order,
)
from verify.testing import device_params

F = np.float32


def _halfpairs_sums(x: np.ndarray, local: int) -> np.ndarray:
    out = np.zeros_like(x)
    clsim.run(probe_order, (x.size,), (local,), (x, out), subgroup_size=8,
              reduction_order="8:halfpairs", jit=False, checks="none")
    return out


def test_halfpairs_on_a_partial_sub_group_halves_by_the_sub_group_size():
    """4 lanes of an 8-lane sub-group: (x0 + x1) + (x2 + x3) (lane i pairs with the missing
    lane i + 4), not the 4-lane halving (x0 + x2) + (x1 + x3); 5 lanes:
    ((x0 + x4) + x1) + (x2 + x3)."""
    x = np.array([1e8, 1.0, -1e8, 1.0, 3.0, 2.5e-3, 7.0, 1e-3, 1e8, 1.0, -1e8, 1.0], F)
    out = _halfpairs_sums(x, 12)
    t = x[8:]
    assert out[8] == (t[0] + t[1]) + (t[2] + t[3]) == F(0.0)
    assert (t[0] + t[2]) + (t[1] + t[3]) == F(2.0)  # the order these data tell apart
    y = np.array([0.0] * 8 + [1e8, 1.0, -1e8, 1.0, 0.5], F)
    s = y[8:]
    assert _halfpairs_sums(y, 13)[8] == ((s[0] + s[4]) + s[1]) + (s[2] + s[3])


def test_probe_covers_a_partial_last_sub_group():
    assert [partial_local(s) % s for s in (8, 16, 32)] == [4, 8, 16]


PARTIAL = [(8, 12), (8, 20), (16, 24), (32, 40), (8, partial_local(8)), (16, 40)]


@pytest.mark.parametrize("device", device_params(requires=("subgroups",)))
def test_measured_order_matches_partial_sub_groups_on_the_device(device):
    info = get_device(device)
    order = device_reduction_order(info)
    if order is None:
        pytest.skip(f"{device}: its measured order matches none of clsim's")
    rng = np.random.default_rng(5)
    for size, local in PARTIAL:
        if size not in info.subgroup_sizes:
            continue
        n = local * 8
        x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 9, n)).astype(F)
        dev = run_cl(info, PROBE_COLLECTIVES_CL, "probe_collectives", (n,), (local,),
                     [x, np.zeros(n * _NOUT, F)], subgroup_size=size).buffers[1]
        sim = np.zeros(n * _NOUT, F)
        clsim.run(probe_collectives, (n,), (local,), (x, sim), subgroup_size=size,
                  reduction_order=order, jit=False, checks="none")
        dev, sim = dev.reshape(_NOUT, n), sim.reshape(_NOUT, n)
        for collective, rows in OUTPUTS.items():
            for k in rows:
                assert sim[k].tobytes() == dev[k].tobytes(), (size, local, collective, k)
