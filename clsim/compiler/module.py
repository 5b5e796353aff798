"""Assembly of the generated module: constants, helpers, helper functions, group function and
launcher, plus the site table the runtime uses to turn error records into messages.

``Program`` holds what one compilation knows (argument types, local size, helper
specialisations); ``ModuleEmitter`` collects the pieces of source and renders the file. Loading
and caching the file is ``clsim.runtime.cache``'s job.
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler import launcher, shared_helpers
from clsim.compiler.astwalk import walk
from clsim.compiler.codegen import FunctionEmitter
from clsim.compiler.collectives import normalize_collectives
from clsim.compiler.continues import guard_continues
from clsim.compiler.emit_expr import HIDDEN_ARGS, literal
from clsim.compiler.frontend import Parsed, compile_error, parse, without_docstring
from clsim.compiler.infer import Typer
from clsim.compiler.inline import clone, inline_cut_helpers
from clsim.compiler.lane_inline import inline_lane_helpers
from clsim.compiler.nulls import fold_null_tests
from clsim.compiler.places import written_params
from clsim.compiler.pointer_params import pointer_params
from clsim.compiler.regions import Analysis
from clsim.compiler.remat import id_aliases
from clsim.compiler.scopes import scope_loop_variables
from clsim.compiler.struct_emit import aligned_pointers
from clsim.compiler.struct_locals import by_value, copy_written_params
from clsim.compiler.struct_values import expand_struct_values
from clsim.compiler.structs import StructT
from clsim.compiler.uniform_ids import uniform_ids
from clsim.compiler.vector_arrays import user_name as array_name
from clsim.compiler.vector_arrays import vector_arrays
from clsim.instruments import dispatch
from clsim.runtime.record import Site


@dataclass
class FuncSpec:
    kfn: object
    parsed: Parsed
    param_types: tuple
    ret_type: object
    mangled: str
    env: dict
    writes: frozenset = frozenset()  # positions of the buffer/pointer parameters it writes
    body: list | None = None  # the body with C's block scope applied (scopes.py)


class Program:
    """One compilation: the kernel plus the helper specialisations it needs."""

    def __init__(self, parsed: Parsed, arg_types: dict, local_size: tuple[int, ...]):
        self.parsed = parsed
        # What instruments see of the arguments: a struct buffer as its bytes (they size
        # shadows and traffic by element type; struct field accesses report byte accesses).
        self.arg_types = {n: ct.ArrayT("uint8", t.ndim, t.space)
                          if isinstance(t, ct.ArrayT) and not isinstance(t.dtype, str) else t
                          for n, t in arg_types.items()}
        self.local_size = tuple(local_size) + (1,) * (3 - len(local_size))
        self.work_dim = len(local_size)
        self.funcs: dict[tuple, FuncSpec] = {}
        self._typing: set[tuple] = set()
        self.tables: dict[str, object] = {}  # __constant tables the kernel reads, by name

    def spec_key(self, kfn, arg_types: tuple) -> tuple:
        """The specialisation key of a call: a pointer argument ``p`` is typed in the helper
        as a pointer into its own buffer parameter ``p__buf`` (whichever buffer the caller's
        pointer goes into), so calls with pointers into different buffers share one helper."""
        params = parse(kfn).params
        if len(params) != len(arg_types):
            return (kfn.name, arg_types)
        return (kfn.name, tuple(replace(t, base=f"{p}__buf") if isinstance(t, ct.PtrT) else t
                                for p, t in zip(params, arg_types, strict=True)))

    def specialize(self, kfn, arg_types: tuple, loc):
        key = self.spec_key(kfn, arg_types)
        arg_types = key[1]
        if key in self.funcs:
            return self.funcs[key].ret_type
        if key in self._typing:
            raise compile_error(loc, f"{kfn.name}() calls itself; OpenCL C has no recursion")
        parsed = parse(kfn)
        if parsed.has_cut:
            raise compile_error(loc, f"{kfn.name}() contains a barrier, so it must be called as "
                                     "a statement on its own line")
        if len(arg_types) != len(parsed.params):
            raise compile_error(loc, f"{kfn.name}() takes {len(parsed.params)} arguments, got "
                                     f"{len(arg_types)}")
        self._typing.add(key)
        body = scope_loop_variables(parsed.tree.body, parsed.params)
        body = copy_written_params(expand_struct_values(body),
                                   dict(zip(parsed.params, arg_types, strict=True)))
        body = pointer_params(body, dict(zip(parsed.params, arg_types, strict=True)))
        body = clone(vector_arrays(body, self))  # typing may split a pointer: its own copy
        typer = Typer(self, helper_env(parsed.params, arg_types), kfn.name)
        typer.run(body)
        refuse_vector_out_params(kfn.name, body, parsed.params, arg_types)
        self._typing.discard(key)
        ret = None
        for t in typer.returns:
            if by_value(t) and not isinstance(t, StructT):  # b = x[i]; return b: its bytes
                t = t.dtype
            if isinstance(t, ct.PtrT):
                raise compile_error(loc, f"{kfn.name}() returns a pointer; return an offset "
                                         "(an integer) and index the buffer with it")
            ret = t if ret is None or ret == t else ct.join(ret, t)
            if ret is None:
                raise compile_error(parsed.tree.loc, f"{kfn.name}() returns values of "
                                                     "different kinds (int and float)")
        mangled = f"_f_{kfn.name}_{len(self.funcs)}"
        writes = written_params(body, parsed.params, self)
        self.funcs[key] = FuncSpec(kfn, parsed, arg_types, ret, mangled, typer.env, writes,
                                   body)
        return ret

    def const_shape(self, node, loc) -> tuple[int, ...]:
        """Evaluate a local/private array shape: numbers, constants, get_local_size(d)."""
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        shape = tuple(self._const_int(e, loc) for e in elts)
        if any(n <= 0 for n in shape):
            raise compile_error(loc, f"array shape {shape} must be positive")
        return shape

    def _const_int(self, node, loc) -> int:
        resolved = getattr(node, "resolved", None)
        if resolved and resolved[0] == "const":
            return int(resolved[1])
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Call):
            target = getattr(node.func, "resolved", None)
            if target and target[1] in ("get_local_size", "get_enqueued_local_size"):
                return self.local_size[node.args[0].value]
        if isinstance(node, ast.BinOp):
            a, b = self._const_int(node.left, loc), self._const_int(node.right, loc)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            if isinstance(node.op, ast.FloorDiv) and b:
                return a // b
            if type(node.op) in ops:
                return ops[type(node.op)]
        raise compile_error(loc, "array sizes must be compile-time constants: numbers, module "
                                 "constants or get_local_size(d)")


class ModuleEmitter:
    """Collects the generated module's pieces and renders its source."""

    def __init__(self, program: Program, kernel_name: str, jit: bool, parallel: bool):
        self.program = program
        self.kernel_name = kernel_name
        self.jit = jit
        self.parallel = parallel
        self.work_dim = program.work_dim
        self.consts: dict[tuple, str] = {}
        self.const_lines: list[str] = []
        self.helpers_used: set[str] = set()
        self.bitcasts: set[tuple[str, str]] = set()
        self.sites: list[Site] = []
        self._site_keys: dict[tuple, int] = {}
        self.site_nodes: dict[int, object] = {}
        self.func_sources: dict[str, str] = {}
        self.lifted: dict[str, str] = {}  # body -> name of a vector expression's function
        self.tables: dict[str, str] = {}  # __constant table name -> module-level array
        self.uses_printf = "printf" in program.parsed.flags  # then _pf collects its lines
        self.printf_sites: dict[int, tuple] = {}  # site -> (format, argument kinds)
        # (helper, its buffer parameter p__buf) -> {(calling function, buffer passed)}
        self.helper_buffers: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.has_exit = False
        self.instruments: list = []
        # every instrument lets regions run lane-major or proven (``Instrument.lane_regions``;
        # none: the default build)
        self.lane_regions = True
        # instruments that let a strided loop run lane-major, all of them (``lane_loops``)
        self.lane_loops = False
        self.uncounted = False  # emitting code of the simulator's own (a range check): no flops
        self.replays_launch = False  # a region stops with REPLAY_LAUNCH (lane_emit.py)
        self.bounds = True
        self.subgroup_size = 32
        local = program.local_size
        self.nl_max = local[0] * local[1] * local[2]

    # -- registries used by the emitters ----------------------------------------------------
    def const(self, value, t: str) -> str:
        key = (repr(value), str(type(value)), t)
        if key not in self.consts:
            name = f"_K{len(self.consts)}"
            self.consts[key] = name
            self.const_lines.append(f"{name} = {literal(value, t)}")
        return self.consts[key]

    def empty(self, shape: str, dtype: str, fill: str = "empty") -> str:
        """Code allocating an array of ``shape`` (source text) and numpy ``dtype``."""
        dtype = "bool_" if dtype == "bool" else dtype
        self.helpers_used.add(f"_{fill}_{dtype}")
        return f"_{fill}_{dtype}({shape})"

    def site(self, node, buffer: str, kind: str, space: str, dtype: str, width: int = 1) -> int:
        key = (id(node), kind, buffer)
        if key not in self._site_keys:
            loc = node.loc
            self._site_keys[key] = len(self.sites)
            self.site_nodes[len(self.sites)] = node  # the access's AST node, for instruments
            self.sites.append(Site(len(self.sites), loc.file, loc.line, loc.func,
                                   loc.text.strip(), buffer, kind, space, str(dtype), width))
        return self._site_keys[key]

    def passed_buffer(self, helper: str, param_buffer: str, caller: str, buffer: str) -> None:
        """A call of ``helper`` in ``caller`` passes ``buffer`` (the caller's name for it) or
        a pointer into it as the helper's buffer ``param_buffer`` (``p``, or ``p__buf``
        behind a pointer parameter)."""
        self.helper_buffers.setdefault((helper, param_buffer), set()).add((caller, buffer))

    def user_buffer(self, func: str, buffer: str, seen=()) -> set[str]:
        """The kernel's buffers behind ``buffer`` as function ``func`` names it (a helper's
        ``p__buf`` is whatever its callers passed as ``p``)."""
        callers = self.helper_buffers.get((func, buffer))
        if not callers or (func, buffer) in seen:
            return {buffer}
        return {name for caller, passed in callers
                for name in self.user_buffer(caller, passed, (*seen, (func, buffer)))}

    def sites_named_for_users(self) -> list[Site]:
        """The site table with each helper's buffer parameter named by the kernel argument
        behind it (``x``; ``p (x or y)`` when the calls pass different buffers), as messages
        and the traffic table name it."""
        out = []
        for site in self.sites:
            if (site.func, site.buffer) in self.helper_buffers:
                names = sorted(self.user_buffer(site.func, site.buffer))
                param = site.buffer.removesuffix("__buf")
                site = site._replace(buffer=names[0] if len(names) == 1 else
                                     f"{param} ({' or '.join(names)})")
            out.append(site._replace(buffer=array_name(site.buffer)))
        return out

    def table(self, name: str, arrt) -> str:
        """The module-level array of the __constant table ``name`` (read from the kernel's
        globals, where the front end found it)."""
        if name not in self.tables:
            value = np.ascontiguousarray(self.program.tables[name])
            stored = value.view(np.uint16) if value.dtype == np.float16 else value
            const = f"_T_{name}"
            self.tables[name] = const
            self.const_lines.append(
                f"{const} = np.frombuffer(bytes.fromhex({stored.tobytes().hex()!r}), "
                f"np.{stored.dtype.name}).reshape({stored.shape})")
        return self.tables[name]

    def lifted_function(self, params: list[str], body: str, statements: bool = False) -> str:
        """A module-level function of ``params`` returning the expression ``body`` (or running
        the indented ``statements``): vector expressions whose operands must be read once.
        Identical bodies share one function."""
        key = f"({', '.join(params)}): " + (body if statements else f"return {body}")
        if key not in self.lifted:
            self.lifted[key] = f"_vx{len(self.lifted)}"
        return self.lifted[key]

    def register_bitcast(self, src: str, dst: str) -> bool:
        if src == dst:
            return False
        self.bitcasts.add((src, dst))
        return True

    @property
    def id_decode(self) -> str:
        if self.work_dim == 1:
            return "_lx = np.int64(_lid)"
        if self.work_dim == 2:
            return "_lx = np.int64(_lid % _L0)\n_ly = np.int64(_lid // _L0)"
        return ("_lx = np.int64(_lid % _L0)\n_ly = np.int64((_lid // _L0) % _L1)\n"
                "_lz = np.int64(_lid // (_L0 * _L1))")

    def on_region_start(self, gen) -> None:
        dispatch.region_start(self.instruments, gen)

    def on_region_end(self, gen) -> None:
        dispatch.region_end(self.instruments, gen)

    def on_barrier(self, gen, stmt, site, flags) -> None:
        dispatch.barrier(self.instruments, gen, stmt, site, flags)

    def on_subgroup_barrier(self, gen, stmt, site) -> None:
        dispatch.subgroup_barrier(self.instruments, gen, stmt, site)

    def on_loop(self, gen, loop, var: str, var_type: str, *, start: bool) -> None:
        """Before (``start``) and after a work-item ``for`` loop whose range arguments are
        the tuple ``{var}a``."""
        if self.instruments:
            dispatch.loop(self.instruments, gen, loop, f"{var}a", var_type, start)

    def access(self, gen, site, buffer, arrt, codes, kind, atomic=False,
               values=()) -> list[str]:
        spans = getattr(gen, "lane_spans", None)
        if spans and kind == "store" and not atomic and id(self.site_nodes[site]) in spans:
            spans[id(self.site_nodes[site])] = (site, buffer, arrt)  # recorded after the lanes
            return codes
        return dispatch.access(self.instruments, gen, site, buffer, arrt, codes, kind, atomic,
                               values)

    _FLOP_KINDS: ClassVar[dict[str, str]] = {"+": "add", "-": "add", "*": "mul", "/": "div"}

    def flop(self, gen, op, t) -> None:
        if not self.instruments or self.uncounted:
            return
        kind = self._FLOP_KINDS.get(op, op)
        if ct.is_int(t):
            kind = "int"
        dispatch.flop(self.instruments, gen, kind, t)

    def flops(self, gen, kind, t, count: str) -> None:
        """``count`` operations of ``kind`` at group level (inside a collective)."""
        dispatch.flops(self.instruments, gen, "int" if ct.is_int(t) else kind, t, count)

    @property
    def state_args(self) -> list[str]:
        names = [name for inst in self.instruments for name in inst.state_args()]
        return [*names, "_pf"] if self.uses_printf else names

    @property
    def hidden_args(self) -> str:
        return ", ".join([HIDDEN_ARGS, *self.state_args])

    # -- helper functions -------------------------------------------------------------------
    def emit_func(self, spec: FuncSpec) -> None:
        if spec.mangled in self.func_sources:
            return
        self.func_sources[spec.mangled] = ""  # reserve: recursion guard
        env = helper_env(spec.parsed.params, spec.param_types)
        typer = Typer(self.program, env, spec.kfn.name)
        typer.run(spec.body)  # re-annotate nodes for this specialisation
        storage = {p: "param" for p in env}
        gen = FunctionEmitter(self, storage, typer.env, in_group_fn=False,
                              ret_type=spec.ret_type)
        gen.bounds_checks = self.bounds
        gen.aligned_pointers = aligned_pointers(typer.view_values, typer.env)
        for name, t in typer.env.items():
            if isinstance(t, ct.ArrayT) and name not in storage:
                gen.emit(f"v_{name} = {self.empty(t.shape, ct.storage_dtype(t.dtype))}")
            elif isinstance(t, StructT) and name not in storage:
                gen.emit(f"v_{name} = {self.empty(t.itemsize, 'uint8')}")
        arrays = [f"v_{p}__buf" if isinstance(t, ct.PtrT) else f"v_{p}"
                  for p, t in zip(spec.parsed.params, spec.param_types, strict=True)
                  if isinstance(t, ct.PtrT | ct.ArrayT)]
        dispatch.function_start(self.instruments, gen, arrays)
        gen.stmts_wi(spec.body)
        dispatch.function_end(self.instruments, gen)
        params = ", ".join(f"v_{p}__buf, v_{p}" if isinstance(t, ct.PtrT) else f"v_{p}"
                           for p, t in zip(spec.parsed.params, spec.param_types, strict=True))
        head = f"def {spec.mangled}({params}{', ' if params else ''}{self.hidden_args}):"
        self.func_sources[spec.mangled] = "\n".join([head, *gen.lines])

    # -- rendering --------------------------------------------------------------------------
    def render(self, group_lines: list[str], params: list[str],
               scratch: list[tuple[str, str]] = ()) -> str:
        """The module's source; ``scratch``: (name, allocation) of the group's arrays, which
        the launcher allocates once per thread and passes to ``_group``."""
        deco = "@_jit\n" if self.jit else ""
        inner = "@_jit_inner\n" if self.jit else ""  # called only by compiled code
        imported: set[str] | None = set() if self.jit else None
        helper_src = [inner + src for src in
                      hp.helper_sources(self.helpers_used, table.HELPERS, imported)]
        helper_src += [inner + _bitcast_source(s, d, self.jit) for s, d in sorted(self.bitcasts)]
        funcs = [inner + f"def {name}{key.split(': ', 1)[0]}:\n    {key.split(': ', 1)[1]}"
                 for key, name in self.lifted.items()]
        funcs += [inner + src for src in self.func_sources.values()]
        pnames = ", ".join(f"v_{p}" for p in params)
        e = self.program.local_size
        header = [
            f"# Generated by clsim for kernel {self.kernel_name}; regenerated when it changes.",
            "import math",
            "import numpy as np",
        ]
        if self.jit:
            header += [
                "from numba import njit, prange",
                "from clsim.runtime.intrinsics import *  # noqa: F403",
                # No C wrapper: nothing takes these functions' addresses. The group function
                # and the launcher are called from Python; the module's other functions only
                # from them, so they have no CPython wrapper either (each wrapper is compiled
                # and linked into every caller: docs/performance.md, issue 21).
                "_jit = njit(cache=True, error_model='numpy', fastmath=False, nogil=True, "
                "no_cfunc_wrapper=True)",
                "_jit_inner = njit(cache=True, error_model='numpy', fastmath=False, nogil=True, "
                "no_cpython_wrapper=True, no_cfunc_wrapper=True)",
                "_jitp = njit(cache=True, error_model='numpy', fastmath=False, parallel=True, "
                "no_cfunc_wrapper=True)",
            ]
        else:
            header += ["prange = range", "def _jit(f):\n    return f", "_jitp = _jit_inner = _jit",
                       "from clsim.runtime.intrinsics_py import *  # noqa: F403"]
        header += shared_helpers.import_lines(imported or set())
        for inst in self.instruments:
            header += [line for line in inst.imports() if line not in header]
        consts = [f"_E{d} = np.int64({e[d]})" for d in range(3)] + self.const_lines
        state = "".join(", " + name for name in self.state_args)
        arrays = "".join(", " + name for name, _ in scratch)
        group_sig = ("def _group(_gx, _gy, _gz, _L0, _L1, _L2, _G0, _G1, _G2, _NG0, _NG1, _NG2, "
                     f"_O0, _O1, _O2, {pnames}, _err{state}{arrays}):")
        how = launcher.kind(self.jit, self.parallel, self.instruments)
        launch = launcher.source(pnames + state, how, self.jit, state, scratch)
        # The group function is not inlined into the launcher at Numba's level
        # (inline='always'): it saved 0.3 s CPU on softmax's first compile, but Numba's inline
        # pass failed on kernels with private arrays passed to helpers and on conformance
        # probes ("Failed in nopython mode pipeline (step: inline inlinable functions)").
        parts = [*header, "", *consts, "", *helper_src, *funcs,
                 deco + group_sig + "\n" + "\n".join(group_lines), launch,
                 f"_LAUNCHER = {how!r}",
                 f"_REPLAYS_LAUNCH = {self.replays_launch!r}"]
        return "\n\n".join(p for p in parts if p is not None) + "\n"


def _bitcast_source(src: str, dst: str, jit: bool) -> str:
    name = f"_bits_{src}_{dst}"
    if jit:
        return (f"def {name}(x):\n    return _bitcast_{dst}(np.{src}(x))")
    return (f"def {name}(x):\n    return np.array([x], dtype=np.{src}).view(np.{dst})[0]")


def refuse_vector_out_params(name: str, body, params, types) -> None:
    """A helper assigning its vector parameter (``v.x = 1.0``, ``v = ...``) changes its own
    copy only, as C's by-value ``float4 v``; a twin of C's out-parameter ``float4 *v``
    written that way would leave the caller's vector silently unchanged, so it is refused."""
    vectors = {p for p, t in zip(params, types, strict=True) if isinstance(t, ct.VecT)}
    for root in body:
        for node in walk(root):
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                hit = next((t.id for t in targets
                            if isinstance(t, ast.Name) and t.id in vectors), None)
                if hit is not None:
                    raise compile_error(node.loc, (
                        f"{name}() assigns its vector parameter '{hit}', which is its own "
                        "copy (C passes vectors by value): the caller's vector would not "
                        f"change. Return the new value instead ({hit} = {name}(...)), or "
                        "use a new local name for a scratch copy"))


def helper_env(params, types) -> dict:
    """A helper's parameter types; a pointer parameter ``p`` also brings the buffer it
    points into, ``p__buf``."""
    env = dict(zip(params, types, strict=True))
    for p, t in zip(params, types, strict=True):
        if isinstance(t, ct.PtrT):
            env[f"{p}__buf"] = t.array
    return env


def generate(kfn, arg_types: dict, config, *, instruments=()) -> tuple[str, list[Site], dict]:
    """Source of the module for ``kfn`` with these argument types under ``config`` (a
    ``clsim.runtime.config.LaunchConfig``: local size, JIT, parallel groups, checks, sub-group
    size)."""
    local_size, jit, parallel = config.local_size, config.jit, config.parallel
    parsed = parse(kfn)
    program = Program(parsed, arg_types, local_size)
    body = inline_cut_helpers(parsed)
    # as a statement of the first region, the docstring kept it from running lane-major
    body = without_docstring(body)
    lanes = all(inst.lane_regions for inst in instruments)
    if lanes and program.work_dim == 1:  # the modules with lane-major regions
        body = inline_lane_helpers(body, parsed, arg_types)
    body = fold_null_tests(body, arg_types)
    body = scope_loop_variables(body, arg_types)
    body = copy_written_params(expand_struct_values(body), arg_types)
    body = pointer_params(body, arg_types)
    body = guard_continues(clone(vector_arrays(body, program)))
    body = uniform_ids(body, program.local_size)
    body, temps = normalize_collectives(body)
    typer = Typer(program, dict(arg_types), kfn.name)
    typer.run(body)
    analysis = Analysis(body, arg_types, typer.env, forced_varying=temps)
    module = ModuleEmitter(program, kfn.name, jit, parallel)
    module.config = config
    module.bounds = config.bounds
    module.subgroup_size = config.subgroup_size
    module.has_exit = analysis.has_exit
    module.instruments = list(instruments)
    module.lane_regions = lanes
    module.lane_loops = bool(instruments) and all(inst.lane_loops for inst in instruments)
    module.body = body  # the statements emitted, for instruments' analyses (Emit.body)
    storage = _storage(analysis, arg_types, typer.env)
    # an instrument may see every private as it is stored: ids stay arrays there
    # (a plain local too: ``lid`` then starts a strided loop lane_major recognises)
    aliases = {} if not (lanes or module.lane_loops) else id_aliases(
        body, {n for n, kind in storage.items() if kind in ("ctx", "local")}, set(arg_types))
    if not lanes:  # an id's arithmetic computed again where read would count its operations
        aliases = {name: value for name, value in aliases.items()
                   if isinstance(value, ast.Call)}
    storage.update(dict.fromkeys(aliases, "remat"))
    gen = FunctionEmitter(module, storage, typer.env, in_group_fn=True)
    gen.remat = aliases
    gen.analysis = analysis  # uniformity, for regions run lane-major (lane_emit.py)
    gen.bounds_checks = config.bounds
    gen.aligned_pointers = aligned_pointers(typer.view_values, typer.env)
    gen.emit("_NL = _L0 * _L1 * _L2")
    # every id a helper call receives is defined, for group-level code before the first
    # region (a hoisted pure helper call: ggml's get_alibi_slope at the top of a kernel)
    gen.emit("_lid = 0\n_lx = np.int64(0)\n_ly = np.int64(0)\n_lz = np.int64(0)")
    nl_max = program.local_size[0] * program.local_size[1] * program.local_size[2]
    scratch_lines: list[str] = []  # the group's arrays: allocated per thread (launcher.py)
    for name, kind in sorted(storage.items()):
        t = typer.env[name]
        if kind == "larray" and name in arg_types:  # a LocalMem argument replaced per group
            gen.emit(f"v_{name} = {module.empty(t.shape, ct.storage_dtype(t.dtype))}")
        elif kind == "larray":
            scratch_lines.append(
                f"v_{name} = {module.empty(t.shape, ct.storage_dtype(t.dtype))}")
        elif kind == "parray":
            shape = f"({nl_max},) + {t.shape}"
            scratch_lines.append(
                f"v_{name}__c = {module.empty(shape, ct.storage_dtype(t.dtype))}")
        elif kind == "sarray":
            scratch_lines.append(
                f"v_{name}__c = {module.empty(f'({nl_max}, {t.itemsize})', 'uint8')}")
        elif kind == "ctx" and isinstance(t, ct.VecT):
            shape = f"({nl_max}, {t.width})"
            scratch_lines.append(
                f"v_{name}__c = {module.empty(shape, ct.register_dtype(t.dtype))}")
        elif kind == "ctx":
            dtype = "bool_" if t == "bool" else ct.register_dtype(t)
            scratch_lines.append(f"v_{name}__c = {module.empty(nl_max, dtype)}")
    if module.has_exit:
        gen.emit(f"_exited = {module.empty(nl_max, 'bool_', 'zeros')}")
    alloc_at = len(gen.lines)
    dispatch.group_start(module.instruments, gen)
    gen.items(analysis.tree)
    scratch, per_group = launcher.split_scratch([*scratch_lines, *gen.allocs])
    gen.lines[alloc_at:alloc_at] = ["    " + line for line in per_group]
    source = module.render(gen.lines, list(arg_types), scratch)
    module.sites = module.sites_named_for_users()  # after emission: instruments saw p__buf
    # Files by name only: a path in the source would make each checkout or temporary folder a
    # new module, compiled again; the launch names sites from the table returned here.
    source += "\n_SITES = " + repr([tuple(site._replace(file=os.path.basename(site.file)))
                                     for site in module.sites]) + "\n"
    if module.uses_printf:
        source += f"_PRINTF = {module.printf_sites!r}\n"
    local_bytes = sum(math.prod(typer.env[name].shape) * np.dtype(typer.env[name].dtype).itemsize
                      for name, kind in storage.items() if kind == "larray")
    source += f"_LOCAL_BYTES = {local_bytes}\n"  # checked against the device's local memory
    source += f"_ARRAY_BYTES = {_array_bytes(storage, typer.env)!r}\n"  # named in memory errors
    meta = {"work_dim": module.work_dim, "parallel": parallel, "jit": jit}
    return source, module.sites, meta


def _array_bytes(storage: dict, env: dict) -> dict[str, tuple[str, int]]:
    """Each local and private array: (space, bytes of one instance)."""
    return {array_name(name): ("local" if kind == "larray" else "private",
                   math.prod(env[name].shape) * np.dtype(env[name].dtype).itemsize)
            for name, kind in sorted(storage.items()) if kind in ("larray", "parray")}


def _storage(analysis: Analysis, arg_types: dict, env: dict) -> dict[str, str]:
    storage: dict[str, str] = {}
    for name, t in env.items():
        if name in arg_types and isinstance(t, ct.ArrayT) and t.space == "local":
            storage[name] = "larray"  # a LocalMem argument: each group's own bytes
        elif name in arg_types:
            storage[name] = "param"
        elif isinstance(t, ct.ArrayT):
            storage[name] = "larray" if t.space == "local" else "parray"
        elif isinstance(t, StructT):  # a private struct: its bytes, a row per work-item
            storage[name] = "sarray"
        elif name in analysis.group_scalars:
            storage[name] = "group"
        elif name in analysis.ctx_vars:
            storage[name] = "ctx"
        else:
            storage[name] = "local"
    return storage
