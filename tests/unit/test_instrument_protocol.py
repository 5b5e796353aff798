"""The instrument protocol as the traffic model uses it: events carry what it needs.

What it proves: the traffic instrument is written against the typed events and ``Emit``
only (it overrides none of the older hooks that received the code emitter, and its source
names none of the emitter's attributes); the access events give a buffer's kernel-parameter
position (``param``) and an atomic's memory effect (``effect``), which it needs to tag
addresses with their buffer and to count ``atomic_load`` as a read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import clsim
from clsim import atomic_add, atomic_load, atomic_store, func, get_global_id, kernel
from clsim.instruments import dispatch, registry
from clsim.instruments.base import Instrument
from clsim.instruments.events import AccessEvent
from clsim.traffic.instrument import TrafficInstrument

TRAFFIC = Path(__file__).resolve().parents[2] / "clsim" / "traffic"
_OLDER_HOOKS = ("group_start", "region_start", "region_end", "barrier", "subgroup_barrier",
                "access", "flop", "flops")
# The emitter's attributes the old hooks reached (``gen.module.program.arg_types``...).
_EMITTER = re.compile(r"\bgen\b|\.module\.|\.program\.|\bin_group_fn\b|\bin_wi\b|"
                      r"\blid_code\b|\barray_base\b|\.storage\b")


def test_traffic_instrument_uses_only_events():
    """No older hook is overridden, so dispatch calls the ``on_*`` hooks with events."""
    overridden = [h for h in _OLDER_HOOKS if dispatch._legacy(TrafficInstrument.__new__(
        TrafficInstrument), h)]
    assert overridden == []


def test_traffic_sources_name_no_emitter_internals():
    """No module of clsim/traffic names the emitter or its attributes."""
    hits = [f"{path.name}:{n}: {line.strip()}" for path in sorted(TRAFFIC.glob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if _EMITTER.search(line.split("#")[0])]
    assert hits == []


class _Seen(Instrument):
    name = "test_protocol_seen"
    seen: ClassVar[list] = []

    @classmethod
    def create(cls, config):
        return cls()

    def key(self):
        return (self.name, id(self))

    def on_access(self, event: AccessEvent, out):
        self.seen.append((event.buffer, event.kind, event.effect, event.param, event.storage))
        return event.index


@func
def _bump(p, i):
    p[i] = p[i] + 1


@kernel
def _mixed(n, src, counts, flags):
    i = get_global_id(0)
    counts[0] = src[i]
    atomic_add(counts[1], 1)
    v = atomic_load(flags[0])
    atomic_store(flags[1], v)
    _bump(counts, 2)


@pytest.fixture
def seen(monkeypatch):
    _Seen.seen = []
    monkeypatch.setattr(registry, "INSTRUMENTS", (*registry.INSTRUMENTS, _Seen))
    return _Seen.seen


def test_access_events_carry_param_and_effect(seen):
    """``param`` is the buffer's position among the kernel's parameters (None in a helper,
    whose parameter is renamed); ``effect`` says which way an atomic moves data."""
    clsim.run(_mixed, (1,), (1,), (np.int32(1), np.ones(1, np.int32), np.zeros(3, np.int32),
                                   np.zeros(2, np.int32)))
    assert set(seen) == {
        ("src", "load", "load", 1, "param"),
        ("counts", "store", "store", 2, "param"),
        ("counts", "atomic", "rmw", 2, "param"),
        ("flags", "atomic", "load", 3, "param"),
        ("flags", "atomic", "store", 3, "param"),
        ("p", "load", "load", None, "helper"),
        ("p", "store", "store", None, "helper"),
    }
