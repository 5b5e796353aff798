"""Vector component selectors (``v.s0``, ``v.lo``, ``v.wzyx``) that libclang does not expose.

clang's ExtVectorElementExpr reaches Python as an unexposed node without its selector, so the
selector is read from the source: the node's own text; in a macro's body (``(x).s0`` in
ggml's ``CONVERT_ACC4(x)``), the macro's tokens, where clang starts the node; on a macro
argument (``bits4.s0`` in a macro called with ``as_ushort8(regA)``), the macro's body, where
the k-th such node of one expansion is the k-th ``bits4.<selector>`` of the body (clang's
nodes and the body's tokens are both in source order), and only when the counts agree. A
selector none of these finds is None: the caller refuses the construct, never guesses.
"""

from __future__ import annotations

import re

import clang.cindex as ci

from clsim.frontends.opencl_c.ctype import CType, ctype
from clsim.frontends.opencl_c.nodes import CK, children

# OpenCL C's component selectors: .s0-.sf (any run), .xyzw, .rgba, .lo/.hi/.even/.odd
SWIZZLE = re.compile(r"^(?:[sS][0-9a-fA-F]+|[xyzw]{1,4}|[rgba]{1,4}|lo|hi|even|odd)$")
_OPEN, _CLOSE = "([{", ")]}"


def selector_width(component: str, base: CType) -> int:
    """How many components a selector picks from a vector of ``base``'s width."""
    if component in ("lo", "hi", "even", "odd"):
        return (base.width + 1) // 2
    return len(component) - 1 if component[0] in "sS" else len(component)


def is_selector(node) -> bool:
    """A component selector that keeps the vector's type (``v.wzyx``, ``v.s0123``): its node
    has its base's type spelled alike (an implicit cast changes it, as an lvalue's
    ``__private`` goes, except a compound literal's) and spans a selector past its base (in a
    macro, where both span the call, one in the macro's tokens)."""
    kids = children(node)
    if node.kind not in (CK.UNEXPOSED_EXPR, CK.MEMBER_REF_EXPR) or len(kids) != 1 or \
            ctype(kids[0].type).kind != "vector" or node.type.spelling != kids[0].type.spelling:
        return False
    end, base_end = node.extent.end, kids[0].extent.end
    if (end.line, end.column) != (base_end.line, base_end.column):
        return True
    return body_selector(node, kids[0]) is not None


def _is_narrowing(node) -> bool:
    kids = children(node)
    return node.kind == CK.UNEXPOSED_EXPR and len(kids) == 1 and \
        ctype(kids[0].type).kind == "vector" and ctype(node.type) != ctype(kids[0].type)


def nesting(base) -> int:
    """How many selectors the base of a selector already applies (``x.lo`` in ``x.lo.s0``)."""
    depth = 0
    while is_selector(base) or _is_narrowing(base):
        depth, base = depth + 1, children(base)[0]
    return depth


def _chain(tokens: list[str]) -> list[str]:
    """The selectors of the postfix chain the tokens start with (``(x).lo.s0`` -> lo, s0)."""
    depth, selectors, i = 0, [], 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in _OPEN:
            depth += 1
        elif tok in _CLOSE:
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and tok == "." and i + 1 < len(tokens):
            selectors.append(tokens[i + 1])
            i += 1
        elif depth == 0 and i > 0 and not (tok.isidentifier() and tokens[i - 1] == "."):
            break  # the chain ends at the first operator or separator
        i += 1
    return selectors


def body_selector(node, base) -> str | None:
    """The selector of a node written in a macro's body (``(x).s0``): clang's tokens for it
    start where the macro spells it."""
    selectors = _chain([t.spelling for t in node.get_tokens()])
    depth = nesting(base)
    return selectors[depth] if depth < len(selectors) else None


def _where(loc) -> tuple:
    return (loc.file.name if loc.file else "", loc.line, loc.column)


class MacroSelectors:
    """Selectors on macro arguments, resolved once per macro expansion of a translation
    unit."""

    def __init__(self, tu: ci.TranslationUnit):
        self.calls = [c for c in tu.cursor.get_children()
                      if c.kind == CK.MACRO_INSTANTIATION and c.referenced is not None]
        self.functions = [c for c in tu.cursor.get_children()
                          if c.kind == CK.FUNCTION_DECL and c.is_definition()]
        self.resolved: dict[int, str | None] = {}  # node hash -> its selector
        self.done: set[int] = set()  # expansions resolved

    def selector(self, node, base) -> str | None:
        found = body_selector(node, base)
        if found is not None:
            return found
        call = self._call_at(node)
        if call is None:
            return None
        if call.hash not in self.done:
            self.done.add(call.hash)
            self._resolve(call)
        return self.resolved.get(node.hash)

    def _call_at(self, node):
        at = _where(node.extent.start)
        for call in self.calls:
            start, end = _where(call.extent.start), _where(call.extent.end)
            if start[0] == at[0] and start[1:] <= at[1:] <= end[1:]:
                return call
        return None

    def _resolve(self, call) -> None:
        args = _arguments(call)
        params, body = _definition(call.referenced)
        if args is None or params is None or len(args) != len(params):
            return
        nodes: dict[tuple[int, int], list] = {}
        for node in self._nodes_in(call):
            first = next(iter(node.get_tokens()), None)
            if first is None or body_selector(node, children(node)[0]) is not None:
                continue
            where = _where(first.location)
            index = next((i for i, arg in enumerate(args) if where in arg), None)
            if index is not None:
                nodes.setdefault((index, nesting(children(node)[0])), []).append(node)
        for (index, depth), found in nodes.items():
            uses = [chain[depth] for chain in _uses(body, params[index]) if depth < len(chain)]
            if len(uses) == len(found):  # one node per use of the parameter, in order
                self.resolved.update({n.hash: u for n, u in zip(found, uses, strict=True)})

    def _nodes_in(self, call):
        """The selector nodes of the expansion ``call``, in source order."""
        start, end = _where(call.extent.start), _where(call.extent.end)
        function = next((f for f in self.functions if _where(f.extent.start) <= start and
                         end <= _where(f.extent.end)), None)
        if function is None:
            return
        for node in function.walk_preorder():
            here = _where(node.extent.start)
            if here[0] == start[0] and start[1:] <= here[1:] <= end[1:] and \
                    (_is_narrowing(node) or is_selector(node)):
                yield node


def _arguments(call) -> list[set] | None:
    """Each argument of a macro call as the set of places of its tokens."""
    tokens = list(call.get_tokens())
    if len(tokens) < 3 or tokens[1].spelling != "(":
        return None
    args, current, depth = [], set(), 0
    for tok in tokens[2:]:
        text = tok.spelling
        if text in _OPEN:
            depth += 1
        elif text in _CLOSE:
            if depth == 0:
                args.append(current)
                return args
            depth -= 1
        elif text == "," and depth == 0:
            args.append(current)
            current = set()
            continue
        current.add(_where(tok.location))
    return None


def _definition(macro) -> tuple[list[str] | None, list[str]]:
    """A function-like macro's parameter names and body tokens."""
    tokens = [t.spelling for t in macro.get_tokens()]
    if len(tokens) < 3 or tokens[1] != "(":
        return None, []
    close = tokens.index(")")
    return [t for t in tokens[2:close] if t != ","], tokens[close + 1:]


def _uses(body: list[str], param: str) -> list[list[str]]:
    """The selector chains after each use of ``param`` in a macro body, in order."""
    return [_chain(body[i + 1:]) if i + 1 < len(body) and body[i + 1] == "." else []
            for i, tok in enumerate(body) if tok == param]
