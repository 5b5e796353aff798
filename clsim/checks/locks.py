"""Locks built from atomics, for the race checks: which atomics take and release a lock.

Lockset style (docs/checks.md, "Atomics and locks"): a work-item holds the lock at address L
from an acquiring atomic that succeeds until a releasing atomic on L; plain accesses made
while holding L carry L, and two conflicting accesses carrying the same L are not a race.

- acquiring: ``atomic_cmpxchg`` and ``atomic_compare_exchange_strong``/``_weak`` that
  succeed, ``atomic_flag_test_and_set`` that returns false;
- releasing: ``atomic_xchg``/``atomic_exchange``, ``atomic_store``, ``atomic_flag_clear``.

An ``_explicit`` form acquires with acquire/acq_rel/seq_cst and releases with
release/acq_rel/seq_cst; with ``memory_order_relaxed`` it still takes or releases the lock,
marked relaxed, so that a race it would otherwise hide is reported with that reason. An order
not known at compile time takes or releases nothing. Only kernels with an acquiring atomic
(``has_acquire``) get lock tracking at all. This module decides what each atomic does and the
code that tells the run-time (``shadow._cs_lock``); the tracking is in ``shadow``.
"""

from __future__ import annotations

import ast

from clsim.checks import layout as ly
from clsim.checks.native import OPS
from clsim.compiler.builtins.atomics_c11 import C11, MEMORY_ORDERS, _constant_value
from clsim.compiler.frontend import parse

ACQUIRING = {"atomic_cmpxchg", "atomic_compare_exchange_strong", "atomic_compare_exchange_weak",
             "atomic_compare_exchange_strong_explicit", "atomic_compare_exchange_weak_explicit",
             "atomic_flag_test_and_set", "atomic_flag_test_and_set_explicit"}
RELEASING = {"atomic_xchg", "atomic_exchange", "atomic_exchange_explicit", "atomic_store",
             "atomic_store_explicit", "atomic_flag_clear", "atomic_flag_clear_explicit"}
_RELAXED = MEMORY_ORDERS["memory_order_relaxed"]
_ACQUIRES = {MEMORY_ORDERS[f"memory_order_{o}"] for o in ("acquire", "acq_rel", "seq_cst")}
_RELEASES = {MEMORY_ORDERS[f"memory_order_{o}"] for o in ("release", "acq_rel", "seq_cst")}


def _builtin(node) -> str | None:
    resolved = getattr(getattr(node, "func", None), "resolved", None)
    return resolved[1] if resolved and resolved[0] == "builtin" else None


def has_acquire(parsed, _seen: set[int] | None = None) -> bool:
    """Whether the kernel (or a helper it calls) has an atomic that can take a lock."""
    seen = set() if _seen is None else _seen
    if id(parsed) in seen:
        return False
    seen.add(id(parsed))
    for node in ast.walk(parsed.tree):
        if not isinstance(node, ast.Call):
            continue
        if _builtin(node) in ACQUIRING:
            return True
        resolved = getattr(node.func, "resolved", None)
        if resolved and resolved[0] == "func" and has_acquire(parse(resolved[1]), seen):
            return True
    return False


def _order(name: str, node: ast.Call) -> int | None:
    """The (success) memory order of an atomic call: seq_cst for the forms without one,
    the constant an ``_explicit`` form names, None when it is not a constant."""
    if name not in C11 or not name.endswith("_explicit"):
        return MEMORY_ORDERS["memory_order_seq_cst"]
    op = C11[name][0]
    first = node.args[0]
    rest = node.args[1:] if isinstance(first, ast.Subscript) else node.args[2:]
    nvals = {"cmpxchg": 2, "tas": 0, "clear": 0}.get(op, 1)
    return _constant_value(rest[nvals]) if len(rest) > nvals else None


def action(node, dtype: str) -> tuple[int, str] | None:
    """(``layout.LK_*`` action on success, what success is) of a lock atomic, or None.

    "cmp": the element equals the first value operand before the atomic; "zero": it is 0
    before (a test-and-set that returns false); "always": a release."""
    name = _builtin(node)
    if name is None or name not in ACQUIRING | RELEASING or dtype.startswith("float"):
        return None
    order = _order(name, node)
    if order is None:
        return None
    if name in ACQUIRING:
        if order not in _ACQUIRES | {_RELAXED}:
            return None
        act = ly.LK_ACQUIRE if order in _ACQUIRES else ly.LK_ACQUIRE_RELAXED
        return act, "zero" if "test_and_set" in name else "cmp"
    if order not in _RELEASES | {_RELAXED}:
        return None
    return (ly.LK_RELEASE if order in _RELEASES else ly.LK_RELEASE_RELAXED), "always"


def wrap(event, index: str, act: int, success: str, itemsize: int, state: str) -> str:
    """``index`` (the atomic's recorded index code) wrapped in the ``_cs_lock`` call that
    takes or releases the lock at the element the atomic names. It runs before the atomic
    reads the element, so success is decided from the element's value then and the
    atomic's own operands (``event.values``)."""
    element = f"{event.array}[{', '.join((*event.lead, *event.index))}]"
    if success == "cmp":
        ok = f"np.int64({element} == {event.values[0]})"
    elif success == "zero":
        ok = f"np.int64({element} == 0)"
    else:
        ok = "np.int64(1)"
    flat = _flat(event)
    local = ly.LOCK_LOCAL if event.space == "local" else 0
    lock = (f"(np.int64({event.array}.ctypes.data) + np.int64({flat}) * {itemsize}) * 4 "
            f"+ {local}")
    return (f"_cs_call(_cs_fn, np.int64({OPS['_cs_lock']}), np.int64({index}), "
            f"np.int64({act}) * {ok}, np.int64({lock}), np.int64(0), np.int64({event.site.id}), "
            f"np.int64({event.lid}), {state})")


def _flat(event) -> str:
    """The element offset of the atomic's index codes in its array (row-major)."""
    codes = event.index
    if len(codes) == 1:
        return codes[0]
    lead = len(event.lead)
    dims = [str(event.shape[d]) if event.shape else f"{event.array}.shape[{lead + d}]"
            for d in range(len(codes))]
    flat = codes[0]
    for d in range(1, len(codes)):
        flat = f"(({flat}) * {dims[d]} + {codes[d]})"
    return flat
