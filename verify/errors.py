"""The verifier's own errors, subclasses of the clsim hierarchy (``clsim.errors``).

- ``DeviceUnusable``: the device is listed but its health probe failed (it cannot build or run
  a trivial kernel); a skip with the reason, like a missing feature.
- ``DeviceCrashed``: the worker process running a launch died from a signal.
- ``DeviceTimedOut``: a launch did not finish within its time limit; the worker was killed.

Crashes and time-outs are findings about the ``.cl`` kernel (or the driver), so ``verify.fuzz``
saves the case and reports them instead of shrinking (each shrink step would cost a worker
restart or a whole time-out).
"""

from __future__ import annotations

from clsim.errors import DeviceError, DeviceLacksFeature


class DeviceUnusable(DeviceLacksFeature):
    """The device failed its health probe; ``reason`` says how (e.g. the probe's build log)."""


class DeviceFault(DeviceError):
    """A launch took its worker process down (crash) or had to be killed (time-out)."""


class DeviceCrashed(DeviceFault):
    """The worker process died from a signal during a launch (``signal`` names it)."""


class DeviceTimedOut(DeviceFault):
    """A launch ran past ``timeout_s``; the worker was killed and is restarted on next use."""
