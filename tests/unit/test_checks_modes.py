"""How the checks are switched on and how findings come back.

Contracts: ``checks="default"``, ``"bounds"`` and ``"none"`` look for no races or
uninitialised reads; ``"races"`` and ``"uninit"`` look for one kind each, ``"all"`` for both;
the first finding raises unless ``report_all=True``, which collects every finding (one per
category and site pair, with a count) into ``result.findings``; ``uninit="warn"`` records
uninitialised reads (warning once) while races still raise; contradictory options are
rejected; a ``Finding`` is a frozen record whose ``describe()`` names both accesses and whose
``error()`` is the exception first-error mode raises; checks need serial work-groups.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel, local_array
from clsim.checks import Finding, UninitializedReadWarning

F32 = np.float32


@kernel
def racy_and_uninitialised(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    t = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    out[get_global_id(0)] = s[63 - lid] + t[lid]
    barrier(CLK_LOCAL_MEM_FENCE)


def run(**kw):
    x, out = np.arange(128, dtype=F32), np.zeros(128, F32)
    return clsim.run(racy_and_uninitialised, (128,), (64,), (x, out), jit=False, **kw)


@pytest.mark.parametrize("checks", ["default", "bounds", "none"])
def test_modes_without_race_checks_find_nothing(checks):
    """The engine's always-on checks do not look for races or uninitialised reads."""
    assert run(checks=checks).findings == []


def test_races_mode_ignores_uninitialised_reads_and_uninit_mode_ignores_races():
    """checks="races" reports races only, checks="uninit" uninitialised reads only (there, the
    read of s[63 - lid] before its writer ran shows up as an uninitialised read of s)."""
    races = run(checks="races", report_all=True).findings
    uninit = run(checks="uninit", report_all=True).findings
    assert {f.category for f in races} == {"race"}
    assert {f.category for f in uninit} == {"uninit"}
    assert {f.buffer for f in uninit} == {"s", "t"}


def test_first_finding_raises_by_default():
    """Without report_all the run stops at the first finding with its exception."""
    with pytest.raises((clsim.DataRaceError, clsim.UninitializedReadError)):
        run(checks="all")


def test_report_all_collects_every_finding_once_per_site_pair():
    """report_all=True raises nothing; each (category, site pair) appears once, with how many
    times it was seen."""
    findings = run(checks="all", report_all=True).findings
    keys = [(f.category, f.lines, f.buffer) for f in findings]  # one line holds two sites
    assert len(keys) == len(set(keys)) and {"race", "uninit"} <= {k[0] for k in keys}
    uninit = next(f for f in findings if f.category == "uninit" and f.buffer == "t")
    assert uninit.count == 128  # every work-item of both groups read t[lid] once


def test_uninit_warn_records_reads_and_races_still_raise():
    """uninit="warn" lists every uninitialised read in result.findings (one per site) and
    warns once, without raising; under checks="all" a race still raises."""
    with pytest.warns(UninitializedReadWarning, match="uninitialised-read"):
        result = run(checks="uninit", uninit="warn")
    assert [f.category for f in result.findings] == ["uninit", "uninit"]
    with pytest.raises(clsim.DataRaceError), warnings.catch_warnings():
        warnings.simplefilter("ignore", UninitializedReadWarning)
        run(checks="all", uninit="warn")


def test_uninit_warn_turns_on_uninitialised_reads_under_default_checks():
    """checks="default" with uninit="warn" looks for uninitialised reads (warning mode only)."""
    with pytest.warns(UninitializedReadWarning):
        result = run(uninit="warn")
    assert {f.category for f in result.findings} == {"uninit"}


@pytest.mark.parametrize("options", [dict(checks="none", uninit="warn"),
                                     dict(checks="bounds", uninit="warn"),
                                     dict(checks="all", uninit="sometimes")])
def test_contradictory_options_are_rejected(options):
    """Asking for uninitialised-read warnings with the checks off, or an unknown uninit mode,
    is an InvalidArgumentError before anything runs."""
    with pytest.raises(clsim.InvalidArgumentError):
        run(**options)


def test_checks_run_groups_serially_even_when_parallel_is_asked():
    """The checks run the groups themselves (in threads with their own shadows, with JIT), so
    parallel=True does not switch to the parallel launcher (result.parallel is False) and the
    findings are the same as in a default run."""
    x, out = np.arange(128, dtype=F32), np.zeros(128, F32)
    asked = clsim.run(racy_and_uninitialised, (128,), (64,), (x, out), jit=False,
                      parallel=True, checks="all", report_all=True)
    plain = clsim.run(racy_and_uninitialised, (128,), (64,), (x, out.copy()), jit=False,
                      checks="all", report_all=True)
    assert asked.parallel is False
    assert [f.category for f in asked.findings] == [f.category for f in plain.findings]
    assert asked.findings


def test_finding_is_a_frozen_readable_record_matching_the_raised_error():
    """A Finding is frozen; describe() (and str) is one block naming both lines, kinds and
    work-items; error() gives the same message first-error mode raises."""
    findings = run(checks="races", report_all=True).findings
    race = findings[0]
    assert isinstance(race, Finding)
    with pytest.raises(dataclasses.FrozenInstanceError):
        race.category = "other"
    text = str(race)
    assert text == race.describe() and text.startswith(race.message)
    assert all(f":{n}" in text for n in race.lines) and "lid=" in text
    assert race.kinds[0] in text and race.kinds[1] in text
    with pytest.raises(clsim.DataRaceError) as raised:
        run(checks="races")
    assert raised.value.message.split("\n")[0] == race.error().message.split("\n")[0]
    assert isinstance(race.error(), clsim.DataRaceError)
