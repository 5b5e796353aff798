"""half (cl_khr_fp16): np.float16 buffers and scalars, arithmetic rounded to half after every
operation, vload_half/vstore_half with rounding modes, their N-wide forms, convert_half,
as_half, half vectors — bit for bit against numpy, all 65 536 half patterns included."""

import numpy as np
import pytest

import clsim
from clsim import (
    as_half,
    convert_float4,
    convert_half,
    convert_half_rtz,
    exp,
    get_global_id,
    half4,
    kernel,
    local_array,
    sqrt,
    vload_half,
    vload_half4,
    vloada_half3,
    vstore_half,
    vstore_half4,
    vstore_half_rtn,
    vstore_half_rtp,
    vstore_half_rtz,
    vstorea_half3,
)

JIT = pytest.mark.parametrize("jit", [False, True])
ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


@kernel
def half_patterns(h, f, back, copy, bits):
    i = get_global_id(0)
    x = vload_half(i, h)
    f[i] = x
    vstore_half(f[i], i, back)
    copy[i] = h[i]
    bits[i] = as_half(np.uint16(i))


@JIT
def test_every_half_pattern_converts_like_numpy(jit):
    """Each of the 65 536 half bit patterns (subnormals, infinities, NaN payloads): half to
    float as numpy's astype, float back to half as numpy's, a half copied bit for bit,
    as_half(ushort) the same bits."""
    h = ALL_BITS.view(np.float16)
    f = np.zeros(65536, np.float32)
    back, copy, bits = (np.zeros(65536, np.float16) for _ in range(3))
    clsim.run(half_patterns, (65536,), (256,), (h, f, back, copy, bits), jit=jit)
    with np.errstate(all="ignore"):
        want = h.astype(np.float32)
    np.testing.assert_array_equal(f.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(back.view(np.uint16), want.astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(copy.view(np.uint16), ALL_BITS)
    np.testing.assert_array_equal(bits.view(np.uint16), ALL_BITS)


@kernel
def store_modes(f, rte, rtz, rtp, rtn, conv, conv_rtz):
    i = get_global_id(0)
    vstore_half(f[i], i, rte)
    vstore_half_rtz(f[i], i, rtz)
    vstore_half_rtp(f[i], i, rtp)
    vstore_half_rtn(f[i], i, rtn)
    conv[i] = convert_half(f[i])
    conv_rtz[i] = convert_half_rtz(f[i])


def _directed(x: np.ndarray, toward) -> np.ndarray:
    """numpy's nearest half, stepped once toward ``toward(r, x)``'s side where it overshot."""
    with np.errstate(all="ignore"):
        r = x.astype(np.float16)
        step = toward(r.astype(np.float64), x.astype(np.float64))
        target = np.where(step > 0, np.float16(np.inf), np.where(step < 0, np.float16(-np.inf),
                                                                 r))
        return np.where(step != 0, np.nextafter(r, target), r)


@JIT
def test_float_to_half_rounding_modes(jit):
    """float -> half: _rte is numpy's astype; _rtz, _rtp, _rtn are the neighbouring half in
    their direction (overflow: rtz gives 65504, not infinity)."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000)).astype(np.float32)
    x = np.concatenate([x, np.array([65504, 65519.99, 65520, 7e4, -7e4, 1e-10, -1e-10, 0.0,
                                     -0.0, 2.0**-25, 3 * 2.0**-26], np.float32)])
    outs = [np.zeros(x.size, np.float16) for _ in range(6)]
    clsim.run(store_modes, (x.size,), (8,), (x, *outs), jit=jit)
    rte, rtz, rtp, rtn, conv, conv_rtz = (o.view(np.uint16) for o in outs)
    with np.errstate(over="ignore"):  # 7e4 rounds to infinity, as round-to-nearest does
        want_rte = x.astype(np.float16)
    np.testing.assert_array_equal(rte, want_rte.view(np.uint16))
    np.testing.assert_array_equal(conv, rte)
    want_rtz = _directed(x, lambda r, v: np.where(np.abs(r) > np.abs(v), -np.sign(r), 0))
    want_rtp = _directed(x, lambda r, v: np.where(r < v, 1, 0))
    want_rtn = _directed(x, lambda r, v: np.where(r > v, -1, 0))
    np.testing.assert_array_equal(rtz, want_rtz.view(np.uint16))
    np.testing.assert_array_equal(conv_rtz, want_rtz.view(np.uint16))
    np.testing.assert_array_equal(rtp, want_rtp.view(np.uint16))
    np.testing.assert_array_equal(rtn, want_rtn.view(np.uint16))


@kernel
def half_arith(a, b, out, s):
    i = get_global_id(0)
    t = local_array(8, np.float16)
    t[get_global_id(0) % 8] = a[i] * b[i] + s
    out[i] = t[i % 8] - a[i] / b[i]
    out[i] += sqrt(np.float16(2.0)) * exp(a[i])


@JIT
def test_half_arithmetic_rounds_every_operation(jit):
    """a * b + s - a / b with half buffers, a half scalar and a half local array: each
    operation rounded to half, as numpy's float16 arithmetic (and a device with fp16) does;
    math builtins on half return half."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal(64).astype(np.float16)
    b = (rng.standard_normal(64) + 3).astype(np.float16)
    s = np.float16(0.3)
    out = np.zeros(64, np.float16)
    clsim.run(half_arith, (64,), (8,), (a, b, out, s), jit=jit)
    with np.errstate(all="ignore"):
        want = (a * b + s) - a / b
        extra = np.float16(np.sqrt(np.float32(2))) * np.exp(a.astype(np.float32)).astype(
            np.float16)
        want = want + extra
    np.testing.assert_array_equal(out, want)


@kernel
def half_vectors(h, out, wide, packed):
    i = get_global_id(0)
    v = vload_half4(i, h)
    w = half4(v.x, v.y, v.z, v.w)
    w = w * w
    vstore_half4(convert_float4(w), i, out)
    vstore_half4(v * 2.0, i, wide)
    p = vloada_half3(i, h)
    vstorea_half3(p + 1.0, i, packed)


@JIT
def test_half_vectors_and_n_wide_loads(jit):
    """vload_half4 gives a float4; half4 arithmetic rounds per component; vloada_half3 and
    vstorea_half3 step by 4 elements and touch 3."""
    rng = np.random.default_rng(3)
    h = rng.standard_normal(16).astype(np.float16)
    out, wide = np.zeros(16, np.float16), np.zeros(16, np.float16)
    packed = np.full(16, np.float16(-7))
    clsim.run(half_vectors, (4,), (4,), (h, out, wide, packed), jit=jit)
    np.testing.assert_array_equal(out, h * h)
    np.testing.assert_array_equal(wide, (h.astype(np.float32) * 2).astype(np.float16))
    want = np.full(16, np.float16(-7)).reshape(4, 4)
    want[:, :3] = (h.reshape(4, 4)[:, :3].astype(np.float32) + 1).astype(np.float16)
    np.testing.assert_array_equal(packed, want.reshape(-1))


@kernel
def half_into_float_buffer(f, h):
    vstore_half(f[0], 0, f)


def test_vstore_half_needs_a_half_buffer():
    with pytest.raises(clsim.KernelCompileError, match="must hold half values"):
        clsim.run(half_into_float_buffer, (1,), (1,), (np.zeros(2, np.float32),
                                                      np.zeros(2, np.float16)))


@kernel
def fused_half(a, b, c, o_fma, o_mad, o_mix, o_vec):
    i = get_global_id(0)
    o_fma[i] = clsim.fma(a[i], b[i], c[i])
    o_mad[i] = clsim.mad(a[i], b[i], c[i])
    o_mix[i] = clsim.mix(a[i], b[i], c[i])
    v = clsim.fma(clsim.half2(a[i], b[i]), clsim.half2(b[i]), clsim.half2(c[i]))
    o_vec[i] = v.x


def _triples(n, seed):
    """Operand triples where a float32 fma rounded again to half rounds twice (products near
    1..4 and small addends) mixed with ordinary random halves."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0x3C00, 0x4000, n).astype(np.uint16).view(np.float16)
    b = rng.integers(0x3C00, 0x4000, n).astype(np.uint16).view(np.float16)
    c = rng.integers(0x0001, 0x1000, n).astype(np.uint16).view(np.float16)
    return a, b, c


@pytest.mark.parametrize("jit", [False, True])
def test_fma_mad_mix_on_half_round_once(jit):
    """fma on half is rounded once (the exact a * b + c to the nearest half), where rounding
    the float32 fma again would differ; mad on half is the same fused operation and mix is
    fma(half(y - x), a, x), as the Intel CPU runtime computes them (docs/language.md)."""
    n = 200_000 if jit else 20_000
    a, b, c = _triples(n, 1)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    once = (f(a) * f(b) + f(c)).astype(np.float16)
    twice = (f(a) * f(b) + f(c)).astype(np.float32).astype(np.float16)
    assert (once != twice).sum() > 0, "the operands must include double-rounding cases"
    outs = [np.zeros(n, np.float16) for _ in range(4)]
    clsim.run(fused_half, (n,), (256,), (a, b, c, *outs), jit=jit)
    np.testing.assert_array_equal(outs[0], once)
    np.testing.assert_array_equal(outs[1], once)
    diff = (b.astype(np.float32) - a.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(outs[2], (f(diff) * f(c) + f(a)).astype(np.float16))
    np.testing.assert_array_equal(outs[3], once)
