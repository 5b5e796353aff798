"""Verify benchmark: ``clsim verify softmax -d intel-cpu -n 100`` with the simulator's checks
(``checks="all"``, the default since issue 23) against without (``--no-checks``,
``checks="default"``), same seed, so both draw the same 100 cases (``verify.seeding``: before
it, the modules each mode had loaded changed Hypothesis' draws). The reference comparison
runs in both. Rounds alternate the two modes so background load hits both alike; the
simulator's memo is cleared before each run (it would otherwise serve the second mode).

Target (issue 23): with checks at most 1.3x without.

Run: python tests/bench/bench_verify_checks.py [--write]   (--write: append a section to\ndocs/performance.md)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import append_section  # noqa: E402

from clsim.spec import get_spec  # noqa: E402
from verify import jit_choice, runner  # noqa: E402
from verify.fuzz import fuzz_spec  # noqa: E402

TARGET = 1.3
EXAMPLES = int(os.environ.get("BENCH_EXAMPLES", "100"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
DEVICE = os.environ.get("BENCH_DEVICE", "intel-cpu")
SEED = 23


def once(checks: str, examples: int, folder: str) -> tuple[float, float]:
    """Wall seconds, and this process's CPU seconds (the simulator and the draws; the device
    runs in its worker process): on a loaded machine the CPU ratio is the steadier one."""
    runner._memo.clear()
    jit_choice.reset()  # each run earns its compiles again (a fresh process would)
    start, cpu = time.perf_counter(), time.process_time()
    report = fuzz_spec(get_spec("softmax"), DEVICE, examples=examples, seed=SEED,
                       failures_dir=folder, checks=checks)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if report.skipped or not report.equal:
        raise SystemExit(f"softmax on {DEVICE}: {report.skipped or report.found}")
    return elapsed, cpu


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for checks in ("default", "all"):  # worker start, probes, generated modules
            once(checks, 5, folder)
        best = {"default": [float("inf")] * 2, "all": [float("inf")] * 2}
        for n in range(ROUNDS):
            for checks in best:
                seconds, cpu = once(checks, EXAMPLES, folder)
                print(f"round {n + 1}: checks={checks} {seconds:.2f} s, {cpu:.2f} CPU s, load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
                best[checks] = [min(best[checks][0], seconds), min(best[checks][1], cpu)]
    ratio, cpu_ratio = (best["all"][k] / best["default"][k] for k in (0, 1))
    lines = [
        f"`clsim verify softmax -d {DEVICE} -n {EXAMPLES} --seed {SEED}`, best of {ROUNDS} "
        "alternating rounds (the same drawn cases in both modes; reference compared in both):",
        "",
        "| simulator checks | seconds | ratio | CPU s (this process) | ratio | target |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| `--no-checks` (bounds, divergence) | {best['default'][0]:.2f} | 1.00 | "
        f"{best['default'][1]:.2f} | 1.00 | |",
        f"| default (`checks=\"all\"`) | {best['all'][0]:.2f} | {ratio:.2f} | "
        f"{best['all'][1]:.2f} | {cpu_ratio:.2f} | <= {TARGET} |",
    ]
    print("\n".join(lines))
    if "--write" in sys.argv:
        append_section("Verify with and without the simulator's checks "
                       "(tests/bench/bench_verify_checks.py)", lines)


if __name__ == "__main__":
    main()
