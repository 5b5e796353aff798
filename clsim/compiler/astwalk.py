"""``walk``: ``ast.walk`` at about 2.5 times its speed, nodes in the same order.

The front end's passes each walk a kernel's whole body (a dozen walks of a 200-line kernel per
compile or ``to_cl``); ``ast.walk`` spends most of its time in the generators of
``ast.iter_child_nodes`` and ``ast.iter_fields``. This walk reads ``_fields`` directly and grows
one list instead of a deque, and yields the same nodes in the same breadth-first order, so a
pass that stops at its first finding reports the same one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

_AST = ast.AST


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of the tree under ``node``, ``node`` first, in ``ast.walk``'s order."""
    queue = [node]
    push = queue.append
    i = 0
    while i < len(queue):
        node = queue[i]
        i += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, _AST):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        push(item)
        yield node


def preorder(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` depth first, each before its children, in the order an
    ``ast.NodeVisitor`` without ``visit_*`` methods meets them (without its recursion and
    method look-up per node)."""
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        yield node
        start = len(stack)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, _AST):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        push(item)
        stack[start:] = stack[start:][::-1]
