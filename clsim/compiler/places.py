"""Typing rules of places a value lives in: pointer arithmetic, struct fields, __constant
tables, and the rewrite of component stores (``v.xy = e``, ``v[i] = e`` on a vector
variable become ``v = vector_set(v, e)``, so that every later pass sees a plain assignment).
The type checker (``infer``) calls these; they hold no state of their own.
"""

from __future__ import annotations

import ast

from clsim.compiler import builtins as table
from clsim.compiler import ctypes as ct
from clsim.compiler import vectors as vx
from clsim.compiler.astwalk import walk
from clsim.compiler.diagnostics import compile_error
from clsim.compiler.inline import clone
from clsim.compiler.pointer_params import user_name
from clsim.compiler.structs import StructT
from clsim.compiler.vector_arrays import VEC_SUFFIX
from clsim.compiler.vector_arrays import user_name as array_name


def pointer_arith(op: str, a, b, loc):
    """``p + k``, ``k + p``, ``p - k`` (a pointer) and ``p - q`` (an element count); on a
    null argument (``src2 = src2 + off`` with ``src2`` passed None) still None."""
    if ct.NULL in (a, b):
        if op in ("+", "-") and (ct.is_int(ct.promote(b)) or ct.is_int(ct.promote(a))):
            return ct.NULL
        raise compile_error(loc, f"'{op}' on None (a null pointer): only p + k and p - k")
    if isinstance(a, ct.PtrT) and isinstance(b, ct.PtrT) and op == "-":
        if a.base != b.base:
            raise compile_error(loc, f"'-' between pointers into '{a.base}' and '{b.base}'")
        return "int64"
    ptr, other = (a, b) if isinstance(a, ct.PtrT) else (b, a)
    if ptr.record_copy:
        raise compile_error(loc, f"'{op}' on a struct (a copy of a record, b = x[ib]): "
                                 "advance a pointer instead (p = x + ib; p + 1)")
    if op not in ("+", "-") or (op == "-" and ptr is b) or not ct.is_int(ct.promote(other)):
        raise compile_error(loc, f"'{op}' between {ct.short(a)} and {ct.short(b)}: pointers "
                                 "take p + k, p - k and p - q")
    return ptr


def pointer_clash(name: str, old, new) -> str:
    """Why one variable cannot hold both pointers (ct.join_pointers refused them)."""
    name = user_name(name)
    if old.base != new.base:
        return (f"'{name}' points into '{old.base}' elsewhere but into '{new.base}' here; a "
                "pointer variable points into one buffer: use two names")
    return (f"'{name}' is a {ct.short(old)} elsewhere but a {ct.short(new)} here; a C pointer "
            f"variable has one pointee type: use a new name for the cast "
            f"(q = view({name}, T, off)), or pass the buffer as the type the kernel reads")


def field_pointer(node: ast.Attribute, field: ct.ArrayT):
    """``x[i].qs`` used as a pointer (``x[i].qs + k``, ``q = x[i].qs``, ``f(x[i].qs)``):
    C's array-to-pointer decay, a view of the field's element type into the buffer's bytes.
    The record must be in a buffer (a struct variable's own bytes are no buffer)."""
    root = node
    while isinstance(root, ast.Subscript | ast.Attribute) and not pointer_element(root):
        root = root.value  # down to the buffer, a pointer, or ax[k] of a pointer array
    t = getattr(root, "ctype", None)
    if isinstance(t, ct.PtrT) and t.record_copy and len(field.shape) == 1:
        t = ct.PtrT(t.base, t.array)  # a record read in place: its buffer's bytes
    if isinstance(t, ct.ArrayT) and isinstance(root, ast.Name) and t.space == "global":
        t = ct.PtrT(root.id, t)
    if not isinstance(t, ct.PtrT) or t.record_copy or len(field.shape) != 1 or \
            isinstance(field.dtype, StructT):
        raise compile_error(node.loc, f"'{ast.unparse(node)}' as a pointer: pointers go into "
                                      "1-D array fields of records in a buffer (x[i].qs + k); "
                                      "a struct variable's fields are read element by element")
    node.field_pointer = True
    return ct.PtrT(t.base, t.array, field.dtype)


def is_field(node) -> bool:
    """A struct field access (or an element of an array field): a load or store target."""
    if isinstance(node, ast.Attribute):
        base = getattr(node.value, "ctype", None)
        return isinstance(base, StructT) or (isinstance(base, ct.PtrT)
                                             and isinstance(base.dtype, StructT))
    if isinstance(node, ast.Subscript):
        base = getattr(node.value, "ctype", None)
        return isinstance(base, ct.ArrayT) and base.space == "field"
    return False


def rewrite_component_store(typer, s, target, value) -> bool:
    """Rewrite ``v.xy = e``, ``v[i] = e`` (and ``v.x += e``) on a vector variable into
    ``v = vector_set(v, e)``, so that every later pass sees a plain assignment of ``v``."""
    if not isinstance(target, ast.Attribute | ast.Subscript):
        return False
    base = target.value
    if _vector_in_memory(typer, base):  # p[i].x = e: p[i] = vector_set(p[i], e)
        return _rewrite_memory_component(typer, s, target, value)
    if not isinstance(base, ast.Name) or hasattr(base, "resolved"):
        return False
    vec = typer.env.get(base.id)
    if not isinstance(vec, ct.VecT):
        is_struct = isinstance(vec, StructT) or isinstance(getattr(vec, "dtype", None), StructT)
        if isinstance(target, ast.Attribute) and vec is not None and not is_struct:
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
    _set_components(call, target, vec, s.loc)
    new = ast.Assign(targets=[ast.Name(id=base.id, ctx=ast.Store())], value=call,
                     type_comment=None)
    new.loc = s.loc
    new.targets[0].loc = s.loc
    s.__class__ = ast.Assign
    s.__dict__.update(new.__dict__)
    return True


def _vector_in_memory(typer, node) -> bool:
    """``p[i]`` through a pointer variable to vectors (a view, an array of vectors), whose
    alignment to the vector was checked where it was assigned (an in-place
    ``view(x, float4, off)[i]`` is checked at each access, whole)."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name):
        return False
    t = typer.expr(node.value)
    return isinstance(t, ct.PtrT) and isinstance(t.view, ct.VecT)


def _rewrite_memory_component(typer, s, target, value) -> bool:
    """``p[i].xy = e`` (or ``+=``, ``p[i][k] = e``) as ``p[i] = vector_set(p[i], e)``: C
    writes the components in memory; the index expressions have no side effects in kernels,
    so reading them twice is the same access."""
    place = target.value
    vec = typer.expr(place)
    single = vx.assigned_components(target.attr, vec.width, s.loc) \
        if isinstance(target, ast.Attribute) else \
        [target.slice.value] if isinstance(target.slice, ast.Constant) else None
    if single is not None and len(single) == 1 and 0 <= single[0] < vec.width:
        return _component_store(s, place, single[0], vec, value)
    read = clone(place)
    for node in ast.walk(read):
        if hasattr(node, "ctx"):
            node.ctx = ast.Load()
    component = clone(target)
    component.value = read
    component.ctx = ast.Load()
    if value is None:
        value = ast.BinOp(left=component, op=s.op, right=s.value)
        value.loc = s.loc
    call = ast.Call(func=ast.Name(id="vector_set", ctx=ast.Load()), args=[read, value],
                    keywords=[])
    call.func.resolved = ("builtin", "vector_set")
    call.loc = call.func.loc = s.loc
    _set_components(call, target, vec, s.loc)
    place.ctx = ast.Store()
    new = ast.Assign(targets=[place], value=call, type_comment=None)
    new.loc = s.loc
    s.__class__ = ast.Assign
    s.__dict__.update(new.__dict__)
    return True


def rewrite_component_load(typer, node, k: int) -> bool:
    """``p[i].y`` (a vector in memory) read as ``view(p + i, np.float32)[1]``: C reads that
    one component, not the whole vector (whose other components may be unwritten)."""
    if not _vector_in_memory(typer, node.value):
        return False
    vec = typer.expr(node.value)
    load = _component_element(node.value, k, vec, ast.Load(), node.loc)
    node.__class__ = ast.Subscript
    node.__dict__.pop("attr", None)
    node.__dict__.pop("components", None)
    node.value, node.slice, node.ctx = load.value, load.slice, ast.Load()
    return True


def _component_element(place, k: int, vec, ctx, loc):
    """``view(p + i, np.T)[k]``: component ``k`` of the vector ``p[i]`` in memory."""
    dtype = ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr=vec.dtype,
                          ctx=ast.Load())
    dtype.resolved = ("dtype", vec.dtype)
    pointer = ast.BinOp(left=_loaded(place.value), op=ast.Add(), right=_loaded(place.slice))
    call = ast.Call(func=ast.Name(id="view", ctx=ast.Load()), args=[pointer, dtype],
                    keywords=[])
    call.func.resolved = ("builtin", "view")
    call.component_view = True  # the element type follows the vector's (memory.py)
    node = ast.Subscript(value=call, slice=ast.Constant(value=k), ctx=ctx)
    for sub in ast.walk(node):
        if not hasattr(sub, "loc"):
            sub.loc = loc
    return node


def _component_store(s, place, k: int, vec, value) -> bool:
    """``p[i].y = e`` as ``view(p + i, np.float32)[1] = e``: C writes that one component in
    memory (the others stay as they are, written or not)."""
    loc = s.loc

    def element(ctx):
        return _component_element(place, k, vec, ctx, loc)

    if value is None:  # p[i].y += e
        value = ast.BinOp(left=element(ast.Load()), op=s.op, right=s.value)
        value.loc = loc
    new = ast.Assign(targets=[element(ast.Store())], value=value, type_comment=None)
    new.loc = loc
    s.__class__ = ast.Assign
    s.__dict__.update(new.__dict__)
    return True


def _loaded(node):
    node = clone(node)
    for sub in ast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return node


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


def record_pointer(node: ast.Subscript, loc):
    """``b = x[ib]`` (C: ``block_q4_0 b = x[ib];``): the type of ``b``, a pointer to that
    record marked as a copy. ``node`` is marked so that code generation emits the record's
    offset (checked against the buffer) instead of loading it."""
    base = node.value.ctype
    if isinstance(base, ct.ArrayT) and isinstance(base.dtype, StructT) and \
            isinstance(node.value, ast.Name) and base.space == "global":
        t = ct.PtrT(node.value.id, base, None, record_copy=True)
    elif isinstance(base, ct.PtrT) and isinstance(base.dtype, StructT):
        t = ct.PtrT(base.base, base.array, base.view, record_copy=True)
    else:
        raise compile_error(loc, "a struct is copied into a variable from a buffer of "
                                 "structs or a pointer into one (b = x[ib]); read fields of "
                                 "other structs where they are used")
    node.record_ref = True
    node.ctype = t
    return t


def pointer_element(node) -> bool:
    """``ax[k]`` of a pointer array (pointer_array): a pointer, where a chain of fields and
    indices (``ax[k][i].qs[j]``) reaches the buffer it points into."""
    return isinstance(node, ast.Subscript) and \
        getattr(getattr(node.value, "ctype", None), "pointee", None) is not None


def buffer_of(node):
    """The buffer (parameter name) an address expression points into, or None: ``x``,
    ``x[i]...``, a pointer local, ``p + k``, ``view(p, T, off)``, ``ax[k]``."""
    while True:
        if pointer_element(node):
            return getattr(node.ctype, "base", None)
        if isinstance(node, ast.Subscript | ast.Attribute):
            node = node.value
        elif isinstance(node, ast.BinOp):
            left = getattr(node.left, "ctype", None)
            node = node.left if isinstance(left, ct.PtrT | ct.ArrayT) else node.right
        elif isinstance(node, ast.Call) and node.args and \
                getattr(node.func, "resolved", (None, None))[1] == "view":
            node = node.args[0]
        else:
            break
    if not isinstance(node, ast.Name):
        return None
    t = getattr(node, "ctype", None)
    if isinstance(t, ct.PtrT):
        return t.base
    return node.id if isinstance(t, ct.ArrayT) and t.space == "global" else None


def copy_root(target):
    """The record copy (``b`` of ``b = x[ib]``) or struct argument a field store goes into."""
    while isinstance(target, ast.Subscript | ast.Attribute):
        target = target.value
    t = getattr(target, "ctype", None)
    if (isinstance(t, ct.PtrT) and t.record_copy) or isinstance(t, StructT):
        return target
    return None


def rewrite_field_update(s: ast.AugAssign) -> None:
    """``x[i].d += v`` (a struct field or a view element) becomes ``x[i].d = x[i].d + v``;
    the index expressions have no side effects in kernels, so reading them twice is C's
    meaning."""
    read = clone(s.target)
    for node in walk(read):
        if hasattr(node, "ctx"):
            node.ctx = ast.Load()
    value = ast.BinOp(left=read, op=s.op, right=s.value)
    value.loc = s.loc
    new = ast.Assign(targets=[s.target], value=value, type_comment=None)
    new.loc = s.loc
    s.__class__ = ast.Assign
    s.__dict__.update(new.__dict__)


def is_place_in_bytes(target) -> bool:
    """A struct field (or array-field element) or an element of a typed view."""
    if is_field(target):
        return True
    base = getattr(getattr(target, "value", None), "ctype", None)
    return isinstance(target, ast.Subscript) and isinstance(base, ct.PtrT) and \
        base.view is not None


def refuse_copy_store(target, loc, params=()) -> str | None:
    """A store into a field of a struct variable: None when that variable has its own bytes
    (a private copy), the variable's name when it is a record copy read in place (which must
    then get its own bytes, struct_locals)."""
    root = copy_root(target)
    if root is None or (isinstance(root.ctype, StructT) and root.id not in params):
        return None
    if isinstance(root.ctype, StructT) or root.id in params:
        raise compile_error(loc, f"internal: the by-value struct '{root.id}' is assigned "
                                 "but was not copied on entry")
    return root.id


def check_struct_assignment(target_t, value_t, loc) -> None:
    """C's ``x[i] = b``: both sides the same struct type."""
    source = value_t.dtype if isinstance(value_t, ct.PtrT) and value_t.record_copy else value_t
    if target_t is None or source is None:
        return
    if not isinstance(target_t, StructT) or source != target_t:
        raise compile_error(loc, f"cannot assign a {ct.short(source)} to a "
                                 f"{ct.short(target_t)}: a struct is assigned from a struct "
                                 "of the same dtype (x[i] = b, x[i] = y[j])")


def _written(body, program=None):
    """(buffer, node) for every place the body may write a buffer: stores, store and atomic
    builtins, and buffers passed to helpers that write them (any helper, without
    ``program``)."""
    for root in body:
        for node in walk(root):
            targets = []
            if isinstance(node, ast.Assign):
                targets = [t for t in node.targets if not isinstance(t, ast.Name)]
            elif isinstance(node, ast.AugAssign) and not isinstance(node.target, ast.Name):
                targets = [node.target]
            elif isinstance(node, ast.Call):
                kind, value = getattr(node.func, "resolved", (None, None))
                entry = table.lookup(value) if kind == "builtin" else None
                if getattr(entry, "access", None) in ("store", "atomic"):
                    targets = [a for a in node.args if _address(a)]
                elif kind == "func":
                    writes = _helper_writes(program, value, node)
                    targets = [a for k, a in enumerate(node.args)
                               if _address(a) and (writes is None or k in writes)]
            for t in targets:
                if pointer_element(t) and not isinstance(node, ast.Call):
                    continue  # ax[k] = p: the private array of pointers is written
                buf = None if copy_root(t) is not None else buffer_of(t)  # b.d: b's bytes
                if buf is not None:
                    yield buf, node


def _address(node) -> bool:
    """A buffer, a pointer, or an element p[i] of one (what a call can write through)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    t = getattr(node, "ctype", None)
    return isinstance(t, ct.ArrayT) or (isinstance(t, ct.PtrT) and not t.record_copy)


def _helper_writes(program, kfn, call):
    """The argument positions helper ``kfn`` writes through at this call, or None."""
    if program is None:
        return None
    spec = program.funcs.get(program.spec_key(kfn, tuple(a.ctype for a in call.args)))
    return None if spec is None else spec.writes


def written_params(body, params, program) -> frozenset:
    """Positions of the parameters a helper body writes through (buffers and pointers)."""
    bufs = {buf for buf, _ in _written(body, program)}
    return frozenset(k for k, p in enumerate(params) if p in bufs or f"{p}__buf" in bufs)


def check_record_copies(body, copies: dict, program=None) -> set[str]:
    """The record copies ``b = x[ib]`` that cannot be read in place because the body also
    writes ``x`` (they get their own bytes); a record passed to a helper (``f(x[ib])``)
    while the kernel writes ``x`` is refused."""
    needed = set()
    for buf, node in _written(body, program):
        for name, loc, is_variable in copies.get(buf, ()):
            if is_variable:
                needed.add(name)
                continue
            if buf.endswith(VEC_SUFFIX) and node.loc.line != loc.line:
                # a private array of structs (f(s[0])): no other work-item sees it, so only
                # a pointer given to the same call can write it while the helper reads
                continue
            raise compile_error(loc, (
                f"'{name}' passes a record of '{array_name(buf)}' to a helper, which reads it "
                f"in place; that is C's copy only while the kernel does not write "
                f"'{array_name(buf)}', and line "
                f"{node.loc.line} may write it. Copy the record into a variable first "
                f"(b = {name}) and pass b"))
    return needed


# view(x, float4)'s element type lives with the vector types (no import of the builtin
# table there, so the table's memory family can import it)
vector_view = vx.vector_view


def _set_components(call, target, vec, loc) -> None:
    """Which components of ``vec`` the ``vector_set`` ``call`` writes: ``.xy`` and ``[k]``
    fixed at compile time, ``[i]`` at run time (then ``i`` is the call's last argument)."""
    if isinstance(target, ast.Attribute):
        call.vector_components = vx.assigned_components(target.attr, vec.width, loc)
    elif isinstance(target.slice, ast.Constant):
        if not 0 <= target.slice.value < vec.width:
            raise compile_error(loc, f"v[{target.slice.value}] is beyond a {vec}")
        call.vector_components = [target.slice.value]
    else:
        call.vector_index = target.slice
        call.args.append(target.slice)
