"""What isolating device launches costs: one launch in this process (``verify.clrun.run_cl``)
vs the same launch in the device's persistent worker (``verify.worker.run_isolated``), and
the worker's start-up. Interleaved rounds, best of each; prints the figures.

    PYTHONPATH=. python tests/bench/bench_isolation.py [device]
"""

from __future__ import annotations

import sys
import time

import numpy as np
from benchlib import best_interleaved, machine

from verify.clrun import run_cl
from verify.devices import get_device
from verify.worker import DeviceWorker, _workers, run_isolated

SOURCE = """__kernel void vadd(__global const float* a, __global const float* b,
                   __global float* c, int n)
{ int i = get_global_id(0); if (i < n) c[i] = a[i] + b[i]; }
"""


def main(device: str | None = None) -> None:
    info = get_device(device)
    print(machine(), "device", info.short_name)
    for n in (1024, 1 << 16):
        args = [np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32),
                np.int32(n)]
        run_cl(info, SOURCE, "vadd", n, 64, args)  # warm both sides (build, worker start)
        run_isolated(info, SOURCE, "vadd", n, 64, args)
        best = best_interleaved({
            "in process": lambda n=n, args=args: run_cl(info, SOURCE, "vadd", n, 64, args),
            "worker": lambda n=n, args=args: run_isolated(info, SOURCE, "vadd", n, 64, args),
        }, rounds=30)
        extra = (best["worker"] - best["in process"]) * 1e3
        print(f"n={n}: in process {best['in process'] * 1e3:.2f} ms, worker "
              f"{best['worker'] * 1e3:.2f} ms, overhead {extra:.2f} ms per launch")
    fresh = DeviceWorker(info.short_name)
    t0 = time.perf_counter()
    fresh._start()
    print(f"worker start-up (imports, discovery): {time.perf_counter() - t0:.2f} s")
    fresh.close()
    for item in _workers.values():
        item.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
