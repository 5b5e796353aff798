"""Spread a fuzz campaign over processes: ``clsim verify --jobs N``.

One kernel on one device is fuzzed by ``jobs`` worker processes at once. Worker ``i`` runs
``verify.fuzz.fuzz_spec`` with its share of the examples under seed ``S + i`` (``S`` the
campaign seed), so each worker alone is ``clsim verify NAME -d D --seed S+i -n SHARE``: a
worker's failure reproduces without the campaign. Every worker saves into the same failures
folder; the store's atomic rename keeps two workers' cases apart, and the kernel cache is
shared the same way. ``merge_reports`` folds the workers' reports into one: examples summed,
the largest ULP distance per output, and the failure of the lowest worker that found one,
with that worker's seed.

Workers are spawned (not forked: an OpenCL context must not cross a fork), each loads the
kernel library and the spec again by its reference (a library name or a ``file.py::NAME`` the
user named), and they are kept for the next kernel of the same campaign. This module prints
nothing but an optional progress bar; ``verify.cli`` formats the report.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import multiprocessing
import os
import pickle
import secrets
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

from tqdm import tqdm

from clsim.errors import SimulationError
from verify.failures import DEFAULT_DIR
from verify.fuzz import DEFAULT_EXAMPLES, MAX_ELEMENTS, FuzzReport, fuzz_spec
from clsim.lifeline import die_with_parent
from verify.runner import CHECKS, default_checks

LIBRARY = "kernels_py"
_POOLS: dict[int, ProcessPoolExecutor] = {}


@dataclass(frozen=True)
class Task:
    """One worker's share of a campaign, everything a fresh process needs (no live objects)."""

    ref: str
    device: str
    examples: int
    seed: int
    failures_dir: str
    max_elements: int = MAX_ELEMENTS
    cl_source: str | None = None
    checks: str = CHECKS


def jobs_count(text: str) -> int:
    """``--jobs`` as given: a positive count, or "auto" (one per CPU)."""
    if text.strip().lower() == "auto":
        return max(1, os.cpu_count() or 1)
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of jobs or 'auto'")
    return count


def split_examples(examples: int, jobs: int) -> list[int]:
    """``examples`` in ``min(jobs, examples)`` shares, each at least 1, differing by at most 1,
    summing to ``examples``."""
    if examples < 1 or jobs < 1:
        raise SimulationError(f"--examples {examples}, --jobs {jobs}: give at least 1 of each.")
    n = min(jobs, examples)
    return [examples // n + (1 if i < examples % n else 0) for i in range(n)]


def worker_seeds(seed: int, count: int) -> list[int]:
    """Worker ``i`` draws under ``seed + i`` (Hypothesis seeds are any int)."""
    return [seed + i for i in range(count)]


def tasks(ref: str, device: str, *, jobs: int, examples: int = DEFAULT_EXAMPLES,
          seed: int | None = None, failures_dir: str | Path = DEFAULT_DIR,
          max_elements: int = MAX_ELEMENTS, cl_source: str | Path | None = None,
          checks: str | None = None) -> list[Task]:
    """The workers' shares of fuzzing ``ref`` on ``device``."""
    base = secrets.randbits(32) if seed is None else int(seed)
    shares = split_examples(examples, jobs)
    return [Task(ref, device, share, s, str(failures_dir), max_elements,
                 None if cl_source is None else str(cl_source), checks or default_checks())
            for share, s in zip(shares, worker_seeds(base, len(shares)), strict=True)]


def run_task(task: Task) -> FuzzReport:
    """Fuzz one share, in whichever process runs it (a worker, or this one for tests)."""
    from verify.replay import spec_ref_pair

    try:
        importlib.import_module(LIBRARY)
    except ImportError:
        pass  # user files still work
    spec, pair = spec_ref_pair(task.ref, task.cl_source)
    try:
        return fuzz_spec(spec, task.device, examples=task.examples, seed=task.seed,
                         failures_dir=task.failures_dir, progress=False,
                         max_elements=task.max_elements, pair=pair, checks=task.checks)
    except SimulationError as err:
        try:
            pickle.loads(pickle.dumps(err))
        except Exception:  # an error that does not travel between processes: keep its words
            raise SimulationError(f"{type(err).__name__}: {err}") from None
        raise


def merge_reports(reports: Sequence[FuzzReport]) -> FuzzReport:
    """One report for a kernel and device from its workers' reports (in worker order)."""
    if not reports:
        raise ValueError("merge_reports: no reports")
    first = reports[0]
    examples = sum(r.examples for r in reports)
    ran = [r for r in reports if not r.skipped]
    if not ran:
        return replace(first, examples=examples)
    max_ulp: dict[str, int] = {}
    for r in ran:
        for name, dist in r.max_ulp.items():
            max_ulp[name] = max(max_ulp.get(name, 0), dist)
    found = next((r for r in ran if r.found is not None), None)
    chosen = found or ran[0]
    return replace(chosen, examples=examples, max_ulp=max_ulp, skipped=None)


def _pool(jobs: int) -> ProcessPoolExecutor:
    pool = _POOLS.get(jobs)
    if pool is None:
        # Its processes die with this one (clsim.lifeline), as the device workers do.
        pool = ProcessPoolExecutor(
            jobs, mp_context=multiprocessing.get_context("spawn"), initializer=die_with_parent,
            initargs=(os.getpid(), threading.current_thread() is threading.main_thread()))
        _POOLS[jobs] = pool
    return pool


@atexit.register
def shutdown() -> None:
    """Stop the campaign's workers (also at exit)."""
    for pool in _POOLS.values():
        pool.shutdown(wait=True, cancel_futures=True)
    _POOLS.clear()


def fuzz_jobs(ref: str, device: str, *, jobs: int, examples: int = DEFAULT_EXAMPLES,
              seed: int | None = None, failures_dir: str | Path = DEFAULT_DIR,
              max_elements: int = MAX_ELEMENTS, cl_source: str | Path | None = None,
              progress: bool = False, checks: str | None = None) -> FuzzReport:
    """``fuzz_spec`` of ``ref`` on ``device`` spread over ``jobs`` processes; one merged
    report. ``jobs=1`` runs in this process."""
    shares = tasks(ref, device, jobs=jobs, examples=examples, seed=seed,
                   failures_dir=failures_dir, max_elements=max_elements, cl_source=cl_source,
                   checks=checks)
    if len(shares) == 1:
        return run_task(shares[0])
    pool = _pool(jobs)
    futures: list[Future[FuzzReport]] = [pool.submit(run_task, t) for t in shares]
    bar = tqdm(total=examples, desc=f"{ref} on {device} ({len(shares)} jobs)", unit="ex",
               leave=False, disable=not progress)
    try:
        reports = []
        for future in futures:
            reports.append(future.result())
            bar.update(min(reports[-1].examples, max(0, examples - bar.n)))
    except BrokenProcessPool as err:
        _abandon(jobs)
        raise SimulationError(
            f"{ref} on {device}: a campaign worker died ({err}). The cases it saved before are "
            f"in {failures_dir}; rerun with --jobs 1 to see the failure in one process.") from err
    except BaseException:  # Ctrl-C: stop the workers now, not after their share
        _abandon(jobs)
        raise
    finally:
        bar.close()
    return merge_reports(reports)


def _abandon(jobs: int) -> None:
    """Stop a pool's workers at once (they may be mid-launch) and forget the pool."""
    pool = _POOLS.pop(jobs, None)
    if pool is None:
        return
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
