"""The third side of a verification: a spec's numpy reference against the simulator.

Device and simulator can agree bit for bit and still both be wrong (one bug in both twins), so
where a spec has a ``reference``, every verified case also compares the simulator's outputs
with it. An element agrees with the reference when it is within the spec's tolerance
(``KernelSpec.tolerance``, ``|sim - ref| <= atol + rtol * |ref|``, what ``clsim run`` checks)
or within the output's own policy (``ulp(N)``, ``magnitude(k, scale)``): the verifier draws
edge values (huge, tiny, cancelling) where a relative tolerance means nothing but a
summation-error bound still holds. The reference is computed in its own precision and rounded
to the output's dtype first, so a float64 sum that overflows float32 agrees with the kernel's
``inf``. NaN agrees with NaN; integer and struct buffers compare byte for byte.

This module runs no kernel: ``verify.runner`` hands it the simulator's outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clsim.spec import MagnitudePolicy, Policy
from verify.policy import differing

SIDE = "reference"


@dataclass(frozen=True)
class ReferenceDifference:
    """The first element of ``buffer`` where the simulator is outside both bounds."""

    buffer: str
    n_different: int
    size: int
    flat_index: int | None
    simulator: Any
    reference: Any
    bound: str
    detail: str = ""

    def describe(self) -> str:
        head = f"buffer {self.buffer!r} vs the reference ({self.bound}): "
        if self.flat_index is None:
            return head + self.detail
        return (f"{head}{self.n_different} of {self.size} elements differ; first at flat "
                f"index {self.flat_index}: simulator {self.simulator}, reference "
                f"{self.reference}")


@dataclass(frozen=True)
class ReferenceComparison:
    """The simulator against the spec's reference: the differing buffers (empty: agree), or
    ``error`` when the reference itself could not run on this case (a failure too: a spec
    whose reference cannot take the verifier's shapes must say so, not pass unchecked)."""

    differences: tuple[ReferenceDifference, ...] = ()
    error: str | None = None

    @property
    def equal(self) -> bool:
        return not self.differences and self.error is None

    def describe(self) -> str:
        if self.error is not None:
            return (f"simulator vs reference: not compared, {self.error}. Make the spec's "
                    "reference work for every shape its launch plan accepts")
        if self.equal:
            return "simulator vs reference: agree"
        return "simulator vs reference: DIFFER\n" + "\n".join(
            d.describe() for d in self.differences)


def _bound_text(tolerance: tuple[float, float], policy: Policy | None) -> str:
    rtol, atol = tolerance
    text = f"rtol={rtol:g} atol={atol:g}"
    if policy is not None and policy.kind != "exact":
        text += f" or {policy}"
    return text


def _outside(sim: np.ndarray, ref: np.ndarray, tolerance: tuple[float, float],
             policy: Policy | None, inputs: Mapping[str, Any]) -> np.ndarray:
    """Mask of simulator elements outside the tolerance and outside the output's policy."""
    if sim.dtype.kind not in "fc" or sim.dtype.names:
        raw = np.ascontiguousarray(sim).reshape(-1).view(np.uint8).reshape(sim.size, -1)
        want = np.ascontiguousarray(ref, dtype=sim.dtype).reshape(-1)
        return (raw != want.view(np.uint8).reshape(want.size, -1)).any(axis=1).reshape(sim.shape)
    rtol, atol = tolerance
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = np.asarray(ref).astype(sim.dtype)  # overflows to inf as the kernel's would
        mask = ~np.isclose(sim, rounded, rtol=rtol, atol=atol, equal_nan=True)
    if mask.any() and policy is not None and policy.kind in ("ulp", "magnitude"):
        scale = None
        if isinstance(policy, MagnitudePolicy) and policy.scale is not None:
            scale = policy.scale(inputs)
        if policy.kind == "ulp" or scale is not None:
            mask &= differing(rounded, sim, policy, scale).reshape(sim.shape)
    return mask


def compare_reference(reference: Callable[[Mapping[str, Any]], Mapping[str, Any]],
                      inputs: Mapping[str, Any], simulator: Mapping[str, np.ndarray],
                      tolerance: tuple[float, float],
                      policies: Mapping[str, Policy]) -> ReferenceComparison:
    """Run ``reference`` on copies of the launch's ``inputs`` (by parameter name, before the
    launch) and compare every buffer it returns that the simulator produced."""
    copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    try:
        with np.errstate(all="ignore"):  # edge values overflow in numpy as in the kernel
            expected = reference(copies)
    except Exception as err:  # a reference written for the generator's shapes only
        return ReferenceComparison(error=f"the reference raised {type(err).__name__}: {err}")
    found = []
    for name, ref in expected.items():
        if name not in simulator:
            continue
        sim = np.asarray(simulator[name])
        policy = policies.get(name)
        bound = _bound_text(tolerance, policy)
        ref = np.asarray(ref)
        if ref.size != sim.size:
            found.append(ReferenceDifference(
                name, 1, sim.size, None, None, None, bound,
                f"the reference has {ref.size} elements, the simulator {sim.size}"))
            continue
        mask = _outside(sim, ref.reshape(sim.shape), tolerance, policy, inputs)
        count = int(np.count_nonzero(mask))
        if count:
            flat = int(np.flatnonzero(mask.reshape(-1))[0])
            found.append(ReferenceDifference(name, count, sim.size, flat,
                                             sim.reshape(-1)[flat], ref.reshape(-1)[flat],
                                             bound))
    return ReferenceComparison(tuple(found))
