"""Shared benchmark helpers: timing, machine description, appending to docs/performance.md."""

from __future__ import annotations

import datetime
import os
import platform
import time
from pathlib import Path

import kernels_py  # noqa: F401  (registers the library's specs for clsim.spec.get_spec)

PERFORMANCE_MD = Path(__file__).resolve().parents[2] / "docs" / "performance.md"


def best_of(fn, repeats: int = 7) -> float:
    """Best wall time of ``fn()`` over ``repeats`` runs (after the caller warmed it up)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def best_interleaved(fns: dict, rounds: int = 15) -> dict:
    """Best time of each callable, measured round-robin so background load hits all alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], best_of(fn, repeats=1))
    return best


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def append_section(title: str, lines: list[str]) -> None:
    PERFORMANCE_MD.parent.mkdir(exist_ok=True)
    if not PERFORMANCE_MD.exists():
        PERFORMANCE_MD.write_text("# Performance\n\nMeasured by the scripts in tests/bench/; each "
                                  "section records the date and machine it ran on.\n")
    stamp = datetime.date.today().isoformat()
    text = f"\n## {title}\n\n{stamp}, {machine()}.\n\n" + "\n".join(lines) + "\n"
    with PERFORMANCE_MD.open("a") as f:
        f.write(text)
