"""Which loops LLVM vectorised in a kernel's generated functions, and why the others were not.

LLVM reports this as optimisation remarks (``-pass-remarks*=loop-vectorize``) while it
optimises; llvmlite exposes LLVM's command-line options (``llvmlite.binding.set_option``) but
no remark handler, so LLVM's default handler prints them on the process's C-level stderr, and
without debug information they carry no location. So the command to explain runs in a child
process with the remark options set, ``NUMBA_DEBUGINFO=1`` (remarks then name the file and
line of the generated module) and empty kernel and Numba caches (a cached function is not
compiled, so would give no remarks); the child's stderr is parsed here and summarised per
generated function. The child compiles everything afresh: slower than a normal run.

Run ``python -m clsim.explain_speed SCRIPT.py [ARGS]`` for any script that calls clsim.run, or
``clsim run NAME --explain-speed`` (docs/engine.md).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PASSES = "loop-vectorize|slp-vectorizer"
# Set before anything compiles; runpy then runs the command as if it were the main program.
# Every launch compiles its launcher: the remarks then describe the code a large launch runs
# (the group function inlined in it), not a small launch's group function compiled alone
# (clsim.runtime.launcher_tier), whose loops LLVM may judge differently there.
_BOOT = (
    "import sys, runpy, llvmlite.binding as b\n"
    "from clsim.runtime import launcher_tier\n"
    "launcher_tier.PYTHON_LOOP_GROUPS = 0\n"
    "for o in ('-pass-remarks', '-pass-remarks-missed', '-pass-remarks-analysis'):\n"
    f"    b.set_option('clsim-explain-speed', o + '={PASSES}')\n"
    "sys.argv = sys.argv[1:]\n"
    "if sys.argv[0] == '-m':\n"
    "    sys.argv = sys.argv[1:]\n"
    "    runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
_REMARK = re.compile(r"^remark: (?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<msg>.*)$")
_VECTORISED = re.compile(r"vectorized loop \(vectorization width: (?P<width>\d+), "
                         r"interleaved count: (?P<interleave>\d+)\)")
_NOT = "loop not vectorized"
GENERATED_PREFIX = "clsim_gen_"
HELPERS_FILE = "helper_lib.py"


@dataclass
class Loop:
    """What LLVM said about the loop(s) at one line of one file."""

    file: str
    line: int
    widths: set[tuple[int, int]] = field(default_factory=set)  # (width, interleave)
    missed: bool = False
    reasons: list[str] = field(default_factory=list)
    slp: list[str] = field(default_factory=list)

    @property
    def vectorised(self) -> bool:
        return bool(self.widths)


def parse_remarks(text: str) -> tuple[list[Loop], list[str]]:
    """(loops by location, in order of first mention; the lines that were not remarks)."""
    loops: dict[tuple[str, int], Loop] = {}
    others: list[str] = []
    for raw in text.splitlines():
        match = _REMARK.match(raw)
        if match is None:
            others.append(raw)
            continue
        key = (match["file"], int(match["line"]))
        loop = loops.setdefault(key, Loop(*key))
        msg = match["msg"].strip()
        vec = _VECTORISED.search(msg)
        if vec:
            loop.widths.add((int(vec["width"]), int(vec["interleave"])))
        elif msg.startswith(_NOT):
            loop.missed = True
            reason = msg[len(_NOT):].lstrip(": ").strip()
            if reason and reason not in loop.reasons:
                loop.reasons.append(reason)
        elif "SLP" in msg:
            if msg not in loop.slp:
                loop.slp.append(msg)
        elif msg not in loop.reasons:  # analysis: why not, or why this width/interleave
            loop.reasons.append(msg)
    return list(loops.values()), others


def _functions(path: str) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function defined in a Python file."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return []
    return [(node.lineno, node.end_lineno or node.lineno, node.name) for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)]


def _enclosing(functions: list[tuple[int, int, str]], line: int) -> str:
    inside = [f for f in functions if f[0] <= line <= f[1]]
    return min(inside, key=lambda f: f[1] - f[0])[2] if inside else "<module>"


def _source_line(path: str, line: int) -> str:
    if line < 1:  # LLVM's line 0: code the debug information ties to no line
        return ""
    try:
        return Path(path).read_text().splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return ""


def _describe(loop: Loop) -> str:
    if loop.vectorised:
        text = "vectorised, " + ", ".join(f"width {w} interleave {i}"
                                          for w, i in sorted(loop.widths))
        notes = [r for r in loop.reasons if r]
        return text + (f" ({'; '.join(notes)})" if notes else "")
    if loop.missed:
        return "NOT vectorised: " + ("; ".join(loop.reasons) or "LLVM gave no reason")
    if loop.slp:
        return "straight-line code vectorised (SLP): " + "; ".join(loop.slp)
    return "; ".join(loop.reasons)


def _locate(name: str, search: list[Path]) -> str:
    """Remarks name a file as its debug information does, often without its folder."""
    if Path(name).is_file():
        return name
    for folder in search:
        found = next(folder.rglob(Path(name).name), None)
        if found is not None:
            return str(found)
    return name


def summarise(loops: list[Loop], search: list[Path] = ()) -> list[str]:
    """One block per generated function (kernel modules first, then runtime helpers), one line
    per loop location; loops in other files (numba's own, numpy's) are only counted. Files are
    looked for in ``search`` when the remark gives no folder."""
    for loop in loops:
        loop.file = _locate(loop.file, list(search))
    by_function: dict[tuple[str, str], list[Loop]] = defaultdict(list)
    elsewhere = 0
    for loop in loops:
        name = Path(loop.file).name
        if not (name.startswith(GENERATED_PREFIX) or name == HELPERS_FILE):
            elsewhere += 1
            continue
        by_function[(loop.file, _enclosing(_functions(loop.file), loop.line))].append(loop)
    out = []
    order = sorted(by_function, key=lambda k: (Path(k[0]).name == HELPERS_FILE, k))
    for path, function in order:
        found = by_function[(path, function)]
        vec = sum(1 for loop in found if loop.vectorised)
        missed = sum(1 for loop in found if loop.missed and not loop.vectorised)
        out.append(f"{Path(path).name}::{function}: {vec} loop(s) vectorised, {missed} not")
        for loop in sorted(found, key=lambda lp: lp.line):
            out.append(f"  line {loop.line}: {_describe(loop)}")
            source = _source_line(path, loop.line)
            if source:
                out.append(f"      {source[:100]}")
    if not out:
        out.append("no loop remarks from the generated functions (was anything compiled?)")
    if elsewhere:
        out.append(f"({elsewhere} loop location(s) in Numba's or numpy's own code not shown)")
    return out


def run_explained(command: list[str], *, stdout=None) -> tuple[int, list[str], list[str]]:
    """Run ``python COMMAND...`` in a child that prints LLVM's vectorisation remarks; returns
    (its exit code, the summary lines, its stderr lines that were not remarks). The generated
    modules live in a temporary cache, read before it is removed."""
    with tempfile.TemporaryDirectory(prefix="clsim-explain-") as cache:
        env = {**os.environ, "NUMBA_DEBUGINFO": "1", "NUMBA_CACHE_DIR": str(Path(cache, "nb")),
               "CLSIM_CACHE_DIR": str(Path(cache, "kernels"))}
        child = subprocess.run([sys.executable, "-c", _BOOT, *command], env=env,
                               stdout=stdout, stderr=subprocess.PIPE, text=True)
        loops, others = parse_remarks(child.stderr)
        helpers = Path(__file__).resolve().parent / "runtime"
        return child.returncode, summarise(loops, [Path(cache), helpers]), others


def print_explained(command: list[str]) -> int:
    code, summary, others = run_explained(command)
    if others:
        print("\n".join(others), file=sys.stderr)
    print("vectorisation (LLVM loop-vectorize remarks, per generated function):")
    print("\n".join("  " + line for line in summary))
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m clsim.explain_speed SCRIPT.py [ARGS] | -m MODULE [ARGS]\n"
              + (__doc__ or "").split("\n\n")[1])
        return 0 if argv else 2
    return print_explained(argv)


if __name__ == "__main__":
    raise SystemExit(main())
