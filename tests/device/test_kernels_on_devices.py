"""Every library kernel (kernels_py/) agrees with its .cl twin on every device present.

Two checks per kernel and device: Hypothesis-drawn cases (shapes with tails, one row, one
element, odd work-group sizes, edge values: NaN, ±inf, -0.0, subnormals, the largest finite,
all-equal and ties) through ``verify.fuzz_spec``, and one launch at the spec's own default shape
and inputs. ``exact`` outputs must agree bit for bit (NaN equal to NaN); ``ulp(N)`` outputs
within N ULPs. A device lacking a feature a spec requires is a skip with the reason.

Sizes (the suite's time, docs/performance.md): the ``ci`` and ``dev`` profiles draw launches of
about ``verify.testing.QUICK_BUFFER_ELEMENTS`` buffer elements (a few dozen quantized blocks),
which the simulator runs as plain Python, with the keys that set each work-item's loops
bounded (``verify.testing.QUICK_SHAPE_CAPS``: matmul's K, quantize_q4_k's blocks), and run the
full default shape on every native device, a quick one on Oclgrind (which interprets every
work-item); the ``thorough`` profile draws the full space and caps Oclgrind's default shape
less.

Every device draws the same cases (one seed), and the verifier keeps each simulation in
memory (``verify.runner``): the checked simulation of the first device's cases also answers
the unchecked ones of the devices after it, and the full default shape is simulated once for
all native devices, so in one worker a kernel's cases are simulated once (pytest-xdist hands
a worker consecutive tests, one kernel's devices together).

Also: every sub-group variant of the operator families at sub-group sizes 8, 16 and 32 (forced
on the device), and the two-launch argmax pipeline run launch by launch on each device with
the host passing the device's partials on.

``CLSIM_VERIFY_EXAMPLES`` sets the drawn examples per kernel and device (default: the Hypothesis
profile's ``max_examples``, e.g. 15 for ``ci``, 400 for ``thorough``); ``CLSIM_TEST_DEVICES``
narrows the devices; ``CLSIM_VERIFY_SEED`` changes the seed and ``CLSIM_FAILURES_DIR`` keeps
failing cases there instead of the test's temporary folder (campaigns: docs/verifying.md).
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import settings

from clsim.spec import all_specs, pipeline_stages, run_pipeline
from verify.cli import format_found
from verify.clrun import run_cl
from verify.devices import get_device
from verify.fuzz import fuzz_spec
from verify.pairs import Case, default_case, kernel_params, spec_pair
from verify.runner import run_pair
from verify.testing import (device_params, quick_shape_budget, quick_shape_caps,
                            shrunk_shape, thorough_profile)

SPECS = all_specs()
EXAMPLES = int(os.environ.get("CLSIM_VERIFY_EXAMPLES", settings.default.max_examples))
THOROUGH = thorough_profile()
SEED = int(os.environ.get("CLSIM_VERIFY_SEED", 20240601))
FAILURES_DIR = os.environ.get("CLSIM_FAILURES_DIR")
# Oclgrind interprets each work-item: default shapes are capped to this many elements there.
OCLGRIND_ELEMENTS = 1 << 16
# matmul's shape counts M*N*K (work, not elements) and its private-array loops are the slowest
# to build on PoCL and to interpret on Oclgrind (minutes at the general caps): fewer drawn
# examples and a smaller Oclgrind cap keep the CI run short. GGUF shapes count blocks (32
# elements each): a smaller cap too.
FAMILY_EXAMPLES = {"matmul": max(3, EXAMPLES // 3)}
FAMILY_OCLGRIND_ELEMENTS = {"matmul": 1 << 12, "gguf": 1 << 12, "gemv_quant": 1 << 13}


def _kind(spec) -> str:
    return "exact" if all(p.kind == "exact" for p in spec.outputs.values()) else "ulp"


def _capped_shape(spec, device: str, full: bool = True) -> dict[str, int] | None:
    """The default shape's cap on ``device`` (None: the whole default shape); ``full``: no
    quick cap (``quick_shape_budget``) on top of the interpreter's."""
    caps = []
    if device in INTERPRETERS:
        caps.append(FAMILY_OCLGRIND_ELEMENTS.get(spec.family, OCLGRIND_ELEMENTS))
    if not full:
        caps.append(quick_shape_budget(spec, most=OCLGRIND_ELEMENTS))
    return shrunk_shape(spec.default_shape, min(caps)) if caps else None


DRAWN_DEVICES = device_params()
# The race and uninitialised-read checks judge the simulation, which is the same whatever
# device it is compared with: they run (the verifier's default) against the first usable
# device only, and the other devices' matrix skips them, saving about 2.5x of its time.
# Every library kernel is also checked without a device (tests/unit/test_checks_specs.py).
CHECKS_DEVICE = next((p.values[0] for p in DRAWN_DEVICES if not p.marks), None)
# Devices that interpret every work-item (minutes where native compilers take milliseconds):
# they run a capped default shape. Every other device runs the full default shape; its
# simulation (a Numba compile, then millions of work-items) is the test's cost, and it is the
# same whatever device it is compared with, so the first device simulates it and the others
# reuse that simulation (verify.runner keeps it in memory; the devices of one kernel are
# consecutive tests, which pytest-xdist hands to one worker).
INTERPRETERS = ("oclgrind",)


@functools.lru_cache(maxsize=None)
def _native_device(name: str) -> str | None:
    """The first usable device that compiles the kernel natively and has its features."""
    pair = spec_pair(SPECS[name])
    return next((d for p in DRAWN_DEVICES if not p.marks and (d := p.values[0]) not in
                 INTERPRETERS and pair.skip_reason(get_device(d)) is None), None)


@pytest.mark.parametrize("device", DRAWN_DEVICES)
@pytest.mark.parametrize("name", [pytest.param(n, id=f"{n}-{_kind(s)}")
                                  for n, s in SPECS.items()])
def test_drawn_cases_agree(name, device, tmp_path):
    """The simulator and the device agree under each output's policy on every drawn case
    (bit for bit for exact kernels), and the simulation has no finding; a disagreement prints
    the minimal example."""
    spec = SPECS[name]
    examples = FAMILY_EXAMPLES.get(spec.family, EXAMPLES)
    quick = {} if THOROUGH else {"max_elements": quick_shape_budget(spec),
                                 "max_shape": quick_shape_caps(spec)}
    report = fuzz_spec(spec, device, examples=examples, seed=SEED,
                       failures_dir=FAILURES_DIR or tmp_path,
                       checks="all" if device == CHECKS_DEVICE else "default", **quick)
    if report.skipped:
        pytest.skip(report.skipped)
    assert report.found is None, format_found(report.found)
    for output, policy in SPECS[name].outputs.items():
        if policy.kind == "exact" and output in report.max_ulp:
            assert report.max_ulp[output] == 0


# The default shape's simulation without the race and uninitialised-read checks in the ci and
# dev profiles: then it is the module tests/kernels/test_library_kernels.py compiled for the
# kernel (same local size, from the kernel cache) instead of a second, checked compile per
# kernel (about 7 CPU s each). The checks judge every kernel in test_drawn_cases_agree
# (checks="all" on CHECKS_DEVICE) and tests/unit/test_checks_specs.py; thorough runs them here.
@pytest.mark.verify_checks("all" if THOROUGH else "default")
@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("name", list(SPECS))
def test_default_shape_agrees(name, device):
    """At the spec's default shape and inputs every output agrees under its policy with the
    simulator: the full shape on every native device, a capped one on Oclgrind (in the ci and
    dev profiles a quick one where a native device ran the full shape)."""
    spec = SPECS[name]
    pair = spec_pair(spec)
    reason = pair.skip_reason(get_device(device))
    if reason:
        pytest.skip(reason)
    full = THOROUGH or device not in INTERPRETERS or _native_device(name) is None
    result = run_pair(pair, default_case(spec, _capped_shape(spec, device, full)), device)
    assert result.equal, result.describe()


# Sub-group variants at each sub-group size, and multi-launch pipelines, on every device.

SUBGROUP_SIZES = (8, 16, 32)
DEFAULT_SUBGROUP_SIZE = 16  # the others (a sweep) are marked slow: --slow runs them
SUBGROUP_SPECS = sorted(n for n, s in SPECS.items() if s.subgroup_size and
                        s.family in ("argmax", "gemv", "gemv_quant", "matmul", "softmax") and
                        n != "softmax_subgroup")  # that one is in test_subgroup_twins.py
# gemv_quant: fewer rows than sub-groups (and than N_DST), and a row count with a tail.
SUBGROUP_SHAPES = {"argmax": [{"n": 3001}, {"n": 1}], "gemv": [{"rows": 7, "cols": 301}],
                   "gemv_quant": [{"rows": 2, "blocks": 3}, {"rows": 7, "blocks": 5}],
                   "matmul": [{"M": 5, "N": 7, "K": 33}],
                   "softmax": [{"heads": 5, "rows": 3, "cols": 150}]}


def _subgroup_launch(spec, inputs, shape, size, groups_of):
    """The spec's launch at sub-group size ``size``, ``groups_of`` sub-groups per work-group
    (plans that place rows by sub-group take the size; the others only the local size)."""
    local = (size * groups_of,)
    try:
        return spec.launch(inputs, shape, local, subgroup_size=size)
    except TypeError:
        return spec.launch(inputs, shape, local)


@pytest.mark.parametrize("device", device_params(requires=("subgroups",)))
@pytest.mark.parametrize("size", [pytest.param(s, marks=[] if s == DEFAULT_SUBGROUP_SIZE
                                               else [pytest.mark.slow]) for s in SUBGROUP_SIZES])
@pytest.mark.parametrize("name", SUBGROUP_SPECS)
def test_subgroup_variants_at_each_size(name, size, device):
    """Each sub-group variant agrees with its twin under its policy at sub-group sizes 8, 16
    and 32 (forced on the device), with one and with three sub-groups per work-group, on
    shapes with tails. A device without sub-groups or without the size is a skip."""
    spec = SPECS[name]
    pair = replace(spec_pair(spec), subgroup_size=size)
    reason = pair.skip_reason(get_device(device))
    if reason:
        pytest.skip(reason)
    for shape in SUBGROUP_SHAPES[spec.family]:
        for groups_of in (1, 3):
            inputs = spec.make_inputs(np.random.default_rng(size), shape)
            launch = _subgroup_launch(spec, inputs, shape, size, groups_of)
            case = Case(dict(zip(kernel_params(spec.kernel), launch.args, strict=True)),
                        tuple(launch.global_size), tuple(launch.local_size), shape,
                        inputs=inputs)
            result = run_pair(pair, case, device)
            assert result.equal, f"{shape}, local {launch.local_size}: {result.describe()}"


@pytest.mark.parametrize("device", device_params())
def test_argmax_two_phase_pipeline_on_device(device):
    """Both launches of argmax_two_phase on the device, the host reading launch 1's partials
    and passing them to launch 2 (as a host program would after clFinish): the device's
    partials equal the simulator's bit for bit and its index is numpy's, on a length that is
    not a multiple of the work-group size, with a tie across two chunks."""
    first, second = pipeline_stages("argmax_two_phase")
    if (reason := spec_pair(first).skip_reason(get_device(device))):
        pytest.skip(reason)
    shape = {"n": 100_003, "groups": 37}
    inputs = first.make_inputs(np.random.default_rng(11), shape)
    inputs["x"][[5000, 90_000]] = np.float32(50.0)
    source = first.cl_path.read_text()
    device_inputs = dict(inputs)
    for spec in (first, second):
        launch = spec.launch(device_inputs, shape, None)
        ran = run_cl(device, source, spec.cl_kernel_name, launch.global_size,
                     launch.local_size, list(launch.args))
        for k, value in zip(kernel_params(spec.kernel), ran.buffers, strict=True):
            if k in spec.outputs:
                device_inputs[k] = value
    run_pipeline("argmax_two_phase", inputs, shape)
    assert device_inputs["part_values"].tobytes() == inputs["part_values"].tobytes()
    assert device_inputs["part_indices"].tobytes() == inputs["part_indices"].tobytes()
    assert device_inputs["out"][0] == inputs["out"][0] == 5000
