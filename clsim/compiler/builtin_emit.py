"""Statement builtins with their own code shapes: printf's record append, vstore_half's
rounded stores, vload_half's loads, private_array's initialiser. A mixin of
``codegen.FunctionEmitter`` (it uses its ``pre``, ``typed``, ``cast`` and ``array_base``).
"""

from __future__ import annotations

from contextlib import ExitStack

from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.diagnostics import compile_error


class BuiltinStatements:
    def _fill(self, name: str, t: ct.ArrayT, fill, node) -> None:
        if fill is None:
            return
        base, lead = self.array_base(name, t)
        row = f"{base}[{lead[0]}]" if lead else base
        kind, values = fill
        if kind == "all":
            self.statement(lambda: f"{row}.fill({self._fill_value(values, t.dtype)})")
        else:
            self.emit(f"{row}.fill({self.encode(self.const(0, t.dtype), t.dtype)})")
            for k, v in enumerate(values):
                self.statement(lambda k=k, v=v: f"{row}[{k}] = {self._fill_value(v, t.dtype)}")
        if self.module.instruments:
            self._fill_seen(name, t, node)

    def _fill_value(self, value, dtype: str) -> str:
        """An initialiser's value as the array stores it: a number, or an expression's node
        (converted to the element type, as C's initialisation)."""
        code = self.typed(value, dtype) if hasattr(value, "ctype") else self.const(value, dtype)
        return self.encode(code, dtype)

    def _fill_seen(self, name: str, t: ct.ArrayT, node) -> None:
        """The initialiser as instruments see it: a store of every element (else the
        uninitialised-read check reports the first read of a filled private array)."""
        base, lead = self.array_base(name, t)
        site = self.module.site(node, name, "store", t.space, t.dtype)
        ks = [self.fresh("_f") for _ in t.shape]
        with ExitStack() as loops:
            for k, n in zip(ks, t.shape, strict=True):
                self.emit(f"for {k} in range({int(n)}):")
                loops.enter_context(self.indented())

            def build():
                codes = self.module.access(self, site, name, t, list(ks), "store")
                return (f"{base}[{', '.join(lead + list(codes))}] = "
                        f"{base}[{', '.join(lead + ks)}]")

            self.statement(build)

    def printf(self, call) -> None:
        """Append [site, global linear id, argument bits...] to the launch's printf buffer."""
        site = self.module.site(call, "", "printf", "none", "none")
        self.module.printf_sites[site] = (call.printf_format, call.printf_kinds)
        glid = ("((_gz * _E2 + _lz) * _G1 * _G0 + (_gy * _E1 + _ly) * _G0 + "
                "(_gx * _E0 + _lx))")
        values, vectors = [], {}
        for (arg, comp), (kind, _bits) in zip(call.printf_pieces, call.printf_kinds,
                                              strict=True):
            if comp is None:
                code, t = self.typed(arg, ct.promote(arg.ctype) if kind != "f" else
                                     "float64"), arg.ctype
                t = "float64" if kind == "f" else ct.promote(t)
            else:  # a vector's component: the vector is evaluated once
                if id(arg) not in vectors:
                    vectors[id(arg)] = self.fresh("_pv")
                    self.pre(f"{vectors[id(arg)]} = {self.expr(arg)}")
                t = arg.ctype.dtype
                code = f"{vectors[id(arg)]}[{comp}]"
            if kind == "f":
                values.append(f"_bitcast_int64({self.cast(code, t, 'float64')})")
            else:
                values.append(self.cast(self.cast(code, t, ct.promote(t)), ct.promote(t),
                                        "int64"))
        n = self.fresh("_pn")
        lines = [f"{n} = _pf[0, 0] + 1", f"if {n} < _pf.shape[0]:",
                 f"    _pf[{n}, 0] = {site}", f"    _pf[{n}, 1] = {glid}"]
        lines += [f"    _pf[{n}, {2 + k}] = {v}" for k, v in enumerate(values)]
        lines.append(f"_pf[0, 0] = {n}")
        for line in lines:
            self.pre(line)
        return None

    def half_vload(self, call, width: int, stride: int) -> str:
        """vload_half / vload_halfN / vloada_halfN: floats from half bits at offset*stride."""
        vec = self.vload(call, width, stride)
        return f"({vec})[0]" if width == 1 else vec

    def vector_store_target(self, call, vec, offset_node, buf, width: int, stride: int):
        """The bounds-checked start of a vstoreN / vstore_halfN: (the vector's local, element
        offset, array base, leading indices, array type); one store site for the traffic
        model and the checks."""
        name, arrt, start = self.pointer_offset(buf)
        base, lead = self.array_base(name, arrt)
        v = self.fresh("_vv")
        self.pre(f"{v} = {self.expr(vec)}")
        o = self.fresh("_vo")
        self.pre(f"{o} = {start} + {self.typed(offset_node, 'int64')} * {stride}")
        site = self.module.site(call, name, "store", arrt.space, arrt.dtype, width=width)
        if self.bounds_checks:
            length = f"{base}.shape[{len(lead)}]"
            self.pre(f"if {o} < 0 or {o} + {width - 1} >= {length}:\n"
                     f"    {self.helper('_oob')}(_err, {self.const(hp.ERR_OOB_STORE, 'int64')}, "
                     f"{self.const(site, 'int64')}, {o} + {width - 1}, {length}, "
                     f"{self.lid_code()})\n    {self.err_return}")
        wrapped = self.module.access(self, site, name, arrt, [o], "store")[0]
        if wrapped != o:
            self.pre(f"{o} = {wrapped}")
        lead_code = ", ".join(lead) + ", " if lead else ""
        return v, o, base, lead_code, arrt

    def half_vstore(self, call, width: int, stride: int, mode: int) -> None:
        """vstore_half[N][_mode]: each float rounded to half by ``mode`` at offset*stride."""
        vec, offset_node, buf = call.args
        if getattr(buf.ctype, "view", None) is not None:  # a view: the half's two bytes
            if stride != width:
                raise compile_error(call.loc, "vstorea_half3 through a view is not supported")
            v = self.fresh("_vv")
            self.pre(f"{v} = {self.expr(vec)}")
            data, off, _t = self.view_vector(call, buf, width, "store")
            comps = [v] if width == 1 else [f"{v}[{k}]" for k in range(width)]
            for k, comp in enumerate(comps):
                bits = f"{self.helper('_f2h_mode')}({comp}, {self.const(mode, 'int64')})"
                self.pre(f"{self.helper('_stb_uint16')}({data}, {off} + {2 * k}, {bits})")
            return None
        v, o, base, lead_code, _arrt = self.vector_store_target(call, vec, offset_node, buf,
                                                                width, stride)
        comps = [v] if width == 1 else [f"{v}[{k}]" for k in range(width)]
        for k, comp in enumerate(comps):
            self.pre(f"{base}[{lead_code}{o} + {k}] = {self.helper('_f2h_mode')}({comp}, "
                     f"{self.const(mode, 'int64')})")
        return None
