"""Hypothesis strategies for kernel inputs and launch shapes, for the verifier and for users.

Everything here is a composable strategy (``@st.composite`` or built from ``hypothesis.strategies``)
meant to find the inputs where the simulator and a device disagree:

- ``float_arrays`` / ``int_arrays``: arrays mixing ordinary values with edge values (signed
  zeros, ±1, the largest finite, the smallest normal, subnormals, ±inf, NaN, rounding ties,
  type limits), plus all-equal arrays, plus dense seeded random arrays for large shapes.
- ``problem_sizes``, ``local_sizes``, ``problem_launches``, ``ndrange``, ``subgroup_sizes``,
  ``row_shapes``: sizes that provoke tails (``n`` not a multiple of the local size), one-element
  and one-row problems, odd sub-group sizes.

It does not run kernels or know about devices: a size a device rejects (a sub-group size it
lacks, a local size over its maximum) must be filtered by the caller with ``assume``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

ShapeLike = int | Sequence[int] | st.SearchStrategy

# Arrays up to this size get one freshly drawn value per element (best shrinking); larger ones
# use Hypothesis' sparse fill, since drawing thousands of elements one by one overruns its buffer.
DENSE_LIMIT = 64

# Sizes around powers of two and warp/sub-group widths, where tails and off-by-ones live.
INTERESTING_SIZES = tuple(
    sorted({1, 2, 3, 7, 1000} | {(1 << k) + d for k in range(3, 13) for d in (-1, 0, 1)})
)
SUBGROUP_SIZES = (1, 4, 8, 16, 32, 64)
UNUSUAL_SUBGROUP_SIZES = (7,)


def float_edge_values(
    dtype: Any = np.float32,
    allow_nan: bool = True,
    allow_inf: bool = True,
    allow_subnormal: bool = True,
) -> list[float]:
    """The edge values of a float dtype, exactly representable in it (as Python floats)."""
    dt = np.dtype(dtype)
    fi = np.finfo(dt)
    one = dt.type(1)
    tiny = float(fi.smallest_normal)
    values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        float(fi.max),
        -float(fi.max),
        tiny,
        -tiny,
        float(fi.eps),
        float(one + fi.eps),
        float(np.nextafter(one, dt.type(0))),
        # Ties: rint/round/conversion-to-int must choose; the last has spacing 0.5.
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        float(2**fi.nmant - 0.5),
    ]
    if allow_subnormal:
        smallest = float(fi.smallest_subnormal)
        values += [smallest, -smallest, float(np.nextafter(dt.type(tiny), dt.type(0)))]
    if allow_inf:
        values += [np.inf, -np.inf]
    if allow_nan:
        values.append(np.nan)
    return values


def int_edge_values(
    dtype: Any = np.int32, min_value: int | None = None, max_value: int | None = None
) -> list[int]:
    """Type limits, 0, ±1 and byte/short boundaries that lie in [min_value, max_value]."""
    info = np.iinfo(np.dtype(dtype))
    lo = info.min if min_value is None else max(min_value, info.min)
    hi = info.max if max_value is None else min(max_value, info.max)
    candidates = [
        0,
        1,
        -1,
        2,
        info.min,
        info.min + 1,
        info.max,
        info.max - 1,
        127,
        128,
        -128,
        -129,
        255,
        256,
        32767,
        32768,
        -32768,
        65535,
        65536,
        lo,
        hi,
    ]
    return sorted({v for v in candidates if lo <= v <= hi})


@st.composite
def _shape(draw: st.DrawFn, shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _drawn_array(
    draw: st.DrawFn, dtype: np.dtype, shape: tuple[int, ...], elements: st.SearchStrategy
) -> np.ndarray:
    size = int(np.prod(shape))
    fill = st.nothing() if size <= DENSE_LIMIT else elements
    return draw(hnp.arrays(dtype, shape, elements=elements, fill=fill))


def _float_elements(
    dt: np.dtype, edges: list[float], allow_nan: bool, allow_inf: bool, allow_subnormal: bool
) -> st.SearchStrategy:
    width = dt.itemsize * 8
    ordinary = [
        st.floats(-100, 100, width=width, allow_subnormal=allow_subnormal),
        st.floats(
            width=width,
            allow_nan=allow_nan,
            allow_infinity=allow_inf,
            allow_subnormal=allow_subnormal,
        ),
    ]
    # sampled_from first: shrinking moves towards the edge values, which read best in reports.
    return st.one_of([st.sampled_from(edges), *ordinary] if edges else ordinary)


@st.composite
def float_arrays(
    draw: st.DrawFn,
    shape_or_strategy: ShapeLike,
    dtype: Any = np.float32,
    edge_values: bool = True,
    allow_nan: bool = True,
    allow_inf: bool = True,
    allow_subnormal: bool = True,
) -> np.ndarray:
    """Float arrays where roughly a third of the elements come from ``float_edge_values``.

    Three modes, drawn per example: element by element (shrinks well), every element equal
    (exposes reductions and max/argmax tie-breaking), and a dense seeded mix of normal values
    and edge values (realistic large arrays). ``allow_*`` remove NaN, infinities or subnormals
    from every mode.
    """
    dt = np.dtype(dtype)
    shape = draw(_shape(shape_or_strategy))
    edges = float_edge_values(dt, allow_nan, allow_inf, allow_subnormal) if edge_values else []
    elements = _float_elements(dt, edges, allow_nan, allow_inf, allow_subnormal)
    mode = draw(st.sampled_from(("drawn", "all_equal", "seeded")))
    if mode == "drawn":
        return _drawn_array(draw, dt, shape, elements)
    if mode == "all_equal":
        return np.full(shape, draw(elements), dtype=dt)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from((1.0, 1e-3, 1e3)))
    out = (rng.standard_normal(shape) * scale).astype(dt)
    if not allow_subnormal:
        # Flush subnormals to zero: the caller said the device may not keep them.
        out[np.abs(out) < np.finfo(dt).smallest_normal] = 0
    if edges:
        density = draw(st.sampled_from((0.3, 0.05)))
        mask = rng.random(shape) < density
        out[mask] = rng.choice(np.array(edges, dtype=dt), size=int(mask.sum()))
    return out


@st.composite
def int_arrays(
    draw: st.DrawFn,
    shape_or_strategy: ShapeLike,
    dtype: Any = np.int32,
    edge_values: bool = True,
    min_value: int | None = None,
    max_value: int | None = None,
) -> np.ndarray:
    """Integer arrays in [min_value, max_value] (default: the dtype's range) mixing ordinary
    values with ``int_edge_values``; also all-equal arrays and dense seeded random arrays."""
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    lo = info.min if min_value is None else max(min_value, info.min)
    hi = info.max if max_value is None else min(max_value, info.max)
    shape = draw(_shape(shape_or_strategy))
    ordinary = st.integers(lo, hi)
    elements = st.one_of(st.sampled_from(int_edge_values(dt, lo, hi)), ordinary)
    if not edge_values:
        elements = ordinary
    mode = draw(st.sampled_from(("drawn", "all_equal", "seeded")))
    if mode == "drawn":
        return _drawn_array(draw, dt, shape, elements)
    if mode == "all_equal":
        return np.full(shape, draw(elements), dtype=dt)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # endpoint=True with Python ints: the full uint64/int64 range is allowed.
    return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)


def problem_sizes(max_size: int = 4096, min_size: int = 1) -> st.SearchStrategy[int]:
    """A problem size ``n``: often 1 or a size next to a power of two, else any in range."""
    special = [s for s in INTERESTING_SIZES if min_size <= s <= max_size] or [min_size]
    return st.one_of(st.sampled_from(special), st.integers(min_size, max_size))


def local_sizes(max_local: int = 256, powers_of_two: bool = False) -> st.SearchStrategy[int]:
    """A 1-D work-group size: a power of two up to ``max_local``, or (unless ``powers_of_two``)
    any size, since devices accept odd local sizes that divide the global size."""
    powers = [1 << k for k in range(max_local.bit_length()) if 1 << k <= max_local]
    if powers_of_two:
        return st.sampled_from(powers)
    return st.one_of(st.sampled_from(powers), st.integers(1, max_local))


def round_up(n: int, local: int) -> int:
    """The smallest multiple of ``local`` that is at least ``n`` (and at least ``local``)."""
    return max(1, -(-n // local)) * local


@st.composite
def problem_launches(
    draw: st.DrawFn,
    max_size: int = 4096,
    max_local: int = 256,
    nonuniform: bool = False,
) -> tuple[int, tuple[int], tuple[int]]:
    """``(n, global_size, local_size)`` for a 1-D kernel that guards ``if (gid < n)``.

    The global size is ``n`` rounded up to the local size, so whenever ``n`` is not a multiple
    of it the last group has a tail of idle work-items. With ``nonuniform`` the global size is
    sometimes ``n`` itself, which only OpenCL 2.0+ devices accept (non-uniform work-groups).
    """
    n = draw(problem_sizes(max_size))
    local = draw(local_sizes(max_local))
    glob = n if nonuniform and draw(st.booleans()) else round_up(n, local)
    return n, (glob,), (local,)


@st.composite
def ndrange(
    draw: st.DrawFn,
    dims: int | tuple[int, int] = (1, 3),
    max_local: int = 256,
    max_groups: int = 8,
    allow_tail: bool = True,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(global_size, local_size)`` with 1..3 dimensions and at most ``max_local`` work-items
    per group and ``max_groups`` groups per dimension.

    ``allow_tail``: the global size may be a non-multiple of the local size in any dimension,
    leaving a smaller last group (OpenCL 2.0+ non-uniform work-groups; OpenCL 1.x devices reject
    it with CL_INVALID_WORK_GROUP_SIZE). Without it every global size is a multiple.
    """
    lo, hi = (dims, dims) if isinstance(dims, int) else dims
    ndim = draw(st.integers(lo, hi))
    local: list[int] = []
    glob: list[int] = []
    for _ in range(ndim):
        room = max(1, max_local // int(np.prod(local, dtype=np.int64)))
        size = draw(local_sizes(room))
        groups = draw(st.integers(1, max_groups))
        tail = draw(st.integers(1, size)) if allow_tail and draw(st.booleans()) else size
        local.append(size)
        glob.append((groups - 1) * size + tail)
    return tuple(glob), tuple(local)


def subgroup_sizes(max_size: int = 64, include_unusual: bool = True) -> st.SearchStrategy[int]:
    """Sub-group sizes as devices report them (1, 4, 8, 16, 32, 64) up to ``max_size``, plus,
    with ``include_unusual``, 7: not a power of two, so lane arithmetic that assumes one breaks."""
    sizes = [s for s in SUBGROUP_SIZES if s <= max_size]
    if include_unusual:
        sizes += [s for s in UNUSUAL_SUBGROUP_SIZES if s <= max_size]
    return st.sampled_from(sorted(sizes))


def row_shapes(max_rows: int = 64, max_cols: int = 4096) -> st.SearchStrategy[tuple[int, int]]:
    """``(rows, cols)`` for row-wise kernels (softmax, matrix-vector), including the one-element
    ``(1, 1)``, one-row ``(1, cols)`` and one-column ``(rows, 1)`` cases."""
    rows, cols = problem_sizes(max_rows), problem_sizes(max_cols)
    return st.one_of(
        st.just((1, 1)),
        st.tuples(st.just(1), cols),
        st.tuples(rows, st.just(1)),
        st.tuples(rows, cols),
    )
