"""A spec's ``cl_file`` is found beside the file that defines the spec (docs/kernelspec.md),
also when the spec object is handed to ``verify.fuzz_spec`` from Python (no ``file.py::NAME``
to say where it came from)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from clsim.errors import SimulationError
from verify.pairs import spec_cl_path, spec_pair

DOCS_SUPPORT = Path(__file__).resolve().parents[1] / "docs_support"
_SPEC_FILE = """import numpy as np
from clsim.spec import EXACT, KernelSpec, Launch
from my_kernels import saxpy

SAXPY = KernelSpec(
    name="saxpy_beside", description="y = a*x + y", kernel=saxpy, cl_file="{cl}",
    make_inputs=lambda rng, shape: {{}}, launch=lambda inputs, shape, local=None: None,
    reference=lambda inputs: {{}}, outputs={{"y": EXACT}}, default_shape={{"n": 8}})
"""


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def user_spec(tmp_path, monkeypatch):
    """my_kernels.py in one folder, the spec file and its .cl in another."""
    def make(cl: str = "saxpy.cl", module_name: str = "my_specs_beside"):
        kernels, specs = tmp_path / "kernels", tmp_path / "specs"
        kernels.mkdir(exist_ok=True)
        specs.mkdir(exist_ok=True)
        shutil.copy(DOCS_SUPPORT / "my_kernels.py", kernels / "my_kernels.py")
        shutil.copy(DOCS_SUPPORT / "saxpy.cl", specs / "saxpy.cl")
        (specs / f"{module_name}.py").write_text(_SPEC_FILE.format(cl=cl))
        monkeypatch.syspath_prepend(str(kernels))
        monkeypatch.delitem(sys.modules, "my_kernels", raising=False)
        module = _import(specs / f"{module_name}.py", module_name)
        monkeypatch.setitem(sys.modules, module_name, module)
        return module.SAXPY, specs
    return make


def test_cl_file_is_found_beside_the_spec_file(user_spec):
    spec, folder = user_spec()
    assert spec_cl_path(spec) == (folder / "saxpy.cl").resolve()
    pair = spec_pair(spec)  # what verify.fuzz_spec(spec) builds first
    assert pair.cl_path == str((folder / "saxpy.cl").resolve())
    assert "saxpy" in pair.source


def test_a_missing_cl_file_names_where_it_was_looked_for(user_spec):
    spec, folder = user_spec(cl="nowhere.cl", module_name="my_specs_missing")
    with pytest.raises(SimulationError) as info:
        spec_pair(spec)
    assert str((folder / "nowhere.cl").resolve()) in str(info.value)
    assert "relative to the file that defines the spec" in str(info.value)


def test_library_specs_still_read_kernels_cl():
    import kernels_py  # noqa: F401
    from clsim.spec import get_spec

    spec = get_spec("softmax")
    assert spec_cl_path(spec) == spec.cl_path and spec.cl_path.parent.name == "kernels_cl"
