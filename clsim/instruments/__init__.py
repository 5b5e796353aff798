"""Analyses compiled into kernels on request: the instrument protocol and its registry.

``base`` defines the protocol (``Instrument``, ``LaunchInfo``); ``registry`` lists the
instruments (the race and uninitialised-read checks of ``clsim.checks``, the traffic model of
``clsim.traffic``, the shuffled reduction order of the sub-group engine). Adding an instrument
means writing its module and adding its class to ``registry.INSTRUMENTS``; see
docs/checks.md ("Writing an instrument"). ``events`` holds what hooks receive,
``dispatch`` calls them from the code generator.
"""

from clsim.instruments.base import Instrument, LaunchInfo

__all__ = ["Instrument", "LaunchInfo"]
