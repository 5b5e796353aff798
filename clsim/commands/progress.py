"""What a long ``clsim run`` shows on stderr while it works: a line naming the kernel being
compiled when compiling takes a while, and a tqdm bar of work-groups on a terminal. Off the
terminal (a redirected log) there is no bar at all, only the compile line, so a log never holds
bar fragments. It plugs into ``clsim.run(..., progress=...)`` and knows nothing else of runs.
"""

from __future__ import annotations

import sys
import threading

_COMPILE_NOTE_AFTER_S = 0.5  # a warm disk cache loads faster than this: say nothing then
_BAR_AFTER_S = 1.0  # a bar for a run shorter than this is only flicker


def compile_note(what: str, purpose: str = "", also: str = "") -> str:
    """The line shown while a variant compiles: what, with which instrument, what else compiles
    with it once per machine (``also``), and that it is paid once."""
    variant = f"{what} {purpose}" if purpose else what
    if also:
        return (f"clsim: compiling {variant} and {also} (first run on this machine; cached "
                "afterwards)...")
    return f"clsim: compiling {variant} (first run; cached afterwards)..."


class RunProgress:
    """A ``progress(stage, done, total)`` callback for one launch of ``what`` (a kernel name);
    ``purpose`` says which variant compiles ("with traffic counting"), ``also`` what compiles with
    it once per machine (``clsim.commands.first_run``), ``bar=False`` keeps a launch that runs
    beside another (a child process) from drawing a second bar."""

    def __init__(self, what: str, stream=None, purpose: str = "", bar: bool = True,
                 also: str = ""):
        self.what = what
        self.purpose = purpose
        self.also = also
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = bar and bool(getattr(self.stream, "isatty", lambda: False)())
        self._timer: threading.Timer | None = None
        self._bar = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage == "compile":
            self._timer = threading.Timer(_COMPILE_NOTE_AFTER_S, self._compile_note)
            self._timer.daemon = True
            self._timer.start()
            return
        self._cancel_note()
        if self.terminal:
            self._advance(done, total)

    def _compile_note(self) -> None:
        print(compile_note(self.what, self.purpose, self.also), file=self.stream, flush=True)

    def _cancel_note(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _advance(self, done: int, total: int) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=self.what, unit="group", file=self.stream,
                             leave=False, delay=_BAR_AFTER_S, dynamic_ncols=True)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._cancel_note()
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
