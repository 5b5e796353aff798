"""Out-parameters of helpers (issue 22): C's ``fill(&t)`` on a scalar or an array is a private
array passed to the helper (the caller's copy changes); a helper assigning its vector
parameter would change only its own copy (C passes vectors by value), which a twin of
``float4 *v`` must not do silently: it is a compile error."""

import numpy as np
import pytest

import clsim
from clsim import float4, kernel, private_array


@clsim.func
def set_x(v):
    v.x = 1.0


@kernel
def vector_out(y):
    t = float4(0.0)
    set_x(t)
    y[0] = t.x


@clsim.func
def set_first(a, value):
    a[0] = value


@clsim.func
def with_x(v):
    return float4(1.0, v.y, v.z, v.w)


@kernel
def array_out(y):
    t = private_array(1, np.float32)  # C: float t; set_first(&t, 5.0f);
    set_first(t, np.float32(5))
    v = with_x(float4(0.0, 2.0, 0.0, 0.0))  # C's float4 *v out-parameter, as a return
    y[0] = t[0] + v.x + v.y


def test_a_helper_assigning_its_vector_parameter_is_refused():
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(vector_out, (1,), (1,), (np.zeros(1, np.float32),))
    message = str(info.value)
    assert "set_x() assigns its vector parameter 'v'" in message
    assert "test_helper_out_params.py:" in message and "v.x = 1.0" in message


@pytest.mark.parametrize("jit", [False, True])
def test_private_arrays_are_out_parameters(jit):
    y = np.zeros(1, np.float32)
    clsim.run(array_out, (1,), (1,), (y,), jit=jit)
    assert y[0] == 8.0
