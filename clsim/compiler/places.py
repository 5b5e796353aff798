"""Typing rules of places a value lives in: pointer arithmetic, struct fields, __constant
tables, and the rewrite of component stores (``v.xy = e``, ``v[i] = e`` on a vector
variable become ``v = vector_set(v, e)``, so that every later pass sees a plain assignment).
The type checker (``infer``) calls these; they hold no state of their own.
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler import vectors as vx
from clsim.compiler.diagnostics import compile_error
from clsim.compiler.structs import StructT


def pointer_arith(op: str, a, b, loc):
    """``p + k``, ``k + p``, ``p - k`` (a pointer) and ``p - q`` (an element count)."""
    if isinstance(a, ct.PtrT) and isinstance(b, ct.PtrT) and op == "-":
        if a.base != b.base:
            raise compile_error(loc, f"'-' between pointers into '{a.base}' and '{b.base}'")
        return "int64"
    ptr, other = (a, b) if isinstance(a, ct.PtrT) else (b, a)
    if op not in ("+", "-") or (op == "-" and ptr is b) or not ct.is_int(ct.promote(other)):
        raise compile_error(loc, f"'{op}' between {ct.short(a)} and {ct.short(b)}: pointers "
                                 "take p + k, p - k and p - q")
    return ptr


def rewrite_component_store(typer, s, target, value) -> bool:
    """Rewrite ``v.xy = e``, ``v[i] = e`` (and ``v.x += e``) on a vector variable into
    ``v = vector_set(v, e)``, so that every later pass sees a plain assignment of ``v``."""
    if not isinstance(target, ast.Attribute | ast.Subscript):
        return False
    base = target.value
    if not isinstance(base, ast.Name) or hasattr(base, "resolved"):
        return False
    vec = typer.env.get(base.id)
    if not isinstance(vec, ct.VecT):
        if isinstance(target, ast.Attribute) and vec is not None:
            raise compile_error(s.loc, f"'{base.id}' is a {ct.short(vec)}, not a vector: "
                                       f"'.{target.attr}' cannot be assigned")
        return False
    if value is None:  # augmented: v.x += e is v.x = v.x + e
        read = copy_load(target)
        value = ast.BinOp(left=read, op=s.op, right=s.value)
        value.loc = s.loc
    call = ast.Call(func=ast.Name(id="vector_set", ctx=ast.Load()),
                    args=[load_name(base.id, s.loc), value], keywords=[])
    call.func.resolved = ("builtin", "vector_set")
    call.loc = call.func.loc = s.loc
    if isinstance(target, ast.Attribute):
        call.vector_components = vx.components(target.attr, vec.width, s.loc)
    else:
        if isinstance(target.slice, ast.Constant):
            if not 0 <= target.slice.value < vec.width:
                raise compile_error(s.loc, f"v[{target.slice.value}] is beyond a {vec}")
            call.vector_components = [target.slice.value]
        else:
            call.vector_index = target.slice
            call.args.append(target.slice)
    new = ast.Assign(targets=[ast.Name(id=base.id, ctx=ast.Store())], value=call,
                     type_comment=None)
    new.loc = s.loc
    new.targets[0].loc = s.loc
    s.__class__ = ast.Assign
    s.__dict__.update(new.__dict__)
    return True


def refuse_constant_store(target, loc) -> None:
    base = target
    while isinstance(base, ast.Subscript | ast.Attribute):
        base = base.value
    if getattr(base, "resolved", (None,))[0] == "table":
        raise compile_error(loc, f"'{base.id}' is a __constant table (a module-level array): "
                                 "kernels cannot write it; pass a buffer to write")


def field_type(st: StructT, name: str, loc):
    field = st.field(name)
    if field is None:
        raise compile_error(loc, f"the struct has no field '.{name}' (fields: "
                                 f"{', '.join(f.name for f in st.fields)})")
    if field.shape:
        return ct.ArrayT(field.dtype, len(field.shape), "field", field.shape)
    return field.dtype


def load_name(name: str, loc) -> ast.Name:
    node = ast.Name(id=name, ctx=ast.Load())
    node.loc = loc
    return node


def copy_load(target):
    """A load of the assignment target ``v.x`` or ``v[i]`` (for ``v.x += e``)."""
    if isinstance(target, ast.Attribute):
        node = ast.Attribute(value=load_name(target.value.id, target.loc), attr=target.attr,
                             ctx=ast.Load())
    else:
        node = ast.Subscript(value=load_name(target.value.id, target.loc), slice=target.slice,
                             ctx=ast.Load())
    node.loc = target.loc
    return node
