"""C block scope: a name used only inside separate blocks is a separate variable in each.

Python has one variable per name and function, so a kernel that reuses ``row`` as the
variable of two loops, or ``t`` as a temporary in two ``if`` blocks, would tie them together:
one type (a float ``t`` in one block and an int ``t`` in the other would clash), one storage
class, and a barrier loop's counter would look "assigned elsewhere" because the other loop
assigns it. In C each block declares its own (``for (int row = ...)``, ``{ float t = ...; }``).

A *block* here is a ``for`` loop binding the name, or the body of an ``if``/``else``/
``while``/``for`` in which the name is assigned before every read (so no value flows in), with
no use of the name outside the blocks (so none flows out). When the uses of a name split into
two or more such blocks, each gets its own variable (``t`` becomes ``t__s1``, ``t__s2``...),
which is exactly C's meaning; the innermost blocks are taken, as C code declares temporaries
where they are used. A name read after its blocks keeps Python's meaning (one variable, one
type: ``infer`` reports a clash naming both lines).
"""

from __future__ import annotations

import ast
import itertools

from clsim.compiler.astwalk import walk
from clsim.compiler.inline import clone

_BODIES = ("body", "orelse")


# While _candidates runs: the variable names under each node (by id), so that asking whether
# a statement mentions a name does not walk it again for every name (that made scoping
# quadratic: 0.7 s of a 200-line kernel's 1.3 s compile).
_NAMES_UNDER: dict[int, frozenset] = {}


def _index(node) -> frozenset:
    names = {node.id} if isinstance(node, ast.Name) and not hasattr(node, "resolved") else set()
    for child in ast.iter_child_nodes(node):
        names |= _index(child)
    _NAMES_UNDER[id(node)] = frozenset(names)
    return _NAMES_UNDER[id(node)]


def _mentions(node, name: str) -> bool:
    nodes = node if isinstance(node, list) else [node]
    for root in nodes:
        known = _NAMES_UNDER.get(id(root))
        if known is None:
            known = _index(root)
        if name in known:
            return True
    return False


def _own_parts(s) -> list:
    """The parts of a statement outside its nested bodies (test, iter, target, value...)."""
    return [getattr(s, f) for f in s._fields if f not in _BODIES and getattr(s, f, None)
            is not None]


def _is_loop_of(s, name: str) -> bool:
    return isinstance(s, ast.For) and isinstance(s.target, ast.Name) and s.target.id == name \
        and not _mentions(s.iter, name) and not _mentions(s.orelse, name)


def _blocks(stmts, name: str):
    """The innermost blocks holding every use of ``name`` in ``stmts`` (statement lists or
    loops binding it), or None when some use is not inside such a block."""
    found: list = []
    for s in stmts:
        if not _mentions(s, name):
            continue
        if _is_loop_of(s, name):
            found.append(s)
            continue
        if not isinstance(s, ast.If | ast.For | ast.While) or _mentions(_own_parts(s), name):
            return None
        for field in _BODIES:
            body = getattr(s, field)
            if not _mentions(body, name):
                continue
            inner = _blocks(body, name)
            if inner is None:
                if _exposed(body, name, False)[0]:
                    return None
                inner = [body]
            found += inner
    return found


def _reads(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               for n in walk(node))


def _exposed(stmts, name: str, defined: bool) -> tuple[bool, bool]:
    """(whether some read of ``name`` may see a value from before ``stmts``, whether ``name``
    is surely assigned after them). Conservative: a jump counts as falling through."""
    for s in stmts:
        if isinstance(s, ast.If | ast.While):
            if _reads(s.test, name) and not defined:
                return True, defined
            body = _exposed(s.body, name, defined)
            other = _exposed(s.orelse, name, defined)
            if body[0] or other[0]:
                return True, defined
            if isinstance(s, ast.If):
                defined = body[1] and other[1]
        elif isinstance(s, ast.For):
            if _reads(s.iter, name) and not defined:
                return True, defined
            binds = isinstance(s.target, ast.Name) and s.target.id == name
            if _exposed(s.body, name, defined or binds)[0] or \
                    _exposed(s.orelse, name, defined)[0]:
                return True, defined
        elif isinstance(s, ast.Assign | ast.AugAssign):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            stores = [t for t in targets if isinstance(t, ast.Name) and t.id == name]
            rest = [t for t in targets if t not in stores]
            reads = _reads(s.value, name) or any(_reads(t, name) for t in rest)
            if (reads or (stores and isinstance(s, ast.AugAssign))) and not defined:
                return True, defined
            defined = defined or bool(stores) or any(
                isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name
                                                 for e in t.elts) for t in rest)
        elif _reads(s, name) and not defined:
            return True, defined
    return False, defined


def _candidates(body, params) -> dict[str, list]:
    try:
        names = set().union(*(_index(root) for root in body)) - set(params)
        found = {}
        for name in sorted(names):
            blocks = _blocks(body, name)
            if blocks is not None and len(blocks) > 1:
                found[name] = blocks
        return found
    finally:
        _NAMES_UNDER.clear()  # ids are only valid while these nodes live


def scope_loop_variables(body: list[ast.stmt], params) -> list[ast.stmt]:
    """``body`` with names renamed per block where C's block scope applies (on a copy of the
    cached tree when anything is renamed)."""
    if not _candidates(body, params):
        return body
    body = clone(body)
    counter = itertools.count(1)
    for name, blocks in _candidates(body, params).items():
        for block in blocks:
            new = f"{name}__s{next(counter)}"
            for root in block if isinstance(block, list) else [block]:
                for node in walk(root):
                    if isinstance(node, ast.Name) and node.id == name and not hasattr(
                            node, "resolved"):
                        node.id = new
    return body
