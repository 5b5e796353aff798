"""C's loop variables in Python's ``for``: the two places where they silently differ, refused.

``for j in range(n)`` mirrors ``for (j = 0; j < n; j++)``, but after the loop C leaves
``j == n`` where Python leaves ``n - 1``, and ``j += 2`` in the body shortens C's loop but not
Python's. Both would be a silent wrong answer, so reading a loop variable after its loop (before
it is assigned again) and assigning it inside its loop are compile errors that say what to write.
A loop with a ``break`` may be read after: the value at the break is the same in both, and
when it runs to its end the generated code leaves C's value (``codegen.s_For``). This module
only checks; it changes nothing.
"""

from __future__ import annotations

import ast

from clsim.compiler.astwalk import walk
from clsim.compiler.diagnostics import compile_error

_BODIES = ("body", "orelse")


def check_loop_variables(tree: ast.FunctionDef) -> None:
    _walk(tree.body, frozenset())


def _targets(s) -> set[str]:
    if isinstance(s, ast.Assign):
        nodes = s.targets
    elif isinstance(s, ast.AugAssign | ast.AnnAssign):
        nodes = [s.target]
    else:
        return set()
    names: set[str] = set()
    for t in nodes:
        for n in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
            if isinstance(n, ast.Name):
                names.add(n.id)
    return names


def _check_reads(nodes, dead: frozenset) -> None:
    for root in nodes:
        for n in walk(root):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in dead:
                _dead_read(n.id, n)


def _dead_read(name: str, node) -> None:
    raise compile_error(getattr(node, "loc", None), (
        f"'{name}' is read after 'for {name} in range(...)': C leaves it one step past the "
        "last value (j == n after j < n), Python leaves the last value. Assign "
        f"'{name}' before reading it, or write the loop as a while loop"))


def _reject_assignments(loop: ast.For) -> None:
    name = loop.target.id
    for n in walk(ast.Module(body=loop.body, type_ignores=[])):
        hit = name in _targets(n) or (
            isinstance(n, ast.For) and isinstance(n.target, ast.Name) and n.target.id == name)
        if hit:
            raise compile_error(getattr(n, "loc", None), (
                f"the loop variable '{name}' is assigned inside 'for {name} in range(...)': "
                "in C that changes the iterations, in Python it does not. Write a while loop "
                f"({name} = start; while {name} < stop: ...; {name} += step) to mirror the "
                "C loop, or use another variable"))


def has_own_break(loop) -> bool:
    """Whether the loop's own body has a break (not one of an inner loop)."""
    todo = list(loop.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Break):
            return True
        if isinstance(n, ast.If | ast.With | ast.Try):
            todo += [c for c in ast.iter_child_nodes(n) if isinstance(c, ast.stmt)]
    return False


def _breaks(loop: ast.For) -> set[str]:
    """{loop variable} when the loop's own body has a break."""
    return {loop.target.id} if has_own_break(loop) else set()


def _walk(stmts, dead: frozenset) -> frozenset:
    for s in stmts:
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name):
            _check_reads([s.iter], dead)
            _reject_assignments(s)
            inner = _walk(s.body, dead - {s.target.id})
            # A loop with a break may be read after: code generation gives its variable C's
            # value when it runs to its end (stop, not stop - step; codegen.s_For).
            dead = _walk(s.orelse, inner) | ({s.target.id} - _breaks(s))
        elif isinstance(s, ast.While | ast.If):
            _check_reads([s.test], dead)
            body = _walk(s.body, dead)
            dead = body | _walk(s.orelse, dead)
        elif isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            reads = [s.value] if s.value is not None else []
            _check_reads(reads + [t for t in targets if not isinstance(t, ast.Name)], dead)
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
                    and s.target.id in dead:
                _dead_read(s.target.id, s)
            dead = dead - _targets(s)
        else:
            _check_reads([s], dead)
    return dead
