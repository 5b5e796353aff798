"""Coverage of the OpenCL C front end on ggml's OpenCL kernels (a real client's 392 kernels).

For each kernel of each ``.cl`` file under KERNELS_DIR: translated (the front end wrote it)?
compiled (the simulator's compiler accepted it, argument types from its signature)? and, when
not, the construct that stops it. Prints the table and the counts (all kernels, and without the
files that use images); ``--docs`` rewrites the generated section of docs/opencl-c.md.

Run: python tests/bench/bench_ggml_coverage.py /path/to/ggml-opencl/kernels [--docs]
(the folder is test data from outside the project: nothing of it is copied here).
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from clsim.errors import SimulationError  # noqa: E402
from clsim.frontends.opencl_c.check import compiles  # noqa: E402
from clsim.frontends.opencl_c.load import translate, translated_kernels  # noqa: E402

# ggml-opencl.cpp builds every program with these; a few add -D options (see ggml-opencl.cpp).
OPTIONS = "-cl-std=CL2.0 -cl-mad-enable -cl-unsafe-math-optimizations -cl-finite-math-only " \
          "-cl-fast-relaxed-math"
# The -D options the host code adds to some programs (file name, or a prefix of it -> one option
# string per build the host makes; a kernel counts in the first build that has it). Line
# numbers are ggml-opencl.cpp's.
_GEMV = "-DSIMDGROUP_WIDTH=64"  # adreno_wave_size: 64 on every Adreno (l. 5900)
EXTRA = {
    "flash_attn": ["-D DK=64 -D DV=64 -D BLOCK_M=32 -D BLOCK_N=32"],  # one of its (dk, dv) configs
    "gemv_noshuffle_q1_0_f32.cl": [_GEMV],  # l. 3403
    "gemv_noshuffle_q4_0_f32.cl": [_GEMV],  # l. 3425
    "gemv_noshuffle_q8_0_f32.cl": [_GEMV],  # l. 3768
    # the first of its four builds (l. 3450): rows of 2048 elements
    "gemv_noshuffle_q4_0_f32_spec.cl": [f"-DLINE_STRIDE_A=2048 -DBLOCK_STRIDE_A=16384 {_GEMV}"],
    "mul_mm_f16_f32_kq_kqv.cl": ["", "-DKQV"],  # built twice (l. 2460): kq, then kqv
}
_DEFINED = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)
_KERNEL = re.compile(r"(?:\b|__)kernel\s+void\s+(\w+)")
_IMAGE = re.compile(r"image[123]d|read_image|write_image")
BEGIN, END = "<!-- BEGIN GENERATED: ggml coverage -->", "<!-- END GENERATED: ggml coverage -->"


def blocker(message: str) -> str:
    """A short name for the construct a message names (for the counts)."""
    m = re.search(r"in \w+: (.*?) is not supported by clsim", message)
    text = m.group(1) if m else message.split(": ", 2)[-1]
    text = re.sub(r"\(.*", "", text).strip()
    text = re.sub(r"'\w+'", "'X'", text)
    return text[:90]


def _builds(name: str) -> list[str]:
    """The option strings the host builds ``name`` with (the longest matching EXTRA key)."""
    keys = sorted((k for k in EXTRA if name.startswith(k)), key=len, reverse=True)
    return [f"{OPTIONS} {extra}" for extra in (EXTRA[keys[0]] if keys else [""])]


def _declared_kernels(text: str) -> list[str]:
    """The kernel names a file declares; a name that is a macro (``FA_TILE_NAME``, which the
    file defines to a kernel's name unless the host does) is the name it expands to."""
    macros = set(_DEFINED.findall(text))
    return [n for n in dict.fromkeys(_KERNEL.findall(text)) if n not in macros]


def survey_file(path: Path) -> list[dict]:
    text = path.read_text(errors="replace")
    images = bool(_IMAGE.search(text))
    rows: dict[str, dict] = {}
    error = None
    for options in _builds(path.name):
        try:
            t = translate(str(path), options)
            kernels = translated_kernels(t)
        except SimulationError as exc:
            error = str(exc).splitlines()[0]
            continue
        for name in t.kernel_names:
            if name in rows:
                continue
            fail = t.failure_of(name)
            row = dict(file=path.name, kernel=name, images=images, translated=fail is None,
                       compiled=False, why=fail.message(path.name) if fail else "")
            if name in kernels:
                why = compiles(kernels[name])
                row["compiled"], row["why"] = why is None, why or ""
            elif not fail:
                row["why"] = "kernel not found by the front end"
            rows[name] = row
    for name in _declared_kernels(text):
        if name not in rows:  # behind #if: no build of the host's defines it
            rows[name] = dict(file=path.name, kernel=name, images=images, translated=False,
                              compiled=False, why=error or "not built under these options (#if)")
    return list(rows.values())


def survey(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.cl")):
        began = time.perf_counter()
        rows += survey_file(path)
        print(f"{path.name}: {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    return rows


def summary(rows: list[dict]) -> list[str]:
    def count(sel):
        n = len(sel)
        tr = sum(r["translated"] for r in sel)
        co = sum(r["compiled"] for r in sel)
        return f"{n} kernels: {tr} translated ({100 * tr / max(n, 1):.0f} %), {co} " \
               f"translated and compiled ({100 * co / max(n, 1):.0f} %)"
    out = [f"- all files: {count(rows)}",
           f"- files without images: {count([r for r in rows if not r['images']])}"]
    blockers = collections.Counter(blocker(r["why"]) for r in rows if not r["compiled"])
    out.append("")
    out.append("| blocking construct | kernels |")
    out.append("| --- | --- |")
    out += [f"| {why} | {n} |" for why, n in blockers.most_common(25)]
    return out


def table(rows: list[dict]) -> list[str]:
    out = ["| file | kernel | translated | compiled | blocking construct |",
           "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["compiled"]:
            continue
        why = r["why"].replace("|", "\\|")[:160]
        out.append(f"| {r['file']} | {r['kernel']} | {'yes' if r['translated'] else 'no'} | "
                   f"{'yes' if r['compiled'] else 'no'} | {why} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", type=Path)
    ap.add_argument("--docs", action="store_true", help="rewrite docs/opencl-c.md's table")
    args = ap.parse_args()
    start = time.perf_counter()
    rows = survey(args.kernels)
    lines = summary(rows) + ["", "Kernels that do not compile yet:", ""] + table(rows)
    print("\n".join(lines))
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if args.docs:
        doc = ROOT / "docs" / "opencl-c.md"
        text = doc.read_text()
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        doc.write_text(head + BEGIN + "\n\n" + "\n".join(lines) + "\n\n" + END + tail)


if __name__ == "__main__":
    main()
