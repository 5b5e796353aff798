"""gemv_half8 and gemv_vload_half8 (half W loaded eight at a time, float8 accumulation, a row
per work-group) against numpy and against a numpy model of their order of additions, over
drawn shapes with column tails (ncols not a multiple of 8 or of the work-group's 8 * wg
columns per step) and local sizes; what the traffic model counts for them.

Sweeps run in no-JIT mode (each new local size would be a fresh Numba compile).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.spec import get_spec

NAMES = ["gemv_half8", "gemv_vload_half8"]


def _run(name, shape, local=None, seed=0, traffic=False):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    launch = spec.launch(inputs, shape, local)
    result = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                       jit=False, traffic=traffic)
    return spec, inputs, result


def _order_model(w, x, wg):
    """numpy float32 in the kernels' order: per work-item eight components over columns
    8*lid + 8*wg*i + j, folded ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), then the tail columns
    c_vec + lid + wg*i one at a time, then the local tree (halves, rounding up)."""
    rows, cols = w.shape
    wf = w.astype(np.float32)
    c_vec = cols - cols % 8
    acc8 = np.zeros((rows, wg, 8), np.float32)
    for step in range(0, c_vec, 8 * wg):
        for lid in range(wg):
            c = step + 8 * lid
            if c < c_vec:
                acc8[:, lid] = acc8[:, lid] + wf[:, c:c + 8] * x[c:c + 8]
    s = acc8
    acc = ((s[..., 0] + s[..., 1]) + (s[..., 2] + s[..., 3])) + \
          ((s[..., 4] + s[..., 5]) + (s[..., 6] + s[..., 7]))
    for c in range(c_vec, cols):
        lid = (c - c_vec) % wg
        acc[:, lid] = acc[:, lid] + wf[:, c] * x[c]
    active = wg
    while active > 1:
        half = (active + 1) // 2
        lanes = active - half
        acc[:, :lanes] = acc[:, :lanes] + acc[:, half:half + lanes]
        active = half
    return acc[:, 0]


@pytest.mark.parametrize("name", NAMES)
@given(rows=st.integers(1, 6), cols=st.integers(1, 600),
       local=st.sampled_from([1, 3, 8, 64]), seed=st.integers(0, 2**16))
def test_half8_gemv_matches_numpy_and_its_order_model(name, rows, cols, local, seed):
    """Any column count (tails of the 8-wide loads and of a step of 8 * wg columns) and any
    local size: numpy within tolerance, and the bits of a numpy model of the kernel's fixed
    order (which is why the device agreement is exact)."""
    spec, inputs, _ = _run(name, {"rows": rows, "cols": cols}, (local,), seed)
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=1e-4, atol=1e-3)
    assert inputs["y"].tobytes() == _order_model(inputs["w"], inputs["x"], local).tobytes()


def test_half8_loads_an_eighth_of_the_instructions():
    """At 16 x 1024 (no tail): one half8 load of W and one float8 load of x per eight
    columns, where gemv_half loads each column: 8x fewer load instructions, the same bytes
    (half W, float x)."""
    shape = {"rows": 16, "cols": 1024}
    half = _run("gemv_half", shape, traffic=True)[2].traffic.totals
    for name in NAMES:
        vec = _run(name, shape, traffic=True)[2].traffic.totals
        assert vec["global_load_executions"] * 8 == half["global_load_executions"], name
        assert vec["global_load_bytes"] == half["global_load_bytes"] == 6 * 16 * 1024, name
