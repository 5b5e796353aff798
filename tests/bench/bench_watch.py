"""What watching a launch costs (clsim/runtime/watch.py): JIT work-groups run in a worker
thread, in chunks that grow to ~50 ms, so timeout_s and Ctrl-C can stop them. Compared, in one
process and interleaved, with the unwatched way (the calling thread runs every group in chunks
of at most 4096), for a tiny launch (the per-run() hand-over cost) and softmax 1024x1024 (serial
and parallel groups). Run: python tests/bench/bench_watch.py
"""

from __future__ import annotations

import numpy as np
from benchlib import best_interleaved, machine

import clsim
from clsim.runtime import watch
from clsim.spec import get_spec

_WATCHED = watch.run_groups


def _unwatched(step, total, max_chunk, **_ignored):
    start = 0
    with np.errstate(all="ignore"):
        while start < total:
            count = min(max_chunk, total - start)
            row = step(start, count)
            if row is not None:
                return row
            start += count
    return None


def _timed(run):
    def watched():
        watch.run_groups = _WATCHED
        run()

    def unwatched():
        watch.run_groups = _unwatched
        run()
    return {"watched": watched, "unwatched": unwatched}


def main() -> None:
    from clsim.runtime import launch as launch_module

    spec = get_spec("softmax")
    shape = {"rows": 1024, "cols": 1024}
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    plan = spec.launch(inputs, shape, (256,))
    small = spec.make_inputs(np.random.default_rng(0), {"rows": 1, "cols": 64})
    small_plan = spec.launch(small, {"rows": 1, "cols": 64}, (64,))
    cases = {
        "tiny launch (1 group of 64)": lambda: clsim.run(
            spec.kernel, small_plan.global_size, small_plan.local_size, small_plan.args),
        "softmax 1024x1024, parallel groups": lambda: clsim.run(
            spec.kernel, plan.global_size, plan.local_size, plan.args),
        "softmax 1024x1024, serial groups": lambda: clsim.run(
            spec.kernel, plan.global_size, plan.local_size, plan.args, parallel=False),
    }
    assert launch_module.watch is watch
    print(machine())
    for name, run in cases.items():
        run()
        best = best_interleaved(_timed(run), rounds=15)
        watch.run_groups = _WATCHED
        print(f"{name}: watched {best['watched'] * 1e3:.3f} ms, unwatched "
              f"{best['unwatched'] * 1e3:.3f} ms, ratio {best['watched'] / best['unwatched']:.2f}")


if __name__ == "__main__":
    main()
