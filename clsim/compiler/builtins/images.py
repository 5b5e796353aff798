"""Image builtins: read_imagef/h/i/ui, write_imagef/h/i/ui, get_image_width/height.

An image parameter (``ct.ImageT``, from a ``clsim.Image`` argument) is, in generated code, a
2-D array of rows of ``width * channels`` stored values. A read or write first maps its
coordinate through ``_imaddr``: in range it is the pixel; out of range the sampler's
addressing mode decides (clamp-to-edge clamps, clamp gives the border colour, none and
samplerless reads are undefined in OpenCL, so with bounds checks on they are an error naming
the image and the coordinate; an out-of-range write is always such an error). The pixel's
channels are then converted by the spec's rules for the channel type (half -> float exact,
unorm -> value * (1 / 255), float -> half to nearest even on write...), and missing channels read
as 0 (alpha 1). The sampler must be a compile-time constant (a module-level
``CLK_... | CLK_...`` int, as ggml's ``const sampler_t``): its bits choose the code.

Instruments see each pixel access as one access of ``channels`` elements in space "image"
(the traffic model counts it as texture-cache traffic; docs/traffic-model.md).
An image passed to a ``@clsim.func`` helper is the same rows under the helper's parameter
name. CLK_FILTER_LINEAR (float coordinates) reads the spec's two (1-D) or four taps, each
through the addressing mode and each an access, and blends them in float32 in the spec's
order. Normalised coordinates scale by the width (height), and CLK_ADDRESS_REPEAT /
CLK_ADDRESS_MIRRORED_REPEAT place them by the spec's formulas (``_imnear``, ``_imlinpos``).
Not here: 3-D and array images, read_write images (each a compile error that says so).
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins import image_helpers as ih
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.half import F2H_DEPS
from clsim.compiler.diagnostics import node_error
from clsim.runtime import images as im
from clsim.runtime import record as rec

FAMILY = "image"
SUFFIXES = ih.SUFFIXES
_NONE, _DROP, _EDGE, _BORDER = 0, 1, 2, 4  # _imaddr's modes (_DROP: skip a write)
_REPEAT, _MIRROR = 6, 8  # placed in range by _imnear/_imlinpos, then read as clamp-to-edge

def _image_of(call, types, what: str) -> ct.ImageT:
    node = call.args[0] if call.args else None
    if not types or not isinstance(types[0], ct.ImageT) or not isinstance(node, ast.Name):
        raise node_error(call, f"{what}: the first argument must be an image parameter "
                               "(a clsim.Image argument, by name)")
    return types[0]


def _sampler_value(call) -> int | None:
    """The sampler of a 3-argument read (a compile-time constant), else None."""
    if len(call.args) != 3:
        return None
    resolved = getattr(call.args[1], "resolved", None)
    if resolved is None or resolved[0] != "const" or isinstance(resolved[1], float):
        raise node_error(call, "the sampler must be a module-level constant such as "
                               "SMP = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE "
                               "| CLK_FILTER_NEAREST (a const sampler_t in OpenCL C)")
    value = int(resolved[1])
    if value & im.ADDRESS_MASK in (_REPEAT, _MIRROR) and not value & im.NORMALIZED_MASK:
        raise node_error(call, "repeat addressing needs CLK_NORMALIZED_COORDS_TRUE (OpenCL "
                               "leaves it undefined with unnormalised coordinates)")
    return value


def _coord_rule(call, img: ct.ImageT, coord, what: str, sampler: bool) -> None:
    dims = 2 if img.kind == "image2d" else 1
    kinds = "int or float (with a sampler)" if sampler else "int"

    def ok_elem(t):
        return ct.is_int(ct.promote(t)) or (sampler and t == "float32")

    if dims == 1:
        good = ct.is_scalar(coord) and ok_elem(coord)
        want = f"an {kinds}"
    else:
        good = isinstance(coord, ct.VecT) and coord.width == 2 and ok_elem(coord.dtype)
        want = "an int2" + (" or float2 (with a sampler)" if sampler else "")
    if not good:
        raise node_error(call, f"{what}: the coordinate of an {img.kind} must be {want}, "
                               f"got {ct.short(coord)}")


def _read_rule(suffix: str):
    name = f"read_image{suffix}"

    def rule(types, call):
        if len(types) not in (2, 3):
            raise node_error(call, f"{name}(image, coord) or {name}(image, sampler, coord)")
        img = _image_of(call, types, name)
        if img.access != "read_only":
            raise node_error(call, f"{name}: image '{call.args[0].id}' is {img.access}; "
                                   "pass it as clsim.Image(..., access='read_only')")
        _check_family(call, img, suffix, name)
        if len(types) == 3 and img.kind == "image1d_buffer":
            raise node_error(call, f"{name}: an image1d_buffer_t is read without a sampler "
                                   f"({name}(image, coord))")
        sampler = _sampler_value(call)
        _coord_rule(call, img, types[-1], name, sampler is not None)
        needs_float = sampler is not None and (_linear(sampler) or sampler & im.NORMALIZED_MASK)
        if needs_float and not ct.is_float(ct.elem(types[-1])):
            raise node_error(call, f"{name}: CLK_FILTER_LINEAR and CLK_NORMALIZED_COORDS_TRUE "
                                   "need float coordinates (OpenCL allows integer ones with "
                                   "unnormalised, nearest samplers only)")
        if sampler is not None and _linear(sampler) and suffix in ("i", "ui"):
            raise node_error(call, f"{name}: CLK_FILTER_LINEAR filters float, half and unorm "
                                   "images only (read_imagef/read_imageh)")
        return ct.VecT(SUFFIXES[suffix][1], 4)

    return rule


def _linear(sampler: int) -> bool:
    return sampler & im.FILTER_MASK == im.SAMPLER_CONSTANTS["CLK_FILTER_LINEAR"]


def _check_family(call, img: ct.ImageT, suffix: str, name: str) -> None:
    t = im.CHANNEL_TYPES[img.channel_type]
    if t.family != SUFFIXES[suffix][0]:
        right = {"f": "read_imagef/read_imageh", "i": "read_imagei",
                 "ui": "read_imageui"}[t.family]
        raise node_error(call, f"{name} on an image of {t.cl} channels is undefined in "
                               f"OpenCL; use {right.replace('read', name.split('_')[0])}")


def _write_rule(suffix: str):
    name = f"write_image{suffix}"
    vec = ct.VecT(SUFFIXES[suffix][1], 4)

    def rule(types, call):
        if len(types) != 3:
            raise node_error(call, f"{name}(image, coord, value) takes 3 arguments")
        img = _image_of(call, types, name)
        if img.access != "write_only":
            raise node_error(call, f"{name}: image '{call.args[0].id}' is {img.access}; "
                                   "pass it as clsim.Image(..., access='write_only')")
        _check_family(call, img, suffix, name)
        _coord_rule(call, img, types[1], name, False)
        if types[2] != vec:
            raise node_error(call, f"{name}: the value must be a {vec}, got "
                                   f"{ct.short(types[2])}")
        return None

    return rule


def _base(gen, call) -> tuple[str, str, ct.ImageT]:
    """(name, code of its pixel rows, type) of the image argument: a kernel parameter, or a
    helper function's parameter (the caller's rows, passed as they are)."""
    node = call.args[0]
    return node.id, f"v_{node.id}", node.ctype


def _components(gen, node, img) -> list[str]:
    """Codes of the coordinate's components (x, then y for an image2d)."""
    if img.kind != "image2d":
        return [gen.expr(node)]
    c = gen.fresh("_imc")
    gen.pre(f"{c} = {gen.expr(node)}")
    return [f"{c}[0]", f"{c}[1]"]


def _sizes(gen, base, img) -> list[str]:
    """Codes of the image's width (and height): what normalised coordinates scale by."""
    width = f"np.int64({base}.shape[1] // {gen.const(im.ORDERS[img.order], 'int64')})"
    return [width, f"np.int64({base}.shape[0])"]


def _placing(gen, sampler: int | None, helper: str):
    """How a float component becomes pixel positions: ``place(code, size)``."""
    mode = gen.const(0 if sampler is None else sampler & im.ADDRESS_MASK, "int64")
    normalized = gen.const(0 if sampler is None else sampler & im.NORMALIZED_MASK, "int64")
    return lambda code, size: f"{gen.helper(helper)}({code}, {size}, {mode}, {normalized})"


def _address(gen, call, name, base, img, coord, sampler, code: int, kind: str):
    """Pre-lines mapping the coordinate to (x, y, border) and telling the instruments; returns
    the three locals and the channel count."""
    place = _placing(gen, sampler, "_imnear")
    t = ct.elem(coord.ctype)
    xy = [place(c, size) if ct.is_float(t) else f"np.int64({c})"
          for c, size in zip(_components(gen, coord, img), _sizes(gen, base, img), strict=False)]
    y = xy[1] if len(xy) > 1 else gen.const(0, "int64")
    return _address_xy(gen, call, name, base, img, xy[0], y, _mode(sampler), code, kind)


def _mode(sampler: int | None) -> int:
    """``_imaddr``'s mode for a read through ``sampler`` (repeats are placed in range)."""
    mode = _NONE if sampler is None else sampler & im.ADDRESS_MASK
    return _EDGE if mode in (_REPEAT, _MIRROR) else mode


def _address_xy(gen, call, name, base, img, x: str, y: str, mode: int, code: int, kind: str):
    """``_address`` of the pixel at the int64 codes ``x``, ``y``."""
    nch = im.ORDERS[img.order]
    storage = im.CHANNEL_TYPES[img.channel_type].storage
    site = gen.module.site(call, name, kind, "image", storage, width=nch)
    ax, ay, ab = gen.fresh("_imx"), gen.fresh("_imy"), gen.fresh("_imb")
    checked = gen.bounds_checks and code != 0
    k = gen.const(nch, "int64")
    # In range, the pixel itself, tested inline; only a coordinate outside calls _imaddr (a
    # call per read made a float4 read 6x slower than vload4 with bounds checks on).
    stop = ""
    if checked and mode == _NONE:
        gen.checked()
        stop = f"\n    if _err[{rec.CODE}] != 0:\n        {gen.err_return}"
    gen.pre(f"{ax} = {x}\n{ay} = {y}\n{ab} = {gen.const(0, 'int64')}\n"
            f"if {ax} < 0 or {ax} * {k} >= {base}.shape[1] or {ay} < 0 or "
            f"{ay} >= {base}.shape[0]:\n"
            f"    {ax}, {ay}, {ab} = {gen.helper('_imaddr')}({base}, {k}, {ax}, {ay}, "
            f"{gen.const(mode, 'int64')}, {gen.const(code if checked else 0, 'int64')}, _err, "
            f"{gen.const(site, 'int64')}, {gen.lid_code()}){stop}")
    flat = f"{ay} * {base}.shape[1] + {ax} * {gen.const(nch, 'int64')}"
    arrt = ct.ArrayT(storage, 1, "image")
    wrapped = gen.module.access(gen, site, name, arrt, [flat], kind)[0]
    if wrapped != flat:  # an instrument records the pixel (never the border colour)
        gen.pre(f"if {ab} == 0:\n    {gen.fresh('_imt')} = {wrapped}")
    return ax, ay, ab, nch


def _read_lower(suffix: str):
    def lower(gen, call):
        name, base, img = _base(gen, call)
        sampler = _sampler_value(call)
        if sampler is not None and _linear(sampler):
            return _read_linear(gen, call, name, base, img, suffix, sampler)
        ax, ay, ab, nch = _address(gen, call, name, base, img, call.args[-1], sampler,
                                   rec.OOB_IMAGE_READ, "load")
        reader = gen.helper(f"_imr{suffix}_{img.channel_type}")
        return f"{reader}({base}, {ax}, {ay}, {gen.const(nch, 'int64')}, {ab})"

    return lower


def _read_linear(gen, call, name, base, img, suffix: str, sampler: int) -> str:
    """CLK_FILTER_LINEAR: the spec's taps around the coordinate (``_imlinpos``: i0, i1 and
    the fraction per dimension; each tap through the addressing mode, each an access),
    blended by the fractions."""
    place = _placing(gen, sampler, "_imlinpos")
    spots, fracs = [], []
    for comp, size in zip(_components(gen, call.args[-1], img), _sizes(gen, base, img),
                          strict=False):
        spot = gen.fresh("_imq")
        gen.pre(f"{spot} = {place(comp, size)}")
        spots.append(spot)
        fracs.append(f"{spot}[2]")
    zero = gen.const(0, "int64")
    taps = []
    dims = len(spots)
    offsets = ((0, 0), (1, 0)) if dims == 1 else ((0, 0), (1, 0), (0, 1), (1, 1))
    reader = gen.helper(f"_imrf_{img.channel_type}")
    for dx, dy in offsets:
        x = f"{spots[0]}[{dx}]"
        y = zero if dims == 1 else f"{spots[1]}[{dy}]"
        ax, ay, ab, nch = _address_xy(gen, call, name, base, img, x, y, _mode(sampler),
                                      rec.OOB_IMAGE_READ, "load")
        tap = gen.fresh("_imp")
        gen.pre(f"{tap} = {reader}({base}, {ax}, {ay}, {gen.const(nch, 'int64')}, {ab})")
        taps.append(tap)
    blend = (f"{gen.helper('_imlin1')}({taps[0]}, {taps[1]}, {fracs[0]})" if dims == 1 else
             f"{gen.helper('_imlin2')}({', '.join(taps)}, {fracs[0]}, {fracs[1]})")
    if suffix == "f":
        return blend
    value = gen.fresh("_iml")
    gen.pre(f"{value} = {blend}")
    return "(" + ", ".join(f"{gen.helper('_rh')}({value}[{k}])" for k in range(4)) + ",)"


def _write_lower(suffix: str):
    def lower(gen, call):
        name, base, img = _base(gen, call)
        value = gen.fresh("_imv")
        gen.pre(f"{value} = {gen.expr(call.args[2])}")
        mode = _NONE if gen.bounds_checks else _DROP
        xy = [f"np.int64({c})" for c in _components(gen, call.args[1], img)]
        y = xy[1] if len(xy) > 1 else gen.const(0, "int64")
        ax, ay, ab, nch = _address_xy(gen, call, name, base, img, xy[0], y, mode,
                                      rec.OOB_IMAGE_WRITE, "store")
        comps = ", ".join(f"{value}[{k}]" for k in range(4))
        writer = gen.helper(f"_imw{suffix}_{img.channel_type}")
        gen.pre(f"{writer}({base}, {ax}, {ay}, {gen.const(nch, 'int64')}, {ab}, {comps})")
        return None

    return lower


def _size_rule(what: str):
    def rule(types, call):
        img = _image_of(call, types, f"get_image_{what}")
        if len(types) != 1:
            raise node_error(call, f"get_image_{what}(image) takes one image")
        if what == "height" and img.kind != "image2d":
            raise node_error(call, f"get_image_height: '{call.args[0].id}' is an {img.kind} "
                                   "(1-D images have no height)")
        return "int32"

    return rule


def _size_lower(what: str):
    def lower(gen, call):
        _name, base, img = _base(gen, call)
        if what == "height":
            return f"np.int32({base}.shape[0])"
        return f"np.int32({base}.shape[1] // {gen.const(im.ORDERS[img.order], 'int64')})"

    return lower


_COMMON = (ih.ADDR, ih.NEAREST, ih.LINEAR, ih.UNORM_W, ih.LIN1, ih.LIN2, *F2H_DEPS)
_TYPES = {"f": "float, half, unorm images", "h": "float, half, unorm images",
          "i": "signed integer images", "ui": "unsigned integer images"}

ENTRIES = [
    *(Builtin(f"read_image{s}", FAMILY, _read_rule(s), lower=_read_lower(s), varying=True,
              access="load", helpers=(*_COMMON, *ih.READERS),
              c=f"read_image{s}(img, [sampler,] coord)",
              py=f"read_image{s}(img, coord) / read_image{s}(img, SMP, coord)",
              types=_TYPES[s],
              note=f"a {ct.VecT(SUFFIXES[s][1], 4)}; coord int (1-D) or int2 (image2d), "
                   "float with a sampler") for s in SUFFIXES),
    *(Builtin(f"write_image{s}", FAMILY, _write_rule(s), lower=_write_lower(s), varying=True,
              access="store", effects=True, helpers=(*_COMMON, *ih.WRITERS),
              c=f"write_image{s}(img, coord, value)", types=_TYPES[s],
              note=f"value a {ct.VecT(SUFFIXES[s][1], 4)}; write_only images; a statement")
      for s in SUFFIXES),
    *(Builtin(f"get_image_{w}", FAMILY, _size_rule(w), lower=_size_lower(w),
              c=f"get_image_{w}(img)", types="image2d" if w == "height" else "any image",
              note="int, in pixels") for w in ("width", "height")),
]
