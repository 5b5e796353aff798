"""float32 transcendentals whose float64 core LLVM can vectorise: no libm call, no branch.

pip's llvmlite has no vector math library (SVML), so a loop calling libm ``exp`` stays a call
per element even when LLVM widens it. Here ``exp`` on float32 is a float64 polynomial written
in plain arithmetic: ``v = n ln2 + r`` (Cody-Waite with fdlibm's two-part ln2, ``n`` rounded
with the 1.5 * 2^52 trick), ``exp(r)`` by Taylor to degree 13 on ``|r| <= ln2 / 2`` (Horner;
truncation under 2^-57), times ``2^n`` built from its exponent bits, read off the rounded
double's own bits (a float-to-integer conversion of 4 doubles is 4 scalar ones on AVX2). Within 1 ulp of the exact
double result for the inputs whose float32 result is neither 0 nor inf; beyond them the input
is clamped to +-150, which still rounds to float32 0 or inf. Rounded once to float32, the
result equals ``float32(libm exp(double x))`` except where the double value lies within that
ulp of a float32 rounding midpoint (docs/language.md#numerics; tests/unit/test_exp_poly.py
constructs such inputs). JIT and no-JIT run this same source on IEEE doubles (no contraction:
``fastmath=False``), so both modes agree bit for bit.

float64 ``exp`` keeps libm: a 1-ulp polynomial would change double results.
"""

from __future__ import annotations

from clsim.compiler.helpers import helper

_ROUNDER = 6755399441055744.0  # 1.5 * 2^52: adding it rounds a double to an integer,
_ROUNDER_BITS = 0x4338000000000000  # whose bits are then these plus the integer (no cvt)
_LN2_HI = 6.93147180369123816490e-01  # low 21 bits zero: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_LOG2E = 1.4426950408889634
_DEGREE = 13


def _horner() -> str:
    coeffs = []
    fact = 1.0
    for k in range(1, _DEGREE + 1):
        fact *= k
        coeffs.append(1.0 / fact)
    lines = [f"    p = {coeffs[-1]!r}"]
    lines += [f"    p = p * r + {c!r}" for c in reversed(coeffs[:-1])]
    lines.append("    p = p * r + 1.0")
    return "\n".join(lines)


_CORE = f"""
    w = v if v > -150.0 else -150.0
    w = w if w < 150.0 else 150.0
    shifted = w * {_LOG2E!r} + {_ROUNDER!r}
    n = shifted - {_ROUNDER!r}
    r = (w - n * {_LN2_HI!r}) - n * {_LN2_LO!r}
{_horner()}
    bits = _bitcast_int64(shifted) - np.int64({_ROUNDER_BITS}) + np.int64(1023)
    e = v if v != v else p * _bitcast_float64(np.int64(bits << np.int64(52)))"""
# One text, two helpers: the float64 core alone (tests) and the float32 builtin, which holds
# the core itself, straight-line, so that calls can use it as an intrinsic (Helper.inline).
EXP_POLY64 = helper("_exp_poly64", f"def _exp_poly64(v):{_CORE}\n    return e")
EXP_FLOAT32 = helper("_exp_float32", f"""
def _exp_float32(x):
    v = np.float64(x){_CORE}
    return np.float32(e)
""", inline=True)

# name -> its float32 helper, replacing the libm template of clsim.compiler.builtins.math
FLOAT32 = {"exp": EXP_FLOAT32}
HELPERS = (EXP_POLY64,)  # what the float32 helpers call
