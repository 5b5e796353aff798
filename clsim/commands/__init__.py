"""Subcommands of the ``clsim`` CLI that belong to the simulator itself (list, run)."""
