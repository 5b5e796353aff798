"""A private array with an initialiser (``private_array(..., fill=...)``, C's
``float s[4] = {0.f}``) is written when it is declared: ``checks="all"`` must not report its
first read as uninitialised, while a private array without one still is."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, private_array
from clsim.errors import UninitializedReadError


@clsim.func
def sum_pair(acc, y, i):
    y[i] = acc[0] + acc[1]


@kernel
def accumulate_filled(y):
    i = get_global_id(0)
    acc = private_array(2, np.float32, fill=0.0)
    for r in range(2):
        acc[r] += 1.0
    sum_pair(acc, y, i)


@kernel
def read_listed_values(y):
    i = get_global_id(0)
    s = private_array(4, np.float32, fill=(1.0, 2.0))
    grid = private_array((2, 3), np.float32, fill=0.5)
    y[i] = s[0] + s[1] + s[3] + grid[1, 2]


@kernel
def read_unfilled(y):
    i = get_global_id(0)
    acc = private_array(2, np.float32)
    acc[0] = 1.0
    y[i] = acc[1]


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize(("kern", "want"), [(accumulate_filled, 2.0),
                                            (read_listed_values, 3.5)])
def test_filled_private_arrays_are_initialised_for_the_checks(kern, want, jit):
    y = np.zeros(8, np.float32)
    clsim.run(kern, (8,), (4,), (y,), checks="all", jit=jit)
    assert (y == want).all()


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_an_unfilled_element_is_still_an_uninitialised_read(jit):
    with pytest.raises(UninitializedReadError, match=r"acc\[1\]"):
        clsim.run(read_unfilled, (8,), (4,), (np.zeros(8, np.float32),), checks="all",
                  jit=jit)
