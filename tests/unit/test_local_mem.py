"""``local T *`` kernel parameters sized by the host (issue 22): the argument is
``clsim.LocalMem(nbytes)`` (the object ``verify`` passes to devices), the parameter is that
many bytes of local memory per work-group, typed by ``p = view(p, T)``; accesses are checked
against its size, and checks and the traffic model see a local array."""

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    view,
)
from verify.clrun import LocalMem as VerifyLocalMem

JIT = pytest.mark.parametrize("jit", [False, True])


@kernel
def group_sums(x, y, sums):
    sums = view(sums, np.float32)  # C: local float *sums
    lid = get_local_id(0)
    sums[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid == 0:
        s = np.float32(0)
        for j in range(get_local_size(0)):
            s += sums[j]
        y[get_group_id(0)] = s


@JIT
@pytest.mark.parametrize("options", [{}, {"checks": "all"}, {"traffic": True}])
def test_local_mem_is_each_groups_local_memory(jit, options):
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(4, np.float32)
    clsim.run(group_sums, (16,), (4,), (x, y, clsim.LocalMem(16)), jit=jit, **options)
    np.testing.assert_array_equal(y, x.reshape(4, 4).sum(axis=1))


def test_local_mem_is_one_class_with_verify():
    assert clsim.LocalMem is VerifyLocalMem


@JIT
def test_local_mem_is_bounds_checked_against_its_size(jit):
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(group_sums, (16,), (4,), (np.zeros(16, np.float32), np.zeros(4, np.float32),
                                            clsim.LocalMem(8)), jit=jit)
    assert "'sums' has 8 bytes" in str(info.value)


@kernel
def racy(y, scratch):
    scratch[get_local_id(0) // 2] = np.uint8(1)  # two work-items store one byte
    y[get_global_id(0)] = 0


def test_checks_see_local_mem_as_local_memory():
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(racy, (8,), (4,), (np.zeros(8, np.int32), clsim.LocalMem(4)), checks="all")
    assert "scratch" in str(info.value)


@pytest.mark.parametrize("size", [0, -4, 2.5])
def test_local_mem_size_is_positive_bytes(size):
    with pytest.raises(clsim.InvalidArgumentError):
        clsim.LocalMem(size)


def test_local_mem_counts_against_the_devices_local_memory():
    with pytest.raises(clsim.SimulationError) as info:
        clsim.run(group_sums, (16,), (4,), (np.zeros(16, np.float32), np.zeros(4, np.float32),
                                            clsim.LocalMem(1 << 30)))
    assert "local" in str(info.value)
