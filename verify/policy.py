"""Compare an output buffer of the simulator with the same buffer from a device, under a Policy.

By convention ``expected`` is the simulator's buffer and ``actual`` the device's; messages name
the sides (``sides``, default "simulator" and "device"; the runner passes "device pocl"), never
"expected"/"actual", since either side may be the wrong one. Three policies exist
(``clsim.spec.Policy``):

- ``exact``: bitwise on the raw bytes, except that NaN equals NaN whatever its payload or sign
  bit (devices are free to quieten or rewrite NaN payloads; OpenCL does not specify them).
  ``-0.0`` vs ``+0.0`` IS a difference.
- ``ulp(N)``: floats agree when their ULP distance is at most N; ``-0.0`` and ``+0.0`` are 0 ULP
  apart; NaN equals NaN; NaN vs a number is a difference. On integer, bool or other non-float
  buffers a ULP policy means exact.
- ``magnitude(k, scale)`` (``MagnitudePolicy``): floats agree when
  ``|expected - actual| <= k * eps * scale(inputs)`` element by element, where ``scale`` returns
  the sum of the magnitudes of the terms each output sums (e.g. ``|A| @ |x|`` for ``A @ x``)
  and ``eps`` is the output dtype's machine epsilon. For sums that cancel, where a ULP bound
  on a near-zero result is meaningless. Equal values (infinities included) and NaN vs NaN agree.

Mismatched shapes, dtypes or a missing buffer are reported as a ``Difference`` (with ``reason``
saying which), never raised, so the verifier always has something to show and save.

This module only compares and describes; it does not run kernels, pick policies, or save anything
(``verify/failures.py`` saves).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# magnitude lives beside EXACT and ulp so that a kernel library names it without importing
# the verifier (and Hypothesis); verify.policy.magnitude stays its documented spelling.
from clsim.spec import EXACT, MagnitudePolicy, Policy, magnitude, ulp  # noqa: F401

# The distance reported for NaN vs a number: larger than any real distance (float64 spans < 2**64).
NAN_DISTANCE = int(np.iinfo(np.uint64).max)

_FLOAT_KINDS = {2: np.int16, 4: np.int32, 8: np.int64}
SIDES = ("simulator", "device")


def _c(x: np.ndarray) -> np.ndarray:
    # Not np.ascontiguousarray: that turns 0-d arrays into 1-d ones.
    return np.array(x, order="C", copy=None)


def _native(x: np.ndarray) -> np.ndarray:
    # Bit views below reinterpret bytes in machine order, so big-endian data is swapped first.
    if x.dtype.kind in "biuf" and not x.dtype.isnative:
        return x.astype(x.dtype.newbyteorder("="))
    return x


def _is_ieee_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" and dtype.itemsize in _FLOAT_KINDS


def _ordered(x: np.ndarray) -> np.ndarray:
    """Map IEEE bit patterns to int64 so that adjacent floats are adjacent integers.

    Non-negative floats keep their bits; a negative float with magnitude bits ``m`` maps to
    ``-m``, so -0.0 and +0.0 both map to 0 and the order of the integers is the float order.
    """
    signed = _FLOAT_KINDS[x.dtype.itemsize]
    bits = x.view(signed).astype(np.int64)
    sign_min = np.int64(np.iinfo(signed).min)
    return np.where(bits < 0, sign_min - bits, bits)


_MAGNITUDE_TEXT = re.compile(r"^\s*magnitude\s*\(\s*([0-9]+(?:\.[0-9]*)?)\s*\)\s*$",
                             re.IGNORECASE)
_ULP_TEXT = re.compile(r"^\s*ulp\s*[(:=]?\s*([0-9]+(?:\.[0-9]*)?)\s*\)?\s*$", re.IGNORECASE)


def parse_policy(value: Policy | str) -> Policy:
    """A Policy from itself or from text: ``"exact"``, ``"ulp(3)"``, ``"ulp:2.5"``.

    Raises ValueError naming the accepted spellings for anything else.
    """
    if isinstance(value, Policy):
        return value
    text = str(value).strip()
    if text.lower() == "exact":
        return EXACT
    match = _ULP_TEXT.match(text)
    if match:
        return ulp(float(match.group(1)))
    match = _MAGNITUDE_TEXT.match(text)
    if match:  # from a saved failure: the scale function must be given again to compare
        return MagnitudePolicy("magnitude", float(match.group(1)))
    raise ValueError(f"unknown policy {value!r}. Use 'exact', 'ulp(N)', "
                     "verify.policy.magnitude(k, scale) or a clsim.spec.Policy.")


def ulp_distance(a: Any, b: Any) -> np.ndarray:
    """Element-wise distance in units in the last place between two float arrays of one dtype.

    Returns a ``uint64`` array (float64 distances can exceed 2**63). Adjacent floats are 1
    apart, -0.0 and +0.0 are 0 apart, FLT_MAX and +inf are 1 apart, NaN vs NaN is 0 and NaN vs
    a number is ``NAN_DISTANCE``. Raises ``TypeError`` for non-float or mixed dtypes.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or not _is_ieee_float(a.dtype):
        raise TypeError(
            f"ulp_distance: needs two float16/float32/float64 arrays of one dtype, got "
            f"{a.dtype} and {b.dtype}. Cast both to the buffer's dtype first."
        )
    a, b = np.broadcast_arrays(_native(a), _native(b))
    oa, ob = _ordered(_c(a)), _ordered(_c(b))
    # The true difference fits in 64 unsigned bits, so wrapping uint64 subtraction is exact.
    ua, ub = oa.view(np.uint64), ob.view(np.uint64)
    dist = np.where(oa >= ob, ua - ub, ub - ua)
    na, nb = np.isnan(a), np.isnan(b)
    dist = np.where(na & nb, np.uint64(0), dist)
    return np.where(na ^ nb, np.uint64(NAN_DISTANCE), dist).astype(np.uint64)


@dataclass(frozen=True)
class Difference:
    """One disagreement: where it is, both values (as numbers and as raw bits) and how far apart.

    ``reason`` is ``"value"`` for an element that differs, or ``"shape"``, ``"dtype"`` or
    ``"missing"`` for buffers that cannot be compared element by element (then ``flat_index``
    and ``index`` are None and ``detail`` says what is wrong). ``ulp`` is None for non-floats.
    """

    buffer: str
    flat_index: int | None
    index: tuple[int, ...] | None
    expected: Any
    actual: Any
    expected_hex: str
    actual_hex: str
    ulp: int | None
    reason: str = "value"
    detail: str = ""
    sides: tuple[str, str] = SIDES
    bound: MagnitudeBound | None = None

    def describe(self) -> str:
        if self.reason != "value":
            return f"buffer {self.buffer!r}: {self.detail}"
        where = f"index {self.index}" if self.index else "the scalar"
        width = max(len(side) for side in self.sides) + 1
        first, second = (f"{side + ':':<{width}}" for side in self.sides)
        lines = [
            f"buffer {self.buffer!r} differs at {where} (flat index {self.flat_index}):",
            f"  {first} {_show(self.expected)}  [{self.expected_hex}]",
            f"  {second} {_show(self.actual)}  [{self.actual_hex}]",
        ]
        if self.ulp is not None:
            shown = "NaN vs number" if self.ulp == NAN_DISTANCE else str(self.ulp)
            lines.append(f"  ULP distance: {shown}")
        if self.bound is not None:
            lines.append("  " + self.bound.describe())
        return "\n".join(lines)


@dataclass(frozen=True)
class MagnitudeBound:
    """A magnitude policy at one element: ``gap = |a - b|`` against ``bound = k * eps *
    scale``; ``margin = bound - gap`` (negative: over the bound)."""

    k: float
    eps: float
    scale: float
    gap: float

    @property
    def bound(self) -> float:
        return self.k * self.eps * self.scale

    @property
    def margin(self) -> float:
        return self.bound - self.gap

    def describe(self) -> str:
        times = (f", {self.gap / self.bound:.3g}x the bound" if self.bound > 0
                 and np.isfinite(self.gap) else "")
        return (f"bound k*eps*scale = {self.k:g} * {self.eps:.3g} * {self.scale:.6g} = "
                f"{self.bound:.6g}; |difference| {self.gap:.6g}; margin {self.margin:.6g}"
                + times)


@dataclass(frozen=True)
class Comparison:
    """The result of comparing one buffer. ``max_ulp`` is over all elements (floats only).

    A shape, dtype or missing-buffer mismatch counts as one difference (``n_different == 1``).
    """

    name: str
    equal: bool
    first_difference: Difference | None
    n_different: int
    max_ulp: int | None
    policy: Policy
    size: int = 0
    # magnitude policies: the element with the least margin (the closest to its bound)
    tightest: MagnitudeBound | None = None

    def describe(self) -> str:
        head = f"buffer {self.name!r} under {self.policy}: "
        first = self.first_difference
        if first is not None and first.reason != "value":
            return head + first.detail
        if self.equal:
            head += f"equal ({_count(self.size)}"
            head += f", max {self.max_ulp} ulp)" if self.max_ulp is not None else ")"
            if self.tightest is not None:
                head += "; least margin: " + self.tightest.describe()
            return head
        head += f"{self.n_different} of {_count(self.size)} differ"
        if self.max_ulp is not None:
            shown = "NaN vs number" if self.max_ulp == NAN_DISTANCE else str(self.max_ulp)
            head += f" (max ULP distance {shown})"
        assert first is not None
        return head + "\nfirst difference: " + first.describe()


@dataclass(frozen=True)
class OutputsComparison:
    """Per-buffer comparisons of one launch, in the order the policies name the buffers."""

    comparisons: Mapping[str, Comparison]

    @property
    def equal(self) -> bool:
        return all(c.equal for c in self.comparisons.values())

    @property
    def first_difference(self) -> Difference | None:
        for c in self.comparisons.values():
            if c.first_difference is not None:
                return c.first_difference
        return None

    @property
    def n_different(self) -> int:
        return sum(c.n_different for c in self.comparisons.values())

    def describe(self) -> str:
        return "\n".join(c.describe() for c in self.comparisons.values())


def _count(n: int) -> str:
    return f"{n} element" if n == 1 else f"{n} elements"


def _show(value: Any) -> str:
    # str() of a numpy float scalar is the shortest text that round-trips in its own precision.
    return str(value)


def _hex(arr: np.ndarray, flat: int) -> str:
    raw = arr.reshape(-1)[flat : flat + 1].tobytes()
    little = arr.dtype.byteorder == "<" or (arr.dtype.byteorder == "=" and np.little_endian)
    if arr.dtype.kind in "biuf" and little:
        raw = raw[::-1]  # show the most significant byte first, like the integer it encodes
    return "0x" + raw.hex()


def _mismatch(name: str, policy: Policy, reason: str, detail: str, size: int) -> Comparison:
    diff = Difference(name, None, None, None, None, "", "", None, reason, detail, SIDES)
    return Comparison(name, False, diff, 1, None, policy, size)


def _plain(arr: np.ndarray) -> np.ndarray:
    """View a vector-type buffer (structured dtype of one float, like pyopencl's float4) as floats
    with a trailing component axis, so NaN and ULP rules apply per component."""
    fields = arr.dtype.fields
    if not fields:
        return arr
    bases = {f[0] for f in fields.values()}
    if len(bases) != 1:
        return arr
    (base,) = bases
    if base.itemsize * len(fields) != arr.dtype.itemsize or not _is_ieee_float(base):
        return arr
    return _c(arr).reshape(-1).view(base).reshape((*arr.shape, len(fields)))


def _beyond_magnitude(exp: np.ndarray, act: np.ndarray, policy: Policy,
                      scale: Any) -> np.ndarray:
    eps = float(np.finfo(exp.dtype).eps)
    e, a = exp.astype(np.float64), act.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.where(e == a, 0.0, np.abs(e - a))  # inf == inf: no inf - inf = NaN
        bound = policy.ulps * eps * np.abs(np.broadcast_to(np.asarray(scale, np.float64),
                                                           exp.shape))
        return ~(gap <= bound) & ~(np.isnan(e) & np.isnan(a))


def _differs(
    exp: np.ndarray, act: np.ndarray, policy: Policy, scale: Any = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Boolean mask of differing elements and, for floats, the ULP distances."""
    exp, act = _native(exp), _native(act)
    if _is_ieee_float(exp.dtype):
        dist = ulp_distance(exp, act)
        both_nan = np.isnan(exp) & np.isnan(act)
        if policy.kind == "magnitude":
            return _beyond_magnitude(exp, act, policy, scale), dist
        if policy.kind == "exact":
            signed = _FLOAT_KINDS[exp.dtype.itemsize]
            mask = (exp.view(signed) != act.view(signed)) & ~both_nan
        else:
            mask = dist.astype(np.float64) > policy.ulps
        return mask, dist
    if exp.dtype.kind in "biu":
        return exp != act, None
    # Anything else (complex, bytes, mixed structs): compare raw bytes per element.
    itemsize = exp.dtype.itemsize
    eb = _c(exp).reshape(-1).view(np.uint8).reshape((*exp.shape, itemsize))
    ab = _c(act).reshape(-1).view(np.uint8).reshape((*act.shape, itemsize))
    return (eb != ab).any(axis=-1), None


def differing(expected: Any, actual: Any, policy: Policy, scale: Any = None) -> np.ndarray:
    """Boolean mask of the elements of two same-shaped float arrays that ``policy`` rejects
    (``scale``: the magnitude policy's sum of |terms|, broadcastable to the arrays)."""
    exp, act = np.asarray(expected), np.asarray(actual)
    if scale is not None:
        scale = np.broadcast_to(np.asarray(scale, np.float64), exp.shape)
    return _differs(exp, act, policy, scale)[0]


def _scale_for(name: str, policy: Policy, shape: tuple[int, ...], scale: Any) -> Any:
    if policy.kind != "magnitude":
        return None
    if scale is None:
        raise ValueError(
            f"compare {name!r}: {policy} needs the sum of |terms| per element. Give the policy "
            "a scale function: verify.policy.magnitude(k, scale=lambda inputs: ...).")
    try:
        return np.broadcast_to(np.asarray(scale, np.float64), shape)
    except ValueError as err:
        raise ValueError(f"compare {name!r}: the scale of {policy} has shape "
                         f"{np.shape(scale)}, the output {shape}. Return one magnitude per "
                         "output element.") from err


def compare(name: str, expected: Any, actual: Any, policy: Policy,
            scale: Any = None, sides: tuple[str, str] = SIDES) -> Comparison:
    """Compare one buffer (``expected``: simulator, ``actual``: device) under ``policy``;
    ``sides`` names the two in messages (e.g. ``("simulator", "device pocl")``).

    ``exact`` is bitwise on the raw bytes except that NaN equals NaN whatever the payload;
    ``ulp(N)`` allows N ULPs on floats and means exact on integers; ``magnitude(k, ...)``
    needs ``scale``, the sum of |terms| per element (broadcastable to the output). Differing
    shapes or dtypes give a non-equal ``Comparison`` whose difference explains the mismatch.
    """
    if policy.kind not in ("exact", "ulp", "magnitude"):
        raise ValueError(
            f"compare {name!r}: unknown policy kind {policy.kind!r}. Use EXACT, ulp(n) or "
            "magnitude(k, scale)."
        )
    exp, act = np.asarray(expected), np.asarray(actual)
    if exp.dtype != act.dtype:
        detail = (
            f"dtype differs: {sides[0]} {exp.dtype}, {sides[1]} {act.dtype}. "
            "Both sides must have one element type."
        )
        return _mismatch(name, policy, "dtype", detail, exp.size)
    if exp.shape != act.shape:
        detail = f"shape differs: {sides[0]} {exp.shape}, {sides[1]} {act.shape}."
        if exp.size == act.size:
            detail += " Same size: reshape the device buffer if only the layout differs."
        return _mismatch(name, policy, "shape", detail, exp.size)
    pe, pa = _plain(exp), _plain(act)
    scale = _scale_for(name, policy, pe.shape, scale) if _is_ieee_float(pe.dtype) else None
    mask, dist = _differs(pe, pa, policy, scale)
    max_ulp = None if dist is None else int(dist.max(initial=0))
    n_diff = int(np.count_nonzero(mask))
    if n_diff == 0:
        return Comparison(name, True, None, 0, max_ulp, policy, pe.size,
                          _tightest(pe, pa, policy, scale))
    flat = int(np.flatnonzero(mask.reshape(-1))[0])
    index = tuple(int(i) for i in np.unravel_index(flat, mask.shape)) if mask.ndim else ()
    fe, fa = pe.reshape(-1)[flat], pa.reshape(-1)[flat]
    d = int(dist.reshape(-1)[flat]) if dist is not None else None
    bound = _bound_at(pe, pa, policy, scale, flat) if scale is not None else None
    diff = Difference(name, flat, index, fe, fa, _hex(pe, flat), _hex(pa, flat), d,
                      sides=sides, bound=bound)
    return Comparison(name, False, diff, n_diff, max_ulp, policy, pe.size)


def _gaps(exp: np.ndarray, act: np.ndarray) -> np.ndarray:
    e, a = exp.astype(np.float64).reshape(-1), act.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where((e == a) | (np.isnan(e) & np.isnan(a)), 0.0, np.abs(e - a))


def _bound_at(exp: np.ndarray, act: np.ndarray, policy: Policy, scale: Any,
              flat: int) -> MagnitudeBound:
    eps = float(np.finfo(exp.dtype).eps)
    return MagnitudeBound(policy.ulps, eps, float(np.abs(np.asarray(scale).reshape(-1)[flat])),
                          float(_gaps(exp, act)[flat]))


def _tightest(exp: np.ndarray, act: np.ndarray, policy: Policy,
              scale: Any) -> MagnitudeBound | None:
    """Under a magnitude policy, the element closest to its bound (None for other policies
    or an empty buffer)."""
    if scale is None or exp.size == 0:
        return None
    eps = float(np.finfo(exp.dtype).eps)
    bounds = policy.ulps * eps * np.abs(np.asarray(scale, np.float64).reshape(-1))
    margins = bounds - _gaps(exp, act)
    return _bound_at(exp, act, policy, scale, int(np.nanargmin(margins))
                     if not np.isnan(margins).all() else 0)


def compare_outputs(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    policies: Mapping[str, Policy] | Policy,
    inputs: Mapping[str, Any] | None = None,
    sides: tuple[str, str] = SIDES,
) -> OutputsComparison:
    """Compare every output buffer named in ``policies`` (a mapping, or one Policy for every
    buffer of ``expected``). Buffers absent from either side are reported as ``missing``;
    buffers that no policy names (inputs) are not compared. ``inputs`` (the launch's
    arguments before it ran) feed the scale of ``magnitude`` policies."""
    if isinstance(policies, Policy):
        policies = dict.fromkeys(expected, policies)
    out: dict[str, Comparison] = {}
    for name, policy in policies.items():
        absent = [side for side, d in zip(sides, (expected, actual), strict=True)
                  if name not in d]
        if absent:
            detail = (f"missing from the {' and '.join(absent)} outputs. Return every output "
                      "buffer.")
            out[name] = _mismatch(name, policy, "missing", detail, 0)
        else:
            scale = policy.scale(inputs or {}) if isinstance(policy, MagnitudePolicy) \
                and policy.scale is not None else None
            out[name] = compare(name, expected[name], actual[name], policy, scale, sides)
    return OutputsComparison(out)
