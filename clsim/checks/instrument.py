"""The ``checks`` instrument: compiles race and uninitialised-read tracking into kernels.

At compile time it names every memory object the kernel can touch (buffer parameters, local
arrays, private arrays) in the site table (sites of kind "shadow", so a cached module carries
its own object list), wraps every index of every access in a recording helper, and counts
barriers. At run time it sizes the shadow memory from the actual buffers, decides per object
which records are needed (a buffer that is only read needs none), and turns the findings table
into ``result.findings``. Detection logic lives in ``shadow``, messages in ``findings``.
"""

from __future__ import annotations

import ast
import math
import types
import warnings

import numpy as np

from clsim.checks import findings as fd
from clsim.checks import layout as ly
from clsim.checks.shadow import FAST, RECORDERS
from clsim.compiler import ctypes as ct
from clsim.compiler.frontend import Loc
from clsim.compiler.instrument import Instrument, LaunchInfo
from clsim.errors import InvalidArgumentError

LAYOUT_VERSION = 1
_NOT_ACCESSES = {"shadow", "barrier", "if", "while", "arith", "for", ""}


class UninitializedReadWarning(UserWarning):
    """Uninitialised reads found with ``uninit="warn"`` (listed in ``result.findings``)."""


class ChecksInstrument(Instrument):
    """Race and uninitialised-read detection over shadow memory (serial groups)."""

    name = "checks"
    parallel_safe = False

    def __init__(self, races: bool, uninit: bool, raise_race: bool, raise_uninit: bool):
        self.races = races
        self.uninit = uninit
        self.raise_race = raise_race
        self.raise_uninit = raise_uninit
        self._objs: dict[str, tuple[int, ct.ArrayT, str]] = {}
        self._nodes: list = []  # keeps the declaration stand-ins alive while sites refer to them

    # -- compile time -----------------------------------------------------------------------
    def state_args(self) -> list[str]:
        return list(ly.STATE_ARGS)

    def key(self) -> tuple:
        return (self.name, LAYOUT_VERSION)

    def group_start(self, gen) -> None:
        module = gen.module
        program = module.program
        found = [(n, t, "param") for n, t in program.arg_types.items()
                 if isinstance(t, ct.ArrayT)]
        found += [(n, gen.env[n], k) for n, k in sorted(gen.storage.items())
                  if k in ("larray", "parray")]
        decls = _declarations(program.parsed.tree)
        for number, (name, t, kind) in enumerate(found):
            shape = tuple(t.shape or ())
            loc = decls.get(name, program.parsed.tree.loc)
            node = types.SimpleNamespace(loc=Loc(loc.file, loc.line, loc.func,
                                                 ",".join(map(str, shape))))
            self._nodes.append(node)
            module.site(node, name, "shadow", t.space, t.dtype, width=math.prod(shape))
            self._objs[name] = (number, t, kind)
        now = f"_cs_m[{ly.M_NOW}]"
        lines = [f"{now} = ((_gx + _NG0 * (_gy + _NG1 * _gz)) << _cs_m[{ly.M_EPOCH_BITS}]) + 1"]
        lines += [f"_cs_m[{slot}] = {now}" for slot in (ly.M_GSTART, ly.M_LAST_LOCAL,
                                                      ly.M_LAST_GLOBAL, ly.M_LAST_SUB)]
        for slot, code in zip((ly.M_GX, ly.M_GY, ly.M_GZ, ly.M_L0, ly.M_L1, ly.M_L2),
                              ("_gx", "_gy", "_gz", "_L0", "_L1", "_L2"), strict=True):
            lines.append(f"_cs_m[{slot}] = {code}")
        for name, (number, _t, kind) in self._objs.items():
            if kind != "param":
                array = f"v_{name}__c" if kind == "parray" else f"v_{name}"
                lines.append(f"_cs_o[{number}, {ly.O_ADDR}] = np.int64({array}.ctypes.data)")
        gen.emit("\n".join(lines))

    def barrier(self, gen, stmt, site: int, flags: str) -> None:
        gen.emit(self._tick(site) + f"\n_cs_fl = np.int64({flags})\n"
                 f"if _cs_fl & 1:\n    _cs_m[{ly.M_LAST_LOCAL}] = _cs_m[{ly.M_NOW}]\n"
                 f"if _cs_fl & 2:\n    _cs_m[{ly.M_LAST_GLOBAL}] = _cs_m[{ly.M_NOW}]")

    def subgroup_barrier(self, gen, stmt, site: int) -> None:
        gen.emit(self._tick(site) + f"\n_cs_m[{ly.M_LAST_SUB}] = _cs_m[{ly.M_NOW}]")

    @staticmethod
    def _tick(site: int) -> str:
        """Advance the epoch; stop the group when its epochs would spill into the group bits."""
        now, start, bits = (f"_cs_m[{ly.M_NOW}]", f"_cs_m[{ly.M_GSTART}]",
                            f"_cs_m[{ly.M_EPOCH_BITS}]")
        return (f"{now} += 1\nif ({now} >> {bits}) != ({start} >> {bits}):\n"
                f"    _err[0] = {ly.ERR_EPOCHS}\n    _err[1] = {site}\n    return")

    def region_end(self, gen) -> None:
        gen.emit(f"if _cs_m[{ly.M_NPEND}] != 0:\n    {gen.helper('_cs_flush')}(_cs_m, _cs_f)")

    def access(self, gen, site: int, buffer: str, arrt, codes: list[str], kind: str,
               atomic: bool = False) -> list[str]:
        helper = RECORDERS["atomic" if atomic or kind not in ("load", "store") else kind]
        width = gen.module.sites[site].width
        base, lead = gen.array_base(buffer, arrt)
        codes = list(codes)
        prefix = _flatten(gen, base, len(lead), arrt, codes)
        lid = gen.lid_code()
        tail = f"{site}, {lid}, {', '.join(ly.STATE_ARGS)}, _err"
        entry = self._objs.get(buffer) if gen.in_group_fn else None
        if entry is not None:
            number, t, storage = entry
            if storage == "parray":
                prefix = f"{lid} * {math.prod(t.shape)} + {prefix}"
            short = helper.removeprefix("_cs_")
            if width == 1 and short in FAST:
                # (t if fast((t := index)) else full(t)): the inlinable common case first
                tmp = gen.fresh("_ct")
                fast = f"{gen.helper(helper + 'f')}(({tmp} := {codes[-1]}), {number}, {prefix}, "
                call = (f"({tmp} if {fast}{tail}) else "
                        f"{gen.helper(helper)}({tmp}, 1, {number}, {prefix}, {tail}))")
            else:
                call = (f"{gen.helper(helper)}({codes[-1]}, {width}, {number}, {prefix}, "
                        f"{tail})")
        else:
            call = f"{gen.helper(helper + 'p')}({codes[-1]}, {width}, {base}, {prefix}, {tail})"
        codes[-1] = call
        gen.checked()
        return codes

    # -- run time ---------------------------------------------------------------------------
    def allocate(self, info: LaunchInfo) -> list:
        nd = info.ndrange
        if len(info.sites) > ly.MAX_SITE:
            raise InvalidArgumentError(
                f"{info.kernel}: checks support kernels with up to {ly.MAX_SITE} access sites "
                f"(this one has {len(info.sites)}); run it with checks='default'")
        if nd.group_items > ly.MAX_LID + 1:
            raise InvalidArgumentError(
                f"{info.kernel}: checks support work-groups of up to {ly.MAX_LID + 1} "
                "work-items; run with a smaller local size or checks='default'")
        objs = fd.objects(info.sites)
        table = np.zeros((max(len(objs), 1), ly.OBJ_COLS), np.int64)
        usage = _usage(info.sites, objs, info.kernel)
        lengths, shared = self._placement(info, objs, table)
        for k in range(len(objs)):  # aliased buffers share one shadow: unite their usage
            usage[shared[k]] |= usage[k]
        total = 1
        for k, obj in enumerate(objs):
            mode = self._mode(obj[7], usage[shared[k]])
            table[k, ly.O_MODE] = mode
            if shared[k] != k:
                table[k, ly.O_W:ly.O_AX + 1] = table[shared[k], ly.O_W:ly.O_AX + 1]
                continue
            for col, need in _records(mode):
                if need:
                    table[k, col] = total
                    total += lengths[k]
        group_bits = max(1, (nd.total_groups - 1).bit_length())
        if ly.STAMP_BITS - group_bits < ly.MIN_EPOCH_BITS:
            raise InvalidArgumentError(
                f"{info.kernel}: checks support up to 2**{ly.STAMP_BITS - ly.MIN_EPOCH_BITS} "
                f"work-groups per launch (this one has {nd.total_groups}); use larger groups "
                "or checks='default'")
        meta = np.zeros(ly.META_SIZE, np.int64)
        meta[ly.M_EPOCH_BITS] = ly.STAMP_BITS - group_bits
        meta[ly.M_SG_SIZE] = info.subgroup_size
        meta[ly.M_RAISE_RACE] = self.raise_race
        meta[ly.M_RAISE_UNINIT] = self.raise_uninit
        meta[ly.M_G0], meta[ly.M_G1] = nd.global_size[0], nd.global_size[1]
        found = np.zeros((ly.MAX_FINDINGS + ly.PENDING, ly.FIND_COLS), np.int64)
        return [meta, table, np.zeros(total, np.int64), found]

    def _mode(self, space: str, use: int) -> int:
        load, store, atom = use & 1, use & 2, use & 4
        mode = 0
        if self.races and space != "private":
            if store:
                mode |= ly.MB_W | ly.MB_RACE
            if load and (store or atom):
                mode |= ly.MB_R | ly.MB_RACE
            if atom and (load or store):
                mode |= ly.MB_A | ly.MB_RACE
            if mode and space != "local":
                mode |= ly.MB_CROSS
        if self.uninit and space in ("local", "private"):
            mode |= ly.MB_W | ly.MB_UNINIT | (ly.MB_A if atom else 0)
        return mode

    @staticmethod
    def _placement(info: LaunchInfo, objs, table) -> tuple[list[int], list[int]]:
        """Element counts per object; which object's shadow each one shares (aliased buffers)."""
        values = dict(zip(info.params, info.values, strict=True))
        lanes = info.ndrange.group_items
        lengths, shared, seen = [], [], {}
        for k, obj in enumerate(objs):
            name, space, width = obj[5], obj[7], int(obj[9])
            item = np.dtype(obj[8]).itemsize
            table[k, ly.O_ITEM] = item
            if name in values and isinstance(values[name], np.ndarray):
                value = values[name]
                lengths.append(value.size)
                table[k, ly.O_ADDR] = value.ctypes.data
                table[k, ly.O_NBYTES] = value.nbytes
                shared.append(seen.setdefault((value.ctypes.data, value.nbytes), k))
                continue
            count = width * lanes if space == "private" else width
            lengths.append(count)
            table[k, ly.O_NBYTES] = count * item
            shared.append(k)
        return lengths, shared

    def finalize(self, info: LaunchInfo, state: list, result) -> None:
        meta, found = state[0], state[3]
        nd = info.ndrange
        rows = found[: int(meta[ly.M_NFIND])]
        for row in rows:
            result.findings.append(fd.from_record(
                row, info.sites, info.kernel, nd.local_size, nd.offset, nd.work_dim,
                count=int(row[ly.F_COUNT])))
        uninit = [f for f in result.findings if f.category == "uninit"]
        if uninit and not self.raise_uninit:
            warnings.warn(UninitializedReadWarning(
                f"{info.kernel}: {len(uninit)} uninitialised-read site(s); the first: "
                f"{uninit[0].message}"), stacklevel=3)
        if meta[ly.M_OVERFLOW]:
            warnings.warn(f"{info.kernel}: {int(meta[ly.M_OVERFLOW])} finding occurrences were "
                          f"not examined (more than {ly.MAX_FINDINGS} distinct findings, or "
                          f"more than {ly.PENDING} in one work-item loop)", stacklevel=3)


def _records(mode: int):
    cross = bool(mode & ly.MB_CROSS)
    r, a = bool(mode & ly.MB_R), bool(mode & ly.MB_A)
    return ((ly.O_W, bool(mode & ly.MB_W)), (ly.O_R1, r), (ly.O_R2, r), (ly.O_RX, r and cross),
            (ly.O_A1, a), (ly.O_A2, a), (ly.O_AX, a and cross))


def _usage(sites, objs, kernel: str) -> list[int]:
    """Per object: bit 1 loaded, 2 stored, 4 atomically accessed (from the access sites).

    An access in a helper function names the helper's parameter, not the object, so it counts
    for every object of its address space: over-approximating only costs time.
    """
    by_name = {obj[5]: k for k, obj in enumerate(objs)}
    usage = [0] * len(objs)
    for site in sites:
        kind, buffer, func, space = site[6], site[5], site[3], site[7]
        if kind in _NOT_ACCESSES or not buffer:
            continue
        bits = {"load": 1, "store": 2}.get(kind, 7)
        targets = [by_name[buffer]] if buffer in by_name else []
        if func != kernel or not targets:
            targets = [k for k, obj in enumerate(objs) if obj[7] == space] + targets
        for k in targets:
            usage[k] |= bits
    return usage


def _flatten(gen, base: str, lead: int, arrt, codes: list[str]) -> str:
    """Bind all but the last index to temporaries (in place) and return the element offset
    they contribute, so the recorder sees one flat element index."""
    if len(codes) == 1:
        return "0"
    shape = arrt.shape
    dims = [str(shape[d]) if shape else f"{base}.shape[{lead + d}]" for d in range(len(codes))]
    offset = "0"
    for d in range(len(codes) - 1):
        tmp = gen.fresh("_cw")
        codes[d] = f"({tmp} := {codes[d]})"
        offset = f"(({offset}) + {tmp}) * {dims[d + 1]}"
    return offset


def _declarations(tree) -> dict[str, Loc]:
    """Where each local/private array of the kernel body is declared."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Call) and hasattr(node, "loc"):
                out.setdefault(node.targets[0].id, node.loc)
    return out


def factory(options: dict) -> ChecksInstrument | None:
    """The instrument for ``run(..., checks=..., uninit=..., report_all=...)``, or None."""
    mode = options.get("checks", "default")
    uninit_opt = options.get("uninit")
    races = mode in ("all", "races")
    uninit = mode in ("all", "uninit")
    if uninit_opt not in (None, "raise", "warn"):
        raise InvalidArgumentError(f"run(): uninit={uninit_opt!r}; use 'raise' or 'warn'")
    if uninit_opt == "warn":
        if mode in ("none", "bounds"):
            raise InvalidArgumentError(
                f"run(): uninit='warn' asks for uninitialised-read checks but checks={mode!r} "
                "turns them off; use checks='default', 'uninit' or 'all'")
        uninit = True
    if not (races or uninit):
        return None
    collect = bool(options.get("report_all"))
    return ChecksInstrument(races, uninit, raise_race=not collect,
                            raise_uninit=not collect and uninit_opt != "warn")
