"""Lane-major regions under checks="all" (clsim/compiler/lane_emit.py, ``lane_regions`` of
clsim/checks/instrument.py): a region whose loop only reads buffers the kernel never writes
runs lane-major, and the race and uninitialised-read findings, their order and the bytes are
those of the usual form (the instrument with ``lane_regions`` off)."""

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_group_id, get_local_id, get_local_size
from clsim import kernel, local_array
from clsim.checks.instrument import ChecksInstrument


@kernel
def row_sums_racy(x, y, ncols):
    base = get_group_id(0) * ncols
    scratch = local_array(64, np.float32)
    acc = 0.0
    for c in range(get_local_id(0), ncols, get_local_size(0)):
        acc += x[base + c]
    scratch[get_local_id(0) // 2] = acc  # two work-items per element: a race
    barrier(CLK_LOCAL_MEM_FENCE)
    if get_local_id(0) == 0:
        total = 0.0
        for k in range(get_local_size(0)):  # the upper half was never written
            total += scratch[k]
        y[get_group_id(0)] = total


def _findings(lanes: bool, monkeypatch):
    monkeypatch.setattr(ChecksInstrument, "lane_regions", lanes)
    x = np.random.default_rng(2).standard_normal(3 * 70).astype(np.float32)
    y = np.zeros(3, np.float32)
    result = clsim.run(row_sums_racy, (3 * 16,), (16,), (x, y, np.int32(70)), checks="all",
                       report_all=True)
    source = open(result.module_path).read()
    return [f.message for f in result.findings], y.tobytes(), source


def test_findings_and_bytes_are_the_usual_forms(monkeypatch):
    lane, lane_bytes, lane_source = _findings(True, monkeypatch)
    usual, usual_bytes, usual_source = _findings(False, monkeypatch)
    assert "_lmok" in lane_source and "_lmok" not in usual_source
    kinds = {("race" if "race" in m else "uninit" if "which no work-item" in m else m) for m in lane}
    assert kinds == {"race", "uninit"}
    assert lane == usual
    assert lane_bytes == usual_bytes


@pytest.mark.parametrize("written", [False, True])
def test_a_loop_reading_a_written_buffer_keeps_the_usual_form(written):
    """If the kernel also writes x, its loads are recorded: the loop keeps the usual form
    (the instrument must see them in work-item order)."""
    @kernel
    def sums(x, y, ncols):
        acc = 0.0
        for c in range(get_local_id(0), ncols, get_local_size(0)):
            acc += x[get_group_id(0) * ncols + c]
        y[get_group_id(0) * get_local_size(0) + get_local_id(0)] = acc

    @kernel
    def sums_writing(x, y, ncols):
        acc = 0.0
        for c in range(get_local_id(0), ncols, get_local_size(0)):
            acc += x[get_group_id(0) * ncols + c]
        y[get_group_id(0) * get_local_size(0) + get_local_id(0)] = acc
        if ncols < 0:  # never at run time, but x is a written buffer
            x[0] = 1.0

    x = np.ones(2 * 40, np.float32)
    result = clsim.run(sums_writing if written else sums, (16,), (8,),
                       (x, np.zeros(16, np.float32), np.int32(40)), checks="all")
    assert ("_lmok" in open(result.module_path).read()) == (not written)
