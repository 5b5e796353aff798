"""The README's test command deselects tests marked ``slow`` (long sweeps, fuzz campaigns);
``--slow``, ``-m slow`` or the ``thorough`` Hypothesis profile run them (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_TESTS = """import pytest


@pytest.mark.slow
def test_a_long_sweep():
    pass


def test_the_feature():
    pass
"""


def _run(tmp_path: Path, *args: str, profile: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CLSIM_HYPOTHESIS_PROFILE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if profile:
        env["CLSIM_HYPOTHESIS_PROFILE"] = profile
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "0", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def suite(tmp_path):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_selection_case.py").write_text(_TESTS)
    return tmp_path


@pytest.mark.parametrize("args, profile, passed, deselected", [
    ((), None, 1, 1),
    (("--slow",), None, 2, 0),
    pytest.param(("-m", "slow"), None, 1, 1, marks=pytest.mark.slow),  # slow ones alone
    ((), "thorough", 2, 0),
])
def test_slow_tests_run_only_when_asked(suite, args, profile, passed, deselected):
    out = _run(suite, *args, profile=profile)
    assert re.search(rf"\b{passed} passed\b", out), out
    if deselected:
        assert re.search(rf"\b{deselected} deselected\b", out), out
    else:
        assert "deselected" not in out, out


def test_the_marker_is_declared_with_its_reason(pytestconfig):
    line = next(m for m in pytestconfig.getini("markers") if m.startswith("slow:"))
    assert "under 10 minutes" in line and "--slow" in line
