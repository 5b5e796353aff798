"""Regions of 2-D groups run unchecked once every index is proven in range
(clsim/compiler/proven.py, proven_emit.py): nested ``_ly``/``_lx`` loops in the usual
work-item order, the same bytes as plain Python, and the usual form (with its first error)
whenever the proof fails."""

import itertools
import subprocess
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_local_id, kernel, local_array
from clsim.explain_speed import run_explained
from kernels_py.matmul import TILE
from kernels_py.matmul import matmul_tiled as tiled


def _tiled(m, n, k, *, a_len=None, **options):
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a = rng.standard_normal(a_len or m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    c = np.full(m * n, -1.0, np.float32)
    grid = (-(-n // TILE) * TILE, -(-m // TILE) * TILE)
    result = clsim.run(tiled, grid, (TILE, TILE),
                       (a, b, c, np.int32(m), np.int32(n), np.int32(k)), **options)
    return c, result


@pytest.mark.parametrize(("m", "n", "k"), [(16, 24, 32), (29, 13, 21), (1, 1, 1)])
def test_proven_regions_give_plain_pythons_bytes(m, n, k):
    """The library's tiled matmul, sizes not multiples of the tile (a group of 13 rows, 13
    columns, a last tile of 5): the proven form in the JIT module against plain Python,
    which runs the usual form."""
    fast, result = _tiled(m, n, k)
    plain, _ = _tiled(m, n, k, jit=False)
    assert fast.tobytes() == plain.tobytes()
    source = open(result.module_path).read()
    assert source.count("for _ly in range(_L1):") == 3  # loads, products, the store
    # the products' tile indices are inside at compile time: no usual form beside them
    assert source.count("for _lid in range(_NL):") == 3  # the first region, loads, store


@pytest.mark.parametrize("jit", [True, False])
def test_an_index_the_proof_rejects_runs_the_usual_form_and_reports_it(jit):
    """``a`` one element short: the loads' proof fails and the usual form reports the first
    failing work-item, as plain Python does."""
    with pytest.raises(clsim.OutOfBoundsError) as info:
        _tiled(8, 8, 8, a_len=63, jit=jit)
    assert (info.value.buffer, info.value.index, info.value.gid) == ("a", 63, (7, 7))


@kernel
def wrapping(x, y, f, g, h, k):
    tx = get_local_id(0)
    ty = get_local_id(1)
    y[ty * 4 + tx] = x[f * g + h * k + tx]  # f * g is int32 arithmetic: it wraps


def test_an_index_whose_int32_arithmetic_wraps_is_not_proven():
    """f * g = 2 * (2**31 - 1) wraps in int32 to -2; h * k (int64) is 5 - f * g computed
    without wrapping, so f * g + h * k + tx would be 5 + tx, inside x, while the
    work-items compute -2 + h * k + tx, far below 0. Every factor is below 2**31, the terms
    are not: the proof gives up on such magnitudes, so the usual form runs and reports the
    index the work-item computes, as plain Python does."""
    x = np.arange(16, dtype=np.float32)
    f, g, h, k = 2, 2 ** 31 - 1, -3, 1431655763
    assert h * k == 5 - f * g
    errors = []
    for jit in (True, False):
        with pytest.raises(clsim.OutOfBoundsError) as info:
            clsim.run(wrapping, (4, 2), (4, 2), (x, np.zeros(8, np.float32), np.int32(f),
                                                 np.int32(g), np.int64(h), np.int64(k)),
                      jit=jit)
        errors.append((info.value.buffer, info.value.index, info.value.gid))
    assert errors[0] == errors[1] == ("x", -2 + h * k, (0, 0))


@kernel
def strided_rows(x, y, start, step, n):
    tx = get_local_id(0)
    ty = get_local_id(1)
    acc = 0.0
    for k in range(start, n, step):
        acc += x[k * 4 + tx]
    y[ty * 4 + tx] = acc


@pytest.mark.parametrize(("start", "step", "n", "fails"), [
    (0, 1, 4, False), (1, 3, 4, False), (3, 1, 0, False), (0, 1, 5, True), (2, 2, 5, True)])
def test_a_loop_inside_a_proven_region_is_bounded_by_its_last_value(start, step, n, fails):
    """The loop's variable runs from its start to its last value: with step 3 and n = 4 the
    last is 1 (4 is past the range), a loop with no trips reads nothing, and when the last
    trip reads past ``x`` (k = 4: x[16 + tx]) the proof fails and the usual form reports
    it, as plain Python does."""
    x = np.arange(16, dtype=np.float32)
    outs = []
    for jit in (True, False):
        y = np.zeros(8, np.float32)
        args = (x, y, np.int32(start), np.int32(step), np.int32(n))
        try:
            clsim.run(strided_rows, (4, 2), (4, 2), args, jit=jit)
            outs.append(y.tobytes())
        except clsim.OutOfBoundsError as exc:
            outs.append((exc.buffer, exc.index, exc.gid))
    assert outs[0] == outs[1]
    assert isinstance(outs[0], tuple) == fails


SCRIPT = """\
import sys
import numpy as np
sys.path.insert(0, {root!r})
import clsim
from kernels_py.matmul import matmul_tiled
m = n = k = 32
a, b, c = np.ones(m * k, np.float32), np.ones(k * n, np.float32), np.zeros(m * n, np.float32)
clsim.run(matmul_tiled, (n, m), (16, 16), (a, b, c, np.int32(m), np.int32(n), np.int32(k)))
"""


def test_llvm_vectorises_the_proven_loops_and_not_the_checked_ones(tmp_path):
    """What the proof is for: LLVM's remarks (clsim.explain_speed, a child process with
    empty caches) report the proven lane loops of the tiled kernel vectorised (the products
    with kk unrolled, the loads now that row and col are recomputed, the store), and none of
    the usual form's checked lines. At least two, so that a target without masked loads
    still passes."""
    script = tmp_path / "tiled_once.py"
    script.write_text(SCRIPT.format(root=str(Path(__file__).resolve().parents[2])))
    code, summary, others = run_explained([str(script)], stdout=subprocess.DEVNULL)
    assert code == 0, others
    pairs = [(remark, source) for remark, source in itertools.pairwise(summary)
             if remark.lstrip().startswith("line ")]
    proven = [remark for remark, source in pairs
              if "np.uint64(" in source or source.strip() == "for _lx in range(_L0):"]
    checked = [remark for remark, source in pairs if "_ck(" in source]
    assert sum("vectorised, width" in remark for remark in proven) >= 2, summary
    assert checked and not any("vectorised, width" in remark for remark in checked), summary


@kernel
def reversed_tile(x, y):
    tx = get_local_id(0)
    ty = get_local_id(1)
    tile = local_array((4, 4), np.float32)
    tile[ty, tx] = x[ty * 4 + tx]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[ty * 4 + tx] = tile[3 - ty, tx]


@kernel
def shifted_tile(x, y):
    tx = get_local_id(0)
    ty = get_local_id(1)
    tile = local_array((4, 4), np.float32)
    tile[ty, tx] = x[ty * 4 + tx]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[ty * 4 + tx] = tile[3 - ty, tx] + tile[ty + 1, tx]  # row 4 for ty = 3


@pytest.mark.parametrize("kern", [reversed_tile, shifted_tile])
def test_local_indices_are_proven_at_compile_time_only_when_inside(kern):
    """tile[3 - ty, tx] is inside the 4x4 tile for every work-item of a 4x4 group, known
    before the module runs; tile[ty + 1, tx] is not (row 4 for ty = 3), so that region gets
    a proof at run time, which fails, and the usual form reports the first failing
    work-item, as plain Python does (an index wrongly taken as inside would read past the
    tile unchecked and raise nothing)."""
    outs = []
    for jit in (True, False):
        y = np.zeros(16, np.float32)
        try:
            clsim.run(kern, (4, 4), (4, 4), (np.arange(16, dtype=np.float32), y), jit=jit)
            outs.append(y.tolist())
        except clsim.OutOfBoundsError as exc:
            outs.append((exc.buffer, exc.index, exc.gid))
    assert outs[0] == outs[1]
    if kern is reversed_tile:
        assert outs[0] == np.arange(16).reshape(4, 4)[::-1].ravel().tolist()
    else:
        assert outs[0] == ("tile", 4, (0, 3))
