"""Work-item functions: ids and sizes of the ND-range, the work-group and the sub-group.

Every id is a 64-bit signed integer (OpenCL returns size_t/uint). In generated code ``_lx``,
``_gx``... hold the local and group ids, ``_L0``/``_E0``/``_G0``/``_NG0``/``_O0`` the sizes,
enqueued sizes, global sizes, group counts and offsets; the sub-group size is a compile-time
constant of the module.
"""

from __future__ import annotations

import ast

from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error

FAMILY = "work-item"
_AXES = "xyz"

# name -> (code for dimension d, varying, what it is)
PER_DIM = {
    "get_global_id": ("(_g{a} * _E{d} + _l{a} + _O{d})", True, "global id"),
    "get_local_id": ("_l{a}", True, "local id"),
    "get_group_id": ("_g{a}", False, "work-group id"),
    "get_global_size": ("_G{d}", False, "global size"),
    "get_local_size": ("_L{d}", False, "this work-group's size (smaller for the last group)"),
    "get_enqueued_local_size": ("_E{d}", False, "local size given to the launch"),
    "get_num_groups": ("_NG{d}", False, "number of work-groups"),
    "get_global_offset": ("_O{d}", False, "global offset"),
}
_NL = "(_L0 * _L1 * _L2)"
# The lanes from this sub-group's first on; min() is not used in generated code: Numba compiles
# its overload again in every process (about 0.1 s).
_REST = f"({_NL} - (_lid // {{S}}) * {{S}})"
# name -> (code, varying, what it is); {S} is the sub-group size.
NO_ARGS = {
    "get_work_dim": (None, False, "number of dimensions in use"),
    "get_local_linear_id": ("np.int64(_lid)", True, "linear local id"),
    "get_global_linear_id": ("((_gz * _E2 + _lz) * _G1 * _G0 + (_gy * _E1 + _ly) * _G0 + "
                             "(_gx * _E0 + _lx))", True, "linear global id"),
    "get_sub_group_size": (f"np.int64({{S}} if {{S}} < {_REST} else {_REST})", True,
                           "this sub-group's size"),
    "get_max_sub_group_size": ("np.int64({S})", False, "the launch's sub-group size"),
    "get_num_sub_groups": (f"np.int64(({_NL} + {{S}} - 1) // {{S}})", False,
                           "sub-groups in this work-group"),
    "get_enqueued_num_sub_groups": ("np.int64((_E0 * _E1 * _E2 + {S} - 1) // {S})", False,
                                    "sub-groups in a full work-group"),
    "get_sub_group_id": ("np.int64(_lid // {S})", True, "sub-group id in the work-group"),
    "get_sub_group_local_id": ("np.int64(_lid % {S})", True, "lane in the sub-group"),
}


def _dim(call) -> int:
    arg = call.args[0] if len(call.args) == 1 else None
    if not isinstance(arg, ast.Constant) or arg.value not in (0, 1, 2) or isinstance(
            arg.value, bool):
        name = call.func.resolved[1]
        raise node_error(call, f"{name}(d) needs a constant dimension 0, 1 or 2")
    return arg.value


def _per_dim_rule(types, call):
    _dim(call)
    return "int64"


def _per_dim_lower(template):
    def lower(gen, call):
        d = _dim(call)
        return template.format(a=_AXES[d], d=d)

    return lower


def _no_args_rule(name):
    def rule(types, call):
        if types:
            raise node_error(call, f"{name}() takes no arguments")
        return "int64"

    return rule


def _no_args_lower(name, template):
    def lower(gen, call):
        if template is None:
            return gen.const(gen.module.work_dim, "int64")
        return template.format(S=gen.module.subgroup_size)

    return lower


ENTRIES = [
    *(Builtin(name, FAMILY, _per_dim_rule, lower=_per_dim_lower(code), varying=varying,
              c=f"{name}(d)", types="d: constant 0, 1 or 2", note=what)
      for name, (code, varying, what) in PER_DIM.items()),
    *(Builtin(name, FAMILY, _no_args_rule(name), lower=_no_args_lower(name, code),
              varying=varying, c=f"{name}()", note=what)
      for name, (code, varying, what) in NO_ARGS.items()),
]
