"""A parsed ``.cl`` file to one Python module of clsim kernels, with its line map.

Program-scope declarations come out in source order: structs as numpy dtypes, ``constant``
tables as numpy arrays, helpers as ``@func``, kernels as ``@kernel``. A function that uses a
construct the Python language cannot express yet is written as a comment naming it, and
``Translation.failures`` says which (a kernel calling such a helper fails too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import clsim
from clsim import api
from clsim.frontends.opencl_c.ctype import CType, clear_memo, ctype, struct_name
from clsim.frontends.opencl_c.exprs import (CK, Unsupported, children, literal, sampler_text,
                                            sampler_value, site, strip)
from clsim.frontends.opencl_c.names import Names
from clsim.frontends.opencl_c.parse import Parsed, evaluate
from clsim.frontends.opencl_c.selectors import MacroSelectors
from clsim.frontends.opencl_c.stmts import Line, Statements

_IMPORTABLE = set(api.BUILTIN_NAMES) | {n for n in vars(api) if n.isupper()} | {
    "kernel", "func", "view", "local_array", "private_array", "pointer_array"}
_IDENT = re.compile(r"(?<![.\w])([A-Za-z_]\w*)")


@dataclass
class Failure:
    function: str
    line: int
    what: str

    def message(self, file: str) -> str:
        return (f"{file}:{self.line} in {self.function}: {self.what} is not supported by "
                "clsim's Python kernel language yet")


@dataclass
class Translation:
    """The generated module and what it maps back to."""

    path: str
    source: str = ""
    line_map: dict[int, int] = field(default_factory=dict)  # Python line -> .cl line
    kernels: list[str] = field(default_factory=list)
    # kernel signatures: per parameter (name, CType)
    params: dict[str, list[tuple[str, CType]]] = field(default_factory=dict)
    failures: dict[str, Failure] = field(default_factory=dict)  # function -> why
    kernel_names: list[str] = field(default_factory=list)  # every kernel, translated or not
    cl_text: str = ""  # the .cl file's text, for error messages
    # (function, image parameter index) -> the image builtins' suffixes used on it ("f", "ui"),
    # and the helpers' (function, index) it is handed to: what format the host must give it
    image_uses: dict[tuple[str, int], set] = field(default_factory=dict)

    def failure_of(self, kernel: str) -> Failure | None:
        return self.failures.get(kernel)

    def image_suffixes(self, function: str, index: int, seen=None) -> set[str]:
        """The read/write suffixes (f, h, i, ui) a function's image parameter meets, through
        the helpers it is passed to."""
        seen = set() if seen is None else seen
        out = set()
        for use in self.image_uses.get((function, index), ()):
            if isinstance(use, str):
                out.add(use)
            elif use not in seen:
                seen.add(use)
                out |= self.image_suffixes(*use, seen)
        return out


class ModuleEmitter:
    def __init__(self, parsed: Parsed):
        self.parsed = parsed
        self.short = Path(parsed.path).name
        self.out: list[Line] = []
        self.header: list[str] = []
        self.taken: set[str] = set()
        self.func_names: dict[int, str] = {}
        self.samplers: dict[tuple, str] = {}  # where a sampler's initialiser is -> its name
        self.macro_selectors = MacroSelectors(parsed.tu)
        self.calls: dict[str, set[str]] = {}
        self.current = ""
        self.return_type = CType("void")
        self.t = Translation(parsed.path, cl_text=parsed.files.get(parsed.path, ""))
        self._lines: dict[str, list[str]] = {}

    # -- called by the expression emitters
    def use(self, name: str) -> None:
        pass  # imports are collected from the generated text

    def text(self, cursor) -> str:
        """The source text a node spans (a macro's name where it was expanded)."""
        start, end = cursor.extent.start, cursor.extent.end
        if start.file is None or start.line != end.line:
            return ""
        lines = self._lines.setdefault(start.file.name, self.parsed.files.get(
            start.file.name, "").splitlines())
        if start.line > len(lines):
            return ""
        return lines[start.line - 1][start.column - 1:end.column - 1]

    def function_name(self, decl) -> str:
        return self.func_names.get(decl.hash, decl.spelling)

    def declare_sampler(self, var, init, name: str) -> str:
        """A constant ``sampler_t`` as a module-level int (the image builtins take a sampler
        only so), under ``name`` or, when that is taken, a fresh one; returns the name."""
        top, n = name, 1
        while top in self.taken:
            n += 1
            top = f"{name}_{n}"
        self.taken.add(top)
        self.samplers[site(init)] = top
        self.put_top(f"{top} = {sampler_text(var, init)}", var)
        return top

    def sampler_at(self, cursor) -> str:
        """The module-level name of the sampler whose initialiser clang put at ``cursor``."""
        name = self.samplers.get(site(cursor))
        if name is None:
            raise Unsupported(cursor, "a sampler that is not a declared constant")
        return name

    def note_image(self, arg, use) -> None:
        """``arg`` (an image parameter, by name) meets ``use``: a builtin's suffix or a
        helper's (name, parameter index)."""
        ref = strip(arg).referenced if strip(arg).kind == CK.DECL_REF_EXPR else None
        if ref is None or ref.kind != CK.PARM_DECL or ctype(ref.type).kind != "image":
            return
        index = next(i for i, p in enumerate(ref.semantic_parent.get_arguments()) if p == ref)
        self.t.image_uses.setdefault((self.current, index), set()).add(use)

    def check_callable(self, decl, call) -> None:
        self.calls.setdefault(self.current, set()).add(decl.spelling)
        if ctype(decl.result_type).kind == "pointer":
            raise Unsupported(call, f"a helper returning a pointer ({decl.spelling})")

    # -- module
    def run(self) -> Translation:
        tu = self.parsed.tu
        mine = [c for c in tu.cursor.get_children()
                if c.location.file and c.location.file.name in self.parsed.files
                and not c.location.file.name.startswith("/clsim-prelude")]
        for c in mine:
            if c.kind == CK.FUNCTION_DECL and c.is_definition():
                name = c.spelling + "_" if c.spelling in api.BUILTIN_NAMES else c.spelling
                self.func_names[c.hash] = name
                self.taken.add(name)
        for c in mine:
            self.top_level(c)
        self._propagate_failures()
        self._assemble()
        return self.t

    def top_level(self, c) -> None:
        kind = c.kind
        if kind == CK.STRUCT_DECL and c.is_definition():
            self.struct(c)
        elif kind == CK.TYPEDEF_DECL:
            target = c.underlying_typedef_type.get_canonical()
            decl = target.get_declaration()
            if decl.kind == CK.STRUCT_DECL and struct_name(decl) != c.spelling:
                self.put_top(f"{c.spelling} = {struct_name(decl)}", c)
        elif kind == CK.VAR_DECL:
            self.global_var(c)
        elif kind == CK.FUNCTION_DECL and c.is_definition():
            self.function(c)

    def put_top(self, text: str, c) -> None:
        self.out.append(Line(0, text, c.extent.start.line))

    def struct(self, c) -> None:
        name = struct_name(c)
        fields = []
        for f in children(c):
            if f.kind != CK.FIELD_DECL:
                continue
            t = ctype(f.type)
            if t.kind == "scalar":
                fields.append(f'("{f.spelling}", np.{t.name})')
            elif t.kind == "array" and t.inner.kind == "scalar":
                dims = f"({t.dims[0]},)" if len(t.dims) == 1 else str(t.dims)
                fields.append(f'("{f.spelling}", np.{t.inner.name}, {dims})')
            elif t.kind == "struct":
                fields.append(f'("{f.spelling}", {t.name})')
            else:
                self.out.append(Line(0, f"# struct {name}: field '{f.spelling}' of type {t} "
                                        "is not supported", c.extent.start.line))
                return
        offsets = [f.get_field_offsetof() // 8 for f in children(c) if f.kind == CK.FIELD_DECL]
        size = c.type.get_size()
        packed = _packed_size(c)
        if size == packed:
            self.put_top(f"{name} = np.dtype([{', '.join(fields)}])", c)
        else:  # C's alignment padding, as clang lays it out
            names = [re.match(r'\("(\w+)", (.*)\)', f) for f in fields]
            formats = [m.group(2) if ", (" not in m.group(2) else
                       f"({m.group(2).split(', ', 1)[0]}, {m.group(2).split(', ', 1)[1]})"
                       for m in names]
            self.put_top(f"{name} = np.dtype({{'names': {[m.group(1) for m in names]}, "
                         f"'formats': [{', '.join(formats)}], 'offsets': {offsets}, "
                         f"'itemsize': {size}}})", c)
        self.taken.add(name)

    def global_var(self, c) -> None:
        t = ctype(c.type)
        kids = [k for k in children(c) if k.kind != CK.TYPE_REF]
        init = kids[-1] if kids else None
        if "__constant" not in c.type.spelling and "const" not in c.type.spelling:
            self.put_top(f"# {c.spelling}: a program-scope variable is not supported", c)
            return
        if t.kind == "array" and t.inner.kind == "scalar" and init is not None and \
                init.kind == CK.INIT_LIST_EXPR:
            values = _flatten(init)
            if any(v is None for v in values):
                self.put_top(f"# {c.spelling}: a table with non-constant values", c)
                return
            total = int(np.prod(t.dims))
            values += [0] * (total - len(values))
            shape = f".reshape({t.dims})" if len(t.dims) > 1 else ""
            self.put_top(f"{c.spelling} = np.array({values!r}, np.{t.inner.name}){shape}", c)
        elif t.kind == "sampler" and init is not None and sampler_value(init) is not None:
            self.declare_sampler(c, init, c.spelling)
        elif t.kind == "scalar" and init is not None and evaluate(strip(init)) is not None:
            self.put_top(f"{c.spelling} = {literal(evaluate(strip(init)), t).code}", c)
        else:
            self.put_top(f"# {c.spelling}: this program-scope constant is not supported", c)
        self.taken.add(c.spelling)

    def function(self, c) -> None:
        name = self.function_name(c)
        is_kernel = _is_kernel(c)
        if is_kernel:
            self.t.kernel_names.append(c.spelling)
        self.current = c.spelling
        names = Names(self.taken)
        params = []
        for p in c.get_arguments():
            t = ctype(p.type)
            params.append((names.declare(p, t), t))
        self.return_type = ctype(c.result_type)
        emitter = Statements(self, names)
        try:
            for p_name, t in params:
                if t.kind == "other":
                    raise Unsupported(c, f"a parameter of type {t} ({p_name})")
                if t.kind == "sampler":  # the image builtins choose code by its bits
                    raise Unsupported(c, f"a sampler parameter ({p_name}; declare the sampler "
                                         "as a constant at program scope)")
                if is_kernel and t.kind == "vector":
                    # the simulator takes scalars: the vector is rebuilt from its components
                    parts = ", ".join(f"{p_name}_s{k:x}" for k in range(t.width))
                    emitter.put(f"{p_name} = {t.py_name}({parts})", c)
                elif is_kernel:
                    _retype_parameter(emitter, c, p_name, t)
            body = next(k for k in children(c) if k.kind == CK.COMPOUND_STMT)
            emitter.box_locals(body)
            emitter.find_flat_arrays(body)
            emitter.block(body)
        except Unsupported as exc:
            line = exc.cursor.extent.start.line if exc.cursor is not None else c.location.line
            self.t.failures[c.spelling] = Failure(c.spelling, line, exc.what)
            self.out.append(Line(0, "", c.location.line))
            self.put_top(f"# {name}: not translated: {exc.what} (line {line})", c)
            return
        if not emitter.lines:
            emitter.put("pass", c)
        self.out.append(Line(0, "", c.location.line))
        self.out.append(Line(0, "", c.location.line))
        self.put_top("@kernel" if is_kernel else "@func", c)
        self.put_top(f"def {name}({', '.join(_python_params(params, is_kernel))}):", c)
        self.out.extend(emitter.lines)
        if is_kernel:
            self.t.kernels.append(c.spelling)
            self.t.params[c.spelling] = params

    def _propagate_failures(self) -> None:
        changed = True
        while changed:
            changed = False
            for fn, callees in self.calls.items():
                if fn in self.t.failures:
                    continue
                bad = next((k for k in callees if k in self.t.failures), None)
                if bad is not None:
                    why = self.t.failures[bad]
                    self.t.failures[fn] = Failure(why.function, why.line,
                                                  f"{why.what} (in helper {bad})")
                    changed = True
        for fn in list(self.t.failures):
            if fn in self.t.kernels:
                self.t.kernels.remove(fn)

    def _assemble(self) -> None:
        body = [("    " * ln.indent + ln.text, ln.cl_line) for ln in self.out]
        text = "\n".join(t for t, _ in body)
        # names this clsim lacks (a newer language feature) are left to the compiler, which
        # reports them undefined at their .cl line
        used = sorted({m for m in _IDENT.findall(text) if m in _IMPORTABLE
                       and hasattr(clsim, m)} - self.taken)
        head = [f'"""Generated by clsim from {self.short}: OpenCL C translated to clsim\'s Python',
                'kernel language (edit the .cl file, not this one). Each statement names its',
                f'line in {self.short}."""', "", "import numpy as np", ""]
        if used:
            head.append("from clsim import " + ", ".join(used)
                        if len(", ".join(used)) < 70 else
                        "from clsim import (\n" + "".join(f"    {u},\n" for u in used) + ")")
        lines = "\n".join(head).splitlines()
        first = len(lines)
        width = max((len(t) for t, _ in body), default=0)
        width = min(max(width, 40), 88)
        for i, (code, cl_line) in enumerate(body):
            pyline = first + i + 1
            self.t.line_map[pyline] = cl_line
            if code.strip() and not code.lstrip().startswith("#"):
                code = f"{code:<{width}}  # {self.short}:{cl_line}"
            lines.append(code.rstrip())
        self.t.source = "\n".join(lines) + "\n"


def _python_params(params, is_kernel: bool) -> list[str]:
    """The Python parameters: a kernel's vector parameter is one per component
    (``ClKernel.adapt_args`` splits the argument)."""
    out = []
    for name, t in params:
        if is_kernel and t.kind == "vector":
            out += [f"{name}_s{k:x}" for k in range(t.width)]
        else:
            out.append(name)
    return out


def _retype_parameter(emitter, c, name: str, t: CType) -> None:
    """A kernel parameter the argument cannot type as C declares it gets its type first thing:
    a ``local T *`` is LocalMem's bytes, a ``global float4 *`` a float array."""
    if t.kind != "pointer":
        return
    inner = t.inner
    if inner.kind == "void":
        return  # local void *: LocalMem's bytes; each cast views them as it needs
    if t.space == "local" and not (inner.kind == "scalar" and inner.name in ("int8", "uint8")):
        pointee = f"np.{inner.name}" if inner.kind == "scalar" else inner.py_name
        emitter.put(f"{name} = view({name}, {pointee})", c)
    elif t.space != "local" and inner.kind == "vector":
        emitter.put(f"{name} = view({name}, {inner.py_name})", c)


def _is_kernel(c) -> bool:
    for tok in c.get_tokens():
        if tok.spelling in ("kernel", "__kernel"):
            return True
        if tok.spelling == c.spelling:
            return False
    return False


def _packed_size(c) -> int:
    return sum(f.type.get_size() for f in children(c) if f.kind == CK.FIELD_DECL)


def _flatten(init) -> list:
    out = []
    for k in children(init):
        if k.kind == CK.INIT_LIST_EXPR:
            out += _flatten(k)
        else:
            out.append(evaluate(strip(k)))
    return out


def translate_parsed(parsed: Parsed) -> Translation:
    clear_memo()
    return ModuleEmitter(parsed).run()
