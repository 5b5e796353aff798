"""Every library kernel's ``clsim.to_cl`` output builds on the devices that have the features
it uses and agrees with the simulator under the spec's policies (bit for bit for exact
outputs) on the spec's drawn cases, through the verifier (``verify.fuzz_spec`` with the
printed source in place of the hand-written ``.cl`` twin).

Cost: the default profiles run one drawn case per kernel (``CLSIM_VERIFY_EXAMPLES`` sets more)
on one device (the first present of intel-cpu, pocl, oclgrind whose features the spec's
``requires`` allow), with tests/device/test_kernels_on_devices.py's seed so that a whole run
shares the simulator variants it compiles;
``CLSIM_HYPOTHESIS_PROFILE=thorough`` runs the profile's examples on each of intel-cpu, pocl and
oclgrind. A device lacking a feature (sub-groups, fp16) is a skip with the reason.
``CLSIM_TEST_DEVICES`` narrows the devices as everywhere.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings

from clsim.backends.opencl_c import to_cl
from clsim.errors import DeviceLacksFeature
from clsim.spec import all_specs
from verify.cli import format_found
from verify.fuzz import fuzz_spec
from verify.runner import compare
from verify.testing import device_params

import to_cl_zoo as zoo  # beside this file (pytest puts the folder on sys.path)

SPECS = all_specs()
THOROUGH = os.environ.get("CLSIM_HYPOTHESIS_PROFILE") == "thorough"
# One drawn case per kernel by default (the suite's time: each new case can compile a new
# simulator variant); CLSIM_VERIFY_EXAMPLES raises it, the thorough profile uses its own.
DEFAULT_EXAMPLES = int(os.environ.get("CLSIM_VERIFY_EXAMPLES", 1))
EXAMPLES = settings.default.max_examples if THOROUGH else DEFAULT_EXAMPLES
DEVICES = ("intel-cpu", "pocl", "oclgrind")
# tests/device/test_kernels_on_devices.py's seed: the same drawn cases, so in one pytest run the
# simulator's compiled variants are shared and this test mostly pays for device builds
SEED = int(os.environ.get("CLSIM_VERIFY_SEED", 20240601))
# Oclgrind interprets every work-item: drawn shapes stay small there.
OCLGRIND_ELEMENTS = 1 << 12


def _devices_for(spec) -> list:
    params = device_params(requires=tuple(spec.requires), only=DEVICES)
    if THOROUGH:
        return params
    ready = sorted((p for p in params if not p.marks),
                   key=lambda p: DEVICES.index(p.values[0]))
    return ready[:1] or params[:1]  # none ready: the first, with its skip reason


def _cases():
    for name, spec in SPECS.items():
        for param in _devices_for(spec):
            yield pytest.param(name, param.values[0], marks=param.marks,
                               id=f"{name}-{param.values[0]}")


@pytest.mark.parametrize(("name", "device"), list(_cases()))
def test_to_cl_agrees_with_the_simulator(name, device, tmp_path):
    spec = SPECS[name]
    source = to_cl(spec)
    limit = {"max_elements": OCLGRIND_ELEMENTS} if device == "oclgrind" else {}
    report = fuzz_spec(spec, device, examples=EXAMPLES, seed=SEED, cl_source=source,
                       failures_dir=tmp_path, **limit)
    if report.skipped:
        pytest.skip(report.skipped)
    assert report.found is None, format_found(report.found)


def _zoo_cases():
    rng = np.random.default_rng(5)
    n = 32
    ints = rng.integers(-60, 60, n).astype(np.int32)
    recs = np.zeros(n, zoo.REC)
    recs["d"] = rng.standard_normal(n).astype(np.float32)
    recs["q"] = rng.integers(0, 255, (n, 4))
    floats = rng.standard_normal(n).astype(np.float32)
    return [
        (zoo.scalars, (ints, np.zeros(n, np.int32), np.int32(n))),
        (zoo.vectors_and_memory, (floats, recs, np.zeros(n, np.float32), np.int32(n))),
        (zoo.atomics, (ints, np.zeros(4, np.int32), np.int32(n))),
        (zoo.atomics_c11, (ints, np.zeros(2, np.int32), np.int32(n))),
        (zoo.struct_values, (floats, np.zeros(n, np.float32), np.zeros(n, np.int32))),
    ]


@pytest.mark.parametrize("device", [p for p in device_params(only=DEVICES)])
@pytest.mark.parametrize("which", [0, 1, 2, 3, 4],
                         ids=["scalars", "vectors_and_memory", "atomics", "atomics_c11",
                              "struct_values"])
def test_to_cl_of_constructs_outside_the_library(which, device):
    """Swaps, private-array fills, component stores, 2-D local arrays, pointer locals, views,
    record copies, elif chains, negative range steps, hex literals, mixed signedness and
    legacy atomics (both spellings), C11 atomics and struct values returned by helpers print as
    C that agrees with the simulator bit for bit."""
    kernel, args = _zoo_cases()[which]
    source = to_cl(kernel, args, local_size=(32,))
    try:
        result = compare(kernel, source, global_size=(32,), local_size=(32,), args=args,
                         device=device)
    except DeviceLacksFeature as lack:  # C11 atomics: OpenCL C 2.0
        pytest.skip(str(lack))
    assert result.equal, str(result.first_difference)
