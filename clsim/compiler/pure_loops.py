"""Work-item loops whose error checks can wait until the loop ends.

A checked load records the first error of the group (``_oob`` keeps the first) and yields a
safe index; the code after it returns at once (``if _err[0] != 0: return``). That exit in every
iteration keeps LLVM from optimising the loop (an early exit per access; no private kept in a
register across it). In a *pure* loop, one whose body changes nothing that outlives the
group after an error (private variables, the group's local and private arrays, the error
record, whose first entry wins), returning after the loop instead leaves the same buffers and
the same error: the iterations run after a failed access only compute values the group then
drops. Pure here: no store to a global buffer, pointer, view or field, no atomic, printf,
image write or call of a ``@clsim.func`` helper, no ``return`` and no ``while``; a nested
``for`` whose range could be read from memory the failed access clamped (a value the
iteration would not have read) is not pure either, so a deferred check never lengthens a loop.

Not here: emitting the loop (``codegen.FunctionEmitter.s_For``).
"""

from __future__ import annotations

import ast

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler.diagnostics import builtin_name
from clsim.compiler.structs import StructT

# Builtin families without side effects (memory, atomics, images, collectives have some).
_PURE_FAMILIES = frozenset({"math", "conversion", "integer", "relational", "work-item",
                            "vector", "half"})
_WRITING = ("vstore", "write_", "prefetch")


def pure_loop(loop: ast.For, env: dict) -> bool:
    """Whether ``loop``'s body only computes privates and reads memory (module docstring)."""
    assigned = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, ast.Return | ast.While | ast.Global | ast.Nonlocal):
            return False
        if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
            return False  # a call for its effect (printf, an atomic, a helper)
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not all(private_target(t, env) for t in targets):
                return False
        if isinstance(node, ast.Call) and not pure_call(node):
            return False
        if isinstance(node, ast.For) and node is not loop and not _fixed_range(node, assigned):
            return False
    return True


def private_target(target, env: dict) -> bool:
    if isinstance(target, ast.Tuple):
        return all(private_target(t, env) for t in target.elts)
    if isinstance(target, ast.Name):
        return not isinstance(env.get(target.id), StructT | ct.PtrT)
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        arrt = getattr(target.value, "ctype", None)
        return (isinstance(arrt, ct.ArrayT) and arrt.space in ("local", "private")
                and getattr(arrt, "view", None) is None and isinstance(arrt.dtype, str))
    return False


def pure_call(call: ast.Call) -> bool:
    kind = getattr(call.func, "resolved", (None, None))[0]
    if kind == "dtype":
        return True
    if kind != "builtin":
        return False
    name = builtin_name(call)
    entry = table.lookup(name)
    if entry is None or entry.family not in _PURE_FAMILIES or table.is_cut(name):
        return False
    if name.startswith(_WRITING):
        return False
    # modf(x, iptr), fract, frexp, remquo...: results through a pointer are stores
    return name.startswith("vload") or not any(
        isinstance(getattr(a, "ctype", None), ct.PtrT | ct.ArrayT) for a in call.args)


def _fixed_range(loop: ast.For, assigned: set[str]) -> bool:
    """A nested loop's range reads nothing from memory and no variable the outer body sets."""
    for node in ast.walk(loop.iter):
        if isinstance(node, ast.Subscript | ast.Attribute):
            return False
        if isinstance(node, ast.Call) and not pure_call(node) and node is not loop.iter:
            return False
        if isinstance(node, ast.Name) and node.id in assigned:
            return False
    return True
