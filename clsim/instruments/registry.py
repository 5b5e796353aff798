"""The instruments ``run()`` knows, in one explicit list, and what the runtime reads from them.

The order of ``INSTRUMENTS`` is the order their hooks run in and their state arrays are
passed. ``options()``, ``decoders()`` and ``result_defaults()`` collect the declarations, so
``run()`` accepts, decodes and reports an instrument without naming it anywhere else.
"""

from __future__ import annotations

from clsim.checks.instrument import ChecksInstrument
from clsim.compiler.collective_emit import ReductionOrder
from clsim.instruments.base import Instrument
from clsim.traffic.instrument import TrafficInstrument

INSTRUMENTS: tuple[type[Instrument], ...] = (ReductionOrder, ChecksInstrument, TrafficInstrument)


def options() -> dict[str, object]:
    """Every instrument option ``run()`` accepts, with its default."""
    out: dict[str, object] = {}
    for cls in INSTRUMENTS:
        out.update(cls.options)
    return out


def decoders() -> dict:
    """Error code -> decoder, over every instrument."""
    out: dict = {}
    for cls in INSTRUMENTS:
        out.update(cls.decoders)
    return out


def result_defaults() -> dict:
    """``RunResult`` attribute -> its value when the instrument filling it is off."""
    return {cls.result: cls.result_default() for cls in INSTRUMENTS if cls.result}


def build(config) -> list[Instrument]:
    """The instruments the launch configuration enables, in registry order."""
    return [inst for cls in INSTRUMENTS if (inst := cls.create(config)) is not None]
