"""Integer builtins on bits: clz, ctz, popcount, rotate, mul_hi, mad_hi, mul24, mad24,
abs_diff, add_sat, sub_sat, hadd, rhadd, upsample, bitselect (OpenCL C 6.15.3).

One helper per type (``_clz_int8`` ... ``_clz_uint64``) works on the value's bit pattern held in
a uint64 (``_bits_T``) and converts back with ``_frombits_T``, so Numba never mixes signed and
unsigned 64-bit operands (which it would do in float64) and both modes compute the same bits.
Each helper takes and returns scalars of one type: a component-wise wrapper can call it.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "integer"
INTS = ct.INT_TYPES
_M64 = "np.uint64(18446744073709551615)"


def _mask(t: str) -> str:
    return _M64 if ct.bits(t) == 64 else f"np.uint64({2**ct.bits(t) - 1})"


def _signed(t: str) -> bool:
    return not t.startswith("u")


def _unsigned(t: str) -> str:
    return t if not _signed(t) else "u" + t


def _conv_helpers(t: str) -> tuple:
    to_bits = (f"def _bits_{t}(x):\n    return np.uint64(np.int64(x)) & {_mask(t)}" if _signed(t)
               else f"def _bits_{t}(x):\n    return np.uint64(x) & {_mask(t)}")
    back = (f"def _frombits_{t}(u):\n    return np.{t}(np.int64(u))" if _signed(t)
            else f"def _frombits_{t}(u):\n    return np.{t}(u)")
    return helper(f"_bits_{t}", to_bits), helper(f"_frombits_{t}", back)


def _sources(t: str) -> dict[str, str]:
    b, m, u, s = ct.bits(t), _mask(t), _unsigned(t), _signed(t)
    lo, hi = (-(2 ** (b - 1)), 2 ** (b - 1) - 1) if s else (0, 2**b - 1)
    src = {
        "clz": f"""
def _clz_{t}(x):
    v = _bits_{t}(x)
    n = 0
    while n < {b} and (v >> np.uint64({b - 1} - n)) & np.uint64(1) == np.uint64(0):
        n += 1
    return np.{t}(n)""",
        "ctz": f"""
def _ctz_{t}(x):
    v = _bits_{t}(x)
    n = 0
    while n < {b} and (v >> np.uint64(n)) & np.uint64(1) == np.uint64(0):
        n += 1
    return np.{t}(n)""",
        "popcount": f"""
def _popcount_{t}(x):
    v = _bits_{t}(x)
    n = 0
    while v != np.uint64(0):
        n += int(v & np.uint64(1))
        v = v >> np.uint64(1)
    return np.{t}(n)""",
        "rotate": f"""
def _rotate_{t}(x, i):
    v = _bits_{t}(x)
    k = _bits_{t}(i) % np.uint64({b})
    if k == np.uint64(0):
        return np.{t}(x)
    r = ((v << k) | (v >> (np.uint64({b}) - k))) & {m}
    return _frombits_{t}(r)""",
        "abs_diff": f"""
def _abs_diff_{t}(x, y):
    if x > y:
        return np.{u}((_bits_{t}(x) - _bits_{t}(y)) & {m})
    return np.{u}((_bits_{t}(y) - _bits_{t}(x)) & {m})""",
        "hadd": f"""
def _hadd_{t}(x, y):
    one = np.{t}(1)
    return np.{t}(np.{t}(x >> one) + np.{t}(y >> one) + np.{t}(x & y & one))""",
        "rhadd": f"""
def _rhadd_{t}(x, y):
    one = np.{t}(1)
    return np.{t}(np.{t}(x >> one) + np.{t}(y >> one) + np.{t}((x | y) & one))""",
        "bitselect": f"""
def _bitselect_{t}(a, b, c):
    k = _bits_{t}(c)
    return _frombits_{t}((_bits_{t}(a) & ~k & {m}) | (_bits_{t}(b) & k))""",
        "mad_hi": f"""
def _mad_hi_{t}(a, b, c):
    return _frombits_{t}((_bits_{t}(_mul_hi_{t}(a, b)) + _bits_{t}(c)) & {m})""",
    }
    if b < 64:
        src["add_sat"] = f"""
def _add_sat_{t}(x, y):
    r = np.int64(x) + np.int64(y)
    return np.{t}(min(max(r, np.int64({lo})), np.int64({hi})))"""
        src["sub_sat"] = f"""
def _sub_sat_{t}(x, y):
    r = np.int64(x) - np.int64(y)
    return np.{t}(min(max(r, np.int64({lo})), np.int64({hi})))"""
        src["mul_hi"] = f"""
def _mul_hi_{t}(a, b):
    return np.{t}((np.int64(a) * np.int64(b)) >> np.int64({b}))"""
    else:
        src["mul_hi"] = _MUL_HI_64[t]
        src["add_sat"] = _SAT_64[t][0]
        src["sub_sat"] = _SAT_64[t][1]
    return src


# High half of a 64x64-bit product from 32-bit limbs; signed: the unsigned high half minus
# the other operand for each negative one (two's complement).
_UMULHI = """
def _umulhi64(a, b):
    m32 = np.uint64(4294967295)
    s32 = np.uint64(32)
    a0 = a & m32
    a1 = a >> s32
    b0 = b & m32
    b1 = b >> s32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    return a1 * b1 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)"""
_MUL_HI_64 = {
    "uint64": "\ndef _mul_hi_uint64(a, b):\n    return _umulhi64(np.uint64(a), np.uint64(b))",
    "int64": """
def _mul_hi_int64(a, b):
    h = _umulhi64(_bits_int64(a), _bits_int64(b))
    if a < 0:
        h = h - _bits_int64(b)
    if b < 0:
        h = h - _bits_int64(a)
    return _frombits_int64(h)""",
}
_SAT_64 = {
    "uint64": ("""
def _add_sat_uint64(x, y):
    r = np.uint64(x) + np.uint64(y)
    return np.uint64(18446744073709551615) if r < np.uint64(x) else r""", """
def _sub_sat_uint64(x, y):
    return np.uint64(0) if np.uint64(y) > np.uint64(x) else np.uint64(x) - np.uint64(y)"""),
    "int64": ("""
def _add_sat_int64(x, y):
    r = _frombits_int64(_bits_int64(x) + _bits_int64(y))
    if x >= 0 and y >= 0 and r < 0:
        return np.int64(9223372036854775807)
    if x < 0 and y < 0 and r >= 0:
        return np.int64(-9223372036854775807 - 1)
    return r""", """
def _sub_sat_int64(x, y):
    r = _frombits_int64(_bits_int64(x) - _bits_int64(y))
    if x >= 0 and y < 0 and r < 0:
        return np.int64(9223372036854775807)
    if x < 0 and y >= 0 and r >= 0:
        return np.int64(-9223372036854775807 - 1)
    return r"""),
}
_ARITY = {"clz": 1, "ctz": 1, "popcount": 1, "rotate": 2, "abs_diff": 2, "hadd": 2, "rhadd": 2,
          "bitselect": 3, "mad_hi": 3, "add_sat": 2, "sub_sat": 2, "mul_hi": 2}
_NOTES = {
    "clz": "leading zero bits (the width for 0)", "ctz": "trailing zero bits (the width for 0)",
    "popcount": "bits set", "rotate": "rotate left by y mod the width",
    "abs_diff": "|x - y| without overflow; unsigned result", "hadd": "(x + y) >> 1, no overflow",
    "rhadd": "(x + y + 1) >> 1, no overflow", "bitselect": "bits of y where z is 1, else x",
    "mad_hi": "mul_hi(x, y) + z", "add_sat": "saturating x + y", "sub_sat": "saturating x - y",
    "mul_hi": "high half of the double-width product",
}


def _deps(name: str, t: str) -> tuple[str, ...]:
    deps = (f"_bits_{t}", f"_frombits_{t}")
    if name == "mad_hi":
        deps += (f"_mul_hi_{t}",)
    if name == "mul_hi" and ct.bits(t) == 64:
        deps += ("_umulhi64",)
    return deps


def _helpers_for(name: str) -> tuple:
    out = [helper("_umulhi64", _UMULHI)]
    for t in INTS:
        out += _conv_helpers(t)
        src = _sources(t)
        out.append(helper(f"_{name}_{t}", src[name], _deps(name, t)))
        if name == "mad_hi":
            out.append(helper(f"_mul_hi_{t}", src["mul_hi"], _deps("mul_hi", t)))
    return tuple(out)


def _int_rule(name: str, n: int, unsigned_result: bool = False):
    def rule(types, call):
        if len(types) != n or not all(ct.is_scalar(t) and ct.is_int(t) for t in types):
            raise node_error(call, f"{name}() takes {n} integer(s)")
        t = types[0]
        return _unsigned(t) if unsigned_result else t

    return rule


def _emit(name: str):
    def emit(gen, codes, types, call):
        t = types[0]
        args = [gen.cast(c, a, t) for c, a in zip(codes, types, strict=True)]
        return gen.helper(f"_{name}_{t}") + "(" + ", ".join(args) + ")"

    return emit


def _mul24_rule(types, call):
    if len(types) not in (2, 3) or not all(t in ("int32", "uint32") for t in types):
        raise node_error(call, "mul24/mad24 take int or uint operands (24-bit values)")
    return types[0]


def _emit_mul24(gen, codes, types, call):
    t = call.ctype
    a = [gen.cast(c, s, "int64") for c, s in zip(codes, types, strict=True)]
    expr = f"{a[0]} * {a[1]}" + (f" + {a[2]}" if len(a) == 3 else "")
    return gen.helper(f"_w_{t}") + f"(np.{(_signed(t) and 'int64') or 'uint64'}({expr}))"


def _upsample_rule(types, call):
    wide = {"int8": "int16", "uint8": "uint16", "int16": "int32", "uint16": "uint32",
            "int32": "int64", "uint32": "uint64"}
    if len(types) != 2 or types[0] not in wide or types[1] != _unsigned(types[0]):
        raise node_error(call, "upsample(hi, lo) takes a char/short/int hi and a lo of the "
                               "unsigned type of the same width")
    return wide[types[0]]


def _emit_upsample(gen, codes, types, call):
    b = ct.bits(types[0])
    hi = gen.cast(codes[0], types[0], "int64")
    lo = gen.cast(codes[1], types[1], "int64")
    return gen.cast(f"((np.int64({hi}) << np.int64({b})) | np.int64({lo}))", "int64", call.ctype)


_FLOAT_BITS = {"float32": "uint32", "float64": "uint64"}


def _bitselect_rule(types, call):
    """Integers, or three floats of one type (gentype includes float and double)."""
    if len(types) == 3 and types[0] in _FLOAT_BITS and len(set(types)) == 1:
        return types[0]
    return _int_rule("bitselect", 3)(types, call)


def _emit_bitselect(gen, codes, types, call):
    t = types[0]
    if t not in _FLOAT_BITS:
        return _emit("bitselect")(gen, codes, types, call)
    u = _FLOAT_BITS[t]  # the same selection on the bit patterns
    args = ", ".join(gen.bitcast(c, t, u) for c in codes)
    return gen.bitcast(gen.helper(f"_bitselect_{u}") + f"({args})", u, t)


ENTRIES = [
    *(Builtin(name, FAMILY, _int_rule(name, n, name == "abs_diff"), _emit(name),
              helpers=_helpers_for(name), flop=None, c=f"{name}({', '.join('xyz'[:n])})",
              types="char .. ulong", note=_NOTES[name]) for name, n in _ARITY.items()
      if name != "bitselect"),
    Builtin("bitselect", FAMILY, _bitselect_rule, _emit_bitselect,
            helpers=_helpers_for("bitselect"), c="bitselect(x, y, z)",
            types="char .. ulong, float, double", note=_NOTES["bitselect"] + " (on the bits)"),
    Builtin("mul24", FAMILY, _mul24_rule, _emit_mul24, c="mul24(x, y)", types="int, uint",
            note="x * y (24-bit operands)"),
    Builtin("mad24", FAMILY, _mul24_rule, _emit_mul24, c="mad24(x, y, z)", types="int, uint",
            note="x * y + z (24-bit operands)"),
    Builtin("upsample", FAMILY, _upsample_rule, _emit_upsample, c="upsample(hi, lo)",
            types="char .. int, lo unsigned", note="(hi << width) | lo, double width"),
]
