"""Multi-dimensional arrays in the OpenCL C front end: braced initialisers of several
dimensions (C zeroes what the braces leave out; nested lists fill rows, a flat list fills in
order), and arrays whose rows are used as pointers (``vload4(0, &sh[t][0])``, ``local uint
*row = sh[l]``; ggml's dp4a GEMMs), which the translation declares flat and indexes row-major.

Contract: the values are C's, bit for bit; an initialiser with braces for some rows only is a
compile error naming it. Kernels written here; jit=False.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim.frontends.opencl_c.load import translate

INITS = """kernel void k(global float *o, float x) {
    float s[2][3] = { {0.0f} };
    float t[2][3] = {1, 2, 3, x};
    float u[2][2] = {{1, x}, {3}};
    for (int i = 0; i < 6; i++) { o[i] = s[i / 3][i % 3]; o[6 + i] = t[i / 3][i % 3]; }
    for (int i = 0; i < 4; i++) o[12 + i] = u[i / 2][i % 2];
}
"""

ROWS = """kernel void k(global uint *o) {
    __local uint sh[4][8];
    int l = get_local_id(0);
    uint p[2][3] = {{1, l}, {5}};
    for (int i = 0; i < 8; i++) sh[l][i] = l * 8 + i;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint4 a = vload4(0, &sh[l][4]);
    barrier(CLK_LOCAL_MEM_FENCE);
    vstore4(a, 0, &sh[3 - l][0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    local uint *row = sh[l];
    uint *q = p[1];
    o[l] = row[0] + row[5] * 100 + p[0][1] * 10000 + q[0] * 100000;
}
"""


def test_braced_initialisers_of_two_dimensions_zero_the_rest():
    o = np.full(16, 9, np.float32)
    clsim.run(clsim.load_cl(INITS, "k"), (1,), (1,), (o, np.float32(7)), jit=False)
    assert list(o[:6]) == [0] * 6
    assert list(o[6:12]) == [1, 2, 3, 7, 0, 0]
    assert list(o[12:]) == [1, 7, 3, 0]


def test_rows_used_as_pointers_index_a_flat_array():
    source = translate(ROWS).source
    assert "sh = local_array(32, np.uint32)" in source and "sh + l * 8 + 4" in source
    o = np.zeros(4, np.uint32)
    clsim.run(clsim.load_cl(ROWS, "k"), (4,), (4,), (o,), jit=False)
    for lane in range(4):
        moved = 8 * (3 - lane) + 4  # row lane's first element, stored there by lane 3 - lane
        assert o[lane] == moved + (8 * lane + 5) * 100 + lane * 10000 + 5 * 100000


def test_braces_for_some_rows_only_are_refused():
    src = "kernel void k(global float *o) { float a[2][2] = {{1, 2}, 3, 4}; o[0] = a[1][1]; }"
    with pytest.raises(clsim.KernelCompileError, match="braces for some rows only"):
        clsim.load_cl(src, "k")
