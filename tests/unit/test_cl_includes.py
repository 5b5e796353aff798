"""``#include`` in a .cl file clsim hands a device compiler (clsim.cl_includes): only regular
files inside the kernel's own folder are inlined, everything else is refused with file:line
before any compiler sees the source, however the directive is spelled (comments, splices,
trigraphs, digraphs, ``\\r`` line ends). Replay and ``--cl`` apply it; nothing named is
opened."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from clsim.cl_includes import resolve_includes
from clsim.errors import IncludeRefused
from verify import cli
from verify.failures import save_failure
from verify.pairs import read_source
from verify.replay import load_failure_case

KERNEL = "__kernel void vector_add(__global const float* a, __global const float* b,\n" \
         "    __global float* c, const int n) { int i = get_global_id(0);\n" \
         "    if (i < n) c[i] = a[i] + SCALE * b[i]; }\n"


@pytest.fixture
def opened():
    """Every path opened while the test runs."""
    paths: list[str] = []
    live = [True]

    def hook(event: str, args: tuple) -> None:
        if live[0] and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
            paths.append(os.fsdecode(args[0]))

    sys.addaudithook(hook)
    yield paths
    live[0] = False


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    kernel = tmp_path / "kernel"
    (kernel / "inc").mkdir(parents=True)
    (kernel / "inc" / "scale.h").write_text('#include "two.h"\n#define SCALE TWO\n')
    (kernel / "inc" / "two.h").write_text("#define TWO 2.0f\n")
    (tmp_path / "outside.h").write_text("#define SCALE 3.0f\n")
    return kernel


def test_relative_include_is_inlined_with_line_markers(folder):
    source = '// scale\n#include "inc/scale.h"\n' + KERNEL
    resolved = resolve_includes(source, folder, "k.cl")
    assert "#include" not in resolved
    assert "#define TWO 2.0f" in resolved and "#define SCALE TWO" in resolved
    lines = resolved.splitlines()
    # The line after the include is line 3 of k.cl again for the compiler's messages.
    assert lines[lines.index(KERNEL.splitlines()[0]) - 1] == '#line 3 "k.cl"'
    assert resolve_includes(KERNEL, folder, "k.cl") == KERNEL  # nothing to do: unchanged


@pytest.mark.parametrize("line, why", [
    ('#include "/dev/zero"', "absolute path"),
    ('#include "/dev/stdin"', "absolute path"),
    ('#include "/etc/passwd"', "absolute path"),
    ('#include "../outside.h"', '".." component'),
    ('#include "inc/../../outside.h"', '".." component'),
    ("#include <stdio.h>", "quoted"),
    ('#define F "/etc/passwd"\n#include F', "quoted"),
    ('#include_next "inc/two.h"', "not supported"),
    ('#embed "inc/two.h"', "not supported"),
    ('#if __has_include("/etc/passwd")\n#endif', "looks for files"),
    ('#include "missing.h"', "No such file"),
    ('#include "inc"', "not a regular file"),
    # spellings the preprocessor reads as an include
    ('# /* a comment\n spanning lines */ include "/etc/passwd"', "absolute path"),
    ('#inc\\\nlude "/etc/passwd"', "absolute path"),
    ('??=include "/etc/passwd"', "absolute path"),
    ('%:include "/etc/passwd"', "absolute path"),
    ('int x;\r#include "/etc/passwd"', "absolute path"),
    ('char* s = "/*";\n#include "/etc/passwd"\n// */', "absolute path"),
])
def test_refused_includes_name_file_and_line(folder, opened, line, why):
    opened.clear()
    with pytest.raises(IncludeRefused, match=r"^k\.cl:\d+: .*refused: .*" + why):
        resolve_includes(line + "\n" + KERNEL, folder, "k.cl")
    assert not any(p in ("/dev/zero", "/dev/stdin", "/etc/passwd") or "outside" in p
                   for p in opened)


def test_links_out_are_refused(folder, tmp_path):
    (folder / "link.h").symlink_to(tmp_path / "outside.h")
    (folder / "dir").symlink_to(tmp_path)
    for target in ("link.h", "dir/outside.h"):
        with pytest.raises(IncludeRefused, match="is a link"):
            resolve_includes(f'#include "{target}"\n', folder, "k.cl")


def test_self_include_and_text_sources_are_refused(folder):
    (folder / "loop.h").write_text('#include "loop.h"\n')
    with pytest.raises(IncludeRefused, match="includes itself"):
        resolve_includes('#include "loop.h"\n', folder, "k.cl")
    with pytest.raises(IncludeRefused, match="no folder"):
        resolve_includes('#include "inc/two.h"\n', None)
    commented = '/* #include "/etc/passwd" */\n// #include "/etc/passwd"\n' + KERNEL
    assert resolve_includes(commented, None) == commented


def test_cl_file_read_for_verify_resolves_its_includes(folder):
    cl = folder / "k.cl"
    cl.write_text('#include "inc/scale.h"\n' + KERNEL)
    source, path = read_source(str(cl))
    assert path == str(cl.resolve()) and "#define SCALE TWO" in source
    cl.write_text('#include "/etc/passwd"\n' + KERNEL)
    with pytest.raises(IncludeRefused, match=r"k\.cl:1: "):
        read_source(cl)


def _failure(tmp_path: Path, cl: str) -> Path:
    n = 5
    inputs = {"a": np.arange(n, dtype=np.float32), "b": np.ones(n, np.float32),
              "c": np.zeros(n, np.float32), "n": np.int32(n)}
    launch = {"global_size": (8,), "local_size": (4,), "kernel_name": "vector_add",
              "params": ["a", "b", "c", "n"], "options": [], "requires": [],
              "origin": {"kind": "spec", "name": "vector_add"}, "policies": {"c": "exact"},
              "default_policy": "exact", "all_arrays": False}
    return save_failure(tmp_path / "failures", spec_name="vector_add", inputs=inputs,
                        launch=launch, device="pocl", files={"kernel.cl": cl})


@pytest.mark.parametrize("target", ["/dev/zero", "/etc/passwd", "../x.cl"])
def test_replay_refuses_a_saved_include_before_any_device(tmp_path, opened, capsys, target):
    folder = _failure(tmp_path, f'#include "{target}"\n' + KERNEL)
    (tmp_path / "failures" / "x.cl").write_text("#define SCALE 1.0f\n")
    opened.clear()
    with pytest.raises(IncludeRefused, match=r"kernel\.cl:1: .*refused"):
        load_failure_case(folder)
    assert cli.main(["replay", str(folder), "-d", "no-such-device"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "kernel.cl:1" in err and "refused" in err
    assert not any(p in ("/dev/zero", "/etc/passwd") or p.endswith("x.cl") for p in opened)


def test_replay_inlines_an_include_saved_in_its_folder(tmp_path):
    folder = _failure(tmp_path, '#include "scale.h"\n' + KERNEL)
    (folder / "scale.h").write_text("#define SCALE 1.0f\n")
    _, pair, _ = load_failure_case(folder)
    assert "#define SCALE 1.0f" in pair.source and "#include" not in pair.source


def test_pragma_once_headers_are_inlined_once(folder):
    (folder / "once.h").write_text("#pragma once\n#define ONCE 1\n")
    resolved = resolve_includes('#include "once.h"\n#include "once.h"\n', folder, "k.cl")
    assert resolved.count("#define ONCE 1") == 1


def test_line_numbers_follow_line_markers():
    """The verifier puts '#pragma OPENCL FP_CONTRACT OFF' and '#line 1' on top of a source:
    a refusal still names the source's own line."""
    source = "#pragma OPENCL FP_CONTRACT OFF\n#line 1\nint x;\n#include \"/etc/passwd\"\n"
    with pytest.raises(IncludeRefused, match=r"^k\.cl:2: "):
        resolve_includes(source, None, "k.cl")


def test_verify_cl_with_a_bad_include_is_one_line_before_any_device(tmp_path, monkeypatch,
                                                                    capsys, opened):
    from clsim import cli as clsim_cli
    from verify import cli as verify_cli

    monkeypatch.setattr(verify_cli, "_devices", lambda names: [])  # no device is reached
    (tmp_path / "evil.cl").write_text('#include "/dev/zero"\n' + KERNEL)
    opened.clear()
    assert clsim_cli.main(["verify", "vector_add", "--cl", str(tmp_path / "evil.cl")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and 'evil.cl:1: #include "/dev/zero" refused' in err
    assert "/dev/zero" not in opened
