"""Kernels too large for Numba (a long unrolled sequence of statements, as in ggml's q-GEMVs):
over the line limit (clsim.runtime.jit_limit) they run as plain Python with a warning instead
of exhausting the compiler's memory, and a compile that still runs out of stack or memory is a
KernelCompileError saying why, never the raw RecursionError or MemoryError."""

import importlib.util

import numpy as np
import pytest

import clsim
from clsim.runtime import jit_limit


def _straight_kernel(folder, n: int):
    """A kernel of ``n`` statements ``acc = acc + x[i + k] * c`` and its numpy reference."""
    lines = ["import numpy as np", "import clsim", "from clsim import get_global_id", "",
             "", "@clsim.kernel", "def straight(x, out):", "    i = get_global_id(0)",
             "    acc = np.float32(0.0)"]
    lines += [f"    acc = acc + x[i + {k}] * np.float32({k % 7 + 1}.0)" for k in range(n)]
    lines.append("    out[i] = acc")
    path = folder / f"straight_{n}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"straight_{n}_{id(folder)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.random.default_rng(n).random(n + 16).astype(np.float32)
    want = np.zeros(16, np.float32)
    for k in range(n):
        want = want + x[k:k + 16] * np.float32(k % 7 + 1)
    return module.straight, x, want


def test_a_kernel_over_the_line_limit_runs_as_plain_python(tmp_path, monkeypatch):
    monkeypatch.setenv("CLSIM_JIT_MAX_LINES", "60")
    kern, x, want = _straight_kernel(tmp_path, 40)
    out = np.zeros(16, np.float32)
    with pytest.warns(RuntimeWarning, match=r"straight: the generated function _group is "
                                            r"\d+ lines, over the 60"):
        result = clsim.run(kern, (16,), (16,), (x, out), jit=True)
    assert result.jit is False
    np.testing.assert_array_equal(out, want)  # float32 adds in the same order


def test_a_kernel_under_the_line_limit_is_compiled(tmp_path, monkeypatch):
    monkeypatch.setenv("CLSIM_JIT_MAX_LINES", "200")
    kern, x, want = _straight_kernel(tmp_path, 40)
    out = np.zeros(16, np.float32)
    result = clsim.run(kern, (16,), (16,), (x, out), jit=True)
    assert result.jit is True
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("raised, words", [
    (RecursionError("maximum recursion depth exceeded"), "ran out of stack (RecursionError)"),
    (MemoryError(), "ran out of memory (MemoryError)"),
])
def test_numba_running_out_of_stack_or_memory_is_a_compile_error(tmp_path, monkeypatch,
                                                                  raised, words):
    """Numba's SSA pass raised RecursionError at N=500 and MemoryError at N=2000; injected
    here into that pass on a fresh cache (so the kernel really compiles)."""
    import numba.core.untyped_passes as passes

    def fail(func_ir):
        raise raised

    monkeypatch.setenv("CLSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(passes, "reconstruct_ssa", fail)
    kern, x, _want = _straight_kernel(tmp_path, 3)
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(kern, (16,), (16,), (x, np.zeros(16, np.float32)), jit=True)
    assert words in str(info.value) and "straight:" in str(info.value)
    assert "jit=False" in str(info.value)


def test_longest_function_and_a_bad_limit():
    source = "x = 1\n\n@_jit\ndef _a(p):\n    return p\n\ndef _group(q):\n    a = 1\n" \
             "    b = 2\n    return a\n\nY = 2\n"
    assert jit_limit.longest_function(source) == ("_group", 5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CLSIM_JIT_MAX_LINES", "many")
        with pytest.raises(clsim.InvalidArgumentError, match="CLSIM_JIT_MAX_LINES='many'"):
            jit_limit.line_limit()
