"""The checks' shared helpers are one module compiled once per machine, and kernels only call it.

Contract: ``clsim/checks/native_lib.py`` is exactly what ``python -m clsim.checks.native``
generates from the templates (a stale file would run old rules); the fast paths are inlined
into a checked kernel by LLVM (a call left at an access site costs a few ns per access) while
the full recorders are reached through the C entry point only (never linked into a kernel,
which made each checked compile seconds longer); the address-based helpers read and write
what the arrays hold, in both modes.
"""

from __future__ import annotations

import ast
import re

import numpy as np

import clsim
from clsim import barrier, get_global_id, get_local_id, kernel, local_array
from clsim.checks import layout as ly
from clsim.checks import native, pointers
from clsim.checks.shadow import FAST_PATHS, SHARED


def test_native_lib_is_generated_from_the_templates():
    """The committed modules are the generator's current output (else run
    ``python -m clsim.checks.native``)."""
    assert native._PATH.read_text() == native.module_source(True)
    assert native._ENTRY_PATH.read_text() == native.entry_source()
    assert native.main(["--check"]) == 0


def test_peek_and_poke_address_int64_elements():
    from numba import njit

    @njit
    def swap(base):
        a = pointers.peek(base, 1)
        pointers.poke(base, 1, pointers.peek(base, 2))
        pointers.poke(base, 2, a)
        return a

    values = np.array([5, -7, 1 << 40], np.int64)
    assert swap(np.int64(values.ctypes.data)) == -7
    assert values.tolist() == [5, 1 << 40, -7]


def test_plain_python_fast_paths_subscript_the_state():
    """Plain Python's twin of the fast paths reads and writes the state arrays by subscript
    (memoryviews the work-group function takes once, issue 23), not by address: the same
    statements otherwise, so the same records and deferrals as the JIT."""
    plain, jit = native.module_source(False), native.module_source(True)
    assert "_peek" not in plain and "_poke" not in plain
    scope: dict = {}
    exec(compile(plain, "<plain checks helpers>", "exec"), scope)  # our own generated text
    meta, log, shadow = (np.zeros(n, np.int64) for n in (64, 8, 16))
    meta[ly.M_DEFER] = 0
    # a store to element 3 of object 1 (global): recorded as W at bw + 3, range noted
    args = dict(i=3, eb=0, site=5, lid=2, obj=1, mode=1, bw=4, br1=0, br2=0, brx=0, gs=1,
                last=1, now=7)
    assert scope["_cs_stqg"](*args.values(), memoryview(shadow), memoryview(meta),
                             memoryview(log)) == 3
    assert shadow[7] == (7 << 29) | (5 << 15) | 2
    assert meta[ly.M_RANGES + 2] == ly.RANGE_TOP - 7 and meta[ly.M_RANGES + 3] == 8
    # an access the fast path cannot decide (mode A) is deferred to the log, as in the JIT
    assert scope["_cs_ldql"](*{**args, "mode": 4}.values(), memoryview(shadow),
                             memoryview(meta), memoryview(log)) == 3
    assert meta[ly.M_DEFER] == 1 and meta[ly.M_NLOG] == 1 and log[0] == 3
    assert "_peek(s, bw + e)" in jit  # the JIT keeps its addresses


@kernel
def shifted_copy(x, y):
    lid = get_local_id(0)
    i = get_global_id(0)
    tile = local_array(64, np.float32)
    tile[lid] = x[i]
    barrier(clsim.CLK_LOCAL_MEM_FENCE)
    y[i] = tile[(lid + 1) % 64] + tile[lid]


def test_fast_paths_are_inlined_and_full_recorders_not_linked(tmp_path, monkeypatch):
    """A freshly compiled checked kernel calls no fast path and links no full recorder."""
    monkeypatch.setenv("CLSIM_CACHE_DIR", str(tmp_path))
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    result = clsim.run(shifted_copy, (128,), (64,), (x, y), checks="all", report_all=True)
    assert result.findings == []
    module = next(m for name, m in __import__("sys").modules.items()
                  if name.startswith("clsim_gen_shifted_copy") and hasattr(m, "_cs_call"))
    llvm = "\n".join(module._group.inspect_llvm(sig) for sig in module._group.signatures)
    called = set(re.findall(r'call [^@\n]*@"?([^"(\s]+)', llvm))
    assert not [c for c in called if any(f"{name}_body" in c for name in FAST_PATHS)]
    for recorder in ("_cs_ld", "_cs_st", "_cs_end", "_cs_flush"):
        assert not [c for c in called if re.search(rf"{recorder}B", c)], recorder
    assert any("_cs_call" in c for c in called)  # the end of each work-item loop


def test_the_deferral_function_address_is_set_per_launch():
    """The fast paths defer through meta slot M_DEFER_FN: the JIT's C function, 0 without."""
    assert native.defer_address(True) == native.load_entry()._cs_defer_c.address != 0
    assert native.defer_address(False) == 0
    assert ly.M_DEFER_FN < ly.M_RANGES



def test_shared_helpers_call_each_other_with_one_signature():
    """The shared helpers compile once per machine before a first checked run (issue 21); a
    literal argument in a call among them makes Numba compile the callee for a second
    signature (seconds). So every argument of such a call is a variable or an int64."""
    tree = ast.parse(native.module_source(True))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id in SHARED]
    assert {c.func.id for c in calls} >= {"_cs_rec", "_cs_note", "_cs_unordered", "_cs_flush"}
    literal = [f"{c.func.id} argument {n}: {ast.unparse(a)}" for c in calls
               for n, a in enumerate(c.args) if isinstance(a, ast.Constant)]
    assert not literal, literal


def test_loads_stores_and_atomics_share_one_full_recorder():
    """One recorder for the three access kinds (their opcodes are the kinds), so one compile;
    each opcode the kernels emit still reaches it, with the kind it names."""
    source = native.entry_source()
    assert [name for name in SHARED if name.startswith("_cs_rec")] == ["_cs_rec", "_cs_recp"]
    assert (native.OPS["_cs_ld"], native.OPS["_cs_st"], native.OPS["_cs_at"]) == (
        ly.K_LOAD, ly.K_STORE, ly.K_ATOMIC)
    assert "return _cs_rec(op, " in source and "return _cs_recp(op - 3, " in source
