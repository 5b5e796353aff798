"""The README's example runs as written, and compiled kernels are cached on disk."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel

ROOT = Path(__file__).resolve().parents[2]


def test_readme_example_runs(tmp_path):
    """The kernel-writing guide in README.md runs and prints matching sums."""
    code = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)[0]
    script = tmp_path / "example.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_command():
    """README's first lines: install+run and the test suite; .ci/run calls the latter."""
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```bash") + 1: lines.index("```bash") + 3]
    assert block[0].endswith("clsim run softmax")
    assert "pytest" in block[1]
    assert block[1] in (ROOT / ".ci" / "run").read_text()


@kernel
def scale(x, y):
    i = get_global_id(0)
    y[i] = x[i] * 2.0


def test_generated_module_is_cached_on_disk_and_reused(tmp_path, monkeypatch):
    """The generated source lives in CLSIM_CACHE_DIR under a content hash; Numba's cache files
    sit beside it, so another process skips compilation."""
    from clsim.runtime import cache, launch

    monkeypatch.setenv("CLSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(launch, "_COMPILED", {})
    monkeypatch.setattr(cache, "_LOADED", {})
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    first = clsim.run(scale, (8,), (4,), (x, y), jit=True)
    assert Path(first.module_path).parent == tmp_path
    assert list(tmp_path.glob("__pycache__/*.nbi")), "numba cache index written"
    np.testing.assert_array_equal(y, x * 2)
    mtime = Path(first.module_path).stat().st_mtime_ns
    monkeypatch.setattr(launch, "_COMPILED", {})
    monkeypatch.setattr(cache, "_LOADED", {})
    second = clsim.run(scale, (8,), (4,), (x, y), jit=True)
    assert second.module_path == first.module_path
    assert Path(second.module_path).stat().st_mtime_ns == mtime, "file not rewritten"


DOCS_SUPPORT = ROOT / "tests" / "docs_support"
_NOT_RUN = "# not run:"
# Runs one doc's blocks in order in one namespace, as a reader pastes them into one session;
# a block that needs an OpenCL device the machine cannot give exits 77 with the reason.
_RUNNER = """
import json, sys
from clsim.errors import DeviceError
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__doc_example__"}
for number, code in blocks:
    # a real file: clsim reads a kernel's source back (inspect), as from the user's own module
    path = f"{sys.argv[2].replace('.', '_')}_block_{number}.py"
    with open(path, "w") as out:
        out.write(code)
    try:
        exec(compile(code, path, "exec"), namespace)
    except DeviceError as err:
        print(f"block {number} needs an OpenCL device: {str(err).splitlines()[0]}")
        sys.exit(77)
"""


def _python_blocks(path: Path) -> list[str]:
    # Blocks inside list items are indented; they run dedented, as a reader would paste them.
    blocks = re.findall(r"^[ \t]*```python\n(.*?)^[ \t]*```", path.read_text(), re.S | re.M)
    return [textwrap.dedent(code) for code in blocks]


def _runnable(doc: Path) -> list[tuple[int, str]]:
    return [(number, code) for number, code in enumerate(_python_blocks(doc), 1)
            if not code.startswith(_NOT_RUN)]


DOCS = sorted((ROOT / "docs").glob("*.md"))
DOCS_WITH_CODE = [d for d in DOCS if _runnable(d)]


def test_blocks_not_run_say_why():
    """A block is left out only by a first line '# not run: <reason>' with a reason."""
    for doc in DOCS:
        for number, code in enumerate(_python_blocks(doc), 1):
            if code.startswith(_NOT_RUN):
                reason = code.splitlines()[0][len(_NOT_RUN):].strip()
                assert len(reason) > 10, f"{doc.name} block {number}: give the reason"
    assert DOCS_WITH_CODE, "some doc block runs"


@pytest.mark.parametrize("doc", DOCS_WITH_CODE, ids=[d.name for d in DOCS_WITH_CODE])
def test_every_python_block_in_the_docs_runs(doc, tmp_path):
    """Each ```python block of docs/*.md runs (in order, sharing names, in a folder holding
    tests/docs_support: the user's my_kernels.py and saxpy.cl), unless its first line is
    '# not run: <reason>'; a block needing an absent device is a skip saying so."""
    runnable = _runnable(doc)
    for support in DOCS_SUPPORT.iterdir():
        shutil.copy(support, tmp_path / support.name)
    (tmp_path / "blocks.json").write_text(json.dumps(runnable))
    (tmp_path / "run_blocks.py").write_text(_RUNNER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "run_blocks.py", "blocks.json", doc.name],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    if proc.returncode == 77:
        pytest.skip(f"{doc.name}: {proc.stdout.strip()}")
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_docs_verifying_example_uses_names_that_exist():
    """The fuzz example's failure formatter is importable as the doc writes it (it once read
    verify.cli.format_found after a bare 'import verify', an AttributeError on failure)."""
    text = (ROOT / "docs" / "verifying.md").read_text()
    assert "verify.cli.format_found" not in text
    from verify.cli import format_found

    assert callable(format_found)


def test_the_wheel_carries_every_library_cl_twin():
    """kernels_cl is a package whose package-data holds every .cl a library spec names, so
    spec.cl_path works from an installed wheel, not only from a checkout. (Building a wheel
    needs the network for setuptools>=68; checked by hand with 'pip wheel --no-deps -w DIR .'
    and 'pip install --target', where all six twins were present.)"""
    import fnmatch
    import importlib.resources
    import tomllib

    from clsim.spec import all_specs

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "kernels_cl" in config["packages"]["find"]["include"]
    patterns = config["package-data"]["kernels_cl"]
    shipped = importlib.resources.files("kernels_cl")
    for spec in all_specs().values():
        if not spec.cl_path.is_relative_to(ROOT / "kernels_cl"):
            continue  # a user's spec registered by another test
        assert any(fnmatch.fnmatch(spec.cl_file, p) for p in patterns), spec.cl_file
        assert shipped.joinpath(spec.cl_file).is_file(), spec.cl_file
