"""A cold ``clsim run softmax``: the whole command in a fresh process, from a temporary folder,
with an empty kernel cache (a temporary ``CLSIM_CACHE_DIR``).

"First run after install" also empties Numba's cache of clsim's own code compiled once per
machine (a temporary ``NUMBA_CACHE_DIR``: the shared runtime helpers
``clsim/runtime/helper_lib.py``, the traffic step counter ``clsim/traffic/steps.py``, the
checks' ``clsim/checks/native_lib.py`` and ``native_entry.py``) and Python's bytecode cache
of every package (a temporary ``PYTHONPYCACHEPREFIX``); "first run of a fresh checkout" runs
a copy of the tree without bytecode and with an empty Numba cache, the packages' bytecode as
their install wrote it (what ``pip install -e .`` in a fresh clone leaves). By default the
checks' helpers compile in a second process beside the kernel (``checks_beside``; "one
process": ``CLSIM_SIDE_BY_SIDE=0``). Traffic is counted only
with ``--traffic`` (issue 21); those cases compile the traffic variant beside the main one in a
second process (what the CLI does on more than one core) or, for comparison, one after the
other (``traffic_launch.SIDE_BY_SIDE = False``).

Targets: the first run after install of ``clsim run softmax`` under 10 s on 2 idle cores
(issue 21); with a warm Numba cache, a cold kernel cache under 6 s, under 10 s with
``--check all`` (issue 13). On a loaded machine the wall time says little; the CPU seconds of
the command's critical path are the idle wall time's estimate (each compile runs in one
thread; the launch itself takes milliseconds): the main process's, or its CPU until it
started the checks' second process plus that process's plus its own after waiting for it.
Run: python tests/bench/bench_cold_run.py [--write] [--rounds N] [--only WORDS]
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import append_section, machine

ROOT = Path(__file__).resolve().parents[2]
# The command, plus on stderr the CPU seconds of this process and of its children, and this
# process's CPU seconds when it started the checks' second process and when it stopped waiting
# for it (clsim.commands.checks_beside): the critical path's CPU seconds, the idle wall time's
# estimate now that two processes compile at once.
_DRIVER = """import resource, sys
import clsim.commands.traffic_launch as t
t.SIDE_BY_SIDE = {side}
from clsim.commands import checks_beside as cb
def cpu(who=resource.RUSAGE_SELF):
    u = resource.getrusage(who)
    return u.ru_utime + u.ru_stime
stamps = {{}}
init, wait = cb.ChecksBeside.__init__, cb.ChecksBeside.wait
def init_(self, *a, **k):
    init(self, *a, **k)
    stamps["fork"] = cpu()
def wait_(self):
    wait(self)
    stamps["waited"] = cpu()
cb.ChecksBeside.__init__, cb.ChecksBeside.wait = init_, wait_
from clsim.cli import main
try:
    code = main(sys.argv[1:])
finally:
    print(f"CPU main {{cpu():.3f}} children {{cpu(resource.RUSAGE_CHILDREN):.3f}} "
          f"fork {{stamps.get('fork', -1):.3f}} waited {{stamps.get('waited', -1):.3f}}",
          file=sys.stderr)
sys.exit(code)
"""
# What is empty besides the kernel cache: "checkout" a fresh copy of the tree (no bytecode of
# clsim, an empty Numba cache; the packages' bytecode as their install wrote it), "all" also
# every package's bytecode (PYTHONPYCACHEPREFIX), "kernels" nothing else.
CASES = [  # (label, extra argv, side by side, what is empty, target s)
    ("first run after install", [], True, "all", 10.0),
    ("first run after install, one process", [], False, "all", 10.0),
    ("first run of a fresh checkout", [], True, "checkout", 10.0),
    ("first run of a fresh checkout, one process", [], False, "checkout", 10.0),
    ("--no-checks, cold kernel cache", ["--no-checks"], True, "kernels", 6.0),
    ("cold kernel cache (checks all, the default)", [], True, "kernels", 10.0),
    ("--traffic, first run after install", ["--traffic"], True, "all", None),
    ("--traffic, cold kernel cache, traffic beside", ["--traffic"], True, "kernels", None),
    ("--traffic, cold kernel cache, one after the other", ["--traffic"], False, "kernels",
     None),
]
_TREE = ("clsim", "kernels_py", "kernels_cl", "verify")  # what `clsim run` reads of a checkout


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_run(argv: list[str], side: bool, empty: str) -> tuple[float, float, float, str, str]:
    """Wall seconds of one cold command, the CPU seconds of all its processes and of its
    critical path (``critical_cpu``), its compile line and its stderr notes."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = ROOT
        if empty == "checkout":
            tree = Path(tmp) / "checkout"
            for top in _TREE:
                shutil.copytree(ROOT / top, tree / top,
                                ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "CLSIM_CACHE_DIR": str(Path(tmp) / "kernels"),
               "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's first run writes its bytecode
        if empty != "kernels":
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba")
        if empty == "all":
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        cpu0, t0 = _cpu_of_children(), time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _DRIVER.format(side=side), "run",
                               "softmax", *argv], capture_output=True, text=True, env=env,
                              cwd=tmp, timeout=1800)
        wall, cpu = time.perf_counter() - t0, _cpu_of_children() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"clsim run softmax {' '.join(argv)} failed:\n{proc.stderr}")
    line = re.search(r"^  compile: (.*)$", proc.stdout, re.M)
    notes = "; ".join(n.removeprefix("clsim: compiling ").removesuffix("...")
                      for n in proc.stderr.splitlines() if n.startswith("clsim: compiling"))
    return (wall, cpu, critical_cpu(proc.stderr), line[1] if line else "(nothing compiled)",
            notes)


def critical_cpu(stderr: str) -> float:
    """The CPU seconds on the command's critical path: the main process's, or, where it waited
    for the checks' second process, its CPU until the fork plus the child's plus its own after
    the wait, if that is longer."""
    main, children, fork, waited = map(float, re.search(
        r"^CPU main (\S+) children (\S+) fork (\S+) waited (\S+)$", stderr, re.M).groups())
    if fork < 0 or waited < 0:
        return main
    return max(main, fork + children + (main - waited))


def _option(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main() -> None:
    rounds = int(_option("--rounds", "2"))
    only = _option("--only", "")
    cases = [c for c in CASES if only in c[0]]
    best: dict[str, tuple[float, float, float, str, str, float]] = {}
    for _ in range(rounds):  # interleaved: the load of a shared machine hits each case alike
        for label, argv, side, empty, _target in cases:
            wall, cpu, critical, compiled, notes = cold_run(argv, side, empty)
            load = os.getloadavg()[0]
            print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU, critical path {critical:.1f} s "
                  f"CPU, load {load:.1f}; {compiled}; notes: {notes}", flush=True)
            if label not in best or wall < best[label][0]:
                best[label] = (wall, cpu, critical, compiled, notes, load)
    rows = []
    for label, _argv, _side, _numba, target in cases:
        wall, cpu, critical, compiled, notes, load = best[label]
        verdict = "-" if target is None else (
            f"{target:g} s: {'met' if critical < target else 'missed'} (critical path CPU)")
        rows.append(f"| {label} | {wall:.1f} s | {cpu:.1f} s | {critical:.1f} s | {load:.1f} | "
                    f"{compiled} | {notes} | {verdict} |")
    lines = [f"`clsim run softmax` (1024x1024) in a fresh process, empty kernel cache; best wall "
             f"time of {rounds} interleaved round(s), the CPU seconds of all its processes and of "
             "its critical path in that run, the 1-minute load average after it, the compile "
             "line and the notes on stderr:", "",
             "| case | wall | CPU, all | CPU, critical path | load | compile line printed | "
             "compiling notes | target |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |", *rows, "",
             f"Machine: {machine()}, shared with other sessions (see the load column)."]
    print("\n".join(lines))
    if "--write" in sys.argv:
        append_section("Cold clsim run (tests/bench/bench_cold_run.py)", lines)


if __name__ == "__main__":
    main()
