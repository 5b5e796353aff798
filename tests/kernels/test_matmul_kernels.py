"""The matmul family (naive, local-memory tiled, sub-group, register-blocked, float4 and
half8 vectorised, half inputs through half types and through vload_half) against numpy over
drawn M, N, K that are not multiples of the tile, the register block, the vector width or the
sub-group (one row, one column, K = 1 included), and the variants that add in ascending k
against each other bit for bit (the half-input ones against the float32 naive kernel on the
inputs converted to float32).

Sweeps run in no-JIT mode (each new local or sub-group size would be a fresh Numba compile).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim import float4, get_global_id, kernel, vload4
from clsim.errors import OutOfBoundsError
from clsim.spec import get_spec

NAMES = ["matmul", "matmul_tiled", "matmul_subgroup", "matmul_regblock", "matmul_float4",
         "matmul_regblock_float4"]
HALF_NAMES = ["matmul_half", "matmul_vload_half", "matmul_half8", "matmul_vload_half8",
              "matmul_tiled_vload_half"]
DIMS = st.integers(1, 21)  # past one 16-tile, several 4-blocks and two 8-wide strips


def _run(name, shape, seed=0, local=None, size=None, kernel_fn=None):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    extra = {"subgroup_size": size} if size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    clsim.run(kernel_fn or spec.kernel, launch.global_size, launch.local_size, launch.args,
              jit=False, subgroup_size=size or spec.subgroup_size)
    return spec, inputs


@given(m=DIMS, n=DIMS, k=DIMS, seed=st.integers(0, 2**16))
def test_variants_match_numpy_and_ascending_k_variants_agree_bitwise(m, n, k, seed):
    """Every variant matches numpy for any M, N, K; naive, tiled and register-blocked add the
    products in the same order, so they agree bit for bit (up to the sign of zero: a tile's
    zero padding adds +0.0)."""
    shape = {"M": m, "N": n, "K": k}
    results = {}
    for name in NAMES:
        spec, inputs = _run(name, shape, seed)
        rtol, atol = spec.tolerance
        np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=rtol,
                                   atol=atol)
        results[name] = inputs["c"] + np.float32(0.0)  # -0.0 -> +0.0
    for name in ("matmul_tiled", "matmul_regblock", "matmul_float4", "matmul_regblock_float4"):
        assert results[name].tobytes() == results["matmul"].tobytes(), name


def _naive_on_float32(inputs):
    """The float32 naive kernel on ``inputs`` converted to float32."""
    spec = get_spec("matmul")
    shape = {k: int(inputs[k]) for k in ("M", "N", "K")}
    args = dict(inputs, a=inputs["a"].astype(np.float32), b=inputs["b"].astype(np.float32),
                c=np.full_like(inputs["c"], np.nan))
    launch = spec.launch(args, shape, None)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False)
    return args["c"]


@given(m=DIMS, n=DIMS, k=DIMS, seed=st.integers(0, 2**16))
def test_half_input_variants_match_numpy_and_the_float32_kernel_bitwise(m, n, k, seed):
    """Half A and B with float accumulation (half types, vload_half, half8, vload_half8,
    tiled) match numpy for any M, N, K (K and N tails of the 8-wide strips and the tiles
    included), and give the float32 naive kernel's bits on the same values (up to the sign
    of zero: a tile's padding adds +0.0): a half product is exact in float and every column
    adds in ascending k."""
    shape = {"M": m, "N": n, "K": k}
    for name in HALF_NAMES:
        spec, inputs = _run(name, shape, seed)
        assert inputs["a"].dtype == inputs["b"].dtype == np.float16
        rtol, atol = spec.tolerance
        np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=rtol,
                                   atol=atol)
        plus_zero = np.float32(0.0)  # -0.0 -> +0.0
        assert ((inputs["c"] + plus_zero).tobytes()
                == (_naive_on_float32(inputs) + plus_zero).tobytes()), name


@given(m=st.integers(1, 9), n=st.integers(1, 9), k=st.integers(1, 80),
       size=st.sampled_from([1, 2, 4, 8, 16, 32]), subgroups=st.integers(1, 3))
def test_subgroup_matmul_any_subgroup_size(m, n, k, size, subgroups):
    """The sub-group variant matches numpy for every power-of-two sub-group size and any
    number of sub-groups per work-group."""
    spec, inputs = _run("matmul_subgroup", {"M": m, "N": n, "K": k}, local=(size * subgroups,),
                        size=size)
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", NAMES + HALF_NAMES)
@pytest.mark.parametrize("shape", [{"M": 1, "N": 17, "K": 17}, {"M": 3, "N": 8, "K": 7},
                                   {"M": 2, "N": 3, "K": 9}])
def test_untouched_padding_and_edges(name, shape):
    """M = 1 and N, K one past the tile or the vector width, N a whole strip with K short of
    one, N short of a strip: every element of C is written (the NaN pre-fill is gone) and
    nothing past A, B or C is touched (the bounds check would raise)."""
    _, inputs = _run(name, shape)
    assert not np.isnan(inputs["c"]).any()


def _traffic(name, shape):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, None)
    result = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                       jit=False, traffic=True)
    return result.traffic.totals


def test_vector_loads_cut_load_instructions_and_half_data_halves_the_bytes():
    """What the vectorised and half variants change, in the traffic model, at M = K = 16,
    N = 32 (two 16-tiles and four 8-wide strips along N; 32^3 took 4x the plain-Python time
    for the same counts): a float4
    strip loads A once per 4 columns (vload4 along K) and B with one vload4 per row and
    strip, so a sixth of the naive kernel's load instructions and fewer sectors; half
    inputs halve the bytes at the same instruction count (tiled too); a half8 strip does for
    half what the float4 one does for float."""
    m, n, k = 16, 32, 16
    shape = {"M": m, "N": n, "K": k}
    naive, vec4 = _traffic("matmul", shape), _traffic("matmul_float4", shape)
    assert naive["global_load_executions"] == 2 * m * n * k
    assert vec4["global_load_executions"] == m * (n // 4) * (k // 4) + m * (n // 4) * k
    assert vec4["global_load_bytes"] == 4 * (m * (n // 4) * k + m * n * k)
    assert vec4["global_load_sectors"] < naive["global_load_sectors"]
    tiled, tiled_half = _traffic("matmul_tiled", shape), _traffic("matmul_tiled_vload_half", shape)
    assert tiled_half["global_load_bytes"] * 2 == tiled["global_load_bytes"]
    for name in ("matmul_half", "matmul_vload_half"):
        half = _traffic(name, shape)
        assert half["global_load_bytes"] * 2 == naive["global_load_bytes"], name
        assert half["global_load_executions"] == naive["global_load_executions"], name
    for name in ("matmul_half8", "matmul_vload_half8"):
        half8 = _traffic(name, shape)
        assert half8["global_load_executions"] == m * (n // 8) * (k // 8) + m * (n // 8) * k
        assert half8["global_load_bytes"] == 2 * (m * (n // 8) * k + m * n * k), name


def test_report_shows_the_vector_and_half_variants_side_by_side(tmp_path, capsys):
    """clsim report matmul puts every variant, the vectorised and half ones included, in one
    table, with half the unique bytes for the half-input ones."""
    import json

    from clsim.cli import main

    out = tmp_path / "report.json"
    assert main(["report", "matmul", "--shape", "M=9,N=10,K=11", "--no-jit",
                 "--json", str(out)]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines()
                  if line.startswith("metric"))
    assert {*NAMES, *HALF_NAMES, "matmul_dot_vload_half"} <= set(header.split()[1:])
    unique = {v["label"]: v["traffic"]["totals"]["unique_bytes"]
              for v in json.loads(out.read_text())["variants"]}
    inputs_f32 = 4 * (9 * 11 + 11 * 10)
    for name in (*HALF_NAMES, "matmul_dot_vload_half"):
        assert unique[name] == unique["matmul"] - inputs_f32 // 2, name


@kernel
def matmul_float4_untailed(a, b, c, M, N, K):
    """matmul_float4 without its tails: vload4 of A for every 4 k and of B for every strip."""
    col0 = get_global_id(0) * 4
    row = get_global_id(1)
    if row < M and col0 < N:
        acc = float4(0.0)
        for k in range(0, K, 4):
            a4 = vload4(0, a + row * K + k)
            for j in range(4):
                acc += a4[j] * vload4(0, b + (k + j) * N + col0)
        for j in range(4):
            if col0 + j < N:
                c[row * N + col0 + j] = acc[j]


@pytest.mark.parametrize("shape", [{"M": 2, "N": 8, "K": 6}, {"M": 2, "N": 6, "K": 8}])
def test_bounds_check_catches_vector_loads_without_their_tails(shape):
    """Without the K tail the last 4-step reads rows of B past K; without the N tail the last
    strip's vload4 reads past the end of B's last row: the bounds check stops both and names
    B. The same shapes pass with the tails (matmul_float4)."""
    with pytest.raises(OutOfBoundsError, match=r"load from b\[\d+\] out of bounds"):
        _run("matmul_float4", shape, kernel_fn=matmul_float4_untailed)
    spec, inputs = _run("matmul_float4", shape)
    np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=1e-4, atol=1e-3)
