"""Masked control flow around sub-group cuts: ifs and loops whose direction may differ between
sub-groups (but not within one).

A masked ``if`` evaluates its condition per work-item into an int8 array (1 taken, 0 not taken,
-1 not active here), checks that every sub-group agrees (``_cg_mask_check``; a sub-group that
disagrees is a ``BarrierDivergenceError`` naming it), then runs the body's regions for the
work-items whose flag is 1 (the ``else`` for 0). A masked loop keeps one such array for the
lanes still iterating (2 marks a lane that did ``continue`` this iteration); it re-evaluates the
condition for them each time round and stops when none is left; ``break`` sets a lane's flag to
-1. A ``for`` loop keeps its counter per work-item. Regions inside test the innermost flag
array, so a work-item runs exactly the statements it would run on a device. Work-group cuts never
appear inside (``regions`` keeps such statements unmasked, where disagreement is an error).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from clsim.runtime import record as rec


@dataclass(frozen=True)
class Mask:
    array: str
    value: int  # the flag of an active work-item
    loop: bool = False


class MaskedFlow:
    """Mixin of ``codegen.FunctionEmitter``: masked ifs, loops and jumps."""

    masks: list
    cut_loops: list

    # -- bookkeeping ------------------------------------------------------------------------
    def alloc(self, line: str) -> None:
        """A per-group allocation, emitted at the top of the group function."""
        self.allocs.append(line)

    def new_mask(self) -> str:
        name = f"_m{next(self.counter)}"
        self.alloc(f"{name} = {self.module.empty(self.module.nl_max, 'int8')}")
        return name

    def need_perm(self) -> None:
        line = f"_perm = {self.module.empty(self.module.nl_max, 'int64')}"
        if line not in self.allocs:
            self.alloc(line)

    def active_expr(self, j: str) -> str | None:
        """Condition that work-item ``j`` runs the current statement (None: always)."""
        parts = []
        if self.masks:
            m = self.masks[-1]
            parts.append(f"{m.array}[{j}] == {m.value}")
        if self.module.has_exit:
            parts.append(f"not _exited[{j}]")
        return " and ".join(parts) if parts else None

    def _skip_inactive(self, flag: str | None = None) -> None:
        """In a work-item loop: skip (and optionally flag -1) work-items not active here."""
        cond = self.active_expr("_lid")
        if cond is None:
            return
        reset = f"\n    {flag}[_lid] = -1" if flag else ""
        self.emit(f"if not ({cond}):{reset}\n    continue")

    def _eval_loop(self, flag: str, value_code) -> None:
        """One work-item loop setting ``flag[_lid]`` to 1/0 from ``value_code()`` (user code)."""
        self.emit("for _lid in range(_NL):")
        self.level += 1
        self.emit(f"{flag}[_lid] = -1")
        self._skip_inactive()
        self.emit(self.module.id_decode)
        self.module.on_region_start(self)
        k = next(self.counter)
        self.statement(lambda: f"_cv{k} = {value_code()}")
        self.emit(f"{flag}[_lid] = 1 if _cv{k} else 0")
        self.level -= 1
        self.module.on_region_end(self)

    def _check(self, flag: str, node, what: str) -> str:
        site = self.module.site(node, "", what, "none", "none")
        k = next(self.counter)
        size = self.module.subgroup_size
        if not self.module.bounds:  # checks="none": which branches run, unchecked
            self.emit(f"_ns{k} = {self.helper('_cg_mask_seen')}({flag}, _NL)")
            return f"_ns{k}"
        self.emit(f"_ns{k} = {self.helper('_cg_mask_check')}({flag}, _NL, {size}, _err, {site})")
        self.emit(f"if _err[{rec.CODE}] != 0:\n    {self.err_return}")
        return f"_ns{k}"

    # -- if ---------------------------------------------------------------------------------
    def masked_if(self, item) -> None:
        flag = self.new_mask()
        self._eval_loop(flag, lambda: self.typed(item.node.test, "bool"))
        seen = self._check(flag, item.node.test, "if")
        for branch, value, bit in ((item.body, 1, 1), (item.orelse, 0, 2)):
            if not branch:
                continue
            self.emit(f"if {seen} & {bit}:")
            with self.indented():
                self.masks.append(Mask(flag, value))
                try:
                    self.items(branch)
                finally:
                    self.masks.pop()

    # -- loops ------------------------------------------------------------------------------
    def masked_loop(self, item) -> None:
        node = item.node
        flag = self.new_mask()
        is_for = isinstance(node, ast.For)
        if is_for:
            fa, fb, fc = (self._counter_array() for _ in range(3))
            self._for_init(node, flag, fa, fb, fc)
        else:
            self.emit(f"for _lid in range(_NL):\n    {flag}[_lid] = -1")
            self.level += 1
            self._skip_inactive()
            self.emit(f"{flag}[_lid] = 1")
            self.level -= 1
        self.emit("while True:")
        with self.indented():
            if is_for:
                self._for_test(node, flag, fa, fb, fc)
            else:
                self._while_test(node, flag)
            seen = self._check(flag, node, "while" if not is_for else "for")
            self.emit(f"if not ({seen} & 1):\n    break")
            self.masks.append(Mask(flag, 1, loop=True))
            self.cut_loops.append((item, len(self.masks) - 1))
            try:
                self.items(item.body)
            finally:
                self.cut_loops.pop()
                self.masks.pop()
            if is_for:
                self.emit(f"for _lid in range(_NL):\n    if {flag}[_lid] == 1 or "
                          f"{flag}[_lid] == 2:\n        {fa}[_lid] += {fc}[_lid]")

    def _counter_array(self) -> str:
        name = f"_fr{next(self.counter)}"
        self.alloc(f"{name} = {self.module.empty(self.module.nl_max, 'int64')}")
        return name

    def _for_init(self, node: ast.For, flag, fa, fb, fc) -> None:
        args = node.iter.args
        self.emit("for _lid in range(_NL):")
        self.level += 1
        self.emit(f"{flag}[_lid] = -1")
        self._skip_inactive()
        self.emit(self.module.id_decode)
        self.module.on_region_start(self)

        def build():
            codes = [self.typed(a, "int64") for a in args]
            start, stop, step = (["0", codes[0], "1"] if len(codes) == 1 else
                                 [codes[0], codes[1], "1"] if len(codes) == 2 else codes)
            self.pre(f"{fa}[_lid] = {start}")
            self.pre(f"{fb}[_lid] = {stop}")
            return f"{fc}[_lid] = {step}"

        self.statement(build)
        self.emit(f"{flag}[_lid] = 1")
        self.level -= 1
        self.module.on_region_end(self)

    def _for_test(self, node: ast.For, flag, fa, fb, fc) -> None:
        t = self.env[node.target.id]
        self.emit("for _lid in range(_NL):")
        with self.indented():
            self.emit(f"_v = {flag}[_lid]\nif _v != 1 and _v != 2:\n    {flag}[_lid] = -1\n"
                      "    continue")
            if self.module.has_exit:
                self.emit(f"if _exited[_lid]:\n    {flag}[_lid] = -1\n    continue")
            self.emit(f"_i = {fa}[_lid]\n_c = {fc}[_lid]")
            self.emit(f"if (_c > 0 and _i < {fb}[_lid]) or (_c < 0 and _i > {fb}[_lid]):")
            saved, self.in_wi = self.in_wi, True
            self.emit(f"    {flag}[_lid] = 1\n    {self.write_var(node.target.id)} = np.{t}(_i)")
            # at its end C leaves the first value that failed the test (loopvars.py)
            self.emit(f"else:\n    {flag}[_lid] = 0\n    "
                      f"{self.write_var(node.target.id)} = np.{t}(_i)")
            self.in_wi = saved

    def _while_test(self, node: ast.While, flag) -> None:
        self.emit("for _lid in range(_NL):")
        self.level += 1
        self.emit(f"_v = {flag}[_lid]\nif _v != 1 and _v != 2:\n    {flag}[_lid] = -1\n"
                  "    continue")
        if self.module.has_exit:
            self.emit(f"if _exited[_lid]:\n    {flag}[_lid] = -1\n    continue")
        self.emit(self.module.id_decode)
        self.module.on_region_start(self)
        k = next(self.counter)
        self.statement(lambda: f"_cv{k} = {self.typed(node.test, 'bool')}")
        self.emit(f"{flag}[_lid] = 1 if _cv{k} else 0")
        self.level -= 1
        self.module.on_region_end(self)

    # -- jumps ------------------------------------------------------------------------------
    def masked_jump(self, node, depth: int) -> None:
        """break/continue for the active work-items of the masked loop at mask ``depth``."""
        loop = self.masks[depth]
        self.emit("for _lid in range(_NL):")
        with self.indented():
            self._skip_inactive()
            for m in self.masks[depth + 1:]:
                self.emit(f"{m.array}[_lid] = -1")
            self.emit(f"{loop.array}[_lid] = {-1 if isinstance(node, ast.Break) else 2}")
