"""pytest helpers for device tests, in pyopencl's style: one param per device kind, stable ids.

``device_params()`` lists every device kind we know (pocl, intel-cpu, oclgrind) plus any other
device present, as ``pytest.param(short_name, id=short_name)``. A device that is absent, or
lacks a required feature, or fails its health probe (``verify.probe``: it cannot build a
trivial kernel), stays in the list with a skip mark whose reason says why and how to get it: a
test never vanishes silently. ``CLSIM_TEST_DEVICES=pocl,nvidia`` narrows the set (a
named device that is absent is still reported as a skip).

A second driver of one kind (Debian's PoCL, ``pocl-1``, beside the wheel's ``pocl``) is
tested only where the first is unusable: it runs the same tests with the same compiler family,
and testing both would add a quarter to the device tests. Otherwise it is a skip saying so;
``CLSIM_TEST_ALL_DEVICES=1``, the ``thorough`` Hypothesis profile, or naming it in
``CLSIM_TEST_DEVICES`` tests it too.

``quick_shape_budget(spec)`` sizes the shapes the ``ci`` and ``dev`` profiles draw: launches of
about ``QUICK_BUFFER_ELEMENTS`` buffer elements, so that the simulator runs them
as plain Python in a fraction of a second instead of compiling a Numba module per drawn local
size; ``quick_shape_caps(spec)`` bounds the keys that set each work-item's loops (matmul's K);
the ``thorough`` profile draws the full space.

This module runs no kernels and does not define fixtures; tests/conftest.py may wrap these.
"""

from __future__ import annotations

import os
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from verify.devices import DeviceInfo, list_devices
from verify.features import missing_feature
from verify.probe import health, health_all

KNOWN_DEVICES = ("pocl", "intel-cpu", "oclgrind")
ENV_VAR = "CLSIM_TEST_DEVICES"
ALL_DEVICES_ENV = "CLSIM_TEST_ALL_DEVICES"
PROFILE_ENV = "CLSIM_HYPOTHESIS_PROFILE"
# Buffer elements of a launch drawn by the ci and dev profiles. Plain Python simulates a Q4_K
# dequantize at about 12 ms a block (513 elements), so a case stays near a quarter second;
# the full drawn space (verify.fuzz.MAX_ELEMENTS shape units, where a quantized block counts as
# one) reached verify.jit_choice.PYTHON_LIMIT, above which each drawn local size compiled a
# Numba module (about 2 CPU s each, 8-9 per quantized kernel and device: most of the device
# tests' time). Float kernels (one or two elements per shape unit) still draw rows of 4097.
QUICK_BUFFER_ELEMENTS = 10 * 1024
# Shape keys that set how long each work-item loops, not how many buffer elements there are,
# so the buffer-element budget leaves them at their default: bounds for the ci and dev
# profiles' draws, by spec name, else family (``quick_shape_caps``). matmul: every work-item
# loops over K, and a 16 x 16 group runs whatever M and N are, so a drawn case cost about
# 256 x K x (TM x TN) multiply-adds (up to 9 CPU s in plain Python at K 256 for
# matmul_regblock, 2.5 at K 48); 33 still spans two 16-wide K tiles and a tail (the default
# shape runs K 256). quantize_q4_k: about
# 10**5 operations per block in one work-item (0.5-1 CPU s each, checked, in plain Python);
# 3 blocks still give one work-group of 3 and tails with 2 and 3 per group.
QUICK_SHAPE_CAPS: dict[str, dict[str, int]] = {
    "matmul": {"K": 33},
    "quantize_q4_k": {"blocks": 3},
}
# The shape units a spec's launch size per unit is measured at: enough that a launch plan's
# fixed costs (a whole work-group for one row) do not dominate.
_PROBE_UNITS = 1 << 10

# How to get each device kind when it is absent (anything else is a GPU driver).
_INSTALL_HINTS = {
    "pocl": "pip install pocl-binary-distribution",
    "intel-cpu": "pip install '.[devices]'",
    "oclgrind": "pip install '.[devices]'",
}


def _install_hint(name: str) -> str:
    return _INSTALL_HINTS.get(name, "install its OpenCL driver (an .icd in /etc/OpenCL/vendors)")


def _present() -> tuple[dict[str, DeviceInfo], str | None]:
    try:
        return {d.short_name: d for d in list_devices()}, None
    except Exception as err:  # discovery itself broke: every test must say so, not vanish
        return {}, f"OpenCL discovery failed: {type(err).__name__}: {err}"


def selected_names(present: Iterable[str]) -> list[str]:
    """Device names to test: CLSIM_TEST_DEVICES if set, else the known kinds plus present."""
    wanted = [n.strip() for n in os.environ.get(ENV_VAR, "").split(",") if n.strip()]
    if wanted:
        return list(dict.fromkeys(wanted))
    return list(dict.fromkeys([*KNOWN_DEVICES, *present]))


def thorough_profile() -> bool:
    """Whether the ``thorough`` Hypothesis profile was asked for (long campaigns, every
    device, the full drawn space)."""
    return os.environ.get(PROFILE_ENV) == "thorough"


def _all_devices() -> bool:
    return (os.environ.get(ALL_DEVICES_ENV) == "1" or bool(os.environ.get(ENV_VAR, "").strip())
            or thorough_profile())


def buffer_elements(spec: Any, shape: Mapping[str, int]) -> int:
    """The elements of every buffer ``spec``'s launch at ``shape`` passes (a byte of a
    quantized block counts as one, as in ``verify.jit_choice``)."""
    inputs = spec.make_inputs(np.random.default_rng(0), dict(shape))
    launch = spec.launch(inputs, dict(shape), None)
    return sum(a.size for a in launch.args if isinstance(a, np.ndarray))


def quick_shape_budget(spec: Any, elements: int = QUICK_BUFFER_ELEMENTS,
                       most: int | None = None) -> int:
    """Shape units (the product of a shape's values, ``verify.fuzz.spec_shapes``'
    ``max_elements``) whose launch passes about ``elements`` buffer elements, at most
    ``most`` (default ``verify.fuzz.MAX_ELEMENTS``): the elements per unit are measured at
    a small shape (a GGUF block holds hundreds, a float row-column one or two)."""
    from verify.fuzz import MAX_ELEMENTS  # Hypothesis, imported only by who needs it

    probe = shrunk_shape(spec.default_shape, _PROBE_UNITS)
    per_unit = buffer_elements(spec, probe) / math.prod(probe.values())
    return max(1, min(MAX_ELEMENTS if most is None else most, int(elements / per_unit)))


def quick_shape_caps(spec: Any) -> dict[str, int]:
    """Bounds on single shape keys for the ci and dev profiles' draws (``QUICK_SHAPE_CAPS``,
    ``verify.fuzz.spec_shapes``' ``max_shape``); empty when the budget bounds the work."""
    return dict(QUICK_SHAPE_CAPS.get(spec.name, QUICK_SHAPE_CAPS.get(spec.family, {})))


def shrunk_shape(shape: Mapping[str, int], units: int) -> dict[str, int]:
    """``shape`` divided down to at most ``units`` (the product of its values), the first
    (outer) keys first: rows before cols, so rows keep their length."""
    out = {k: int(v) for k, v in shape.items()}
    for key in out:
        total = math.prod(out.values())
        if total <= units:
            break
        out[key] = max(1, out[key] // -(-total // units))
    return out


def _second_driver(name: str, devices: dict[str, DeviceInfo]) -> str | None:
    """Why ``name`` is not tested by default: an earlier device of its driver kind is usable."""
    info = devices[name]
    if _all_devices() or not info.driver:
        return None
    for other in devices.values():
        if other is info:
            return None
        if other.driver == info.driver and health(other).usable:
            return (f"device {name}: a second {info.driver} driver ({other.short_name} is usable "
                    f"and tested); {ALL_DEVICES_ENV}=1 or {ENV_VAR}={name} tests it too")
    return None


def _skip_reason(name: str, devices: dict[str, DeviceInfo], failure: str | None,
                 requires: Sequence[str]) -> str | None:
    if failure is not None:
        return failure
    if name not in devices:
        return f"device {name} not present ({_install_hint(name)})"
    try:
        verdict = health(devices[name])
    except Exception as err:  # the probe could not even start: say so, never vanish
        return f"device {name}: health probe failed: {type(err).__name__}: {err}"
    if not verdict.usable:
        return f"device {name} is unusable: {verdict.reason}"
    second = _second_driver(name, devices)
    if second is not None:
        return second
    for feature in requires:
        reason = missing_feature(devices[name], feature)
        if reason is not None:
            return reason
    return None


def device_params(requires: Sequence[str] = (), only: Iterable[str] | None = None
                  ) -> list[Any]:
    """``pytest.param(short_name, id=short_name)`` per device, skip-marked with a reason when
    the device is absent or lacks one of ``requires`` ("subgroups", "fp16", "fp64",
    "subgroup_size:<n>", "work_group_size:<n>"). ``only`` restricts to those device names
    (within what CLSIM_TEST_DEVICES selects)."""
    devices, failure = _present()
    try:  # probe every uncached device at once (in parallel) rather than one by one below
        health_all(devices.values())
    except Exception:
        pass  # _skip_reason reports it per device
    names = selected_names(devices)
    if only is not None:
        keep = set(only)
        names = [n for n in names if n in keep]
    params = []
    for name in names:
        reason = _skip_reason(name, devices, failure, requires)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(name, id=name, marks=marks))
    if not params:  # e.g. CLSIM_TEST_DEVICES names none of `only`: say so rather than vanish
        wanted = os.environ.get(ENV_VAR, "")
        params.append(pytest.param(
            "none", id="no-device", marks=[pytest.mark.skip(
                reason=f"no selected device for this test ({ENV_VAR}={wanted!r})")]))
    return params
