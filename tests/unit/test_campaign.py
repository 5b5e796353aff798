"""Contracts of verify/campaign.py and of running the verifier in parallel: ``clsim verify
--jobs N`` splits the examples over N processes under seeds S..S+N-1 and merges their reports;
processes sharing one failures folder (campaign workers, pytest-xdist workers saving the same
case at the same moment) each keep their own case folder."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from clsim.errors import SimulationError
from clsim.spec import get_spec, ulp
from verify import cli
from verify.campaign import (
    fuzz_jobs,
    jobs_count,
    merge_reports,
    run_task,
    split_examples,
    tasks,
    worker_seeds,
)
from verify.failures import list_failures, load_failure
from verify.fuzz import Found, FuzzReport, fuzz_spec
from verify.pairs import Case
from verify.testing import device_params

ROOT = Path(__file__).resolve().parents[2]
OFF_BY_ONE = ROOT / "kernels_cl" / "planted" / "vector_add_off_by_one.cl"
ON_POCL = pytest.mark.parametrize("device", device_params(only=("pocl",)))


def test_examples_are_split_evenly_and_seeds_follow():
    """Shares differ by at most one and sum to the examples; never more jobs than examples;
    worker i runs under seed S+i."""
    assert split_examples(10, 3) == [4, 3, 3]
    assert split_examples(2, 8) == [1, 1]
    assert worker_seeds(7, 3) == [7, 8, 9]
    shares = tasks("vector_add", "pocl", jobs=4, examples=9, seed=100)
    assert [(t.examples, t.seed) for t in shares] == [(3, 100), (2, 101), (2, 102), (2, 103)]


def test_jobs_count_accepts_auto_and_refuses_zero():
    """--jobs auto is one per CPU; 0, -1 and words are argparse errors naming the value."""
    assert jobs_count("auto") == max(1, os.cpu_count() or 1)
    assert jobs_count("3") == 3
    for bad in ("0", "-1", "many"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(bad)):
            jobs_count(bad)


def _report(seed: int, examples: int, ulps: dict, found: bool = False,
            skipped: str | None = None) -> FuzzReport:
    case = Case({"x": np.zeros(1, np.float32)}, (1,), (1,))
    hit = Found(case, None, f"error in worker {seed}", None, None) if found else None
    return FuzzReport("k", "pocl", seed, examples, hit, ulps, {"y": ulp(2)}, skipped)


def test_merge_sums_examples_and_keeps_the_first_failure():
    """Examples are summed, the largest ULP distance per output kept, and the failure of the
    lowest worker that found one is the report's, with that worker's seed."""
    merged = merge_reports([_report(5, 10, {"y": 1}), _report(6, 3, {"y": 4, "z": 0}, True),
                            _report(7, 2, {"y": 2}, True)])
    assert merged.examples == 15 and merged.max_ulp == {"y": 4, "z": 0}
    assert merged.seed == 6 and merged.found.error == "error in worker 6"
    agreeing = merge_reports([_report(5, 10, {}), _report(6, 10, {})])
    assert agreeing.equal and agreeing.seed == 5 and agreeing.examples == 20
    skipped = merge_reports([_report(5, 0, {}, skipped="no fp16")] * 2)
    assert skipped.skipped == "no fp16"


@ON_POCL
def test_a_worker_alone_is_a_plain_run_with_its_seed(device, tmp_path):
    """Worker i's share reproduces as fuzz_spec with seed S+i and its examples."""
    share = tasks("vector_add", device, jobs=2, examples=12, seed=40,
                  failures_dir=tmp_path / "a", cl_source=OFF_BY_ONE)[1]
    worker = run_task(share)
    alone = fuzz_spec(get_spec("vector_add"), device, examples=6, seed=41,
                      failures_dir=tmp_path / "b", cl_source=OFF_BY_ONE)
    assert worker.seed == 41 and worker.examples == alone.examples
    assert worker.found.case.describe() == alone.found.case.describe()


@ON_POCL
def test_fuzz_jobs_runs_in_processes_and_keeps_every_case(device, tmp_path):
    """Two worker processes fuzz the planted bug into one folder: one merged report with a
    failure, every saved case a distinct loadable folder, written by two processes."""
    folder = tmp_path / "failures"
    report = fuzz_jobs("vector_add", device, jobs=2, examples=20, seed=3,
                       failures_dir=folder, cl_source=OFF_BY_ONE)
    assert report.found is not None and report.found.path.is_dir()
    saved = list_failures(folder)
    assert report.found.path in saved and len(set(saved)) == len(saved) >= 2
    writers = {load_failure(p).meta["writer"]["pid"] for p in saved}
    assert len(writers) == 2 and os.getpid() not in writers


@ON_POCL
def test_cli_verify_jobs(device, tmp_path, capsys):
    """clsim verify --jobs 2 reports the planted bug (exit 1) with a saved, replayable case."""
    code = cli.main(["verify", "vector_add", "-d", device, "-n", "20", "--seed", "3",
                     "--jobs", "2", "--cl", str(OFF_BY_ONE), "--no-progress",
                     "--failures-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "DIFFER" in out and "replay: clsim replay" in out


_XDIST_CONFTEST = """
from verify.devices import import_pyopencl
import_pyopencl()
import kernels_py
pytest_plugins = ["verify.pytest_plugin"]
"""
_XDIST_TEST = """
import json, os
import pytest
from clsim.spec import get_spec
from verify.fuzz import fuzz_spec

@pytest.mark.parametrize("i", range(4))
def test_same_planted_case(device, i):
    # Every test finds the same cases under one seed: same names, same second.
    report = fuzz_spec(get_spec("vector_add"), device, examples=8, seed=3,
                       failures_dir={failures!r}, cl_source={cl!r})
    found = report.found
    record = {{"worker": os.environ.get("PYTEST_XDIST_WORKER"),
              "paths": sorted({{str(found.path), str(found.first_path)}})}}
    with open(os.path.join({results!r}, f"{{i}}.json"), "w") as f:
        json.dump(record, f)
"""


@ON_POCL
def test_pytest_xdist_workers_keep_their_own_cases(device, tmp_path):
    """pytest -n 2 over four device tests that save identical cases into one folder: the
    device parametrization is collected alike by both workers, every test's cases are saved
    in distinct folders (none clobbered), and both workers saved some."""
    pytest.importorskip("xdist", reason="pytest-xdist not installed (pip install '.[test]')")
    failures, results = tmp_path / "failures", tmp_path / "results"
    results.mkdir()
    (tmp_path / "conftest.py").write_text(_XDIST_CONFTEST)
    (tmp_path / "test_tiny.py").write_text(textwrap.dedent(_XDIST_TEST).format(
        failures=str(failures), cl=str(OFF_BY_ONE), results=str(results)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLSIM_TEST_DEVICES": device}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p",
                           "no:cacheprovider", str(tmp_path / "test_tiny.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in sorted(results.glob("*.json"))]
    assert len(records) == 4 and {r["worker"] for r in records} == {"gw0", "gw1"}
    paths = [p for r in records for p in r["paths"]]
    assert len(set(paths)) == len(paths), "two tests were handed one folder"
    assert sorted(map(str, list_failures(failures))) == sorted(paths)
    workers = {load_failure(p).meta["writer"]["worker"] for p in paths}
    assert workers == {"gw0", "gw1"}


_DIES_IN_A_WORKER = """
import multiprocessing, os, signal
if multiprocessing.parent_process() is not None:
    os.kill(os.getpid(), signal.SIGKILL)  # a device runtime crashing a worker
from kernels_py.vector_add import SPEC as vector_add
"""


@ON_POCL
def test_a_worker_that_dies_is_an_error_naming_the_kernel(device, tmp_path):
    """A worker killed mid-campaign: a SimulationError naming the kernel, the device and
    where its cases are (not a BrokenProcessPool traceback); the broken pool is dropped."""
    from verify import campaign

    dies = tmp_path / "dies.py"
    dies.write_text(_DIES_IN_A_WORKER)
    with pytest.raises(SimulationError, match=r"dies\.py::vector_add on pocl: a campaign "
                                              r"worker died.*--jobs 1"):
        fuzz_jobs(f"{dies}::vector_add", device, jobs=2, examples=4, seed=1,
                  failures_dir=tmp_path / "failures")
    assert 2 not in campaign._POOLS
