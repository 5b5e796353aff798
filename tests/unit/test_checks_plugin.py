"""A third instrument, defined here and nowhere else, runs through the instrument protocol.

What it proves: adding an instrument touches only its own module (this file) and the registry
list (``registry.INSTRUMENTS``, patched for the test). Its option reaches ``run()``, its result
appears on ``RunResult``, its hooks see typed events (kind, space, buffer, width, site with
file:line, lanes) and generate code through ``Emit`` only.
"""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel, local_array
from clsim.errors import InvalidArgumentError
from clsim.instruments import registry
from clsim.instruments.base import Instrument
from clsim.instruments.events import ONE_ITEM, AccessEvent, Emit, SyncEvent

_COUNT = """
def _sc_count(i, counts, k):
    counts[k] += 1
    return i
"""


class GlobalStoreCounter(Instrument):
    """Counts the stores to each global buffer: ``run(..., count_stores=True).store_counts``."""

    name = "global_store_counter"
    options: ClassVar = {"count_stores": False}
    result = "store_counts"
    serial_groups = True  # one counter row shared by every group
    events: ClassVar[list] = []  # what the hooks saw, for the tests
    salt: ClassVar[int] = 0  # a new value compiles afresh, so the hooks run again

    @classmethod
    def create(cls, config):
        return cls() if config.option("count_stores") else None

    @staticmethod
    def result_default():
        return {}

    def key(self) -> tuple:
        return (self.name, 1, self.salt)

    def state_args(self) -> list[str]:
        return ["_scN"]

    def on_access(self, event: AccessEvent, out: Emit) -> tuple[str, ...]:
        self.events.append(event)
        if event.kind != "store" or event.space != "global":
            return event.index
        count = out.helper("_sc_count", _COUNT)
        site = out.const(event.site.id, "int64")
        return (*event.index[:-1], f"{count}({event.index[-1]}, _scN, {site})")

    def on_sync(self, event: SyncEvent, out: Emit) -> None:
        self.events.append(event)

    def allocate(self, info) -> list:
        return [np.zeros(len(info.sites), np.int64)]

    def finalize(self, info, state, result) -> dict[str, int]:
        counts: dict[str, int] = {}
        for site, n in zip(info.sites, state[0], strict=True):
            if n:
                counts[site.buffer] = counts.get(site.buffer, 0) + int(n)
        return counts


@pytest.fixture
def counter(monkeypatch):
    GlobalStoreCounter.events = []
    monkeypatch.setattr(GlobalStoreCounter, "salt", 0)
    monkeypatch.setattr(registry, "INSTRUMENTS", (*registry.INSTRUMENTS, GlobalStoreCounter))
    return GlobalStoreCounter


@kernel
def scale_and_flag(x, y, flags, n):
    i = get_global_id(0)
    lid = get_local_id(0)
    tile = local_array(8, np.float32)
    tile[lid] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)
    if i < n:
        y[i] = tile[lid] * 2.0
    if i % 4 == 0:
        flags[i // 4] = 1


def _args(n=32):
    return (np.arange(n, dtype=np.float32), np.zeros(n, np.float32), np.zeros(n // 4, np.int32),
            np.int32(n - 3))


def test_third_instrument_counts_global_stores(counter):
    """Its option is accepted, its hooks' code runs exactly when the stores do, its result is
    ``RunResult.store_counts``; the kernel's results are unchanged."""
    x, y, flags, _n = args = _args()
    result = clsim.run(scale_and_flag, (32,), (8,), args, count_stores=True)
    assert result.store_counts == {"y": 29, "flags": 8}
    np.testing.assert_array_equal(y[:29], x[:29] * 2)
    assert flags.tolist() == [1] * 8


def test_third_instrument_sees_typed_events(counter):
    """Accesses arrive as ``AccessEvent``s naming kind, space, buffer, width and the source
    line; the barrier as a ``SyncEvent`` with its fence flags."""
    counter.salt = os.getpid()  # compile here, whatever the cache holds
    clsim.run(scale_and_flag, (32,), (8,), _args(), count_stores=True)
    accesses = {(e.buffer, e.kind, e.space) for e in counter.events
                if isinstance(e, AccessEvent)}
    assert accesses == {("x", "load", "global"), ("tile", "store", "local"),
                        ("tile", "load", "local"), ("y", "store", "global"),
                        ("flags", "store", "global")}
    store_y = next(e for e in counter.events
                   if isinstance(e, AccessEvent) and e.buffer == "y")
    assert store_y.site.text == "y[i] = tile[lid] * 2.0"
    assert store_y.site.where.startswith("test_checks_plugin.py:")
    assert (store_y.width, store_y.lanes, store_y.lid, store_y.storage) == (1, ONE_ITEM, "_lid",
                                                                            "param")
    syncs = [e for e in counter.events if isinstance(e, SyncEvent)]
    assert [(e.kind, e.site.kind) for e in syncs] == [("barrier", "barrier")]


def test_third_instrument_off_and_with_the_checks(counter):
    """Off, its result is its default; on together with the race checks, both work (the
    registry order chains their index wrappers) and a race is still found."""
    assert clsim.run(scale_and_flag, (32,), (8,), _args()).store_counts == {}
    result = clsim.run(scale_and_flag, (32,), (8,), _args(), count_stores=True, checks="all")
    assert result.store_counts == {"y": 29, "flags": 8} and result.findings == []

    @kernel
    def racy(y):
        y[0] = get_global_id(0)

    with pytest.raises(clsim.DataRaceError):
        clsim.run(racy, (4,), (4,), (np.zeros(1, np.int32),), count_stores=True,
                  checks="all")


def test_unknown_option_without_the_instrument():
    """Without the registry entry, ``run()`` knows nothing of its option."""
    with pytest.raises(InvalidArgumentError, match="count_stores"):
        clsim.run(scale_and_flag, (32,), (8,), _args(), count_stores=True)
