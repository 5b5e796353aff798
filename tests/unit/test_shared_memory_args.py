"""One array bound to parameters of different pointee types (ggml's rope passes src0's buffer,
a char*, again as the float* src2): views of the same bytes with other dtypes are one buffer in
the simulator, in the verifier's copies, across the pickling to a device worker, and through a
saved case and its replay. Views over different bytes are still refused (``verify.clargs``)."""

import pickle

import numpy as np
import pytest

import clsim
from clsim import get_global_id
from clsim.errors import InvalidArgumentError
from verify.clargs import copy_args, memory_groups, pack_shared, unpack_shared

REINTERPRET_CL = """
__kernel void reinterpret(__global uchar* src0, __global float* dst, __global float* src2)
{
    int i = get_global_id(0);
    src2[i] = src2[i] + 1.0f;
    dst[i] = (float)src0[4 * i + 3];
}
"""


@clsim.kernel
def reinterpret(src0, dst, src2):
    i = get_global_id(0)
    src2[i] = src2[i] + np.float32(1.0)
    dst[i] = np.float32(src0[4 * i + 3])  # the top byte of the float just written


@pytest.mark.parametrize("jit", [True, False])
def test_simulator_binds_one_memory_as_two_types(jit):
    data = np.ones(16, np.float32)
    dst = np.zeros(16, np.float32)
    clsim.run(reinterpret, (16,), (16,), (data.view(np.uint8), dst, data), jit=jit)
    assert np.array_equal(dst, np.full(16, 0x40)) and np.array_equal(data, np.full(16, 2.0))


def test_views_of_the_same_bytes_are_one_memory_group():
    data = np.arange(16, dtype=np.float32)
    raw = data.view(np.uint8)
    assert memory_groups([raw, np.zeros(3), data, data.view(np.int32).reshape(4, 4)]) == \
        [0, 1, 0, 0]


@pytest.mark.parametrize("second", [
    lambda base: base[1:17],  # another offset
    lambda base: base[0:8].view(np.uint8),  # the same start, fewer bytes
    lambda base: base[0:16:2],  # not contiguous
])
def test_views_over_other_bytes_are_still_refused(second):
    base = np.zeros(17, np.float32)
    with pytest.raises(InvalidArgumentError, match="overlapping views"):
        memory_groups([base[0:16], second(base)], "k")


def test_copies_and_worker_messages_keep_the_sharing():
    """copy_args gives the second parameter a view of the first one's copy; pack_shared lets the
    sharing survive pickling (which would copy each view into an array of its own)."""
    data = np.ones(16, np.float32)
    copies = copy_args([data.view(np.uint8), data])
    assert copies[1].dtype == np.float32 and np.shares_memory(copies[0], copies[1])
    assert not np.shares_memory(copies[0], data)
    sent = pickle.loads(pickle.dumps(pack_shared([data.view(np.uint8), np.int32(3), data])))
    arrived = unpack_shared(sent)
    assert arrived[2].dtype == np.float32 and arrived[2].shape == (16,)
    assert np.shares_memory(arrived[0], arrived[2]) and np.array_equal(arrived[2], data)
    plain = pickle.loads(pickle.dumps([data.view(np.uint8), data]))
    assert not np.shares_memory(plain[0], plain[1])  # why pack_shared exists


def test_two_type_alias_survives_save_and_replay(tmp_path):
    from verify.fuzz import save_case
    from verify.pairs import make_case, make_pair
    from verify.replay import load_failure_case

    data = np.ones(16, np.float32)
    pair = make_pair(reinterpret, REINTERPRET_CL)
    case = make_case(pair, 16, 16, [data.view(np.uint8), np.zeros(16, np.float32), data])
    path = save_case(pair, case, "pocl", comparison=None, error="planted", seed_value=1,
                     failures_dir=tmp_path, stage="found")
    _failure, _pair, loaded = load_failure_case(path, kernel=f"{__file__}::reinterpret")
    assert loaded.args["src2"].dtype == np.float32
    assert np.shares_memory(loaded.args["src0"], loaded.args["src2"])
