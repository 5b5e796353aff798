"""Every library kernel (kernels_py/) agrees with its .cl twin on every device present.

Two checks per kernel and device: Hypothesis-drawn cases (shapes with tails, one row, one
element, odd work-group sizes, edge values: NaN, ±inf, -0.0, subnormals, the largest finite,
all-equal and ties) through ``verify.fuzz_spec``, and one launch at the spec's own default shape
and inputs. ``exact`` outputs must agree bit for bit (NaN equal to NaN); ``ulp(N)`` outputs
within N ULPs. A device lacking a feature a spec requires is a skip with the reason.

``CLSIM_VERIFY_EXAMPLES`` sets the drawn examples per kernel and device (default: the Hypothesis
profile's ``max_examples``, e.g. 15 for ``ci``, 400 for ``thorough``); ``CLSIM_TEST_DEVICES``
narrows the devices; ``CLSIM_VERIFY_SEED`` changes the seed and ``CLSIM_FAILURES_DIR`` keeps
failing cases there instead of the test's temporary folder (campaigns: docs/verifying.md).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from clsim.spec import all_specs
from verify.cli import format_found
from verify.devices import get_device
from verify.fuzz import fuzz_spec
from verify.pairs import default_case, spec_pair
from verify.runner import run_pair
from verify.testing import device_params

SPECS = all_specs()
EXAMPLES = int(os.environ.get("CLSIM_VERIFY_EXAMPLES", settings.default.max_examples))
SEED = int(os.environ.get("CLSIM_VERIFY_SEED", 20240601))
FAILURES_DIR = os.environ.get("CLSIM_FAILURES_DIR")
# Oclgrind interprets each work-item: default shapes are capped to this many elements there.
OCLGRIND_ELEMENTS = 1 << 16


def _kind(spec) -> str:
    return "exact" if all(p.kind == "exact" for p in spec.outputs.values()) else "ulp"


def _capped_shape(spec, device: str) -> dict[str, int] | None:
    if device != "oclgrind":
        return None
    shape = dict(spec.default_shape)
    for key in shape:  # shrink the first (outer) keys first: rows before cols
        total = 1
        for v in shape.values():
            total *= v
        if total <= OCLGRIND_ELEMENTS:
            break
        shape[key] = max(1, shape[key] // -(-total // OCLGRIND_ELEMENTS))
    return shape


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("name", [pytest.param(n, id=f"{n}-{_kind(s)}")
                                  for n, s in SPECS.items()])
def test_drawn_cases_agree(name, device, tmp_path):
    """The simulator and the device agree under each output's policy on every drawn case
    (bit for bit for exact kernels); a disagreement prints the minimal example."""
    report = fuzz_spec(SPECS[name], device, examples=EXAMPLES, seed=SEED,
                       failures_dir=FAILURES_DIR or tmp_path)
    if report.skipped:
        pytest.skip(report.skipped)
    assert report.found is None, format_found(report.found)
    for output, policy in SPECS[name].outputs.items():
        if policy.kind == "exact" and output in report.max_ulp:
            assert report.max_ulp[output] == 0


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("name", list(SPECS))
def test_default_shape_agrees(name, device):
    """At the spec's default shape and inputs (capped on Oclgrind) every output agrees under
    its policy with the simulator."""
    spec = SPECS[name]
    pair = spec_pair(spec)
    reason = pair.skip_reason(get_device(device))
    if reason:
        pytest.skip(reason)
    result = run_pair(pair, default_case(spec, _capped_shape(spec, device)), device)
    assert result.equal, result.describe()
