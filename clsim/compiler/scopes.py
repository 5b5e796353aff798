"""C block scope for loop variables: ``for (int row = ...)`` in two loops is two variables.

Python has one variable per name and function, so a kernel that reuses ``row`` as the
variable of two loops would tie them together: one type, one storage class, and a barrier
loop's counter would look "assigned elsewhere" because the other loop assigns it. When the
name is used only inside the loops that bind it (never read outside them), each such loop
gets its own variable (``row`` becomes ``row__s1``, ``row__s2``...), which is exactly C's
meaning. A name that is also read or assigned outside its loops keeps Python's meaning.
"""

from __future__ import annotations

import ast
import itertools


def _loops_binding(body) -> dict[str, list[ast.For]]:
    loops: dict[str, list[ast.For]] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                loops.setdefault(node.target.id, []).append(node)
    return loops


def _uses_outside(body, name: str, loops: list[ast.For]) -> bool:
    """Whether ``name`` appears anywhere but in ``loops`` (their targets and bodies)."""
    inside = {id(n) for loop in loops for n in ast.walk(loop)}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id == name and id(node) not in inside:
                return True
    return False


def _outermost(loops: list[ast.For]) -> list[ast.For]:
    nested = {id(n) for loop in loops for n in ast.walk(loop) if n is not loop}
    return [loop for loop in loops if id(loop) not in nested]


def scope_loop_variables(body: list[ast.stmt], params) -> list[ast.stmt]:
    """``body`` with loop variables renamed per loop where C's block scope applies (on a copy
    of the cached tree when anything is renamed)."""
    candidates = {name: loops for name, loops in _loops_binding(body).items()
                  if len(loops) > 1 and name not in params}
    candidates = {name: loops for name, loops in candidates.items()
                  if len(_outermost(loops)) == len(loops)
                  and not _uses_outside(body, name, loops)}
    if not candidates:
        return body
    from clsim.compiler.inline import clone

    body = clone(body)
    counter = itertools.count(1)
    for name in candidates:
        for loop in _loops_binding(body)[name]:
            new = f"{name}__s{next(counter)}"
            for node in ast.walk(loop):
                if isinstance(node, ast.Name) and node.id == name and not hasattr(
                        node, "resolved"):
                    node.id = new
    return body
