"""Race, uninitialised-read and memory-safety checks, compiled into kernels as an instrument.

``clsim.run(kernel, ..., checks="all")`` (or "races", "uninit") turns them on; bounds checks
and barrier divergence are the engine's own and stay on unless ``checks="none"``. By default
the first finding raises (``clsim.DataRaceError`` / ``clsim.UninitializedReadError``);
``report_all=True`` collects every finding, one per (category, site pair), into
``result.findings``; ``uninit="warn"`` records uninitialised reads instead of raising.

``layout`` fixes the shadow-memory layout, ``shadow`` and ``replay`` generate the in-kernel
helpers, ``native`` puts them in modules compiled once per machine (``native_lib`` and the C
entry points' ``native_entry``, generated) with ``pointers`` to reach state by address, ``analysis`` reads the kernel's source,
``instrument`` holds the compiler hooks, ``state`` the run-time arrays, ``parallel`` the
threaded launch, ``findings`` the records, messages and exceptions.
docs/checks.md explains the model (what orders what) and its limits.
"""

from clsim.checks.findings import Finding, SiteRef, WorkItem
from clsim.checks.instrument import ChecksInstrument
from clsim.checks.state import UninitializedReadWarning

__all__ = ["ChecksInstrument", "Finding", "SiteRef", "UninitializedReadWarning", "WorkItem"]
