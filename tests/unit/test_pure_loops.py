"""Work-item loops whose error checks wait for the loop's end (clsim/compiler/pure_loops.py),
and work-item ids read again instead of from context arrays (clsim/compiler/remat.py): the
same buffers and the same first error as checking after every access."""

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
)


@kernel
def row_sums(x, out, n):
    lid = get_local_id(0)
    acc = 0.0
    for k in range(n):
        acc += x[lid * 4 + k]  # work-item 1 reads past the end at k = 3 when n = 5
    out[lid] = acc


@kernel
def copy_rows(x, y, n):
    lid = get_local_id(0)
    for k in range(n):
        y[lid * n + k] = x[lid + k * 3]  # a store in the loop: not pure


@kernel
def lid_after_barrier(x, y):
    lid = get_local_id(0)
    scratch = local_array(64, np.float32)
    scratch[lid] = x[lid]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[lid] = scratch[63 - lid] + lid


@pytest.mark.parametrize("jit", [True, False])
def test_the_first_failing_load_of_a_pure_loop_is_reported(jit):
    """Work-item 0 fails at index 8 (k = 3 of 5 over 8 elements); work-item 1 would fail
    first at index 8 too, but work-item 0 is first: its index and id are reported, and no
    output is written (the group stopped before its store)."""
    x = np.arange(8, dtype=np.float32)
    out = np.full(2, -1.0, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(row_sums, (2,), (2,), (x, out, np.int32(9)), jit=jit)
    assert (info.value.buffer, info.value.index, info.value.gid) == ("x", 8, (0,))
    assert (out == -1.0).all()


@pytest.mark.parametrize("jit", [True, False])
def test_a_loop_storing_to_a_buffer_stops_at_its_failing_load(jit):
    """copy_rows stores while it loads: the stores before the failing load happen, none
    after its statement (x has 7 elements; work-item 0 reads x[0], x[3], x[6], then x[9]
    fails; that statement's store still writes the safe index's value, as the engine's
    per-statement check always did)."""
    x = np.arange(7, dtype=np.float32)
    y = np.full(10, -1.0, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(copy_rows, (2,), (2,), (x, y, np.int32(5)), jit=jit)
    assert (info.value.index, info.value.gid) == (9, (0,))
    assert y.tolist() == [0.0, 3.0, 6.0, 0.0] + [-1.0] * 6


def test_a_local_id_read_after_a_barrier_has_no_context_array():
    """lid is read in the region after the barrier as the id itself, with the same result."""
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    result = clsim.run(lid_after_barrier, (64,), (64,), (x, y))
    assert np.array_equal(y, x[::-1] + np.arange(64, dtype=np.float32))
    assert "v_lid__c" not in open(result.module_path).read()


@kernel
def offsets_after_barrier(x, y, n):
    lid = get_local_id(0)
    off = get_group_id(0) * get_local_size(0) + lid * n - 1  # ids, fixed values, a parameter
    scratch = local_array(64, np.float32)
    scratch[lid] = x[off + 1]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[off + 1] = scratch[63 - lid]


@kernel
def offsets_of_a_changed_private(x, y, n):
    lid = get_local_id(0)
    m = n
    off = lid * m
    m = m + 1  # off keeps the value it was given: not recomputed from m
    barrier(CLK_LOCAL_MEM_FENCE)
    y[lid] = x[off] + m


@pytest.mark.parametrize("jit", [True, False])
def test_an_expression_of_ids_and_fixed_values_is_recomputed(jit):
    """off (group id, group size, local id, the parameter n, + - *) is read after the
    barrier as its expression again: no context array, the same values; an expression of a
    private assigned twice stays in its context array."""
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    result = clsim.run(offsets_after_barrier, (128,), (64,), (x, y, np.int32(1)), jit=jit)
    assert y.tolist() == [float(g * 64 + 63 - i) for g in range(2) for i in range(64)]
    assert "v_off__c" not in open(result.module_path).read()
    y = np.zeros(64, np.float32)
    result = clsim.run(offsets_of_a_changed_private, (64,), (64,),
                       (x, y, np.int32(2)), jit=jit)
    assert y.tolist() == [float(2 * i + 3) for i in range(64)]
    assert "v_off__c" in open(result.module_path).read()


@clsim.func
def window_sum(x, at):
    s = 0.0
    for j in range(WINDOW // 2):  # a constant division: folded, no check
        s += x[at + j]
    return s


WINDOW = 8
NEG_SEVEN = -7
TWO = 2


@kernel
def window_sums(x, y):
    lid = get_local_id(0)
    y[lid] = window_sum(x, lid * 3)


@kernel
def c_division(y):
    y[0] = NEG_SEVEN // TWO
    y[1] = NEG_SEVEN % TWO


@pytest.mark.parametrize("jit", [True, False])
def test_a_helpers_pure_loop_reports_its_first_failing_load(jit):
    """The helper's loop checks the error once after it ends: work-item 2 reads x[6..9] and
    fails first at x[8] (x has 8 elements), as checking after every load would report. The
    work-items before it stored their sums and the failing call's statement its zero, as
    after every failing statement."""
    y = np.full(3, -1.0, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(window_sums, (3,), (3,), (np.arange(8, dtype=np.float32), y), jit=jit)
    assert (info.value.buffer, info.value.index, info.value.gid) == ("x", 8, (2,))
    assert y.tolist() == [6.0, 18.0, 0.0]
    y = np.zeros(2, np.float32)
    result = clsim.run(window_sums, (2,), (2,), (np.arange(8, dtype=np.float32), y), jit=jit)
    assert y.tolist() == [6.0, 18.0]
    source = open(result.module_path).read()
    helper = source[source.index("def _f_window_sum"):source.index("def _group")]
    # one check, after the loop (not in its body), and no division helper
    assert helper.count("if _err[0] != 0:") == 1 and "\n    if _err[0] != 0:" in helper
    assert "_idiv" not in helper


def test_a_division_of_constants_is_cs_truncating_one():
    """-7 / 2 is -3 and -7 % 2 is -1 in C (Python's // and % give -4 and 1), folded."""
    y = np.zeros(2, np.int32)
    result = clsim.run(c_division, (1,), (1,), (y,))
    assert y.tolist() == [-3, -1]
    assert "_idiv" not in open(result.module_path).read()
