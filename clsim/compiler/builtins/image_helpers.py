"""Runtime helper sources of the image builtins (``clsim.compiler.builtins.images``).

``_imaddr`` maps a pixel coordinate through the addressing mode (or records the out-of-range
error); one reader per (read suffix, channel type) converts a pixel's stored channels to the
read's vector, one writer per (write suffix, channel type) converts back; ``_imlin1`` and
``_imlin2`` blend the taps of a linear-filtered read; ``_imnear`` and ``_imlinpos`` place a
float coordinate. Plain Python in Numba's subset, like
every helper (``clsim.compiler.helpers``); nothing here types or emits kernel code.
"""

from __future__ import annotations

import numpy as np

from clsim.compiler.helpers import helper
from clsim.runtime import images as im
from clsim.runtime import record as rec

# read/write suffix -> (channel-type family it needs, the vector element type it returns/takes)
SUFFIXES = {"f": ("f", "float32"), "h": ("f", "float16"), "i": ("i", "int32"),
            "ui": ("ui", "uint32")}

ADDR = helper("_imaddr", rec.fill("""
def _imaddr(img, nch, x, y, mode, code, err, site, lid):
    w = np.int64(img.shape[1] // nch)
    h = np.int64(img.shape[0])
    if x >= 0 and x < w and y >= 0 and y < h:
        return np.int64(x), np.int64(y), np.int64(0)
    if mode == 2:
        return np.int64(min(max(x, 0), w - 1)), np.int64(min(max(y, 0), h - 1)), np.int64(0)
    if code != 0 and mode == 0 and err[{CODE}] == 0:
        err[{CODE}] = code
        err[{SITE}] = site
        err[{INDEX}] = x
        err[{LENGTH}] = w
        err[{COUNT_A}] = y
        err[{COUNT_B}] = h
        err[{LID}] = lid
    return np.int64(0), np.int64(0), np.int64(1)
"""))
UNORM_W = helper("_imunorm", """
def _imunorm(v, scale):
    f = np.float32(v) * np.float32(scale)
    if f != f or f <= np.float32(0.0):
        return np.float64(0.0)
    if f >= np.float32(scale):
        return np.float64(scale)
    return np.rint(np.float64(f))
""")


def _read_conv(suffix: str, t: im.ChannelType) -> str:
    """Code converting one stored channel ``s`` to the read's element (a half is held in a
    float32)."""
    if suffix in ("i", "ui"):
        return f"np.{SUFFIXES[suffix][1]}(s)"
    if t.name == "float16":
        return "_h2f(s)"
    # unorm: times the float nearest 1/255, as PoCL and Intel's runtime read it (the spec
    # allows 1.5 ulp; Oclgrind divides, 1 ulp away on some values)
    f = "np.float32(s)" if t.scale == 0 else \
        f"(np.float32(s) * np.float32({float(np.float32(1.0 / t.scale))!r}))"
    return f if suffix == "f" else f"_rh({f})"


def _write_conv(suffix: str, t: im.ChannelType) -> str:
    """Code converting one component ``v`` of the written vector to the stored channel."""
    if t.name == "float16":
        return "_f2h_mode(v, 0)"
    if t.scale:
        return f"np.{t.storage}(_imunorm(v, {float(t.scale)!r}))"
    if t.family == "f":
        return "np.float32(v)"
    info = {"int8": (-128, 127), "int16": (-32768, 32767), "uint8": (0, 255),
            "uint16": (0, 65535)}.get(t.name)
    if info is None:  # 32-bit: the value as it is
        return f"np.{t.storage}(v)"
    return f"np.{t.storage}(min(max(np.int64(v), {info[0]}), {info[1]}))"


def _reader(suffix: str, t: im.ChannelType):
    elem = "float32" if suffix in ("f", "h") else SUFFIXES[suffix][1]
    name = f"_imr{suffix}_{t.name}"
    conv = _read_conv(suffix, t)
    zero, one = f"np.{elem}(0)", f"np.{elem}(1)"
    chans = "\n".join(f"    s = img[y, o + {k}]\n    c{k} = {conv}" if k == 0 else
                      f"    c{k} = {zero}\n    if nch > {k}:\n        s = img[y, o + {k}]\n"
                      f"        c{k} = {conv}" for k in range(3))
    source = f"""
def {name}(img, x, y, nch, border):
    if border != 0:
        return ({zero}, {zero}, {zero}, {zero} if nch == 4 else {one})
    o = x * nch
{chans}
    c3 = {one}
    if nch == 4:
        s = img[y, o + 3]
        c3 = {conv}
    return (c0, c1, c2, c3)
"""
    return helper(name, source, ("_h2f", "_rh"))


def _writer(suffix: str, t: im.ChannelType):
    name = f"_imw{suffix}_{t.name}"
    conv = _write_conv(suffix, t)
    stores = "\n".join(f"    v = v{k}\n    img[y, o + {k}] = {conv}" if k == 0 else
                       f"    if nch > {k}:\n        v = v{k}\n        img[y, o + {k}] = {conv}"
                       for k in range(4))
    source = f"""
def {name}(img, x, y, nch, border, v0, v1, v2, v3):
    if border != 0:
        return
    o = x * nch
{stores}
"""
    return helper(name, source, ("_f2h_mode", "_imunorm"))


# A float coordinate's pixel (nearest) or two taps and fraction (linear), by the spec's
# formulas per addressing mode (6 repeat, 8 mirrored repeat: normalised coordinates only);
# ``size`` is the image's width or height. NaN and huge values land far outside, where the
# addressing mode decides.
NEAREST = helper("_imnear", """
def _imnear(u, size, mode, normalized):
    v = np.float32(u)
    if v != v or abs(v) > np.float32(1e15):
        return np.int64(-(2 ** 50))
    n = np.float32(size)
    if mode == 6:
        i = np.int64(math.floor((v - np.float32(math.floor(v))) * n))
        return i - size if i > size - 1 else i
    if mode == 8:
        s = np.float32(2.0) * np.float32(np.rint(np.float32(0.5) * v))
        return min(np.int64(math.floor(abs(v - s) * n)), size - 1)
    return np.int64(math.floor(v * n if normalized != 0 else v))
""")
LINEAR = helper("_imlinpos", """
def _imlinpos(u, size, mode, normalized):
    v = np.float32(u)
    if v != v or abs(v) > np.float32(1e15):
        return np.int64(-(2 ** 50)), np.int64(-(2 ** 50) + 1), np.float32(0.0)
    n = np.float32(size)
    if mode == 6:
        t = (v - np.float32(math.floor(v))) * n
    elif mode == 8:
        t = abs(v - np.float32(2.0) * np.float32(np.rint(np.float32(0.5) * v))) * n
    else:
        t = v * n if normalized != 0 else v
    x = t - np.float32(0.5)
    i0 = np.int64(math.floor(x))
    a = np.float32(x - np.float32(math.floor(x)))
    i1 = i0 + 1
    if mode == 6:
        i0 = i0 + size if i0 < 0 else i0
        i1 = i1 - size if i1 > size - 1 else i1
    elif mode == 8:
        i0 = max(i0, np.int64(0))
        i1 = min(i1, np.int64(size - 1))
    return i0, i1, a
""")
# The spec's blend of the taps, term by term in its order: (1 - a) * T0 + a * T1, and
# (1 - a)(1 - b) T00 + a (1 - b) T10 + (1 - a) b T01 + a b T11 (float32, no contraction).
LIN1 = helper("_imlin1", """
def _imlin1(t0, t1, a):
    one = np.float32(1.0)
    return ((one - a) * t0[0] + a * t1[0], (one - a) * t0[1] + a * t1[1],
            (one - a) * t0[2] + a * t1[2], (one - a) * t0[3] + a * t1[3])
""")
LIN2 = helper("_imlin2", """
def _imlin2(t00, t10, t01, t11, a, b):
    one = np.float32(1.0)
    w00 = (one - a) * (one - b)
    w10 = a * (one - b)
    w01 = (one - a) * b
    w11 = a * b
    return (w00 * t00[0] + w10 * t10[0] + w01 * t01[0] + w11 * t11[0],
            w00 * t00[1] + w10 * t10[1] + w01 * t01[1] + w11 * t11[1],
            w00 * t00[2] + w10 * t10[2] + w01 * t01[2] + w11 * t11[2],
            w00 * t00[3] + w10 * t10[3] + w01 * t01[3] + w11 * t11[3])
""")


READERS = tuple(_reader(s, t) for s in SUFFIXES for t in im.CHANNEL_TYPES.values()
                if t.family == SUFFIXES[s][0])
WRITERS = tuple(_writer(s, t) for s in SUFFIXES for t in im.CHANNEL_TYPES.values()
                if t.family == SUFFIXES[s][0])
