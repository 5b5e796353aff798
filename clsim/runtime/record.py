"""The two tables a compiled kernel shares with the runtime: the error record and the site table.

A generated kernel reports a problem by writing integers into a row of ``int64`` (the *error
record*) and leaving the group; the runtime turns that row into an exception. It names program
points by an integer too: an index into the *site table*, which the compiler builds and the
generated module carries as ``_SITES``. Both layouts are defined here, once: the code generator
writes ``_err[{CODE}]`` with these constants, helper sources are formatted with them, and the
Python side reads records through ``ErrorRecord`` and sites through ``Site``.

This module holds layouts and codes only; messages are ``clsim.runtime.decode``'s (engine
errors) and each instrument's own decoders (``Instrument.decoders``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

# -- error record fields (indices into the int64 row) ---------------------------------------------
CODE = 0  # error code below; 0 = no error
SITE = 1  # site-table id of the access, barrier or branch
INDEX = 2  # the offending index (or lane, local id)
LENGTH = 3  # the length it was checked against
LID = 4  # local linear id of the work-item that failed
COUNT_A = 5  # first count (work-items taking a branch, reaching a barrier...)
COUNT_B = 6  # second count (those that did not)
GROUP_X, GROUP_Y, GROUP_Z = 7, 8, 9  # the work-group (written by the launcher)
OTHER_LID = 10  # a second work-item the message names (e.g. the first that took the branch)
SIZE_X, SIZE_Y, SIZE_Z = 11, 12, 13  # the group's actual size (written by the launcher)
SUBGROUP = 14  # sub-group id, -1 for a work-group collective
DIM = 15  # dimension of a work_group_broadcast local id
FIELDS = 16

GROUP = (GROUP_X, GROUP_Y, GROUP_Z)
GROUP_SIZE = (SIZE_X, SIZE_Y, SIZE_Z)

# -- engine error codes (instruments use INSTRUMENT_CODES and up) -------------------------------
OOB_LOAD = 1
OOB_STORE = 2
DIVERGENT_BRANCH = 3  # the condition of an if/while around a barrier differs within a group
EXIT_BEFORE_BARRIER = 4
DIV_ZERO = 5
SUBGROUP_ERROR = 6
COLLECTIVE_DIVERGENCE = 7
SG_BRANCH = 8  # condition around a sub-group collective differs within a sub-group
SG_PARTIAL = 9  # a collective reached by some lanes of a sub-group (others returned)
SG_NONUNIFORM_ARG = 10  # broadcast lane / work_group_broadcast id differs between lanes
SG_RANGE = 11  # lane, shuffle source or local id out of range
WG_PARTIAL = 12  # a work-group collective reached by some work-items (others returned)
OOB_ATOMIC = 13  # atomic update outside a buffer or local array
MISALIGNED = 14  # an access through a view at a byte offset it is not aligned to
# through a view: INDEX the byte offset, LENGTH the last start + 1, COUNT_A the access's bytes
OOB_VIEW_LOAD = 15
OOB_VIEW_STORE = 16
# an image read (CLK_ADDRESS_NONE, no sampler) or write outside the image: INDEX x, LENGTH
# the width, COUNT_A y, COUNT_B the height (clsim.compiler.builtins.images)
OOB_IMAGE_READ = 17
OOB_IMAGE_WRITE = 18
# the range of a barrier loop differs within a group: INDEX which range() argument, COUNT_A
# the value of work-item OTHER_LID (the first), COUNT_B that of LID
DIVERGENT_RANGE = 19
INSTRUMENT_CODES = 20  # codes from here on belong to instruments (their ``decoders``)
# not an error: a lane-major region's range check failed in a group that had not yet written
# anything outside itself, which stopped there; the launcher runs that group again as plain
# Python, whose usual form reports the first failing work-item (clsim.compiler.lane_emit)
RERUN_GROUP = -1
# not an error either: a lane-major region of a checked (instrumented) JIT module failed its
# range check; the instruments' state has seen part of the launch, so clsim.runtime.launch
# undoes the launch and runs it again with the module that keeps the usual forms
REPLAY_LAUNCH = -2


class ReplayLaunch(Exception):
    """A group stopped with REPLAY_LAUNCH (control flow inside clsim.run, never raised to a
    caller); it carries the seconds the launch spent compiling and running, which the launch
    run again adds to its own."""

    compile_s = 0.0
    elapsed_s = 0.0


def fields() -> dict[str, int]:
    """Every integer constant of this module by name."""
    return {k: v for k, v in globals().items() if k.isupper() and isinstance(v, int)}


def fill(source: str) -> str:
    """Helper source with its ``{CODE}``, ``{LID}``, ``{OOB_LOAD}``... placeholders replaced by
    this module's values; other braces are left alone."""
    for name, value in fields().items():
        source = source.replace("{" + name + "}", str(value))
    return source


@dataclass(frozen=True)
class ErrorRecord:
    """An error record read back from a generated kernel, field by field."""

    code: int
    site: int
    index: int
    length: int
    lid: int
    count_a: int
    count_b: int
    group: tuple[int, int, int]
    other_lid: int
    group_size: tuple[int, int, int]
    subgroup: int
    dim: int

    @classmethod
    def from_row(cls, row) -> ErrorRecord:
        v = [int(x) for x in row[:FIELDS]]
        return cls(v[CODE], v[SITE], v[INDEX], v[LENGTH], v[LID], v[COUNT_A], v[COUNT_B],
                   tuple(v[i] for i in GROUP), v[OTHER_LID], tuple(v[i] for i in GROUP_SIZE),
                   v[SUBGROUP], v[DIM])


# -- site table -----------------------------------------------------------------------------------
class Site(NamedTuple):
    """A static program point the runtime may need to name: an access, a barrier, a branch.

    A NamedTuple so the generated module can carry the table as plain tuples (``_SITES``) and
    the runtime reads them by name (``Site(*row)``).
    """

    id: int
    file: str
    line: int
    func: str
    text: str
    buffer: str
    kind: str  # load, store, atomic, barrier, if, while, arith, or an instrument's own kind
    space: str  # global, constant, local, private, or "none" for non-accesses
    dtype: str
    width: int = 1  # elements per access (vloadN: N)

    @property
    def where(self) -> str:
        """``file.py:line in func``, as messages print it."""
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line} in {self.func}"


def site_table(rows) -> tuple[Site, ...]:
    """The site table of a generated module (``module._SITES``) as ``Site`` records."""
    return tuple(row if isinstance(row, Site) else Site(*row) for row in rows)
