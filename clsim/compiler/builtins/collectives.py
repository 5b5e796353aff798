"""Collectives: sub-group and work-group reductions, scans, broadcasts, votes, shuffles and
ballots (``cl_khr_subgroups``, the ``cl_khr_subgroup_*`` extensions, OpenCL 2.0 work-group
functions), plus ``sub_group_barrier``.

Every collective is a cut point ("sub" or "work"); ``Collective`` describes the arguments the
normaliser (``clsim.compiler.collectives``) moves into context arrays, and
``clsim.compiler.collective_emit`` writes the code at the cut. The ballot readers are plain
per-lane expressions. The sub-group entries also carry the helpers of the masked control flow
around them (``_cg_mask_check``).
"""

from __future__ import annotations

from dataclasses import dataclass

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.collective_emit import SUB, WORK, emit_collective
from clsim.compiler.collective_helpers import HELPERS
from clsim.compiler.diagnostics import node_error

FAMILY = "collectives"
FOLDS = ("add", "min", "max")


@dataclass(frozen=True)
class Collective:
    """One collective builtin. ``args``: per argument, "value" (any scalar, moved to a context
    array), "index" (an integer, moved to a context array as int64) or "const" (a compile-time
    integer left in place). ``optional`` trailing arguments may be omitted."""

    name: str
    scope: str
    kind: str  # reduce, scan, xscan, clustered, broadcast, any, all, shuffle, shuffle_xor,
    #            shuffle_up, shuffle_down, ballot, barrier
    op: str = ""
    args: tuple[str, ...] = ("value",)
    optional: int = 0


def _table() -> dict[str, Collective]:
    rows = [Collective("sub_group_barrier", SUB, "barrier", args=("const", "const"), optional=1)]
    for op in FOLDS:
        rows += [
            Collective(f"sub_group_reduce_{op}", SUB, "reduce", op),
            Collective(f"sub_group_scan_inclusive_{op}", SUB, "scan", op),
            Collective(f"sub_group_scan_exclusive_{op}", SUB, "xscan", op),
            Collective(f"sub_group_clustered_reduce_{op}", SUB, "clustered", op,
                       ("value", "const")),
            Collective(f"work_group_reduce_{op}", WORK, "reduce", op),
            Collective(f"work_group_scan_inclusive_{op}", WORK, "scan", op),
            Collective(f"work_group_scan_exclusive_{op}", WORK, "xscan", op),
        ]
    rows += [
        Collective("sub_group_broadcast", SUB, "broadcast", args=("value", "index")),
        Collective("work_group_broadcast", WORK, "broadcast",
                   args=("value", "index", "index", "index"), optional=2),
        Collective("sub_group_any", SUB, "any"),
        Collective("sub_group_all", SUB, "all"),
        Collective("work_group_any", WORK, "any"),
        Collective("work_group_all", WORK, "all"),
        Collective("sub_group_ballot", SUB, "ballot"),
    ]
    for kind in ("shuffle", "shuffle_xor", "shuffle_up", "shuffle_down"):
        rows.append(Collective(f"sub_group_{kind}", SUB, kind, args=("value", "index")))
    return {row.name: row for row in rows}


COLLECTIVES = _table()

# -- typing -------------------------------------------------------------------------------------
def _scalar(t, name, call, what="value"):
    if not ct.is_scalar(t) or t == "bool":
        raise node_error(call, f"{name}() takes a scalar number as its {what}, got "
                                 f"{ct.short(t)}")
    return t


def _collective_rule(c: Collective):
    def rule(types, call):
        lo, hi = len(c.args) - c.optional, len(c.args)
        if not lo <= len(types) <= hi:
            count = str(hi) if lo == hi else f"{lo} to {hi}"
            raise node_error(call, f"{c.name}() takes {count} arguments, got {len(types)}")
        if c.kind == "barrier":
            return None
        for kind, t in zip(c.args, types, strict=False):
            if kind == "index" and not ct.is_int(t):
                raise node_error(call, f"{c.name}(): the lane/id argument must be an integer, "
                                         f"got {ct.short(t)}")
        t = _scalar(types[0], c.name, call)
        if c.kind in ("any", "all"):
            return "int32"
        if c.kind == "ballot":
            return ct.VecT("uint32", 4)
        return t

    return rule


def _cvt_rule(index: bool):
    def rule(types, call):
        t = types[0]
        if not ct.is_scalar(t):
            raise node_error(call, f"collectives take scalars, got {ct.short(t)}")
        if index:
            if not ct.is_int(ct.promote(t)):
                raise node_error(call, f"a lane or id must be an integer, got {t}")
            return "int64"
        return "int32" if t == "bool" else t

    return rule


def _cvt_emit(gen, codes, types, call):
    return gen.cast(codes[0], types[0], call.ctype)


def _vec_arg(name, types, call, extra=0):
    ok = (len(types) == 1 + extra and isinstance(types[0], ct.VecT) and types[0].width == 4
          and all(ct.is_int(t) for t in types[1:]))
    if not ok:
        raise node_error(call, f"{name}() takes the uint4 from sub_group_ballot"
                              + (" and an integer index" if extra else ""))


def _ballot_rule(name, result, extra=0):
    def rule(types, call):
        _vec_arg(name, types, call, extra)
        return result

    return rule


def _lane(gen):
    return f"np.int64(_lid % {gen.module.subgroup_size})"


_BALLOT_EMIT = {
    "sub_group_ballot_bit_count": lambda g, a, t, n: g.helper("_bal_count") + f"({a[0]})",
    "sub_group_ballot_bit_extract": lambda g, a, t, n: g.helper("_bal_extract")
    + f"({a[0]}, {g.cast(a[1], t[1], 'int64')})",
    "sub_group_ballot_inclusive_scan": lambda g, a, t, n: g.helper("_bal_prefix")
    + f"({a[0]}, {_lane(g)}, True)",
    "sub_group_ballot_exclusive_scan": lambda g, a, t, n: g.helper("_bal_prefix")
    + f"({a[0]}, {_lane(g)}, False)",
    "sub_group_ballot_find_lsb": lambda g, a, t, n: g.helper("_bal_lsb") + f"({a[0]})",
    "sub_group_ballot_find_msb": lambda g, a, t, n: g.helper("_bal_msb") + f"({a[0]})",
}
_BALLOT_TYPES = {
    "sub_group_ballot_bit_count": ("uint32", 0),
    "sub_group_ballot_bit_extract": ("int32", 1),
    "sub_group_ballot_inclusive_scan": ("uint32", 0),
    "sub_group_ballot_exclusive_scan": ("uint32", 0),
    "sub_group_ballot_find_lsb": ("uint32", 0),
    "sub_group_ballot_find_msb": ("uint32", 0),
}
_BALLOT_HELPER = {
    "sub_group_ballot_bit_count": "_bal_count", "sub_group_ballot_bit_extract": "_bal_extract",
    "sub_group_ballot_inclusive_scan": "_bal_prefix",
    "sub_group_ballot_exclusive_scan": "_bal_prefix",
    "sub_group_ballot_find_lsb": "_bal_lsb", "sub_group_ballot_find_msb": "_bal_msb",
}


def _helpers(c: Collective) -> tuple:
    names = {"reduce": ["_cg_reduce_{op}", "_cg_reduce_{op}_p"],
             "scan": ["_cg_scan_{op}", "_cg_scan_{op}_p"],
             "xscan": ["_cg_scan_{op}", "_cg_scan_{op}_p"],
             "clustered": ["_cg_clustered_{op}", "_cg_clustered_{op}_p"],
             "broadcast": ["_cg_broadcast" if c.scope == SUB else "_cg_wg_broadcast"],
             "any": ["_cg_vote"], "all": ["_cg_vote"], "ballot": ["_cg_ballot"],
             "shuffle": ["_cg_shuffle"], "shuffle_xor": ["_cg_shuffle"],
             "shuffle_up": ["_cg_shuffle_rel"], "shuffle_down": ["_cg_shuffle_rel"],
             "barrier": []}[c.kind]
    names = [n.format(op=c.op) for n in names] + ["_cg_fail", "_cg_perm"]
    if c.kind == "reduce" and c.op == "add":
        names += ["_cg_reduce_add_tree", "_cg_reduce_add_halfpairs", "_cg_reduce_add_columns"]
    if c.kind in ("scan", "xscan") and c.op == "add":
        names += ["_cg_scan_add_desc"]
    if c.scope == SUB:  # masked.py: the mask check, or under checks="none" the mask summary
        names += ["_cg_mask_check", "_cg_mask_seen"]
    return tuple(HELPERS[n] for n in names)


def _cut(c: Collective):
    def emit_cut(gen, item):
        emit_collective(gen, item, c)

    return emit_cut


def _spelling(c: Collective) -> str:
    extra = {"clustered": ", cluster_size", "broadcast": ", lane" if c.scope == SUB else
             ", lx[, ly[, lz]]", "shuffle": ", lane", "shuffle_xor": ", mask",
             "shuffle_up": ", delta", "shuffle_down": ", delta"}.get(c.kind, "")
    arg = "flags" if c.kind == "barrier" else ("p" if c.kind in ("any", "all", "ballot")
                                               else "x")
    return f"{c.name}({arg}{extra})"


_NOTES = {
    "barrier": "orders the lanes of a sub-group",
    "reduce": "reduction over the {scope}, in lane order (docs/subgroups.md)",
    "scan": "inclusive prefix over the {scope}'s lanes",
    "xscan": "exclusive prefix; the first lane gets the identity",
    "clustered": "reduction within each run of cluster_size lanes (a constant power of two)",
    "broadcast": "the value of one work-item; the id must be uniform",
    "any": "1 if the predicate holds in any lane", "all": "1 if it holds in every lane",
    "ballot": "uint4, bit j set when lane j's predicate holds",
    "shuffle": "lane `lane`'s value; lane < sub-group size",
    "shuffle_xor": "lane `lane ^ mask`'s value", "shuffle_up": "lane `lane - delta`'s value",
    "shuffle_down": "lane `lane + delta`'s value",
}


def _note_ordered_sum(parsed, call) -> None:
    """A sum or scan whose float additions follow the launch's ``reduction_order``; a kernel
    without one compiles the same module under every order (``Parsed.has_ordered_sums``)."""
    parsed.flags.add("ordered_sums")


ENTRIES = [
    *(Builtin(name, FAMILY, _collective_rule(c), cut=c.scope, emit_cut=_cut(c), varying=True,
              helpers=_helpers(c), c=_spelling(c),
              on_parse=_note_ordered_sum if c.op == "add" else None,
              types="flags" if c.kind == "barrier" else "any scalar number",
              note=_NOTES[c.kind].format(scope=f"{c.scope}-group"))
      for name, c in COLLECTIVES.items()),
    *(Builtin(name, FAMILY, _ballot_rule(name, result, extra), _BALLOT_EMIT[name],
              varying=name.endswith("_scan"), helpers=(HELPERS[_BALLOT_HELPER[name]],),
              c=f"{name}(b" + (", i)" if extra else ")"), types="uint4 from sub_group_ballot",
              note="per-lane read of a ballot")
      for name, (result, extra) in _BALLOT_TYPES.items()),
    Builtin("__cvt_value", FAMILY, _cvt_rule(False), _cvt_emit, public=False),
    Builtin("__cvt_index", FAMILY, _cvt_rule(True), _cvt_emit, public=False),
]
