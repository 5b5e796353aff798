"""C's struct values made from fields: ``T v = {a, b};``, ``(T){.d = a}``, ``return v;``.

``v = struct_value(T, a, b, d=c)`` is rewritten before typing into ``v = struct_value(T)``
(the variable's bytes, zeroed) followed by one field store per field, in the struct's order:
the value given (by position, then by name) or 0, as C zero-fills what an initialiser leaves
out. Each field is then written by the ordinary field store, so checks and instruments see
the same stores as ``v.qd = a`` written by hand. ``return struct_value(T, ...)`` and
``a[i] = struct_value(T, ...)`` (a place: an array of structs, a record) go through a
variable first. A helper returning a struct returns its bytes; the caller copies
them into its own variable (``info = helper(...)``); ``helper(...).qd`` in a simple
statement is ``_structN = helper(...)`` before it (a vector's ``f(...).x`` too: the same
value), except under ``and``/``or``/``x if c else y``, which may not evaluate the call.
"""

from __future__ import annotations

import ast
import itertools
import numpy as np

from clsim.compiler.astwalk import walk
from clsim.compiler.diagnostics import compile_error

NAME = "struct_value"


def is_struct_value(node) -> bool:
    return isinstance(node, ast.Call) and \
        getattr(node.func, "resolved", (None, None)) == ("builtin", NAME)


def struct_dtype(call) -> np.dtype:
    kind, what = getattr(call.args[0], "resolved", (None, None)) if call.args else (None, None)
    if kind != "struct":
        raise compile_error(call.loc, f"{NAME}(T, ...): T must be a numpy structured dtype "
                                      "defined at module level, e.g. "
                                      "INFO = np.dtype([('qd', np.float32), ('q_sum', np.int32)])")
    return what


def _located(node, loc):
    for n in walk(node):
        if not hasattr(n, "loc"):
            n.loc = loc
    return node


def _field_values(call, dtype: np.dtype) -> dict:
    names = list(dtype.names)
    if len(call.args) - 1 > len(names):
        raise compile_error(call.loc, f"{NAME}(): {len(call.args) - 1} values for a struct of "
                                      f"{len(names)} fields ({', '.join(names)})")
    values = dict(zip(names, call.args[1:], strict=False))
    for kw in call.keywords:
        if kw.arg not in names:
            raise compile_error(call.loc, f"{NAME}(): the struct has no field '{kw.arg}'; its "
                                          f"fields are {', '.join(names)}")
        if kw.arg in values:
            raise compile_error(call.loc, f"{NAME}(): field '{kw.arg}' is given twice")
        values[kw.arg] = kw.value
    return values


def _zero_stores(target: ast.expr, dtype: np.dtype, loc, fresh) -> list[ast.stmt]:
    """Stores of 0 into every scalar of ``target`` (a struct place of ``dtype``)."""
    out = []
    for name in dtype.names:
        sub = dtype.fields[name][0]
        place = ast.Attribute(value=_copy(target), attr=name, ctx=ast.Load())
        shape = ()
        if sub.subdtype is not None:
            sub, shape = sub.subdtype
        if shape:
            k = f"_sv{next(fresh)}"
            elem = place
            for d, _n in enumerate(shape):
                elem = ast.Subscript(value=elem, slice=ast.Name(id=f"{k}_{d}", ctx=ast.Load()),
                                     ctx=ast.Load())
            inner = _zero_stores(elem, sub, loc, fresh) if sub.names else \
                [ast.Assign(targets=[_store(elem)], value=ast.Constant(0), type_comment=None)]
            for d, n in reversed(list(enumerate(shape))):
                rng = ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                               args=[ast.Constant(n)], keywords=[])
                rng.func.resolved = ("range", None)
                inner = [ast.For(target=ast.Name(id=f"{k}_{d}", ctx=ast.Store()), iter=rng,
                                 body=inner, orelse=[], type_comment=None)]
            out += inner
        elif sub.names:
            out += _zero_stores(place, sub, loc, fresh)
        else:
            out.append(ast.Assign(targets=[_store(place)], value=ast.Constant(0),
                                  type_comment=None))
    return out


def _copy(node):
    from clsim.compiler.inline import clone
    return clone(node)


def _store(node):
    node = _copy(node)
    node.ctx = ast.Store()
    return node


def _expand(target: ast.Name, call, loc, fresh) -> list[ast.stmt]:
    dtype = struct_dtype(call)
    values = _field_values(call, dtype)
    bare = ast.Call(func=call.func, args=call.args[:1], keywords=[])
    out = [ast.Assign(targets=[target], value=bare, type_comment=None)]
    for name in dtype.names:
        sub = dtype.fields[name][0]
        place = ast.Attribute(value=ast.Name(id=target.id, ctx=ast.Load()), attr=name,
                              ctx=ast.Store())
        if name in values:
            if sub.subdtype is not None or sub.names is not None:
                raise compile_error(loc, f"{NAME}(): field '{name}' is an array or a struct; "
                                         "give its elements after the constructor "
                                         f"({target.id}.{name}[j] = ...)")
            out.append(ast.Assign(targets=[place], value=values[name], type_comment=None))
        else:
            wrapper = np.dtype([(name, dtype.fields[name][0])])
            out += _zero_stores(ast.Name(id=target.id, ctx=ast.Load()), wrapper, loc, fresh)
    for stmt in out:
        _located(stmt, loc)
    return out


def expand_struct_values(body: list) -> list:
    """``body`` with each ``v = struct_value(T, ...)`` made into field stores, each
    ``return struct_value(T, ...)`` returning a variable and each ``f(...).qd`` reading a
    variable assigned just before (see the module's docstring)."""
    if not any(is_struct_value(n) or (isinstance(n, ast.Attribute) and
                                      isinstance(n.value, ast.Call)) for root in body
               for n in walk(root)):
        return body
    from clsim.compiler.inline import clone
    return _block(clone(body), itertools.count())


def _returned_fields(s) -> list:
    """``f(...).qd`` in a simple statement, outside ``and``/``or``/``x if c else y`` (which
    may not evaluate the call): the ``Attribute`` nodes whose value is a helper's result."""
    if not isinstance(s, ast.Assign | ast.AugAssign | ast.Expr | ast.Return):
        return []
    found, stack = [], [s]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BoolOp | ast.IfExp | ast.Lambda):
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) and \
                getattr(node.value.func, "resolved", (None,))[0] == "func":
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _block(stmts: list, fresh) -> list:
    out = []
    for s in stmts:
        for node in _returned_fields(s):  # f(...).qd: the returned value in a variable first
            tmp = f"_struct{next(fresh)}"
            out.append(_located(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                                           value=node.value, type_comment=None), s.loc))
            node.value = _located(ast.Name(id=tmp, ctx=ast.Load()), s.loc)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, _block(getattr(s, field), fresh))
        into_place = isinstance(s, ast.Assign) and len(s.targets) == 1 and \
            not isinstance(s.targets[0], ast.Name) and is_struct_value(s.value)
        if (isinstance(s, ast.Return) or into_place) and is_struct_value(s.value):
            tmp = ast.Name(id=f"_struct{next(fresh)}", ctx=ast.Store())
            out += _expand(tmp, s.value, s.loc, fresh)
            s.value = _located(ast.Name(id=tmp.id, ctx=ast.Load()), s.loc)
            out.append(s)
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], ast.Name) and is_struct_value(s.value) and \
                (len(s.value.args) > 1 or s.value.keywords):
            out += _expand(s.targets[0], s.value, s.loc, fresh)
        else:
            out.append(s)
    return out
