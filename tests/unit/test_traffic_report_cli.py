"""``clsim report path/file.py::SPEC``: a KernelSpec from a user file, found as ``clsim verify``
finds it (clsim/traffic/cli.py)."""

from __future__ import annotations

import pytest

from clsim.errors import SimulationError
from clsim.traffic.cli import variants


def test_report_takes_a_spec_from_a_user_file(tmp_path):
    """The named KernelSpec variable of the file is the one variant run."""
    path = tmp_path / "mine.py"
    path.write_text("from kernels_py.vector_add import SPEC as MY_ADD\n")
    chosen = variants([f"{path}::MY_ADD"])
    assert [spec.name for spec in chosen] == ["vector_add"]


def test_report_names_a_missing_spec_in_a_user_file(tmp_path):
    """A file without that spec: an error naming the file and the specs it has."""
    path = tmp_path / "empty.py"
    path.write_text("X = 1\n")
    with pytest.raises(SimulationError, match="defines no KernelSpec named 'NOPE'"):
        variants([f"{path}::NOPE"])
