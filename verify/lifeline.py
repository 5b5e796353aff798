"""The verifier's children die with their parent: ``clsim.lifeline`` (it lives in clsim so that
``clsim run``'s traffic child can use it without importing the verifier)."""

from clsim.lifeline import PARENT_ENV, die_with_parent, parent_death_signal, spawn

__all__ = ["PARENT_ENV", "die_with_parent", "parent_death_signal", "spawn"]
