"""Image benchmark: a float4 read of an image1d_buffer_t (read_imagef) against the same read
of a buffer (vload4), 2^20 work-items, JIT, interleaved in one run, with the default bounds
checks and with checks="none".

Run: python tests/bench/bench_images.py   (appends a section to docs/performance.md)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import append_section, best_interleaved  # noqa: E402

import clsim  # noqa: E402
from clsim import get_global_id, read_imagef, vload4  # noqa: E402

N = 1 << 20


@clsim.kernel
def via_image(a, out):
    i = get_global_id(0)
    v = read_imagef(a, i)
    out[i] = v.x + v.y + v.z + v.w


@clsim.kernel
def via_buffer(a, out):
    i = get_global_id(0)
    v = vload4(i, a)
    out[i] = v.x + v.y + v.z + v.w


def main() -> None:
    a = np.random.default_rng(0).random((N, 4)).astype(np.float32)
    out = np.zeros(N, np.float32)
    lines = ["| checks | read_imagef (ms) | vload4 (ms) | ratio |", "| --- | --- | --- | --- |"]
    for checks in ("bounds", "none"):
        kw = {"checks": "none"} if checks == "none" else {}
        fns = {"image": lambda kw=kw: clsim.run(via_image, (N,), (256,),
                                                (clsim.Image(a), out), **kw),
               "buffer": lambda kw=kw: clsim.run(via_buffer, (N,), (256,),
                                                 (a.reshape(-1), out), **kw)}
        for fn in fns.values():
            fn()  # compile
        best = best_interleaved(fns, rounds=7)
        ratio = best["image"] / best["buffer"]
        lines.append(f"| {checks} | {best['image'] * 1e3:.2f} | {best['buffer'] * 1e3:.2f} | "
                     f"{ratio:.2f} |")
        print(lines[-1])
    lines.append("")
    lines.append("A pixel read tests its coordinate inline and calls the addressing helper only "
                 "outside the image; with the helper called on every read the bounds-checked "
                 "ratio was 6.0.")
    append_section("Images: read_imagef against vload4", lines)


if __name__ == "__main__":
    main()
