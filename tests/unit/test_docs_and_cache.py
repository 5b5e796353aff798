"""The README's example runs as written, and compiled kernels are cached on disk."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

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
