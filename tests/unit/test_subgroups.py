"""Sub-group and work-group builtins against numpy models.

Every collective is checked for sub-group sizes 1, 4, 7 (not a power of two), 8, 16, 32 and 64,
with one work-group size that is a multiple of the sub-group size and one that is not (so the
last sub-group of a group is smaller), and a global size that leaves the last group smaller
too. The model splits each work-group into sub-groups along the linear local id and applies the
documented order: reductions fold left in lane order, scans run in lane order.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    get_enqueued_num_sub_groups,
    get_global_id,
    get_local_id,
    get_max_sub_group_size,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    sub_group_all,
    sub_group_any,
    sub_group_ballot,
    sub_group_ballot_bit_count,
    sub_group_ballot_bit_extract,
    sub_group_ballot_exclusive_scan,
    sub_group_ballot_find_lsb,
    sub_group_ballot_find_msb,
    sub_group_ballot_inclusive_scan,
    sub_group_broadcast,
    sub_group_clustered_reduce_add,
    sub_group_clustered_reduce_max,
    sub_group_reduce_add,
    sub_group_reduce_max,
    sub_group_reduce_min,
    sub_group_scan_exclusive_add,
    sub_group_scan_exclusive_max,
    sub_group_scan_exclusive_min,
    sub_group_scan_inclusive_add,
    sub_group_scan_inclusive_max,
    sub_group_scan_inclusive_min,
    sub_group_shuffle,
    sub_group_shuffle_down,
    sub_group_shuffle_up,
    sub_group_shuffle_xor,
    work_group_all,
    work_group_any,
    work_group_broadcast,
    work_group_reduce_add,
    work_group_reduce_max,
    work_group_reduce_min,
    work_group_scan_exclusive_add,
    work_group_scan_inclusive_add,
    work_group_scan_inclusive_max,
)

SIZES = (1, 4, 7, 8, 16, 32, 64)
# (sub-group size, work-group size): a multiple and a non-multiple of each sub-group size.
LAUNCHES = [(s, l) for s in SIZES for l in (2 * s, 2 * s + 3)]
IDS = [f"sg{s}-wg{l}" for s, l in LAUNCHES]


def _global(local: int) -> int:
    return 3 * local - min(5, local - 1)  # the last work-group is smaller


def _subgroups(n: int, local: int, size: int):
    """(first global id, length) of every sub-group, groups in order."""
    for g0 in range(0, n, local):
        nl = min(local, n - g0)
        for s0 in range(0, nl, size):
            yield g0 + s0, min(size, nl - s0)


def _groups(n: int, local: int):
    for g0 in range(0, n, local):
        yield g0, min(local, n - g0)


def _run(k, n, local, size, *args, jit=False):
    clsim.run(k, (n,), (local,), args, subgroup_size=size, jit=jit)


def _data(n, dtype, seed=0):
    rng = np.random.default_rng(seed + n)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(n) * 100).astype(dtype)
    return rng.integers(-(2**30), 2**30, n).astype(dtype)  # sums overflow: must wrap


# -- queries ------------------------------------------------------------------------------------
@kernel
def k_queries(out):
    i = get_global_id(0)
    out[i * 6 + 0] = get_sub_group_size()
    out[i * 6 + 1] = get_max_sub_group_size()
    out[i * 6 + 2] = get_num_sub_groups()
    out[i * 6 + 3] = get_sub_group_id()
    out[i * 6 + 4] = get_sub_group_local_id()
    out[i * 6 + 5] = get_enqueued_num_sub_groups()


@pytest.mark.parametrize(("size", "local"), LAUNCHES, ids=IDS)
def test_queries_follow_the_linear_local_id(size, local):
    """Sub-groups are consecutive runs of ``size`` local ids; the last one of a group may be
    smaller and reports its true size; the max size is the launch's size (as the Intel CPU
    runtime reports it); the number of sub-groups counts the group's own (smaller) size."""
    n = _global(local)
    out = np.zeros(n * 6, np.int64)
    _run(k_queries, n, local, size, out)
    got = out.reshape(n, 6)
    enqueued = -(-local // size)
    for g0, nl in _groups(n, local):
        for lid in range(nl):
            sg = lid // size
            want = (min(size, nl - sg * size), size, -(-nl // size), sg, lid % size, enqueued)
            assert tuple(got[g0 + lid]) == want, (g0, lid)


# -- reductions and scans -----------------------------------------------------------------------
def _fold(v, op):
    acc = v[0]
    for b in v[1:]:
        acc = op(acc, b)
    return acc


def _ops(dtype):
    t = np.dtype(dtype).type
    if np.dtype(dtype).kind == "f":
        return {"add": lambda a, b: t(a + b), "min": np.fmin, "max": np.fmax}
    return {"add": lambda a, b: t(np.int64(a) + np.int64(b)), "min": min, "max": max}


def _scan(v, op, excl, ident):
    out, acc = [], None
    for b in v:
        if excl:
            out.append(ident if acc is None else acc)
        acc = b if acc is None else op(acc, b)
        if not excl:
            out.append(acc)
    return np.array(out, v.dtype)


def _ident(op, dtype):
    if op == "add":
        return np.dtype(dtype).type(0)
    if np.dtype(dtype).kind == "f":
        return np.dtype(dtype).type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dtype)
    return np.dtype(dtype).type(info.max if op == "min" else info.min)


@kernel
def k_reduce_add(x, out):
    i = get_global_id(0)
    out[i] = sub_group_reduce_add(x[i])


@kernel
def k_reduce_min(x, out):
    i = get_global_id(0)
    out[i] = sub_group_reduce_min(x[i])


@kernel
def k_reduce_max(x, out):
    i = get_global_id(0)
    out[i] = sub_group_reduce_max(x[i])


@kernel
def k_scan_inclusive_add(x, out):
    i = get_global_id(0)
    out[i] = sub_group_scan_inclusive_add(x[i])


@kernel
def k_scan_inclusive_min(x, out):
    i = get_global_id(0)
    out[i] = sub_group_scan_inclusive_min(x[i])


@kernel
def k_scan_inclusive_max(x, out):
    i = get_global_id(0)
    out[i] = sub_group_scan_inclusive_max(x[i])


@kernel
def k_scan_exclusive_add(x, out):
    i = get_global_id(0)
    out[i] = sub_group_scan_exclusive_add(x[i])


@kernel
def k_scan_exclusive_min(x, out):
    i = get_global_id(0)
    out[i] = sub_group_scan_exclusive_min(x[i])


@kernel
def k_scan_exclusive_max(x, out):
    i = get_global_id(0)
    out[i] = sub_group_scan_exclusive_max(x[i])


FOLD_KERNELS = {
    ("reduce", "add"): k_reduce_add, ("reduce", "min"): k_reduce_min,
    ("reduce", "max"): k_reduce_max,
    ("scan", "add"): k_scan_inclusive_add, ("scan", "min"): k_scan_inclusive_min,
    ("scan", "max"): k_scan_inclusive_max,
    ("xscan", "add"): k_scan_exclusive_add, ("xscan", "min"): k_scan_exclusive_min,
    ("xscan", "max"): k_scan_exclusive_max,
}


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize(("kind", "op"), list(FOLD_KERNELS), ids=lambda v: str(v))
@pytest.mark.parametrize(("size", "local"), LAUNCHES, ids=IDS)
def test_reduce_and_scan_match_lane_order_model(size, local, kind, op, dtype):
    """sub_group_reduce/scan_inclusive/scan_exclusive add/min/max equal the lane-order model bit
    for bit (floats fold left in lane order; int32 sums wrap; exclusive scans start from the
    identity: 0, +inf/INT_MAX for min, -inf/INT_MIN for max)."""
    n = _global(local)
    x = _data(n, dtype)
    out = np.zeros(n, dtype)
    _run(FOLD_KERNELS[kind, op], n, local, size, x, out)
    fn = _ops(dtype)[op]
    for s0, m in _subgroups(n, local, size):
        v = x[s0:s0 + m]
        if kind == "reduce":
            want = np.full(m, _fold(v, fn), dtype)
        else:
            want = _scan(v, fn, kind == "xscan", _ident(op, dtype))
        assert out[s0:s0 + m].tobytes() == want.tobytes(), (s0, m)


def test_reduce_fmin_ignores_nan_and_int64_wraps():
    """min/max reductions on floats ignore NaN (fmin/fmax); 64-bit integer sums wrap."""
    x = np.array([np.nan, 3.0, -1.0, np.nan], np.float32)
    out = np.zeros(4, np.float32)
    _run(k_reduce_min, 4, 4, 4, x, out)
    assert (out == -1.0).all()
    big = np.array([2**62, 2**62, 2**62, 0], np.int64)
    res = np.zeros(4, np.int64)
    _run(k_reduce_add, 4, 4, 4, big, res)
    assert (res == np.int64(-(2**62))).all()


# -- broadcast, votes, shuffles -----------------------------------------------------------------
@kernel
def k_broadcast(x, out):
    i = get_global_id(0)
    lane = (get_sub_group_id() * 5 + 3) % get_sub_group_size()
    out[i] = sub_group_broadcast(x[i], lane)


@kernel
def k_votes(x, out):
    i = get_global_id(0)
    out[i * 2] = sub_group_any(x[i] > 150.0)
    out[i * 2 + 1] = sub_group_all(x[i] > -150.0)


@kernel
def k_shuffle(x, out):
    i = get_global_id(0)
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    out[i * 4] = sub_group_shuffle(x[i], (lane * 3 + 1) % width)
    mask = 1
    if (lane ^ 1) >= width:
        mask = 0
    out[i * 4 + 1] = sub_group_shuffle_xor(x[i], mask)
    out[i * 4 + 2] = sub_group_shuffle_up(x[i], 1)
    out[i * 4 + 3] = sub_group_shuffle_down(x[i], 2)


@pytest.mark.parametrize(("size", "local"), LAUNCHES, ids=IDS)
def test_broadcast_votes_and_shuffles(size, local):
    """broadcast takes the named lane's value; any/all vote per sub-group (1/0); shuffle reads
    lane idx, shuffle_xor lane ^ mask; shuffle_up/down read lane -/+ delta and, where that
    lane does not exist (undefined in OpenCL), return the lane's own value."""
    n = _global(local)
    x = _data(n, "float32", seed=1)
    out = np.zeros(n, np.float32)
    _run(k_broadcast, n, local, size, x, out)
    votes = np.zeros(2 * n, np.int32)
    _run(k_votes, n, local, size, x, votes)
    shuf = np.zeros(4 * n, np.float32)
    _run(k_shuffle, n, local, size, x, shuf)
    votes, shuf = votes.reshape(n, 2), shuf.reshape(n, 4)
    for s0, m in _subgroups(n, local, size):
        v = x[s0:s0 + m]
        sg = (s0 % local) // size
        assert (out[s0:s0 + m] == v[(sg * 5 + 3) % m]).all()
        assert (votes[s0:s0 + m, 0] == int((v > 150).any())).all()
        assert (votes[s0:s0 + m, 1] == int((v > -150).all())).all()
        for j in range(m):
            assert shuf[s0 + j, 0] == v[(j * 3 + 1) % m]
            assert shuf[s0 + j, 1] == v[j ^ 1 if (j ^ 1) < m else j]
            assert shuf[s0 + j, 2] == v[j - 1 if j >= 1 else j]
            assert shuf[s0 + j, 3] == v[j + 2 if j + 2 < m else j]


@kernel
def k_clustered(x, out):
    i = get_global_id(0)
    out[i * 2] = sub_group_clustered_reduce_add(x[i], 4)
    out[i * 2 + 1] = sub_group_clustered_reduce_max(x[i], 4)


@pytest.mark.parametrize(("size", "local"), [p for p in LAUNCHES if p[0] >= 4],
                         ids=[i for p, i in zip(LAUNCHES, IDS, strict=True) if p[0] >= 4])
def test_clustered_reduce(size, local):
    """sub_group_clustered_reduce_* reduces each run of 4 lanes (the last cluster of a smaller
    sub-group may be shorter), folding left in lane order."""
    n = _global(local)
    x = _data(n, "float32", seed=2)
    out = np.zeros(2 * n, np.float32)
    _run(k_clustered, n, local, size, x, out)
    out = out.reshape(n, 2)
    add = _ops("float32")["add"]
    for s0, m in _subgroups(n, local, size):
        for c0 in range(0, m, 4):
            v = x[s0 + c0:s0 + min(c0 + 4, m)]
            assert (out[s0 + c0:s0 + c0 + v.size, 0] == _fold(v, add)).all()
            assert (out[s0 + c0:s0 + c0 + v.size, 1] == v.max()).all()


@kernel
def k_ballot(x, out):
    i = get_global_id(0)
    b = sub_group_ballot(x[i] > 0.0)
    out[i * 6] = sub_group_ballot_bit_count(b)
    out[i * 6 + 1] = sub_group_ballot_inclusive_scan(b)
    out[i * 6 + 2] = sub_group_ballot_exclusive_scan(b)
    out[i * 6 + 3] = sub_group_ballot_find_lsb(b)
    out[i * 6 + 4] = sub_group_ballot_find_msb(b)
    out[i * 6 + 5] = sub_group_ballot_bit_extract(b, get_sub_group_local_id())


@pytest.mark.parametrize(("size", "local"), LAUNCHES, ids=IDS)
def test_ballot_family(size, local):
    """sub_group_ballot sets bit j for each lane j whose predicate holds (a uint4, up to 128
    lanes); bit_count, inclusive/exclusive_scan (bits at or below / below this lane),
    find_lsb/msb (UINT_MAX when no bit is set) and bit_extract read it."""
    n = _global(local)
    x = _data(n, "float32", seed=3)
    out = np.zeros(6 * n, np.int64)
    _run(k_ballot, n, local, size, x, out)
    out = out.reshape(n, 6)
    for s0, m in _subgroups(n, local, size):
        p = x[s0:s0 + m] > 0
        bits = np.nonzero(p)[0]
        lsb = bits[0] if bits.size else 2**32 - 1
        msb = bits[-1] if bits.size else 2**32 - 1
        for j in range(m):
            want = (p.sum(), p[:j + 1].sum(), p[:j].sum(), lsb, msb, int(p[j]))
            assert tuple(out[s0 + j]) == want, (s0, j)


# -- work-group collectives ---------------------------------------------------------------------
@kernel
def k_work_group(x, out):
    i = get_global_id(0)
    lid = get_local_id(0)
    v = x[i]
    out[i * 8] = work_group_reduce_add(v)
    out[i * 8 + 1] = work_group_reduce_min(v)
    out[i * 8 + 2] = work_group_reduce_max(v)
    out[i * 8 + 3] = work_group_scan_inclusive_add(v)
    out[i * 8 + 4] = work_group_scan_exclusive_add(v)
    out[i * 8 + 5] = work_group_scan_inclusive_max(v)
    out[i * 8 + 6] = work_group_broadcast(v, lid // 1000)
    out[i * 8 + 7] = work_group_any(v > 200.0) + 2 * work_group_all(v > -200.0)


@pytest.mark.parametrize("local", [1, 7, 16, 50, 64])
def test_work_group_collectives(local):
    """work_group_reduce/scan/broadcast/any/all over the whole group (the last group smaller),
    in linear local id order; independent of the sub-group size."""
    n = _global(local)
    x = _data(n, "float32", seed=4)
    out = np.zeros(8 * n, np.float32)
    _run(k_work_group, n, local, 4, x, out)
    out = out.reshape(n, 8)
    add = _ops("float32")["add"]
    for g0, nl in _groups(n, local):
        v = x[g0:g0 + nl]
        got = out[g0:g0 + nl]
        assert (got[:, 0] == _fold(v, add)).all()
        assert (got[:, 1] == v.min()).all() and (got[:, 2] == v.max()).all()
        assert got[:, 3].tobytes() == _scan(v, add, False, 0).tobytes()
        assert got[:, 4].tobytes() == _scan(v, add, True, np.float32(0)).tobytes()
        assert (got[:, 5] == np.maximum.accumulate(v)).all()
        assert (got[:, 6] == v[0]).all()
        assert (got[:, 7] == int((v > 200).any()) + 2 * int((v > -200).all())).all()


@kernel
def k_wg_broadcast_2d(x, out):
    gx = get_global_id(0)
    gy = get_global_id(1)
    i = gy * 6 + gx
    out[i] = work_group_broadcast(x[i], 2, 1)


def test_work_group_broadcast_in_two_dimensions():
    """work_group_broadcast(x, lx, ly) takes the value of the work-item at local id (lx, ly)."""
    x = np.arange(24, dtype=np.float32)
    out = np.zeros(24, np.float32)
    clsim.run(k_wg_broadcast_2d, (6, 4), (3, 2), (x, out), jit=False)
    grid = x.reshape(4, 6)
    want = np.empty((4, 6), np.float32)
    for by in range(2):
        for bx in range(2):
            want[by * 2:by * 2 + 2, bx * 3:bx * 3 + 3] = grid[by * 2 + 1, bx * 3 + 2]
    assert (out.reshape(4, 6) == want).all()


def test_two_dimensional_groups_linearise_local_ids():
    """In a 2-D group the sub-groups run along the linear id lx + ly * Lx."""
    out = np.zeros(4 * 3 * 6, np.int64)

    @kernel
    def k2(out):
        i = get_global_id(1) * 4 + get_global_id(0)
        out[i * 6] = get_sub_group_id()
        out[i * 6 + 1] = get_sub_group_local_id()
        out[i * 6 + 2] = sub_group_reduce_add(get_global_id(1) * 100 + get_global_id(0))
        out[i * 6 + 3] = get_sub_group_size()

    clsim.run(k2, (4, 3), (4, 3), (out,), subgroup_size=5, jit=False)
    got = out.reshape(12, 6)
    for lin in range(12):
        sg = lin // 5
        members = [divmod(k, 4) for k in range(sg * 5, min(sg * 5 + 5, 12))]
        want_sum = sum(yy * 100 + xx for yy, xx in members)
        assert tuple(got[lin, :4]) == (sg, lin % 5, want_sum, len(members))


# -- modes --------------------------------------------------------------------------------------
def test_jit_and_no_jit_agree_for_every_collective():
    """The compiled (Numba) and plain-Python modes give identical bytes."""
    n, local, size = _global(20), 20, 8
    x = _data(n, "float32", seed=5)
    outs = []
    for jit in (True, False):
        a = np.zeros(4 * n, np.float32)
        b = np.zeros(8 * n, np.float32)
        c = np.zeros(6 * n, np.int64)
        _run(k_shuffle, n, local, size, x, a, jit=jit)
        _run(k_work_group, n, local, size, x, b, jit=jit)
        _run(k_ballot, n, local, size, x, c, jit=jit)
        d = np.zeros(n, np.float32)
        _run(k_scan_exclusive_add, n, local, size, x, d, jit=jit)
        outs.append(b"".join(v.tobytes() for v in (a, b, c, d)))
    assert outs[0] == outs[1]


def test_default_subgroup_size_is_32():
    """Without subgroup_size, sub-groups have 32 lanes."""
    out = np.zeros(64 * 6, np.int64)
    clsim.run(k_queries, (64,), (64,), (out,), jit=False)
    assert out.reshape(64, 6)[0, 1] == 32 and out.reshape(64, 6)[40, 3] == 1
