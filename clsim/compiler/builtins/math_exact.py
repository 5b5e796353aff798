"""Correctly rounded fma in float32 and float64, as runtime helpers (no table entries here).

float32: the product of two floats is exact in float64; the float64 sum is rounded to odd and
then to float32, which is correct (round-to-odd with 2+ spare bits avoids double rounding).
float64: Boldo and Melquiond's emulated FMA ("Emulation of FMA and correctly rounded sums:
proved algorithms using rounding to odd", IEEE TC 2008): an exact product (Veltkamp/Dekker), an
exact sum with c, the two low parts added rounded to odd, then one rounding. The operands are
scaled to mantissas first so that neither the split nor the product can overflow or underflow;
a subnormal result is rounded to odd in the scaled domain and rounded once when scaled back.
"""

from __future__ import annotations

from clsim.compiler.helpers import helper

# Round-to-odd of x + y (float64): the nearest sum, moved to its odd neighbour when inexact.
RO_ADD = helper("_ro_add", """
def _ro_add(x, y):
    s = x + y
    bv = s - x
    e = (x - (s - bv)) + (y - bv)
    if e == 0.0 or s != s or abs(s) == math.inf:
        return s
    if abs(s) >= 2.2250738585072014e-308:
        m, ex = math.frexp(s)
        units = m * 9007199254740992.0
    else:
        units = s * 1.0715086071862673e+301 * 1.888946593147858e+22
    if np.fmod(units, 2.0) == 0.0:
        s = np.nextafter(s, math.inf if e > 0.0 else -math.inf)
    return s
""")

# A NaN operand gives the positive quiet NaN: which of two NaNs an addition returns differs
# between Numba's code and numpy's scalars (fma(0, inf, NaN) had a different sign per mode).
FMA32 = helper("_fma_float32", """
def _fma_float32(a, b, c):
    if a != a or b != b or c != c:
        return np.float32(math.nan)
    return np.float32(_ro_add(np.float64(a) * np.float64(b), np.float64(c)))
""", ("_ro_add",))

# fma of mantissas ma, mb in [0.5, 1) and a c within 2**-200 .. 2**111: exact product, exact
# sum, low parts rounded to odd; ``odd`` rounds the last step to odd too (for a rescaling).
FMA_SCALED = helper("_fma_scaled", """
def _fma_scaled(a, b, c, odd):
    p = a * b
    t = 134217729.0 * a
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    pl = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    th = c + p
    bv = th - c
    tl = (c - (th - bv)) + (p - bv)
    v = _ro_add(tl, pl)
    if odd:
        return _ro_add(th, v)
    return th + v
""", ("_ro_add",))

FMA64 = helper("_fma_float64", """
def _fma_float64(a, b, c):
    a = np.float64(a)
    b = np.float64(b)
    c = np.float64(c)
    if a != a or b != b or c != c:
        return math.nan
    if abs(a) == math.inf or abs(b) == math.inf:
        return a * b + c
    if c != c or abs(c) == math.inf:
        return c
    if a == 0.0 or b == 0.0:
        return a * b + c
    if c == 0.0:
        return a * b
    ma, ea = math.frexp(a)
    mb, eb = math.frexp(b)
    e = ea + eb
    ec = math.frexp(c)[1]
    if ec - e > 110:
        return c
    if ec - e < -200:
        sc = math.copysign(4.909093465297727e-91, c)
    else:
        sc = math.ldexp(c, -e)
    r = _fma_scaled(ma, mb, sc, False)
    if r == 0.0:
        return r
    er = math.frexp(r)[1] + e
    if er > 1024:
        return math.copysign(math.inf, r)
    if er < -1021:
        r = _fma_scaled(ma, mb, sc, True)
        if er < -1080:
            return math.copysign(0.0, r)
    return np.float64(math.ldexp(r, e))
""", ("_fma_scaled",))

FMA = (FMA32, FMA64, RO_ADD, FMA_SCALED)
