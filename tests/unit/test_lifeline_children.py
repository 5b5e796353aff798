"""The device health probe's child and ``clsim run --traffic``'s counting child die with their
SIGKILLed parent (clsim.lifeline), as the device workers do (tests/device/test_worker_faults.py).
Each child is made to hang where it would otherwise finish (past its tie, which is set up
first thing), so only the tie can end it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The probe child is a fresh interpreter: a sitecustomize on its path makes the error of an
# unknown device hang instead of ending the child (the child only: it has the parent's pid).
HANG_ON_ERROR = textwrap.dedent("""
    import os, sys, time
    if os.environ.get("CLSIM_PARENT_PID"):
        def hang(*exc):
            open("hanging", "w").close()
            time.sleep(600)
        sys.excepthook = hang
""")
PROBE_PARENT = textwrap.dedent("""
    import time
    from types import SimpleNamespace
    from verify import probe

    proc = probe._start(SimpleNamespace(short_name="no-such-device"))
    print(proc.pid, flush=True)
    time.sleep(600)
""")
# The traffic child is forked: it inherits a count that never ends.
TRAFFIC_PARENT = textwrap.dedent("""
    import time
    from clsim.commands import traffic_launch

    def hang(request, bar=True):
        open("hanging", "w").close()
        time.sleep(600)

    traffic_launch.count_traffic = hang
    traffic_launch.SIDE_BY_SIDE = True
    traffic_launch.start_method = lambda: "fork"
    pending = traffic_launch.PendingTraffic(
        traffic_launch.TrafficRequest("vector_add", {"n": 8}, 0, None))
    print(pending.process.pid, flush=True)
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    """Running, not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _child_dies_with_parent(tmp_path: Path, parent_code: str) -> None:
    script = tmp_path / "parent.py"
    script.write_text(parent_code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), *sys.path])}
    parent = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True, env=env)
    child = None
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        hanging = time.monotonic() + 120  # its imports take seconds on a busy machine
        while not (tmp_path / "hanging").exists() and time.monotonic() < hanging:
            time.sleep(0.1)
        assert (tmp_path / "hanging").exists(), "the child never reached its hang"
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=10)
        gone = time.monotonic() + 3
        while _alive(child) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not _alive(child), f"child {child} outlived its SIGKILLed parent"
    finally:
        parent.kill()
        parent.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)


def test_probe_child_dies_with_its_parent(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(HANG_ON_ERROR)
    _child_dies_with_parent(tmp_path, PROBE_PARENT)


def test_traffic_child_dies_with_its_parent(tmp_path):
    _child_dies_with_parent(tmp_path, TRAFFIC_PARENT)
