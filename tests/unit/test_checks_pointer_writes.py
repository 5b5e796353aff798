"""The race checker tracks buffers written through pointer expressions.

Contract: a buffer stored to only through a pointer — a builtin whose pointer argument is an
expression (``vstore4(v, 0, out + k)``, ``async_work_group_copy(out + k, ...)``), a pointer
local (``p = out + 1; p[0] = v``, also ``q = p + 1`` and views), or a helper given ``out + k``
— is still tracked, so overlapping writes from different work-items are reported; a pointer
each work-item moves to its own element is no race.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, view, vload4, vstore4


@kernel
def overlapping_vstores(x, out):
    g = get_global_id(0)
    v = vload4(0, x + g)
    vstore4(v, 0, out + (g // 2) * 2)


def test_vstore_through_pointer_expression_is_tracked():
    with pytest.raises(clsim.DataRaceError, match="out"):
        clsim.run(overlapping_vstores, (64,), (64,),
                  (np.ones(300, np.float32), np.zeros(300, np.float32)), checks="races",
                  jit=False)


@kernel
def store_through_pointer_local(out):
    p = out + 1
    p[0] = get_global_id(0)


@kernel
def store_through_pointer_chain(out):
    q = out + 1
    p = q + 1
    p[0] = get_global_id(0)


@kernel
def store_through_view(out):
    p = view(out, np.int32, 4)
    p[0] = get_global_id(0)


@clsim.func
def put(q, v):
    q[0] = v


@kernel
def store_through_helper_pointer(out):
    put(out + 2, get_global_id(0))


@kernel
def own_element_through_pointer(out):
    p = out + get_global_id(0)
    p[0] = get_global_id(0)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("kern", [store_through_pointer_local, store_through_pointer_chain,
                                  store_through_view, store_through_helper_pointer],
                         ids=["local", "chain", "view", "helper"])
def test_every_work_item_storing_one_element_through_a_pointer_is_a_race(kern, jit):
    with pytest.raises(clsim.DataRaceError, match=r"global out\[[12]\]"):
        clsim.run(kern, (64,), (32,), (np.zeros(64, np.int32),), checks="races", jit=jit)


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_a_pointer_to_the_work_items_own_element_is_no_race(jit):
    out = np.zeros(64, np.int32)
    clsim.run(own_element_through_pointer, (64,), (32,), (out,), checks="all", jit=jit)
    assert (out == np.arange(64)).all()
