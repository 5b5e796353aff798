"""OpenCL C back end: ``to_cl(kernel)`` prints the OpenCL C twin of a Python kernel.

It walks the typed kernel AST the compiler's front end and typing produce (``typed.py``);
nothing here parses source. ``exprs.py`` prints expressions, ``stmts.py`` statements and
functions, ``calls.py`` the builtins whose C spelling differs from their name, ``unit.py`` the
translation unit around them (pragmas, typedefs, tables), ``names.py`` types and literals.
The output is specialised on the argument types (and, where an array's size is written
``get_local_size(d)``, on the local size), as the simulator's own compilation is.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from clsim.api import KernelFunction
from clsim.backends.opencl_c.typed import type_kernel
from clsim.backends.opencl_c.unit import Unit
from clsim.errors import InvalidArgumentError, KernelCompileError

DEFAULT_LOCAL = (1,)


def to_cl(kernel, args=None, *, local_size=None, subgroup_size=None) -> str:
    """OpenCL C source of ``kernel`` (a ``@clsim.kernel``, or a ``KernelSpec``) for
    arguments like ``args`` (a tuple in parameter order, or a dict by name, as ``clsim.run``
    takes them; only their types matter). Without ``args``, the arguments of the spec (its
    default shape): the one given, or the registered one whose kernel this is. A construct
    OpenCL C cannot express is a ``KernelCompileError`` naming it and its line."""
    from clsim.spec import KernelSpec

    spec = kernel if isinstance(kernel, KernelSpec) else None
    kernel = spec.kernel if spec is not None else kernel
    if not isinstance(kernel, KernelFunction) or not kernel.is_kernel:
        raise KernelCompileError(f"to_cl: {kernel!r} is not a @clsim.kernel")
    from clsim.compiler.frontend import parse
    from clsim.runtime.arguments import kernel_arg_types

    params = parse(kernel).params
    if args is None:
        args, spec_local, spec_sg = _spec_arguments(spec or _registered_spec(kernel))
        local_size = local_size or spec_local
        subgroup_size = subgroup_size or spec_sg
    if isinstance(args, dict):
        missing = [p for p in params if p not in args]
        if missing:
            raise InvalidArgumentError(f"to_cl({kernel.name}): no argument for {missing}",
                                       kernel=kernel.name)
        args = tuple(args[p] for p in params)
    types, _ = kernel_arg_types(kernel.name, params, tuple(args), set())
    local = tuple(local_size) if local_size else DEFAULT_LOCAL
    typed = type_kernel(kernel, types, local)
    return Unit(typed, subgroup_size).render(_source_name(kernel))


def _registered_spec(kernel):
    from clsim.spec import all_specs

    spec = next((s for s in all_specs().values() if s.kernel is kernel), None)
    if spec is None:
        raise InvalidArgumentError(
            f"to_cl({kernel.name}): the argument types are unknown. Pass args=(...) (example "
            "arguments, as clsim.run takes them) or register a KernelSpec for this kernel",
            kernel=kernel.name)
    return spec


def _spec_arguments(spec):
    import numpy as np

    shape = dict(spec.default_shape)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, None)
    return tuple(launch.args), launch.local_size, spec.subgroup_size


def _source_name(kernel) -> str:
    try:
        return Path(inspect.getsourcefile(kernel.fn) or "?").name
    except TypeError:
        return "?"


__all__ = ["to_cl"]
