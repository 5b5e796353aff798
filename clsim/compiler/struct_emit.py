"""Code generation for struct fields: ``x[ib].d``, ``x[ib].qs[j]``, nested records.

A struct buffer is its bytes (uint8) in generated code. A field chain becomes a byte offset
(``ib * itemsize + offset + j * size``) with each index checked against its own bound (the
record count, the array field's length), then a little-endian load or store of the field's
type (``structs._ldb_T`` / ``_stb_T``). Instruments see one access of the field's bytes.
"""

from __future__ import annotations

import ast

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.diagnostics import compile_error
from clsim.compiler.places import pointer_element
from clsim.compiler.struct_locals import user_name
from clsim.compiler.struct_values import is_struct_value
from clsim.compiler.structs import StructT, size_of
from clsim.runtime import record as rec

_BYTES = ct.ArrayT("uint8", 1, "global")


class StructEmitter:
    """Mixin of ``ExprEmitter``: loads and stores of struct fields."""

    def _field_index(self, code: str, length: str, site: int, store: bool,
                     view_bytes: int = 0) -> str:
        """``code`` checked against ``length``; ``view_bytes``: an access of that many bytes
        through a view at byte offset ``code`` (its message speaks of bytes)."""
        if not self.bounds_checks:
            return code
        site_k, lid = self.const(site, "int64"), self.lid_code()
        if not store and view_bytes:
            self.checked()
            return (f"{self.helper('_ckv')}({code}, {length}, _err, {site_k}, {lid}, "
                    f"{self.const(view_bytes, 'int64')})")
        if not store:
            self.checked()
            return f"{self.helper('_ck')}({code}, {length}, _err, {site_k}, {lid})"
        tmp = self.fresh("_i")
        self.pre(f"{tmp} = {code}")
        error = hp.ERR_OOB_VIEW_STORE if view_bytes else hp.ERR_OOB_STORE
        size = f"\n    _err[{rec.COUNT_A}] = {view_bytes}" if view_bytes else ""
        self.pre(f"if {tmp} < 0 or {tmp} >= {length}:\n"
                 f"    {self.helper('_oob')}(_err, {self.const(error, 'int64')}, "
                 f"{site_k}, {tmp}, {length}, {lid}){size}\n    {self.err_return}")
        return tmp

    def byte_length(self, name: str, arrt: ct.ArrayT) -> str:
        """The size in bytes of array ``name``, without viewing it as bytes (Numba compiles
        an array view for every ``.view(np.uint8)`` in a kernel)."""
        base, lead = self.array_base(name, arrt)
        row = f"{base}[{lead[0]}]" if lead else base
        if _bytewise(arrt):
            return f"{row}.shape[0]"
        return f"({row}.shape[0] * {size_of(ct.storage_dtype(arrt.dtype))})"

    def byte_base(self, name: str, arrt: ct.ArrayT) -> str:
        """The bytes of array ``name`` (a struct buffer already is its bytes)."""
        base, lead = self.array_base(name, arrt)
        row = f"{base}[{lead[0]}]" if lead else base
        return row if isinstance(arrt.dtype, StructT) else f"{row}.view(np.uint8)"

    def view_offset(self, call) -> str:
        """Byte offset of ``view(p, T, off)``: p's element offset in bytes plus ``off``
        (p's own value when p is a view: a byte offset already)."""
        _name, arrt, elems = self.pointer_offset(call.args[0])
        if getattr(call.args[0].ctype, "view", None) is not None:
            off = self.typed(call.args[2], "int64") if len(call.args) == 3 else "0"
            return f"({elems} + {off})"
        size = size_of(ct.storage_dtype(arrt.dtype) if isinstance(arrt.dtype, str)
                       else arrt.dtype)
        off = self.typed(call.args[2], "int64") if len(call.args) == 3 else "0"
        return f"({elems} * {size} + {off})"

    def view_element(self, node, kind: str) -> tuple[str, str, str]:
        """(bytes code, checked byte offset, element type) of ``p[i]`` on a typed view."""
        ptr: ct.PtrT = node.value.ctype
        size = size_of(ptr.view)
        site = self.module.site(node, ptr.base, kind, ptr.array.space, "uint8",
                                width=_report_width(ptr.array, size))
        data = self.byte_base(ptr.base, ptr.array)
        off = (f"({self.pointer_offset(node.value)[2]} + {self.typed(node.slice, 'int64')} * "
               f"{size})")
        nbytes = self.byte_length(ptr.base, ptr.array)
        checked = self._field_index(off, f"({nbytes} - {size - 1})", site,
                                    store=(kind == "store"), view_bytes=size)
        checked = self._check_alignment(node.value, checked, size, site, kind)
        return data, self.report_bytes(site, ptr.base, ptr.array, checked, kind), ptr.view

    def _check_alignment(self, pointer, off: str, size: int, site: int, kind: str) -> str:
        """``off`` checked to be a multiple of ``size``: an access through a cast pointer
        must be aligned to its type (undefined in OpenCL C); nothing to check for bytes,
        packed structs, or a view whose alignment is known when the kernel compiles."""
        if size == 1 or not self.bounds_checks or \
                _aligned_view(pointer, size, getattr(self, "aligned_pointers", ())):
            return off
        if kind == "store":
            return self._aligned(off, size, site)
        self.checked()  # an expression: loads may run conditionally
        return (f"{self.helper('_al')}({off}, {self.const(size, 'int64')}, _err, "
                f"{self.const(site, 'int64')}, {self.lid_code()})")

    def check_assigned_alignment(self, name: str, value, code: str) -> str:
        """``code``, the value assigned to view pointer local ``name``, checked to be a
        multiple of the pointee's size unless known aligned (aligned_pointers)."""
        t = self.env.get(name)
        if not isinstance(t, ct.PtrT) or t.view is None or not self.bounds_checks or \
                name not in getattr(self, "aligned_pointers", ()):
            return code
        size = size_of(t.view)
        if size == 1 or isinstance(t.view, StructT) or \
                _aligned_view(value, size, self.aligned_pointers):
            return code
        site = self.module.site(value, t.base, "cast", "none", "none")
        return self._aligned(code, size, site)

    def _aligned(self, off: str, size: int, site: int) -> str:
        """``off`` in a temporary, stopping the group when it is not a multiple of ``size``
        (a vector access through a cast pointer must be aligned: undefined in OpenCL C)."""
        tmp = self.fresh("_ao")
        self.pre(f"{tmp} = {off}")
        self.pre(f"if {tmp} % {size} != 0:\n"
                 f"    {self.helper('_oob')}(_err, {self.const(hp.ERR_MISALIGNED, 'int64')}, "
                 f"{self.const(site, 'int64')}, {tmp}, {self.const(size, 'int64')}, "
                 f"{self.lid_code()})\n"
                 f"    {self.err_return}")
        return tmp

    def _vector_parts(self, data: str, off: str, vec: ct.VecT, ptr: ct.PtrT):
        """The component places of a vector at (aligned) byte ``off`` (a plain name): elements
        of the typed buffer ``data`` itself when the element types agree, else bytes."""
        size = size_of(vec.dtype)
        if _direct(vec, ptr):
            return [("elem", f"{data}[{off} // {size} + {k}]") for k in range(vec.width)]
        return [("bytes", f"{off} + {k * size}") for k in range(vec.width)]

    def _view_data(self, vec, ptr: ct.PtrT) -> str:
        """What a vector view's components are read from: the buffer, or its bytes."""
        if _direct(vec, ptr):
            base, lead = self.array_base(ptr.base, ptr.array)
            return f"{base}[{lead[0]}]" if lead else base
        return self.byte_base(ptr.base, ptr.array)

    def report_bytes(self, site: int, name: str, arrt: ct.ArrayT, off: str, kind: str) -> str:
        """Tell instruments about an access at byte ``off`` of buffer ``name``: as a byte
        index into a struct buffer (which they see as bytes), else as the index of the
        buffer element holding that byte; the byte offset is what the code then uses.
        A struct argument (``arrt`` None) is a value, not memory: nothing to report."""
        if arrt is None:
            return off
        if _bytewise(arrt):
            return self.module.access(self, site, name, _BYTES, [off], kind)[0]
        size = size_of(arrt.dtype)
        element = f"({off} // {size})"
        seen = self.module.access(self, site, name, arrt, [element], kind)[0]
        return off if seen == element else f"({off} + 0 * {seen})"

    def view_vector(self, call, buf, width: int, kind: str) -> tuple[str, str, object]:
        """(bytes, checked byte offset of element 0, element type) of vloadN/vstoreN(.., p)
        through a typed view: N elements at p + offset * N."""
        ptr: ct.PtrT = buf.ctype
        if isinstance(ptr.view, ct.VecT):
            raise compile_error(call.loc, f"vload/vstore take pointers to scalars; '{ptr.view}"
                                          "*' elements are read as p[i] (or view the buffer "
                                          "as its scalar type)")
        size = size_of(ptr.view)
        offset_node = call.args[0] if kind == "load" else call.args[1]
        site = self.module.site(call, ptr.base, kind, ptr.array.space, "uint8",
                                width=_report_width(ptr.array, size * width))
        data = self.byte_base(ptr.base, ptr.array)
        _name, _arrt, start = self.pointer_offset(buf)
        off = f"({start} + {self.typed(offset_node, 'int64')} * {width * size})"
        nbytes = self.byte_length(ptr.base, ptr.array)
        checked = self._field_index(off, f"({nbytes} - {width * size - 1})", site,
                                    store=(kind == "store"), view_bytes=width * size)
        checked = self._check_alignment(buf, checked, size, site, kind)
        if kind == "load":
            tmp = self.fresh("_vo")
            self.pre(f"{tmp} = {checked}")
            checked = tmp
            self.pre(f"if _err[{rec.CODE}] != 0:\n    {self.err_return}")
        return data, self.report_bytes(site, ptr.base, ptr.array, checked, kind), ptr.view

    def view_vload(self, call, width: int) -> str:
        data, off, t = self.view_vector(call, call.args[1], width, "load")
        load = self.helper(f"_ldb_{t}")
        return "(" + ", ".join(f"{load}({data}, {off} + {k * size_of(t)})"
                               for k in range(width)) + ",)"

    def view_vstore(self, call, width: int) -> None:
        vec = call.args[0]
        v = self.fresh("_vv")
        self.pre(f"{v} = {self.expr(vec)}")
        data, off, t = self.view_vector(call, call.args[2], width, "store")
        store = self.helper(f"_stb_{t}")
        for k in range(width):
            value = self.cast(f"{v}[{k}]", vec.ctype.dtype, t)
            self.pre(f"{store}({data}, {off} + {k * size_of(t)}, {value})")
        return None

    def view_load(self, node) -> str:
        data, off, t = self.view_element(node, "load")
        ptr = node.value.ctype
        if not isinstance(t, ct.VecT) and _direct(t, ptr):  # aligned: a whole element
            return self.decode(f"{self._view_data(t, ptr)}[{off} // {size_of(t)}]", t)
        if not isinstance(t, ct.VecT):
            return self.load_bytes(t, data, off)

        def build(names):
            src, at = names
            return "(" + ", ".join(
                self.decode(place, t.dtype) if how == "elem" else
                self.load_bytes(t.dtype, src, place)
                for how, place in self._vector_parts(src, at, t, ptr)) + ",)"

        return self.vec_lift([self._view_data(t, ptr), off], build)

    def view_store(self, target, value) -> None:
        def build():
            t = target.value.ctype.view
            v = self.fresh("_v")
            self.pre(f"{v} = {self.typed(value, t)}")
            data, off, _ = self.view_element(target, "store")
            ptr = target.value.ctype
            if not isinstance(t, ct.VecT) and _direct(t, ptr):
                return (f"{self._view_data(t, ptr)}[{off} // {size_of(t)}] = "
                        f"{self.encode(v, t)}")
            if not isinstance(t, ct.VecT):
                return self.helper(f"_stb_{t}") + f"({data}, {off}, {v})"
            dst = self._view_data(t, ptr)
            for k, (how, place) in enumerate(self._vector_parts(dst, off, t, ptr)):
                if how == "elem":
                    self.pre(f"{place} = {self.encode(f'{v}[{k}]', t.dtype)}")
                else:
                    self.pre(self.helper(f"_stb_{t.dtype}") + f"({dst}, {place}, {v}[{k}])")
            return None

        self.statement(build)

    def record_offset(self, node) -> str:
        """``b = x[ib]``: the value of ``b``, a pointer to record ``ib`` (a record index, or
        a byte offset through a view), checked against the buffer where C copies it."""
        ptr: ct.PtrT = node.ctype
        size = ptr.dtype.itemsize
        site = self.module.site(node, ptr.base, "load", ptr.array.space, "uint8", width=size)
        data = self.byte_base(ptr.base, ptr.array)
        index = self.typed(node.slice, "int64")
        if isinstance(node.value.ctype, ct.ArrayT):
            return self._field_index(index, f"({data}.shape[0] // {size})", site, False)
        at = self.pointer_offset(node.value)[2]
        if ptr.view is None:
            return self._field_index(f"({at} + {index})", f"({data}.shape[0] // {size})",
                                     site, False)
        return self._field_index(f"({at} + {index} * {size})",
                                 f"({data}.shape[0] - {size - 1})", site, False)

    def field_address(self, node, site: int, store: bool) -> tuple[str, str]:
        """(buffer code, byte offset code) of a field chain ending at ``node``."""
        if isinstance(node, ast.Name) and isinstance(node.ctype, StructT):  # by value
            return self.struct_bytes(node.id), self.const(0, "int64")
        if isinstance(node, ast.Name) and isinstance(node.ctype, ct.PtrT):  # xb.d: xb->d
            return self._struct_pointer(node, self.const(0, "int64"), site, store)
        if isinstance(node, ast.BinOp | ast.Call) and isinstance(node.ctype, ct.PtrT):
            return self._struct_pointer(node, self.const(0, "int64"), site, store)  # (x+1)->d
        if isinstance(node, ast.Subscript) and isinstance(node.value.ctype, ct.PtrT):
            return self._struct_pointer(node.value, self.typed(node.slice, "int64"), site,
                                        store)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            arrt = node.value.ctype
            if not isinstance(arrt, ct.ArrayT) or not isinstance(arrt.dtype, StructT):
                raise compile_error(node.loc, "internal: not a struct buffer")
            base, lead = self.array_base(node.value.id, arrt)
            if lead:
                raise compile_error(node.loc, "private arrays of structs are not supported")
            size = arrt.dtype.itemsize
            ib = self._field_index(self.typed(node.slice, "int64"),
                                   f"({base}.shape[0] // {size})", site, store)
            return base, f"({ib} * {size})"
        if isinstance(node, ast.Attribute):
            base, off = self.field_address(node.value, site, store)
            record = node.value.ctype
            field = (record.dtype if isinstance(record, ct.PtrT) else record).field(node.attr)
            return base, f"({off} + {field.offset})" if field.offset else off
        if isinstance(node, ast.Subscript):
            arrt: ct.ArrayT = node.value.ctype
            base, off = self.field_address(node.value, site, store)
            indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            stride = size_of(arrt.dtype)
            flat = []
            for dim, ix in enumerate(indices):
                code = self._field_index(self.typed(ix, "int64"),
                                         self.const(arrt.shape[dim], "int64"), site, store)
                inner = 1
                for n in arrt.shape[dim + 1:]:
                    inner *= n
                flat.append(f"{code} * {inner * stride}")
            return base, f"({off} + {' + '.join(flat)})"
        raise compile_error(getattr(node, "loc", None), "struct fields are read as "
                                                        "x[i].field or x[i].field[j]")

    def field_pointer_offset(self, node) -> str:
        """The byte offset of ``x[i].qs`` used as a pointer (places.field_pointer): the
        record's offset plus the field's, unchecked (forming a pointer reads nothing; the
        accesses through it are checked against the buffer's bytes)."""
        if isinstance(node, ast.Attribute):
            record = node.value.ctype
            field = (record.dtype if isinstance(record, ct.PtrT) else record).field(node.attr)
            return f"({self.field_pointer_offset(node.value)} + {field.offset})"
        t = node.ctype
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                isinstance(node.value.ctype, ct.ArrayT):  # x[i] on a struct buffer
            return f"({self.typed(node.slice, 'int64')} * {node.value.ctype.dtype.itemsize})"
        if isinstance(node, ast.Subscript):  # p[k] through a pointer to records
            ptr, index = node.value.ctype, self.typed(node.slice, "int64")
        else:  # xb (xb->qs), x + ib, a record read in place
            ptr, index = t, self.const(0, "int64")
        at = self.pointer_offset(node.value if isinstance(node, ast.Subscript) else node)[2]
        size = ptr.dtype.itemsize
        if ptr.view is not None:
            return f"({at} + {index} * {size})"
        if getattr(node, "record_ref", False):  # b = x[ib] read in place: its record index
            return f"({at} * {size})"
        return f"(({at} + {index}) * {size})"

    def _struct_pointer(self, name_node, index: str, site: int, store: bool):
        """(bytes, checked byte offset) of record ``p[index]`` through a pointer local: a
        view holds a byte offset, a pointer into a struct buffer a record offset."""
        ptr: ct.PtrT = name_node.ctype
        size = ptr.dtype.itemsize
        data = self.byte_base(ptr.base, ptr.array)
        at = self.pointer_offset(name_node)[2]
        off = (f"({at} + {index} * {size})" if ptr.view is not None
               else f"(({at} + {index}) * {size})")
        if ptr.record_copy:  # b = x[ib] checked the record where it was copied
            return data, off
        view_bytes = size if ptr.view is not None else 0  # a view's offset is in bytes
        return data, self._field_index(off, f"({data}.shape[0] - {size - 1})", site, store,
                                       view_bytes)

    def _field_site(self, node, kind: str) -> tuple[int, str, ct.ArrayT]:
        """The access site of a field chain, the buffer it is in and that buffer's type."""
        t = node.ctype.dtype if isinstance(node.ctype, ct.PtrT) else node.ctype
        while isinstance(node, ast.Subscript | ast.Attribute) and not pointer_element(node):
            node = node.value
        if isinstance(node.ctype, StructT):  # a struct variable: no memory access
            name = user_name(node.id)
            return self.module.site(node, name, kind, "private", "uint8"), name, None
        if isinstance(node.ctype, ct.PtrT):
            name, arrt = node.ctype.base, node.ctype.array
        else:
            name, arrt = node.id, node.ctype
        site = self.module.site(node, name, kind, arrt.space, "uint8",
                                width=_report_width(arrt, size_of(t)))
        return site, name, arrt

    def field_load(self, node) -> str:
        t = node.ctype
        if isinstance(t, StructT) or isinstance(t, ct.ArrayT):
            raise compile_error(node.loc, "a struct or an array field is not a value: read "
                                          "its fields or elements (x[i].d, x[i].qs[j])")
        site, name, arrt = self._field_site(node, "load")
        base, off = self.field_address(node, site, store=False)
        off = self.report_bytes(site, name, arrt, off, "load")
        return self.load_bytes(t, base, off)

    def load_bytes(self, t: str, data: str, off: str) -> str:
        """A value of scalar type ``t`` at byte ``off`` of ``data``: a byte is read as it is
        (one helper function fewer for Numba to compile), wider types by ``_ldb_T``."""
        if self.proven_indices and t in ("uint8", "int8"):
            off = f"np.uint64({off})"  # no wrap-around test of a negative offset (lane_emit)
        if t == "uint8":
            return f"{data}[{off}]"
        if t == "int8":
            return f"np.int8({data}[{off}])"
        return self.helper(f"_ldb_{t}") + f"({data}, {off})"

    def struct_bytes(self, name: str) -> str:
        """The bytes of struct variable ``name``: an argument's, a helper's own, or this
        work-item's row of a kernel's private struct."""
        if self.storage.get(name) == "sarray":
            return f"v_{name}__c[{self.lid_code()}]"
        return f"v_{name}"

    def struct_source(self, node) -> tuple[str, str]:
        """(bytes, checked byte offset) of the record a struct-valued expression reads:
        ``b``, ``x[i]``, ``p[k]``, ``x[i].inner``; reported as one load of its bytes."""
        site, name, arrt = self._field_site(node, "load")
        data, off = self.field_address(node, site, store=False)
        return data, self.report_bytes(site, name, arrt, off, "load")

    def struct_copy(self, target, value) -> None:
        """C's struct assignment ``b = x[ib]``, ``x[i] = b``, ``y[j] = x[i]``: the bytes."""
        size = size_of(value.ctype.dtype if isinstance(value.ctype, ct.PtrT)
                       else value.ctype)
        if is_struct_value(value):  # v = struct_value(T): zeroed; its fields are stored next
            self.emit(f"{self.struct_bytes(target.id)}[:] = 0")
            return

        def build():
            if isinstance(value, ast.Call):  # a helper returning a struct: its own bytes
                src, soff = self.expr(value), self.const(0, "int64")
            else:
                src, soff = self.struct_source(value)
            s = self.fresh("_so")
            self.pre(f"{s} = {soff}")
            if isinstance(target, ast.Name):
                dst, doff = self.struct_bytes(target.id), self.const(0, "int64")
            else:
                site, name, arrt = self._field_site(target, "store")
                dst, off = self.field_address(target, site, store=True)
                doff = self.fresh("_fo")
                self.pre(f"{doff} = {off}")
                doff = self.report_bytes(site, name, arrt, doff, "store")
            return self.helper("_cpb") + f"({dst}, {doff}, {src}, {s}, {size})"

        self.statement(build)

    def returned_struct(self, value) -> str:
        """The bytes a helper returns for a struct value (the caller copies them): a private
        struct's own, or a copy of a record read from memory (``return x[i]``)."""
        if isinstance(value, ast.Name) and isinstance(value.ctype, StructT):
            return self.struct_bytes(value.id)
        size = size_of(value.ctype.dtype if isinstance(value.ctype, ct.PtrT) else value.ctype)
        src, soff = self.struct_source(value)
        out = self.fresh("_sr")
        self.pre(f"{out} = {self.module.empty(size, 'uint8')}")
        self.pre(self.helper("_cpb") + f"({out}, 0, {src}, {soff}, {size})")
        return out

    def field_store(self, target, value) -> None:
        t = target.ctype

        def build():
            v = self.fresh("_v")
            self.pre(f"{v} = {self.typed(value, t)}")
            site, name, arrt = self._field_site(target, "store")
            base, off = self.field_address(target, site, store=True)
            o = self.fresh("_fo")
            self.pre(f"{o} = {off}")
            o = self.report_bytes(site, name, arrt, o, "store")
            return self.helper(f"_stb_{t}") + f"({base}, {o}, {v})"

        self.statement(build)


def aligned_pointers(view_values: dict, env: dict) -> set[str]:
    """The view pointer locals (``p = view(x, T, off)``, ``p = p + k``): each value is
    checked for alignment where it is assigned unless it is known aligned
    (``StructEmitter.check_assigned_alignment``), so accesses through them need no check.
    C makes the misaligned conversion itself undefined (C11 6.3.2.3p7), so the check is
    there, once per assignment instead of once per access."""
    return {n for n in view_values if isinstance(env.get(n), ct.PtrT) and
            env[n].view is not None}


def _aligned_view(pointer, size: int, aligned_names=()) -> bool:
    """``view(x, T)``, ``view(x, T, k)`` with a constant ``k`` that is a multiple of ``size``,
    a pointer local known to hold such views (``aligned_names``), or one of these plus an
    element count: aligned whatever the run-time values."""
    if getattr(pointer, "component_view", False):  # p[i].y: aligned if the vector p[i] is
        return _aligned_view(pointer.args[0], size, aligned_names)
    while isinstance(pointer, ast.BinOp) and isinstance(pointer.op, ast.Add | ast.Sub):
        left = isinstance(getattr(pointer.left, "ctype", None), ct.PtrT)
        pointer = pointer.left if left else pointer.right
    if isinstance(pointer, ast.Name) and pointer.id in aligned_names:
        return size_of(pointer.ctype.view) % size == 0
    ptr = getattr(pointer, "ctype", None)
    if isinstance(ptr, ct.PtrT) and ptr.view is None and not isinstance(pointer, ast.Call):
        # an element pointer (x, x + k, a pointer local of elements): whole elements
        return not isinstance(ptr.array.dtype, StructT) and size_of(ptr.array.dtype) % size == 0
    if not (isinstance(pointer, ast.Call) and isinstance(pointer.args[0], ast.Name)
            and isinstance(pointer.args[0].ctype, ct.ArrayT | ct.PtrT)):
        return False
    if isinstance(pointer.args[0].ctype, ct.PtrT) and \
            not getattr(pointer.args[0], "as_pointer", False):
        return False  # a pointer local: its offset is known at run time only
    if len(pointer.args) == 2:  # the start of a buffer, aligned for every type
        return True
    offset = pointer.args[2]
    value = offset.value if isinstance(offset, ast.Constant) else \
        getattr(offset, "resolved", (None, None))[1] if \
        getattr(offset, "resolved", (None,))[0] == "const" else None
    return isinstance(value, int | np.integer) and int(value) % size == 0


def _direct(t, ptr: ct.PtrT) -> bool:
    """A view read straight from the buffer's own elements: a vector or scalar of the
    buffer's element type (aligned, so at a whole element)."""
    return ct.elem(t) == ptr.array.dtype and ptr.array.space != "constant" and \
        not isinstance(t, StructT)


def _bytewise(arrt: ct.ArrayT) -> bool:
    return isinstance(arrt.dtype, StructT) or arrt.dtype in ("uint8", "int8")


def _report_width(arrt: ct.ArrayT, nbytes: int) -> int:
    """How many elements of the reported array an access of ``nbytes`` bytes spans."""
    return nbytes if _bytewise(arrt) else max(1, nbytes // size_of(arrt.dtype))
