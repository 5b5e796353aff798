"""The user's own module that docs/verifying.md's examples import (``from my_kernels import
saxpy``); tests/unit/test_docs_and_cache.py runs those examples in a folder holding this file
and saxpy.cl, as a user's project would."""

import clsim
from clsim import get_global_id


@clsim.kernel
def saxpy(a, x, y, n):
    i = get_global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]
