"""Device features: what a launch needs (sub-groups, fp16, a work-group size, OpenCL C 2.0 for
its builtins or its partial work-groups) and why a device lacks it, in one sentence.

``missing_feature`` answers from the device's reported capabilities and, for OpenCL C 2.0,
from its health probe (``verify.probe``: which ``-cl-std`` really runs partial work-groups and
work-group functions). This module builds nothing (``verify.clrun``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clsim.errors import DeviceLacksFeature
from verify.devices import DeviceInfo
from verify.probe import health

FEATURES = ("subgroups", "fp16", "fp64", "opencl_c_2.0", "opencl_c_2.0_std",
            "non_uniform_work_groups",
            "subgroup_size:<n>", "work_group_size:<n>")
CL2_FEATURES = ("opencl_c_2.0", "opencl_c_2.0_std", "non_uniform_work_groups")
# OpenCL C 2.0 builtins a 1.2 build rejects and the device's health probe must have seen run
# (work-group collectives, enqueued sizes, C11 atomics and atomic flags, generic address space
# casts): feature "opencl_c_2.0".
_CL2_USE = re.compile(
    r"\b(?:work_group_(?:reduce|scan_inclusive|scan_exclusive)_\w+|work_group_(?:broadcast|"
    r"any|all)|get_enqueued_(?:local_size|num_sub_groups)|atomic_(?:init|load|store|exchange|"
    r"fetch_\w+|compare_exchange_\w+|work_item_fence|flag_test_and_set|flag_clear)"
    r"(?:_explicit)?|to_(?:global|local|private))\b")
# OpenCL C 2.0 builtins that need only the -cl-std option where a device has one (Intel's
# runtime builds 1.2 by default and rejects them; PoCL's default accepts them): feature
# "opencl_c_2.0_std", lacking on a 1.x device whose probe saw no 2.0 builtin run (Oclgrind:
# "Undefined external function: ctz").
_CL2_STD_USE = re.compile(r"\b(?:ctz|work_group_barrier|get_(?:global|local)_linear_id)\s*\(")


def _subgroup_size_reason(info: DeviceInfo, size: int) -> str | None:
    if "cl_intel_required_subgroup_size" not in info.extensions:
        return f"{info.short_name} lacks cl_intel_required_subgroup_size (sub-group size {size})"
    if size not in info.subgroup_sizes:
        sizes = ", ".join(map(str, info.subgroup_sizes)) or "none"
        return f"{info.short_name} lacks sub-group size {size} (supports {sizes})"
    return None


def missing_feature(info: DeviceInfo, feature: str) -> str | None:
    """Why ``info`` cannot satisfy ``feature`` (e.g. "pocl lacks cl_khr_fp16"), or None."""
    name = info.short_name
    if feature == "subgroups":
        return None if info.has_subgroups else (
            f"{name} lacks sub-groups (no cl_khr_subgroups, cl_intel_subgroups or "
            "__opencl_c_subgroups)")
    if feature == "fp16":
        return None if info.fp16 else f"{name} lacks cl_khr_fp16"
    if feature == "fp64":
        return None if info.fp64 else f"{name} lacks cl_khr_fp64"
    if feature == "opencl_c_2.0_std":
        verdict = health(info)
        if verdict.cl2_builtins or (verdict.cl2_option is None
                                    and not info.opencl_version.startswith("1.")):
            return None
        return (f"{name} lacks OpenCL C 2.0 builtins (OpenCL {info.opencl_version}; its health "
                f"probe: {verdict.cl2_reason or 'no -cl-std=CL2.0/CL3.0 build ran'})")
    if feature in CL2_FEATURES:
        verdict = health(info)
        if verdict.cl2_option is not None and (
                verdict.cl2_builtins or feature == "non_uniform_work_groups"):
            return None
        what = "OpenCL C 2.0" if feature == "opencl_c_2.0" else (
            "non-uniform work-groups (a global size that is not a multiple of the local size)")
        return (f"{name} lacks {what} (OpenCL {info.opencl_version}; its health probe: "
                f"{verdict.cl2_reason or 'no -cl-std=CL2.0/CL3.0 build ran'})")
    kind, _, value = feature.partition(":")
    if kind == "subgroup_size" and value.isdigit():
        return _subgroup_size_reason(info, int(value))
    if kind == "work_group_size" and value.isdigit():
        if int(value) <= info.max_work_group_size:
            return None
        return f"{name} lacks work-group size {value} (max {info.max_work_group_size})"
    raise ValueError(f"unknown device feature {feature!r}; known: {', '.join(FEATURES)}")


def check_features(info: DeviceInfo, features: Sequence[str]) -> None:
    """Raise DeviceLacksFeature for the first feature ``info`` lacks."""
    for feature in features:
        reason = missing_feature(info, feature)
        if reason is not None:
            raise DeviceLacksFeature(
                f"{reason}. Pick another device ('clsim devices' lists each device's "
                "features).",
                device=info.short_name, feature=feature, reason=reason)


def needs_cl2(source: str) -> bool:
    """True when OpenCL C ``source`` calls a builtin that exists from OpenCL C 2.0 on and does
    not test ``__OPENCL_C_VERSION__`` (a source that does has a 1.2 path of its own, and the
    build keeps the device's default: the 2.0 path is not always the better one, see
    docs/verifying.md on the Intel runtime's work-group scan)."""
    return bool(cl2_uses(source))


def cl2_uses(source: str) -> list[str]:
    """The OpenCL C 2.0 features ``source``'s builtins need ([] for a source that tests
    ``__OPENCL_C_VERSION__``: it has a 1.2 path of its own)."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)
    if "__OPENCL_C_VERSION__" in code:
        return []
    return [f for f, pattern in (("opencl_c_2.0", _CL2_USE), ("opencl_c_2.0_std", _CL2_STD_USE))
            if pattern.search(code)]


# half as a value (cl_khr_fp16): the extension's pragma, a conversion or bit cast to half, a
# cast, an initialised half variable or a half vector that is not a pointer. A `half *`
# buffer read with vload_half, or a struct member declared half, needs no fp16 (core).
_FP16_USE = re.compile(
    r"#pragma\s+OPENCL\s+EXTENSION\s+cl_khr_fp16\s*:\s*enable|\b(?:convert|as)_half\d*(?:_\w+)?"
    r"\s*\(|\(\s*half\d*\s*\)|\bhalf\d*\s+\w+\s*=|\bhalf(?:2|3|4|8|16)\b(?!\s*\*)")


_FP16_GUARD = re.compile(r"\s*#\s*if(?:def\s+cl_khr_fp16\b|\s+defined\s*\(?\s*cl_khr_fp16\b)")
_DIRECTIVE = re.compile(r"\s*#\s*(if|ifdef|ifndef|else|elif|endif)\b")


def _without_fp16_guarded(source: str) -> str:
    """``source`` less the lines a compiler without cl_khr_fp16 skips: the branch of an
    ``#ifdef cl_khr_fp16`` (or ``#if defined(cl_khr_fp16)``) up to its ``#else``/``#endif``."""
    kept, depth = [], 0  # depth > 0: inside a guarded branch, counting nested #if levels
    for line in source.splitlines():
        directive = _DIRECTIVE.match(line)
        if depth:
            if directive and directive.group(1).startswith("if"):
                depth += 1
            elif directive and directive.group(1) == "endif":
                depth -= 1
            elif directive and depth == 1 and directive.group(1) in ("else", "elif"):
                depth = 0
            continue
        if _FP16_GUARD.match(line):
            depth = 1
            continue
        kept.append(line)
    return "\n".join(kept)


def uses_fp16(source: str) -> bool:
    """Whether OpenCL C ``source`` computes with half values (then it needs cl_khr_fp16).
    What only an ``#ifdef cl_khr_fp16`` branch holds does not count: such a source builds
    without the extension."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)
    return _FP16_USE.search(_without_fp16_guarded(code)) is not None


def non_uniform(global_size: Sequence[int], local_size: Sequence[int] | None) -> bool:
    """Whether a launch has partial work-groups (a global size not a multiple of the local)."""
    return local_size is not None and any(
        g % max(int(l), 1) for g, l in zip(global_size, local_size, strict=False))


def launch_features(source: str, global_size: Sequence[int],
                    local_size: Sequence[int] | None) -> list[str]:
    """The features a launch's source and sizes need: OpenCL C 2.0 for its builtins or its
    partial work-groups, fp16 for half arithmetic."""
    features = cl2_uses(source) + (["fp16"] if uses_fp16(source) else [])
    if non_uniform(global_size, local_size):
        features.append("non_uniform_work_groups")
    return features
