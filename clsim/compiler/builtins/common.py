"""Common functions: step, smoothstep, degrees, radians (OpenCL C 6.15.4), scalars.

Computed in the argument type with each operation rounded as in C (float32 operations stay
float32), so the simulator gives the bits a device without contraction gives.
"""

from __future__ import annotations

import math

from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.math import _FCLAMP, _FMAX, _FMIN, FLOATS
from clsim.compiler.builtins.rules import call_helper, need_float
from clsim.compiler.helpers import helper

FAMILY = "math"
_T = ("float32", "float64")


def _per_type(stem: str, template: str, deps=()) -> tuple:
    return tuple(helper(f"_{stem}_{t}", template.format(t=t),
                        tuple(d.format(t=t) for d in deps)) for t in _T)


_STEP = _per_type("step", """
def _step_{t}(edge, x):
    return np.{t}(0.0) if x < edge else np.{t}(1.0)
""")
# libclc's smoothstep: t = clamp((x - e0) / (e1 - e0), 0, 1); t * t * (3 - 2 * t).
_SMOOTHSTEP = _per_type("smoothstep", """
def _smoothstep_{t}(e0, e1, x):
    t = _clamp_{t}(np.{t}(np.{t}(x - e0) / np.{t}(e1 - e0)), np.{t}(0.0), np.{t}(1.0))
    return np.{t}(np.{t}(t * t) * np.{t}(np.{t}(3.0) - np.{t}(np.{t}(2.0) * t)))
""", ("_clamp_{t}",))
_DEGREES = tuple(helper(f"_degrees_{t}", f"""
def _degrees_{t}(x):
    return np.{t}(np.{t}({180.0 / math.pi!r}) * x)
""") for t in _T)
_RADIANS = tuple(helper(f"_radians_{t}", f"""
def _radians_{t}(x):
    return np.{t}(np.{t}({math.pi / 180.0!r}) * x)
""") for t in _T)


def _entries() -> list[Builtin]:
    clamp = (*_FCLAMP, *_FMAX, *_FMIN)
    rows = [("step", 2, _STEP, "0.0 if x < edge else 1.0", "step(edge, x)"),
            ("smoothstep", 3, (*_SMOOTHSTEP, *clamp), "Hermite step between e0 and e1",
             "smoothstep(e0, e1, x)"),
            ("degrees", 1, _DEGREES, "(180 / pi) * x", "degrees(x)"),
            ("radians", 1, _RADIANS, "(pi / 180) * x", "radians(x)")]
    return [Builtin(name, FAMILY, need_float(name, n), call_helper(name), helpers=h,
                    flop="fma" if n > 1 else "add", c=c, types=FLOATS, note=note)
            for name, n, h, note, c in rows]


ENTRIES = _entries()
