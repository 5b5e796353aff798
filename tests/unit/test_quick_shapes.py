"""The ``ci`` and ``dev`` profiles' drawn shapes (``verify.testing.quick_shape_budget``): small
enough that the simulator runs them as plain Python, as large as before for float kernels."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from clsim.spec import all_specs
from verify.fuzz import MAX_ELEMENTS, spec_shapes
from verify.jit_choice import PYTHON_LIMIT
from verify.testing import (QUICK_BUFFER_ELEMENTS, buffer_elements, quick_shape_budget,
                            quick_shape_caps, shrunk_shape)

SPECS = all_specs()


def test_shrunk_shape_divides_the_outer_keys_first():
    assert shrunk_shape({"rows": 4096, "blocks": 128}, 1 << 12) == {"rows": 32, "blocks": 128}
    assert shrunk_shape({"rows": 8, "cols": 4096}, 1 << 10) == {"rows": 1, "cols": 1024}
    assert shrunk_shape({"n": 100}, 1000) == {"n": 100}


@pytest.mark.parametrize("name", ["dequantize_q4_k", "dequantize_q8_0", "quantize_q8_0"])
def test_a_quantized_budget_keeps_the_launch_far_under_the_plain_python_limit(name):
    """The whole budget spent on the last (contiguous) key: about QUICK_BUFFER_ELEMENTS
    buffer elements, a small share of PYTHON_LIMIT, where the full draw went far past it."""
    spec = SPECS[name]
    budget = quick_shape_budget(spec)
    assert budget < MAX_ELEMENTS
    shape = shrunk_shape(spec.default_shape, budget)
    assert math.prod(shape.values()) <= budget
    elements = buffer_elements(spec, shape)
    assert elements <= 1.5 * QUICK_BUFFER_ELEMENTS < PYTHON_LIMIT
    full = shrunk_shape(spec.default_shape, MAX_ELEMENTS)
    assert buffer_elements(spec, full) > PYTHON_LIMIT


@pytest.mark.parametrize("name", ["argmax", "gemv", "softmax"])
def test_float_kernels_still_draw_rows_past_4096(name):
    """One or two buffer elements per shape unit: the budget keeps sizes next to 4096."""
    assert quick_shape_budget(SPECS[name]) >= 4097


@pytest.mark.parametrize("name", ["matmul_regblock", "quantize_q4_k"])
def test_quick_caps_bound_the_keys_that_set_each_work_items_loops(name):
    """matmul's K (each work-item loops over it) and quantize_q4_k's blocks (a custom
    strategy, about 10**5 operations each) stay within QUICK_SHAPE_CAPS in every draw, while
    the other keys are drawn as before."""
    spec = SPECS[name]
    caps = quick_shape_caps(spec)
    assert caps and all(caps[k] < spec.default_shape[k] for k in caps)
    seen: list[dict[str, int]] = []

    @settings(max_examples=60, database=None, derandomize=True)
    @given(spec_shapes(spec, quick_shape_budget(spec), caps))
    def draw(shape):
        assert shape.keys() == spec.default_shape.keys()
        assert all(shape[k] <= cap for k, cap in caps.items()), shape
        seen.append(shape)

    draw()
    assert all(max(s[k] for s in seen) > caps[k] // 2 for k in caps)  # bounded, not pinned
    others = [k for k in spec.default_shape if k not in caps]
    assert not others or max(s[k] for s in seen for k in others) > 16


def test_quick_caps_are_empty_where_the_budget_bounds_the_work():
    assert quick_shape_caps(SPECS["softmax"]) == {}
    assert quick_shape_caps(SPECS["dequantize_q4_k"]) == {}
