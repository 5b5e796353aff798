"""One translation unit: the pieces around the functions (pragmas, extensions, module
constants as ``#define``, struct typedefs, ``__constant`` tables, helper prototypes) and the
order C needs them in.

The features a kernel uses decide the preamble: ``cl_khr_fp16`` only when it computes with
half values (a half read converted to float is ``vload_half``, which every device has),
sub-group extensions (``cl_intel_subgroups`` where the device has it, else
``cl_khr_subgroups``) and the per-builtin ``cl_khr_subgroup_*`` extensions, and a comment
naming what needs OpenCL C 2.0 (the verifier builds those with ``-cl-std=CL2.0``).
"""

from __future__ import annotations

import ast

import numpy as np

from clsim.backends.opencl_c import calls
from clsim.backends.opencl_c.names import (
    StructNames,
    c_name,
    declaration,
    literal,
    type_name,
)
from clsim.backends.opencl_c.stmts import FunctionPrinter
from clsim.backends.opencl_c.typed import TypedKernel, retype_helper
from clsim.compiler import ctypes as ct
from clsim.compiler.astwalk import walk
from clsim.compiler.builtins import lookup
from clsim.compiler.diagnostics import builtin_name, node_error
from clsim.compiler.infer import const_type
from clsim.compiler.places import record_pointer
from clsim.compiler.structs import StructT, cstruct

# clsim constants OpenCL C defines with the same value and type: printed by name.
OPENCL_CONSTANTS = frozenset({
    "CHAR_MAX", "CHAR_MIN", "CLK_GLOBAL_MEM_FENCE", "CLK_IMAGE_MEM_FENCE", "CLK_LOCAL_MEM_FENCE",
    "FLT_EPSILON", "FLT_MAX", "FLT_MIN", "HUGE_VALF", "INFINITY", "INT_MAX", "INT_MIN",
    "LONG_MAX", "LONG_MIN", "MAXFLOAT", "M_E_F", "M_LN2_F", "M_LOG2E_F", "M_PI_F", "M_SQRT2_F",
    "NAN", "SHRT_MAX", "SHRT_MIN", "memory_order_relaxed", "memory_order_acquire",
    "memory_order_release", "memory_order_acq_rel", "memory_order_seq_cst",
    "memory_scope_work_item", "memory_scope_work_group", "memory_scope_device",
    "memory_scope_all_svm_devices", "memory_scope_all_devices", "memory_scope_sub_group",
})
SUBGROUP_PREAMBLE = """#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif"""
REQD_SUBGROUP = """#if defined(cl_intel_required_subgroup_size) && defined(CLSIM_SUBGROUP_SIZE)
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif"""


class Unit:
    def __init__(self, typed: TypedKernel, subgroup_size: int | None = None):
        self.typed = typed
        self.program = typed.program
        self.subgroup_size = subgroup_size
        self.structs = StructNames()
        self.defines: dict[str, str] = {}
        self.tables: dict[str, np.ndarray] = {}
        self.fp16_at = None  # the first node computing with half values
        self.fp16 = False
        self.fp64 = False
        self.subgroups = False
        self.extensions: set[str] = set()
        self.cl2: set[str] = set()
        # every variable and parameter name printed: a #define must not rename one
        self.variables = {c_name(n) for n in typed.kernel.env} | {
            c_name(n) for spec in self.program.funcs.values() for n in spec.env}
        self.helper_names: dict[tuple, str] = {}
        self.helper_queue: list[tuple] = []

    # -- services for the printers ----------------------------------------------------------
    def type_name(self, t) -> str:
        if t == "float16" or (isinstance(t, ct.VecT) and t.dtype == "float16"):
            self.require_fp16(None)
        self.note_type(t)
        return type_name(t, self.structs)

    def note_type(self, t) -> None:
        """Doubles need cl_khr_fp64 enabled (OpenCL C 1.2)."""
        if ct.elem(t) == "float64" or (isinstance(t, ct.ArrayT) and t.dtype == "float64") or (
                isinstance(t, ct.PtrT) and t.dtype == "float64"):
            self.fp64 = True

    def require_fp16(self, node) -> None:
        if not self.fp16:
            self.fp16, self.fp16_at = True, node

    def named_value(self, node, resolved) -> str:
        kind, value = resolved
        if kind == "table":
            known = self.tables.setdefault(node.id, value)
            if known is not value:
                raise node_error(node, f"two module arrays are named '{node.id}'; rename one")
            return c_name(node.id)
        if kind != "const":
            raise node_error(node, f"OpenCL C output: '{ast.unparse(node)}' has no value")
        t = const_type(value)
        text = literal(value, t)
        if not isinstance(node, ast.Name):
            return text  # np.pi, math.inf: the number
        if node.id in OPENCL_CONSTANTS:
            return node.id
        name = c_name(node.id)
        if name in self.variables or self.defines.setdefault(name, text) != text:
            return text  # a variable or another module's constant has the name: the number
        return name

    def helper_call(self, printer, node, kfn) -> str:
        types = []
        for a in node.args:
            t = a.ctype
            if isinstance(t, StructT) and isinstance(a, ast.Subscript):
                t = record_pointer(a, a.loc)
            types.append(t)
        key = self.program.spec_key(kfn, tuple(types))
        if key not in self.program.funcs:
            raise node_error(node, f"internal: no typed specialisation of {kfn.name}()")
        if key not in self.helper_names:
            taken = set(self.helper_names.values())
            base = c_name(kfn.name)
            if lookup(base) is not None:
                base += "_"  # a helper named like a builtin (dot) would hide it
            name, k = base, 1
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            self.helper_names[key] = name
            self.helper_queue.append(key)
        args = ", ".join(printer.expr(a) for a in node.args)
        return f"{self.helper_names[key]}({args})"

    def note_builtins(self, body) -> None:
        for stmt in body:
            for node in walk(stmt):
                name = builtin_name(node)
                if name is None:
                    continue
                if calls.is_subgroup(name):
                    self.subgroups = True
                ext = calls.extension_of(name)
                if ext:
                    self.extensions.add(ext)
                if calls.needs_cl2(name):
                    self.cl2.add(name)

    # -- printing ---------------------------------------------------------------------------
    def render(self, source_file: str) -> str:
        kernel = self.typed.kernel
        self.note_builtins(kernel.body)
        printer = FunctionPrinter(self, kernel)
        for t in kernel.param_types.values():
            self.note_type(t)
        params = ", ".join(declaration(kernel.param_types[p], c_name(p), self.structs,
                                       param=True) if kernel.param_types[p] != "null"
                           else f"__global uchar* {c_name(p)}" for p in kernel.params)
        signature = f"__kernel void {c_name(kernel.name)}({params})"
        kernel_text = printer.render(signature)
        helpers, prototypes = [], []
        done = set()
        while len(done) < len(self.helper_queue):
            key = next(k for k in self.helper_queue if k not in done)
            done.add(key)
            fn = retype_helper(self.program, self.program.funcs[key])
            self.note_builtins(fn.body)
            sig = self._helper_signature(fn, self.helper_names[key])
            prototypes.append(sig + ";")
            helpers.append(FunctionPrinter(self, fn).render(sig))
        # work-group collectives fold by sub-groups on some devices: their size matters too
        sized = self.subgroups or any(n.startswith("work_group_") for n in self.cl2)
        if sized:
            kernel_text = REQD_SUBGROUP + "\n" + kernel_text
        parts = [self._header(source_file), self._pragmas()]
        if sized and self.subgroup_size:
            parts.append(f"#ifndef CLSIM_SUBGROUP_SIZE\n#define CLSIM_SUBGROUP_SIZE "
                         f"{self.subgroup_size}\n#endif")
        if self.defines:
            parts.append("\n".join(f"#define {n} {v}" for n, v in self.defines.items()))
        parts += [cstruct_text(st, name) for st, name in self.structs.names.items()]
        parts += [self._table(name, value) for name, value in self.tables.items()]
        if len(prototypes) > 1:
            parts.append("\n".join(prototypes))
        parts += [*reversed(helpers), kernel_text]
        return "\n\n".join(p for p in parts if p) + "\n"

    def _helper_signature(self, fn, name: str) -> str:
        for t in fn.param_types.values():
            self.note_type(t)
        params = ", ".join(declaration(fn.param_types[p], c_name(p), self.structs, param=True)
                           for p in fn.params)
        ret = "void" if fn.ret_type is None else self.type_name(fn.ret_type)
        return f"{ret} {name}({params or 'void'})"

    def _header(self, source_file: str) -> str:
        kernel = self.typed.kernel
        lines = [f"/* OpenCL C printed by clsim.to_cl: kernel {kernel.name} of {source_file}.",
                 "   The same operations in the same order as the simulator runs them (bit for "
                 "bit where",
                 "   the builtins are exact). Comments give the Python line of each statement."]
        if self.cl2:
            lines.append(f"   Needs OpenCL C 2.0 (build with -cl-std=CL2.0): "
                         f"{', '.join(sorted(self.cl2))}.")
        if self.fp16:
            where = getattr(self.fp16_at, "loc", None)
            lines.append("   Needs cl_khr_fp16: it computes with half values"
                         + (f" (first at line {where.line})" if where else "") + ".")
        return "\n".join(lines) + " */"

    def _pragmas(self) -> str:
        lines = ["#pragma OPENCL FP_CONTRACT OFF"]
        if self.fp64:
            lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        if self.fp16:
            lines.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
        if self.subgroups:
            lines.append(SUBGROUP_PREAMBLE)
        lines += [f"#pragma OPENCL EXTENSION {ext} : enable" for ext in sorted(self.extensions)]
        return "\n".join(lines)

    def _table(self, name: str, value: np.ndarray) -> str:
        t = value.dtype.name
        dims = "".join(f"[{n}]" for n in value.shape)

        def item(v) -> str:  # an initialiser converts to the element type: plain numbers
            return str(int(v)) if ct.is_int(t) else literal(v, t)

        def items(a):
            if a.ndim == 1:
                return "{" + ", ".join(item(v) for v in a.tolist()) + "}"
            return "{" + ", ".join(items(row) for row in a) + "}"

        return f"__constant {self.type_name(t)} {c_name(name)}{dims} = {items(value)};"


def cstruct_text(st: StructT, name: str) -> str:
    """The packed typedef of ``st`` (``clsim.cstruct`` prints it from the numpy dtype)."""
    return cstruct(_dtype_of(st), name).rstrip("\n")


def _dtype_of(st: StructT) -> np.dtype:
    fields = []
    for f in st.fields:
        sub = _dtype_of(f.dtype) if isinstance(f.dtype, StructT) else np.dtype(f.dtype)
        fields.append((f.name, sub, f.shape) if f.shape else (f.name, sub))
    return np.dtype({"names": [f[0] for f in fields],
                     "formats": [np.dtype((f[1], f[2])) if len(f) == 3 else f[1]
                                 for f in fields],
                     "offsets": [f.offset for f in st.fields], "itemsize": st.itemsize})
