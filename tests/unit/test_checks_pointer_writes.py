"""The race checker tracks buffers written through pointer expressions in builtins.

Contract: a buffer stored to only by a builtin whose pointer argument is an expression
(``vstore4(v, 0, out + k)``, ``async_work_group_copy(out + k, ...)``) is still tracked, so
overlapping writes from different work-items are reported.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, vload4, vstore4


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
