"""What the checks learn from a kernel's source before running it (no code generation here).

- ``written_arrays``: the array names a kernel (or helper) may write, including through
  helpers and builtins, so buffer parameters that are only ever read need no tracking at all;
- ``declarations``: where each local or private array is declared, for messages.

Both over-approximate when unsure (an unknown builtin receiving an array counts as a write):
that only costs speed, never a missed finding.
"""

from __future__ import annotations

import ast

from clsim.compiler.frontend import Loc, parse

_READ_ONLY_BUILTINS = {"vload2", "vload4", "vload8"}


def written_arrays(parsed, _active: set[int] | None = None) -> set[str]:
    """Names (parameters or locals of ``parsed``) whose elements the code may store to."""
    active = set() if _active is None else _active
    if id(parsed) in active:  # recursion is rejected by the compiler; be safe anyway
        return set()
    active.add(id(parsed))
    out: set[str] = set()
    pointers: dict[str, set[str]] = {}  # p -> the names p = x + k, view(x, ...) points into
    for node in ast.walk(parsed.tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            root = node.value
            while isinstance(root, ast.Subscript):  # ax[k][i] = v through a pointer array
                root = root.value
            if isinstance(root, ast.Name):
                out.add(root.id)
        elif isinstance(node, ast.Call):
            out |= _call_writes(node, active)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            pointers.setdefault(node.targets[0].id, set()).update(_pointed_into(node.value))
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) and \
                isinstance(node.targets[0].value, ast.Name):  # ax[k] = x + off
            pointers.setdefault(node.targets[0].value.id, set()).update(
                _pointed_into(node.value))
    grown = True
    while grown:  # a store through p writes what p points into (p = q + 1; q = out + k)
        grown = False
        for name, targets in pointers.items():
            if name in out and not targets <= out:
                out |= targets
                grown = True
    active.discard(id(parsed))
    return out


def _pointed_into(value) -> set[str]:
    """The names a pointer expression may point into: ``x``, ``x + k``, ``view(x, ...)``
    (over-approximated: a name that is no buffer only costs tracking)."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub)):
        return _pointed_into(value.left) | _pointed_into(value.right)
    func = getattr(value, "func", None)
    if isinstance(value, ast.Call) and value.args and (
            getattr(func, "id", None) == "view" or getattr(func, "attr", None) == "view"):
        return _pointed_into(value.args[0])
    return set()


def _call_writes(node: ast.Call, active: set[int]) -> set[str]:
    resolved = getattr(node.func, "resolved", None)
    names = [a.id if isinstance(a, ast.Name) else None for a in node.args]
    if resolved and resolved[0] == "func":
        callee = parse(resolved[1])
        inner = written_arrays(callee, active)
        return {name for param, arg in zip(callee.params, node.args, strict=False)
                if param in inner for name in _pointed_into(arg)}
    if resolved and resolved[0] == "builtin":
        name = resolved[1]
        if name in _READ_ONLY_BUILTINS:
            return set()
        if name.startswith("vstore") and len(names) == 3:  # the pointer may be y + k
            return {n.id for n in ast.walk(node.args[2]) if isinstance(n, ast.Name)}
        if name.startswith("async_work_group"):  # the destination, maybe out + k
            return {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
        if name.startswith("atomic"):  # atomic_add(counts[i], 1): the element's buffer
            return {a.value.id for a in node.args
                    if isinstance(a, ast.Subscript) and isinstance(a.value, ast.Name)} | {
                        n for n in names if n is not None}
    return {n for n in names if n is not None}


def tracked_helper_params(parsed, tracked: set[str]) -> set[tuple[str, str]]:
    """(helper, parameter) pairs through which a helper can reach a tracked array: a call
    passes a tracked name (or an expression, to be safe) in that position, directly or through
    another helper's tracked parameter. Accesses through any other helper parameter (a
    read-only buffer, a helper's own array) need no recording."""
    out: set[tuple[str, str]] = set()
    _bind_calls(parsed, set(tracked), out)
    return out


def _bind_calls(parsed, tracked: set[str], out: set) -> None:
    for node in ast.walk(parsed.tree):
        resolved = getattr(getattr(node, "func", None), "resolved", None)
        if not (isinstance(node, ast.Call) and resolved and resolved[0] == "func"):
            continue
        callee = parse(resolved[1])
        name = resolved[1].name  # the helper's name as its access sites carry it
        # a local name may hold a pointer into a tracked array (p = view(acc, float4); an
        # array of vectors qv, whose storage is qv__vec): reached, to be safe
        reached = {param for param, arg in zip(callee.params, node.args, strict=False)
                   if not isinstance(arg, ast.Name) or arg.id in tracked or
                   arg.id not in parsed.params}
        # a pointer argument (x + k) reaches the helper as its buffer "p__buf" and an offset
        new = {(name, p + suffix) for p in reached for suffix in ("", "__buf")} - out
        if new:
            out |= new
            _bind_calls(callee, reached, out)


def declarations(tree) -> dict[str, Loc]:
    """Where each local/private array of the kernel body is declared."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Call) and hasattr(node, "loc"):
                out.setdefault(node.targets[0].id, node.loc)
    return out
