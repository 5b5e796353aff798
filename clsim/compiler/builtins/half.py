"""Half precision (cl_khr_fp16): the half codec, vload_half/vstore_half and their N-wide and
aligned forms, convert_half with rounding modes, as_half.

Numba has no float16, so a ``half`` value lives in a float32 that holds exactly a half value,
and a half buffer is passed to the generated code as its uint16 bits. Every operation on half
values is computed in float32 and rounded to half (``_rh``): float32 has 24 bits, at least
2 * 11 + 2, so rounding the float32 result of + - * / again to half gives the correctly
rounded half result (no double-rounding error). Loads decode bits (``_h2f``) and stores
encode them (``_f2h``), bit for bit as numpy does, NaN payloads included.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "half"
MODES = {"": 0, "_rte": 0, "_rtz": 1, "_rtp": 2, "_rtn": 3}
WIDTHS = ct.VECTOR_WIDTHS

# float32/float64 -> the nearest half (ties to even) as a float32; a float32 NaN is returned
# as it is (converting it to float64 first would quiet a signalling NaN).
RH = helper("_rh", """
def _rh(x):
    if x != x:
        return np.float32(x)
    v = np.float64(x)
    a = abs(v)
    if a >= 65520.0:
        return np.float32(math.copysign(math.inf, v))
    if a < 6.103515625e-05:
        q = 5.960464477539063e-08
    else:
        m, e = math.frexp(a)
        q = math.ldexp(1.0, e - 11)
    r = np.float64(round(a / q)) * q
    return np.float32(math.copysign(r, v))
""")
H2F = helper("_h2f", """
def _h2f(h):
    b = np.uint32(h)
    sign = (b >> np.uint32(15)) << np.uint32(31)
    e = (b >> np.uint32(10)) & np.uint32(31)
    m = b & np.uint32(1023)
    if e == np.uint32(31):
        return _bitcast_float32(np.uint32(sign | np.uint32(0x7F800000) | (m << np.uint32(13))))
    if e == np.uint32(0):
        v = np.float32(np.float64(m) * 5.960464477539063e-08)
        return -v if sign != np.uint32(0) else v
    return _bitcast_float32(np.uint32(sign | ((e + np.uint32(112)) << np.uint32(23))
                                      | (m << np.uint32(13))))
""")
# A float32 that holds a half value (or an infinity or NaN) -> its half bits.
F2H = helper("_f2h", """
def _f2h(x):
    b = _bitcast_uint32(np.float32(x))
    sign = np.uint16((b >> np.uint32(16)) & np.uint32(0x8000))
    e = (b >> np.uint32(23)) & np.uint32(255)
    m = b & np.uint32(0x7FFFFF)
    if e == np.uint32(255):
        if m == np.uint32(0):
            return np.uint16(sign | np.uint16(0x7C00))
        h = np.uint16(0x7C00) | np.uint16(m >> np.uint32(13))
        if h == np.uint16(0x7C00):
            h = np.uint16(0x7C01)
        return np.uint16(sign | h)
    a = abs(np.float64(x))
    if a < 6.103515625e-05:
        return np.uint16(sign | np.uint16(np.int64(a / 5.960464477539063e-08)))
    return np.uint16(sign | np.uint16(((e - np.uint32(112)) << np.uint32(10))
                                      | (m >> np.uint32(13))))
""")
# x (float32 or float64) -> half bits rounded by mode 0 rte, 1 rtz, 2 rtp, 3 rtn.
F2H_MODE = helper("_f2h_mode", """
def _f2h_mode(x, mode):
    r = _rh(x)
    h = _f2h(r)
    if mode == 0 or r != r:
        return h
    v = np.float64(x)
    neg = (h & np.uint16(0x8000)) != np.uint16(0)
    if mode == 1 and abs(np.float64(r)) > abs(v):
        return np.uint16(h - np.uint16(1))
    if mode == 2 and np.float64(r) < v:
        if not neg:
            return np.uint16(h + np.uint16(1))
        return np.uint16(1) if h == np.uint16(0x8000) else np.uint16(h - np.uint16(1))
    if mode == 3 and np.float64(r) > v:
        if neg:
            return np.uint16(h + np.uint16(1))
        return np.uint16(0x8001) if h == np.uint16(0) else np.uint16(h - np.uint16(1))
    return h
""", ("_rh", "_f2h"))
# fma on half: the product of two halves is exact in float64, the sum is rounded to odd
# (math_exact._ro_add) and then once to half: C's single rounding (rounding the float32 fma
# to half would round twice, wrong for about 1 in 25 000 operand triples)
FMA16 = helper("_fma_float16", """
def _fma_float16(a, b, c):
    return _rh(_ro_add(np.float64(a) * np.float64(b), np.float64(c)))
""", ("_rh", "_ro_add"))
# mix on half as the Intel CPU runtime computes it (measured, tests/device): y - x rounded to
# half, then fma((y - x), a, x) rounded once; mad on half is that fma (rounded once)
MIX16 = helper("_mix_float16", """
def _mix_float16(x, y, a):
    return _fma_float16(_rh(np.float32(y) - np.float32(x)), a, x)
""", ("_rh", "_fma_float16"))
F2H_DEPS = (RH, H2F, F2H, F2H_MODE, FMA16, MIX16)


def _need_half_buffer(name, call, t):
    if not (isinstance(t, ct.ArrayT | ct.PtrT) and t.dtype == "float16"):
        raise node_error(call, f"{name}: the buffer must hold half values (an np.float16 "
                               f"buffer), got {ct.short(t)}")


def _vload_rule(name, width):
    def rule(types, call):
        if len(types) != 2 or not ct.is_int(ct.promote(types[0])):
            raise node_error(call, f"{name}(offset, p) takes an integer offset and a half "
                                   "buffer")
        _need_half_buffer(name, call, types[1])
        return "float32" if width == 1 else ct.VecT("float32", width)

    return rule


def _vstore_rule(name, width):
    def rule(types, call):
        v = types[0] if types else None
        ok = len(types) == 3 and ct.is_int(ct.promote(types[1])) and (
            (width == 1 and ct.is_float(v) and v != "float16")
            or (isinstance(v, ct.VecT) and v.width == width and ct.is_float(v.dtype)
                and v.dtype != "float16"))
        if not ok:
            want = "a float" if width == 1 else f"a float{width}"
            raise node_error(call, f"{name}(v, offset, p) takes {want} (or double), an "
                                   "integer offset and a half buffer")
        _need_half_buffer(name, call, types[2])
        return None

    return rule


def _stride(width: int, aligned: bool) -> int:
    return 4 if (aligned and width == 3) else width


def _vload_lower(width, aligned):
    def lower(gen, call):
        return gen.half_vload(call, width, _stride(width, aligned))

    return lower


def _vstore_lower(width, aligned, mode):
    def lower(gen, call):
        return gen.half_vstore(call, width, _stride(width, aligned), MODES[mode])

    return lower


def _convert_rule(name):
    def rule(types, call):
        if len(types) != 1 or not ct.is_scalar(types[0]) or types[0] == "bool":
            raise node_error(call, f"{name}(x) converts one number")
        return "float16"

    return rule


def _convert_emit(mode):
    def emit(gen, codes, types, call):
        if MODES[mode] == 0:
            return gen.cast(codes[0], types[0], "float16")
        x = gen.cast(codes[0], types[0], "float64" if types[0] == "float64" else "float32")
        return (gen.helper("_h2f") + "(" + gen.helper("_f2h_mode")
                + f"({x}, {gen.const(MODES[mode], 'int64')}))")

    return emit


def _as_half_rule(types, call):
    if len(types) != 1 or types[0] not in ("int16", "uint16"):
        raise node_error(call, "as_half(x) reinterprets a short or ushort")
    return "float16"


def _as_half_emit(gen, codes, types, call):
    return gen.helper("_h2f") + f"({gen.cast(codes[0], types[0], 'uint16')})"


def _entries() -> list[Builtin]:
    rows = [
        Builtin("vload_half", FAMILY, _vload_rule("vload_half", 1), lower=_vload_lower(1, False),
                varying=True, access="load", helpers=F2H_DEPS, c="vload_half(offset, p)",
                types="half buffer", note="p[offset] as a float"),
        *(Builtin(f"vstore_half{m}", FAMILY, _vstore_rule(f"vstore_half{m}", 1),
                  lower=_vstore_lower(1, False, m), varying=True, access="store", effects=True,
                  helpers=F2H_DEPS, listed=m in ("", "_rtz"), c=f"vstore_half{m}(f, offset, p)",
                  types="float, double; half buffer",
                  note=("rounds to nearest even" if not m else
                        "also _rte, _rtp, _rtn: the rounding mode"))
          for m in MODES),
        Builtin("convert_half", FAMILY, _convert_rule("convert_half"), _convert_emit(""),
                helpers=F2H_DEPS, c="convert_half(x)", py="convert_half(x) or np.float16(x)",
                types="any number", note="nearest even; also _rte, _rtz, _rtp, _rtn"),
        *(Builtin(f"convert_half{m}", FAMILY, _convert_rule(f"convert_half{m}"),
                  _convert_emit(m), helpers=F2H_DEPS, listed=False, c=f"convert_half{m}(x)",
                  types="any number") for m in MODES if m),
        Builtin("as_half", FAMILY, _as_half_rule, _as_half_emit, helpers=F2H_DEPS,
                c="as_half(x)", types="short, ushort", note="same bits"),
    ]
    for w in WIDTHS:
        for aligned in (False, True):
            a = "a" if aligned else ""
            rows.append(Builtin(
                f"vload{a}_half{w}", FAMILY, _vload_rule(f"vload{a}_half{w}", w),
                lower=_vload_lower(w, aligned), varying=True, access="load", helpers=F2H_DEPS,
                listed=w == 4, c=f"vload{a}_half4(offset, p)", types="half buffer",
                note=("a float4 from p[4*offset ..]; every N" if not aligned else
                      "as vload_halfN, but vloada_half3 steps by 4")))
            for m in MODES:
                rows.append(Builtin(
                    f"vstore{a}_half{w}{m}", FAMILY, _vstore_rule(f"vstore{a}_half{w}{m}", w),
                    lower=_vstore_lower(w, aligned, m), varying=True, access="store",
                    effects=True, helpers=F2H_DEPS, listed=(w == 4 and not m),
                    c=f"vstore{a}_half4(v, offset, p)", types="floatN; half buffer",
                    note="every N and rounding mode suffix"))
    return rows


ENTRIES = _entries()
