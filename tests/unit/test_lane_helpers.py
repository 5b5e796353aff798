"""Straight-line helpers inlined into a strided work-item loop (clsim/compiler/lane_inline.py)
and run lane-major with the helper's own loop outside the lanes (lane_proof.py,
lane_emit.py): the bytes of the usual form, the usual first error when an index would fail."""

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
    private_array,
)
from kernels_py.gemv_quant import q4_0_dot
from kernels_py.gguf_structs import BLOCK_Q4_0, QK


@clsim.func
def past_the_field(w, ib, x, x_at):
    """Reads qs[0..QK-1] of a 16-byte field: index 16 is outside it."""
    sumq = 0.0
    for j in range(QK):
        sumq += np.float32(w[ib].qs[j]) * x[x_at + j]
    return sumq


@kernel
def gemv(blocks, x, y, nb):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    acc = 0.0
    for b in range(lid, nb, wg):
        acc += q4_0_dot(blocks, row * nb + b, x, b * QK)
    scratch = local_array(64, np.float32)
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid == 0:
        total = 0.0
        for k in range(wg):
            total += scratch[k]
        y[row] = total


@kernel
def gemv_last(blocks, x, y, nb):
    acc = 0.0
    for b in range(get_local_id(0), nb, get_local_size(0)):
        acc = past_the_field(blocks, get_group_id(0) * nb + b, x, b * QK)
    y[get_group_id(0) * get_local_size(0) + get_local_id(0)] = acc


def _inputs(rows, nb, seed=0):
    rng = np.random.default_rng(seed)
    blocks = np.zeros(rows * nb, BLOCK_Q4_0)
    blocks["d"] = rng.standard_normal(rows * nb).astype(np.float16)
    blocks["qs"] = rng.integers(0, 256, (rows * nb, QK // 2), dtype=np.uint8)
    x = rng.standard_normal(nb * QK).astype(np.float32)
    return blocks, x


def _gemv(blocks, x, rows, nb, local, **options):
    y = np.full(rows, np.nan, np.float32)
    result = clsim.run(gemv, (rows * local,), (local,), (blocks, x, y, np.int32(nb)),
                       **options)
    return y, result


@pytest.mark.parametrize(("rows", "nb", "local"), [(3, 130, 64), (2, 5, 8), (1, 64, 64)])
def test_an_inlined_helper_runs_lane_major_with_the_usual_bytes(rows, nb, local):
    """Default checks (the helper inlined, its loop outside the lanes) and checks="all"
    (blocks and x are never written: the race checks record none of their loads) against
    traffic counting (it observes every access: the helper stays a function, the usual
    form) and plain Python: identical bytes, with a last trip of partial lanes."""
    blocks, x = _inputs(rows, nb)
    fast, result = _gemv(blocks, x, rows, nb, local)
    checked, checked_run = _gemv(blocks, x, rows, nb, local, checks="all")
    usual, counted = _gemv(blocks, x, rows, nb, local, traffic=True)
    plain, _ = _gemv(blocks, x, rows, nb, local, jit=False)
    assert fast.tobytes() == checked.tobytes() == usual.tobytes() == plain.tobytes()
    assert not np.isnan(fast).any()
    for run in (result, checked_run):
        source = open(run.module_path).read()
        assert "def _f_q4_0_dot" not in source  # inlined
        assert "for _lj" in source and "_lmok" in source  # its loop outside, lanes inside
    assert "def _f_q4_0_dot" in open(counted.module_path).read()


@pytest.mark.parametrize("jit", [True, False])
def test_a_short_x_runs_the_usual_form_and_reports_the_first_failing_work_item(jit):
    """x holds 2 blocks and 10 values of a third: the proof before the region fails and the
    usual form reports work-item 2's first failing load, x[80] (x[64 + 0 + 16]), at the
    helper's own source line, as the helper called as a function does."""
    blocks, x = _inputs(1, 3)
    x = x[:2 * QK + 10].copy()
    messages = []
    for checks in ("default", "all"):
        y = np.zeros(1, np.float32)
        with pytest.raises(clsim.OutOfBoundsError) as info:
            clsim.run(gemv, (4,), (4,), (blocks, x, y, np.int32(3)), jit=jit, checks=checks)
        assert (info.value.buffer, info.value.index, info.value.gid) == ("x", 80, (2,))
        messages.append(str(info.value))
    assert "x[x_at + j + QK // 2]" in messages[0]
    assert messages[0] == messages[1]


@pytest.mark.parametrize("jit", [True, False])
def test_a_field_index_past_its_length_is_reported_as_before(jit):
    """qs[16] of a 16-byte field: the proof of the field index fails, and the usual form
    reports it as the helper called as a function (checks="all") does."""
    blocks, x = _inputs(2, 3)
    errors = []
    for checks in ("default", "all"):
        y = np.zeros(8, np.float32)
        with pytest.raises(clsim.OutOfBoundsError) as info:
            clsim.run(gemv_last, (8,), (4,), (blocks, x, y, np.int32(3)), jit=jit,
                      checks=checks)
        errors.append((info.value.buffer, info.value.index, info.value.gid, str(info.value)))
    assert errors[0][2] == (0,)
    assert errors[0] == errors[1]


@clsim.func
def four_sum(p):
    """Sum of p[0..3], through a pointer argument."""
    s = 0.0
    for k in range(4):
        s += p[k]
    return s


@clsim.func
def filled_sum(x, at):
    """1 + the sum of x[at..at+3]: the 1 read from a private array's fill (a builtin with an
    effect of its own, the array's declaration)."""
    ones = private_array(4, np.float32, fill=1.0)
    s = ones[0]
    for k in range(4):
        s += x[at + k]
    return s


@kernel
def pointer_sums(x, y, nb):
    acc = 0.0
    for b in range(get_local_id(0), nb, get_local_size(0)):
        acc += four_sum(x + b * 4)
    y[get_group_id(0) * get_local_size(0) + get_local_id(0)] = acc


@kernel
def filled_sums(x, y, nb):
    acc = 0.0
    for b in range(get_local_id(0), nb, get_local_size(0)):
        acc += filled_sum(x, b * 4)
    y[get_group_id(0) * get_local_size(0) + get_local_id(0)] = acc


@pytest.mark.parametrize(("kern", "helper"), [(pointer_sums, "four_sum"),
                                              (filled_sums, "filled_sum")])
def test_helpers_with_pointer_arguments_or_private_arrays_stay_functions(kern, helper):
    """A pointer expression as an argument (``x + b * 4``) or a private array in the helper:
    the call is not inlined (the helper stays a generated function), and the results are
    plain Python's."""
    x = np.arange(40, dtype=np.float32)
    outs = []
    for jit in (True, False):
        y = np.zeros(8, np.float32)
        result = clsim.run(kern, (8,), (8,), (x, y, np.int32(10)), jit=jit)
        outs.append(y.tobytes())
    assert outs[0] == outs[1]
    one = 1 if kern is filled_sums else 0
    expected = [sum(range(4 * b, 4 * b + 4)) + one for b in range(10)]
    assert np.frombuffer(outs[0], np.float32).tolist() == [
        sum(expected[b] for b in range(lid, 10, 8)) for lid in range(8)]
    assert f"def _f_{helper}" in open(result.module_path).read()
