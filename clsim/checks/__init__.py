"""Race, uninitialised-read and memory-safety checks, compiled into kernels as an instrument.

``clsim.run(kernel, ..., checks="all")`` (or "races", "uninit") turns them on; bounds checks
and barrier divergence are the engine's own and stay on unless ``checks="none"``. By default
the first finding raises (``clsim.DataRaceError`` / ``clsim.UninitializedReadError``);
``report_all=True`` collects every finding, one per (category, site pair), into
``result.findings``; ``uninit="warn"`` records uninitialised reads instead of raising.

``layout`` fixes the shadow-memory layout, ``shadow`` and ``replay`` generate the in-kernel
helpers, ``analysis`` reads the kernel's source, ``instrument`` holds the compiler hooks,
``state`` the run-time arrays, ``findings`` the records, messages and exceptions.
docs/checks.md explains the model (what orders what) and its limits.
"""

from clsim.checks import layout, replay
from clsim.checks.findings import Finding, SiteRef, WorkItem, from_record
from clsim.checks.instrument import ChecksInstrument, factory
from clsim.checks.state import UninitializedReadWarning
from clsim.compiler.instrument import register_instrument
from clsim.errors import SimulationError
from clsim.runtime import decode as _decode

replay.register()
register_instrument("checks", factory)


def _decoder(record, sites, kernel, enqueued, offset, work_dim):
    return from_record(record, sites, kernel, enqueued, offset, work_dim).error()


def _epochs(record, sites, kernel, enqueued, offset, work_dim):
    site = sites[int(record[1])]
    return SimulationError(
        f"{site[1].rsplit('/', 1)[-1]}:{site[2]} in {site[3]}: a work-group ran more barriers "
        "than the race checks can count in this launch. Launch fewer, larger work-groups or "
        "run with checks='default'", kernel=kernel, file=site[1], line=site[2])


for _category in (layout.CAT_RACE, layout.CAT_UNINIT):
    _decode.DECODERS[layout.ERR_BASE + _category] = _decoder
_decode.DECODERS[layout.ERR_EPOCHS] = _epochs

__all__ = ["ChecksInstrument", "Finding", "SiteRef", "UninitializedReadWarning", "WorkItem",
           "factory"]
