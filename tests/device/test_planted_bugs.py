"""Bugs both twins share fail ``clsim verify`` on every device (issue 23): device and simulator
may agree on them, so only the simulator's checks (on by default) or its bounds check can
find them, and the report must carry the finding's message. The twins and what is wrong with
each are in tests/device/planted_bugs.py and kernels_cl/planted/."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import kernels_py  # noqa: F401  (registers the library's specs)
import planted_bugs
from clsim.spec import get_spec
from verify import cli
from verify.pairs import default_case, spec_case, spec_pair
from verify.runner import run_pair

FILE = Path(__file__).resolve().parent / "planted_bugs.py"
EXPECTED = {  # spec variable -> what the report must say
    "MISSING_BARRIER": "are not separated by a barrier",
    "WRONG_FENCE": "separated only by a barrier(CLK_LOCAL_MEM_FENCE), which does not order "
                   "global memory",
    "UNINIT_LOCAL": "load of local tile[0], which no work-item of work-group",
    "READ_PAST_END": "OutOfBoundsError",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_planted_bug_fails_verify(name, device, tmp_path, capsys):
    code = cli.main(["verify", f"{FILE}::{name}", "-d", device, "-n", "3", "--seed", "1",
                     "--no-progress", "--failures-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert EXPECTED[name] in out, out
    assert "expected" not in out and "actual" not in out, out


def test_no_checks_leaves_races_out(device):
    """``checks="default"`` (``clsim verify --no-checks``) runs no race check: the wrong
    fence has no findings then, and has one under the default."""
    spec = planted_bugs.WRONG_FENCE
    pair = spec_pair(spec)
    inputs = spec.make_inputs(np.random.default_rng(0), {"n": 128})
    case = spec_case(spec, inputs, {"n": 128})
    assert run_pair(pair, case, device, checks="default").findings == ()
    checked = run_pair(pair, case, device)
    assert checked.checks == "all" and not checked.equal
    assert any(f.category == "race" for f in checked.findings)
    assert 'simulator checks="all"' in checked.disagreeing


def test_reference_is_the_third_side(device):
    """A reference that disagrees with both twins fails the case although device and
    simulator agree, and the report says which side; edge-value cases skip the reference."""
    spec = replace(get_spec("vector_add"), reference=lambda i: {"c": i["a"] - i["b"]})
    pair = spec_pair(spec)
    case = default_case(spec, {"n": 100})
    result = run_pair(pair, case, device)
    assert result.outputs.equal and not result.equal
    assert result.disagreeing == ["simulator vs reference"]
    assert "simulator vs reference: DIFFER" in result.describe()
    assert run_pair(pair, replace(case, edge_values=True), device).reference is None
