"""The code at each collective cut, and the reduction order option.

A sub-group is ``subgroup_size`` consecutive work-items along the linear local id (the last one
of a group may be smaller); the size is a compile-time constant of the generated module. Every
collective is a *cut*: the normaliser (``collectives``) moves its arguments into context arrays
in the preceding region, and between the two work-item loops the collective is computed per
sub-group (or over the whole group for ``work_group_*``) by a helper from
``collective_helpers``, into a context array the next region reads. Control flow around
sub-group collectives may differ between sub-groups (``masked`` in codegen); this module only
emits the collective itself, with its participation check, instrument hook and reduction order.
The collectives' typing and their rows in the builtin table are in
``clsim.compiler.builtins.collectives``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.diagnostics import compile_error
from clsim.instruments.base import Instrument
from clsim.runtime import record as rec
from clsim.runtime.config import collective_order

if TYPE_CHECKING:
    from clsim.compiler.builtins.collectives import Collective

SUB, WORK = "sub", "work"


# -- reduction order ----------------------------------------------------------------------------
class ReductionOrder(Instrument):
    """``reduction_order="shuffled"``: float additions in reduce/scan collectives follow a seeded
    permutation of the lanes. Carries the seed as run-time state, so every seed shares one
    compiled module. The tree orders ("tree", "halfpairs", "tree16", per-size strings) change
    how float sub-group reductions add (``collective_helpers``)."""

    name = "reduction_order"
    python_threads = True  # its state is the seed, read only

    def __init__(self, seed: int, order: str = "shuffled"):
        self.seed = seed
        self.order = order

    @classmethod
    def create(cls, config):
        order = config.reduction_order
        return cls(config.reduction_seed, order) if order not in ("fixed", "left") else None

    def state_args(self) -> list[str]:
        return ["_rseed"]

    def key(self) -> tuple:
        return ("reduction_order", self.order)

    def allocate(self, info) -> list:
        return [np.array([self.seed], np.uint64)]


def _order(module) -> str:
    for inst in module.instruments:
        if isinstance(inst, ReductionOrder):
            return inst.order
    return "fixed"


def shuffled(module) -> bool:
    return _order(module) == "shuffled"


def float_add_order(module, c) -> str:
    """The order float additions of collective ``c`` take ("left", "tree", "halfpairs",
    "descending", "columns" or "shuffled"), from the launch's ``reduction_order``."""
    kind = {"reduce": "reduce", "scan": "scan", "xscan": "scan"}.get(c.kind)
    order = _order(module)
    if kind is None or order == "shuffled":
        return "shuffled" if order == "shuffled" else "left"
    return collective_order(order, f"{c.scope}_{kind}", module.subgroup_size)


# -- code at the cut ----------------------------------------------------------------------------
def _identity(gen, op: str, t: str) -> str:
    if op == "add":
        return gen.const(0, t)
    if ct.is_float(t):
        return gen.const(float("inf") if op == "min" else float("-inf"), t)
    info = np.iinfo(t)
    return gen.const(info.max if op == "min" else info.min, t)


def _arrays(gen, stmt):
    """Source/extra argument arrays and the destination array of a normalised collective."""
    call = stmt.value
    arrays = []
    for arg in call.args:
        if isinstance(arg, ast.Name) and not hasattr(arg, "resolved"):
            arrays.append(f"v_{arg.id}__c")
        else:
            arrays.append(None)
    dst = f"v_{stmt.targets[0].id}__c" if isinstance(stmt, ast.Assign) else None
    return call, arrays, dst


def _const_arg(node, what: str, name: str) -> int:
    resolved = getattr(node, "resolved", None)
    value = resolved[1] if resolved and resolved[0] == "const" else getattr(node, "value", None)
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise compile_error(node.loc, f"{name}(): the {what} must be an integer constant")
    return int(value)


def _compute(gen, c: Collective, stmt, site: int, start: str, count: str, sg: str) -> None:
    """Emit the helper call computing ``c`` over lanes [start, start+count)."""
    call, arrays, dst = _arrays(gen, stmt)
    src = arrays[0] if arrays else None
    t = call.args[0].ctype if call.args else None
    mix = shuffled(gen.module) and c.op == "add" and ct.is_float(t)
    key = (f"np.int64(((_gx + _NG0 * (_gy + _NG1 * _gz)) * 8191 + {sg}) * 131071 + {site})"
           if mix else "")
    perm = f"_perm, _rseed[0], {key}" if mix else ""
    if mix:
        gen.need_perm()
    h = gen.helper
    tree = float_add_order(gen.module, c) if c.op == "add" and ct.is_float(t) else "left"
    if c.kind == "reduce" and tree == "tree":
        gen.emit(f"{h('_cg_reduce_add_tree')}({src}, {dst}, {start}, {count})")
    elif c.kind == "reduce" and tree == "halfpairs":  # halves by the sub-group size
        gen.emit(f"{h('_cg_reduce_add_halfpairs')}({src}, {dst}, {start}, {count}, "
                 f"{gen.module.subgroup_size})")
    elif c.kind == "reduce" and tree == "columns":
        gen.emit(f"{h('_cg_reduce_add_columns')}({src}, {dst}, {start}, {count}, "
                 f"{gen.module.subgroup_size})")
    elif c.kind in ("scan", "xscan") and tree == "descending":
        gen.emit(f"{h('_cg_scan_add_desc')}({src}, {dst}, {start}, {count}, "
                 f"{_identity(gen, c.op, t)}, {c.kind == 'xscan'})")
    elif c.kind == "reduce":
        name = f"_cg_reduce_{c.op}" + ("_p" if mix else "")
        gen.emit(f"{h(name)}({src}, {dst}, {start}, {count}{', ' + perm if mix else ''})")
    elif c.kind in ("scan", "xscan"):
        name = f"_cg_scan_{c.op}" + ("_p" if mix else "")
        ident = _identity(gen, c.op, t)
        excl = "True" if c.kind == "xscan" else "False"
        gen.emit(f"{h(name)}({src}, {dst}, {start}, {count}, {ident}, {excl}"
                 f"{', ' + perm if mix else ''})")
    elif c.kind == "clustered":
        size = _const_arg(call.args[1], "cluster size", c.name)
        limit = gen.module.subgroup_size
        if size < 1 or size & (size - 1) or size > limit:
            raise compile_error(call.loc, f"{c.name}(): the cluster size {size} must be a power "
                                          f"of two no larger than the sub-group size {limit}")
        name = f"_cg_clustered_{c.op}" + ("_p" if mix else "")
        gen.emit(f"{h(name)}({src}, {dst}, {start}, {count}, {size}"
                 f"{', ' + perm if mix else ''})")
    if c.kind in ("reduce", "scan", "xscan"):  # n lanes combine with n - 1 operations
        gen.module.flops(gen, "add", t, f"({count} - 1)")
    elif c.kind == "clustered":  # n - 1 per cluster
        gen.module.flops(gen, "add", t, f"({count} - ({count} + {size - 1}) // {size})")
    if c.kind in ("reduce", "scan", "xscan", "clustered"):
        return
    if c.kind == "broadcast" and c.scope == SUB:
        gen.emit(f"{h('_cg_broadcast')}({src}, {arrays[1]}, {dst}, {start}, {count}, _err, "
                 f"{site}, {sg})")
        gen.emit(f"if _err[{rec.CODE}] != 0:\n    {gen.err_return}")
    elif c.kind == "broadcast":
        ids = arrays[1:] + [arrays[1]] * (4 - len(arrays))
        nd = len(arrays) - 1
        gen.emit(f"{h('_cg_wg_broadcast')}({src}, {ids[0]}, {ids[1]}, {ids[2]}, {nd}, {dst}, "
                 f"_NL, _L0, _L1, _L2, _err, {site})")
        gen.emit(f"if _err[{rec.CODE}] != 0:\n    {gen.err_return}")
    elif c.kind in ("any", "all"):
        gen.emit(f"{h('_cg_vote')}({src}, {dst}, {start}, {count}, {c.kind == 'all'})")
    elif c.kind in ("shuffle", "shuffle_xor"):
        gen.emit(f"{h('_cg_shuffle')}({src}, {arrays[1]}, {dst}, {start}, {count}, _err, "
                 f"{site}, {sg}, {c.kind == 'shuffle_xor'})")
        gen.emit(f"if _err[{rec.CODE}] != 0:\n    {gen.err_return}")
    elif c.kind in ("shuffle_up", "shuffle_down"):
        sign = -1 if c.kind == "shuffle_up" else 1
        gen.emit(f"{h('_cg_shuffle_rel')}({src}, {arrays[1]}, {dst}, {start}, {count}, {sign})")
    elif c.kind == "ballot":
        gen.emit(f"{h('_cg_ballot')}({src}, {dst}, {start}, {count})")


def emit_collective(gen, item, c) -> None:
    """Group-level code for collective ``c`` at one cut (``Cut`` item of a normalised
    statement)."""
    stmt = item.stmt
    site = gen.module.site(stmt.value, "", c.name, "none", "none")
    if c.scope == WORK:
        _work_group(gen, c, stmt, site)
        return
    gen.module.on_subgroup_barrier(gen, stmt, site)
    size = gen.module.subgroup_size
    active = gen.active_expr("_j")
    if active is None and c.kind == "barrier":
        return
    gen.emit(f"for _sg in range((_NL + {size - 1}) // {size}):")
    with gen.indented():
        # not min(): Numba compiles its overload again in every process
        gen.emit(f"_ss = _sg * {size}\n_sn = np.int64({size} if {size} < _NL - _ss else _NL - _ss)")
        if active is not None and not gen.module.has_exit:
            # Masks are checked uniform per sub-group where they are set: test one lane.
            gen.emit(f"if not ({gen.active_expr('_ss')}):\n    continue")
        elif active is not None:
            gen.emit("_na = 0\n_nm = -1\nfor _j in range(_ss, _ss + _sn):\n"
                     f"    if {active}:\n        _na += 1\n    elif _nm < 0:\n        _nm = _j")
            gen.emit("if _na == 0:\n    continue")
            if gen.module.bounds:  # checks="none": no divergence check
                gen.emit(f"if _na != _sn:\n    {gen.helper('_cg_fail')}(_err, "
                         f"{hp.ERR_SG_PARTIAL}, {site}, 0, _sn, _nm, _na, _sn - _na, _sg)\n"
                         f"    {gen.err_return}")
        if c.kind != "barrier":
            _compute(gen, c, stmt, site, "_ss", "_sn", "_sg")


def _work_group(gen, c: Collective, stmt, site: int) -> None:
    if gen.masks:
        raise compile_error(stmt.loc, f"internal: {c.name}() inside sub-group control flow")
    if gen.module.has_exit:
        gen.emit("_nx = 0\nfor _lid in range(_NL):\n    if _exited[_lid]:\n        _nx += 1")
        gen.emit(f"if _nx == _NL:\n    {gen.err_return}")
    if gen.module.has_exit and gen.module.bounds:  # checks="none": no divergence check
        gen.emit(f"if _nx != 0:\n    {gen.helper('_cg_fail')}(_err, {hp.ERR_WG_PARTIAL}, "
                 f"{site}, 0, _NL, 0, _NL - _nx, _nx, -1)\n    {gen.err_return}")
    _compute(gen, c, stmt, site, "0", "_NL", "0")

