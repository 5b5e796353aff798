"""One tiny kernel per builtin call shape: ``out[i] = NAME(a0[i], a1[i], ...)``.

The conformance run and the builtin tests evaluate a builtin over arrays of inputs on the
simulator (and, with the ``.cl`` twin from ``cl_source``, on devices). Kernels are written to a
folder in clsim's kernel cache and imported, because clsim reads a kernel's source with
``inspect``; the same path in every process, so their compiled code is cached like any kernel's.
A builtin returning a tuple (``m, e = frexp(x)``) writes one output per component.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tempfile
from pathlib import Path

import numpy as np

import clsim
from clsim.compiler import ctypes as ct
from clsim.runtime.cache import cache_dir, write_source

_DIR: Path | None = None
_CACHE: dict[tuple, object] = {}
# A probe's work-items are independent, so the work-group shape is no part of what it checks;
# but clsim bakes the local size into the compiled module, and ``None`` (the largest divisor of
# the global size) gave every array length its own module: a Hypothesis test drawing 1..24
# elements compiled the same probe up to 24 times. One work-item per group fits every length.
PROBE_LOCAL_SIZE = (1,)


def _folder() -> Path:
    """One folder for every process, in clsim's kernel cache. A generated module names its
    kernel's file, so a folder made anew per process (it was a ``mkdtemp``) made every probe a
    new module, compiled again in every process: seconds per builtin and type, thousands of
    modules in the cache. Only where that folder cannot be made, a private temporary one."""
    global _DIR
    if _DIR is None:
        try:
            _DIR = cache_dir() / "probes"
            _DIR.mkdir(exist_ok=True)
        except OSError:
            _DIR = Path(tempfile.mkdtemp(prefix="clsim-probes-"))
    return _DIR


def _load(path: Path, source: str, function: str):
    write_source(path, source)  # atomic: xdist workers write and import the same probe
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)


def python_source(name: str, nargs: int, nout: int = 1) -> str:
    args = ", ".join(f"a{k}" for k in range(nargs))
    outs = ", ".join(f"out{k}" for k in range(nout))
    call = f"clsim.{name}({', '.join(f'a{k}[i]' for k in range(nargs))})"
    if nout == 1:
        body = f"    out0[i] = {call}\n"
    else:
        names = ", ".join(f"r{k}" for k in range(nout))
        body = f"    {names} = {call}\n" + "".join(f"    out{k}[i] = r{k}\n" for k in range(nout))
    return (f"import clsim\nfrom clsim import get_global_id, kernel\n\n\n@kernel\n"
            f"def probe({args}, {outs}):\n    i = get_global_id(0)\n{body}")


def probe_kernel(name: str, nargs: int, nout: int = 1):
    key = (name, nargs, nout)
    if key not in _CACHE:
        path = _folder() / f"probe_{name}_{nargs}_{nout}.py"
        _CACHE[key] = _load(path, python_source(name, nargs, nout), "probe")
    return _CACHE[key]


def evaluate(name: str, args, out_dtypes, *, jit: bool) -> list[np.ndarray]:
    """``NAME`` applied element-wise to the arrays ``args`` on the simulator; one array per
    entry of ``out_dtypes`` (the result type, or the components of a tuple result)."""
    args = [np.ascontiguousarray(a) for a in args]
    n = args[0].size
    outs = [np.zeros(n, dt) for dt in out_dtypes]
    kern = probe_kernel(name, len(args), len(outs))
    clsim.run(kern, (n,), PROBE_LOCAL_SIZE, (*args, *outs), jit=jit, checks="none")
    return outs


def cl_source(name: str, arg_dtypes, out_dtypes) -> str:
    """The OpenCL C twin of ``probe_kernel`` (tuple results through pointer arguments)."""
    cn = [ct.cname(np.dtype(d).name) for d in arg_dtypes]
    on = [ct.cname(np.dtype(d).name) for d in out_dtypes]
    params = [f"__global const {t} *a{k}" for k, t in enumerate(cn)]
    params += [f"__global {t} *out{k}" for k, t in enumerate(on)]
    call_args = [f"a{k}[i]" for k in range(len(cn))]
    if len(on) == 1:
        body = f"    out0[i] = {name}({', '.join(call_args)});\n"
    else:
        body = "".join(f"    {t} r{k};\n" for k, t in enumerate(on[1:], start=1))
        ptrs = [f"&r{k}" for k in range(1, len(on))]
        body += f"    out0[i] = {name}({', '.join(call_args + ptrs)});\n"
        body += "".join(f"    out{k}[i] = r{k};\n" for k in range(1, len(on)))
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n"
    return (f"{pragma}__kernel void probe({', '.join(params)}) {{\n"
            f"    size_t i = get_global_id(0);\n{body}}}\n")


def many_source(names: tuple[str, ...], nargs: int) -> str:
    args = ", ".join(f"a{k}" for k in range(nargs))
    call_args = ", ".join(f"a{k}[i]" for k in range(nargs))
    body = "".join(f"    out[{j} * n + i] = clsim.{name}({call_args})\n"
                   for j, name in enumerate(names))
    return (f"import clsim\nfrom clsim import get_global_id, kernel\n\n\n@kernel\n"
            f"def probe_many({args}, out, n):\n    i = get_global_id(0)\n{body}")


def evaluate_many(names, args, out_dtype, *, jit: bool) -> np.ndarray:
    """Several builtins of one shape in one kernel (one compilation): row j of the result is
    ``names[j]`` applied element-wise to ``args``."""
    names = tuple(names)
    key = ("many", names, len(args))
    if key not in _CACHE:
        source = many_source(names, len(args))
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]  # the same in every process
        path = _folder() / f"probe_many_{len(args)}_{digest}.py"
        _CACHE[key] = _load(path, source, "probe_many")
    args = [np.ascontiguousarray(a) for a in args]
    n = args[0].size
    out = np.zeros(len(names) * n, out_dtype)
    clsim.run(_CACHE[key], (n,), PROBE_LOCAL_SIZE, (*args, out, np.int64(n)), jit=jit,
              checks="none")
    return out.reshape(len(names), n)
