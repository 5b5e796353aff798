"""vector_add: c = a + b, one work-item per element, guarded tail."""

import numpy as np

from clsim import get_global_id, kernel
from clsim.spec import EXACT, KernelSpec, Launch, register


@kernel
def vector_add(a, b, c, n):
    i = get_global_id(0)
    if i < n:
        c[i] = a[i] + b[i]


def make_inputs(rng, shape):
    n = shape["n"]
    return {
        "a": rng.standard_normal(n, dtype=np.float32),
        "b": rng.standard_normal(n, dtype=np.float32),
        "c": np.zeros(n, np.float32),
        "n": np.int32(n),
    }


def launch(inputs, shape, local_size=None):
    local = local_size or (64,)
    n = int(inputs["n"])
    groups = max(1, -(-n // local[0]))
    return Launch((groups * local[0],), local, (inputs["a"], inputs["b"], inputs["c"], inputs["n"]))


def reference(inputs):
    return {"c": inputs["a"] + inputs["b"]}


SPEC = register(KernelSpec(
    name="vector_add",
    description="c[i] = a[i] + b[i], one work-item per element, tail guarded by 'if i < n'",
    kernel=vector_add,
    cl_file="vector_add.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    outputs={"c": EXACT},
    default_shape={"n": 1 << 20},
))
