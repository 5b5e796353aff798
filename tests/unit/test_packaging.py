"""What `pip install -e '.[devices]'` must bring: every package the library's kernels, the
verifier and the CLI import is a runtime dependency (or an extra whose absence is a clear
error), and a library module that fails to import is one CLI line naming the module and the
package, never a shorter kernel list."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Imported only where used, each with its own message: matplotlib (`--plot`, the 'plot' extra);
# pytest (verify.pytest_plugin and verify.testing are pytest plugins, loaded by pytest itself).
OPTIONAL = {"matplotlib": "plot", "pytest": "test"}
# Import names whose distribution is named otherwise (clang.cindex comes with libclang).
IMPORT_NAME = {"pocl_binary_distribution": "pocl-binary-distribution", "clang": "libclang"}


def _requirement_names(requirements) -> set[str]:
    names = set()
    for req in requirements:
        name = req.split(";")[0]
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        names.add(name.strip().lower())
    return names


def _imported_packages(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.partition(".")[0])
    return tops


def test_every_imported_package_is_a_runtime_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _requirement_names(project["dependencies"])
    ours = {"clsim", "kernels_py", "verify", "kernels_cl"}
    missing = {}
    for folder in ("clsim", "kernels_py", "verify"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for top in _imported_packages(path) - ours - set(sys.stdlib_module_names):
                dist = IMPORT_NAME.get(top, top).lower()
                if dist in runtime:
                    continue
                extra = OPTIONAL.get(top)
                if extra and dist in _requirement_names(project["optional-dependencies"][extra]):
                    continue
                missing.setdefault(top, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"imported but not in [project].dependencies: {missing}"


def _cli_with_package_missing(package: str, argv: list[str]) -> subprocess.CompletedProcess:
    """Run the CLI in a fresh interpreter where ``import package`` fails as if not installed."""
    code = (f"import sys; sys.modules[{package!r}] = None\n"  # None: ModuleNotFoundError
            "from clsim.cli import main\n"
            f"sys.exit(main({argv!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


@pytest.mark.parametrize("argv", [["list"], ["run", "softmax"]])
def test_a_library_module_that_cannot_import_is_an_error_naming_it(argv):
    done = _cli_with_package_missing("gguf", argv)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # never a shorter kernel list
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "kernels_py.gemv_quant" in done.stderr or "kernels_py.gguf" in done.stderr
    assert "package 'gguf' is not installed" in done.stderr, done.stderr


def test_a_command_module_that_cannot_import_is_an_error_naming_it():
    done = _cli_with_package_missing("hypothesis", ["verify", "softmax"])
    assert done.returncode == 2, done.stderr
    assert "verify." in done.stderr and "package 'hypothesis'" in done.stderr, done.stderr
