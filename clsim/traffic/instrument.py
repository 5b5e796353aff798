"""The traffic instrument: counts memory traffic and arithmetic inside simulated launches.

``clsim.run(..., traffic=True)`` compiles this instrument into the kernel and fills
``result.traffic`` with a ``TrafficReport`` (docs/traffic-model.md states the rules):

* per global/constant/local access site: lane executions, bytes, and per *step* (the lanes of
  one sub-group running their k-th execution of the site in one pass of a work-item loop) the
  distinct sectors and lines (global) or the bank-conflict replays (local);
* distinct elements read and written per global buffer (the unique footprint);
* arithmetic operations by kind, per work-item.

How: the index of every counted access is wrapped in a helper (``clsim.traffic.helpers``)
that records the lane's byte address and returns the index unchanged, so results cannot
change. The work-item loop runs a group's lanes in order, so after each loop every step is
complete; ``clsim.traffic.steps.end`` counts them then. Each Numba thread counts in its own
arena row (``clsim.traffic.layout``), so groups still run in parallel. This module holds the
compile-time hooks; ``arena`` builds and reads the state, ``counting`` and ``model`` hold the
rules and records.

Options of ``run()``: ``simd_width`` (steps of that many lanes instead of the sub-group size)
and ``profile`` (a name or ``DeviceProfile``: its sector, line and bank figures).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from clsim.errors import InvalidArgumentError
from clsim.instruments.base import Instrument, LaunchInfo
from clsim.profiles import DeviceProfile, load_profile
from clsim.traffic import (
    arena,
    helpers,  # noqa: F401  (registers the helper sources)
)
from clsim.traffic import layout as lay
from clsim.traffic.model import FLOP_KINDS

VERSION = 2  # of the generated code; part of the compile cache key


def _int(gen, value: int) -> str:
    """An int64 module constant. Literal arguments would make Numba compile a helper once per
    distinct value (per site); constants share one compilation and still fold."""
    return gen.const(int(value), "int64")


def _imported(gen, name: str) -> str:
    """A name the generated module imports (thread id, step counter); see imports()."""
    return name


class TrafficInstrument(Instrument):
    """Counts traffic for one run; see the module docstring."""

    name = "traffic"
    options: ClassVar = {"traffic": False, "simd_width": None, "profile": None}
    result = "traffic"

    @classmethod
    def create(cls, config) -> TrafficInstrument | None:
        return cls(config) if config.option("traffic") else None

    def imports(self) -> list[str]:
        return ["from numba import get_thread_id as _tr_thread",
                "from clsim.traffic.steps import end as _tr_end"]

    def __init__(self, config):
        simd = config.option("simd_width") or config.subgroup_size
        if not 1 <= int(simd) <= 1024:
            raise InvalidArgumentError(f"run(): simd_width={simd} must be 1 to 1024")
        profile = config.option("profile") or config.device.profile
        if not isinstance(profile, DeviceProfile):
            profile = load_profile(str(profile))
        self.profile = profile
        self.device = arena.Device(int(simd), profile.sector_bytes, profile.line_bytes,
                                   profile.local_banks, profile.local_bank_width_bytes)

    # -- compile time -----------------------------------------------------------------------
    def state_args(self) -> list[str]:
        return ["_trTT", "_trM"]

    def key(self) -> tuple:
        return (self.name, VERSION, self.device.simd_width)

    def group_start(self, gen) -> None:
        gen.emit(f"_trT = _trTT[{_imported(gen, '_tr_thread')}()]\n"
                 f"{_imported(gen, '_tr_end')}(_trT)\n_trT[{lay.C_SP}] = 0")
        # Operation counters of work-item code, in registers until the end of each loop.
        gen.emit("\n".join(f"_trF{k} = 0" for k in range(len(FLOP_KINDS))))
        # First flag and element count of each buffer argument, read once per group.
        for p, t in enumerate(gen.module.program.arg_types.values()):
            if getattr(t, "space", None) in ("global", "constant"):
                b = f"_trT[{lay.C_B0}] + {_int(gen, p * lay.B_COLS)}"
                gen.emit(f"_trO{p} = _trT[{b}]\n_trZ{p} = _trT[{b} + 2]")

    def region_end(self, gen) -> None:
        for k in range(len(FLOP_KINDS)):
            gen.emit(f"_trT[{lay.C_FLOPS + k}] += _trF{k}\n_trF{k} = 0")
        gen.emit(f"{_imported(gen, '_tr_end')}(_trT)")

    def access(self, gen, site: int, buffer: str, arrt, codes: list[str], kind: str,
               atomic: bool = False) -> list[str]:
        info = gen.module.sites[site]
        if info.space not in arena.COUNTED_SPACES or not codes:
            return codes
        lane = self._lane(gen, arena.counted_slots(gen.module.sites)[site])
        isz = _int(gen, np.dtype(arrt.dtype).itemsize)
        if info.space == "local":
            return self._local(gen, lane, arrt, codes, isz)
        flags = self._flags(gen, buffer, arrt)
        if info.width > 1:  # vloadN / vstoreN
            rw = 0 if kind == "load" else 1
            call = f"{gen.helper('_tr_gv')}({self._arena(gen)}, _trM, {lane}, {flags}"
            return [*codes[:-1], f"{call}, {codes[-1]}, {isz}, {_int(gen, info.width)}, "
                                 f"{_int(gen, rw)})"]
        helper = "_tr_grw" if atomic else ("_tr_gr" if kind == "load" else "_tr_gw")
        call = f"{gen.helper(helper)}({self._arena(gen)}, _trM, {lane}, {flags}"
        return [*codes[:-1], f"{call}, {codes[-1]}, {isz})"]

    def flop(self, gen, kind: str, dtype: str) -> None:
        """One operation per work-item: work-item code of the kernel body counts in a local
        (added to the arena after each work-item loop), helper functions in the arena.
        Group-level (hoisted, uniform) code runs once for the group but stands for every
        work-item's copy, so it adds ``_NL``."""
        if kind not in FLOP_KINDS:
            return
        k = FLOP_KINDS.index(kind)
        if gen.in_group_fn and gen.in_wi:
            gen.emit(f"_trF{k} += 1")
        elif gen.in_group_fn:
            gen.emit(f"_trT[{lay.C_FLOPS + k}] += _NL")
        else:
            gen.emit(f"_trTT[{_imported(gen, '_tr_thread')}(), {lay.C_FLOPS + k}] += 1")

    @staticmethod
    def _arena(gen) -> str:
        """This thread's arena row: bound once per group in the group function, looked up in
        helper functions (which only receive the launch-level state)."""
        if gen.in_group_fn:
            return "_trT"
        return f"_trTT[{_imported(gen, '_tr_thread')}()]"

    def _lane(self, gen, slot: int) -> str:
        """Arguments naming the slot and the lane: slot, slot x sub-groups + the lane's
        sub-group, lane, SIMD width. Local size and SIMD width are compiled in, so the
        sub-group costs a shift or a multiply."""
        local = gen.module.program.local_size
        simd = self.device.simd_width
        nsg = -(-(local[0] * local[1] * local[2]) // simd)
        lid = gen.lid_code()
        return (f"{_int(gen, slot)}, {_int(gen, slot * nsg)} + {lid} // {simd}, {lid}, "
                f"{_int(gen, simd)}")

    def _flags(self, gen, buffer: str, arrt) -> str:
        """The buffer's first flag in M and its element count. In the kernel body the buffer
        is an argument known by name; inside helper functions, whose parameters are renamed,
        it is found by data pointer."""
        params = list(gen.module.program.arg_types)
        if gen.in_group_fn and gen.storage.get(buffer) == "param" and buffer in params:
            p = params.index(buffer)
            return f"_trO{p}, _trZ{p}"
        row = self._arena(gen)
        base, _ = gen.array_base(buffer, arrt)
        b = f"{row}[{lay.C_B0}] + {lay.B_COLS} * {gen.helper('_tr_param')}({row}, {base})"
        return f"{row}[{b}], {row}[{b} + 2]"

    def _local(self, gen, lane: str, arrt, codes: list[str], isz: str) -> list[str]:
        row = self._arena(gen)
        if len(codes) == 1:
            return [f"{gen.helper('_tr_l')}({row}, {lane}, {codes[0]}, {isz})"]
        # Several indices: fold the leading ones into a partial linear index (helpers.py).
        shape = arrt.shape or (0,) * len(codes)
        out = [f"{gen.helper('_tr_i0')}({row}, {codes[0]})"]
        for dim, code in zip(shape[1:-1], codes[1:-1], strict=True):
            out.append(f"{gen.helper('_tr_i1')}({row}, {code}, {_int(gen, dim)})")
        out.append(f"{gen.helper('_tr_lm')}({row}, {lane}, {codes[-1]}, {_int(gen, shape[-1])}, "
                   f"{isz})")
        return out

    # -- run time ---------------------------------------------------------------------------
    def allocate(self, info: LaunchInfo) -> list:
        return arena.build(info, self.device)

    def finalize(self, info: LaunchInfo, state: list, result):
        return arena.read(info, state, self.device)
