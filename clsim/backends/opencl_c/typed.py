"""The typed kernel the OpenCL C back end prints: the compiler's front end and typing, run
exactly as ``clsim.compiler.module.generate`` runs them, without regions or code generation.

Nothing here parses source or types anything itself: it calls the compiler's passes (parse,
inlining of barrier helpers, null-pointer folding, C block scope, typing) and keeps what they
produce: the annotated body (every expression has ``ctype``), the variable types, and the
helper specialisations (``Program.funcs``).
"""

from __future__ import annotations

from dataclasses import dataclass

from clsim.compiler.infer import Typer
from clsim.compiler.inline import clone, inline_cut_helpers
from clsim.compiler.module import FuncSpec, Program, helper_env
from clsim.compiler.nulls import fold_null_tests
from clsim.compiler.scopes import scope_loop_variables
from clsim.compiler.struct_locals import copy_written_params
from clsim.compiler.struct_values import expand_struct_values
from clsim.compiler.vector_arrays import vector_arrays
from clsim.compiler.frontend import parse


@dataclass
class TypedFunction:
    """One function to print: its name, parameters with types, body and variable types."""

    name: str
    params: list[str]
    param_types: dict
    body: list
    env: dict
    ret_type: object = None
    is_kernel: bool = False
    spec: FuncSpec | None = None


@dataclass
class TypedKernel:
    kernel: TypedFunction
    program: Program


def type_kernel(kfn, arg_types: dict, local_size: tuple[int, ...]) -> TypedKernel:
    """The typed kernel for these argument types and local size (the local size enters
    only array shapes written as ``get_local_size(d)``)."""
    parsed = parse(kfn)
    program = Program(parsed, arg_types, local_size)
    body = fold_null_tests(inline_cut_helpers(parsed), arg_types)
    body = scope_loop_variables(body, arg_types)
    body = copy_written_params(expand_struct_values(body), arg_types)
    # typing rewrites statements in place (v.x = e becomes v = vector_set(v, e)): on a copy,
    # as module.generate types one, since the parsed tree is cached and shared with it
    body = vector_arrays(clone(body), program)
    typer = Typer(program, dict(arg_types), kfn.name)
    typer.run(body)
    fn = TypedFunction(kfn.name, list(parsed.params), dict(arg_types), body, typer.env,
                       is_kernel=True)
    return TypedKernel(fn, program)


def retype_helper(program: Program, spec: FuncSpec) -> TypedFunction:
    """A helper specialisation, its body annotated for these argument types (a body shared by
    two specialisations holds the last one's types, so each is typed again right before it is
    printed, as ``ModuleEmitter.emit_func`` does)."""
    env = helper_env(spec.parsed.params, spec.param_types)
    typer = Typer(program, env, spec.kfn.name)
    typer.run(spec.body)
    types = dict(zip(spec.parsed.params, spec.param_types, strict=True))
    return TypedFunction(spec.kfn.name, list(spec.parsed.params), types, spec.body, typer.env,
                         spec.ret_type, spec=spec)
