"""clsim's verifier: the simulator against real OpenCL devices, bit for bit where it can be.

Public API:

- ``compare(kernel, cl_source, kernel_name=..., global_size=..., local_size=..., args=...,
  device=None, policy="exact")`` (None: the first device that passes its health probe):
  one launch on both sides, a ``LaunchComparison``
  (``.equal``, ``.first_difference`` with buffer, index, both values, hex, ULP distance);
- ``fuzz(kernel, cl_source, launches=<strategy of clsim.spec.Launch>, ...)``: the same over
  Hypothesis draws, shrunk to a minimal failing example that is saved before it is returned
  (a ``FuzzReport``); ``fuzz_spec(spec, device)`` does it for a ``KernelSpec``;
- ``magnitude(k, scale)``: the policy for sums that cancel (``|a - b| <= k * eps *
  sum|terms|``, ``scale`` giving sum|terms| per output from the inputs);
- ``strategies``: Hypothesis strategies for inputs and launch sizes (edge values, tails).

Modules: ``devices`` (discovery), ``probe`` (device health probe), ``device_table``
(``clsim devices``), ``features`` (what a launch needs), ``clrun`` (one device launch),
``clargs`` (arguments vs the .cl signature, aliasing), ``worker`` (launches in a child process
per device, with a time limit), ``errors``, ``pairs`` (kernel pairs and launch cases),
``runner`` (simulator vs device), ``fuzz`` (search), ``policy`` (agreement rules),
``failures`` (saving), ``replay``, ``cli`` (``clsim devices|verify|replay``), ``testing`` and
``pytest_plugin`` (device tests). ``verify.fuzz`` is the function; import the
module's other names with ``from verify.fuzz import ...``. See docs/verifying.md.
"""

from verify import strategies
from verify.fuzz import Found, FuzzReport, fuzz, fuzz_spec
from verify.policy import magnitude, parse_policy, ulp_distance
from verify.runner import LaunchComparison, compare

__all__ = [
    "Found", "FuzzReport", "LaunchComparison", "compare", "fuzz", "fuzz_spec", "magnitude",
    "parse_policy", "strategies", "ulp_distance",
]
