"""A pointer variable assigned pointers into different buffers (ggml's concat:
``x = src0 + ...`` on one branch, ``x = src1 + ...`` on the other).

A pointer is an offset into one buffer in generated code, so such a variable becomes one
variable per assignment (``x__p0``, ``x__p1``), each into its own buffer, plus ``x__which``,
the number of the assignment that ran last. A statement that uses ``x`` runs as the copy for
the variant that holds it (``if x__which == 0: <statement with x__p0> elif ...``), so every
access is still checked against the buffer it goes into. ``x = c ? p : q`` is split into an
``if`` first. The type checker calls ``split`` when it meets the clash.
"""

from __future__ import annotations

import ast

from clsim.compiler.inline import clone

WHICH = "__which"


class SplitPointer(Exception):
    """Raised by the type checker: variable ``name`` needs splitting."""

    def __init__(self, name: str, error):
        super().__init__(name)
        self.name, self.error = name, error  # error: raised if splitting does not help


def _mentions(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and not hasattr(n, "resolved")
               for n in ast.walk(node))


def _renamed(node, name: str, new: str):
    node = clone(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == name and not hasattr(n, "resolved"):
            n.id = new
    return node


def _located(node, loc):
    for n in ast.walk(node):
        if not hasattr(n, "loc"):
            n.loc = loc
    return node


def _assigns(s, name: str) -> bool:
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and \
        isinstance(s.targets[0], ast.Name) and s.targets[0].id == name


def _conditional_assignments(stmts: list, name: str) -> list:
    """``x = a if c else b`` as ``if c: x = a`` / ``else: x = b`` (each side its own buffer)."""
    out = []
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(s, field, _conditional_assignments(inner, name))
        if _assigns(s, name) and isinstance(s.value, ast.IfExp):
            branch = []
            for value in (s.value.body, s.value.orelse):
                one = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value,
                                 type_comment=None)
                branch.append([_located(one, s.loc)])
            new = ast.If(test=s.value.test, body=branch[0], orelse=branch[1])
            out.append(_located(new, s.loc))
        else:
            out.append(s)
    return out


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _count(stmts: list, name: str) -> int:
    return sum(1 for root in stmts for n in ast.walk(root)
               if _assigns(n, name) and not _mentions(n.value, name) and not _is_none(n.value))


class _Splitter:
    def __init__(self, name: str, variants: int):
        self.name, self.variants, self.next = name, variants, 0

    def variant(self, k: int) -> str:
        return f"{self.name}__p{k}"

    def dispatch(self, s, build) -> ast.stmt:
        """``if x__which == 0: build(0) elif ... else: build(n - 1)``."""
        node = None
        for k in reversed(range(self.variants)):
            body = build(k)
            if node is None:
                node = body
                continue
            test = ast.Compare(left=ast.Name(id=self.name + WHICH, ctx=ast.Load()),
                               ops=[ast.Eq()], comparators=[ast.Constant(value=k)])
            node = [ast.If(test=test, body=body, orelse=node)]
        return [_located(n, s.loc) for n in node]

    def stmts(self, stmts: list) -> list:
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s) -> list:
        name = self.name
        if _assigns(s, name) and _is_none(s.value):  # NULL: every variant is null
            out = [ast.Assign(targets=[ast.Name(id=self.variant(k), ctx=ast.Store())],
                              value=ast.Constant(value=None), type_comment=None)
                   for k in range(self.variants)]
            out.append(ast.Assign(targets=[ast.Name(id=name + WHICH, ctx=ast.Store())],
                                  value=ast.Constant(value=0), type_comment=None))
            return [_located(n, s.loc) for n in out]
        if _assigns(s, name) and not _mentions(s.value, name):  # a new pointer: its variant
            k = self.next
            self.next += 1
            store = ast.Assign(targets=[ast.Name(id=self.variant(k), ctx=ast.Store())],
                               value=s.value, type_comment=None)
            which = ast.Assign(targets=[ast.Name(id=name + WHICH, ctx=ast.Store())],
                               value=ast.Constant(value=k), type_comment=None)
            return [_located(store, s.loc), _located(which, s.loc)]
        if not _mentions(s, name):
            return [s]
        if isinstance(s, ast.If) and not _mentions(s.test, name):
            s.body, s.orelse = self.stmts(s.body), self.stmts(s.orelse)
            return [s]
        if isinstance(s, ast.While) and not _mentions(s.test, name) or \
                isinstance(s, ast.For) and not _mentions(s.iter, name):
            s.body = self.stmts(s.body)
            return [s]
        # a use (x[i], *x = v, f(x), x += 4, x = x + k): the copy for the variant that holds x
        return self.dispatch(s, lambda k: [_renamed(s, name, self.variant(k))])


def split(body: list, name: str) -> None:
    """Split pointer variable ``name`` of ``body`` (in place)."""
    body[:] = _conditional_assignments(body, name)
    splitter = _Splitter(name, max(1, _count(body, name)))
    body[:] = splitter.stmts(body)
