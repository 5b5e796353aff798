"""OpenCL C's vector typing rules: component names, swizzles, operators on vectors.

A vector is a ``ctypes.VecT`` (element dtype, width 2/3/4/8/16); its value in generated code
is a tuple (docs/performance.md has the measurement behind that choice). Here: which
components ``.xy``/``.s01``/``.lo`` name, and the result types of operators between vectors
and scalars (OpenCL C 6.3: component-wise, no integer promotion, comparisons give -1/0 in the
signed integer type of the element's size). Code generation is ``vector_emit``.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.diagnostics import compile_error

_XYZW = "xyzw"
_HEX = "0123456789abcdef"


def components(attr: str, width: int, loc) -> list[int]:
    """The component indices ``.attr`` names on a ``width``-vector (OpenCL C 6.1.7)."""
    n = 4 if width == 3 else width  # .hi/.odd of a 3-vector see a 4th, undefined, component
    named = {"lo": list(range(n // 2)), "hi": list(range(n // 2, n)),
             "even": list(range(0, n, 2)), "odd": list(range(1, n, 2))}
    if attr in named:
        idx = named[attr]
    elif attr[:1] in ("s", "S") and len(attr) > 1 and all(c in _HEX for c in attr[1:].lower()):
        idx = [_HEX.index(c) for c in attr[1:].lower()]
    elif attr and all(c in _XYZW for c in attr):
        idx = [_XYZW.index(c) for c in attr]
    else:
        raise compile_error(loc, f"'.{attr}' is not a vector component: use .x .y .z .w, "
                                 ".s0-.sF (e.g. .s01), .lo .hi .even .odd")
    bad = [k for k in idx if k >= width and not (width == 3 and attr in named)]
    if bad:
        raise compile_error(loc, f"'.{attr}' names component {bad[0]}, beyond a "
                                 f"{width}-vector")
    if len(idx) > 1 and len(idx) not in ct.VECTOR_WIDTHS:
        raise compile_error(loc, f"'.{attr}' selects {len(idx)} components; a vector has "
                                 "2, 3, 4, 8 or 16")
    return idx


def assigned_components(attr: str, width: int, loc) -> list[int]:
    """The components ``v.attr = ...`` writes; each at most once (OpenCL C 6.3.7: an l-value
    swizzle with a repeated component is an error, since which write wins is undefined)."""
    idx = components(attr, width, loc)
    repeated = sorted({k for k in idx if idx.count(k) > 1})
    if repeated:
        raise compile_error(loc, f"'.{attr}' names component {repeated[0]} more than once, so "
                                 "it cannot be assigned (OpenCL C refuses a repeated component "
                                 "in an l-value). Assign each component once, e.g. "
                                 f"v.s{_HEX[repeated[0]]} = ...")
    return idx


def swizzle_type(base: ct.VecT, idx: list[int]):
    return base.dtype if len(idx) == 1 else ct.VecT(base.dtype, len(idx))


def operand_vector(a, b, op: str, loc) -> ct.VecT:
    """The vector type of ``a op b`` where one side is a vector (the other widens to it)."""
    if isinstance(a, ct.VecT) and isinstance(b, ct.VecT):
        if a != b:
            raise compile_error(loc, f"'{op}' between {a} and {b}: both sides of a vector "
                                     f"operator must have the same type; convert one with "
                                     f"convert_{a}(...)")
        return a
    vec, other = (a, b) if isinstance(a, ct.VecT) else (b, a)
    if not ct.is_scalar(other):
        raise compile_error(loc, f"'{op}' between {ct.short(a)} and {ct.short(b)} is not "
                                 "supported")
    if not ct.scalar_fits_vector(other, vec):
        raise compile_error(loc, f"'{op}' between {vec} and {ct.short(other)}: a float "
                                 f"scalar cannot widen to an integer vector; convert it, e.g. "
                                 f"convert_{ct.cname(vec.dtype)}(x)")
    return vec


_INT_ONLY = ("<<", ">>", "&", "|", "^", "%", "//")


def binop_type(op: str, a, b, loc) -> ct.VecT:
    if op in ("<<", ">>") and isinstance(a, ct.VecT) and isinstance(b, ct.VecT) and \
            a.width == b.width and ct.is_int(a.dtype) and ct.is_int(b.dtype):
        # OpenCL C 6.3.j: a shift takes the left operand's type, and its amount is taken
        # modulo the left element's bits (clang splats a promoted scalar: uchar4 << int4)
        return a
    vec = operand_vector(a, b, op, loc)
    if op == "**":
        raise compile_error(loc, "'**' is not supported: write pow(x, y) or x * x")
    if op == "/" and ct.is_int(vec.dtype):
        raise compile_error(loc, f"'/' on {vec}: write '//' for C integer division")
    if op in _INT_ONLY and not ct.is_int(vec.dtype):
        raise compile_error(loc, f"'{op}' needs integer vectors, got {vec}")
    return vec


def compare_type(a, b, loc) -> ct.VecT:
    vec = operand_vector(a, b, "comparison", loc)
    return ct.VecT(ct.mask_int(vec.dtype), vec.width)


def unary_type(op: str, t: ct.VecT, loc) -> ct.VecT:
    if op == "not":
        raise compile_error(loc, f"'not' on {t}: compare explicitly, e.g. v == 0, and use "
                                 "any()/all() for a truth value")
    if op == "~" and not ct.is_int(t.dtype):
        raise compile_error(loc, f"'~' needs an integer vector, got {t}")
    return t


def truth_error(t, loc):
    return compile_error(loc, f"a {t} is not a truth value: use any(v) or all(v)")


def vector_view(name: str, loc) -> ct.VecT:
    """The element type of ``view(x, float4)``: a vector type other than the 3-wide ones
    (whose size in memory, 4 elements, differs from their 3 components)."""
    vec = next((ct.VecT(t, w) for t in ct.VECTOR_ELEMENTS for w in ct.VECTOR_WIDTHS
                if str(ct.VecT(t, w)) == name), None)
    if vec is None:
        raise compile_error(loc, f"view(x, {name}): the second argument must be a numpy dtype, "
                                 "a vector type such as float4, or a structured dtype")
    if vec.width == 3:
        size = 4 * ct.bits(vec.dtype) // 8
        raise compile_error(loc, f"view(x, {name}): a {name} occupies {size} bytes in memory "
                                 "but has 3 components; read 3-element groups with "
                                 "vload3(i, x) / vstore3(v, i, x)")
    return vec
