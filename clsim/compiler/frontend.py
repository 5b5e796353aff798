"""Front end: a kernel's Python source to a checked, name-resolved AST.

Parses the function, rejects Python constructs OpenCL C has no counterpart for (with the line and
what to write instead), resolves every free name (builtins, helpers, numbers, numpy dtypes) and
inlines ``@func`` helpers that contain barriers, so the later passes see one function body.
Helpers without barriers stay separate functions (``Program.callees``). Typing and code
generation are not done here.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
import functools
import inspect
import textwrap
import types
from dataclasses import dataclass, field

import numpy as np

from clsim.api import KernelFunction, builtin_by_identity
from clsim.compiler import builtins as table
from clsim.compiler.astwalk import preorder, walk
from clsim.compiler.diagnostics import Loc, builtin_name, compile_error
from clsim.compiler.keywords import check_names
from clsim.compiler.loopvars import check_loop_variables
from clsim.errors import KernelCompileError

PY_BUILTIN_MAP = {"min": "min", "max": "max", "abs": "abs"}
PY_CONVERSIONS = {"int": "int32", "float": "float32", "bool": "bool"}


@dataclass
class Parsed:
    """One parsed kernel or helper."""

    fn: KernelFunction
    tree: ast.FunctionDef
    params: list[str]
    locals: set[str]
    callees: dict[str, Parsed] = field(default_factory=dict)
    has_cut: bool = False
    # Facts builtins' on_parse checks record, callees' included ("global_atomics").
    flags: set[str] = field(default_factory=set)

    @property
    def uses_global_atomics(self) -> bool:
        """Atomics on global memory make the launch run its groups in order (and so does
        printf, whose lines are collected in one buffer)."""
        return bool({"global_atomics", "printf"} & self.flags)

    @property
    def has_ordered_sums(self) -> bool:
        """Whether a collective sum or scan is called, whose float result depends on the
        order of its additions (``run(reduction_order=...)``)."""
        return "ordered_sums" in self.flags

    @functools.cached_property
    def stored_params(self) -> set[str]:
        """The parameters the kernel body stores to (``arguments.stored_buffers``), found
        once: walking the tree took about 0.5 ms of every launch."""
        from clsim.runtime.arguments import stored_buffers
        return stored_buffers(self.tree, self.params)


_REJECTED = {
    ast.List: "lists do not exist in OpenCL C; use private_array(n, np.float32)",
    ast.ListComp: "comprehensions do not exist in OpenCL C; write a for loop",
    ast.DictComp: "comprehensions do not exist in OpenCL C; write a for loop",
    ast.SetComp: "comprehensions do not exist in OpenCL C; write a for loop",
    ast.GeneratorExp: "generators do not exist in OpenCL C; write a for loop",
    ast.Dict: "dicts do not exist in OpenCL C",
    ast.Set: "sets do not exist in OpenCL C",
    ast.Lambda: "lambdas do not exist in OpenCL C; write a @clsim.func helper",
    ast.Try: "OpenCL C has no exceptions; remove try/except",
    ast.With: "'with' has no OpenCL C counterpart",
    ast.Raise: "OpenCL C has no exceptions; remove raise",
    ast.Assert: "assert is not supported in kernels; use an if and write a flag to a buffer",
    ast.Global: "kernels cannot rebind module globals; pass a buffer",
    ast.Nonlocal: "kernels cannot rebind enclosing variables; pass a buffer",
    ast.Import: "import at module level, not inside the kernel",
    ast.ImportFrom: "import at module level, not inside the kernel",
    ast.FunctionDef: "define helpers at module level with @clsim.func",
    ast.ClassDef: "classes do not exist in OpenCL C",
    ast.JoinedStr: "strings do not exist in OpenCL C",
    ast.Delete: "'del' has no OpenCL C counterpart",
    ast.Starred: "star-arguments are not supported in kernels",
    ast.Yield: "generators do not exist in OpenCL C",
    ast.Await: "async code does not exist in OpenCL C",
    ast.AsyncFor: "async code does not exist in OpenCL C",
    ast.NamedExpr: "':=' is not supported; assign on its own line",
    ast.Slice: "slices are not supported; index one element at a time (or use vload4)",
}
_REJECTED_TYPES = tuple(_REJECTED)


class _Annotator:
    """Attaches a Loc to every node and rejects unsupported constructs."""

    def __init__(self, file: str, first_line: int, lines: list[str], func: str,
                 line_map: dict | None = None):
        self.file, self.first, self.lines, self.func = file, first_line, lines, func
        # Generated kernels (clsim.frontends) map their lines to the source they came from.
        self.line_map = line_map or {}
        self.locs: dict[int, Loc] = {}  # one per line: every node of a line shares it (frozen)

    def _text(self, lineno: int) -> str:
        rel = lineno - 1
        return self.lines[rel] if 0 <= rel < len(self.lines) else ""

    def _loc(self, lineno: int) -> Loc:
        loc = self.locs.get(lineno)
        if loc is None:
            line = self.first + lineno - 1
            file, shown, shown_text = self.line_map.get(line, (self.file, line,
                                                               self._text(lineno)))
            loc = self.locs[lineno] = Loc(file, shown, self.func, shown_text)
        return loc

    def annotate(self, node):
        lineno = getattr(node, "lineno", None)
        if lineno is not None:
            node.loc = self._loc(lineno)
            if type(node) is ast.Constant and type(node.value) is int \
                    and 2**31 <= node.value < 2**32 and self._text(lineno)[
                        node.col_offset:node.col_offset + 2].lower() in ("0x", "0o", "0b"):
                # C gives a hex/octal literal the first of int, uint, long, ulong that holds it
                # (decimal: int, long), so 0x80000000 is a uint; elsewhere the two agree.
                node.resolved = ("const", np.uint32(node.value))
        if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult):
            raise compile_error(getattr(node, "loc", None), "'@' is not supported; write the "
                                                            "loops (or dot(a, b) on vectors)")
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn)
                                                 for op in node.ops):
            raise compile_error(getattr(node, "loc", None), "'in' is not supported: compare "
                                                            "element by element with ==")
        if isinstance(node, _REJECTED_TYPES):  # one test per node; the loop only on a hit
            for bad, why in _REJECTED.items():
                top = isinstance(node, ast.FunctionDef) and node is self.top
                if isinstance(node, bad) and not top:
                    raise compile_error(getattr(node, "loc", None), why)

    def run(self, tree: ast.FunctionDef) -> None:
        self.top = tree
        for node in preorder(tree):  # a NodeVisitor's order: the same first error
            self.annotate(node)


def _resolve_value(obj, loc: Loc, name: str):
    """Classify the Python object a free name refers to."""
    bname = builtin_by_identity(obj)
    if bname is not None:
        return ("builtin", bname)
    if isinstance(obj, KernelFunction):
        if obj.is_kernel:
            raise compile_error(loc, f"'{name}' is a kernel; kernels cannot call kernels. "
                                     "Mark the callee @clsim.func")
        return ("func", obj)
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return ("dtype", np.dtype(obj).name)
    if isinstance(obj, np.dtype) and obj.names is not None:
        return ("struct", obj)  # a packed struct type, e.g. for view(x, block_q4_0, off)
    if isinstance(obj, np.dtype):
        return ("dtype", obj.name)
    if isinstance(obj, bool | int | float | np.number | np.bool_):
        return ("const", obj)
    if isinstance(obj, np.ndarray) and obj.ndim >= 1 and obj.dtype.kind in "iuf":
        return ("table", obj)  # a __constant table, frozen into the generated module
    if isinstance(obj, types.ModuleType):
        return ("module", obj)
    if obj is py_builtins.range:
        return ("range", None)
    for pyname, mapped in PY_BUILTIN_MAP.items():
        if obj is getattr(py_builtins, pyname):
            return ("builtin", mapped)
    for pyname, dtype in PY_CONVERSIONS.items():
        if obj is getattr(py_builtins, pyname):
            return ("dtype", dtype)
    kind = type(obj).__name__
    raise compile_error(
        loc,
        f"'{name}' (a {kind}) cannot be used inside a kernel: only numbers, numpy dtypes, clsim "
        "builtins and @clsim.func helpers are visible there. Pass data as a buffer argument",
    )


class _Resolver(ast.NodeTransformer):
    """Annotates free names and attribute chains with what they resolve to."""

    def __init__(self, fn, local_names: set[str]):
        self.fn = fn
        self.local_names = local_names
        closure = inspect.getclosurevars(fn)
        self.scope = {**fn.__globals__, **closure.nonlocals}

    def _lookup(self, name: str, loc: Loc):
        if name in self.scope:
            return self.scope[name]
        if hasattr(py_builtins, name):
            return getattr(py_builtins, name)
        raise compile_error(loc, f"name '{name}' is not defined")

    def visit_Name(self, node: ast.Name):
        if node.id in self.local_names:
            return node
        if not isinstance(node.ctx, ast.Load):
            return node
        node.resolved = _resolve_value(self._lookup(node.id, node.loc), node.loc, node.id)
        return node

    def visit_Call(self, node: ast.Call):
        """``exp(x)`` where a block elsewhere assigns a variable ``exp`` (C's block scope: a
        block-local ``int exp`` shadows the builtin only in its block). A variable is never
        callable in a kernel, so a called name is the builtin or helper of that name."""
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.local_names and (
                func.id in self.scope or hasattr(py_builtins, func.id)):
            try:
                resolved = _resolve_value(self._lookup(func.id, func.loc), func.loc, func.id)
            except KernelCompileError:
                resolved = (None, None)  # not callable either way: typing says so
            if resolved[0] in ("builtin", "func", "dtype", "range"):
                func.resolved = resolved
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node: ast.Attribute):
        chain = []
        base = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id not in self.local_names:
            obj = self._lookup(base.id, node.loc)
            for attr in reversed(chain):
                if not hasattr(obj, attr):
                    raise compile_error(node.loc, f"'{base.id}' has no attribute '{attr}'")
                obj = getattr(obj, attr)
            node.resolved = _resolve_value(obj, node.loc, ast.unparse(node))
            return node
        # v.x on a vector value: handled by the type checker.
        self.generic_visit(node)
        return node


def _assigned_names(tree: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in tree.args.args}
    for node in walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


_PARSE_CACHE: dict[int, Parsed] = {}


def parse(fn: KernelFunction) -> Parsed:
    """Parse, check and resolve ``fn`` and, recursively, the helpers it calls."""
    key = id(fn)
    if key in _PARSE_CACHE and _PARSE_CACHE[key].fn is fn:
        return _PARSE_CACHE[key]
    py = fn.fn
    try:
        lines, first = inspect.getsourcelines(py)
    except (OSError, TypeError) as exc:
        raise KernelCompileError(f"cannot read the source of {fn.name}: {exc}") from exc
    source = textwrap.dedent("".join(lines))
    file = inspect.getsourcefile(py) or "<unknown>"
    tree = _function_def(source, py, file, first, fn.name)
    tree.decorator_list = []
    tree.returns = None
    _Annotator(file, first, source.splitlines(), fn.name,
               getattr(fn, "line_map", None)).run(tree)
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
        raise compile_error(tree.loc, "kernel parameters must be plain positional names")
    check_names(tree)
    local_names = _assigned_names(tree)
    tree = _Resolver(py, local_names).visit(tree)
    parsed = Parsed(fn=fn, tree=tree, params=[a.arg for a in args.args], locals=local_names)
    _PARSE_CACHE[key] = parsed  # first, so that a helper calling itself finds it
    try:
        _check_calls(parsed)
        check_loop_variables(parsed.tree)
    except KernelCompileError:
        del _PARSE_CACHE[key]  # the next parse must raise again
        raise
    return parsed


def forget(parsed: Parsed) -> None:
    """Drop the cached parse of ``parsed`` and of the helpers it calls, so the next ``parse``
    resolves their free names again (a module-level constant was rebound:
    ``clsim.compiler.constants``)."""
    stack, seen = [parsed], set()
    while stack:
        item = stack.pop()
        if id(item) not in seen:
            seen.add(id(item))
            _PARSE_CACHE.pop(id(item.fn), None)
            stack.extend(item.callees.values())


def _function_def(source: str, py, file: str, first: int, name: str) -> ast.FunctionDef:
    """The function's definition in ``source`` (read from its file now), refused when it is
    not the function Python loaded: a file edited since its import puts other lines there,
    and compiling them would give errors about code the user is not running."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        module = ast.Module(body=[], type_ignores=[])
    tree = next((n for n in module.body if isinstance(n, ast.FunctionDef)), None)
    code = py.__code__
    if tree is None or tree.name != code.co_name or [a.arg for a in tree.args.args] != \
            list(code.co_varnames[:code.co_argcount]):
        raise KernelCompileError(
            f"{file}:{first}: the source of {name} in its file no longer matches the function "
            "Python loaded (the file was edited after it was imported). Rerun, or reload the "
            "module, so that clsim compiles the code that runs.")
    return tree


def _check_calls(parsed: Parsed) -> None:
    """Parse the helpers ``parsed`` calls and run the builtins' checks on its calls."""
    for node in walk(parsed.tree):
        if not isinstance(node, ast.Call):
            continue
        target = getattr(node.func, "resolved", None)
        if target and target[0] == "func":
            callee = parse(target[1])
            parsed.callees[target[1].name] = callee
            parsed.has_cut |= callee.has_cut
            parsed.flags |= callee.flags
        entry = table.lookup(builtin_name(node))
        if entry is not None:
            parsed.has_cut |= entry.cut is not None
            if entry.on_parse is not None:
                entry.on_parse(parsed, node)
    _reject_conditional_effects(parsed.tree)


def _reject_conditional_effects(tree) -> None:
    """Builtins with side effects under and/or/if-else, where only some evaluations run."""
    for node in walk(tree):
        parts = node.values[1:] if isinstance(node, ast.BoolOp) else (
            [node.body, node.orelse] if isinstance(node, ast.IfExp) else [])
        for part in parts:
            for sub in walk(part):
                entry = table.lookup(builtin_name(sub))
                if entry is not None and entry.effects:
                    raise compile_error(sub.loc, f"{entry.name}() under 'and'/'or'/'if-else': "
                                                 "write an if statement around it")


def without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    """A function body without its leading docstring, a statement that does nothing but
    would count as one (a region's first, an inlined helper's)."""
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1:]
    return body


def func_target(call: ast.AST) -> KernelFunction | None:
    if isinstance(call, ast.Call):
        target = getattr(call.func, "resolved", None)
        if target and target[0] == "func":
            return target[1]
    return None
