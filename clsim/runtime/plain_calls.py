"""Numba functions compiled once per argument types, not once per constant a caller passes.

Numba types a constant argument as its literal (``Literal[int](16)``) and compiles the callee
once per literal, and with it everything the callee calls. clsim's functions that only
compiled code calls (the shared runtime helpers, the traffic step rules) get
``plain_calls(dispatcher)``: a call with constant arguments compiles them for the constants'
plain types. LLVM still sees the constant, as it inlines the callee into its caller. A
function whose body needs the literal (it fails to type without it) keeps Numba's way.
Measured: the suite's cold run compiled 616 helper versions where 417 argument types occur
(docs/performance.md, issue 21).
"""

from __future__ import annotations

from numba.core import errors, types


def plain_calls(dispatcher):
    """``dispatcher``, typed for the plain types of the constants its callers pass."""
    literal_template = dispatcher.get_call_template

    def get_call_template(args, kws):
        plain = tuple(types.unliteral(arg) for arg in args)
        if plain != tuple(args) and not kws:
            try:
                return literal_template(plain, kws)
            except errors.TypingError:
                pass
        return literal_template(args, kws)

    dispatcher.get_call_template = get_call_template
    return dispatcher
