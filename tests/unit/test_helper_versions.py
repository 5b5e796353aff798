"""One compiled version of a shared helper per argument types, not per constant passed.

Numba types a constant argument as its literal and compiles the callee once per literal; the
shared helpers (clsim.runtime.jit_helpers) and the traffic step rules are compiled for the
plain types instead (clsim.runtime.plain_calls), unless the function needs the literal to type.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types

from clsim.runtime import jit_helpers
from clsim.runtime.plain_calls import plain_calls


def _literal_free(dispatcher) -> bool:
    return not any(isinstance(arg, types.Literal)
                   for sig in dispatcher.nopython_signatures for arg in sig.args)


def test_constants_share_one_version_of_a_helper():
    (idiv,) = jit_helpers.use("_idiv_int64")

    @njit
    def by_three_and_five(a, err):
        return idiv(a, 3, err, 7, 0) + idiv(a, 5, err, 9, 1)

    err = np.zeros(16, np.int64)
    assert by_three_and_five(np.int64(30), err) == 16
    assert _literal_free(idiv), idiv.nopython_signatures
    plain = [sig for sig in idiv.nopython_signatures
             if sig.args[1:] == (types.int64, types.Array(types.int64, 1, "C"), types.int64,
                                 types.int64)]
    assert len(plain) == 1, idiv.nopython_signatures


def test_a_helper_that_needs_the_literal_keeps_it():
    """Indexing a tuple of mixed types needs the index as a literal: typed with plain int64 it
    fails, so the helper is compiled for the literal, as Numba does."""

    def _pick(values, k):
        return values[k]

    pick = plain_calls(njit(_pick))

    @njit
    def first_and_second():
        values = (np.int32(3), np.float64(0.5))
        return pick(values, 0), pick(values, 1)

    assert first_and_second() == (3, 0.5)
    assert not _literal_free(pick)
