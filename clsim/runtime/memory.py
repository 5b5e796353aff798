"""Memory a launch needs, checked before it allocates: local arrays against the device's local
memory, and the per-group working set (local arrays, private arrays times work-items) against
this machine's memory, so an oversized array is a one-line error naming it instead of numpy's
MemoryError or a crash. It does not check the user's own buffers: they already exist.
"""

from __future__ import annotations

import os

from clsim.errors import InvalidArgumentError


def host_memory_bytes() -> int | None:
    """Physical memory of this machine, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(module, config, groups_at_once: int) -> None:
    """Raise ``InvalidArgumentError`` naming the largest array when the launch cannot fit.

    ``module``: the generated module (``_ARRAY_BYTES``: name -> (space, bytes per instance));
    ``groups_at_once``: how many groups may be alive together (parallel threads)."""
    arrays = getattr(module, "_ARRAY_BYTES", {})
    kernel, device = config.kernel, config.device
    local = {n: b for n, (space, b) in arrays.items() if space == "local"}
    used, limit = sum(local.values()), device.local_mem_bytes
    if limit is not None and used > limit:
        raise InvalidArgumentError(
            f"{kernel}: {_largest(local, 'local')}; its local arrays take {used:,} bytes in all, "
            f"more than the {limit:,} bytes of device {device.name!r} (CL_OUT_OF_RESOURCES). "
            "Use smaller "
            "local arrays, or run(..., device=...) with a device that has more",
            kernel=kernel, buffer=max(local, key=local.get), size=used, limit=limit)
    items = config.ndrange.group_items
    per_group = {n: b * (items if space == "private" else 1)
                 for n, (space, b) in arrays.items()}
    need = sum(per_group.values()) * max(1, groups_at_once)
    host = host_memory_bytes()
    if host is not None and per_group and need > host:
        raise InvalidArgumentError(
            f"{kernel}: {_largest(per_group, arrays[max(per_group, key=per_group.get)][0])} per "
            f"work-group; {groups_at_once} group(s) at once need {need:,} bytes, more than this "
            f"machine's {host:,} bytes of memory (CL_OUT_OF_RESOURCES). Use smaller "
            "local_array/private_array sizes",
            kernel=kernel, buffer=max(per_group, key=per_group.get), size=need, limit=host)


def _largest(sizes: dict[str, int], space: str) -> str:
    name = max(sizes, key=sizes.get)
    return f"{space} array '{name}' takes {sizes[name]:,} bytes"
