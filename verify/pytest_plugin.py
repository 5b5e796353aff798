"""pytest plugin: a ``device`` argument that runs a test once per OpenCL device kind.

Enable it with ``pytest_plugins = ["verify.pytest_plugin"]`` in the root conftest.py (or
``pytest -p verify.pytest_plugin``). Any test that takes an argument named ``device`` and does
not parametrize it itself is parametrized with ``verify.testing.device_params``: one test per
device kind (pocl, intel-cpu, oclgrind, plus any other present), ids are the short names, and
an absent device or one lacking a feature is a skip with the reason. Features come from a
marker::

    @pytest.mark.device_requires("subgroups", "subgroup_size:16")
    def test_reduce(device): ...

``CLSIM_TEST_DEVICES=pocl,intel-cpu`` narrows the set. The value is the device's short name
(pass it to ``verify.compare(..., device=device)`` or ``verify.clrun.run_cl``).

A test that fuzzes (``verify.fuzz``, ``verify.fuzz_spec``) and otherwise passes is reported as
*skipped*, with the reports' reasons, when every ``FuzzReport`` it made was skipped (the device
lacks fp16, sub-groups, ...): asserting ``report.equal`` alone would otherwise pass without
anything having been compared. A test that made at least one report that ran passes as usual,
and so does one marked ``@pytest.mark.fuzz_skip_expected``: it asserts the skip itself.

The verifier runs the simulator with ``checks="all"`` in every test (a race or an
uninitialised read fails a comparison even where the device agrees) unless told otherwise:
``@pytest.mark.verify_checks("default")`` for one test, ``pytest --clsim-checks default`` for
the run (a call's own ``checks=`` argument wins over both).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from verify.fuzz import REPORT_LISTENERS
from verify.runner import _CHECKS_OVERRIDE, CHECK_MODES
from verify.testing import device_params

MARKER = "device_requires"
SKIP_EXPECTED = "fuzz_skip_expected"
CHECKS_MARKER = "verify_checks"
CHECKS_OPTION = "--clsim-checks"


def pytest_addoption(parser: Any) -> None:
    parser.addoption(CHECKS_OPTION, default=None, choices=CHECK_MODES,
                     help="the simulator's checks in verify.compare/fuzz/fuzz_spec for every "
                          "test (default all; a test's verify_checks marker wins)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(*features): run the 'device' parametrization only on devices "
        "with these features (subgroups, fp16, fp64, subgroup_size:<n>, work_group_size:<n>); "
        "others are skipped with the reason")
    config.addinivalue_line(
        "markers", f"{CHECKS_MARKER}(mode): the simulator's checks in this test's verify calls "
        f"({', '.join(CHECK_MODES)}; default all)")
    config.addinivalue_line(
        "markers", f"{SKIP_EXPECTED}: the test's fuzz reports are skipped on purpose and it "
        "asserts so; it is not reported as skipped")


def _explicitly_parametrized(metafunc: Any, name: str) -> bool:
    for marker in metafunc.definition.iter_markers(name="parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


def pytest_generate_tests(metafunc: Any) -> None:
    if "device" not in metafunc.fixturenames or _explicitly_parametrized(metafunc, "device"):
        return
    features: list[str] = []
    for marker in metafunc.definition.iter_markers(name=MARKER):
        features.extend(marker.args)
    metafunc.parametrize("device", device_params(requires=tuple(features)))


def _checks_for(item: Any) -> str | None:
    """The checks mode a test asked for (its marker, else the command line), or None."""
    marker = item.get_closest_marker(CHECKS_MARKER)
    if marker is not None:
        mode = marker.args[0] if marker.args else marker.kwargs.get("mode")
        if mode not in CHECK_MODES:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{CHECKS_MARKER}({mode!r}): "
                                    f"use one of {', '.join(CHECK_MODES)}")
        return mode
    return item.config.getoption(CHECKS_OPTION, default=None)


def _skip_reason(reports: list[Any]) -> str | None:
    """The reason to report a passed test as skipped: every fuzz report it made was skipped."""
    if not reports or any(r.skipped is None for r in reports):
        return None
    reasons = dict.fromkeys(f"{r.name} on {r.device}: {r.skipped}" for r in reports)
    return "nothing was compared: " + "; ".join(reasons)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Generator[None, Any, Any]:
    reports: list[Any] = []
    REPORT_LISTENERS.append(reports.append)
    token = _CHECKS_OVERRIDE.set(_checks_for(item))
    try:
        result = yield  # a failing test raises here and stays failed
    finally:
        _CHECKS_OVERRIDE.reset(token)
        REPORT_LISTENERS.remove(reports.append)
    reason = _skip_reason(reports)
    if reason is not None and item.get_closest_marker(SKIP_EXPECTED) is None:
        pytest.skip(reason)
    return result
