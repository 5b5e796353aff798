"""Planted bugs that both twins share, so device and simulator agree on them: only the
simulator's checks (on by default in the verifier) or an out-of-bounds error find them.
``clsim verify tests/device/planted_bugs.py::NAME`` must fail on every device with the
finding's message (tests/device/test_planted_bugs.py). Each ``.cl`` twin is in
kernels_cl/planted/ and says what is wrong with it.

- ``missing_barrier``: a work-group reverses its block through local memory with no barrier
  between the writes and the reads (a data race on ``tile``);
- ``wrong_fence``: work-items exchange values through a global scratch buffer separated by
  ``barrier(CLK_LOCAL_MEM_FENCE)``, which does not order global memory (a data race on
  ``scratch``);
- ``uninit_local``: work-item 0 never writes its slot of ``tile``, which another work-item
  reads (an uninitialised read);
- ``read_past_end``: ``y[i] = x[i] + x[i + 1]`` guarded by ``i < n`` (``x[n]`` is read).
"""

import numpy as np
from hypothesis import strategies as st

from clsim import (CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_group_id, get_local_id,
                   get_local_size, kernel, local_array)
from clsim.spec import EXACT, KernelSpec, Launch

WG = 64


@kernel
def missing_barrier(x, y, n):
    i = get_global_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    tile = local_array(WG, np.float32)
    tile[lid] = x[i] if i < n else 0.0
    # the barrier(CLK_LOCAL_MEM_FENCE) that belongs here is missing
    if i < n:
        y[i] = tile[wg - 1 - lid]


@kernel
def wrong_fence(x, scratch, y, n):
    i = get_global_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    base = get_group_id(0) * wg
    scratch[i] = x[i] * 2.0 if i < n else 0.0
    barrier(CLK_LOCAL_MEM_FENCE)  # orders local memory only; scratch is global
    if i < n:
        y[i] = scratch[base + (lid + 1) % wg]


@kernel
def uninit_local(x, y, n):
    i = get_global_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    tile = local_array(WG, np.float32)
    if lid != 0:  # slot 0 is never written
        tile[lid] = x[i] if i < n else 0.0
    barrier(CLK_LOCAL_MEM_FENCE)
    if i < n:
        y[i] = tile[wg - 1 - lid]


@kernel
def read_past_end(x, y, n):
    i = get_global_id(0)
    if i < n:
        y[i] = x[i] + x[i + 1]  # x[n] for the last work-item


def _inputs(rng, shape, scratch=False):
    n = shape["n"]
    inputs = {"x": rng.standard_normal(n, dtype=np.float32)}
    if scratch:
        inputs["scratch"] = np.zeros(-(-n // WG) * WG, np.float32)
    inputs["y"] = np.zeros(n, np.float32)
    inputs["n"] = np.int32(n)
    return inputs


def _launch(names):
    def launch(inputs, shape, local_size=None):
        n = int(inputs["n"])
        return Launch((-(-n // WG) * WG,), (WG,), tuple(inputs[k] for k in names))
    return launch


def _reversed_blocks(inputs):
    x = inputs["x"]
    n = x.size
    padded = np.zeros(-(-n // WG) * WG, np.float32)
    padded[:n] = x
    return {"y": padded.reshape(-1, WG)[:, ::-1].reshape(-1)[:n]}


def _rotated_doubled(inputs):
    x = inputs["x"]
    n = x.size
    padded = np.zeros(-(-n // WG) * WG, np.float32)
    padded[:n] = x * np.float32(2.0)
    return {"y": np.roll(padded.reshape(-1, WG), -1, axis=1).reshape(-1)[:n]}


def _pair_sums(inputs):
    x = inputs["x"]
    return {"y": x + np.append(x[1:], np.float32(0.0))}


def _spec(name, kernel_fn, names, reference, scratch=False):
    return KernelSpec(
        name=name, description=f"planted bug: {name.replace('_', ' ')}", kernel=kernel_fn,
        cl_file=f"planted/{name}.cl",
        make_inputs=lambda rng, shape: _inputs(rng, shape, scratch),
        launch=_launch(names), reference=reference, outputs={"y": EXACT},
        default_shape={"n": 4 * WG},
        fuzz_floats={"allow_nan": False, "allow_inf": False},
        # up to four work-groups: each bug shows in every group, and small cases shrink fast
        fuzz_shapes=st.fixed_dictionaries({"n": st.integers(1, 4 * WG)}))


MISSING_BARRIER = _spec("missing_barrier", missing_barrier, ("x", "y", "n"), _reversed_blocks)
WRONG_FENCE = _spec("wrong_fence", wrong_fence, ("x", "scratch", "y", "n"), _rotated_doubled,
                    scratch=True)
UNINIT_LOCAL = _spec("uninit_local", uninit_local, ("x", "y", "n"), _reversed_blocks)
READ_PAST_END = _spec("read_past_end", read_past_end, ("x", "y", "n"), _pair_sums)
