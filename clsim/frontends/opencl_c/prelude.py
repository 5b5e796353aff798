"""The declarations clang's builtin tables leave to ``opencl-c-base.h`` (which the libclang
wheel does not ship), generated from clsim's own facts: the type names, the vector types, the
constants ``clsim.api`` exports (``CLK_LOCAL_MEM_FENCE``, ``INFINITY``, ``FLT_MAX``...), the C11
memory orders and scopes of the builtin table, the feature and extension macros under which
clang declares its builtins, and ``as_T()``. ``tests/unit/test_opencl_c_prelude.py`` checks
every public builtin of the table is declared with it.
"""

from __future__ import annotations

import functools

import numpy as np

from clsim import api
from clsim.compiler.builtins import atomics_c11

PRELUDE_NAME = "/clsim-prelude/opencl-c-base.h"

SCALAR_C = {"char": "char", "uchar": "unsigned char", "short": "short",
            "ushort": "unsigned short", "int": "int", "uint": "unsigned int", "long": "long",
            "ulong": "unsigned long", "float": "float", "double": "double", "half": "half"}
VECTOR_WIDTHS = (2, 3, 4, 8, 16)
# OpenCL C 2.0's optional features, as opencl-c-base.h defines them: clang declares the builtins
# that need one (generic-space pointers, sub-groups, work-group collectives) only under its macro.
_FEATURES = ("__opencl_subgroup_builtins", "__opencl_c_generic_address_space",
             "__opencl_c_atomic_order_acq_rel",
             "__opencl_c_atomic_order_seq_cst", "__opencl_c_atomic_scope_device",
             "__opencl_c_atomic_scope_all_devices", "__opencl_c_program_scope_global_variables",
             "__opencl_c_work_group_collective_functions",
             "__opencl_c_images", "__opencl_c_read_write_images", "__opencl_c_fp64",
             "__opencl_c_int64", "__opencl_c_ext_fp32_global_atomic_add",
             "__opencl_c_ext_fp32_local_atomic_add", "__opencl_c_ext_fp32_global_atomic_min_max",
             "__opencl_c_ext_fp32_local_atomic_min_max", "__opencl_c_ext_fp64_global_atomic_add",
             "__opencl_c_ext_fp64_local_atomic_add", "__opencl_c_ext_fp64_global_atomic_min_max",
             "__opencl_c_ext_fp64_local_atomic_min_max",
             "__opencl_c_integer_dot_product_input_4x8bit_packed")
# The extensions clsim simulates, as a device that has them defines them (kernels test the macros
# and enable them with a pragma, which clang's builtin tables require).
_EXTENSIONS = ("cl_khr_fp16", "cl_khr_fp64", "cl_khr_subgroups", "cl_intel_required_subgroup_size",
               "cl_khr_int64_base_atomics", "cl_khr_global_int32_base_atomics",
               "cl_khr_local_int32_base_atomics", "cl_khr_subgroup_extended_types",
               "cl_khr_subgroup_non_uniform_arithmetic", "cl_khr_subgroup_shuffle",
               "cl_khr_subgroup_shuffle_relative", "cl_khr_subgroup_clustered_reduce",
               "cl_khr_subgroup_ballot", "cl_khr_subgroup_non_uniform_vote",
               "cl_khr_integer_dot_product")
_SIZES = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "int": 4, "uint": 4,
          "float": 4, "long": 8, "ulong": 8, "double": 8}
# Spelled as calls clang folds, so the front end sees these two by name, not as a value.
_FLOAT_SPECIALS = {"INFINITY": "__builtin_inff()", "HUGE_VALF": "__builtin_huge_valf()",
                   "NAN": "__builtin_nanf(\"\")"}


def _constant(name: str, value) -> str:
    if name in _FLOAT_SPECIALS:
        return f"#define {name} {_FLOAT_SPECIALS[name]}"
    kind = value.dtype if isinstance(value, np.generic) else np.dtype(np.int32)
    if kind.kind == "f":
        suffix = "f" if kind.itemsize == 4 else ""
        return f"#define {name} {float(value).hex()}{suffix}"
    if kind.kind == "u":
        return f"#define {name} {int(value)}U{'L' if kind.itemsize == 8 else ''}"
    number = int(value)
    # -2147483648 is '-' applied to a long literal in C; write it as an int expression.
    text = f"({number + 1}{'L' if kind.itemsize == 8 else ''} - 1)" if number < 0 else \
        f"{number}{'L' if kind.itemsize == 8 else ''}"
    return f"#define {name} {text}"


def _as_type_declarations() -> list[str]:
    """as_T(x) for every pair of types of one size: a macro over __builtin_astype in
    opencl-c-base.h, declared here as functions so the front end sees the call by name."""
    types = [(name, size) for name, size in _SIZES.items()]
    types += [(f"{name}{n}", size * (4 if n == 3 else n)) for name, size in _SIZES.items()
              for n in VECTOR_WIDTHS]
    out = []
    for target, size in types:
        out += [f"{target} __attribute__((overloadable, const)) as_{target}({source});"
                for source, other in types if other == size]
    return out


@functools.cache
def prelude_text() -> str:
    lines = [f"#define {feature} 1" for feature in _FEATURES]
    for ext in _EXTENSIONS:
        lines += [f"#define {ext} 1", f"#pragma OPENCL EXTENSION {ext} : enable"]
    lines += [f"typedef {c} {name};" for name, c in SCALAR_C.items() if name != c]
    lines += ["typedef unsigned long size_t;", "typedef long ptrdiff_t;",
              "typedef long intptr_t;", "typedef unsigned long uintptr_t;",
              "typedef uint cl_mem_fence_flags;"]
    for name in SCALAR_C:
        lines += [f"typedef {name} {name}{n} __attribute__((ext_vector_type({n})));"
                  for n in VECTOR_WIDTHS]
    orders = {k: v for k, v in atomics_c11.CONSTANTS.items() if k.startswith("memory_order")}
    scopes = {k: v for k, v in atomics_c11.CONSTANTS.items() if k.startswith("memory_scope")}
    lines.append("typedef enum memory_order { " +
                 ", ".join(f"{k} = {v}" for k, v in orders.items()) + " } memory_order;")
    lines.append("typedef enum memory_scope { " +
                 ", ".join(f"{k} = {v}" for k, v in scopes.items()) + " } memory_scope;")
    for name, value in vars(api).items():
        if name.isupper() and isinstance(value, int | np.generic):
            lines.append(_constant(name, value))
    lines += _as_type_declarations()
    lines.append("#define NULL ((void*)0)")
    return "\n".join(lines) + "\n"
